"""VISH on the airline-shaped data with Table 3.1's protocol: 10 random splits, mean ± sd.

Table 3.1 of Dutordoir (2021), after Dutordoir, Durrande & Hensman (2020), evaluates VISH with
M = 210 and 660 harmonics on subsets of N = 10,000, 100,000, 1,000,000 and 5,929,413 records of
the 2008 US flight-delay data: in each of 10 random splits, a random subset of size N (the whole
set at the largest size), two thirds of it for training and one third for testing, inputs scaled
to [-1, 1] and outputs to zero mean and unit variance by the training part; the mean and one
standard deviation of the MSE, the NLPD and the time over the splits.

The real data cannot be downloaded here: the records are the synthetic airline-shaped data of
:func:`manibo.problems.datasets.airline_like` (the same eight covariates, a signal that explains
18% of the variance, right-skewed heavy-tailed noise), so the published figures are a reference
for the order of magnitude, not a like-for-like comparison. The model and its fit are those of
``vish_scale.py`` (:func:`vish_scale.run_vish`). Split ``k`` draws its subset and its order with
seed ``k``.

    python benchmarks/vish_airline_splits.py                      # 4 sizes x 2 M x 10 splits
    python benchmarks/vish_airline_splits.py --sizes 10000,100000 --splits 3
    python benchmarks/vish_airline_splits.py --smoke --out /tmp/v  # seconds; the tests

Records are kept per size, M and split under ``<out>/runs`` and reused; writes
``vish_airline_splits.json`` and ``vish_airline_splits.png``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from functools import partial
from pathlib import Path

import _common as common
from vish_scale import TARGET_N, airline_cache, run_vish

HERE = Path(__file__).resolve().parent
DEFAULT_OUT = HERE / "results" / "vish_airline_splits"
SIZES = (10_000, 100_000, 1_000_000, TARGET_N)
FEATURES = (210, 660)

#: Dutordoir (2021), Table 3.1 (real airline data, 10 splits): (MSE, sd), (NLPD, sd) per M and N.
PUBLISHED = {
    "vish210": {
        10_000: ((0.91, 0.16), (1.328, 0.09)),
        100_000: ((0.826, 0.052), (1.28, 0.03)),
        1_000_000: ((0.84, 0.01), (1.29, 0.01)),
        TARGET_N: ((0.833, 0.004), (1.29, 0.002)),
    },
    "vish660": {
        10_000: ((0.90, 0.16), (1.326, 0.09)),
        100_000: ((0.808, 0.052), (1.27, 0.03)),
        1_000_000: ((0.83, 0.03), (1.28, 0.01)),
        TARGET_N: ((0.834, 0.055), (1.27, 0.002)),
    },
    "svgp500": {
        10_000: ((0.90, 0.16), (1.358, 0.09)),
        100_000: ((0.808, 0.05), (1.31, 0.03)),
        1_000_000: ((0.82, 0.01), (1.32, 0.002)),
        TARGET_N: ((0.814, 0.004), (1.31, 0.002)),
    },
}
#: Table 3.1's times [s] (GTX 1070), where it gives them: N = 10,000 and the full set.
PUBLISHED_SECONDS = {
    "vish210": {10_000: (1.86, 0.38), TARGET_N: (41.32, 0.81)},
    "vish660": {10_000: (4.76, 1.25), TARGET_N: (160.8, 3.80)},
    "svgp500": {10_000: (836.54, 0.78), TARGET_N: (918.77, 1.21)},
}


def split(data, n: int, k: int):
    """Split ``k`` of size ``n``: a random subset (seed ``k``), 2/3 training, scaled on it."""
    import numpy as np
    import torch

    rng = np.random.default_rng(k)
    rows = rng.permutation(len(data))[:n]
    block = torch.from_numpy(np.asarray(data[np.sort(rows)]))[torch.from_numpy(rng.permutation(n))]
    n_train = round(2 * n / 3)
    X, y = block[:, :8], block[:, 8]
    low, high = X[:n_train].min(0).values, X[:n_train].max(0).values
    X = 2 * (X - low) / (high - low).clamp_min(1e-12) - 1
    y = (y - y[:n_train].mean()) / y[:n_train].std()
    return X[:n_train], y[:n_train], X[n_train:], y[n_train:]


def run_path(out: Path, full_size: int, n: int, num_features: int, k: int, smoke: bool) -> Path:
    """Where the record of one size, M and split is stored."""
    return out / "runs" / f"n{n}_vish{num_features}_split{k}.json"


def run_one(out: Path, full_size: int, n: int, num_features: int, k: int, smoke: bool) -> dict:
    """One size, M and split (cached under ``out/runs``)."""
    import torch

    path = run_path(out, full_size, n, num_features, k, smoke)
    if path.exists():
        return json.loads(path.read_text())
    torch.set_num_threads(1)
    Xtr, ytr, Xte, yte = split(airline_cache(out, full_size), n, k)
    load = common.load_average()
    start, cpu = time.perf_counter(), time.process_time()
    result = run_vish("airline", num_features, Xtr, ytr, Xte, yte, smoke)
    record = {
        "n": n,
        "method": f"vish{num_features}",
        "split": k,
        "n_train": len(Xtr),
        **result,
        "seconds": time.perf_counter() - start,
        "cpu_seconds": time.process_time() - cpu,
        "load_average_before_after": [load, common.load_average()],
    }
    return common.store_record(
        path,
        record,
        f"N={n} vish{num_features} split {k}: MSE {record['mse']:.4f} NLPD {record['nlpd']:.4f} "
        f"{record['seconds']:.1f} s",
    )


def summarise(records: list[dict]) -> dict:
    """Mean and sd over the splits per method and size, with the published row beside."""
    table = {}
    for method in sorted({r["method"] for r in records}):
        table[method] = {}
        for n in sorted({r["n"] for r in records if r["method"] == method}):
            mine = [r for r in records if r["method"] == method and r["n"] == n]
            row = {"splits": len(mine)}
            for metric in ("mse", "nlpd", "seconds", "cpu_seconds"):
                values = [r[metric] for r in mine]
                row[metric] = {
                    "mean": statistics.fmean(values),
                    "sd": statistics.stdev(values) if len(values) > 1 else 0.0,
                }
            published = PUBLISHED.get(method, {}).get(n)
            if published:
                row["published"] = {"mse": published[0], "nlpd": published[1]}
            table[method][str(n)] = row
    return table


def plot(table: dict, path: Path, title: str) -> None:
    """MSE and NLPD against N: ours (mean ± sd over the splits) and Table 3.1's, per M."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), constrained_layout=True)
    colours = {"vish210": "tab:blue", "vish660": "tab:green", "svgp500": "tab:grey"}
    for i, metric in enumerate(("mse", "nlpd")):
        ax = axes[i]
        for method, rows in table.items():
            ns = sorted(int(n) for n in rows)
            means = [rows[str(n)][metric]["mean"] for n in ns]
            sds = [rows[str(n)][metric]["sd"] for n in ns]
            ax.errorbar(ns, means, sds, marker="o", capsize=3, color=colours.get(method),
                        label=f"{method} (manibo, synthetic airline-shaped data)")  # fmt: skip
        for method, rows in PUBLISHED.items():
            ns = sorted(rows)
            values = [rows[n][i] for n in ns]
            ax.errorbar(
                [n * 1.08 for n in ns], [v[0] for v in values], [v[1] for v in values],
                marker="x", ls="--", capsize=3, color=colours.get(method), alpha=0.6,
                label=f"{method} (Table 3.1, real airline data)",
            )  # fmt: skip
        ax.set_xscale("log")
        ax.set_xlabel("N (records)")
        ax.set_ylabel(f"test {metric.upper()} (standardised units)")
    axes[0].legend(fontsize=7)
    fig.suptitle(title, fontsize=8)
    common.save_figure(fig, path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)))
    parser.add_argument("--features", default=",".join(map(str, FEATURES)))
    parser.add_argument("--splits", type=int, default=10)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--report-only", action="store_true", help="summarise stored runs only")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes for the test suite")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    features = [int(m) for m in args.features.split(",")]
    full_size = TARGET_N
    if args.smoke:
        sizes, features, args.splits, full_size = [1200], [210], 2, 3000
    args.out.mkdir(parents=True, exist_ok=True)
    load_start = common.load_average()
    jobs = [
        (args.out, full_size, n, m, k, args.smoke)
        for n in sizes
        for m in features
        for k in range(args.splits)
    ]
    records = common.gather(jobs, run_path, run_one, args.report_only)
    table = summarise(records)
    summary = {
        "config": {"sizes": sizes, "features": features, "splits": args.splits},
        "data": "synthetic airline-shaped records (manibo.problems.datasets.airline_like)",
        "published": {m: {str(n): v for n, v in rows.items()} for m, rows in PUBLISHED.items()},
        "published_seconds": {
            m: {str(n): v for n, v in rows.items()} for m, rows in PUBLISHED_SECONDS.items()
        },
        "table": table,
        "runs": records,
    }
    caption = f"mean ± sd over {args.splits} random splits (2/3 train) of random subsets of size N"
    common.write_results(
        args.out, "vish_airline_splits", summary, caption, partial(plot, table), args.smoke,
        load_start,
    )  # fmt: skip
    for method, rows in table.items():
        for n, row in rows.items():
            print(
                f"{method} N={n}: MSE {row['mse']['mean']:.4f} ± {row['mse']['sd']:.4f}  "
                f"NLPD {row['nlpd']['mean']:.4f} ± {row['nlpd']['sd']:.4f}  "
                f"{row['seconds']['mean']:.1f} s"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
