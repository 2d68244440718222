"""The measured tables of the docs (``benchmarks.md``, ``adgp.md``, ...) from ``docs/figures/``.

A page holds each table between ``<!-- BEGIN name -->`` and ``<!-- END name -->`` lines; this
script replaces what lies between them with what the table's renderer writes from the JSON files it
reads, so a number on a page is always the measured one. ``tests/benchmarks/test_doc_tables.py``
checks that the committed pages are what the committed JSON generate. A new table is one entry of
:data:`TABLES` (which names its page) and one pair of markers on that page.

    python benchmarks/doc_tables.py              # rewrite the tables of the pages in docs/
    python benchmarks/doc_tables.py --check      # exit status 1 when a page is stale
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from _common import count
from _kernel_cases import CASES, IMPLEMENTATIONS

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
FIGURES = DOCS / "figures"
MARKERS = re.compile(r"<!-- BEGIN (\S+) -->\n(.*?)<!-- END \1 -->", flags=re.S)
MB = 10**6


# --------------------------------------------------------------------------------------------
# number formats
# --------------------------------------------------------------------------------------------
def significant(value: float, digits: int = 3) -> str:
    """``value`` to ``digits`` significant digits, without an exponent for 1e-4 <= |value| < 1e6."""
    if value == 0:
        return "0"
    if not 1e-4 <= abs(value) < 1e6:
        return f"{value:.{digits - 1}e}"
    text = f"{value:#.{digits}g}".rstrip(".")
    return text if "e" not in text else f"{value:.0f}"


def seconds(value: float) -> str:
    """``0.0126 s``, ``1.33 s``, ``110 s``."""
    return f"{significant(value)} s"


def megabytes(value: float) -> str:
    """Bytes as ``58 MB`` (``0.4 MB`` below 10 MB)."""
    mb = value / MB
    return f"{mb:.1f} MB" if mb < 10 else f"{mb:.0f} MB"


def factor(value: float | None) -> str:
    """A ratio as ``105×``, ``5.0×`` or ``0.63×``; ``—`` when missing."""
    if value is None:
        return "—"
    if value < 1:
        return f"{value:.2g}×"
    return f"{value:.1f}×" if value < 10 else f"{value:.0f}×"


def difference(value: float | None) -> str:
    """A matrix difference as ``1.1e-11``, ``—`` when missing."""
    return "—" if value is None else f"{value:.1e}"


def table(header: list[str], rows: list[list[str]]) -> str:
    """A Markdown table."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------------------------
# renderers: each takes the loaded JSON files it declares and returns Markdown
# --------------------------------------------------------------------------------------------
def kernel_table(data: dict) -> str:
    """One space: time and memory of each implementation against N, ratios and agreement."""
    cpu = data["results"]["cpu"]
    by_n = {name: {r["n"]: r for r in runs} for name, runs in cpu.items()}
    ratios = {row["n"]: row for row in data["comparisons"]["cpu"]}
    gpu = [d for d in data["results"] if d != "cpu"]
    present = [name for name in IMPLEMENTATIONS if cpu[name]]
    header = ["N", *(IMPLEMENTATIONS[name] for name in present)]
    for name in present[1:]:
        header.append(f"{_short(name)} / manibo time, memory")
    header += [f"max \\|K − K_manibo\\|, {_short(name)}" for name in present[1:]]
    for device in gpu:
        header += [f"manibo {device.upper()}", f"manibo CPU / {device.upper()}"]
    gpu_runs = {d: {r["n"]: r for r in data["results"][d]["manibo"]} for d in gpu}
    device_ratios = {
        (r["device"], r["n"]): r["cpu_over_device_time"]
        for r in data["device_ratios"]
        if r["implementation"] == "manibo"
    }
    rows = []
    for n in data["config"]["sizes"]:
        row = [str(n)]
        for name in present:
            row.append(_cell(by_n[name].get(n)))
        for name in present[1:]:
            prefix = "gk" if name == "geometric_kernels" else "naive"
            time_ratio = ratios[n][f"{prefix}_over_manibo_time"]
            memory_ratio = ratios[n][f"{prefix}_over_manibo_memory"]
            row.append(
                "—" if time_ratio is None else f"{factor(time_ratio)}, {factor(memory_ratio)}"
            )
        for name in present[1:]:
            prefix = "gk" if name == "geometric_kernels" else "naive"
            row.append(difference(ratios[n][f"{prefix}_max_abs_diff"]))
        for device in gpu:
            row += [_cell(gpu_runs[device].get(n)), factor(device_ratios.get((device, n)))]
        rows.append(row)
    notes = _skip_notes(data, present)
    return table(header, rows) + notes + _agreement_notes(data.get("agreement"))


