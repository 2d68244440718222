r"""Kernels on H^d and SPD(n): time of K(X, X) against N, and Monte Carlo error against L.

Two measurements, in one run, on seeded volume-uniform points of each space's domain:

* **time** of ``K(X, X)`` (float64, no gradient) at N = 1000 and 5000 for the exact kernels of
  H^2 (tabulated superposition), H^3 (closed form) and H^5 (tabulated heat kernel), and for the
  random-phase kernels of H^3 and SPD(2), SPD(3) at the default number of phases; the median of
  ``--repeats`` calls after one warm-up, with the CPU time of each call;
* **Monte Carlo error** of the random-phase features: the largest absolute difference between
  ``Phi Phi^T`` and the exact kernel over ``--error-points`` points, for L = 1024, 4096 and 16384
  phases and three seeds, Matérn-5/2 with lengthscale 1. References: the exact kernels of
  :math:`H^d` (themselves checked against closed forms and spectral integrals in the tests) and,
  for SPD(2), the quadrature on :math:`\mathbb R \times H^2` of
  :mod:`manibo.testing.references`.

Writes ``noncompact_kernels.json`` (versions, hardware, load average at the start and the end)
and ``noncompact_kernels.png`` to ``--out``.

    python benchmarks/noncompact_kernels.py                   # minutes
    python benchmarks/noncompact_kernels.py --smoke --out /tmp/bench
"""

from __future__ import annotations

import argparse
import math
import warnings
from pathlib import Path

import _common as common

HERE = Path(__file__).resolve().parent
SIZES = (1000, 5000)
PHASES = (1024, 4096, 16384)
SEEDS = (0, 1, 2)
SMOKE = {"sizes": (40,), "phases": (64,), "seeds": (0,), "error_points": 6}
#: the cases of a smoke run (the tabulated kernels of even dimensions take seconds to set up)
SMOKE_TIMING = (("H3 (R=2)", 2.5, "exact"), ("SPD(2) [1e-3, 5]", 2.5, "features"))
SMOKE_ERRORS = ("H3 (R=1)", "SPD(2) [0.1, 5]")


def _space(name: str):
    from manibo.spaces import Hyperbolic, SymmetricPositiveDefinite

    spaces = {
        "H2 (R=2)": lambda: Hyperbolic(2, radius=2.0),
        "H3 (R=2)": lambda: Hyperbolic(3, radius=2.0),
        "H3 (R=1)": lambda: Hyperbolic(3, radius=1.0),
        "H5 (R=1)": lambda: Hyperbolic(5, radius=1.0),
        "H5 (R=2)": lambda: Hyperbolic(5, radius=2.0),
        "SPD(2) [1e-3, 5]": lambda: SymmetricPositiveDefinite(2, sampling="volume"),
        "SPD(2) [0.1, 5]": lambda: SymmetricPositiveDefinite(2, (0.1, 5.0), sampling="volume"),
        "SPD(3) [0.1, 10]": lambda: SymmetricPositiveDefinite(3, (0.1, 10.0), sampling="volume"),
    }
    return spaces[name]()


#: (space, nu, method) of the timing cases
TIMING = (
    ("H2 (R=2)", 2.5, "exact"),
    ("H3 (R=2)", 2.5, "exact"),
    ("H5 (R=2)", math.inf, "exact"),
    ("H3 (R=2)", 2.5, "features"),
    ("SPD(2) [1e-3, 5]", 2.5, "features"),
    ("SPD(3) [0.1, 10]", 2.5, "features"),
)
ERRORS = (
    "H2 (R=2)",
    "H3 (R=1)",
    "H3 (R=2)",
    "H5 (R=1)",
    "H5 (R=2)",
    "SPD(2) [1e-3, 5]",
    "SPD(2) [0.1, 5]",
)


def _kernel(space, nu, method, **options):
    from manibo.kernels import GeometricMaternKernel

    kernel = GeometricMaternKernel(space, nu=nu, method=method, **options).double()
    kernel.lengthscale = 1.0
    return kernel


def time_case(name: str, nu: float, method: str, n: int, repeats: int, device: str) -> dict:
    """Median time of one ``K(X, X)`` at ``n`` points on ``device``."""
    import torch

    space = _space(name)
    x = space.random(n, generator=torch.Generator().manual_seed(0)).to(device)
    kernel = _kernel(space, nu, method).to(device)

    def work():
        with torch.no_grad():
            return kernel(x).to_dense()

    work()  # warm-up: tables and caches
    wall, cpu = common.time_calls(work, repeats, device)
    record = {"space": name, "nu": nu, "method": method, "n": n, "device": device}
    if method == "features":
        record["num_phases"] = kernel.num_phases
    return record | common.summarise_times(wall, cpu)


