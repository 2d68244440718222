"""A geometric GP on the globe S² against a latitude/longitude Euclidean GP.

The demo also draws a map of the fit.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from botorch.fit import fit_gpytorch_mll
from botorch.models import SingleTaskGP
from gpytorch.kernels import MaternKernel, ScaleKernel
from gpytorch.mlls import ExactMarginalLogLikelihood
from torch import Tensor

from manibo._validation import checked_device
from manibo.kernels import GeometricMaternKernel
from manibo.models.marginals import posterior_marginals
from manibo.spaces import Sphere

# Bumps of the target function: (latitude°, longitude°, concentration, height). One sits on the
# north pole and one straddles the antimeridian, where a latitude/longitude chart tears the sphere
# apart.
_BUMPS = (
    (89.0, 0.0, 8.0, 1.5),
    (-10.0, 179.0, 12.0, -1.2),
    (35.0, -60.0, 6.0, 1.0),
    (-50.0, 40.0, 5.0, 0.8),
)


def lonlat_to_xyz(lat_deg: Tensor, lon_deg: Tensor) -> Tensor:
    """Unit vectors from latitude and longitude in degrees; shapes ``(*s)`` → ``(*s, 3)``."""
    lat, lon = torch.deg2rad(lat_deg), torch.deg2rad(lon_deg)
    return torch.stack([lat.cos() * lon.cos(), lat.cos() * lon.sin(), lat.sin()], dim=-1)


def xyz_to_lonlat(x: Tensor) -> Tensor:
    """Latitude and longitude in degrees of unit vectors; ``(*s, 3)`` → ``(*s, 2)``."""
    lat = torch.rad2deg(torch.asin(x[..., 2].clamp(-1, 1)))
    lon = torch.rad2deg(torch.atan2(x[..., 1], x[..., 0]))
    return torch.stack([lat, lon], dim=-1)


def target(x: Tensor) -> Tensor:
    """Sum of von Mises–Fisher bumps on S²; ``(*s, 3)`` → ``(*s,)``."""
    out = torch.zeros(x.shape[:-1], dtype=x.dtype, device=x.device)
    for lat, lon, kappa, height in _BUMPS:
        centre = lonlat_to_xyz(torch.tensor(lat, dtype=x.dtype), torch.tensor(lon, dtype=x.dtype))
        out = out + height * torch.exp(kappa * (x @ centre.to(x.device) - 1))
    return out


@dataclass
class FitReport:
    """Held-out accuracy of one surrogate."""

    model: str
    rmse: float
    nlpd: float
    fit_seconds: float


def _evaluate(model: SingleTaskGP, x_test: Tensor, y_test: Tensor) -> tuple[float, float]:
    mean, var = posterior_marginals(model, x_test, observation_noise=True)
    var = var.clamp_min(1e-12)
    rmse = float(((mean - y_test) ** 2).mean().sqrt())
    nlpd = float((0.5 * torch.log(2 * math.pi * var) + 0.5 * (y_test - mean) ** 2 / var).mean())
    return rmse, nlpd


def run(out_dir: Path, num_train: int = 150, seed: int = 0, device: str = "cpu") -> dict:
    """Fit both GPs and print a comparison.

    Writes ``sphere_fit.png`` and ``sphere_fit.json`` in ``out_dir``.
    """
    device = checked_device(device)
    out_dir.mkdir(parents=True, exist_ok=True)
    space = Sphere(2)
    gen = torch.Generator().manual_seed(seed)
    tkw = {"dtype": torch.float64, "device": device}
    noise_sd = 0.05
    x_train = space.random(num_train, generator=gen).to(**tkw)
    y_train = target(x_train) + noise_sd * torch.randn(
        num_train, generator=gen, dtype=torch.float64
    ).to(device)
    x_test = space.random(3000, generator=gen).to(**tkw)
    y_test = target(x_test)

    reports, models = [], {}
    candidates = {
        "geometric Matérn-5/2 on S²": (
            x_train,
            x_test,
            ScaleKernel(GeometricMaternKernel(space, nu=2.5)),
        ),
        "Euclidean Matérn-5/2 on (lat, lon)": (
            xyz_to_lonlat(x_train),
            xyz_to_lonlat(x_test),
            ScaleKernel(MaternKernel(nu=2.5, ard_num_dims=2)),
        ),
    }
    for name, (xtr, xte, kernel) in candidates.items():
        start = time.perf_counter()
        model = SingleTaskGP(xtr, y_train.unsqueeze(-1), covar_module=kernel)
        fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
        seconds = time.perf_counter() - start
        rmse, nlpd = _evaluate(model, xte, y_test)
        reports.append(FitReport(name, rmse, nlpd, seconds))
        models[name] = (model, xte)

    print(
        f"Regression on the globe S²: {num_train} noisy observations (σ = {noise_sd}), "
        "3000 test points"
    )
    print(f"{'surrogate':40s} {'RMSE':>8s} {'NLPD':>8s} {'fit [s]':>8s}")
    for r in reports:
        print(f"{r.model:40s} {r.rmse:8.4f} {r.nlpd:8.3f} {r.fit_seconds:8.2f}")
    geometric = models["geometric Matérn-5/2 on S²"][0]
    kern = geometric.covar_module
    y_scale = float(geometric.outcome_transform.stdvs.squeeze())
    with torch.no_grad():
        print(
            "geometric GP hyperparameters: "
            f"lengthscale {float(kern.base_kernel.lengthscale):.3f} rad, "
            f"signal sd {y_scale * float(kern.outputscale.sqrt()):.3f}, "
            f"noise sd {y_scale * float(geometric.likelihood.noise.sqrt()):.3f} (truth {noise_sd})"
        )
    figure = _plot(out_dir / "sphere_fit.png", x_train, models, space)
    summary = {"reports": [asdict(r) for r in reports], "figure": str(figure), "seed": seed}
    (out_dir / "sphere_fit.json").write_text(json.dumps(summary, indent=2))
    print(f"wrote {figure} and {out_dir / 'sphere_fit.json'}")
    return summary


def _plot(path: Path, x_train: Tensor, models: dict, space: Sphere) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    lat, lon = torch.meshgrid(
        torch.linspace(-89.5, 89.5, 90, dtype=torch.float64),
        torch.linspace(-179.5, 179.5, 180, dtype=torch.float64),
        indexing="ij",
    )
    grid = lonlat_to_xyz(lat, lon).reshape(-1, 3).to(x_train.device)
    truth = target(grid).reshape(lat.shape).cpu()
    panels = [("truth", truth)]
    for name, (model, _) in models.items():
        inputs = grid if "S²" in name else xyz_to_lonlat(grid)
        mean = posterior_marginals(model, inputs)[0].reshape(lat.shape).cpu()
        panels.append((f"{name}: |error|", (mean - truth).abs()))
    fig, axes = plt.subplots(1, 3, figsize=(16, 4.2), constrained_layout=True)
    train_ll = xyz_to_lonlat(x_train).cpu().numpy()
    vmax_err = max(float(p[1].max()) for p in panels[1:])
    for ax, (title, values) in zip(axes, panels, strict=True):
        is_error = title != "truth"
        mesh = ax.pcolormesh(
            lon.numpy(),
            lat.numpy(),
            values.numpy(),
            shading="auto",
            cmap="magma" if is_error else "coolwarm",
            vmin=0 if is_error else None,
            vmax=vmax_err if is_error else None,
        )
        ax.scatter(train_ll[:, 1], train_ll[:, 0], s=6, c="k", label="observations")
        ax.set_title(title)
        ax.set_xlabel("longitude [°]")
        ax.set_ylabel("latitude [°]")
        fig.colorbar(mesh, ax=ax, shrink=0.85)
    axes[0].legend(loc="lower left", fontsize=8)
    fig.suptitle(
        "GP regression on the globe: "
        "the geometric kernel has no seam at the poles or the antimeridian"
    )
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