def _agreement_notes(agreement: dict | None) -> str:
    """The Monte Carlo comparison of random-phase kernels with the kernel they estimate."""
    if not agreement:
        return ""
    rows = []
    labels = {"manibo_features": "manibo features", "geometric_kernels": "GeometricKernels"}
    for key, label in labels.items():
        stats = agreement.get(key)
        if stats:
            rows.append(
                [
                    f"{label} ({stats['num_phases']} phases)",
                    f"{stats['median_standard_error']:.2g}, {stats['max_standard_error']:.2g}",
                    difference(stats["max_abs_error"]),
                    f"{difference(stats['max_abs_error_of_mean'])} "
                    f"(s.e. ≤ {stats['max_standard_error_of_mean']:.2g})",
                    f"{100 * stats['fraction_within_3_standard_errors']:.0f}%",
                ]
            )
    header = [
        f"random phases, {agreement['points']} points, {agreement['manibo_features']['keys']} "
        "seeds",
        "standard error of an entry: median, max",
        "max error, one seed",
        "max error, mean of the seeds",
        "entries within 3 s.e.",
    ]
    return f"\n\nAgainst the kernel they estimate ({agreement['reference']}):\n\n" + table(
        header, rows
    )


def _short(name: str) -> str:
    return {"naive_torch": "naive", "geometric_kernels": "GK"}.get(name, name)


def _cell(run: dict | None) -> str:
    """``wall s (CPU cpu), memory`` of a run; the CPU time only where it is recorded (CPU runs)."""
    if run is None:
        return "—"
    if "error" in run:
        return "failed"
    cpu = f" (CPU {significant(run['cpu_time_s'])})" if run.get("device", "cpu") == "cpu" else ""
    return f"{seconds(run['time_s'])}{cpu}, {megabytes(run['peak_memory_bytes'])}"


def _skip_notes(data: dict, present: list[str]) -> str:
    """Why cells are empty: one sentence per implementation (Markdown, after the table)."""
    notes = []
    for name in IMPLEMENTATIONS:
        if name not in present:
            notes.append(f"{IMPLEMENTATIONS[name]}: {data['alternatives'][name]}.")
    reasons: dict[str, list[int]] = {}
    for skip in data["skipped"]:
        key = f"{IMPLEMENTATIONS[skip['implementation']]} not run at N = {{}}: {skip['reason']}"
        reasons.setdefault(key, []).append(skip["n"])
    for text, sizes in reasons.items():
        notes.append(text.format(", ".join(str(n) for n in sorted(set(sizes)))) + ".")
    return "".join(f"\n{note}\n" for note in notes)


def kernel_overview(datasets: list[dict]) -> str:
    """Every space at its largest N measured by all implementations, and at N = 5000."""
    header = [
        "space",
        "truncation",
        "manibo at N = 2000",
        "naive / manibo time",
        "GK at its largest N",
        "GK / manibo time, memory",
        "manibo at N = 5000",
        "N = 5000 in < 5 s and < 1 GB",
        "max \\|K − K_manibo\\| (naive, GK)",
    ]
    rows = []
    for data in datasets:
        cpu = data["results"]["cpu"]
        manibo = {r["n"]: r for r in cpu["manibo"]}
        ratios = {row["n"]: row for row in data["comparisons"]["cpu"]}
        gk_runs = [r for r in cpu["geometric_kernels"] if "error" not in r]
        gk = gk_runs[-1] if gk_runs else None
        naive_ratio = ratios.get(2000, {}).get("naive_over_manibo_time")
        gk_cell, gk_ratio = "not supported", "—"
        if gk is not None:
            gk_cell = f"{_cell(gk)} (N = {gk['n']})"
            row = ratios[gk["n"]]
            gk_ratio = (
                f"{factor(row['gk_over_manibo_time'])}, {factor(row['gk_over_manibo_memory'])}"
            )
        naive_diffs = [r["naive_max_abs_diff"] for r in ratios.values() if r["naive_max_abs_diff"]]
        gk_diffs = [r["gk_max_abs_diff"] for r in ratios.values() if r["gk_max_abs_diff"]]
        rows.append(
            [
                data["label"],
                data["config"]["truncation"],
                _cell(manibo.get(2000)),
                factor(naive_ratio),
                gk_cell,
                gk_ratio,
                _cell(manibo.get(5000)),
                _target(manibo.get(5000), data["targets"]),
                f"{difference(max(naive_diffs, default=None))}, "
                f"{difference(max(gk_diffs, default=None))}",
            ]
        )
    return table(header, rows)


def _target(run: dict | None, targets: dict) -> str:
    """Whether manibo took under 5 s and 1 GB at N = 5000, by wall time and by CPU time."""
    if run is None or "error" in run:
        return "—"
    limit, memory = targets["time"]["limit_s"], targets["memory"]["limit_bytes"]

    def verdict(ok: bool) -> str:
        return "yes" if ok else "no"

    return (
        f"time: {verdict(run['time_s'] < limit)} (wall), {verdict(run['cpu_time_s'] < limit)} "
        f"(CPU); memory: {verdict(run['peak_memory_bytes'] < memory)}"
    )


TASK_LABELS = {"fit": "fit", "logei": "iteration, LogEI", "qlognei": "iteration, qLogNEI"}


