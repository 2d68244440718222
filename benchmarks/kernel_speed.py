r"""Wall time and peak memory of the Matérn kernel matrix K(X, X) on S², against alternatives.

The kernel is ``GeometricMaternKernel(Sphere(2), nu=1.5, num_levels=25)`` in float64 with
lengthscale 1, evaluated on N uniform random points, N = 1000, 2000, 5000. In the same run, on the
same points:

* **naive torch**: the textbook evaluation, written here in plain torch. It builds the ``[N, N, L]``
  tensor of per-level Legendre terms and contracts it with the level weights (as GeometricKernels
  does), so its memory grows like ``N² L``; it runs up to ``--naive-max-n``.
* **GeometricKernels 1.0.1** (torch backend), with ``--with-geometric-kernels``. It is installed
  into a separate virtualenv (``benchmarks/.venv-gk``, created on first use) and runs up to
  ``--gk-max-n``.

Every case runs in a fresh subprocess (``--worker``), so that its peak memory (``ru_maxrss`` minus
the RSS before the work; ``torch.cuda.max_memory_allocated`` on CUDA) is not polluted by other
cases. The time is the median of the timed calls after one warm-up call (at least ``--repeats``
calls and ``--min-time`` seconds of them; the minimum and every call are recorded too). Two-thread
timings on a busy machine are noisy: the JSON and the figure record the load average, and
``--threads 1`` gives steadier numbers. The alternatives' matrices are compared with manibo's
(maximum absolute difference), and the targets (N = 5000 in under 5 s and 1 GB on 2 CPU cores)
are checked.

Writes ``kernel_speed.json`` and ``kernel_speed.png`` to ``--out`` (``benchmarks/results/``).

Usage::

    python benchmarks/kernel_speed.py                              # manibo + naive torch, CPU
    python benchmarks/kernel_speed.py --with-geometric-kernels     # + GeometricKernels, N <= 2000
    python benchmarks/kernel_speed.py --with-geometric-kernels --gk-max-n 5000   # ~11 GB for GK
    python benchmarks/kernel_speed.py --device cuda
    python benchmarks/kernel_speed.py --smoke --out /tmp/bench     # seconds; used by the tests
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
import venv
from pathlib import Path

from _common import (
    GIB,
    PeakMemory,
    available_memory_bytes,
    environment,
    hardware_label,
    load_average,
    package_versions,
    run_worker,
    summarise_times,
    synchronize,
    time_calls,
    write_json,
)

HERE = Path(__file__).resolve().parent

NU = 1.5
NUM_LEVELS = 25
LENGTHSCALE = 1.0
KERNEL = (
    f"GeometricMaternKernel(Sphere(2), nu={NU}, num_levels={NUM_LEVELS}), lengthscale {LENGTHSCALE}"
)

SIZES = (1000, 2000, 5000)
SMOKE_SIZES = (50, 100)
GK_MAX_N = 2000
NAIVE_MAX_N = 2000
WORKER_TIMEOUT_S = 3600

GK_VENV = HERE / ".venv-gk"
GK_REQUIREMENTS = ("torch==2.13.0", "geometric-kernels==1.0.1", "numpy<2.4")

TARGET_N = 5000
TARGET_TIME_S = 5.0
TARGET_MEMORY_BYTES = 10**9
TARGET_CORES = 2

MB = 10**6

IMPLEMENTATIONS = {
    "manibo": "manibo (streaming recurrence)",
    "naive_torch": "naive torch ([N, N, L] tensor)",
    "geometric_kernels": "GeometricKernels 1.0.1 (torch)",
}
#: marker, colour, and the factor on N that places the implementation's error bar in the plot
STYLES = {
    "manibo": ("o", "C0", 1.0),
    "naive_torch": ("s", "C1", 0.97),
    "geometric_kernels": ("^", "C3", 1.03),
}


# --------------------------------------------------------------------------------------------
# workers: one case per process. Each builder takes the points, shape (N, 3), and returns
# (compute, versions): compute() evaluates the (N, N) matrix K(X, X); versions: packages used.
# --------------------------------------------------------------------------------------------
def _manibo_kernel(points):
    """K(X, X) with manibo's ``GeometricMaternKernel``."""
    import torch

    from manibo.kernels.spectral import GeometricMaternKernel
    from manibo.spaces.sphere import Sphere

    kernel = GeometricMaternKernel(Sphere(2), nu=NU, num_levels=NUM_LEVELS)
    kernel.to(device=points.device, dtype=torch.float64)
    kernel.lengthscale = LENGTHSCALE

    def compute():
        with torch.no_grad():
            return kernel.forward(points, points)

    return compute, package_versions(("manibo", "torch", "gpytorch"))