def _reference(name: str, x):
    """The exact Matérn-5/2 kernel (lengthscale 1) at ``x``, ``(n, n)``."""
    import numpy as np
    import torch

    from manibo.testing.references import spd2_kernel

    space = _space(name)
    if name.startswith("SPD(2)"):
        m = x.reshape(-1, 2, 2).numpy()
        out = np.eye(len(m))
        for i in range(len(m)):
            for j in range(i + 1, len(m)):
                out[i, j] = out[j, i] = spd2_kernel(2.5, 1.0, m[i], m[j])
        return torch.from_numpy(out)
    with torch.no_grad():
        return _kernel(space, 2.5, "exact")(x).to_dense()


def error_case(name: str, phases, seeds, points: int) -> list[dict]:
    """Largest absolute error of the features against the exact kernel, per L and seed."""
    import torch

    from manibo.exceptions import ManiboWarning

    space = _space(name)
    x = space.random(points, generator=torch.Generator().manual_seed(11))
    exact = _reference(name, x)
    records = []
    for num_phases in phases:
        for seed in seeds:
            with warnings.catch_warnings():  # the warning of a noisy bound: measured here
                warnings.filterwarnings("ignore", "random-phase features", ManiboWarning)
                kernel = _kernel(space, 2.5, "features", num_phases=num_phases, seed=seed)
            with torch.no_grad():
                estimate = kernel(x).to_dense()
                standard_error = kernel.feature_standard_error(x, x)
            records.append(
                {
                    "space": name,
                    "num_phases": num_phases,
                    "seed": seed,
                    "points": points,
                    "max_abs_error": float((estimate - exact).abs().max()),
                    "max_standard_error": float(standard_error.max()),
                }
            )
    return records


def plot(data: dict, path: Path) -> None:
    """Time against N (left) and the largest error over the seeds against L (right)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
    for device in data["config"]["devices"]:
        for name, nu, method in {(r["space"], r["nu"], r["method"]) for r in data["timing"]}:
            rows = [
                r
                for r in data["timing"]
                if (r["space"], r["nu"], r["method"], r["device"]) == (name, nu, method, device)
            ]
            label = f"{name} {'heat' if math.isinf(nu) else f'ν={nu}'} {method} ({device})"
            left.plot([r["n"] for r in rows], [r["time_s"] for r in rows], "o-", label=label)
    left.set(xscale="log", yscale="log", xlabel="N", ylabel="K(X, X) time [s]")
    left.legend(fontsize=7)
    for name in dict.fromkeys(r["space"] for r in data["errors"]):
        rows = [r for r in data["errors"] if r["space"] == name]
        phases = sorted({r["num_phases"] for r in rows})
        worst = [max(r["max_abs_error"] for r in rows if r["num_phases"] == p) for p in phases]
        right.plot(phases, worst, "o-", label=name)
    right.set(xscale="log", yscale="log", xlabel="random phases L", ylabel="max |ΦΦᵀ − K|")
    right.legend(fontsize=7)
    fig.suptitle(data["title"], fontsize=8)
    fig.tight_layout()
    common.save_figure(fig, path)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE / "results", help="output directory")
    parser.add_argument("--device", choices=common.DEVICE_CHOICES, default="cpu")
    parser.add_argument("--repeats", type=int, default=3, help="timed calls per case")
    parser.add_argument("--error-points", type=int, default=25, help="points of the error study")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes (seconds)")
    args = parser.parse_args(argv)
    devices = common.resolve_devices(args.device)
    sizes, phases, seeds = SIZES, PHASES, SEEDS
    points, timing_cases, error_cases = args.error_points, TIMING, ERRORS
    if args.smoke:
        sizes, phases, seeds = SMOKE["sizes"], SMOKE["phases"], SMOKE["seeds"]
        points, timing_cases, error_cases = SMOKE["error_points"], SMOKE_TIMING, SMOKE_ERRORS
    env = common.environment(devices[-1])
    start_load = common.load_average()
    timing = [
        time_case(name, nu, method, n, args.repeats, device)
        for device in devices
        for name, nu, method in timing_cases
        for n in sizes
    ]
    errors = [record for name in error_cases for record in error_case(name, phases, seeds, points)]
    end_load = common.load_average()
    data = {
        "config": {
            "smoke": args.smoke,
            "sizes": list(sizes),
            "phases": list(phases),
            "seeds": list(seeds),
            "error_points": points,
            "repeats": args.repeats,
            "devices": devices,
        },
        "environment": env,
        "load_average_start_end": [start_load, end_load],
        "title": common.run_title(env, devices, [start_load, end_load], args.smoke),
        "timing": timing,
        "errors": errors,
    }
    common.write_json(args.out / "noncompact_kernels.json", data)
    plot(data, args.out / "noncompact_kernels.png")


if __name__ == "__main__":
    main()