def bo_table(data: dict) -> str:
    """Fit and iteration times against n, per problem (CPU; GPU columns when measured)."""
    tasks = ["fit", *data["config"]["acquisitions"]]
    devices = list(data["results"])
    header = ["problem", "n"]
    for device in devices:
        suffix = "" if device == "cpu" else f", {device.upper()}"
        header += [f"{TASK_LABELS[t]}{suffix}" for t in tasks]
    header.append(f"peak memory, {TASK_LABELS[tasks[-1]]}")
    records = {(d, r["problem"], r["n"], r["task"]): r for d in devices for r in data["results"][d]}
    rows = []
    for problem in data["config"]["problems"]:
        for n in data["config"]["observations"]:
            row = [problem, str(n)]
            for device in devices:
                for task in tasks:
                    record = records.get((device, problem, n, task))
                    row.append(_time_cell(record))
            last = records.get(("cpu", problem, n, tasks[-1]))
            row.append(
                megabytes(last["peak_memory_bytes"]) if last and "error" not in last else "—"
            )
            rows.append(row)
    return table(header, rows)


def product_speed_table(data: dict) -> str:
    """Products against the sphere: median times (wall, CPU) and paired ratios per measurement."""
    config = data["config"]
    blocks = [("kernel", f"K(X, X), N = {config['n_points']}", "T³ (10 levels)", "S² (25 levels)")]
    blocks += [
        (
            f"iteration_{a}",
            f"BO iteration, {ACQUISITION_LABELS.get(a, a)}, n = {config['n_observations']}",
            "arm-torus3",
            "ackley-sphere2",
        )
        for a in config["acquisitions"]
    ]
    if "kernel_series" in data:
        n = data["kernel_series"]["n_points"]
        blocks.append(
            (
                "kernel_series",
                f"T³ at N = {n}: level series / eigenfunctions",
                "T³ series",
                "T³ features",
            )
        )
    header = ["measurement", "numerator", "denominator", "ratio (wall)", "ratio (CPU)"]
    rows = []
    for key, label, top, bottom in blocks:
        block = data[key]
        cells = []
        for name in (top, bottom):
            times = block["times"][name]
            cells.append(
                f"{name}: {seconds(times['median_wall_s'])} "
                f"(CPU {significant(times['median_cpu_s'])})"
            )
        ratio = block["ratio"]
        rows.append(
            [label, *cells, factor(ratio["median_ratio_wall"]), factor(ratio["median_ratio_cpu"])]
        )
    return table(header, rows)


def _time_cell(record: dict | None) -> str:
    if record is None:
        return "not measured"
    if "error" in record:
        return "failed"
    cpu = f" (CPU {significant(record['cpu_time_s'])})" if record["device"] == "cpu" else ""
    return f"{seconds(record['time_s'])}{cpu}"


ACQUISITION_LABELS = {"qlognei": "qLogNEI (the loop's default)", "logei": "LogEI"}
METHOD_LABELS = {
    "matern": "matern (manibo)",
    "heat": "heat (manibo)",
    "euclidean": "euclidean + projection",
    "chart": "chart coordinates",
    "random": "random",
}


def regret_table(datasets: list[dict], problem: str, checkpoints: tuple[int, ...]) -> str:
    """Median [IQR] simple regret at ``checkpoints`` and seconds per iteration, by method.

    Rows come from every JSON in turn (a qLogNEI run next to the LogEI runs, for example), each
    labelled with its acquisition when that is not LogEI; the lowest median of each column is bold.
    Where the data lack ``checkpoints`` (a smoke run), its own checkpoints are the columns.
    """
    rows = []
    for data in datasets:
        entry = data["problems"][problem]
        order = list(METHOD_LABELS)
        methods = sorted(entry["table"], key=lambda m: order.index(m) if m in order else len(order))
        for method in methods:
            stats = entry["table"][method]
            label = METHOD_LABELS.get(method, method)
            acquisition = next(r.get("acquisition") for r in entry["runs"] if r["method"] == method)
            if method != "random" and acquisition not in (None, "logei"):
                label += f", {ACQUISITION_LABELS.get(acquisition, acquisition)}"
            rows.append((label, stats))
    most = max((stats.get("seeds", 0) for _, stats in rows), default=0)
    rows = [  # a method run on fewer seeds than the others says so
        (
            f"{label} ({count(stats['seeds'], 'seed')})"
            if stats.get("seeds", most) < most
            else label,
            stats,
        )
        for label, stats in rows
    ]
    present = [t for t in checkpoints if all(str(t) in stats["regret"] for _, stats in rows)]
    columns = present or sorted({int(t) for _, stats in rows for t in stats["regret"]})
    best = {t: min(stats["regret"][str(t)]["median"] for _, stats in rows) for t in columns}
    body = []
    for label, stats in rows:
        cells = [label]
        for t in columns:
            regret = stats["regret"][str(t)]
            median = significant(regret["median"])
            if regret["median"] == best[t]:
                median = f"**{median}**"
            cells.append(f"{median} [{significant(regret['q25'])}, {significant(regret['q75'])}]")
        secs = stats["seconds_per_iteration"]
        cells.append("—" if secs is None else significant(secs))
        body.append(cells)
    header = ["method", *(f"t = {t}" for t in columns), "s / iteration"]
    return table(header, body)


GIB = 2**30


