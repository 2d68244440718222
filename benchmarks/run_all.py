"""Regenerate every benchmark figure and JSON in ``docs/figures/`` and the tables of the docs.

The steps are a small registry (:data:`STEPS`): a name, the benchmark command, and the files it
writes with the names they take in ``docs/figures/``. Each step runs in its own working folder
(``benchmarks/results/<step>/``, where a benchmark may keep partial results between runs), its
files are copied into ``docs/figures/``, and at the end the tables of ``docs/benchmarks.md`` are
regenerated from the JSON there (``benchmarks/doc_tables.py``). Adding a benchmark is one line.

``--smoke`` runs every step at smoke size (seconds per step) into a temporary folder: the figures
go to ``<out>/figures`` and the page with its regenerated tables to ``<out>/benchmarks.md``, and
nothing in ``docs/`` changes. ``--lock FILE`` holds an exclusive lock on FILE during each step, so
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
from doc_tables import available_tables, update_page

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
FIGURES = ROOT / "docs" / "figures"
PAGE = ROOT / "docs" / "benchmarks.md"
WORK = HERE / "results"


@dataclass(frozen=True)
class Step:
    """One benchmark command and the files it writes.

    Attributes:
        name: what ``--only`` selects.
        command: the script (in ``benchmarks/``) and its arguments; ``{figures}`` stands for the
            figures folder. The runner appends ``--out`` (and ``--smoke``, ``--device``).
        outputs: file written in ``--out`` → its name in the figures folder; a plain name keeps it.
        takes_device: the script accepts ``--device``.
    """

    name: str
    command: tuple[str, ...]
    outputs: tuple[str | tuple[str, str], ...]
    takes_device: bool = True

    def copies(self) -> list[tuple[str, str]]:
        """``(written, committed)`` file names."""
        return [(o, o) if isinstance(o, str) else o for o in self.outputs]


def _regret(problems: tuple[str, ...], *options: str) -> tuple[str, ...]:
    command = ["regret.py", "--seeds", "10", "--budget", "105", "--checkpoints", "25,50,100,105"]
    for problem in problems:
        command += ["--problem", problem]
    return (*command, *options)


KERNEL = ("kernel_speed.py", "--with-geometric-kernels", "--threads", "1")

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
        "regret_ackley",
        _regret(("ackley-sphere5", "ackley-sphere3")),
        (
            ("regret_summary.json", "regret_ackley.json"),
            "regret_ackley-sphere5.png",
            "regret_ackley-sphere3.png",
        ),
        False,
    ),
    Step(
        "regret_ackley_qlognei",
        _regret(("ackley-sphere3",), "--methods", "matern", "--acquisition", "qlognei"),
        (
            ("regret_summary.json", "regret_ackley-sphere3_qlognei.json"),
            ("regret_ackley-sphere3.png", "regret_ackley-sphere3_qlognei.png"),
        ),
        False,
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
    script, *arguments = (part.replace("{figures}", str(figures)) for part in step.command)
    command = [sys.executable, str(HERE / script), *arguments, "--out", str(out)]
    if smoke:
        command.append("--smoke")
    if step.takes_device:
        command += ["--device", device]
    return command


def run_step(step: Step, work: Path, figures: Path, smoke: bool, device: str, lock) -> None:
    """Run one step and copy its files into ``figures``.

    Raises:
        SystemExit: the command failed or did not write a file it declares.
    """
    out = work / step.name
    out.mkdir(parents=True, exist_ok=True)
    command = command_line(step, out, figures, smoke, device)
    print(f"== {step.name}: {' '.join(command[1:])}", flush=True)
    start = time.perf_counter()
    with locked(lock):
        status = subprocess.run(command).returncode
    if status != 0:
        raise SystemExit(f"step {step.name} failed (exit status {status}).")
    figures.mkdir(parents=True, exist_ok=True)
    for written, committed in step.copies():
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
            print(f"{step.name:<24} {' '.join(step.command)}\n{'':<24} -> {files}")
        return 0
    if args.smoke:
        work = args.out or Path(tempfile.mkdtemp(prefix="manibo_bench_smoke_"))
        figures, page = work / "figures", work / "benchmarks.md"
    elif args.out:
        raise SystemExit("--out is only for --smoke: a full run writes into docs/figures.")
    else:
        work, figures, page = WORK, FIGURES, PAGE
    for step in steps:
        run_step(step, work, figures, args.smoke, args.device, args.lock)
    tables = available_tables(figures) if args.smoke else None
    page.write_text(
        update_page(PAGE.read_text(encoding="utf-8"), figures, tables), encoding="utf-8"
    )
    print(f"figures in {figures}; tables regenerated in {page}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
