"""Regenerate every benchmark figure and JSON in ``docs/figures/`` and the tables of the docs.

The steps are a small registry (:data:`STEPS`): a name, the benchmark command, and the files it
writes with the names they take in ``docs/figures/``. Each step runs in its own working folder
(``benchmarks/results/<step>/``, where a benchmark may keep partial results between runs), its
files are copied into ``docs/figures/``, and at the end the tables of ``docs/benchmarks.md`` are
regenerated from the JSON there (``benchmarks/doc_tables.py``; ``comparison.md`` too). Adding a
benchmark is one line. A step whose script comes with another branch is skipped with a message.

``--smoke`` runs every step at smoke size (seconds per step) into a temporary folder: the figures
go to ``<out>/figures`` and the pages with their regenerated tables to ``<out>/``, and nothing in
``docs/`` changes. ``--lock FILE`` holds an exclusive lock on FILE during each step, so
that timing runs of other people on a shared machine (``flock FILE ...``) never overlap a step.

    python benchmarks/run_all.py                           # everything (hours: the regret runs)
    python benchmarks/run_all.py --only kernel_sphere2 --only kernel_summary
    python benchmarks/run_all.py --lock /tmp/manibo-cpu.lock --device auto
    python benchmarks/run_all.py --smoke --out /tmp/bench  # the quick check the tests run
    python benchmarks/run_all.py --list
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from _common import DEVICE_CHOICES
from _kernel_cases import CASES
from doc_tables import CAMPAIGN, DOCS, FIGURES, GEOMETRY, PAGES, available_tables, update_pages

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
WORK = HERE / "results"


Outputs = tuple[str | tuple[str, str], ...]


@dataclass(frozen=True)
class Step:
    """One benchmark command and the files it writes.

    Attributes:
        name: what ``--only`` selects.
        command: the script (in ``benchmarks/``; ``manibo`` for the command line) and its
            arguments; ``{figures}`` stands for the figures folder. The runner appends ``--out``
            (and ``--smoke``, ``--device``).
        outputs: file written in ``--out`` → its name in the figures folder; a plain name keeps it.
        takes_device: the script accepts ``--device`` with ``cpu``, ``cuda`` and ``auto``.
        smoke: the command at smoke size, when it is not ``command`` with ``--smoke``.
        smoke_outputs: the files of ``smoke`` (default: ``outputs``).
        folder: the working folder under ``benchmarks/results/`` of a full run (default: the
            step's name), where the benchmark keeps the records it resumes from.
        requires: a path (from the repository root) without which the step cannot run.
        records: a folder (in the working folder) of records that a full run redraws from: a
            full run without any keeps the committed files instead of drawing empty ones.
    """

    name: str
    command: tuple[str, ...]
    outputs: Outputs
    takes_device: bool = True
    smoke: tuple[str, ...] | None = None
    smoke_outputs: Outputs | None = None
    folder: str | None = None
    requires: str | None = None
    records: str | None = None

    def copies(self, smoke: bool = False) -> list[tuple[str, str]]:
        """``(written, committed)`` file names."""
        outputs = self.smoke_outputs if smoke and self.smoke_outputs else self.outputs
        return [(o, o) if isinstance(o, str) else o for o in outputs]

    def missing(self) -> str | None:
        """Why the step cannot run on this checkout (None when it can)."""
        if self.requires:
            needed = self.requires
        elif self.command[0] == "manibo":
            return None
        else:
            needed = f"benchmarks/{self.command[0]}"
        return None if (ROOT / needed).exists() else f"{needed} is not in this checkout"


def _regret(
    problems: tuple[str, ...], *options: str, seeds: int = 10, budget: int = 105
) -> tuple[str, ...]:
    command = ["regret.py", "--seeds", str(seeds), "--budget", str(budget)]
    for problem in problems:
        command += ["--problem", problem]
    return (*command, *options)


def _renamed_regret(problems: tuple[str, ...], name: str, suffix: str | None = None) -> Outputs:
    """A regret run's summary as ``regret_<name>.json``, its figures ``regret_<problem>_<suffix>``.

    ``suffix`` defaults to ``name``; an empty one keeps the figures' names.
    """
    suffix = name if suffix is None else suffix
    return (
        ("regret_summary.json", f"regret_{name}.json"),
        *((f"regret_{p}.png", f"regret_{p}{'_' * bool(suffix)}{suffix}.png") for p in problems),
    )


SEARCH_PLANNERS = ("search_planners.json", "search_planners.png")
SEARCH_DEMO = (
    "search_summary.json",
    *(f"search_{name}.png" for name in ("mission", "paths", "pos_curves", "time_to_detection")),
)
KERNEL = ("kernel_speed.py", "--with-geometric-kernels", "--threads", "1")
VISH_BO = ("manibo", "run", "--problem", "ackley-sphere2", "--surrogate", "vish", "--noise", "0.5")
VISH_BO = (*VISH_BO, "--surrogate-option", "num_features=400", "--quiet")


def _gpnet_uci(name: str, *arguments: str) -> Step:
    """A step of ``gpnet_uci.py`` whose JSON and figure are named after it; its fits are kept in
    the folder of runs that every such step shares (and redraws from)."""
    return Step(
        name,
        ("gpnet_uci.py", *arguments),
        (("gpnet_uci.json", f"{name}.json"), ("gpnet_uci.png", f"{name}.png")),
        False,
        folder="gpnet_uci",
        records="runs",
    )


STEPS: list[Step] = [
    *(
        Step(
            f"kernel_{name}",
            (*KERNEL, "--space", name),
            (f"kernel_speed_{name}.json", f"kernel_speed_{name}.png"),
        )
        for name in CASES
    ),
    Step(
        "kernel_summary",
        ("kernel_speed.py", "--summary", "{figures}"),
        ("kernel_speed.png",),
        False,
    ),
    Step("bo_time", ("bo_time.py", "--threads", "1"), ("bo_time.json", "bo_time.png")),
    Step(
        "noncompact_kernels",
        ("noncompact_kernels.py", "--repeats", "2"),
        ("noncompact_kernels.json", "noncompact_kernels.png"),
    ),
    Step(
        "product_speed",
        ("product_speed.py", "--with-series", "--threads", "1"),
        ("product_speed.json", "product_speed.png"),
        False,
    ),
    # VISH at scale: the measurements are long resumable runs of vish_scale.py itself (see
    # docs/vish.md); this step redraws the figure from the records it keeps in
    # benchmarks/results/records, and at smoke size measures one small configuration.
    Step(
        "vish_scale",
        ("vish_scale.py", "--report-only"),
        ("vish_scale.json", "vish_scale.png"),
        False,
        smoke=("vish_scale.py", "--methods", "vish210", "--sizes", "900", "--datasets", "airline"),
        smoke_outputs=(
            ("vish_scale_smoke.json", "vish_scale.json"),
            ("vish_scale_smoke.png", "vish_scale.png"),
        ),
        folder=".",
        records="records",
    ),
    # VISH over 10 random splits of the airline-shaped data (Table 3.1's protocol); resumes from
    # its records in benchmarks/results/vish_airline_splits/runs
    Step(
        "vish_airline_splits",
        ("vish_airline_splits.py",),
        ("vish_airline_splits.json", "vish_airline_splits.png"),
        False,
        records="runs",
    ),
    # BO with the VISH surrogate on 3,000 noisy observations, through the command line
    Step(
        "vish_bo",
        (*VISH_BO, "--initial-design", "3000", "--budget", "3030"),
        (("ackley-sphere2_vish_qlognei_seed0.json", "vish_bo_ackley_sphere2.json"),),
        False,
        smoke=(*VISH_BO, "--initial-design", "40", "--budget", "41"),  # one BO step
        requires="manibo/models/vish",
    ),
    Step(
        "regret_ackley",
        _regret(("ackley-sphere5", "ackley-sphere3"), "--checkpoints", "25,50,100,105"),
        (
            ("regret_summary.json", "regret_ackley.json"),
            "regret_ackley-sphere5.png",
            "regret_ackley-sphere3.png",
        ),
        False,
    ),
    Step(
        "regret_ackley_qlognei",
        _regret(
            ("ackley-sphere3",),
            *("--methods", "matern", "--acquisition", "qlognei", "--checkpoints", "25,50,100,105"),
        ),
        (
            ("regret_summary.json", "regret_ackley-sphere3_qlognei.json"),
            ("regret_ackley-sphere3.png", "regret_ackley-sphere3_qlognei.png"),
        ),
        False,
    ),
    # the five-space campaign: every surrogate that models the space (VISH: spheres only) and random
    Step(
        "regret_campaign",
        _regret(
            CAMPAIGN,
            *("--methods", "matern,heat,euclidean,vish,adgp,gpnet,random"),
            *("--checkpoints", "25,50,100"),
            seeds=20,
            budget=100,
        ),
        _renamed_regret(CAMPAIGN, "campaign"),
        False,
    ),
    # the research surrogates with their current defaults, the campaign's 20 seeds
    Step(
        "regret_campaign_surrogates",
        _regret(
            CAMPAIGN,
            *("--methods", "matern,adgp,gpnet,random", "--checkpoints", "25,50,100"),
            seeds=20,
            budget=100,
        ),
        _renamed_regret(CAMPAIGN, "campaign_surrogates", "surrogates"),
        False,
        folder="surrogates",
        records="runs",
    ),
    # SPD(2), H³, SE(3), SO(4) against their Euclidean baselines: 5 + 25 evaluations (the problems
    # with committed runs; see docs/benchmarks.md for the whole campaign's command)
    Step(
        "regret_geometry",
        _regret(
            GEOMETRY,
            *("--methods", "matern,euclidean,cholesky,random", "--acquisition", "logei"),
            *("--initial", "5", "--checkpoints", "10,20,30"),
            seeds=20,
            budget=30,
        ),
        _renamed_regret(GEOMETRY, "geometry"),
        False,
        folder="geometry",
        records="runs",
    ),
    # the finite spaces: 50 evaluations of 642 mesh vertices and of 225 graph nodes
    Step(
        "regret_mesh",
        _regret(
            ("bumps-mesh",),
            *("--methods", "matern,heat,chart,gpnet,random", "--checkpoints", "10,25,50"),
            seeds=20,
            budget=50,
        ),
        _renamed_regret(("bumps-mesh",), "mesh", ""),
        False,
    ),
    Step(
        "regret_graph",
        _regret(
            ("bumps-graph",),
            *("--methods", "matern,heat,gpnet,random", "--checkpoints", "10,25,50"),
            seeds=20,
            budget=50,
        ),
        _renamed_regret(("bumps-graph",), "graph", ""),
        False,
    ),
    Step(
        "regret_adgp",
        _regret(
            ("ackley-sphere2",),
            *("--methods", "adgp,random", "--acquisition", "qlogei", "--checkpoints", "10,20,30"),
            budget=30,
        ),
        _renamed_regret(("ackley-sphere2",), "adgp"),
        False,
        requires="manibo/models/adgp",
    ),
    Step(
        "regret_gpnet",
        _regret(
            ("ackley-sphere5",),
            "--methods",
            "gpnet,random",
            "--checkpoints",
            "25,50,100",
            budget=100,
        ),
        _renamed_regret(("ackley-sphere5",), "gpnet"),
        False,
        requires="manibo/models/gpnet",
    ),
    # 25 splits where a 5-split verdict hung on one split (diabetes 2/5 against the network,
    # Boston 3/5 against the DGP): see docs/adgp.md
    Step(
        "adgp_regression",
        ("adgp_regression.py", "--splits", "diabetes=25,boston=25,concrete=5", "--workers", "2"),
        ("adgp_regression.json", "adgp_regression.png"),
        False,
    ),
    Step(
        "adgp_classification",
        ("adgp_classification.py", "--splits", "5", "--workers", "2"),
        ("adgp_classification.json", "adgp_classification.png"),
        False,
    ),
    # the report's own recipe (stage 2 on every parameter) beside vanilla and MC-dropout networks
    Step("adgp_paper", ("adgp_paper.py",), ("adgp_paper.json", "adgp_paper.png"), False),
    # GPNet against SVGP with the paper's settings (10,000 iterations, 1000 features) on the
    # protocol's 20 splits of Boston at M = 100: 20-29 CPU-minutes per GPNet split (one thread),
    # about 3 on a GPU; the splits stored under runs/ are reused
    _gpnet_uci("gpnet_uci_boston", "--datasets", "boston", "--splits", "20", "--sizes", "100"),
    # SVGP alone on Concrete at M = 100 (about 90 CPU-seconds per split), the same folder of runs
    _gpnet_uci(
        "gpnet_uci_concrete_svgp100",
        *("--datasets", "concrete", "--splits", "20", "--sizes", "100", "--methods", "svgp"),
    ),
    # GPNet and SVGP on Concrete at M = 100, the same folder of runs: GPNet's splits 0-4 ran on
    # an H200, 5-18 on a 2-core CPU (17-55 minutes each), 19 not yet
    _gpnet_uci(
        "gpnet_uci_concrete_m100", "--datasets", "concrete", "--splits", "20", "--sizes", "100"
    ),
    # posterior calibration of the BO surrogates: on uniform points, and on the points that the
    # activated deep GP's own BO runs collect
    Step(
        "surrogate_calibration",
        ("surrogate_calibration.py",),
        ("surrogate_calibration.json", "surrogate_calibration.png"),
        False,
    ),
    Step(
        "surrogate_calibration_bo",
        ("surrogate_calibration.py", "--design", "bo:adgp"),
        (
            ("surrogate_calibration.json", "surrogate_calibration_bo.json"),
            ("surrogate_calibration.png", "surrogate_calibration_bo.png"),
        ),
        False,
    ),
    Step(
        "surrogate_calibration_bo_gpnet",
        (
            "surrogate_calibration.py",
            *("--design", "bo:gpnet", "--seeds", "5", "--methods", "matern,gpnet"),
        ),
        (
            ("surrogate_calibration.json", "surrogate_calibration_bo_gpnet.json"),
            ("surrogate_calibration.png", "surrogate_calibration_bo_gpnet.png"),
        ),
        False,
    ),
    # regret against time with thousands of evaluations in batches of 100: exact GP against VISH
    Step(
        "surrogate_wall_time",
        (
            "surrogate_wall_time.py",
            "--seeds",
            "1",
            "--wall-budget",
            "150",
            "--checkpoints",
            "10,20,40,80,150",
        ),
        ("surrogate_wall_time.json", "surrogate_wall_time.png"),
        False,
    ),
    Step(
        "gpnet",
        ("gpnet.py",),
        (
            *(f"gpnet_{part}.json" for part in ("toy", "sphere", "large", "bo")),
            "gpnet_toy.png",
            "gpnet_regression.png",
        ),
        False,
    ),
    # the judged comparison of the search planners (docs/search.md): the second judged run, 200
    # fresh scenarios, 72 h missions
    Step(
        "search_planners",
        ("search_planners.py", "--scenarios", "200", "--first-seed", "30000", "--budget", "72"),
        SEARCH_PLANNERS,
        False,
    ),
    # every script of examples/ at full size, timed (docs/examples.md)
    Step("examples", ("examples_time.py",), ("examples.json",), False),
    # the demo itself (`make demo`): its figures and summary are the ones docs/search.md shows
    Step(
        "search_demo",
        ("manibo", "demo", "search"),
        SEARCH_DEMO,
        False,
        smoke=("manibo", "demo", "search", "--scenarios", "2", "--budget", "14"),
        requires="manibo/search",
    ),
]


@contextlib.contextmanager
def locked(path: Path | None) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``path`` (nothing when None), waiting for it if needed."""
    if path is None:
        yield
        return
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def command_line(step: Step, out: Path, figures: Path, smoke: bool, device: str) -> list[str]:
    """The full command of ``step``."""
    parts = step.smoke if smoke and step.smoke else step.command
    script, *arguments = (part.replace("{figures}", str(figures)) for part in parts)
    program = ["-m", "manibo"] if script == "manibo" else [str(HERE / script)]
    command = [sys.executable, *program, *arguments, "--out", str(out)]
    if smoke and script != "manibo":
        command.append("--smoke")
    if step.takes_device:
        command += ["--device", device]
    return command


def run_step(step: Step, work: Path, figures: Path, smoke: bool, device: str, lock) -> None:
    """Run one step and copy its files into ``figures`` (a message instead, if it cannot run).

    Raises:
        SystemExit: the command failed or did not write a file it declares.
    """
    missing = step.missing()
    if missing:
        print(f"== {step.name}: skipped, {missing} (it comes with another branch).", flush=True)
        return
    out = work / (step.name if smoke else step.folder or step.name)
    if not smoke and step.records and not any((out / step.records).glob("*.json")):
        print(
            f"== {step.name}: skipped, no records in {out / step.records}: run "
            f"`python benchmarks/{step.command[0]}` (its docstring says how) to measure them; "
            f"the committed {', '.join(c for _, c in step.copies())} are kept.",
            flush=True,
        )
        return
    out.mkdir(parents=True, exist_ok=True)
    command = command_line(step, out, figures, smoke, device)
    print(f"== {step.name}: {' '.join(command[1:])}", flush=True)
    start = time.perf_counter()
    with locked(lock):
        status = subprocess.run(command).returncode
    if status != 0:
        raise SystemExit(f"step {step.name} failed (exit status {status}).")
    figures.mkdir(parents=True, exist_ok=True)
    for written, committed in step.copies(smoke):
        if not (out / written).exists():
            raise SystemExit(f"step {step.name} did not write {written} in {out}.")
        shutil.copy2(out / written, figures / committed)
    print(f"== {step.name} done in {time.perf_counter() - start:.0f} s", flush=True)


def select(names: list[str] | None) -> list[Step]:
    """The steps named (in registry order), or all of them."""
    known = {step.name: step for step in STEPS}
    unknown = sorted(set(names or []) - set(known))
    if unknown:
        raise SystemExit(f"unknown step(s) {', '.join(unknown)}; known: {', '.join(known)}.")
    return [step for step in STEPS if not names or step.name in names]


def main(argv: list[str] | None = None) -> int:
    """Run the selected steps, then regenerate the tables."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--only", action="append", metavar="NAME", help="run this step (repeatable)"
    )
    parser.add_argument("--smoke", action="store_true", help="smoke size, into a temporary folder")
    parser.add_argument(
        "--out", type=Path, help="--smoke: the folder to write into (default: a new temporary one)"
    )
    parser.add_argument("--device", choices=DEVICE_CHOICES, default="auto")
    parser.add_argument("--lock", type=Path, help="hold an exclusive flock on this file per step")
    parser.add_argument("--list", action="store_true", help="list the steps and their files")
    args = parser.parse_args(argv)
    steps = select(args.only)
    if args.list:
        for step in STEPS:
            files = ", ".join(committed for _, committed in step.copies())
            note = f" (cannot run here: {step.missing()})" if step.missing() else ""
            print(f"{step.name:<24} {' '.join(step.command)}\n{'':<24} -> {files}{note}")
        return 0
    if args.smoke:
        work = args.out or Path(tempfile.mkdtemp(prefix="manibo_bench_smoke_"))
        figures, pages = work / "figures", work
    elif args.out:
        raise SystemExit("--out is only for --smoke: a full run writes into docs/figures.")
    else:
        work, figures, pages = WORK, FIGURES, DOCS
    for step in steps:
        run_step(step, work, figures, args.smoke, args.device, args.lock)
    tables = available_tables(figures) if args.smoke else None
    update_pages(figures, pages, tables)
    print(f"figures in {figures}; tables regenerated in {', '.join(PAGES)} in {pages}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