def vish_scale_table(data: dict) -> str:
    """Every configuration of ``vish_scale.py``: time, accuracy, memory, load, and its stages."""
    rows = []
    order = {"vish210": 0, "vish660": 1, "vish400": 0, "vish1600": 1, "svgp500": 2, "exact": 3}
    records = [r for r in data["records"] if "error" not in r]
    for r in sorted(records, key=lambda r: (r["dataset"], r["n"], order.get(r["method"], 9))):
        stages = r.get("stages", {})
        if r["method"].startswith("vish"):
            note = ", ".join(f"{k.removesuffix('_s')} {v:.1f}" for k, v in stages.items())
        else:
            note = r.get("stopped") or ""
            if r.get("steps"):
                note += f" after {r['steps']} steps"
        before, after = r["load_average_before_after"]
        rows.append(
            [
                r["dataset"],
                f"{r['n_train'] + r['n_test']:,}",
                r["method"],
                str(r["torch_threads"]),
                f"{r['time_s']:.1f}",
                f"{r['cpu_s']:.1f}" if "cpu_s" in r else "not recorded",
                f"{r['mse']:.4f}",
                f"{r['nlpd']:.4f}",
                f"{r['peak_rss_bytes'] / GIB:.2f}",
                f"{before[0]:.1f}/{after[0]:.1f}",
                note.strip(),
            ]
        )
    header = ["data", "N", "method", "threads", "fit+predict [s]", "CPU [s]", "MSE", "NLPD"]
    return table([*header, "peak RSS [GiB]", "load before/after", "note"], rows)


def vish_ratio_table(data: dict) -> str:
    """SVGP's time over VISH's (wall clock and CPU) and VISH's NLPD minus SVGP's, at every N where
    both ran."""
    rows = []
    for ratio in data["ratios"]:
        for m in ("vish210", "vish660"):
            if f"svgp_over_{m}_time" in ratio:
                gap = ratio[f"{m}_minus_svgp_nlpd"]
                cpu = ratio.get(f"svgp_over_{m}_cpu")
                rows.append(
                    [
                        f"{ratio['n']:,}",
                        m,
                        factor(ratio[f"svgp_over_{m}_time"]),
                        factor(cpu) if cpu is not None else "not recorded",
                        f"{gap:+.4f}",
                    ]
                )
    header = ["N", "VISH", "SVGP time / VISH time", "SVGP CPU / VISH CPU"]
    return table([*header, "NLPD(VISH) − NLPD(SVGP)"], rows)


def vish_splits_table(data: dict) -> str:
    """Mean ± sd over the splits of test MSE, NLPD and time per VISH size and N, the published
    (real airline data) MSE and NLPD beside."""
    rows = []
    for method, sizes in data["table"].items():
        for n, row in sorted(sizes.items(), key=lambda item: int(item[0])):
            published = row.get("published")
            rows.append(
                [
                    f"{int(n):,}",
                    method,
                    str(row["splits"]),
                    f"{row['mse']['mean']:.4f} ± {row['mse']['sd']:.4f}",
                    f"{row['nlpd']['mean']:.4f} ± {row['nlpd']['sd']:.4f}",
                    f"{row['seconds']['mean']:.1f} ± {row['seconds']['sd']:.1f}",
                    f"{row['cpu_seconds']['mean']:.1f}",
                    "—" if published is None else "{:.3f} ± {:.3f}".format(*published["mse"]),
                    "—" if published is None else "{:.3f} ± {:.3f}".format(*published["nlpd"]),
                ]
            )
    header = ["N", "VISH", "splits", "MSE", "NLPD", "wall s", "CPU s"]
    return table([*header, "published MSE (real data)", "published NLPD (real data)"], rows)


def runs_table(datasets: list[dict], names: list[str]) -> str:
    """When and where each JSON was measured, and the load average around it."""
    rows = []
    for name, data in zip(names, datasets, strict=True):
        env = data["environment"]
        start_end = data.get("load_average_start_end")
        if "load_average_runs_1_min" in data:  # a summary of stored runs (--report-only)
            loads = data["load_average_runs_1_min"]
            load = "not recorded" if loads is None else f"{loads[0]:g} to {loads[1]:g} (runs)"
            recorded = data.get("load_average_runs_recorded")
            if loads is not None and recorded and recorded[0] != recorded[1]:
                load = f"{loads[0]:g} to {loads[1]:g} "
                load += f"({recorded[0]} of {recorded[1]} runs recorded it)"
        elif data.get("load_average_cases_1_min"):  # measured case by case, maybe in several runs
            low, high = data["load_average_cases_1_min"]
            load = f"{low:g} to {high:g} (around its cases)"
        elif start_end and start_end[0] and start_end[1]:
            load = f"{start_end[0][0]:g} → {start_end[1][0]:g}"
        else:
            load = f"{env['load_average_1_5_15_min'][0]:g} at start"
        hardware = f"{env['cpu_model']}, {env['cpu_cores']} cores"
        machines = data.get("cpu_models_runs")
        if machines:  # stored runs of several sessions, maybe on other machines
            parts = [f"{model} ({count} runs)" for model, count in machines.items()]
            hardware = "; ".join(parts) + f"; {env['cpu_cores']} cores"
        if env.get("gpu"):
            hardware += f"; {env['gpu']['name']}"
        threads = data.get("config", {}).get("threads") or env["torch_threads"]
        versions = ", ".join(f"{k} {v}" for k, v in env["versions"].items() if k != "numpy")
        if machines:  # the cores, threads and versions above are those of the merging process
            setups = data.get("setups_runs") or {"not recorded": sum(machines.values())}
            unknown = setups.pop("not recorded", 0)
            known = [f"{setup} ({number} runs)" for setup, number in setups.items()]
            threads = "in each run's setup" if known and not unknown else "not recorded"
            if unknown:
                known.append(f"{unknown} runs did not record theirs")
            hardware = "; ".join(f"{model} ({n} runs)" for model, n in machines.items())
            versions = "; ".join(known) + (f"; merged with {versions}" if unknown else "")
        written = " to ".join(data.get("measured_utc") or [env["timestamp_utc"]])
        row = [f"[{name}](figures/{name})", written, hardware, str(threads), load]
        rows.append([*row, versions])
    header = ["JSON", "written (UTC)", "hardware", "torch threads", "load average (1 min)"]
    return table([*header, "versions"], rows)


