"""Classification with the activated deep GP (categorical likelihood) against its own network.

The protocol of ``adgp_regression.py`` with the softmax likelihood: three layers, 128 hidden units,
hidden layers with as many outputs as the data has inputs, softplus activations and the order-1
arc-cosine kernel; 5 random splits per data set, each holding out 10% for testing and 10% of the
rest for validation (stopping and model selection only); inputs standardised with the training
split's statistics. Nothing is chosen on test points.

* ``network``: the equivalent network alone, a softmax classifier (stage 1, cross-entropy),
  full-batch AdamW early-stopped on the validation cross-entropy, once per candidate learning rate
  and weight decay, the one with the lowest validation cross-entropy kept; its predictive
  probabilities are the softmax of its logits.
* ``adgp_start``: the activated deep GP at the stage-2 start, its hidden-variance scale chosen
  on the validation NLPD; ``adgp``: after stage 2 (the last layer, stopped on the validation NLPD).

Metrics on the test points: accuracy (of the most probable class), NLPD (the mean negative log
predictive probability of the true class, in nats) and the expected calibration error (ECE, 10
equal-width bins of the top-class probability).

Data ship with scikit-learn (``pip install -e ".[bench]"``): breast cancer (569 x 30, 2 classes),
wine (178 x 13, 3 classes) and digits (1797 8x8 images, 64 inputs, 10 classes). Nothing is
downloaded.

    python benchmarks/adgp_classification.py                  # 3 data sets x 5 splits
    python benchmarks/adgp_classification.py --datasets wine --splits 2
    python benchmarks/adgp_classification.py --smoke          # seconds; used by the test suite
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from _common import environment, load_average, write_json  # noqa: E402
from adgp_regression import (  # noqa: E402
    add_adgp_arguments,
    describe,
    median_columns,
    plot_splits,
    run_jobs,
    select_network,
    split_indices,
    stage_two,
)

DEFAULT_OUT = Path(__file__).parent / "results" / "adgp_classification"
DATASETS = ("breast_cancer", "wine", "digits")
METHODS = ("network", "adgp")
METRICS = ("accuracy", "nlpd", "ece")


def load_dataset(name: str):
    """Inputs ``(n, D)`` as float64 and class labels ``(n,)`` as int64 numpy arrays."""
    import numpy as np
    from sklearn import datasets

    loaders = {
        "breast_cancer": datasets.load_breast_cancer,
        "wine": datasets.load_wine,
        "digits": datasets.load_digits,
    }
    if name not in loaders:
        raise ValueError(f"unknown data set {name!r}; choose from {', '.join(DATASETS)}.")
    X, y = loaders[name](return_X_y=True)
    return X.astype(np.float64), y.astype(np.int64)


def _split(name: str, split: int, device: str):
    """Fit/validation/test inputs (standardised with the training split) and labels."""
    import torch

    X, y = load_dataset(name)
    X, y = torch.tensor(X, dtype=torch.float64), torch.tensor(y)
    fit, validation, test = split_indices(X.shape[0], split)
    train = torch.cat([validation, fit])
    mx, sx = X[train].mean(0), X[train].std(0)
    constant = sx == 0  # the digits' border pixels are 0 in every training image
    Xs = (X - mx) / torch.where(constant, 1.0, sx)
    Xs[:, constant] = 0.0
    num_classes = int(y.max()) + 1
    return [t.to(device) for idx in (fit, validation, test) for t in (Xs[idx], y[idx])], num_classes


def classification_metrics(probabilities, labels, seconds: float) -> dict:
    """Accuracy, NLPD and ECE (10 bins) of class ``probabilities`` ``(n, C)`` for ``labels``."""
    import torch

    confidence, predicted = probabilities.max(-1)
    correct = (predicted == labels).double()
    true_class = probabilities.gather(-1, labels.unsqueeze(-1)).squeeze(-1)
    bins = torch.clamp((confidence * 10).long(), max=9)
    ece = sum(
        float(mask.double().mean()) * abs(float(correct[mask].mean() - confidence[mask].mean()))
        for mask in (bins == b for b in range(10))
        if bool(mask.any())
    )
    return {
        "accuracy": float(correct.mean()),
        "nlpd": float(-true_class.clamp_min(1e-300).log().mean()),
        "ece": ece,
        "seconds": seconds,
    }


def run_split(name: str, split: int, args) -> dict:
    """The network and the activated deep GP on one split of one data set."""
    import torch

    from manibo.models.adgp import ActivatedDeepGP

    torch.set_num_threads(args.threads)
    load_start = load_average()
    (x, y, xv, yv, xt, yt), num_classes = _split(name, split, args.device)

    def make_model():
        return ActivatedDeepGP(
            x.shape[-1],
            num_classes,
            num_layers=3,
            num_units=args.units,
            likelihood="categorical",
            seed=split,
            device=x.device,
        )

    model, record = select_network(x, y, (xv, yv), args, split, make_model)
    with torch.no_grad():
        network = classification_metrics(model.network(xt).softmax(-1), yt, record.pop("seconds"))
    network.update(record)

    def test_metrics(model, seconds: float) -> dict:
        generator = torch.Generator(device=xt.device).manual_seed(20_000 + split)
        with torch.no_grad():
            probabilities = model.class_probabilities(xt, args.predict_samples, generator)
        return classification_metrics(probabilities, yt, seconds)

    adgp = stage_two(model, x, y, (xv, yv), args, split, test_metrics)
    result = {
        "dataset": name,
        "split": split,
        "n_train": x.shape[0],
        "n_validation": xv.shape[0],
        "n_test": xt.shape[0],
        "input_dim": x.shape[1],
        "classes": num_classes,
        "network": network,
        **adgp,
        "load_average": [load_start, load_average()],
    }
    print(
        f"{name} split {split}: "
        + "  ".join(
            f"{m} accuracy {result[m]['accuracy']:.3f} NLPD {result[m]['nlpd']:.4f} "
            f"ECE {result[m]['ece']:.3f} ({result[m]['seconds']:.0f} s)"
            for m in METHODS
        ),
        flush=True,
    )
    return result


def summarise(records: list[dict]) -> dict:
    """Per data set: the median of every metric per method and how often the ADGP is better."""
    table = {}
    for name in sorted({r["dataset"] for r in records}):
        mine = [r for r in records if r["dataset"] == name]
        row = {"splits": len(mine)}
        for method in ("network", "adgp_start", "adgp"):
            row.update(median_columns(mine, method, (*METRICS, "seconds")))
        row["adgp_nlpd_beats_network"] = sum(r["adgp"]["nlpd"] < r["network"]["nlpd"] for r in mine)
        row["adgp_ece_beats_network"] = sum(r["adgp"]["ece"] < r["network"]["ece"] for r in mine)
        row["adgp_accuracy_at_least_network"] = sum(
            r["adgp"]["accuracy"] >= r["network"]["accuracy"] for r in mine
        )
        row["adgp_hidden_scale"] = [r["adgp_start"]["hidden_scale"] for r in mine]
        row["adgp_stage2_objective"] = [r["adgp"]["objective"] for r in mine]
        row["adgp_stage2_steps_kept"] = [r["adgp"]["best_step"] for r in mine]
        row["network_lr_weight_decay"] = [
            [r["network"]["lr"], r["network"]["weight_decay"]] for r in mine
        ]
        table[name] = row
    return table


def _describe(runs: list[dict]) -> str:
    """``"name (n=..., D=..., C classes)"`` of one data set's runs."""
    return f"{describe(runs)[:-1]}, {runs[0]['classes']} classes)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--datasets", default=",".join(DATASETS))
    parser.add_argument("--splits", type=int, default=5)
    add_adgp_arguments(parser)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    if args.smoke:
        args.splits, args.units, args.workers = 1, 8, 1
        args.network_epochs = args.elbo_epochs = args.check_every = 2
        args.predict_samples, args.validation_samples = 4, 4
    args.out.mkdir(parents=True, exist_ok=True)
    load_start = load_average()
    jobs = [(name, split) for name in args.datasets.split(",") for split in range(args.splits)]
    start = time.perf_counter()
    records = run_jobs(run_split, jobs, args)
    table = summarise(records)
    summary = {
        "environment": environment(args.device),
        "load_average_start": load_start,
        "load_average_end": load_average(),
        "seconds": time.perf_counter() - start,
        "smoke": args.smoke,
        "settings": {k: v for k, v in vars(args).items() if k != "out"},
        "table": table,
        "runs": records,
    }
    write_json(args.out / "adgp_classification.json", summary)
    plot_splits(
        records,
        args.out / "adgp_classification.png",
        METHODS,
        ("nlpd", "ece"),
        "3 layers x 128 units, softmax; markers: splits, bars: medians (lower is better)",
        _describe,
    )
    for name, row in table.items():
        cells = "  ".join(
            f"{m}: accuracy {row[f'{m}_accuracy_median']:.3f} NLPD {row[f'{m}_nlpd_median']:.4f} "
            f"ECE {row[f'{m}_ece_median']:.3f}"
            for m in METHODS
        )
        print(f"{name:13s} {cells}")
        print(
            f"              ADGP NLPD < network on {row['adgp_nlpd_beats_network']}/"
            f"{row['splits']}, ECE < network on {row['adgp_ece_beats_network']}/{row['splits']}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