def _naive_kernel(points):
    r"""K(X, X) the textbook way, in plain torch.

    The Legendre polynomials :math:`P_l(x \cdot y)` of all levels are stacked into an
    ``[N, N, L]`` tensor and contracted with :math:`w_l (2l+1)`, where the weights
    :math:`w_l \propto (2\nu/\ell^2 + l(l+1))^{-\nu-1}` are normalised so that :math:`k(x, x) = 1`.
    """
    import torch

    degree = torch.arange(NUM_LEVELS, dtype=points.dtype, device=points.device)
    multiplicity = 2 * degree + 1
    spectrum = (2 * NU / LENGTHSCALE**2 + degree * (degree + 1)) ** (-NU - 1)  # d/2 = 1 on S²
    coefficients = multiplicity * spectrum / (multiplicity * spectrum).sum()

    def compute():
        with torch.no_grad():
            t = points @ points.T
            legendre = [torch.ones_like(t), t]
            for n in range(2, NUM_LEVELS):
                legendre.append(((2 * n - 1) * t * legendre[-1] - (n - 1) * legendre[-2]) / n)
            per_level = torch.stack(legendre, dim=-1)  # [N, N, L]
            return torch.einsum("ijl,l->ij", per_level, coefficients)

    return compute, package_versions(("torch",))


def _geometric_kernels_kernel(points):
    """K(X, X) with GeometricKernels' ``MaternGeometricKernel`` (torch backend)."""
    import geometric_kernels.torch  # noqa: F401  (registers the torch backend)
    import lab
    import torch
    from geometric_kernels.kernels import MaternGeometricKernel
    from geometric_kernels.spaces import Hypersphere

    kernel = MaternGeometricKernel(Hypersphere(dim=2), num=NUM_LEVELS)
    params = {
        "nu": torch.tensor([NU], dtype=points.dtype, device=points.device),
        "lengthscale": torch.tensor([LENGTHSCALE], dtype=points.dtype, device=points.device),
    }

    def compute():
        with torch.no_grad(), lab.on_device(points.device):
            return kernel.K(params, points, points)

    return compute, package_versions(("geometric-kernels", "torch", "numpy"))


WORKERS = {
    "manibo": _manibo_kernel,
    "naive_torch": _naive_kernel,
    "geometric_kernels": _geometric_kernels_kernel,
}