def examples_table(data: dict) -> str:
    """Every example: what it shows, its wall and CPU time, and whether its own checks passed."""
    env, config = data["environment"], data["config"]
    versions = ", ".join(f"{k} {v}" for k, v in env["versions"].items() if k != "numpy")
    intro = (
        f"At {'smoke' if config['smoke'] else 'full'} size, one example at a time, "
        f"{count(config['threads'], 'BLAS thread')} each, on {env['cpu_model']} "
        f"({env['cpu_cores']} cores; {versions}); [examples.json](figures/examples.json).\n\n"
    )
    rows = []
    for record in data["examples"]:
        before, after = record["load_average_1_min_before_after"]
        verdict = "passed" if record["passed"] else f"**failed** (exit {record['returncode']})"
        rows.append(
            [
                f"[{record['name']}.py](../examples/{record['name']}.py)",
                record["summary"].rstrip("."),
                f"{seconds(record['seconds'])} (CPU {significant(record['cpu_seconds'])})",
                verdict,
                f"{before:g} → {after:g}",
                record["timestamp_utc"][:10],
            ]
        )
    header = ["example", "what it shows", "wall time (CPU)", "its own checks"]
    return intro + table([*header, "load average (1 min)", "run (UTC)"], rows)


def geometric_kernels_table(datasets: list[dict]) -> str:
    """manibo against GeometricKernels on every space: time and memory ratios, agreement."""
    columns = "space; truncation; N compared; GK / manibo time; at the largest N: GK, manibo"
    header = [*columns.split("; "), "GK / manibo memory there", "max \\|K_GK − K_manibo\\|"]
    rows = []
    for data in datasets:
        compared = [r for r in data["comparisons"]["cpu"] if r["gk_over_manibo_time"]]
        if not compared:
            continue
        times = [r["gk_over_manibo_time"] for r in compared]
        last = compared[-1]
        cpu = data["results"]["cpu"]
        runs = {name: {r["n"]: r for r in cpu[name]} for name in ("manibo", "geometric_kernels")}
        n = last["n"]
        rows.append(
            [
                data["label"],
                data["config"]["truncation"],
                f"{compared[0]['n']}–{n}",
                f"{factor(min(times))} to {factor(max(times))}",
                f"{seconds(runs['geometric_kernels'][n]['time_s'])}, "
                f"{seconds(runs['manibo'][n]['time_s'])} (N = {n})",
                factor(last["gk_over_manibo_memory"]),
                difference(max(r["gk_max_abs_diff"] for r in compared)),
            ]
        )
    return table(header, rows)


ADGP_DATASETS = {"diabetes": "diabetes", "boston": "Boston", "concrete": "concrete"}
ADGP_CLASSIFICATION_DATASETS = {
    "breast_cancer": "breast cancer",
    "wine": "wine",
    "digits": "digits",
}


def _adgp_rows(data: dict, labels: dict = ADGP_DATASETS) -> list[tuple[str, dict, list[dict]]]:
    """``(label with (n, D), summary row, runs)`` per data set of ``adgp_regression.json`` (or of
    ``adgp_classification.json``, with its ``labels``)."""
    order = list(labels)
    names = sorted(data["table"], key=lambda n: order.index(n) if n in order else len(order))
    rows = []
    for name in names:
        runs = sorted((r for r in data["runs"] if r["dataset"] == name), key=lambda r: r["split"])
        n = runs[0]["n_train"] + runs[0]["n_validation"] + runs[0]["n_test"]
        label = f"{labels.get(name, name)} ({n}, {runs[0]['input_dim']})"
        rows.append((label, data["table"][name], runs))
    return rows


def _rmse_nlpd(rmse: float, nlpd: float) -> str:
    return f"{significant(rmse)} / {nlpd:.3f}"


