r"""GPNet against SVGP and the exact GP: a Snelson-style toy, regression on S², and a large problem.

Three parts, each writing ``gpnet_<part>.json`` (with versions, hardware and the load average at the
start and the end) to ``--out``; ``gpnet_toy.png`` and ``gpnet_regression.png`` are drawn from
whichever part files exist, so the parts can run in separate invocations:

* **toy** — 100 noisy points of a wiggly function on [0, 6] (generated, Snelson-style), RBF prior.
  For M in {2, 5, 20}: SVGP with M learned inducing points and GPNet with M measurement points
  (RFE network with 20 trainable frequencies; c(x) uniform on [0, 6]; β₀ = 1, ξ = 0.1;
  minibatches of 20), as in Shi, Khan & Zhu (2019), Fig. 2. The headline number is the mean, over a
  grid on the data range, of KL(exact ‖ method) between predictive distributions of y.
* **sphere** — regression on S² (N = 2000, noise 0.1), Matérn-5/2 prior truncated to 15 levels;
  GPNet with harmonic features (its family contains the exact posterior) and SVGP with M fixed
  inducing points (learned ones would leave the sphere), M in {20, 100}, against the exact GP.
* **large** — N = 10⁵ points in R⁴ (RBF ARD prior, noise 0.1); GPNet with 256 random Fourier
  features and M measurement points, SVGP with M learned inducing points, M in {100, 500}; the exact
  GP would need an 80 GB kernel matrix, so a subset-of-data exact GP (5000 points) is reported for
  context; and GPNet's time per iteration at N = 10⁶.
* **bo** — what the ``"gpnet"`` BO surrogate costs: on Ackley on S² and S⁵ with N = 20, 50, 100
  points, the time to build it (exact pretraining of the hyperparameters + GPNet iterations) and to
  optimise LogEI on it with the loop's settings, against the exact Matérn GP, and both RMSEs.

All methods share the prior: hyperparameters fitted by exact marginal likelihood (on at most 1000
points) and then fixed, as in the paper's comparisons. Metrics on held-out test data: RMSE and mean
test log-likelihood (predictive y), and wall time of training.

    python benchmarks/gpnet.py                     # all parts (1-2 hours on 2 busy cores)
    python benchmarks/gpnet.py --part toy          # one part
    python benchmarks/gpnet.py --smoke --out /tmp/g   # seconds; used by the test suite
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from _common import environment, load_average, peak_rss_bytes, write_json  # noqa: E402

DEFAULT_OUT = Path(__file__).parent / "results"
PARTS = ("toy", "sphere", "large", "bo")


# ---------------------------------------------------------------------------------------- data
def toy_data(seed: int = 0, n: int = 100, n_test: int = 500):
    """Snelson-style 1-D data: ``sin 3x + 0.3 sin(9x + 1)`` plus N(0, 0.25²) noise on [0, 6]."""
    import torch

    gen = torch.Generator().manual_seed(seed)

    def f(x):
        return torch.sin(3 * x) + 0.3 * torch.sin(9 * x + 1)

    X = 6 * torch.rand(n + n_test, 1, generator=gen, dtype=torch.float64)
    y = f(X) + 0.25 * torch.randn(n + n_test, 1, generator=gen, dtype=torch.float64)
    return X[:n], y[:n], X[n:], y[n:]


def sphere_data(seed: int = 0, n: int = 2000, n_test: int = 1000):
    """Noisy values (sd 0.1) of a smooth function of unit vectors of R³."""
    import torch

    from manibo.spaces import Sphere

    space = Sphere(2)
    gen = torch.Generator().manual_seed(seed)
    x = space.random(n + n_test, generator=gen)
    f = torch.sin(3 * x[:, 0]) * torch.cos(2 * x[:, 1]) + x[:, 2] ** 2 + 0.5 * x[:, 0] * x[:, 2]
    y = (f + 0.1 * torch.randn(n + n_test, generator=gen, dtype=torch.float64)).unsqueeze(-1)
    return space, x[:n], y[:n], x[n:], y[n:]


def large_data(seed: int = 0, n: int = 100_000, n_test: int = 10_000, dim: int = 4):
    """Noisy values (sd 0.1) of a smooth function on the box [-2, 2]^4."""
    import torch

    gen = torch.Generator().manual_seed(seed)
    x = 4 * torch.rand(n + n_test, dim, generator=gen, dtype=torch.float64) - 2
    f = torch.sin(2 * x[:, 0]) + 0.5 * torch.cos(3 * x[:, 1]) + 0.3 * x[:, 2] * x[:, 3]
    y = (f + 0.1 * torch.randn(n + n_test, generator=gen, dtype=torch.float64)).unsqueeze(-1)
    return x[:n], y[:n], x[n:], y[n:]


# ---------------------------------------------------------------------------------------- methods
class Standardiser:
    """``y -> (y - mean) / std`` from training targets, and back for predictions."""

    def __init__(self, y):
        self.mean, self.std = float(y.mean()), float(y.std())

    def __call__(self, y):
        return (y - self.mean) / self.std

    def predictive(self, mean, var, noise):
        """Predictive mean and variance of y in original units from standardised latent moments."""
        return self.mean + self.std * mean, self.std**2 * (var + noise)


def shared_prior(space, kernel, X, Ys, seed=0, max_points=1000):
    """Kernel and likelihood fitted by exact marginal likelihood (≤ 1000 points), then frozen."""
    from manibo.models.gpnet import pretrain_hyperparameters

    prior, likelihood, _, _ = pretrain_hyperparameters(space, kernel.to(X), X, Ys, max_points, seed)
    for p in list(prior.parameters()) + list(likelihood.parameters()):
        p.requires_grad_(False)
    return prior, likelihood


def exact_gp(prior, noise, X, Ys, Xt, chunk=2000):
    """Exact GP latent moments at ``Xt`` (dense Cholesky of the N x N system)."""
    import torch

    start = time.perf_counter()
    with torch.no_grad():
        K = prior(X).to_dense() + noise * torch.eye(len(X), dtype=X.dtype, device=X.device)
        chol = torch.linalg.cholesky(K)
        alpha = torch.cholesky_solve(Ys, chol)
        means, variances = [], []
        for part in Xt.split(chunk):
            Kt = prior(part, X).to_dense()
            means.append((Kt @ alpha)[:, 0])
            half = torch.linalg.solve_triangular(chol, Kt.T, upper=False)
            variances.append(prior(part, diag=True) - half.square().sum(0))
    return torch.cat(means), torch.cat(variances).clamp_min(0), time.perf_counter() - start


def train_svgp(prior, likelihood, X, Ys, inducing, learn, iterations, batch, lr, seed):
    """SVGP (GPyTorch, whitened, full-covariance q(u)) with the prior frozen, and its predictor."""
    import gpytorch
    import torch

    class SVGP(gpytorch.models.ApproximateGP):
        def __init__(self):
            q_u = gpytorch.variational.CholeskyVariationalDistribution(inducing.shape[0])
            strategy = gpytorch.variational.VariationalStrategy(
                self, inducing.clone(), q_u, learn_inducing_locations=learn
            )
            super().__init__(strategy)
            self.covar = prior

        def forward(self, x):
            return gpytorch.distributions.MultivariateNormal(
                torch.zeros(x.shape[:-1], dtype=x.dtype, device=x.device), self.covar(x)
            )

    model = SVGP().to(X)
    mll = gpytorch.mlls.VariationalELBO(likelihood, model, num_data=X.shape[0])
    params = [p for p in model.parameters() if p.requires_grad]
    optimiser = torch.optim.Adam(params, lr=lr)
    gen = torch.Generator().manual_seed(seed)
    start = time.perf_counter()
    model.train()
    for _ in range(iterations):
        rows = torch.randint(X.shape[0], (min(batch, X.shape[0]),), generator=gen).to(X.device)
        optimiser.zero_grad()
        loss = -mll(model(X[rows]), Ys[rows, 0])
        loss.backward()
        optimiser.step()
    seconds = time.perf_counter() - start
    model.eval()

    def predict(Xt, chunk=4000):
        with torch.no_grad(), gpytorch.settings.skip_posterior_variances(False):
            parts = [model(c) for c in Xt.split(chunk)]
        return torch.cat([p.mean for p in parts]), torch.cat([p.variance for p in parts])

    return predict, seconds, model.variational_strategy.inducing_points.detach()


def train_gpnet(space, prior, likelihood, network, X, Ys, iterations, batch, M, lr, xi, c, seed):
    """GPNet with the prior frozen (``hyper_lr = 0``); returns a predictor and the wall time."""
    from manibo.models.gpnet import GPNet

    gpnet = GPNet(space, network, prior, likelihood, beta0=1.0, xi=xi, lr=lr)
    start = time.perf_counter()
    gpnet.fit(X, Ys, iterations, batch, M, c, seed=seed)
    seconds = time.perf_counter() - start

    def predict(Xt):
        mean, var = gpnet.predict(Xt)
        return mean[0], var[0]

    return predict, seconds, gpnet


def scores(standardiser, noise, mean, var, y_test):
    """RMSE and mean log-likelihood of the test targets under the predictive distribution of y."""
    import torch

    m, v = standardiser.predictive(mean, var, noise)
    y = y_test[:, 0]
    rmse = float((m - y).square().mean().sqrt())
    loglik = float((-0.5 * (torch.log(2 * math.pi * v) + (y - m).square() / v)).mean())
    return {"rmse": rmse, "test_loglik": loglik}


def mean_kl(exact, approx, noise):
    """Mean over points of KL(N_exact ‖ N_approx) between predictive distributions of y."""
    import torch

    (m1, v1), (m2, v2) = exact, approx
    v1, v2 = v1 + noise, v2 + noise
    return float((0.5 * (torch.log(v2 / v1) + (v1 + (m1 - m2).square()) / v2 - 1)).mean())


# ---------------------------------------------------------------------------------------- parts
def _stamp(result: dict, started_load) -> dict:
    result["load_average_start"] = started_load
    result["load_average_end"] = load_average()
    return result


def run_toy(args) -> dict:
    import torch
    from gpytorch.kernels import RBFKernel

    from manibo.kernels import feature_map
    from manibo.models.gpnet import (
        BayesianLinearNetwork,
        MeasurementDistribution,
    )
    from manibo.spaces import Box

    load = load_average()
    X, y, Xt, yt = toy_data(args.seed)
    X, y, Xt, yt = (t.to(args.device) for t in (X, y, Xt, yt))
    box = Box([0.0], [6.0])  # the data's domain; c(x) is uniform on it
    std = Standardiser(y)
    Ys = std(y)
    prior, likelihood = shared_prior(box, RBFKernel(), X, Ys, args.seed)
    noise = float(likelihood.noise)
    grid = torch.linspace(0.0, 6.0, 200, dtype=X.dtype, device=X.device)
    grid = grid.unsqueeze(-1)
    exact_grid = exact_gp(prior, noise, X, Ys, grid)[:2]
    exact_test = exact_gp(prior, noise, X, Ys, Xt)
    iterations = args.toy_iterations
    result = {
        "data": {"n": len(X), "n_test": len(Xt), "function": "sin 3x + 0.3 sin(9x + 1)"},
        "prior": _prior_record(prior, noise),
        "settings": {
            "iterations": iterations,
            "batch": 20,
            "lr": args.toy_lr,
            "gpnet": "RFE with 20 trainable frequencies + lengthscale; beta0 = 1, xi = 0.1; "
            "c(x) uniform on [0, 6]",
            "svgp": "learned inducing points (initialised at random training inputs)",
        },
        "exact": {**scores(std, noise, *exact_test[:2], yt), "seconds": exact_test[2]},
        "curves": {"grid": grid[:, 0].tolist(), "x": X[:, 0].tolist(), "y": y[:, 0].tolist()},
        "methods": {},
    }
    result["curves"]["exact"] = _curve(std, noise, *exact_grid)
    uniform = MeasurementDistribution(box, uniform_fraction=1.0)
    for M in (2, 5, 20):
        rows = torch.randperm(len(X), generator=torch.Generator().manual_seed(M))[:M]
        svgp, svgp_s, inducing = train_svgp(
            prior, likelihood, X, Ys, X[rows], True, iterations, 20, args.toy_lr, args.seed
        )
        features = feature_map(prior, 20, args.seed, trainable=True, detach=True, input_dim=1)
        network = BayesianLinearNetwork(features).to(X)
        gpnet, gpnet_s, _ = train_gpnet(
            box, prior, likelihood, network, X, Ys, iterations, 20, M, args.toy_lr, 0.1,
            uniform, args.seed,
        )  # fmt: skip
        for name, predict, seconds in (("svgp", svgp, svgp_s), ("gpnet", gpnet, gpnet_s)):
            on_grid, on_test = predict(grid), predict(Xt)
            result["methods"][f"{name}_M{M}"] = {
                "method": name,
                "M": M,
                "seconds": seconds,
                "mean_kl_to_exact": mean_kl(exact_grid, on_grid, noise),
                **scores(std, noise, *on_test, yt),
            }
            result["curves"][f"{name}_M{M}"] = _curve(std, noise, *on_grid)
        result["curves"][f"svgp_M{M}"]["inducing"] = inducing[:, 0].tolist()
        kls = [result["methods"][f"{m}_M{M}"]["mean_kl_to_exact"] for m in ("svgp", "gpnet")]
        print(f"toy M={M}: mean KL to exact  SVGP {kls[0]:.4f}  GPNet {kls[1]:.4f}", flush=True)
    kl5 = {m: result["methods"][f"{m}_M5"]["mean_kl_to_exact"] for m in ("svgp", "gpnet")}
    result["target"] = {
        "gpnet_closer_than_svgp_at_M5": kl5["gpnet"] < kl5["svgp"],
        "kl_ratio_svgp_over_gpnet_at_M5": kl5["svgp"] / kl5["gpnet"],
    }
    return _stamp(result, load)


def _curve(std, noise, mean, var):
    m, v = std.predictive(mean, var, noise)
    return {"mean": m.tolist(), "sd": v.sqrt().tolist()}


def _prior_record(prior, noise):
    base = prior.base_kernel
    return {
        "kernel": type(base).__name__,
        "lengthscale": base.lengthscale.detach().reshape(-1).tolist(),
        "outputscale": float(prior.outputscale),
        "noise_standardised": noise,
    }


def run_sphere(args) -> dict:
    import torch

    from manibo.kernels import feature_map
    from manibo.models.gpnet import (
        BayesianLinearNetwork,
        MeasurementDistribution,
        default_kernel,
    )
    from manibo.models.gpnet.measurement import lengthscale_noise

    load = load_average()
    n, features = (200, 49) if args.smoke else (2000, 225)
    space, X, y, Xt, yt = sphere_data(args.seed, n=n, n_test=100 if args.smoke else 1000)
    X, y, Xt, yt = (t.to(args.device) for t in (X, y, Xt, yt))
    std = Standardiser(y)
    Ys = std(y)
    kernel = default_kernel(space, 2.5, max_features=features)  # 15 levels on S² (full run)
    prior, likelihood = shared_prior(space, kernel, X, Ys, args.seed)
    noise = float(likelihood.noise)
    exact = exact_gp(prior, noise, X, Ys, Xt)
    iterations = args.sphere_iterations
    result = {
        "data": {"n": n, "n_test": len(Xt), "noise_sd": 0.1},
        "prior": {**_prior_record(prior, noise), "levels": prior.base_kernel.num_levels},
        "settings": {
            "iterations": iterations,
            "batch": 256,
            "lr_gpnet": 0.03,
            "lr_svgp": 0.01,
            "gpnet": f"harmonic features ({features}, the prior's levels); beta0 = 1, xi = 0.1; "
            "c(x): half uniform, half training inputs with tangent noise lengthscale/sqrt(2)",
            "svgp": "M fixed inducing points at random training inputs",
        },
        "exact": {**scores(std, noise, *exact[:2], yt), "seconds": exact[2]},
        "methods": {},
    }
    c = MeasurementDistribution(space, X, 0.5, lengthscale_noise(prior.base_kernel.lengthscale))
    for M in (20, 100):
        rows = torch.randperm(len(X), generator=torch.Generator().manual_seed(M))[:M]
        svgp, svgp_s, _ = train_svgp(
            prior, likelihood, X, Ys, X[rows], False, iterations, 256, 0.01, args.seed
        )
        network = BayesianLinearNetwork(feature_map(prior, max_features=features, detach=True)).to(
            X
        )
        gpnet, gpnet_s, _ = train_gpnet(
            space, prior, likelihood, network, X, Ys, iterations, 256, M, 0.03, 0.1, c, args.seed
        )
        for name, predict, seconds in (("svgp", svgp, svgp_s), ("gpnet", gpnet, gpnet_s)):
            on_test = predict(Xt)
            result["methods"][f"{name}_M{M}"] = {
                "method": name,
                "M": M,
                "seconds": seconds,
                "mean_kl_to_exact": mean_kl(exact[:2], on_test, noise),
                **scores(std, noise, *on_test, yt),
            }
        print(f"sphere M={M}: " + _row_text(result["methods"], M))
    return _stamp(result, load)


def run_large(args) -> dict:
    import torch
    from gpytorch.kernels import RBFKernel

    from manibo.kernels import feature_map
    from manibo.models.gpnet import (
        BayesianLinearNetwork,
        MeasurementDistribution,
    )
    from manibo.models.gpnet.measurement import lengthscale_noise
    from manibo.spaces import Box

    load = load_average()
    n, frequencies, batch, sizes = (
        (2000, 8, 64, (10, 20)) if args.smoke else (100_000, 256, 512, (100, 500))
    )
    X, y, Xt, yt = large_data(args.seed, n=n, n_test=500 if args.smoke else 10_000)
    X, y, Xt, yt = (t.to(args.device) for t in (X, y, Xt, yt))
    box = Box([-2.0] * 4, [2.0] * 4)
    std = Standardiser(y)
    Ys = std(y)
    # a smoke run fits the prior on 300 of its 2000 points (the cube of 1000 took most of its time)
    fit_points = 300 if args.smoke else 1000
    prior, likelihood = shared_prior(box, RBFKernel(ard_num_dims=4), X, Ys, args.seed, fit_points)
    noise = float(likelihood.noise)
    subset = 500 if args.smoke else 5000
    sod = exact_gp(prior, noise, X[:subset], Ys[:subset], Xt)
    iterations = args.large_iterations
    result = {
        "data": {"n": n, "n_test": len(Xt), "dim": 4, "noise_sd": 0.1},
        "prior": _prior_record(prior, noise),
        "settings": {
            "prior_fit_points": fit_points,
            "iterations": iterations,
            "batch": batch,
            "lr_gpnet": 0.03,
            "lr_svgp": 0.01,
            "gpnet": f"{frequencies} trainable random Fourier frequencies ({2 * frequencies} "
            "features); beta0 = 1, xi = 0.1; c(x): half uniform on the box, half training "
            "inputs + N(0, l^2/2)",
            "svgp": "M learned inducing points (initialised at random training inputs)",
        },
        "exact": {
            "skipped": f"the {n} x {n} kernel matrix needs {8 * n * n / 1e9:.0f} GB",
        },
        "exact_subset": {
            "n": subset,
            **scores(std, noise, *sod[:2], yt),
            "seconds": sod[2],
        },
        "methods": {},
    }
    c = MeasurementDistribution(box, X, 0.5, lengthscale_noise(prior.base_kernel.lengthscale))
    for M in sizes:
        rows = torch.randperm(len(X), generator=torch.Generator().manual_seed(M))[:M]
        svgp, svgp_s, _ = train_svgp(
            prior, likelihood, X, Ys, X[rows], True, iterations, batch, 0.01, args.seed
        )
        features = feature_map(prior, frequencies, args.seed, trainable=True, detach=True)
        network = BayesianLinearNetwork(features).to(X)
        gpnet, gpnet_s, _ = train_gpnet(
            box, prior, likelihood, network, X, Ys, iterations, batch, M, 0.03, 0.1, c, args.seed
        )
        for name, predict, seconds in (("svgp", svgp, svgp_s), ("gpnet", gpnet, gpnet_s)):
            result["methods"][f"{name}_M{M}"] = {
                "method": name,
                "M": M,
                "seconds": seconds,
                **scores(std, noise, *predict(Xt), yt),
            }
        print(f"large M={M}: " + _row_text(result["methods"], M), flush=True)
    result["scaling"] = gpnet_scaling(args, prior, likelihood, frequencies, batch)
    return _stamp(result, load)


def gpnet_scaling(args, prior, likelihood, frequencies, batch) -> dict:
    """GPNet's time per iteration at N = 1e5 and 1e6 (same minibatch): it does not grow with N."""

    from manibo.kernels import feature_map
    from manibo.models.gpnet import (
        BayesianLinearNetwork,
        MeasurementDistribution,
    )
    from manibo.spaces import Box

    box = Box([-2.0] * 4, [2.0] * 4)
    sizes = (20_000, 50_000) if args.smoke else (100_000, 1_000_000)
    record = {"iterations": 5 if args.smoke else 50, "batch": batch, "M": 100, "runs": []}
    for n in sizes:
        X, y, _, _ = large_data(args.seed + 1, n=n, n_test=0)
        X, y = X.to(args.device), ((y - y.mean()) / y.std()).to(args.device)
        features = feature_map(prior, frequencies, 0, trainable=True, detach=True)
        network = BayesianLinearNetwork(features).to(X)
        c = MeasurementDistribution(box, uniform_fraction=1.0)
        _, seconds, _ = train_gpnet(
            box, prior, likelihood, network, X, y, record["iterations"], batch, 100, 0.01, 0.1, c, 0
        )
        record["runs"].append(
            {
                "n": n,
                "seconds_per_iteration": seconds / record["iterations"],
                "peak_rss_gib_so_far": peak_rss_bytes() / 2**30,
                "data_gib": (X.numel() + y.numel()) * 8 / 2**30,
            }
        )
        print(f"scaling N={n}: {seconds / record['iterations'] * 1e3:.1f} ms per iteration")
    return record