def run_case(args: argparse.Namespace) -> None:
    """Worker: time one implementation at one N and write the result JSON to ``args.result``.

    Memory is probed twice: around the warm-up call (which also pays one-time costs such as thread
    pools) and around the timed calls; ``peak_memory_bytes`` is the larger of the two.
    """
    import numpy as np
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    load_before = load_average()
    points = torch.from_numpy(np.load(args.points)).to(args.device)
    compute, versions = WORKERS[args.worker](points)
    probe = PeakMemory(args.device)
    start = time.perf_counter()
    matrix = compute()  # the warm-up call; its matrix is the one compared across implementations
    synchronize(args.device)
    first_call_s = time.perf_counter() - start
    first_call = probe.stop()
    if args.save_matrix:
        np.save(args.save_matrix, matrix.cpu().numpy())
    diagonal_error = float((matrix.diagonal() - 1).abs().max())
    del matrix
    probe = PeakMemory(args.device)
    times = time_calls(compute, args.repeats, args.device, min_time_s=args.min_time)
    repeats = probe.stop()
    result = {
        "n": points.shape[0],
        **summarise_times(times),
        "first_call_s": first_call_s,
        "peak_memory_bytes": max(first_call["peak_memory_bytes"], repeats["peak_memory_bytes"]),
        "first_call_peak_memory_bytes": first_call["peak_memory_bytes"],
        "repeat_peak_memory_bytes": repeats["peak_memory_bytes"],
        "baseline_bytes": first_call["baseline_bytes"],
        "memory_measure": first_call["memory_measure"],
        "max_abs_diagonal_minus_one": diagonal_error,
        "torch_threads": torch.get_num_threads(),
        "load_average_before_after": [load_before, load_average()],
        "versions": versions,
    }
    write_json(Path(args.result), result)


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
        return python, f"importable from {venv_dir}"
    print(
        f"Installing {' '.join(GK_REQUIREMENTS)} into {venv_dir} (about a minute) ...", flush=True
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
        return None, f"geometric_kernels.torch is not importable from {venv_dir} after installation"
    return python, f"installed into {venv_dir}"


def dense_memory_estimate(n: int) -> int:
    """Bytes that an ``[N, N, L]`` evaluation needs: per-level matrices and their stacked copy."""
    return 2 * n * n * NUM_LEVELS * 8


def fits_in_memory(n: int, device: str) -> tuple[bool, str]:
    """Whether a dense ``[N, N, L]`` evaluation fits into the memory available now, and why not."""
    need = dense_memory_estimate(n) * 1.2
    free = available_memory_bytes(device)
    if free is not None and need > free:
        return False, f"needs ~{need / GIB:.1f} GiB but only {free / GIB:.1f} GiB is available"
    return True, ""


def max_abs_difference(path_a: Path, path_b: Path) -> float:
    """Largest absolute difference between two saved matrices."""
    import numpy as np

    a = np.load(path_a, mmap_mode="r")
    b = np.load(path_b, mmap_mode="r")
    return float(np.max(np.abs(a - b)))


def save_points(n: int, seed: int, path: Path) -> None:
    """Save N uniform points on S² (float64, seeded) to ``path`` as ``.npy``."""
    import numpy as np
    import torch

    from manibo.spaces.sphere import Sphere

    generator = torch.Generator().manual_seed(seed)
    np.save(path, Sphere(2).random(n, generator=generator, dtype=torch.float64).numpy())


def worker_command(
    python: Path, name: str, points: Path, result: Path, matrix: Path | None, args
) -> list[str]:
    """Command line that runs implementation ``name`` on ``points`` in a fresh process."""
    command = [str(python), str(Path(__file__).resolve()), "--worker", name]
    command += ["--points", str(points), "--result", str(result)]
    command += ["--repeats", str(args.repeats), "--min-time", str(args.min_time)]
    command += ["--device", args.device]
    if args.threads:
        command += ["--threads", str(args.threads)]
    if matrix is not None:
        command += ["--save-matrix", str(matrix)]
    return command


def ratio(numerator: dict | None, denominator: dict, key: str) -> float | None:
    """``numerator[key] / denominator[key]``, or None when either side is missing or failed."""
    if not numerator or "error" in numerator or "error" in denominator or not denominator.get(key):
        return None
    return numerator[key] / denominator[key]


def benchmark(args: argparse.Namespace, gk: Path | None) -> tuple[dict, list, list]:
    """Run every case.

    Returns:
        The results per implementation, the comparisons per N, and the cases skipped (with reasons).
    """
    results = {name: [] for name in IMPLEMENTATIONS}
    comparisons, skipped = [], []
    with tempfile.TemporaryDirectory(prefix="kernel_speed_") as tmp:
        tmp = Path(tmp)
        for n in args.sizes:
            points = tmp / f"points_{n}.npy"
            save_points(n, args.seed, points)
            plan = {"manibo": Path(sys.executable)}
            if n <= args.naive_max_n:
                plan["naive_torch"] = Path(sys.executable)
            else:
                skipped.append(
                    {"implementation": "naive_torch", "n": n, "reason": "N > --naive-max-n"}
                )
            if gk is not None and n <= args.gk_max_n:
                plan["geometric_kernels"] = gk
            elif gk is not None:
                skipped.append(
                    {"implementation": "geometric_kernels", "n": n, "reason": "N > --gk-max-n"}
                )
            compared = len(plan) > 1
            reference = tmp / f"manibo_{n}.npy"
            runs = {}
            for name, python in plan.items():
                if name != "manibo":
                    fits, why = fits_in_memory(n, args.device)
                    if not fits:
                        skipped.append({"implementation": name, "n": n, "reason": why})
                        print(f"  N={n:>5}  {name:<18} skipped: {why}", flush=True)
                        continue
                matrix = tmp / f"{name}_{n}.npy" if compared else None
                result_path = tmp / f"{name}_{n}.json"
                command = worker_command(python, name, points, result_path, matrix, args)
                run = run_worker(command, result_path, WORKER_TIMEOUT_S)
                run.setdefault("n", n)
                if name != "manibo" and matrix is not None:
                    if "error" not in run and reference.exists():
                        run["max_abs_diff_to_manibo"] = max_abs_difference(matrix, reference)
                    matrix.unlink(missing_ok=True)
                runs[name] = run
                results[name].append(run)
                print(f"  N={n:>5}  {name:<18} {describe(run)}", flush=True)
            comparisons.append(compare(n, runs))
            reference.unlink(missing_ok=True)
    return results, comparisons, skipped


def describe(run: dict) -> str:
    """One progress line for a finished case."""
    if "error" in run:
        return f"FAILED: {run['error']}"
    text = f"{run['time_s']:8.3f} s   {run['peak_memory_bytes'] / MB:9.1f} MB"
    if "max_abs_diff_to_manibo" in run:
        text += f"   max |K - K_manibo| = {run['max_abs_diff_to_manibo']:.2e}"
    return text


def compare(n: int, runs: dict) -> dict:
    """Ratios of the alternatives to manibo at one N (None where not measured)."""
    base = runs["manibo"]
    row = {"n": n}
    for name, prefix in (("geometric_kernels", "gk"), ("naive_torch", "naive")):
        other = runs.get(name)
        row[f"{prefix}_over_manibo_time"] = ratio(other, base, "time_s")
        row[f"{prefix}_over_manibo_time_min"] = ratio(other, base, "time_min_s")
        row[f"{prefix}_over_manibo_memory"] = ratio(other, base, "peak_memory_bytes")
        row[f"{prefix}_max_abs_diff"] = (other or {}).get("max_abs_diff_to_manibo")
    return row


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


def plot(data: dict, path: Path) -> None:
    """Time and peak memory against N, log-log, one line per implementation.

    Each alternative's points are labelled with its ratio to manibo at the same N.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    fig, (ax_time, ax_memory) = plt.subplots(1, 2, figsize=(12, 5.2), layout="constrained")
    panels = ((ax_time, "time_s", 1, "time"), (ax_memory, "peak_memory_bytes", MB, "memory"))
    ratios = {row["n"]: row for row in data["comparisons"]}
    for name, label in IMPLEMENTATIONS.items():
        runs = [r for r in data["results"][name] if "error" not in r]
        if not runs:
            continue
        marker, color, nudge = STYLES[name]
        prefix = {"naive_torch": "naive", "geometric_kernels": "gk"}.get(name)
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
        for ax, key, unit, ratio_key in panels:
            values = [max(r[key] / unit, 1e-6) for r in runs]  # > 0 for the log scale
            ax.plot(n, values, marker=marker, color=color, label=label)
            for run, value in zip(runs, values, strict=True):
                factor = prefix and ratios[run["n"]][f"{prefix}_over_manibo_{ratio_key}"]
                if factor:
                    ax.annotate(
                        f"×{factor:.1f}",
                        (run["n"], value),
                        textcoords="offset points",
                        xytext=(8, 2 if prefix == "gk" else -11),
                        fontsize=9,
                        color=color,
                    )
    target = {"color": "grey", "linestyle": ":", "linewidth": 1}
    ax_time.axhline(TARGET_TIME_S, label=f"target at N={TARGET_N}: 5 s, 1 GB", **target)
    ax_memory.axhline(TARGET_MEMORY_BYTES / MB, **target)
    sizes = data["config"]["sizes"]
    plain = FuncFormatter(lambda value, _: f"{value:g}")
    for ax, ylabel in (
        (ax_time, "wall time of one K(X, X) [s], median"),
        (ax_memory, "peak memory added by K(X, X) [MB]"),
    ):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xticks(sizes)
        ax.xaxis.set_major_formatter(plain)
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1, 2, 5)))
        ax.yaxis.set_major_formatter(plain)
        ax.set_xlim(min(sizes) / 1.25, max(sizes) * 1.35)
        ax.set_xlabel("number of points N")
        ax.set_ylabel(ylabel)
        ax.grid(True, which="both", alpha=0.3)
    ax_time.set_title("wall time, median; bars: min to max (×: alternative / manibo)")
    ax_memory.set_title("peak memory (×: alternative / manibo)")
    handles, labels = ax_time.get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=len(labels), frameon=False)
    env, device = data["environment"], data["config"]["device"]
    smoke = " (smoke run)" if data["config"]["smoke"] else ""
    load = env["load_average_1_5_15_min"]
    load = f"; load average at start {load[0]:g}" if load else ""
    fig.suptitle(
        f"Matérn ν={NU} kernel matrix K(X, X) on S², {NUM_LEVELS} levels, float64, "
        f"{device}{smoke}\n"
        f"{hardware_label(env, device)}; manibo {env['versions']['manibo']}, "
        f"torch {env['versions']['torch']}{load}"
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Command-line options (the ``--worker`` family is internal)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument(
        "--smoke", action="store_true", help="tiny N, one repeat, no GeometricKernels"
    )
    parser.add_argument("--out", type=Path, default=HERE / "results", help="output directory")
    parser.add_argument("--sizes", type=int, nargs="+", help=f"numbers of points (default {SIZES})")
    parser.add_argument("--repeats", type=int, default=5, help="least timed calls after warm-up")
    parser.add_argument(
        "--min-time", type=float, default=3.0, help="least total seconds of timed calls per case"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--threads", type=int, help="torch threads in the workers (default: torch's)"
    )
    parser.add_argument(
        "--with-geometric-kernels",
        action="store_true",
        help=f"also run GeometricKernels, installing it into {GK_VENV} when needed",
    )
    parser.add_argument(
        "--gk-venv", type=Path, default=GK_VENV, help="virtualenv for GeometricKernels"
    )
    parser.add_argument(
        "--gk-max-n",
        type=int,
        default=GK_MAX_N,
        help="largest N for GeometricKernels (~11 GB at 5000)",
    )
    parser.add_argument(
        "--naive-max-n", type=int, default=NAIVE_MAX_N, help="largest N for naive torch"
    )
    parser.add_argument("--worker", choices=tuple(WORKERS), help=argparse.SUPPRESS)
    parser.add_argument("--points", help=argparse.SUPPRESS)
    parser.add_argument("--result", help=argparse.SUPPRESS)
    parser.add_argument("--save-matrix", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.smoke:
        args.repeats, args.min_time = 1, 0.0
        args.sizes = args.sizes or list(SMOKE_SIZES)
    args.sizes = sorted(args.sizes or SIZES)
    return args


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark (or, with ``--worker``, one case of it)."""
    args = parse_args(argv)
    if args.worker:
        run_case(args)
        return 0
    import torch

    if args.device == "cuda" and not torch.cuda.is_available():
        print(
            "CUDA is not available on this machine: the CUDA run is skipped, nothing was written."
        )
        return 0
    if args.threads:
        torch.set_num_threads(args.threads)  # the environment record then shows the workers' count
    gk, gk_status = None, "not requested (pass --with-geometric-kernels)"
    if args.smoke:
        gk_status = "skipped in --smoke runs"
    elif args.with_geometric_kernels:
        gk, gk_status = gk_python(args.gk_venv)
        if args.gk_max_n >= 5000:
            print(
                f"Warning: GeometricKernels builds an [N, N, {NUM_LEVELS}] tensor: about "
                f"{dense_memory_estimate(args.gk_max_n) / GIB:.0f} GiB at N={args.gk_max_n} "
                "(11 GB measured at N=5000), and several minutes per call.",
                flush=True,
            )
    env = environment(args.device)
    print(f"kernel_speed: {KERNEL}, {args.device}; {hardware_label(env, args.device)}", flush=True)
    print(f"GeometricKernels: {gk_status}", flush=True)
    results, comparisons, skipped = benchmark(args, gk)
    data = {
        "benchmark": "kernel_speed",
        "description": "wall time and peak memory of the kernel matrix K(X, X) on S²",
        "config": {
            "kernel": KERNEL,
            "call": "kernel.forward(X, X) under torch.no_grad()",
            "dtype": "float64",
            "device": args.device,
            "sizes": args.sizes,
            "repeats": args.repeats,
            "min_time_s": args.min_time,
            "warmup_calls": 1,
            "seed": args.seed,
            "threads": args.threads,
            "smoke": args.smoke,
            "naive_max_n": args.naive_max_n,
            "gk_max_n": args.gk_max_n if gk else None,
            "time": "median (and min) of the timed calls after one warm-up call; at least "
            "`repeats` calls and `min_time_s` seconds of them",
            "memory": "peak memory added by the work, each case in a fresh subprocess",
        },
        "environment": env,
        "alternatives": {
            "naive_torch": "plain torch: stack the [N, N, L] Legendre terms, contract with weights",
            "geometric_kernels": gk_status,
        },
        "results": results,
        "comparisons": comparisons,
        "skipped": skipped,
        "targets": check_targets(results["manibo"], env),
    }
    write_json(args.out / "kernel_speed.json", data)
    plot(data, args.out / "kernel_speed.png")
    time_ok, memory_ok = (data["targets"][key]["pass"] for key in ("time", "memory"))
    print(f"targets at N={TARGET_N}: time pass={time_ok}, memory pass={memory_ok}")
    print(f"wrote {args.out / 'kernel_speed.json'} and {args.out / 'kernel_speed.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