def adgp_regression_table(data: dict) -> str:
    """Median RMSE / NLPD per method and data set, and the splits meeting each criterion."""
    header = [
        "data set (n, D)",
        "network RMSE / NLPD",
        "ADGP start RMSE / NLPD",
        "ADGP RMSE / NLPD",
        "DGP RMSE / NLPD",
        "ADGP NLPD < network",
        "ADGP NLPD < DGP",
        "ADGP RMSE ≤ 1.05 × network",
        "criteria (majority of each)",
    ]
    methods = ("network", "adgp_start", "adgp", "dgp")
    counts = ("nlpd_beats_network", "nlpd_beats_dgp", "rmse_within_5pct_of_network")
    rows = [
        [
            *_summary_cells(label, row, methods, "median", counts),
            "**met**" if row["target_met"] else "**not met**",
        ]
        for label, row, _ in _adgp_rows(data)
    ]
    return table(header, rows)


def _summary_cells(
    label: str, row: dict, methods: tuple[str, ...], statistic: str, counts: tuple[str, ...]
) -> list[str]:
    """``[label, RMSE / NLPD of each method (its statistic over the splits), count/splits ...]``."""
    return [
        label,
        *(_rmse_nlpd(row[f"{m}_rmse_{statistic}"], row[f"{m}_nlpd_{statistic}"]) for m in methods),
        *(f"{row[f'adgp_{key}']}/{row['splits']}" for key in counts),
    ]


def adgp_choices_table(data: dict) -> str:
    """Per data set: what the validation data chose, the steps kept and the median seconds."""
    header = [
        "data set",
        "network: learning rate / weight decay chosen; epochs kept",
        "ADGP: hidden scale chosen; stage-2 objective chosen; steps kept",
        "DGP: steps kept (at the cap)",
        "seconds: network, ADGP, DGP (median)",
    ]
    rows = []
    for label, row, runs in _adgp_rows(data):
        decays = ", ".join(f"{r['network']['lr']:g}/{r['network']['weight_decay']:g}" for r in runs)
        epochs = ", ".join(str(r["network"]["best_epoch"]) for r in runs)
        scales = ", ".join(f"{r['adgp_start']['hidden_scale']:g}" for r in runs)
        objectives = ", ".join(r["adgp"]["objective"] for r in runs)
        steps = ", ".join(str(r["adgp"]["best_step"]) for r in runs)
        dgp = ", ".join(str(r["dgp"]["best_step"]) for r in runs)
        times = ", ".join(
            significant(row[f"{m}_seconds_median"], 2) for m in ("network", "adgp", "dgp")
        )
        rows.append(
            [
                label.split(" (")[0],
                f"{decays}; {epochs}",
                f"{scales}; {objectives}; {steps}",
                f"{dgp} ({row['dgp_capped']}/{row['splits']})",
                times,
            ]
        )
    return table(header, rows)


def _split_rows(data: dict, methods: tuple[str, ...]) -> list[list[str]]:
    """``[data set, split, RMSE / NLPD of each method]`` for every split (``—`` where missing)."""
    return [
        [label.split(" (")[0], str(r["split"])]
        + [_rmse_nlpd(r[m]["rmse"], r[m]["nlpd"]) if r.get(m) else "—" for m in methods]
        for label, _, runs in _adgp_rows(data)
        for r in runs
    ]


def adgp_splits_table(data: dict) -> str:
    """RMSE / NLPD of every method on every split."""
    header = ["data set", "split", "network RMSE / NLPD", "ADGP RMSE / NLPD", "DGP RMSE / NLPD"]
    return table(header, _split_rows(data, ("network", "adgp", "dgp")))


def adgp_paper_table(data: dict) -> str:
    """Mean RMSE / NLPD over the splits per method and data set (the report's statistic), and on
    how many splits the ADGP's NLPD is below each baseline's."""
    methods = ("network", "dropout", "adgp", "dgp")
    header = [
        "data set (n, D)",
        "network RMSE / NLPD",
        "MC dropout",
        "ADGP (all parameters)",
        "DGP",
        "ADGP NLPD < network",
        "< dropout",
        "< DGP",
        "ADGP RMSE < network",
    ]
    counts = ("nlpd_below_network", "nlpd_below_dropout", "nlpd_below_dgp", "rmse_below_network")
    rows = [
        _summary_cells(label, row, methods, "mean", counts) for label, row, _ in _adgp_rows(data)
    ]
    return table(header, rows)


def adgp_paper_splits_table(data: dict) -> str:
    """RMSE / NLPD of every method on every split, and the ADGP's chosen start and steps kept."""
    header = ["data set", "split", "network", "MC dropout", "ADGP", "DGP"]
    rows = _split_rows(data, ("network", "dropout", "adgp", "dgp"))
    runs = [r for _, _, mine in _adgp_rows(data) for r in mine]
    for cells, r in zip(rows, runs, strict=True):
        cells.append(f"{r['adgp']['hidden_scale']:g}; {r['adgp']['best_step']}")
    return table([*header, "ADGP hidden scale; steps kept"], rows)


def _classification_cell(record: dict) -> str:
    return f"{record['accuracy']:.3f} / {record['nlpd']:.4f} / {record['ece']:.3f}"


