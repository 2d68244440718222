"""Every script in ``examples/`` at full size: wall time, CPU time, exit status and what it printed.

The examples run one after the other, each in a fresh process (``--smoke``: at smoke size), and the
JSON records the environment and the 1-minute load average before and after each. An example
asserts its own result, so a non-zero exit status means its check failed. ``--only NAME`` runs
some of them and keeps the records of the others from an earlier JSON in ``--out`` when that was
written on the same CPU with the same package versions at the same size. The table of
``docs/examples.md`` is generated from the JSON (``benchmarks/doc_tables.py``).

    python benchmarks/examples_time.py --out /tmp/examples       # all of them (tens of minutes)
    python benchmarks/examples_time.py --only graph_nodes --smoke --out /tmp/examples
"""

from __future__ import annotations

import argparse
import ast
import datetime
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

from _common import environment, load_average, write_json

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
OUTPUT_LINES = 12
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def example_names() -> list[str]:
    """The scripts of ``examples/`` by stem, sorted."""
    return sorted(path.stem for path in EXAMPLES.glob("*.py"))


def summary_line(name: str) -> str:
    """The first line of an example's docstring, without its ``Tutorial:`` prefix, in Markdown."""
    doc = ast.get_docstring(ast.parse((EXAMPLES / f"{name}.py").read_text(encoding="utf-8")))
    first = (doc or name).strip().splitlines()[0]
    return first.removeprefix("Tutorial:").strip().replace("``", "`")


def children_cpu_seconds() -> float:
    """User plus system CPU seconds of the finished child processes so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_example(name: str, smoke: bool, threads: int, timeout: float, cwd: Path) -> dict:
    """Run ``examples/<name>.py`` once and return its record."""
    env = {k: v for k, v in os.environ.items() if k != "SMOKE_TEST"}
    env.update({variable: str(threads) for variable in THREAD_VARIABLES})
    if smoke:
        env["SMOKE_TEST"] = "1"
    load_before, cpu_before, start = load_average(), children_cpu_seconds(), time.perf_counter()
    try:
        done = subprocess.run(
            [sys.executable, str(EXAMPLES / f"{name}.py")],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        returncode, stdout, stderr = done.returncode, done.stdout, done.stderr
    except subprocess.TimeoutExpired as expired:
        returncode, stdout, stderr = None, expired.stdout or "", f"timed out after {timeout:g} s"
        stdout = stdout.decode() if isinstance(stdout, bytes) else stdout
    seconds = time.perf_counter() - start
    return {
        "name": name,
        "summary": summary_line(name),
        "seconds": round(seconds, 2),
        "cpu_seconds": round(children_cpu_seconds() - cpu_before, 2),
        "returncode": returncode,
        "passed": returncode == 0,
        "output": stdout.splitlines()[-OUTPUT_LINES:],
        "error": None if returncode == 0 else stderr.splitlines()[-OUTPUT_LINES:],
        "load_average_1_min_before_after": [
            load_before[0] if load_before else None,
            (load_average() or [None])[0],
        ],
    }


def main(argv: list[str] | None = None) -> int:
    """Run the examples, write ``examples.json`` in ``--out``; exit 1 when one of them failed."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "examples")
    parser.add_argument("--smoke", action="store_true", help="run the examples at smoke size")
    parser.add_argument(
        "--only", action="append", choices=example_names(), help="run only these (repeatable)"
    )
    parser.add_argument("--threads", type=int, default=1, help="BLAS/OpenMP threads per example")
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds per example")
    args = parser.parse_args(argv)

    path = args.out / "examples.json"
    env = environment()
    kept = {}
    if args.only and path.exists():
        earlier = json.loads(path.read_text(encoding="utf-8"))
        same = all(earlier["environment"][k] == env[k] for k in ("cpu_model", "versions"))
        if same and earlier["config"]["smoke"] == args.smoke:
            kept = {record["name"]: record for record in earlier["examples"]}
    work = args.out / "work"
    work.mkdir(parents=True, exist_ok=True)
    for name in args.only or example_names():
        record = run_example(name, args.smoke, args.threads, args.timeout, work)
        now = datetime.datetime.now(datetime.UTC)
        record["timestamp_utc"] = now.isoformat(timespec="seconds")
        kept[name] = record
        verdict = "passed" if record["passed"] else f"FAILED (exit status {record['returncode']})"
        print(f"{name}: {record['seconds']:.1f} s, {verdict}", flush=True)
    data = {
        "config": {"smoke": args.smoke, "threads": args.threads, "timeout_s": args.timeout},
        "environment": env,
        "examples": [kept[name] for name in sorted(kept)],
    }
    write_json(path, data)
    print(f"wrote {path}")
    return 0 if all(record["passed"] for record in data["examples"]) else 1


if __name__ == "__main__":
    sys.exit(main())
