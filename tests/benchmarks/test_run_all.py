"""The runner's registry regenerates every file in docs/figures; a smoke run stays out of docs/."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import doc_tables  # noqa: E402
import run_all  # noqa: E402

FIGURES = ROOT / "docs" / "figures"
SCRIPT = ROOT / "benchmarks" / "run_all.py"


def test_the_steps_write_exactly_the_committed_figures():
    """Steps whose script comes with another branch (VISH) count once that branch is merged."""
    steps = [step for step in run_all.STEPS if not step.missing()]
    written = [committed for step in steps for _, committed in step.copies()]
    assert len(written) == len(set(written)), "two steps write the same file"
    assert sorted(written) == sorted(p.name for p in FIGURES.iterdir())
    inputs = {f for table in doc_tables.TABLES.values() for f in table.inputs}
    assert inputs <= set(written)


def test_step_command_lines(tmp_path):
    steps = {step.name: step for step in run_all.STEPS}
    summary = run_all.command_line(steps["kernel_summary"], tmp_path, Path("/f"), True, "auto")
    assert summary[1:] == [
        str(ROOT / "benchmarks" / "kernel_speed.py"),
        "--summary",
        "/f",
        "--out",
        str(tmp_path),
        "--smoke",
    ]
    kernel = run_all.command_line(steps["kernel_so3"], tmp_path, Path("/f"), False, "cuda")
    assert kernel[-2:] == ["--device", "cuda"] and "--smoke" not in kernel
    assert kernel[kernel.index("--space") + 1] == "so3"


def test_unknown_step_is_an_error():
    with pytest.raises(SystemExit, match="unknown step"):
        run_all.select(["kernel_sphere2", "nope"])
    assert [s.name for s in run_all.select(["bo_time", "kernel_mesh"])] == [
        "kernel_mesh",
        "bo_time",
    ]


def test_smoke_run_writes_into_its_folder_and_regenerates_the_tables(tmp_path):
    """The graph benchmark at smoke size, then the overview figure from every space's JSON."""
    figures = tmp_path / "figures"
    figures.mkdir()
    for path in FIGURES.glob("kernel_speed_*.json"):
        shutil.copy(path, figures)
    before = {p.name: p.stat().st_mtime_ns for p in FIGURES.iterdir()}
    command = [sys.executable, str(SCRIPT), "--smoke", "--out", str(tmp_path)]
    command += ["--only", "kernel_graph", "--only", "kernel_summary", "--lock", str(tmp_path / "l")]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert {p.name: p.stat().st_mtime_ns for p in FIGURES.iterdir()} == before  # docs untouched

    assert (figures / "kernel_speed_graph.png").stat().st_size > 0
    assert (figures / "kernel_speed.png").stat().st_size > 10_000
    blocks = {}
    for page in (ROOT / "docs" / "benchmarks.md", tmp_path / "benchmarks.md"):
        blocks[page.parent] = {
            m.group(1): m.group(2) for m in doc_tables.MARKERS.finditer(page.read_text())
        }
    committed, smoke = blocks[ROOT / "docs"], blocks[tmp_path]
    assert "| 30 |" in smoke["kernel_speed_graph"]  # the smoke run's sizes
    assert smoke["kernel_speed_graph"] != committed["kernel_speed_graph"]
    for name in ("kernel_speed_sphere2", "kernel_speed_so3", "bo_time", "runs"):
        assert smoke[name] == committed[name]  # the other blocks come from the same JSON


def test_smoke_command_and_working_folder_of_a_step_with_its_own(tmp_path):
    steps = {step.name: step for step in run_all.STEPS}
    vish = steps["vish_scale"]
    full = run_all.command_line(vish, tmp_path, Path("/f"), False, "cuda")
    assert full[2:] == ["--report-only", "--out", str(tmp_path)]  # no --device: a CPU report
    smoke = run_all.command_line(vish, tmp_path, Path("/f"), True, "cuda")
    assert "--report-only" not in smoke and smoke[-1] == "--smoke"
    assert vish.copies(smoke=True)[0] == ("vish_scale_smoke.json", "vish_scale.json")
    assert vish.copies()[0] == ("vish_scale.json", "vish_scale.json")
    bo = run_all.command_line(steps["vish_bo"], tmp_path, Path("/f"), True, "auto")
    assert bo[1:4] == ["-m", "manibo", "run"] and "--smoke" not in bo  # the CLI has no --smoke
    assert bo[bo.index("--budget") + 1] == "41"


def test_a_full_run_without_records_keeps_the_committed_files(tmp_path, capsys):
    step = run_all.Step("redraw", ("run_all.py",), ("x.json",), False, folder=".", records="rec")
    run_all.run_step(step, tmp_path, tmp_path / "figures", False, "cpu", None)
    assert "skipped, no records in" in capsys.readouterr().out
    assert not (tmp_path / "figures").exists()


def test_steps_from_other_branches_are_skipped_with_a_message_or_run(tmp_path):
    """On a branch without VISH the VISH steps say why they do not run; with it they run.

    Where vish_scale.py is present its smoke run is tests/benchmarks/test_vish_scale_smoke.py's
    (the same script on 900 airline-shaped points); here it only has to be skipped cleanly where
    it is absent.
    """
    steps = [
        s for s in run_all.STEPS if s.name == "vish_bo" or s.name == "vish_scale" and s.missing()
    ]
    command = [sys.executable, str(SCRIPT), "--smoke", "--out", str(tmp_path)]
    for step in steps:
        command += ["--only", step.name]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    for step in steps:
        if step.missing():
            assert f"== {step.name}: skipped, {step.missing()}" in result.stdout
        else:
            for _, committed in step.copies(smoke=True):
                assert (tmp_path / "figures" / committed).stat().st_size > 0