def adgp_classification_table(data: dict) -> str:
    """Medians of accuracy / NLPD / ECE per method and how often the ADGP beats its network."""
    header = [
        "data set (n, D)",
        "classes",
        "network accuracy / NLPD / ECE",
        "ADGP start",
        "ADGP",
        "ADGP NLPD < network",
        "ADGP ECE < network",
        "ADGP accuracy ≥ network",
    ]
    rows = []
    for label, row, runs in _adgp_rows(data, ADGP_CLASSIFICATION_DATASETS):
        medians = [
            {m: row[f"{method}_{m}_median"] for m in ("accuracy", "nlpd", "ece")}
            for method in ("network", "adgp_start", "adgp")
        ]
        splits = row["splits"]
        rows.append(
            [label, str(runs[0]["classes"])]
            + [_classification_cell(m) for m in medians]
            + [
                f"{row[f'adgp_{criterion}']}/{splits}"
                for criterion in ("nlpd_beats_network", "ece_beats_network")
            ]
            + [f"{row['adgp_accuracy_at_least_network']}/{splits}"]
        )
    return table(header, rows)


def adgp_classification_splits_table(data: dict) -> str:
    """Accuracy / NLPD / ECE of the network and the ADGP on every split, and what was chosen."""
    header = [
        "data set",
        "split",
        "network accuracy / NLPD / ECE",
        "ADGP accuracy / NLPD / ECE",
        "network learning rate / weight decay; epochs kept",
        "ADGP hidden scale; stage-2 objective; steps kept",
    ]
    rows = []
    for label, _, runs in _adgp_rows(data, ADGP_CLASSIFICATION_DATASETS):
        for r in runs:
            network, start, adgp = r["network"], r["adgp_start"], r["adgp"]
            rows.append(
                [
                    label.split(" (")[0],
                    str(r["split"]),
                    _classification_cell(network),
                    _classification_cell(adgp),
                    f"{network['lr']:g} / {network['weight_decay']:g}; {network['best_epoch']}",
                    f"{start['hidden_scale']:g}; {adgp['objective']}; {adgp['best_step']}",
                ]
            )
    return table(header, rows)


@dataclass(frozen=True)
class Table:
    """A generated table: the JSON files (in the figures folder) its renderer takes, in order.

    Attributes:
        inputs: file names; the renderer gets their contents as a list.
        render: ``render(datasets) -> Markdown``.
        page: the page (in ``docs/``) that holds the table.
    """

    inputs: tuple[str, ...]
    render: Callable[[list[dict]], str]
    page: str = "benchmarks.md"


KERNEL_FILES = tuple(f"kernel_speed_{name}.json" for name in CASES)
RUN_FILES = (
    *KERNEL_FILES,
    "bo_time.json",
    "product_speed.json",
    "regret_ackley.json",
    "regret_ackley-sphere3_qlognei.json",
    "regret_campaign.json",
    "regret_campaign_surrogates.json",
    "regret_geometry.json",
    "regret_mesh.json",
    "regret_graph.json",
)
CAMPAIGN = (
    "ackley-sphere5",
    "ackley-sphere2",
    "styblinski-tang-sphere2",
    "arm-torus3",
    "orientation-so3",
)
#: the problems of the geometry campaign with committed runs (5 + 25 evaluations, 20 seeds)
GEOMETRY = (
    "ackley-spd2",
    "rosenbrock-spd2",
    "styblinski-tang-spd2",
    "ackley-hyperbolic3",
    "rosenbrock-hyperbolic3",
    "styblinski-tang-hyperbolic3",
    "pose-se3",
    "orientation-so4",
)

TABLES: dict[str, Table] = {
    **{
        f"kernel_speed_{name}": Table((f"kernel_speed_{name}.json",), lambda d: kernel_table(d[0]))
        for name in CASES
    },
    "kernel_overview": Table(KERNEL_FILES, kernel_overview),
    "bo_time": Table(("bo_time.json",), lambda d: bo_table(d[0])),
    "product_speed": Table(("product_speed.json",), lambda d: product_speed_table(d[0])),
    "regret_ackley-sphere5": Table(
        ("regret_ackley.json",),
        partial(regret_table, problem="ackley-sphere5", checkpoints=(25, 50, 100)),
    ),
    "regret_ackley-sphere3": Table(
        ("regret_ackley-sphere3_qlognei.json", "regret_ackley.json"),
        partial(regret_table, problem="ackley-sphere3", checkpoints=(25, 50, 105)),
    ),
    **{
        f"regret_campaign_{problem}": Table(
            ("regret_campaign.json",),
            partial(regret_table, problem=problem, checkpoints=(25, 50, 100)),
        )
        for problem in CAMPAIGN
    },
    **{
        f"regret_campaign_surrogates_{problem}": Table(
            ("regret_campaign_surrogates.json",),
            partial(regret_table, problem=problem, checkpoints=(25, 50, 100)),
        )
        for problem in CAMPAIGN
    },
    **{
        f"regret_geometry_{problem}": Table(
            ("regret_geometry.json",),
            partial(regret_table, problem=problem, checkpoints=(10, 20, 30)),
        )
        for problem in GEOMETRY
    },
    **{
        f"regret_{name}": Table(
            (f"regret_{name}.json",),
            partial(regret_table, problem=f"bumps-{name}", checkpoints=(10, 25, 50)),
        )
        for name in ("mesh", "graph")
    },
    "vish_scale": Table(("vish_scale.json",), lambda d: vish_scale_table(d[0]), page="vish.md"),
    "vish_ratios": Table(("vish_scale.json",), lambda d: vish_ratio_table(d[0]), page="vish.md"),
    "vish_airline_splits": Table(
        ("vish_airline_splits.json",), lambda d: vish_splits_table(d[0]), page="vish.md"
    ),
    "runs": Table(RUN_FILES, lambda d: runs_table(d, list(RUN_FILES))),
    **{
        name: Table(("adgp_regression.json",), lambda d, render=render: render(d[0]), "adgp.md")
        for name, render in (
            ("adgp_regression", adgp_regression_table),
            ("adgp_regression_choices", adgp_choices_table),
            ("adgp_regression_splits", adgp_splits_table),
        )
    },
    **{
        name: Table(("adgp_classification.json",), lambda d, render=render: render(d[0]), "adgp.md")
        for name, render in (
            ("adgp_classification", adgp_classification_table),
            ("adgp_classification_splits", adgp_classification_splits_table),
        )
    },
    **{
        name: Table(("adgp_paper.json",), lambda d, render=render: render(d[0]), "adgp.md")
        for name, render in (
            ("adgp_paper", adgp_paper_table),
            ("adgp_paper_splits", adgp_paper_splits_table),
        )
    },
    "geometric_kernels": Table(KERNEL_FILES, geometric_kernels_table, page="comparison.md"),
    "examples": Table(("examples.json",), lambda d: examples_table(d[0]), page="examples.md"),
}
PAGES = tuple(dict.fromkeys(t.page for t in TABLES.values()))