def run_bo(args) -> dict:
    """Cost of one BO iteration with the ``"gpnet"`` surrogate against the exact Matérn GP."""
    import torch
    from botorch.acquisition import LogExpectedImprovement

    from manibo.models import build_surrogate
    from manibo.optim import LBFGSOptions, optimize_acqf_on_space
    from manibo.problems import make_problem

    load = load_average()
    sizes = (10,) if args.smoke else (20, 50, 100)
    options = {"num_iterations": 10} if args.smoke else {}
    # the loop's defaults in a full run
    restarts, raw, lbfgs = (2, 32, LBFGSOptions(maxiter=10)) if args.smoke else (8, 256, None)
    result = {"settings": {"gpnet_options": options or "defaults", "acquisition": f"LogEI, "
              f"{restarts} restarts, {raw} raw samples" + (", 10 L-BFGS iterations" if
              args.smoke else " (the loop's defaults)")}, "runs": []}  # fmt: skip
    for name in ("ackley-sphere2", "ackley-sphere5"):
        problem = make_problem(name)
        for n in sizes:
            gen = torch.Generator().manual_seed(n)
            X = problem.space.random(n, generator=gen)
            Y = -problem.evaluate_true(X).unsqueeze(-1)
            Xt = problem.space.random(500, generator=gen)
            Yt = -problem.evaluate_true(Xt)
            row = {"problem": name, "n": n}
            for method in ("matern", "gpnet"):
                start = time.perf_counter()
                model = build_surrogate(method, problem.space, X, Y, **(
                    options if method == "gpnet" else {}))  # fmt: skip
                build = time.perf_counter() - start
                acqf = LogExpectedImprovement(model, best_f=Y.max())
                start = time.perf_counter()
                optimize_acqf_on_space(
                    acqf,
                    problem.space,
                    num_restarts=restarts,
                    raw_samples=raw,
                    options=lbfgs,
                    seed=0,
                )
                acquisition = time.perf_counter() - start
                with torch.no_grad():
                    rmse = float((model.posterior(Xt).mean[:, 0] - Yt).square().mean().sqrt())
                row[method] = {"build_s": build, "acquisition_s": acquisition, "rmse": rmse}
                if method == "gpnet":
                    row[method]["features"] = model.gpnet.network.num_features
            result["runs"].append(row)
            print(
                f"bo {name} N={n}: build matern {row['matern']['build_s']:.2f} s, gpnet "
                f"{row['gpnet']['build_s']:.2f} s; LogEI {row['matern']['acquisition_s']:.2f} / "
                f"{row['gpnet']['acquisition_s']:.2f} s; RMSE {row['matern']['rmse']:.3f} / "
                f"{row['gpnet']['rmse']:.3f}",
                flush=True,
            )
    return _stamp(result, load)


