r"""Wall time and peak memory of the Matérn kernel matrix K(X, X) against N, on each space.

Spaces (``--space``, repeatable; default all): S², S⁵, the torus T³, SO(3), a mesh (the icosphere
with 2562 vertices) and a graph (8-nearest-neighbour graph on 2000 nodes); see
``benchmarks/_kernel_cases.py`` for the kernels, truncations and data. On every space, in the same
run and on the same seeded points:

* **manibo**: ``GeometricMaternKernel(space, nu=1.5, num_levels=L)``, lengthscale 1, float64.
* **naive torch** (where the level kernels have a closed form): the textbook ``[N, N, L]`` stack
  contracted with the weights, in plain torch; its memory grows like ``N² L``.
* **GeometricKernels 1.0.1** (torch backend), with ``--with-geometric-kernels``: installed into a
  separate virtualenv (``benchmarks/.venv-gk``, created on first use), with the same number of
  levels or eigenpairs.

Every case runs in a fresh subprocess (``--worker``), so that its peak memory (``ru_maxrss`` minus
the RSS before the work; ``torch.cuda.max_memory_allocated`` on CUDA) is not polluted by other
cases. The time is the median of the timed calls after one warm-up call (at least ``--repeats``
calls and ``--min-time`` seconds of them). The alternatives' matrices are compared with manibo's
on the CPU (maximum absolute difference). ``--device cuda`` (or ``auto`` where a GPU is present)
runs every case on the GPU as well and records the CPU/GPU time ratio. The machine's load average
is recorded at the start and end of the run and around every case.

Writes ``kernel_speed_<space>.json`` and ``kernel_speed_<space>.png`` per space to ``--out``
(``benchmarks/results/``); ``--summary DIR`` instead draws ``kernel_speed.png``, the time against N
on every space, from the JSON files in ``DIR``, and ``--replot`` redraws the figure of every JSON
in ``--out`` (after a change of the figures, without measuring again).

Usage::

    python benchmarks/kernel_speed.py --with-geometric-kernels               # every space, CPU
    python benchmarks/kernel_speed.py --space sphere2 --space so3 --device auto
    python benchmarks/kernel_speed.py --summary docs/figures --out docs/figures
    python benchmarks/kernel_speed.py --smoke --out /tmp/bench                # seconds; the tests
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import venv
from pathlib import Path

from _common import (
    GIB,
    WorkerCase,
    add_run_arguments,
    available_memory_bytes,
    device_ratio,
    environment,
    hardware_label,
    load_average,
    memory_note,
    package_versions,
    resolve_devices,
    run_case,
    run_title,
    serve_worker,
    write_json,
)
from _kernel_cases import (
    CASES,
    IMPLEMENTATIONS,
    LENGTHSCALE,
    NU,
    PACKAGES,
    KernelCase,
    gk_compute,
    manibo_compute,
)

HERE = Path(__file__).resolve().parent
SCRIPT = Path(__file__).resolve()
WORKER_TIMEOUT_S = 3600

GK_VENV = HERE / ".venv-gk"
GK_REQUIREMENTS = ("torch==2.13.0", "geometric-kernels==1.0.1", "numpy<2.4")

TARGET_N = 5000
TARGET_TIME_S = 5.0
TARGET_MEMORY_BYTES = 10**9
TARGET_CORES = 2
DEFAULT_MAX_MEMORY_GB = 6.0

MB = 10**6
KERNEL = f"Matérn ν={NU}, lengthscale {LENGTHSCALE}, float64"

#: marker, colour, and the factor on N that places the implementation's error bar in the plot
STYLES = {
    "manibo": ("o", "C0", 1.0),
    "naive_torch": ("s", "C1", 0.97),
    "geometric_kernels": ("^", "C3", 1.03),
}
#: prefix of an alternative's fields in the comparison rows
PREFIXES = {"naive_torch": "naive", "geometric_kernels": "gk"}


# --------------------------------------------------------------------------------------------
# worker: one implementation, one space, one N, one device, in a fresh process
# --------------------------------------------------------------------------------------------
def build_case(spec: dict) -> WorkerCase:
    """The work of one case: K(X, X) by ``spec["implementation"]`` on ``spec["points"]``.

    The warm-up call's matrix is saved to ``spec["save_matrix"]`` (when given) for comparison,
    and its diagonal is checked: exactly 1 on homogeneous spaces, 1 on average on meshes and graphs.
    """
    import numpy as np
    import torch

    case = CASES[spec["case"]]
    settings, implementation = spec["settings"], spec["implementation"]
    points = torch.from_numpy(np.load(spec["points"])).to(spec["device"])
    if implementation == "manibo":
        compute = manibo_compute(case, settings, points)
    elif implementation == "naive_torch":
        compute = case.naive(settings, points)
    else:
        compute = gk_compute(settings, points, case.geometric_kernels)

    def inspect(matrix) -> dict:
        if spec.get("save_matrix"):
            np.save(spec["save_matrix"], matrix.cpu().numpy())
        diagonal = matrix.diagonal()
        checks = {"diagonal_mean": float(diagonal.mean())}
        if case.homogeneous:
            checks["max_abs_diagonal_minus_one"] = float((diagonal - 1).abs().max())
        return checks

    info = {"n": points.shape[0], "implementation": implementation}
    return WorkerCase(compute, package_versions(PACKAGES[implementation]), inspect, info)


# --------------------------------------------------------------------------------------------
# driver
# --------------------------------------------------------------------------------------------
def gk_python(venv_dir: Path) -> tuple[Path | None, str]:
    """The Python of the GeometricKernels virtualenv, created and filled when needed.

    Returns:
        ``(python, status)``; ``python`` is None when GeometricKernels cannot be imported there, and
        ``status`` says why.
    """
    python = venv_dir / "bin" / "python"
    check = [str(python), "-c", "import geometric_kernels.torch"]
    if python.exists() and subprocess.run(check, capture_output=True).returncode == 0:
        return python, f"GeometricKernels 1.0.1, importable from {venv_dir.name}"
    print(
        f"Installing {' '.join(GK_REQUIREMENTS)} into {venv_dir} (about a minute) ...",
        flush=True,
    )
    try:
        if not python.exists():
            venv.create(venv_dir, with_pip=True)
        subprocess.run(
            [str(python), "-m", "pip", "install", "--quiet", *GK_REQUIREMENTS],
            check=True,
            capture_output=True,
            text=True,
        )
    except (OSError, subprocess.CalledProcessError) as error:
        detail = getattr(error, "stderr", "") or str(error)
        return None, f"installation into {venv_dir} failed: {detail.strip()[-500:]}"
    if subprocess.run(check, capture_output=True).returncode != 0:
        return (
            None,
            f"geometric_kernels.torch is not importable from {venv_dir} after installation",
        )
    return python, f"GeometricKernels 1.0.1, installed into {venv_dir.name}"


def memory_refusal(need: float, device: str, cap_bytes: float) -> str | None:
    """Why a dense evaluation needing ``need`` bytes is not run (None when it may run)."""
    free = available_memory_bytes(device)
    if need > cap_bytes:
        return f"needs ~{need / GIB:.1f} GiB, over the --max-memory-gb cap of {cap_bytes / GIB:.1f}"
    if free is not None and need > free:
        return f"needs ~{need / GIB:.1f} GiB but only {free / GIB:.1f} GiB is available"
    return None


def plan_implementations(
    case: KernelCase, settings: dict, n: int, device: str, gk: Path | None, args
) -> tuple[dict[str, str], list[dict]]:
    """Which implementations run at this N and device (name → Python), and which are skipped."""
    plan, skipped = {"manibo": sys.executable}, []
    limits = {"naive_torch": case.naive_max_n, "geometric_kernels": case.gk_max_n}
    pythons = {"naive_torch": sys.executable, "geometric_kernels": gk}
    available = {"naive_torch": case.naive is not None, "geometric_kernels": gk is not None}
    for name, python in pythons.items():
        if not available[name]:
            continue
        reason = None
        if n > limits[name]:
            reason = f"N > {limits[name]}, the largest N run for this implementation"
        else:
            need = 1.2 * case.dense_bytes(settings, n)
            reason = memory_refusal(need, device, args.max_memory_gb * GIB)
        if reason:
            skipped.append({"implementation": name, "n": n, "device": device, "reason": reason})
        else:
            plan[name] = str(python)
    return plan, skipped


def max_abs_difference(path_a: Path, path_b: Path) -> float:
    """Largest absolute difference between two saved matrices."""
    import numpy as np

    a = np.load(path_a, mmap_mode="r")
    b = np.load(path_b, mmap_mode="r")
    return float(np.max(np.abs(a - b)))


def worker_spec(case, settings, implementation, points, device, matrix, args) -> dict:
    """The JSON that tells a worker what to measure."""
    return {
        "case": case.name,
        "settings": settings,
        "implementation": implementation,
        "points": str(points),
        "device": device,
        "repeats": args.repeats,
        "min_time_s": args.min_time,
        "budget_s": args.case_budget,
        "threads": args.threads,
        "save_matrix": str(matrix) if matrix else None,
    }


def run_space(case: KernelCase, args, devices: list[str], gk: Path | None, tmp: Path) -> dict:
    """Every case of one space: returns results, comparisons, CPU/GPU ratios and skips."""
    import numpy as np

    settings = case.prepare(tmp, args.smoke)
    sizes = sorted(args.sizes or (case.smoke_sizes if args.smoke else case.sizes))
    results = {d: {name: [] for name in IMPLEMENTATIONS} for d in devices}
    comparisons = {d: [] for d in devices}
    skipped = []
    for n in sizes:
        points = tmp / f"{case.name}_{n}.npy"
        np.save(points, case.sample(n, args.seed, settings))
        plans = {}
        for device in devices:
            plans[device], skips = plan_implementations(case, settings, n, device, gk, args)
            skipped += skips
        compared = len(devices) > 1 or len(plans["cpu"]) > 1
        reference = tmp / f"{case.name}_{n}_manibo_cpu.npy"
        for device in devices:
            runs = {}
            for name, python in plans[device].items():
                is_reference = device == "cpu" and name == "manibo"
                matrix = reference if is_reference else tmp / f"{case.name}_{n}_{name}_{device}.npy"
                saved = matrix if compared else None
                spec = worker_spec(case, settings, name, points, device, saved, args)
                inline = args.inline and name != "geometric_kernels"
                run = run_case(SCRIPT, spec, build_case, tmp, python, inline, WORKER_TIMEOUT_S)
                run.setdefault("n", n)
                if compared and not is_reference:
                    if "error" not in run and reference.exists():
                        run["max_abs_diff_to_manibo"] = max_abs_difference(matrix, reference)
                    matrix.unlink(missing_ok=True)
                runs[name] = run
                results[device][name].append(run)
                print(
                    f"  {case.name:<8} N={n:>6} {device:<4} {name:<18} {describe(run)}",
                    flush=True,
                )
            comparisons[device].append(compare(n, runs))
        reference.unlink(missing_ok=True)
        points.unlink()
    settings = {k: v for k, v in settings.items() if not k.endswith("_file")}
    return {
        "settings": settings,
        "sizes": sizes,
        "results": results,
        "comparisons": comparisons,
        "device_ratios": device_ratios(results),
        "skipped": skipped,
    }


def describe(run: dict) -> str:
    """One progress line for a finished case."""
    if "error" in run:
        return f"FAILED: {run['error']}"
    text = f"{run['time_s']:9.4f} s  {run['peak_memory_bytes'] / MB:9.1f} MB"
    if "max_abs_diff_to_manibo" in run:
        text += f"  max |K - K_manibo| = {run['max_abs_diff_to_manibo']:.2e}"
    return text


def ratio(numerator: dict | None, denominator: dict, key: str) -> float | None:
    """``numerator[key] / denominator[key]``, or None when either side is missing or failed."""
    if not numerator or "error" in numerator or "error" in denominator or not denominator.get(key):
        return None
    return numerator[key] / denominator[key]


def compare(n: int, runs: dict) -> dict:
    """Ratios of the alternatives to manibo at one N and device (None where not measured)."""
    base = runs.get("manibo", {"error": "not run"})
    row = {"n": n}
    for name, prefix in PREFIXES.items():
        other = runs.get(name)
        row[f"{prefix}_over_manibo_time"] = ratio(other, base, "time_s")
        row[f"{prefix}_over_manibo_time_min"] = ratio(other, base, "time_min_s")
        row[f"{prefix}_over_manibo_memory"] = ratio(other, base, "peak_memory_bytes")
        row[f"{prefix}_max_abs_diff"] = (other or {}).get("max_abs_diff_to_manibo")
    return row


def device_ratios(results: dict) -> list[dict]:
    """CPU time / GPU time per implementation and N (empty when only the CPU ran)."""
    rows = []
    for device in (d for d in results if d != "cpu"):
        for name in IMPLEMENTATIONS:
            cpu_runs = {r["n"]: r for r in results["cpu"][name]}
            for run in results[device][name]:
                rows.append(
                    {
                        "implementation": name,
                        "device": device,
                        "n": run["n"],
                        "cpu_over_device_time": device_ratio(cpu_runs.get(run["n"]), run),
                    }
                )
    return rows


def check_targets(manibo_runs: list, env: dict) -> dict:
    """Pass/fail of the targets at N = 5000 (``pass`` is None when N = 5000 was not measured)."""
    run = next((r for r in manibo_runs if r["n"] == TARGET_N and "error" not in r), None)
    measured_time = run["time_s"] if run else None
    measured_memory = run["peak_memory_bytes"] if run else None
    conditions = {"cpu_cores": env["cpu_cores"], "torch_threads": env["torch_threads"]}
    note = f"the targets are stated for {TARGET_CORES} CPU cores"
    return {
        "time": {
            "n": TARGET_N,
            "limit_s": TARGET_TIME_S,
            "measured_s": measured_time,
            "pass": None if run is None else measured_time < TARGET_TIME_S,
            **conditions,
            "note": note,
        },
        "memory": {
            "n": TARGET_N,
            "limit_bytes": TARGET_MEMORY_BYTES,
            "measured_bytes": measured_memory,
            "pass": None if run is None else measured_memory < TARGET_MEMORY_BYTES,
            **conditions,
            "note": note,
        },
    }


# --------------------------------------------------------------------------------------------
# figures
# --------------------------------------------------------------------------------------------
def _log_axes(ax, sizes: list[int], ylabel: str) -> None:
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    plain = FuncFormatter(lambda value, _: f"{value:g}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ticks = [max(sizes)]  # from the largest down, skipping sizes whose labels would touch
    for size in sorted(sizes, reverse=True)[1:]:
        if ticks[-1] / size >= 1.5:
            ticks.append(size)
    ax.set_xticks(ticks)
    ax.xaxis.set_major_formatter(plain)
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1, 2, 5)))
    ax.yaxis.set_major_formatter(plain)
    ax.set_xlim(min(sizes) / 1.25, max(sizes) * 1.35)
    ax.set_xlabel("number of points N")
    ax.set_ylabel(ylabel)
    ax.grid(True, which="both", alpha=0.3)


def draw_space(data: dict, ax_time, ax_memory=None, annotate: bool = True) -> None:
    """Time (and memory) against N of every implementation and device of one space's JSON.

    CPU lines are solid (wall time) and dotted (CPU time of the process), GPU lines dashed with
    open markers; each alternative's points carry its ratio to manibo on the same device when
    ``annotate``.
    """
    panels = [(ax_time, "time_s", 1, "time")]
    if ax_memory is not None:
        panels.append((ax_memory, "peak_memory_bytes", MB, "memory"))
    for device, by_name in data["results"].items():
        ratios = {row["n"]: row for row in data["comparisons"][device]}
        dashed = device != "cpu"
        for name, label in IMPLEMENTATIONS.items():
            runs = [r for r in by_name[name] if "error" not in r]
            if not runs:
                continue
            marker, color, nudge = STYLES[name]
            n = [r["n"] for r in runs]
            spread = [
                [r["time_s"] - r["time_min_s"] for r in runs],
                [max(r["times_s"]) - r["time_s"] for r in runs],
            ]
            ax_time.errorbar(
                [x * nudge for x in n],  # nudged sideways so that the bars do not overlap
                [r["time_s"] for r in runs],
                yerr=spread,
                fmt="none",
                ecolor=color,
                alpha=0.4,
                capsize=3,
            )
            style = {
                "marker": marker,
                "color": color,
                "linestyle": "--" if dashed else "-",
                "markerfacecolor": "none" if dashed else color,
                "label": f"{label}, {device.upper() if dashed else 'CPU'}",
            }
            if not dashed:  # the CPU time of the process: what the load of other jobs leaves out
                cpu_time = [max(r["cpu_time_s"], 1e-6) for r in runs]
                ax_time.plot(n, cpu_time, color=color, linestyle=":", linewidth=1)
            for ax, key, unit, ratio_key in panels:
                values = [max(r[key] / unit, 1e-6) for r in runs]  # > 0 for the log scale
                ax.plot(n, values, **style)
                prefix = PREFIXES.get(name)
                if not (annotate and prefix):
                    continue
                for run, value in zip(runs, values, strict=True):
                    factor = ratios[run["n"]][f"{prefix}_over_manibo_{ratio_key}"]
                    if factor:
                        ax.annotate(
                            f"×{factor:.1f}",
                            (run["n"], value),
                            textcoords="offset points",
                            xytext=(8, 2 if prefix == "gk" else -11),
                            fontsize=8,
                            color=color,
                        )
    sizes = data["config"]["sizes"]
    _log_axes(ax_time, sizes, "time of one K(X, X) [s], median")
    if ax_memory is not None:
        _log_axes(ax_memory, sizes, "peak memory added by K(X, X) [MB]")


def draw_device_ratios(data: dict, ax) -> None:
    """CPU time / GPU time against N, one line per implementation."""
    for name, label in IMPLEMENTATIONS.items():
        rows = [
            r
            for r in data["device_ratios"]
            if r["implementation"] == name and r["cpu_over_device_time"]
        ]
        if rows:
            marker, color, _ = STYLES[name]
            ax.plot(
                [r["n"] for r in rows],
                [r["cpu_over_device_time"] for r in rows],
                marker=marker,
                color=color,
                label=label,
            )
    _log_axes(ax, data["config"]["sizes"], "CPU time / GPU time")
    ax.set_title("speed-up of the GPU over the CPU")


def run_label(data: dict) -> str:
    """Hardware, versions and load of a run, for figure titles."""
    config = data["config"]
    return run_title(
        data["environment"],
        config["devices"],
        data["load_average_start_end"],
        config["smoke"],
    )


def plot_space(data: dict, path: Path) -> None:
    """The figure of one space: time and memory against N (and the CPU/GPU ratio with a GPU)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with_gpu = any(r["cpu_over_device_time"] for r in data["device_ratios"])
    columns = 3 if with_gpu else 2
    fig, axes = plt.subplots(1, columns, figsize=(6 * columns, 5.4), layout="constrained")
    draw_space(data, axes[0], axes[1])
    axes[0].set_title("wall time, median; bars: min to max; dotted: CPU time (×: alt. / manibo)")
    axes[1].set_title("peak memory (×: alternative / manibo)")
    if with_gpu:
        draw_device_ratios(data, axes[2])
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(
        handles,
        labels,
        loc="outside lower center",
        ncol=min(len(labels), 3),
        frameon=False,
    )
    config = data["config"]
    fig.suptitle(
        f"{data['description']}: {config['kernel']}, {config['truncation']}\n{run_label(data)}"
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_summary(datasets: list[dict], path: Path) -> None:
    """Time against N on every space, one panel per space (the overview figure)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    columns = min(3, len(datasets))
    rows = -(-len(datasets) // columns)
    fig, axes = plt.subplots(
        rows,
        columns,
        figsize=(5.2 * columns, 4.4 * rows),
        layout="constrained",
        squeeze=False,
    )
    first = datasets[0]
    for ax, data in zip(axes.flat, datasets, strict=False):
        draw_space(data, ax, annotate=False)
        start, end = data["load_average_start_end"]
        load = f"\nload average {start[0]:g} → {end[0]:g}" if start and end else ""
        ax.set_title(f"{data['label']}: {data['config']['truncation']}{load}", fontsize=10)
    for ax in list(axes.flat)[len(datasets) :]:
        ax.set_visible(False)
    handles, labels = {}, {}
    for ax in axes.flat:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            handles.setdefault(label, handle)
    labels = list(handles)
    fig.legend(
        [handles[k] for k in labels],
        labels,
        loc="outside lower center",
        ncol=3,
        frameon=False,
    )
    fig.suptitle(
        f"Time of the Matérn kernel matrix K(X, X) ({KERNEL}), median of the timed calls\n"
        f"{run_title(first['environment'], first['config']['devices'], (None, None), False)}; "
        "each panel: its own run and load average (1 min) at its start → end"
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def truncation(case: KernelCase, settings: dict) -> str:
    """The shared truncation in words, e.g. ``25 levels`` or ``10 levels = 35 tuples``."""
    text = f"{settings['num_levels']} levels"
    if "tuples" in settings:
        text += f" = {settings['tuples']} tuples"
    if "num_eigenpairs" in settings:
        text += f" = {settings['num_eigenpairs']} eigenpairs of {settings['num_points']}"
    if "representations" in settings:
        text += f" = {settings['representations']} representations"
    return text


# --------------------------------------------------------------------------------------------
# command line
# --------------------------------------------------------------------------------------------
def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Command-line options (``--worker`` and ``--result`` are internal)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--space",
        action="append",
        choices=tuple(CASES),
        help="a space (repeatable; default all)",
    )
    add_run_arguments(parser, HERE / "results", repeats=5)
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="tiny N and spaces, one repeat, --inline by default",
    )
    parser.add_argument(
        "--sizes", type=int, nargs="+", help="numbers of points (default per space)"
    )
    parser.add_argument(
        "--min-time",
        type=float,
        default=3.0,
        help="least total seconds of timed calls per case",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--with-geometric-kernels",
        action="store_true",
        help=f"also run GeometricKernels, installing it into {GK_VENV} when needed",
    )
    parser.add_argument(
        "--gk-venv", type=Path, default=GK_VENV, help="virtualenv for GeometricKernels"
    )
    parser.add_argument(
        "--max-memory-gb",
        type=float,
        default=DEFAULT_MAX_MEMORY_GB,
        help="skip dense [N, N, L] evaluations whose estimated memory is above this",
    )
    parser.add_argument(
        "--summary", type=Path, help="draw kernel_speed.png from the JSON files in this folder"
    )
    parser.add_argument(
        "--replot",
        action="store_true",
        help="only redraw the figure of every kernel_speed_<space>.json in --out",
    )
    args = parser.parse_args(argv)
    if args.smoke:
        args.repeats, args.min_time = 1, 0.0
    if args.inline is None:
        args.inline = args.smoke
    return args


def space_records(folder: Path) -> list[tuple[Path, dict]]:
    """Every ``kernel_speed_<space>.json`` in ``folder`` with its contents, in the spaces' order."""
    order = list(CASES)
    paths = sorted(
        folder.glob("kernel_speed_*.json"),
        key=lambda p: order.index(p.stem[13:]) if p.stem[13:] in order else len(order),
    )
    if not paths:
        raise SystemExit(f"no kernel_speed_<space>.json in {folder}.")
    return [(p, json.loads(p.read_text(encoding="utf-8"))) for p in paths]


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark (with ``--worker``, one case of it; with ``--summary``, the overview)."""
    args = parse_args(argv)
    if args.worker:
        serve_worker(args.worker, args.result, build_case)
        return 0
    if args.summary:
        plot_summary(
            [data for _, data in space_records(args.summary)], args.out / "kernel_speed.png"
        )
        print(f"wrote {args.out / 'kernel_speed.png'}")
        return 0
    if args.replot:
        for path, data in space_records(args.out):
            plot_space(data, path.with_suffix(".png"))
            print(f"wrote {path.with_suffix('.png')}")
        return 0
    import torch

    devices = resolve_devices(args.device)
    if args.threads:
        torch.set_num_threads(args.threads)  # the environment record then shows the workers' count
    gk, gk_status = None, "not requested (pass --with-geometric-kernels)"
    if args.smoke:
        gk_status = "skipped in --smoke runs"
    elif args.with_geometric_kernels:
        gk, gk_status = gk_python(args.gk_venv)
    env = environment(devices[-1])
    print(
        f"kernel_speed on {', '.join(devices)}; {hardware_label(env, 'cpu')}",
        flush=True,
    )
    print(f"GeometricKernels: {gk_status}", flush=True)
    for name in args.space or list(CASES):
        case = CASES[name]
        load_start = load_average()
        with tempfile.TemporaryDirectory(prefix=f"kernel_speed_{name}_") as tmp:
            measured = run_space(case, args, devices, gk, Path(tmp))
        settings = measured["settings"]
        data = {
            "benchmark": "kernel_speed",
            "space": name,
            "label": case.label,
            "description": f"Time and peak memory of the kernel matrix K(X, X) on {case.label}",
            "config": {
                "kernel": KERNEL,
                "truncation": truncation(case, settings),
                "settings": settings,
                "note": case.note,
                "call": "kernel.forward(X, X) under torch.no_grad() (GeometricKernels: kernel.K)",
                "dtype": "float64",
                "devices": devices,
                "sizes": measured["sizes"],
                "repeats": args.repeats,
                "min_time_s": args.min_time,
                "case_budget_s": args.case_budget,
                "warmup_calls": 1,
                "seed": args.seed,
                "threads": args.threads,
                "smoke": args.smoke,
                "naive_max_n": case.naive_max_n if case.naive else None,
                "gk_max_n": case.gk_max_n if gk and case.geometric_kernels else None,
                "max_memory_gb": args.max_memory_gb,
                "time": "median (and min) wall time of the timed calls after one warm-up call; at "
                "least `repeats` calls and `min_time_s` seconds of them, fewer when one call takes "
                "more than `case_budget_s` / `repeats`; cpu_time_s: median CPU time of the process",
                "inline": args.inline,
                "memory": memory_note(args.inline),
            },
            "environment": env,
            "alternatives": {
                "naive_torch": (
                    "plain torch: stack the [N, N, L] level terms, contract with the weights"
                    if case.naive
                    else f"not applicable: {case.no_naive}"
                ),
                "geometric_kernels": gk_status,
            },
            **{k: measured[k] for k in ("results", "comparisons", "device_ratios", "skipped")},
            "load_average_start_end": [load_start, load_average()],
            "targets": check_targets(measured["results"]["cpu"]["manibo"], env),
        }
        json_path = args.out / f"kernel_speed_{name}.json"
        write_json(json_path, data)
        plot_space(data, args.out / f"kernel_speed_{name}.png")
        print(f"wrote {json_path} and its figure", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