# --------------------------------------------------------------------------------------------
# the page
# --------------------------------------------------------------------------------------------
def render_table(name: str, figures: Path) -> str:
    """The Markdown of table ``name`` from the JSON files in ``figures``."""
    datasets = [json.loads((figures / f).read_text(encoding="utf-8")) for f in TABLES[name].inputs]
    return TABLES[name].render(datasets)


def available_tables(figures: Path) -> list[str]:
    """The tables whose every input is in ``figures``."""
    return [n for n, t in TABLES.items() if all((figures / f).exists() for f in t.inputs)]


def update_page(
    text: str, figures: Path, names: list[str] | None = None, page: str = "benchmarks.md"
) -> str:
    """``text`` (of ``docs/<page>``) with the blocks of tables ``names`` regenerated.

    Args:
        text: the page.
        figures: the folder of the JSON files.
        names: the tables to regenerate (default: every table of the page); tables of other
            pages are ignored.
        page: the page's file name, which says which tables belong on it.

    Raises:
        ValueError: the page has a marker without a table, or lacks one of ``names``.
    """
    own = [n for n, t in TABLES.items() if t.page == page]
    names = own if names is None else [n for n in names if n in own]
    found = [m.group(1) for m in MARKERS.finditer(text)]
    unknown = sorted(set(found) - set(own))
    if unknown:
        raise ValueError(f"the page has markers for unknown tables: {', '.join(unknown)}")
    missing = sorted(set(names) - set(found))
    if missing:
        raise ValueError(
            f"the page has no <!-- BEGIN name --> ... <!-- END name --> block for: "
            f"{', '.join(missing)}"
        )

    def replace(match: re.Match) -> str:
        name = match.group(1)
        if name not in names:
            return match.group(0)
        return f"<!-- BEGIN {name} -->\n{render_table(name, figures)}<!-- END {name} -->"

    return MARKERS.sub(replace, text)


def update_pages(
    figures: Path, out: Path, names: list[str] | None = None, docs: Path = DOCS
) -> dict[str, bool]:
    """Regenerate the tables of every page of :data:`PAGES` in ``docs`` and write it in ``out``.

    Returns:
        page name → whether its text changed.
    """
    changed = {}
    for page in PAGES:
        text = (docs / page).read_text(encoding="utf-8")
        new = update_page(text, figures, names, page)
        changed[page] = new != text
        out.mkdir(parents=True, exist_ok=True)
        (out / page).write_text(new, encoding="utf-8")
    return changed


def main(argv: list[str] | None = None) -> int:
    """Rewrite the pages, or with ``--check`` report whether they are current."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--figures", type=Path, default=FIGURES, help="folder of the JSON files")
    parser.add_argument("--out", type=Path, help="write the pages into this folder, not docs/")
    parser.add_argument("--check", action="store_true", help="exit 1 when a page is stale")
    parser.add_argument(
        "--available-only",
        action="store_true",
        help="regenerate only the tables whose JSON files are all in --figures",
    )
    args = parser.parse_args(argv)
    names = available_tables(args.figures) if args.available_only else None
    if args.check:
        stale = []
        for page in PAGES:
            text = (DOCS / page).read_text(encoding="utf-8")
            if update_page(text, args.figures, names, page) != text:
                stale.append(page)
        print(f"stale: {', '.join(stale)}" if stale else "every page is current")
        return int(bool(stale))
    out = args.out or DOCS
    update_pages(args.figures, out, names)
    print(f"wrote {', '.join(str(out / page) for page in PAGES)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