def _row_text(methods: dict, M: int) -> str:
    cells = []
    for name in ("svgp", "gpnet"):
        row = methods[f"{name}_M{M}"]
        cells.append(
            f"{name} RMSE {row['rmse']:.4f} loglik {row['test_loglik']:.3f} {row['seconds']:.1f} s"
        )
    return "  ".join(cells)


# ---------------------------------------------------------------------------------------- figures
def plot_toy(result: dict, path: Path) -> None:
    """Shi, Khan & Zhu (2019), Fig. 2: SVGP (top), GPNet (bottom), M = 2, 5, 20; the exact GP."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    curves = result["curves"]
    grid = np.array(curves["grid"])
    fig, axes = plt.subplots(2, 3, figsize=(12, 6), sharex=True, sharey=True)
    exact_m, exact_s = np.array(curves["exact"]["mean"]), np.array(curves["exact"]["sd"])
    for row, name in enumerate(("svgp", "gpnet")):
        for col, M in enumerate((2, 5, 20)):
            ax = axes[row, col]
            curve = curves[f"{name}_M{M}"]
            m, s = np.array(curve["mean"]), np.array(curve["sd"])
            ax.scatter(curves["x"], curves["y"], s=6, color="k", alpha=0.5)
            ax.fill_between(grid, m - 3 * s, m + 3 * s, alpha=0.3, color=f"C{row}")
            ax.plot(grid, m, color=f"C{row}")
            ax.plot(grid, exact_m, "k--", lw=1)
            ax.plot(grid, exact_m - 3 * exact_s, "k:", lw=1)
            ax.plot(grid, exact_m + 3 * exact_s, "k:", lw=1)
            if "inducing" in curve:
                ax.plot(curve["inducing"], [ax.get_ylim()[0]] * M, "r^", ms=8)
            kl = result["methods"][f"{name}_M{M}"]["mean_kl_to_exact"]
            ax.set_title(f"{'SVGP' if name == 'svgp' else 'GPNet'}, M = {M}: KL {kl:.3f}")
    fig.suptitle("Snelson-style toy: ±3 sd of y; dashed/dotted: exact GP (KL = mean KL to it)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_regression(parts: dict, path: Path) -> None:
    """RMSE, test log-likelihood and training time of each method on the S² and large problems."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shown = [p for p in ("sphere", "large") if p in parts]
    if not shown:
        return
    fig, axes = plt.subplots(len(shown), 3, figsize=(12, 3.6 * len(shown)), squeeze=False)
    for row, part in enumerate(shown):
        methods = parts[part]["methods"]
        names = list(methods)
        reference = parts[part].get("exact", {})
        if "rmse" not in reference:
            reference = parts[part].get("exact_subset", {})
        for col, key in enumerate(("rmse", "test_loglik", "seconds")):
            ax = axes[row, col]
            values = [methods[n][key] for n in names]
            colours = ["C0" if methods[n]["method"] == "svgp" else "C1" for n in names]
            ax.bar(range(len(names)), values, color=colours)
            ax.set_xticks(range(len(names)), names, rotation=20)
            if key in reference:
                label = "exact GP" if "n" not in reference else f"exact GP, {reference['n']} pts"
                ax.axhline(reference[key], color="k", ls="--", label=label)
                ax.legend()
            ax.set_title(f"{part}: {key}")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# ---------------------------------------------------------------------------------------- main
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--part", choices=(*PARTS, "all"), default="all")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--toy-iterations", type=int, default=10_000)
    parser.add_argument("--toy-lr", type=float, default=0.01)
    parser.add_argument("--sphere-iterations", type=int, default=3000)
    parser.add_argument("--large-iterations", type=int, default=1500)
    parser.add_argument("--smoke", action="store_true", help="tiny sizes for the test suite")
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(1)
    if args.smoke:
        args.toy_iterations, args.sphere_iterations, args.large_iterations = 30, 20, 10
    args.out.mkdir(parents=True, exist_ok=True)
    runners = {"toy": run_toy, "sphere": run_sphere, "large": run_large, "bo": run_bo}
    for part in PARTS if args.part == "all" else (args.part,):
        result = runners[part](args)
        result["environment"] = environment(args.device)
        result["config"] = {"smoke": args.smoke, "device": args.device, "seed": args.seed}
        write_json(args.out / f"gpnet_{part}.json", result)
    parts = {}
    for part in PARTS:
        path = args.out / f"gpnet_{part}.json"
        if path.exists():
            parts[part] = json.loads(path.read_text())
    if "toy" in parts:
        plot_toy(parts["toy"], args.out / "gpnet_toy.png")
    plot_regression(parts, args.out / "gpnet_regression.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
