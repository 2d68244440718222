r"""VISH at scale: wall time, peak memory, MSE and NLPD against GPyTorch's SVGP and an exact GP.

Two problems:

* **airline-shaped** (``airline``): :func:`manibo.problems.datasets.airline_like`, a synthetic
  stand-in for the 2008 US flight-delay data of Dutordoir (2021), Table 3.1 (which cannot be
  downloaded here): the same eight covariates and a delay whose signal explains 18% of the variance
  under right-skewed, heavy-tailed noise. The full set has N = 5,929,413 records (seeded, cached on
  disk); a size N uses its first N records, the first two thirds for training and the rest for
  testing. Inputs are scaled to [-1, 1] by the training range, outcomes standardised by the training
  mean and sd (Table 3.1's protocol), and MSE and NLPD are reported in standardised units.
* **airport elevations on S²** (``airports``): the 28,298 airports of the ``airportsdata`` package
  (the ``bench`` extra): elevation in feet at (latitude, longitude) mapped to unit vectors; a seeded
  shuffle, two thirds for training.

Methods (one fresh subprocess per configuration, so that peak memory is that configuration's):

* **VISH** (``vish210``, ``vish660`` on airline; ``vish400``, ``vish1600`` on airports):
  airline: ``HomogeneousLiftKernel(ChordalMaternKernel(Sphere(8), nu=1.5))`` with M = 210 (levels
  0..3) or 660 (levels 0..4); the lift is initialised from and trained on a 2,000-point sample
  (collapsed bound with the 210 features of levels 0..3, float32 products, L-BFGS-B with at most 50
  iterations and manibo's default stopping tolerance, 1e-3 of the bound per point), then frozen;
  one streaming pass (chunks of 8,192 rows, float32 chunk products accumulated in float64);
  variance, chordal lengthscale and noise trained on the cache (at most 50 iterations, default
  tolerance 1e-7 per point). Airports:
  ``GeometricMaternKernel(Sphere(2), nu=1.5)`` with M = 400 or 1,600 (20 or 40 levels), no lift.
  Prediction streams the test set (float32 chunk products).
* **SVGP** (``svgp500``): GPyTorch ``ApproximateGP`` with 500 inducing points (a seeded random
  subset of the training inputs, learned), ``CholeskyVariationalDistribution``,
  ``ScaleKernel(MaternKernel(nu=1.5, ard_num_dims=D))``, constant mean, Gaussian likelihood,
  ``VariationalELBO``; Adam (lr 0.01) on everything, minibatches of 1,024, float32. Training runs
  in windows of max(one epoch, 500 steps) and stops when the window's mean ELBO per point improves
  by less than 1e-3 nats on the previous window, or at the time cap (``--svgp-cap``, 30 minutes),
  whichever comes first; the record says which. Each window also logs the NLPD on 5,000 test points
  (not counted in the time).
* **exact GP** (``exact``), training sets up to 10^4 records (6,667 points): BoTorch
  ``SingleTaskGP`` with the SVGP kernel (airline) or manibo's geometric Matérn-3/2 GP on S²
  (airports; a 6,667-point subsample). Hyperparameters maximise the marginal likelihood of the
  first 1,000 training points (L-BFGS-B; each step on 6,667 points costs minutes on two loaded
  cores), and the posterior conditions exactly on all the training points.

Times are wall clock of fit + predict (data generation and loading excluded), with the worker's
CPU time (``cpu_s``, user + system of the process, SVGP's probes excluded) beside them: on a
shared machine the wall clock counts the time other processes hold the cores, the CPU time does
not (with one torch thread it is the work itself). Peak memory is
``ru_maxrss`` of the worker process (absolute: imports and data included) and its increase over
the fit + predict. Records are written per configuration to ``--out/records`` and reused when
present (``--force`` reruns), so long runs can be done in pieces (``--sizes``, ``--methods``,
``--datasets``). Run timed pieces under ``flock /tmp/manibo-cpu.lock``.

Usage::

    python benchmarks/vish_scale.py --smoke --out /tmp/vish            # seconds; used by the tests
    flock /tmp/manibo-cpu.lock python benchmarks/vish_scale.py --methods vish210 vish660
    flock /tmp/manibo-cpu.lock python benchmarks/vish_scale.py --methods svgp500 --sizes 1000000
    python benchmarks/vish_scale.py --report-only                     # aggregate the records
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

from _common import (
    GIB,
    PeakMemory,
    environment,
    hardware_label,
    load_average,
    peak_rss_bytes,
    run_worker,
    save_figure,
    write_json,
)

HERE = Path(__file__).resolve().parent

AIRLINE_SIZES = (10_000, 100_000, 1_000_000, 5_929_413)
SMOKE_SIZES = (1_500, 3_000)
AIRLINE_METHODS = ("vish210", "vish660", "svgp500", "exact")
AIRPORT_METHODS = ("vish400", "vish1600", "svgp500", "exact")
EXACT_MAX_N = 10_000
EXACT_FIT_N = 1000
SVGP_CAP_S = 1800.0
SVGP_INDUCING = 500
SVGP_BATCH = 1024
SVGP_LR = 0.01
SVGP_TOL = 1e-3
SVGP_WINDOW = 500
LIFT_SAMPLE = 2000
LIFT_FEATURES = 210
MAXITER = 50
CHUNK = 8192
SEED = 0

TARGET_N = 5_929_413
TARGET_TIME_S = 120.0
TARGET_MEMORY_BYTES = 4 * 10**9
RATIO_N = 1_000_000
TARGET_RATIO = 50.0
TARGET_NLPD_GAP = 0.02


# --------------------------------------------------------------------------------------------
# data
# --------------------------------------------------------------------------------------------
def airline_cache(out: Path, full_size: int):
    """The first ``full_size`` airline-shaped records as a ``(n, 9)`` float64 array (cached)."""
    import numpy as np
    import torch

    from manibo.problems.datasets import airline_like

    path = out / "cache" / f"airline_seed{SEED}_{full_size}.npy"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        generator = torch.Generator().manual_seed(SEED)
        blocks, left = [], full_size
        while left:  # in blocks: the generator's standardisation constants are fixed
            n = min(left, 1_000_000)
            X, y = airline_like(n, generator=generator)
            blocks.append(torch.cat([X, y[:, None]], 1).numpy())
            left -= n
        np.save(path, np.concatenate(blocks))
    return np.load(path, mmap_mode="r")


def airline_split(out: Path, n: int, full_size: int):
    """Train/test tensors of the first ``n`` records, scaled as in Table 3.1."""
    import numpy as np
    import torch

    data = torch.from_numpy(np.array(airline_cache(out, full_size)[:n]))
    n_train = round(2 * n / 3)
    X, y = data[:, :8], data[:, 8]
    low, high = X[:n_train].min(0).values, X[:n_train].max(0).values
    X = 2 * (X - low) / (high - low).clamp_min(1e-12) - 1
    mean, std = y[:n_train].mean(), y[:n_train].std()
    y = (y - mean) / std
    return X[:n_train], y[:n_train], X[n_train:], y[n_train:]


def airports_split(limit: int | None = None):
    """Unit vectors and standardised elevations of the airports, shuffled, 2/3 for training."""
    import airportsdata
    import torch

    records = list(airportsdata.load().values())
    lat = torch.tensor([r["lat"] for r in records], dtype=torch.float64).deg2rad()
    lon = torch.tensor([r["lon"] for r in records], dtype=torch.float64).deg2rad()
    elevation = torch.tensor([r["elevation"] for r in records], dtype=torch.float64)
    X = torch.stack([lat.cos() * lon.cos(), lat.cos() * lon.sin(), lat.sin()], -1)
    X = X / X.norm(dim=-1, keepdim=True)
    order = torch.randperm(len(X), generator=torch.Generator().manual_seed(SEED))
    if limit:
        order = order[:limit]
    X, y = X[order], elevation[order]
    n_train = round(2 * len(X) / 3)
    mean, std = y[:n_train].mean(), y[:n_train].std()
    y = (y - mean) / std
    return X[:n_train], y[:n_train], X[n_train:], y[n_train:]


def metrics(mean, variance, y) -> dict:
    """MSE and mean NLPD (Gaussian predictive, standardised units)."""
    mean, variance, y = mean.double(), variance.double().clamp_min(1e-12), y.double()
    nlpd = 0.5 * (math.log(2 * math.pi) + variance.log() + (y - mean) ** 2 / variance)
    return {"mse": float(((mean - y) ** 2).mean()), "nlpd": float(nlpd.mean())}


# --------------------------------------------------------------------------------------------
# workers: each returns (metrics dict, extra dict); the caller times and probes memory
# --------------------------------------------------------------------------------------------
def run_vish(dataset, num_features, Xtr, ytr, Xte, yte, smoke) -> dict:
    """VISH: lift on a sample (airline), one pass, hyperparameters on the cache, streamed
    predictions."""
    import torch
    from gpytorch.kernels import ScaleKernel

    from manibo.kernels import ChordalMaternKernel, GeometricMaternKernel, HomogeneousLiftKernel
    from manibo.models.vish import (
        VISHModel,
        VISHPrior,
        default_likelihood,
        fit_lift,
        gather_statistics,
        initialise_lift,
    )
    from manibo.spaces import Sphere

    stages, start = {}, time.perf_counter()
    likelihood = default_likelihood()
    maxiter = 20 if smoke else MAXITER
    if dataset == "airline":
        kernel = HomogeneousLiftKernel(ChordalMaternKernel(Sphere(8), nu=1.5), 8)
        prior = VISHPrior(ScaleKernel(kernel), num_features)
        index = torch.randperm(len(Xtr), generator=torch.Generator().manual_seed(SEED))
        index = index[: min(LIFT_SAMPLE, len(Xtr))]
        initialise_lift(prior, Xtr[index])
        fit_lift(prior, likelihood, Xtr[index], ytr[index], maxiter, LIFT_FEATURES, torch.float32)
    else:
        prior = VISHPrior(ScaleKernel(GeometricMaternKernel(Sphere(2), nu=1.5)), num_features)
    stages["lift_s"] = time.perf_counter() - start
    stats = gather_statistics(prior.features, Xtr, ytr, CHUNK, compute_dtype=torch.float32)
    stages["pass_s"] = time.perf_counter() - start - stages["lift_s"]
    model = VISHModel.from_statistics(prior, stats, likelihood).fit(maxiter)
    stages["cache_fit_s"] = time.perf_counter() - start - stages["lift_s"] - stages["pass_s"]
    fitted = time.perf_counter()
    mean, variance = model.predict(Xte, CHUNK, torch.float32, observation_noise=True)
    stages["predict_s"] = time.perf_counter() - fitted
    with torch.no_grad():
        hyper = {
            "levels": list(prior.levels),
            "num_features": prior.features.num_features,
            "noise_variance": float(model.noise * model.outcome_transform.stdvs**2),
            "outputscale": float(prior.outputscale),
            "residual_variance": float(prior.residual_variance()),
        }
        if prior.lift is not None:
            hyper["lift_lengthscale"] = prior.lift.lengthscale.reshape(-1).tolist()
            hyper["lift_bias"] = float(prior.lift.bias)
    return {**metrics(mean, variance, yte), "stages": stages, "hyperparameters": hyper}


def run_svgp(Xtr, ytr, Xte, yte, cap_s, smoke) -> dict:
    """GPyTorch SVGP with 500 inducing points, Adam on minibatches until converged or capped."""
    import gpytorch
    import torch

    Xtr, ytr, Xte, yte = (t.float() for t in (Xtr, ytr, Xte, yte))
    generator = torch.Generator().manual_seed(SEED)
    inducing = Xtr[torch.randperm(len(Xtr), generator=generator)[:SVGP_INDUCING]].clone()

    class SVGP(gpytorch.models.ApproximateGP):
        def __init__(self):
            distribution = gpytorch.variational.CholeskyVariationalDistribution(len(inducing))
            strategy = gpytorch.variational.VariationalStrategy(
                self, inducing, distribution, learn_inducing_locations=True
            )
            super().__init__(strategy)
            self.mean_module = gpytorch.means.ConstantMean()
            self.covar_module = gpytorch.kernels.ScaleKernel(
                gpytorch.kernels.MaternKernel(nu=1.5, ard_num_dims=Xtr.shape[-1])
            )

        def forward(self, x):
            return gpytorch.distributions.MultivariateNormal(
                self.mean_module(x), self.covar_module(x)
            )

    model, likelihood = SVGP(), gpytorch.likelihoods.GaussianLikelihood()
    mll = gpytorch.mlls.VariationalELBO(likelihood, model, num_data=len(ytr))
    optimizer = torch.optim.Adam([*model.parameters(), *likelihood.parameters()], lr=SVGP_LR)
    epoch = math.ceil(len(ytr) / SVGP_BATCH)
    window = max(epoch, 20 if smoke else SVGP_WINDOW)
    probe_X, probe_y = Xte[:5000], yte[:5000]

    def predict(X):
        model.eval()
        likelihood.eval()
        means, variances = [], []
        with torch.no_grad(), gpytorch.settings.fast_pred_var():
            for chunk in X.split(10_000):
                out = likelihood(model(chunk))
                means.append(out.mean)
                variances.append(out.variance)
        model.train()
        likelihood.train()
        return torch.cat(means), torch.cat(variances)

    trace, previous, steps, training_s, reason = [], None, 0, 0.0, "converged"
    training_cpu_s = 0.0
    model.train()
    likelihood.train()
    while True:
        started, started_cpu, total = time.perf_counter(), time.process_time(), 0.0
        for _ in range(window):
            index = torch.randint(len(ytr), (SVGP_BATCH,), generator=generator)
            optimizer.zero_grad()
            loss = -mll(model(Xtr[index]), ytr[index])
            loss.backward()
            optimizer.step()
            total += float(loss.detach())
            steps += 1
        training_s += time.perf_counter() - started
        training_cpu_s += time.process_time() - started_cpu
        elbo = -total / window
        probe = metrics(*predict(probe_X), probe_y)
        trace.append({"steps": steps, "time_s": training_s, "elbo_per_point": elbo, **probe})
        if previous is not None and elbo - previous < SVGP_TOL:
            break
        if training_s >= cap_s:
            reason = f"time cap of {cap_s:.0f} s"
            break
        previous = elbo
    started, started_cpu = time.perf_counter(), time.process_time()
    mean, variance = predict(Xte)
    predict_s = time.perf_counter() - started
    predict_cpu_s = time.process_time() - started_cpu
    return {
        **metrics(mean, variance, yte),
        "stages": {"train_s": training_s, "predict_s": predict_s},
        "stopped": reason,
        "steps": steps,
        "epochs": steps / epoch,
        "trace": trace,
        "timed_s": training_s + predict_s,  # probe evaluations excluded
        "timed_cpu_s": training_cpu_s + predict_cpu_s,
    }


def run_exact(dataset, Xtr, ytr, Xte, yte) -> dict:
    """Exact GP on at most 6,667 training points (a subsample for larger sets)."""
    import gpytorch
    import torch
    from botorch.fit import fit_gpytorch_mll
    from botorch.models import SingleTaskGP
    from gpytorch.kernels import MaternKernel, ScaleKernel
    from gpytorch.mlls import ExactMarginalLogLikelihood

    from manibo.models import build_surrogate
    from manibo.spaces import Sphere

    limit = round(2 * EXACT_MAX_N / 3)
    if len(Xtr) > limit:
        index = torch.randperm(len(Xtr), generator=torch.Generator().manual_seed(SEED))[:limit]
        Xtr, ytr = Xtr[index], ytr[index]
    fit_X, fit_y = Xtr[:EXACT_FIT_N], ytr[:EXACT_FIT_N]  # Xtr is in random order
    # Cholesky, not GPyTorch's iterative solves (its default above 800 points)
    with gpytorch.settings.max_cholesky_size(EXACT_MAX_N):
        if dataset == "airline":
            covar = ScaleKernel(MaternKernel(nu=1.5, ard_num_dims=Xtr.shape[-1]))
            fitted = SingleTaskGP(fit_X, fit_y[:, None], covar_module=covar, outcome_transform=None)
            fit_gpytorch_mll(ExactMarginalLogLikelihood(fitted.likelihood, fitted))
            model = SingleTaskGP(Xtr, ytr[:, None], covar_module=covar, outcome_transform=None)
        else:
            fitted = build_surrogate("matern", Sphere(2), fit_X, fit_y[:, None], nu=1.5)
            model = build_surrogate("matern", Sphere(2), Xtr, ytr[:, None], nu=1.5, fit=False)
        model.load_state_dict(fitted.state_dict(), strict=False)
        model.eval()
    means, variances = [], []
    with torch.no_grad(), gpytorch.settings.max_cholesky_size(EXACT_MAX_N):
        for chunk in Xte.split(5000):
            post = model.posterior(chunk, observation_noise=True)
            means.append(post.mean[:, 0])
            variances.append(post.variance[:, 0])
    return {
        **metrics(torch.cat(means), torch.cat(variances), yte),
        "train_points": len(Xtr),
        "hyperparameter_fit_points": len(fit_X),
    }


def run_case(args: argparse.Namespace) -> int:
    """Worker: one (dataset, method, N) configuration; writes its record to ``args.record``."""
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    load_before = load_average()
    if args.dataset == "airline":
        Xtr, ytr, Xte, yte = airline_split(args.out, args.n, args.full_size)
    else:
        Xtr, ytr, Xte, yte = airports_split(args.n if args.smoke else None)
    # torch imports sympy (about a second) on the first broadcast of shapes, which building any
    # GPyTorch kernel does: a one-off cost of the process, paid here for every method
    torch.broadcast_shapes((1,), (1,))
    probe = PeakMemory("cpu")
    start, start_cpu = time.perf_counter(), time.process_time()
    if args.method.startswith("vish"):
        result = run_vish(args.dataset, int(args.method[4:]), Xtr, ytr, Xte, yte, args.smoke)
    elif args.method == "svgp500":
        result = run_svgp(Xtr, ytr, Xte, yte, args.svgp_cap, args.smoke)
    else:
        result = run_exact(args.dataset, Xtr, ytr, Xte, yte)
    wall = time.perf_counter() - start
    cpu = time.process_time() - start_cpu
    memory = probe.stop()
    record = {
        "dataset": args.dataset,
        "method": args.method,
        "n": args.n if args.dataset == "airline" else len(Xtr) + len(Xte),
        "n_train": len(Xtr),
        "n_test": len(Xte),
        **result,
        "time_s": result.get("timed_s", wall),
        "wall_s": wall,
        "cpu_s": result.get("timed_cpu_s", cpu),
        "peak_rss_bytes": peak_rss_bytes(),
        "peak_increase_bytes": memory["peak_memory_bytes"],
        "memory_measure": memory["memory_measure"] + "; peak_rss_bytes is the process's ru_maxrss",
        "torch_threads": torch.get_num_threads(),
        "load_average_before_after": [load_before, load_average()],
        "smoke": args.smoke,
    }
    write_json(Path(args.record), record)
    return 0


# --------------------------------------------------------------------------------------------
# driver
# --------------------------------------------------------------------------------------------
def plan(args: argparse.Namespace) -> list[tuple[str, str, int]]:
    """The (dataset, method, N) configurations of this run."""
    cases = []
    if "airline" in args.datasets:
        for n in args.sizes:
            for method in AIRLINE_METHODS:
                if method in args.methods and (method != "exact" or n <= EXACT_MAX_N):
                    cases.append(("airline", method, n))
    if "airports" in args.datasets:
        n = 3000 if args.smoke else 0  # 0: all airports
        methods = [m for m in AIRPORT_METHODS if m in args.methods]
        if args.smoke:  # M = 1,600 costs ~0.3 s per training step: not for a smoke run
            methods = [m for m in methods if m != "vish1600"]
        cases += [("airports", m, n) for m in methods]
    return cases


def record_path(out: Path, dataset: str, method: str, n: int, smoke: bool) -> Path:
    """Where the record of one configuration lives."""
    tag = "smoke_" if smoke else ""
    return out / "records" / f"{tag}{dataset}_{method}_n{n}.json"


def summarise(records: list[dict]) -> dict:
    """Ratios and target checks from the records that exist."""

    def find(method, n):
        for r in records:
            if (
                r["dataset"] == "airline"
                and r["method"] == method
                and r["n"] == n
                and "error" not in r
            ):
                return r
        return None

    big = find("vish660", TARGET_N)
    svgp = find("svgp500", RATIO_N)
    per_method = {}  # the N = 10^6 targets, for each feature budget
    for m in ("vish210", "vish660"):
        vish = find(m, RATIO_N)
        both = vish is not None and svgp is not None
        speedup = svgp["time_s"] / vish["time_s"] if both else None
        gap = vish["nlpd"] - svgp["nlpd"] if both else None
        per_method[f"speedup_over_svgp_{m}"] = {
            "n": RATIO_N,
            "limit": TARGET_RATIO,
            "measured": speedup,
            "measured_cpu": svgp["cpu_s"] / vish["cpu_s"]
            if both and "cpu_s" in vish and "cpu_s" in svgp
            else None,
            "pass": speedup >= TARGET_RATIO if both else None,
        }
        per_method[f"nlpd_gap_{m}"] = {
            "n": RATIO_N,
            "limit_nats": TARGET_NLPD_GAP,
            "measured_nats": gap,
            "pass": gap <= TARGET_NLPD_GAP if both else None,
        }
    ratios = []
    for n in sorted({r["n"] for r in records if r["dataset"] == "airline"}):
        row = {"n": n}
        for m in ("vish210", "vish660"):
            a, b = find(m, n), find("svgp500", n)
            if a and b:
                row[f"svgp_over_{m}_time"] = b["time_s"] / a["time_s"]
                if "cpu_s" in a and "cpu_s" in b:
                    row[f"svgp_over_{m}_cpu"] = b["cpu_s"] / a["cpu_s"]
                row[f"{m}_minus_svgp_nlpd"] = a["nlpd"] - b["nlpd"]
        ratios.append(row)
    return {
        "ratios": ratios,
        "targets": {
            "cpu_time": {
                "n": TARGET_N,
                "limit_s": TARGET_TIME_S,
                "measured_s": big["time_s"] if big else None,
                "pass": (big["time_s"] < TARGET_TIME_S) if big else None,
            },
            "cpu_memory": {
                "n": TARGET_N,
                "limit_bytes": TARGET_MEMORY_BYTES,
                "measured_peak_rss_bytes": big["peak_rss_bytes"] if big else None,
                "pass": (big["peak_rss_bytes"] < TARGET_MEMORY_BYTES) if big else None,
            },
            **per_method,
            "gpu_time": {"pass": None, "note": "not measured: no GPU on this machine"},
        },
    }


def plot(data: dict, path: Path) -> None:
    """Time, NLPD and peak memory against N (airline), and the airport table as text."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    records = [r for r in data["records"] if "error" not in r]
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.6))
    styles = {"vish210": "o-", "vish660": "s-", "svgp500": "^-", "exact": "D-"}
    for method, style in styles.items():
        rows = sorted(
            (r for r in records if r["dataset"] == "airline" and r["method"] == method),
            key=lambda r: r["n"],
        )
        if not rows:
            continue
        n = [r["n"] for r in rows]
        axes[0].loglog(n, [r["time_s"] for r in rows], style, label=method)
        axes[1].semilogx(n, [r["nlpd"] for r in rows], style, label=method)
        axes[2].loglog(n, [r["peak_rss_bytes"] / GIB for r in rows], style, label=method)
        for r in rows:
            if str(r.get("stopped", "")).startswith("time cap"):
                axes[0].annotate("cap", (r["n"], r["time_s"]), fontsize=8)
    axes[0].axhline(TARGET_TIME_S, color="grey", ls=":", lw=1)
    axes[2].axhline(TARGET_MEMORY_BYTES / GIB, color="grey", ls=":", lw=1)
    axes[0].set(xlabel="N (2/3 train, 1/3 test)", ylabel="fit + predict [s]", title="wall time")
    axes[1].set(xlabel="N", ylabel="test NLPD (standardised)", title="NLPD")
    axes[2].set(xlabel="N", ylabel="peak RSS [GiB]", title="peak memory (fresh process)")
    for ax in axes:
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    airports = [r for r in records if r["dataset"] == "airports"]
    text = "airports (S²): " + ", ".join(
        f"{r['method']} NLPD {r['nlpd']:.3f} MSE {r['mse']:.3f} {r['time_s']:.1f}s"
        for r in airports
    )
    env = data["environment"]
    threads = sorted({r["torch_threads"] for r in records})
    loads = [r["load_average_before_after"][0][0] for r in records]
    hardware = f"{env['cpu_model']}, {env['cpu_cores']} cores, worker threads {threads}"
    fig.suptitle(
        f"VISH on the airline-shaped problem — {hardware}; 1-min load at starts "
        f"{min(loads, default=0):.1f}–{max(loads, default=0):.1f}"
        + (f"\n{text}" if airports else ""),
        fontsize=9,
    )
    fig.tight_layout()
    save_figure(fig, path)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Command-line options (``--worker`` and its companions are internal)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--smoke", action="store_true", help="tiny sizes and caps (seconds)")
    parser.add_argument("--out", type=Path, default=HERE / "results")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu", help="cuda: no GPU")
    parser.add_argument(
        "--sizes", type=int, nargs="+", help=f"airline sizes (default {AIRLINE_SIZES})"
    )
    parser.add_argument(
        "--methods", nargs="+", default=sorted({*AIRLINE_METHODS, *AIRPORT_METHODS})
    )
    parser.add_argument("--datasets", nargs="+", default=["airline", "airports"])
    parser.add_argument("--svgp-cap", type=float, default=SVGP_CAP_S, help="SVGP training cap [s]")
    parser.add_argument("--threads", type=int, help="torch threads in the workers")
    parser.add_argument("--force", action="store_true", help="rerun configurations with records")
    parser.add_argument("--report-only", action="store_true", help="only aggregate the records")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--dataset", help=argparse.SUPPRESS)
    parser.add_argument("--method", help=argparse.SUPPRESS)
    parser.add_argument("--n", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--full-size", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--record", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.smoke:
        args.sizes = args.sizes or list(SMOKE_SIZES)
        args.svgp_cap = min(args.svgp_cap, 3.0)
    args.sizes = sorted(args.sizes or AIRLINE_SIZES)
    args.full_size = args.full_size or (max(args.sizes) if args.smoke else TARGET_N)
    return args


def main(argv: list[str] | None = None) -> int:
    """Run the missing configurations (each in a fresh process) and write the JSON and PNG."""
    args = parse_args(argv)
    if args.worker:
        return run_case(args)
    if args.device == "cuda":
        print("CUDA: this machine has no GPU, so the GPU time is not measured; nothing was run.")
        return 0
    if "airports" in args.datasets:
        try:
            import airportsdata  # noqa: F401
        except ImportError:
            print("airportsdata is not installed (pip install -e '.[bench]'): airports skipped.")
            args.datasets = [d for d in args.datasets if d != "airports"]
    env = environment("cpu")
    print(f"vish_scale on {hardware_label(env, 'cpu')}; load {env['load_average_1_5_15_min']}")
    if not args.report_only:
        if "airline" in args.datasets:
            airline_cache(args.out, args.full_size)
        for dataset, method, n in plan(args):
            path = record_path(args.out, dataset, method, n, args.smoke)
            if path.exists() and not args.force:
                print(f"  {dataset} {method} N={n}: reusing {path.name}")
                continue
            command = [sys.executable, str(Path(__file__).resolve()), "--worker"]
            command += ["--dataset", dataset, "--method", method, "--n", str(n)]
            command += ["--out", str(args.out), "--record", str(path)]
            command += ["--full-size", str(args.full_size), "--svgp-cap", str(args.svgp_cap)]
            command += ["--threads", str(args.threads)] if args.threads else []
            command += ["--smoke"] if args.smoke else []
            result = run_worker(command, path, timeout=args.svgp_cap + 3600)
            if "error" in result:
                write_json(path.with_suffix(".error.json"), result)
                print(f"  {dataset} {method} N={n}: FAILED {result['error']}")
                continue
            print(
                f"  {dataset} {method} N={n}: {result['time_s']:.1f} s, MSE {result['mse']:.4f}, "
                f"NLPD {result['nlpd']:.4f}, peak {result['peak_rss_bytes'] / GIB:.2f} GiB",
                flush=True,
            )
    tag = "smoke_" if args.smoke else ""
    records = [
        json.loads(p.read_text())
        for p in sorted((args.out / "records").glob(f"{tag}*.json"))
        if not p.name.endswith(".error.json") and (args.smoke or not p.name.startswith("smoke_"))
    ]
    from manibo.models.vish.fit import DEFAULT_LIFT_TOLERANCE, DEFAULT_TOLERANCE

    data = {
        "benchmark": "vish_scale",
        "description": __doc__.split("\n\n")[0],
        "config": {
            "smoke": args.smoke,
            "airline_sizes": list(AIRLINE_SIZES),
            "split": "first 2/3 of the first N records for training, the rest for testing",
            "vish": {
                "airline_kernel": "HomogeneousLiftKernel(ChordalMaternKernel(Sphere(8), nu=1.5))",
                "airports_kernel": "GeometricMaternKernel(Sphere(2), nu=1.5)",
                "lift_sample": LIFT_SAMPLE,
                "lift_products": "float32",
                "maxiter_per_stage": MAXITER,
                "tolerance_lift_cache": [DEFAULT_LIFT_TOLERANCE, DEFAULT_TOLERANCE],
                "chunk_rows": CHUNK,
                "chunk_products": "float32, accumulated in float64",
            },
            "svgp": {
                "inducing_points": SVGP_INDUCING,
                "kernel": "ScaleKernel(MaternKernel(nu=1.5, ARD))",
                "optimizer": f"Adam lr {SVGP_LR}",
                "batch": SVGP_BATCH,
                "stop": f"window mean ELBO/point gain < {SVGP_TOL} nats, window = max(epoch, "
                f"{SVGP_WINDOW} steps), or the cap of {args.svgp_cap:.0f} s",
                "dtype": "float32",
            },
            "exact": f"training sets up to {round(2 * EXACT_MAX_N / 3)} points; "
            f"hyperparameters fitted on the first {EXACT_FIT_N}",
            "time": "wall clock of fit + predict (SVGP: its test-NLPD probes excluded); cpu_s: "
            "the worker's CPU time over the same work",
            "memory": "ru_maxrss of a fresh worker process per configuration",
        },
        "environment": env,
        "load_average_end": load_average(),
        "records": records,
        **summarise(records),
    }
    name = "vish_scale_smoke" if args.smoke else "vish_scale"
    write_json(args.out / f"{name}.json", data)
    plot(data, args.out / f"{name}.png")
    print(json.dumps(data["targets"], indent=1))
    print(f"wrote {args.out / (name + '.json')} and {args.out / (name + '.png')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
