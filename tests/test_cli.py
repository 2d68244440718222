"""The command line: info, run (journal, resume, refusals, noise), demo and bench arguments."""

import json
import os
import pickle
import random
import re
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest
import torch
from loop_processes import shared_fork_server

from manibo.cli import _parse_options, main
from manibo.journal import Journal


@pytest.fixture(autouse=True)
def _own_sys_path(monkeypatch):
    """Each test's own ``sys.path``: ``--objective path/to/file.py:f`` puts the file's folder
    first on it, as ``python path/to/file.py`` does."""
    monkeypatch.setattr(sys, "path", list(sys.path))


def test_info(capsys):
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    assert "manibo" in out and "torch" in out and "CUDA device" in out


def test_unknown_command():
    with pytest.raises(SystemExit):
        main(["frobnicate"])


def test_run_writes_results_and_resumes(tmp_path, capsys):
    import json

    args = [
        "run",
        "--problem",
        "ackley-sphere2",
        "--budget",
        "6",
        "--initial-design",
        "4",
        "--seed",
        "0",
        "--out",
        str(tmp_path),
        "--quiet",
    ]
    assert main(args) == 0
    result = json.loads((tmp_path / "ackley-sphere2_matern_qlognei_seed0.json").read_text())
    assert len(result["simple_regret"]) == 6 and result["simple_regret"][-1] >= 0
    # the recommended point is an evaluated one: its regret is at least the best evaluated one's
    assert result["recommended_regret"] >= result["simple_regret"][-1]
    out = capsys.readouterr().out
    assert "simple regret (noise-free; the best true value among the evaluated points): " in out
    assert "regret of the recommended point (noise-free; the point a noisy run" in out
    assert (tmp_path / "ackley-sphere2_matern_qlognei_seed0.journal.jsonl").exists()
    assert (
        main(args[:3] + ["--budget", "7"] + args[5:]) == 0
    )  # same command, larger budget: resumes
    out = capsys.readouterr().out
    assert "resuming" in out and "nothing is evaluated" not in out
    result = json.loads((tmp_path / "ackley-sphere2_matern_qlognei_seed0.json").read_text())
    assert len(result["simple_regret"]) == 7
    assert main(args[:3] + ["--budget", "5"] + args[5:]) == 0  # a smaller budget: says so
    assert "7 evaluations; that is already --budget 5 or more" in capsys.readouterr().out


def test_run_passes_surrogate_options_and_rejects_malformed_ones(tmp_path, capsys):
    import json

    common = ["run", "--problem", "ackley-sphere2", "--budget", "4", "--initial-design", "3"]
    common += ["--out", str(tmp_path), "--quiet"]
    assert main(common + ["--surrogate-option", "nu=1.5"]) == 0
    result = json.loads((tmp_path / "ackley-sphere2_matern_qlognei_seed0.json").read_text())
    assert result["config"]["surrogate_options"] == {"nu": 1.5}
    with pytest.raises(SystemExit) as exit_info:
        main(common + ["--seed", "1", "--surrogate-option", "nu"])
    assert exit_info.value.code == 2
    assert "manibo: error: --surrogate-option must look like KEY=VALUE" in capsys.readouterr().err


def test_surrogate_option_values_read_json_and_python_spellings():
    """--surrogate-option per_factor=True, as manibo's own warning spells it, was refused:
    "per_factor must be True or False, got 'True' (str)"."""
    pairs = ["a=True", "b=False", "c=None", "d=true", "e=false", "f=null", "g=rbf", "h=[1, 2]"]
    assert _parse_options(pairs) == {
        **{"a": True, "b": False, "c": None, "d": True, "e": False, "f": None},
        **{"g": "rbf", "h": [1, 2]},
    }


def test_bench_passes_its_arguments_to_the_runner(capfd):
    assert main(["bench", "--list"]) == 0
    out = capfd.readouterr().out
    assert "kernel_sphere2" in out and "bo_time.json" in out and "vish_scale" in out
    assert main(["bench", "--only", "nope"]) == 1
    assert "unknown step(s) nope" in capfd.readouterr().err


def test_bench_needs_a_source_checkout_and_other_commands_reject_extra_arguments(
    monkeypatch, tmp_path, capsys
):
    import manibo.cli

    monkeypatch.setattr(manibo.cli, "SOURCE_ROOT", tmp_path)  # as for an installed package
    monkeypatch.chdir(tmp_path)
    (tmp_path / "benchmarks").mkdir()
    (tmp_path / "benchmarks" / "run_all.py").write_text("raise SystemExit(7)\n")
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "other"\n')
    with pytest.raises(SystemExit) as exit_info:  # another project's benchmarks are not run
        main(["bench", "--list"])
    assert exit_info.value.code == 2 and "source checkout" in capsys.readouterr().err
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "manibo"\n')
    inside = tmp_path / "docs"
    inside.mkdir()
    monkeypatch.chdir(inside)  # found from a folder inside the checkout
    assert main(["bench", "--list"]) == 7
    with pytest.raises(SystemExit):
        main(["info", "--list"])


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--workers", "0"], "--workers must be at least 1"),
        (["--device", "gpu0"], "must name a torch device"),
        pytest.param(
            ["--device", "cuda"],
            "torch sees no CUDA device",
            marks=pytest.mark.skipif(torch.cuda.is_available(), reason="a CUDA device is here"),
        ),
    ],
)
def test_demo_bad_options_exit_with_a_message_not_a_traceback(tmp_path, capsys, arguments, message):
    with pytest.raises(SystemExit) as exit_info:
        main(["demo", "search", "--out", str(tmp_path), *arguments])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("manibo: error: ") and message in err and "Traceback" not in err
    assert not any(tmp_path.iterdir())  # refused before any work


def _manibo_process(*command: str, cwd: Path | None = None) -> subprocess.Popen:
    """``python -m manibo command`` in a new process group, as the installed command runs it
    (``-P``: the current folder is not put first on ``sys.path``), SIGINT at its default."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1]), "OMP_NUM_THREADS": "1"}
    return subprocess.Popen(
        [sys.executable, "-P", "-m", "manibo", *command],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def _sigint_after(
    command: list[str], first: str, wait: float, signum: int = signal.SIGINT
) -> tuple[float, str, str, int]:
    """Start ``manibo`` ``command``, read its output (stdout) up to a line that starts with
    ``first``, wait ``wait`` seconds, then press Ctrl-C (SIGINT to its process group, as a
    terminal does; or send ``signum`` there): the seconds it took to end, its output and error
    text, and its status."""
    process = _manibo_process(*command)
    try:
        out, line = "", ""
        while not line.startswith(first):
            line = process.stdout.readline()
            assert line, f"ended before printing {first!r}: {process.stderr.read()}"
            out += line
        time.sleep(wait)
        os.killpg(process.pid, signum)
        start = time.monotonic()
        more, err = process.communicate(timeout=120)
        return time.monotonic() - start, out + more, err, process.returncode
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


@pytest.mark.slow
def test_ctrl_c_ends_the_demo_at_once_with_one_line_and_status_130(tmp_path):
    command = ["demo", "--scenarios", "2", "--budget", "12", "--workers", "2"]
    command += ["--out", str(tmp_path)]
    seconds, out, err, status = _sigint_after(command, "  1/12 missions done", wait=0.5)
    assert out.startswith("manibo search demo") and "12/12" not in out  # in the comparison
    assert status == 130 and err == "\nmanibo: interrupted\n" and seconds < 10


def _slow_run(tmp_path, catch: bool = False) -> list[str]:
    """A ``manibo run`` command of 8 evaluations of 1 s each, whose objective prints
    ``evaluating`` first; with ``catch``, it catches the ``KeyboardInterrupt`` of its sleep."""
    sleep = "    try:\n        time.sleep(1)\n    except KeyboardInterrupt:\n        pass\n"
    script = tmp_path / "slow.py"
    script.write_text(
        "import time\n\ndef f(x):\n    print('evaluating', flush=True)\n"
        + (sleep if catch else "    time.sleep(1)\n")
        + "    return float(x[0])\n"
    )
    command = ["run", "--objective", f"{script}:f", "--space", "sphere2", "--budget", "8"]
    return [*command, "--out", str(tmp_path / ("caught" if catch else "plain"))]


@pytest.mark.slow
def test_sigterm_ends_a_run_with_one_line_and_status_143(tmp_path):
    # SIGTERM (kill, Slurm, systemd) ended the run silently with status -15
    seconds, out, err, status = _sigint_after(
        _slow_run(tmp_path), "evaluating", 0.3, signal.SIGTERM
    )
    assert status == 143 and seconds < 10 and "Traceback" not in err
    assert err.endswith("\nmanibo: terminated; the same command resumes the run from its journal\n")
    # an objective that catches the KeyboardInterrupt went on to the end of the budget
    command = _slow_run(tmp_path, catch=True)
    seconds, out, err, status = _sigint_after(command, "evaluating", 0.3, signal.SIGTERM)
    assert status == 143 and out.count("evaluating") == 1 and seconds < 10


@pytest.mark.slow
def test_a_run_terminated_before_its_journal_exists_does_not_promise_a_resume(tmp_path):
    """SIGTERM while the objective's module was imported printed "the same command resumes the
    run from its journal", with no journal written."""
    script = tmp_path / "slow_import.py"
    script.write_text(
        "import time\n\nprint('importing', flush=True)\ntime.sleep(30)\n\n"
        "def f(x):\n    return float(x[0])\n"
    )
    out = tmp_path / "out"
    command = ["run", "--objective", f"{script}:f", "--space", "sphere2", "--out", str(out)]
    seconds, _, err, status = _sigint_after(command, "importing", 0.3, signal.SIGTERM)
    assert status == 143 and seconds < 10 and "Traceback" not in err
    assert err.endswith("\nmanibo: terminated\n") and not list(out.glob("*.jsonl"))


def test_a_signal_stops_the_run_at_the_next_evaluation_but_not_after_the_last():
    # a signal that came during the budget's last evaluation stopped the run before it wrote its
    # summary, plot and stop record (it ended with 143 and nothing written)
    from types import SimpleNamespace

    from manibo.cli import _stop_when_signalled

    interrupts = SimpleNamespace(seen=False)
    callback = _stop_when_signalled(interrupts, budget=3)
    optimizer = SimpleNamespace(history=[None, None])
    callback(optimizer, None)  # no signal: goes on
    interrupts.seen = True
    with pytest.raises(KeyboardInterrupt):
        callback(optimizer, None)
    optimizer.history.append(None)
    callback(optimizer, None)  # the budget is spent: the run ends by itself


@pytest.mark.slow
def test_ctrl_c_ends_a_run_with_one_line_saying_how_to_resume(tmp_path):
    seconds, out, err, status = _sigint_after(_slow_run(tmp_path), "evaluating", 0.3)
    assert status == 130 and seconds < 10 and "Traceback" not in err
    assert err.endswith(
        "\nmanibo: interrupted; the same command resumes the run from its journal\n"
    )


def _parallel_run(tmp_path, seconds: float, budget: int) -> list[str]:
    """A ``manibo run`` command of ``budget`` evaluations with ``--parallel 3``, whose objective
    sleeps ``seconds`` between two lines it appends to ``log.txt``: ``start`` and ``end``."""
    script = tmp_path / "sleepy.py"
    script.write_text(
        "import time\nfrom pathlib import Path\n\nLOG = Path(__file__).with_name('log.txt')\n\n"
        "def f(x):\n    with LOG.open('a') as log:\n        log.write('start\\n')\n"
        "    print('evaluating', flush=True)\n"
        f"    time.sleep({seconds})\n"
        "    with LOG.open('a') as log:\n        log.write('end\\n')\n"
        "    return float(x[0])\n"
    )
    command = ["run", "--objective", f"{script}:f", "--space", "sphere2", "--parallel", "3"]
    return [*command, "--budget", str(budget), "--quiet", "--out", str(tmp_path / "out")]


def _most_at_once(log: Path) -> int:
    """The largest number of evaluations under way together, from a log of start/end lines."""
    running = most = 0
    for line in log.read_text().split():
        running += 1 if line == "start" else -1
        most = max(most, running)
    return most


@pytest.mark.slow
def test_parallel_evaluates_points_together_and_a_signal_leaves_them_for_the_resume(tmp_path):
    # 20 s evaluations, three at a time: SIGTERM ends the command at once (a thread pool would
    # have waited for them), and the resumed run evaluates the three asked points first
    command = _parallel_run(tmp_path, 20, budget=6)
    seconds, out, err, status = _sigint_after(command, "evaluating", 2.0, signal.SIGTERM)
    assert status == 143 and seconds < 10 and "Traceback" not in err
    assert _most_at_once(tmp_path / "log.txt") == 3  # the initial design's first three points
    journal = Journal(next((tmp_path / "out").glob("*.journal.jsonl"))).read_all()
    asked = [point for record in journal.asked for point in record.points]
    assert len(asked) == 3 and not journal.evaluations
    (tmp_path / "log.txt").unlink()
    process = _manibo_process(*_parallel_run(tmp_path, 0.5, budget=6))
    out, err = process.communicate(timeout=300)
    assert process.returncode == 0, err
    assert out.startswith("resuming ") and "3 asked point(s) not evaluated yet" in out
    told = [e.x for e in Journal(next((tmp_path / "out").glob("*.journal.jsonl"))).read()[1]]
    assert len(told) == 6 and sorted(told[:3]) == sorted(asked)
    assert 2 <= _most_at_once(tmp_path / "log.txt") <= 3


@pytest.mark.slow
def test_a_parallel_runs_error_is_said_at_once_and_kept_by_a_signal_during_the_wait(tmp_path):
    # the second evaluation's TypeError waited silently for the 20 s evaluations in flight, and
    # a Ctrl-C or SIGTERM meanwhile ended the command without it
    script = tmp_path / "buggy.py"
    script.write_text(
        "import time\nN = [0]\n\ndef f(x):\n    N[0] += 1\n    if N[0] == 2:\n"
        "        raise TypeError('a bug in the objective')\n    time.sleep(20)\n"
        "    return float(x[0])\n"
    )
    process = _manibo_process(
        "run", "--objective", f"{script}:f", "--space", "box2", "--parallel", "3",
        "--budget", "6", "--initial-design", "3", "--out", str(tmp_path / "out"),
    )  # fmt: skip
    try:
        line = process.stderr.readline()
        assert "the run stops on TypeError: a bug in the objective; waiting for the 2" in line
        os.killpg(process.pid, signal.SIGTERM)
        start = time.monotonic()
        _, err = process.communicate(timeout=60)
        seconds = time.monotonic() - start
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
    assert process.returncode == 143 and seconds < 10
    assert "raise TypeError('a bug in the objective')" in err and "manibo: terminated" in err


COMMON = ["run", "--problem", "ackley-sphere2", "--budget", "3", "--initial-design", "3", "--quiet"]
STEM = "ackley-sphere2_matern_qlognei_seed0"


def _error_line(capsys, exit_info):
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("manibo: error: ") and err.count("\n") == 1 and "Traceback" not in err
    return err


def test_known_noise_is_the_surrogates_noise_and_the_summary_says_so(tmp_path, capsys):
    assert main([*COMMON, "--budget", "4", "--known-noise", "0.05", "--out", str(tmp_path)]) == 0
    assert "known noise: standard deviation 0.05 (given)" in capsys.readouterr().out
    summary = json.loads((tmp_path / f"{STEM}.json").read_text())
    assert summary["config"]["noise_std"] == 0.05
    assert summary["noise_std"] == pytest.approx(0.05, rel=1e-6)


def test_a_resume_with_other_settings_is_refused_and_fresh_starts_over(tmp_path, capsys):
    common = [*COMMON, "--out", str(tmp_path)]
    assert main(common) == 0
    journal = tmp_path / f"{STEM}.journal.jsonl"
    first = Journal(journal).read()[1]
    capsys.readouterr()
    changed = ["--q", "2", "--initial-design", "2", "--surrogate-option", "nu=1.5"]
    changed += ["--noise", "0.1", "--known-noise", "0.05"]
    with pytest.raises(SystemExit) as exit_info:
        main([*common, *changed])
    err = _error_line(capsys, exit_info)
    for difference in (
        "--known-noise: not given in the journal's run, 0.05 now",
        "q: 1 in the journal, 2 now",
        "initial_design: 3 in the journal, 2 now",
        "surrogate_options.nu: (not set) in the journal, 1.5 now",
        "metadata.noise_std: 0.0 in the journal, 0.1 now",
    ):
        assert difference in err
    assert Journal(journal).read()[1] == first  # untouched
    assert main([*common, "--noise", "0.1", "--fresh"]) == 0
    moved = [p for p in tmp_path.iterdir() if p.name.endswith(".old")]
    assert len(moved) == 1 and "moved the previous journal to" in capsys.readouterr().out
    assert [e.x for e in Journal(moved[0]).read()[1]] == [e.x for e in first]  # kept, not deleted
    config, evaluations = Journal(journal).read()
    assert config["metadata"]["noise_std"] == 0.1 and len(evaluations) == 3


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        # the surrogate's build check, then the run's check
        (["--surrogate-option", "nu=0"], "`nu` must be a real number > 0"),
        (["--budget", "4"], "--budget (4) exceeds the 3 points of Graph(3 nodes"),
    ],
)
def test_fresh_checks_every_setting_before_it_moves_the_journal(
    tmp_path, capsys, arguments, message
):
    (tmp_path / "triangle.txt").write_text("0 1\n1 2\n2 0\n")
    common = ["run", "--objective", "math:fsum", "--space", f"graph:{tmp_path / 'triangle.txt'}"]
    common += ["--budget", "3", "--initial-design", "2", "--out", str(tmp_path / "out"), "--quiet"]
    assert main(common) == 0
    before = sorted(p.name for p in (tmp_path / "out").iterdir())
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_info:
        main([*common, "--fresh", *arguments])
    assert message in _error_line(capsys, exit_info)
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == before  # nothing moved


def test_repeat_evaluated_lets_a_run_evaluate_more_points_than_a_graph_has(tmp_path, capsys):
    (tmp_path / "triangle.txt").write_text("0 1\n1 2\n2 0\n")
    common = ["run", "--objective", "math:fsum", "--space", f"graph:{tmp_path / 'triangle.txt'}"]
    common += ["--budget", "5", "--initial-design", "2", "--out", str(tmp_path), "--quiet"]
    with pytest.raises(SystemExit) as exit_info:
        main(common)
    err = _error_line(capsys, exit_info)
    assert "--budget (5) exceeds the 3 points" in err
    assert "or pass --repeat-evaluated to let evaluated points be proposed again" in err
    assert main([*common, "--repeat-evaluated"]) == 0
    config, evaluations = Journal(next(tmp_path.glob("*.journal.jsonl"))).read()
    assert config["exclude_evaluated"] is False
    with pytest.raises(SystemExit) as exit_info:
        main([*common[:6], "3", *common[7:]])  # the flag left out, a budget the graph holds
    err = _error_line(capsys, exit_info)
    assert "other settings: --repeat-evaluated: given in the journal's run, not now." in err
    nodes = [int(e.x[0]) for e in evaluations]
    assert len(nodes) == 5 and set(nodes) <= {0, 1, 2} and len(set(nodes)) < 5


def test_a_journal_of_another_objective_under_the_same_name_suggests_another_folder(
    tmp_path, monkeypatch, capsys
):
    (tmp_path / "sub").mkdir()
    for path in ("obj.py", "obj2.py", "sub/obj.py"):
        (tmp_path / path).write_text("def f(x):\n    return float(x[0])\n")
    monkeypatch.chdir(tmp_path)
    common = ["run", "--space", "sphere2", "--budget", "3", "--initial-design", "3", "--quiet"]
    assert main([*common, "--objective", "obj:f"]) == 0
    journal = Path("results", "f_sphere2_matern_qlognei_seed0.journal.jsonl")
    for other in ("obj2:f", "sub/obj.py:f"):
        with pytest.raises(SystemExit) as exit_info:
            main([*common, "--objective", other])
        err = _error_line(capsys, exit_info)
        assert f"{journal} holds the run of another objective (objective: 'obj:f' in the " in err
        assert f"journal, '{other}' now; objective_file: " in err
        assert "Give this run another folder with --out; --fresh would move the other run's" in err
    assert len(Journal(journal).read()[1]) == 3  # untouched


def test_another_spelling_of_the_space_resumes_the_same_run(tmp_path, monkeypatch, capsys):
    # " so3 * box2 " was refused as "the run of another objective (space: 'so3*box2' in the
    # journal, ' so3 * box2 ' now)", and "so3*box02" started a second journal
    (tmp_path / "spelling.py").write_text("def f(x):\n    return float(x[0] + x[-1])\n")
    monkeypatch.chdir(tmp_path)
    common = ["run", "--objective", "spelling.py:f", "--initial-design", "3", "--quiet"]
    assert main([*common, "--space", "so3*box2", "--budget", "3"]) == 0
    for spelling, budget in ((" so3 * box2 ", "4"), ("so3*box02", "5")):
        assert main([*common, "--space", spelling, "--budget", budget]) == 0
        assert "resuming results/f_so3-box2_matern_qlognei_seed0.journal.jsonl with " in (
            capsys.readouterr().out
        )
    path = Path("results", "f_so3-box2_matern_qlognei_seed0.journal.jsonl")
    assert list(Path("results").glob("*.journal.jsonl")) == [path]
    assert len(Journal(path).read()[1]) == 5
    # a journal written before specs were normalised holds the spelling as typed: the same
    # command resumes it (it was refused as "space: ' so3 * box2 ' in the journal, 'so3*box2' now")
    lines = path.read_text().splitlines(keepends=True)
    header = json.loads(lines[0])
    header["config"]["metadata"]["space"] = " so3 * box2 "
    path.write_text(json.dumps(header) + "\n" + "".join(lines[1:]))
    assert main([*common, "--space", " so3 * box2 ", "--budget", "6"]) == 0
    assert len(Journal(path).read()[1]) == 6


def test_a_full_disk_stops_the_run_and_prints_the_evaluations_it_could_not_write(
    tmp_path, capsys, monkeypatch
):
    """The message said "Nothing is lost: they are in memory and are written by the next `ask`"
    and the command exited (status 2, as for bad input) with the last evaluation, its point
    shortened, in memory only."""
    import errno

    from manibo.journal import JournalWriter

    append = JournalWriter.append

    def full_after_two(self, evaluation):
        if evaluation.index >= 2:
            raise OSError(errno.ENOSPC, "No space left on device")
        append(self, evaluation)

    monkeypatch.setattr(JournalWriter, "append", full_after_two)
    arguments = [*COMMON, "--out", str(tmp_path)]
    assert main(arguments) == 1  # the run failed; nothing the user typed was wrong
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("manibo: error: the run stopped: could not write to journal")
    assert "No space left on device" in err[0] and "1 evaluation(s) are not in it" in err[0]
    lost = json.loads(err[1])
    assert lost["index"] == 2 and len(err) == 2
    journal = tmp_path / f"{STEM}.journal.jsonl"
    assert len(Journal(journal).read()[1]) == 2
    monkeypatch.undo()  # room again: the user appends the printed line and runs again
    with journal.open("a") as f:
        f.write(err[1] + "\n")
    assert main(arguments) == 0
    evaluations = Journal(journal).read()[1]
    assert len(evaluations) == 3 and (evaluations[2].x, evaluations[2].y) == (lost["x"], lost["y"])


def test_a_full_disk_while_the_results_are_written_ends_with_one_error_line(
    tmp_path, capsys, monkeypatch
):
    """The figure's write on a full disk ended the command with a 37-line matplotlib/PIL
    traceback, and the results files were written in place: a full disk (or a kill) left a
    summary cut short where a whole one had been."""
    import errno

    import matplotlib.figure

    arguments = [*COMMON, "--out", str(tmp_path)]
    assert main(arguments) == 0
    capsys.readouterr()
    summary = tmp_path / f"{STEM}.json"
    whole = summary.read_bytes()
    real_write_text = Path.write_text

    def half_then_full(self, text, *args, **kwargs):
        real_write_text(self, text[: len(text) // 2], *args, **kwargs)
        raise OSError(errno.ENOSPC, "No space left on device")

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    for target, replacement in [
        (Path, ("write_text", half_then_full)),
        (matplotlib.figure.Figure, ("savefig", full)),
    ]:
        monkeypatch.setattr(target, *replacement)
        # the run resumes and extends its budget, then writes (the figure after the summary,
        # whose new version went beside the previous figure and text)
        assert main([*arguments, "--budget", "4"]) == 1
        err = capsys.readouterr().err
        assert err.startswith("manibo: error: could not write the results in ")
        assert "No space left on device" in err and "run the same command again" in err
        assert err.count("\n") == 1 and "Traceback" not in err
        assert summary.read_bytes() == whole  # the previous results, all of them
        monkeypatch.undo()
    assert sorted(p.name for p in tmp_path.iterdir() if "tmp" in p.name) == []
    assert main(arguments) == 0  # room again: the same command writes them
    assert summary.read_bytes().startswith(whole[:20]) and (tmp_path / f"{STEM}.png").exists()


def test_a_slow_set_up_is_reported(tmp_path, capsys, monkeypatch):
    """A 10,000-vertex mesh took 33 s before the first evaluation, without a word, and the
    summary's time (41 s) left it out of the run's 77 s."""
    import manibo.cli

    monkeypatch.setattr(manibo.cli, "SET_UP_NOTICE_SECONDS", 0.0)
    assert main([*COMMON, "--out", str(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert re.fullmatch(r"set-up: \d+\.\d s \(the space and its spectrum, .*\)", lines[0])
    monkeypatch.setattr(manibo.cli, "SET_UP_NOTICE_SECONDS", 1e9)
    assert main([*COMMON, "--out", str(tmp_path), "--budget", "4"]) == 0
    assert not any(line.startswith("set-up") for line in capsys.readouterr().out.splitlines())


def _refused_mkdir(self, *args, **kwargs):
    raise PermissionError(13, "Permission denied", str(self))


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--noise", "nan"], "--noise must be a finite number >= 0, got nan"),
        (["--noise", "-0.1"], "--noise must be a finite number >= 0, got -0.1"),
        (["--surrogate-option", "colour=1"], "unexpected keyword argument 'colour'"),
        (["--budget", "2"], "--budget (2) must be at least --initial-design (3)"),
        (["--seed", "-1"], "--seed must be an integer >= 0"),  # the flags, not the loop's names
        (["--q", "0"], "--q must be an integer >= 1"),
        (["--q", "20"], "--q (20) must be at most --budget (3): a batch of --q points does not"),
        (["--q", "99999999999"], "--q (99999999999) must be at most --budget (3)"),  # not OOM
        (["--initial-design", "0"], "--initial-design must be an integer >= 1, got 0"),
        (["--raw-samples", "4"], "--raw-samples (4) must be at least --num-restarts (8)"),
        (["--acquisition", "logei", "--q", "2"], "needs --q 1, got --q 2; use --q 1"),
        (["--out", "FILE"], "is a file, not a folder"),
        (["--out", "READONLY"], "cannot create the folder (Permission denied)"),
        (["--out", ""], "--out is empty; give a folder (--out . for the current one)"),
        (["--parallel", "0"], "--parallel must be at least 1, got 0"),
        (["--parallel", "2", "--q", "2"], "--q 2 would have no effect; drop --q"),
        (["--known-noise", "-1"], "--known-noise must be a number above 0 whose square"),
        (["--known-noise", "0.1", "--surrogate", "vish"], "offers no known noise variances"),
        (["--parallel", "2", "--noise", "0.1"], "--noise draws the noise of evaluation i from"),
        (
            ["--parallel", "2", "--acquisition", "logei"],
            "cannot account for points in flight, and --parallel 2; use --parallel 1 or a Monte",
        ),
    ],
)
def test_run_mistakes_end_with_one_error_line(tmp_path, capsys, monkeypatch, arguments, message):
    monkeypatch.chdir(tmp_path)  # --out "" wrote the journal and results here, silently
    target = tmp_path / "results"
    if "FILE" in arguments:
        target.write_text("")
    if "READONLY" in arguments:
        monkeypatch.setattr(Path, "mkdir", _refused_mkdir)
    arguments = [str(target) if a in ("FILE", "READONLY") else a for a in arguments]
    with pytest.raises(SystemExit) as exit_info:
        main([*COMMON, "--out", str(target), *arguments])
    assert message in _error_line(capsys, exit_info)
    assert not list(tmp_path.glob("**/*.jsonl"))  # refused before any journal


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (
            ["sphere-regression", "--num-train", "0"],
            "--num-train must be at least 2 (a GP needs observations to fit), got 0",
        ),
        (["--scenarios", "0"], "--scenarios must be at least 1 (a comparison needs a scenario)"),
        (["--workers", "0"], "--workers must be at least 1 (the missions need a process), got 0"),
        (["--budget", "0"], "--budget must be a finite number above 0 (the mission needs hours"),
        (["--budget", "inf"], "--budget must be a finite number above 0 (the mission needs hours"),
        (["search", "--out", "FILE"], "is a file, not a folder"),
        (["search", "--out", " "], "--out is empty; give a folder"),
        (["--num-train", "1"], "--num-train is an option of the sphere-regression demo"),
        (["sphere-regression", "--workers", "2"], "--workers is an option of the search demo"),
    ],
)
def test_demo_mistakes_end_with_one_error_line(tmp_path, capsys, monkeypatch, arguments, message):
    monkeypatch.chdir(tmp_path)
    target = tmp_path / "out"
    target.write_text("") if "FILE" in arguments else None
    arguments = [str(target) if a == "FILE" else a for a in arguments]
    out = [] if "--out" in arguments else ["--out", str(target)]
    with pytest.raises(SystemExit) as exit_info:
        main(["demo", *arguments, *out])
    assert message in _error_line(capsys, exit_info)


HOLD = """
import sys, time
from manibo.journal import JournalWriter
writer = JournalWriter(sys.argv[1])
print("locked", flush=True)
time.sleep(120)
"""


def test_a_second_run_on_the_same_journal_is_refused_naming_the_first(tmp_path, capsys):
    journal = tmp_path / f"{STEM}.journal.jsonl"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(journal)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline() == "locked\n"
        with pytest.raises(SystemExit) as exit_info:
            main([*COMMON, "--out", str(tmp_path)])
        err = _error_line(capsys, exit_info)
        assert f"already being written by process {holder.pid} on host" in err
        with pytest.raises(SystemExit) as exit_info:
            main([*COMMON, "--out", str(tmp_path), "--fresh"])  # --fresh does not take it away
        _error_line(capsys, exit_info)
    finally:
        holder.kill()
        holder.wait()
        holder.stdout.close()


CLI = "from manibo.cli import main\nmain(args[0])\n"


def _noisy_run(out):
    """``manibo run`` of a noisy problem, as a child of the fork server."""
    command = [*COMMON[:3], "--out", str(out), "--quiet"]
    return command + ["--budget", "9", "--initial-design", "4", "--noise", "0.1"]


def _evaluations(journal):
    try:
        return Journal(journal).read()[1]
    except Exception:
        return []


@pytest.mark.slow
def test_a_noisy_run_killed_and_resumed_observes_what_the_uninterrupted_run_observed(tmp_path):
    server = shared_fork_server(tmp_path / "children")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as in the children
    try:
        reference = server.start(CLI, _noisy_run(tmp_path / "reference"))
        assert server.wait(reference) == 0, server.stderr()
        expected = json.loads((tmp_path / "reference" / f"{STEM}.json").read_text())
        journal = tmp_path / "killed" / f"{STEM}.journal.jsonl"
        delays = random.Random(1)
        for _ in range(3):  # kill each run at a random moment after it has told one more
            before = len(_evaluations(journal))
            run = server.start(CLI, _noisy_run(tmp_path / "killed"))
            deadline = time.monotonic() + 300
            while len(_evaluations(journal)) <= before and server.poll(run) is None:
                assert time.monotonic() < deadline
                time.sleep(0.02)
            time.sleep(delays.uniform(0.0, 0.5))
            assert server.kill(run) in (-9, 0), server.stderr()
            told = _evaluations(journal)
            assert [e.y for e in told] == expected["observed"][: len(told)]
        finished = server.start(CLI, _noisy_run(tmp_path / "killed"))
        assert server.wait(finished) == 0, server.stderr()
    finally:
        torch.set_num_threads(threads)
    result = json.loads((tmp_path / "killed" / f"{STEM}.json").read_text())
    assert result["observed"] == expected["observed"]  # the same noise, draw for draw
    assert [e.x for e in _evaluations(journal)] == [
        e.x for e in _evaluations(tmp_path / "reference" / f"{STEM}.journal.jsonl")
    ]


KILLER = """\
import math, os, signal
from pathlib import Path

HERE = Path(__file__).parent


def f(x):
    calls = HERE / "calls"
    count = int(calls.read_text()) + 1 if calls.exists() else 1
    calls.write_text(str(count))
    kill_at = HERE / "kill_at"
    if kill_at.exists() and int(kill_at.read_text()) == count:
        os.kill(os.getpid(), signal.SIGKILL)  # the process dies in the middle of a batch
    return math.cos(1.7 * float(x[0])) + float(x[2]) ** 2
"""


@pytest.mark.slow
def test_a_run_killed_in_a_batch_resumes_to_the_uninterrupted_run(tmp_path, capsys):
    """--q 3, killed by SIGKILL after 1 of the 3 points of the second batch; the first resume has
    --budget 5, in the middle of the pending batch. (A kill after 2 of the 3 points, and other
    spaces, are resumed in tests/test_loop.py, through the same BayesianOptimizer.)"""
    script, stem = tmp_path / "killer.py", "f_sphere2_matern_qlognei_seed0"
    script.write_text(KILLER)

    def arguments(out, budget=9):
        command = ["run", "--objective", f"{script}:f", "--space", "sphere2", "--q", "3"]
        return command + ["--initial-design", "3", "--budget", str(budget), "--out", str(out)]

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as in the children
    try:
        server = shared_fork_server(tmp_path / "children")
        reference = server.start(CLI, arguments(tmp_path / "reference") + ["--quiet"])
        assert server.wait(reference) == 0, server.stderr()
        out = tmp_path / "killed"
        (tmp_path / "calls").write_text("0")
        (tmp_path / "kill_at").write_text(str(3 + 1 + 1))  # the 2nd point of the 2nd batch
        assert server.wait(server.start(CLI, arguments(out) + ["--quiet"])) == -9
        (tmp_path / "kill_at").unlink()
        journal = out / f"{stem}.journal.jsonl"
        assert len(Journal(journal).read()[1]) == 3 + 1
        assert main(arguments(out, budget=5) + ["--quiet"]) == 0
        printed = capsys.readouterr().out
        assert "4 evaluations and 2 asked point(s) not evaluated yet" in printed
        summary = json.loads((out / f"{stem}.json").read_text())
        assert summary["evaluations"] == len(summary["observed"]) == 5
        assert server.wait(server.start(CLI, arguments(out) + ["--quiet"])) == 0
        assert [e.x for e in Journal(journal).read()[1]] == [
            e.x for e in Journal(tmp_path / "reference" / f"{stem}.journal.jsonl").read()[1]
        ]
        summary = json.loads((out / f"{stem}.json").read_text())
        expected = json.loads((tmp_path / "reference" / f"{stem}.json").read_text())
        for key in ("observed", "best_x", "best_y", "recommended_x", "evaluations"):
            assert summary[key] == expected[key], key
    finally:
        torch.set_num_threads(threads)


# ---------------------------------------------------------------- your own objective
USER_MODULE = '''\
import torch

TARGET = torch.tensor([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]], dtype=torch.float64)


def f(x):
    """Squared Frobenius distance of a rotation (9 numbers) to TARGET."""
    return float(((x.reshape(3, 3) - TARGET.to(x)) ** 2).sum())
'''


@pytest.mark.slow
def test_run_optimises_a_function_of_a_package_outside_the_repository(tmp_path):
    (tmp_path / "mypkg").mkdir()
    (tmp_path / "mypkg" / "__init__.py").write_text("")
    (tmp_path / "mypkg" / "mod.py").write_text(USER_MODULE)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1]), "OMP_NUM_THREADS": "1"}
    command = [sys.executable, "-m", "manibo", "run", "--objective", "mypkg.mod:f"]
    command += ["--space", "so3", "--budget", "6", "--out", "out", "--quiet"]
    run = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-3000:]
    stem = tmp_path / "out" / "f_so3_matern_qlognei_seed0"
    written = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert written == [
        f"{stem.name}.{kind}"
        for kind in ("journal.jsonl", "journal.jsonl.lock", "json", "png", "txt")
    ]
    result = json.loads(stem.with_suffix(".json").read_text(), parse_constant=_refuse)
    assert result["config"]["metadata"] == {
        "objective": "mypkg.mod:f",
        "objective_file": str((tmp_path / "mypkg" / "mod.py").resolve()),
        "space": "so3",
    }
    assert len(result["observed"]) == 6 and result["best_y"] == min(result["observed"])
    # the values are the function's at the points, computed here independently
    target = torch.tensor([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]], dtype=torch.float64)
    told = Journal(stem.with_suffix(".journal.jsonl")).read()[1]
    points = torch.tensor([e.x for e in told], dtype=torch.float64)
    distances = ((points.reshape(-1, 3, 3) - target) ** 2).sum((1, 2))
    assert distances.tolist() == pytest.approx(result["observed"], rel=1e-12)
    summary = stem.with_suffix(".txt").read_text()
    assert summary.startswith("minimised on SpecialOrthogonal(3) with surrogate 'matern'")
    assert f"best observed value: {result['best_y']!r}" in summary and summary in run.stdout + "\n"
    assert stem.with_suffix(".png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _refuse(token):
    raise ValueError(f"non-standard JSON token {token}")


def test_run_maximises_a_function_in_a_file_and_writes_its_outputs(tmp_path, capsys):
    script = tmp_path / "costs.py"
    script.write_text("import math\n\ndef score(x):\n    return math.cos(float(x[0] - 1.0))\n")
    out = tmp_path / "out"
    arguments = ["run", "--objective", f"{script}:score", "--space", "torus2", "--maximize"]
    arguments += ["--budget", "4", "--initial-design", "4", "--out", str(out), "--quiet"]
    assert main(arguments) == 0
    stem = out / "score_torus2_matern_qlognei_seed0"
    result = json.loads(stem.with_suffix(".json").read_text(), parse_constant=_refuse)
    assert not result["minimize"] and result["best_y"] == max(result["observed"])
    printed = capsys.readouterr().out
    assert printed.startswith("maximised on Torus(2)") and "wrote " in printed
    assert stem.with_suffix(".png").exists() and stem.with_suffix(".txt").exists()


def test_an_objective_file_named_like_a_module_does_not_replace_it(tmp_path, monkeypatch):
    import json as real_json
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context

    from manibo.cli import load_objective

    monkeypatch.setitem(sys.modules, "json", real_json)  # put back whatever the code does
    (tmp_path / "json.py").write_text("def f(x):\n    return float(x[0])\n")
    first, _ = load_objective(f"{tmp_path / 'json.py'}:f")
    second, _ = load_objective(f"{tmp_path / 'json.py'}:f")
    assert sys.modules["json"] is real_json and hasattr(sys.modules["json"], "JSONEncoder")
    assert first.__module__ != second.__module__ and first([2.0]) == second([2.0]) == 2.0
    # registered under its own name: it can be pickled, and run by a (forked) process pool
    assert pickle.loads(pickle.dumps(first)) is first
    with ProcessPoolExecutor(1, mp_context=get_context("fork")) as pool:
        assert pool.submit(first, [3.0]).result() == 3.0


def test_an_objective_file_imports_the_modules_of_its_own_folder(tmp_path, monkeypatch, capsys):
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "cli_test_helpers.py").write_text("def g(x):\n    return float(x[0])\n")
    (tmp_path / "proj" / "costs.py").write_text(
        "from cli_test_helpers import g\n\ndef score(x):\n    return g(x)\n"
    )
    monkeypatch.chdir(tmp_path)  # as `python proj/costs.py` would, from the folder above
    arguments = ["run", "--objective", "proj/costs.py:score", "--space", "sphere2", "--quiet"]
    assert main([*arguments, "--budget", "3", "--initial-design", "3", "--out", "out"]) == 0


def test_a_space_registered_by_the_objectives_module_is_a_space_of_the_run(
    tmp_path, monkeypatch, capsys
):
    """Bounds of the user's own (the built-in specs carry none), as the tutorial shows."""
    from manibo.spaces import registry

    monkeypatch.setattr(registry.SPACES, "_objects", dict(registry.SPACES._objects))
    (tmp_path / "gains.py").write_text(
        "from manibo.spaces import Box, register_space\n\n"
        "register_space('cli-test-gains')(lambda: Box([0.0, 0.0], [5.0, 1.0]))\n\n"
        "def cost(x):\n    return float((x[-2] - 3.2) ** 2 + (x[-1] - 0.4) ** 2)\n"
    )
    monkeypatch.chdir(tmp_path)
    arguments = ["run", "--objective", "gains.py:cost", "--space", "so3*cli-test-gains"]
    assert main([*arguments, "--budget", "3", "--initial-design", "3", "--out", "o"]) == 0
    points = json.loads(next((tmp_path / "o").glob("*.json")).read_text())["points"]
    assert len(points[0]) == 11 and max(p[9] for p in points) > 1.0  # kp ranges over [0, 5]


@pytest.mark.parametrize("module", ["random", "json.decoder"])
def test_a_module_name_that_finds_another_module_than_the_folders_file_says_so(
    tmp_path, monkeypatch, capsys, module
):
    (tmp_path / "random.py").write_text("def f(x):\n    return float(x[0])\n")
    (tmp_path / "json").mkdir()
    (tmp_path / "json" / "__init__.py").write_text("")
    (tmp_path / "json" / "decoder.py").write_text("def f(x):\n    return float(x[0])\n")
    monkeypatch.chdir(tmp_path)
    arguments = ["run", "--objective", f"{module}:f", "--space", "sphere2", "--out", "out"]
    with pytest.raises(SystemExit) as exit_info:
        main(arguments)
    err = _error_line(capsys, exit_info)
    top = module.partition(".")[0]
    assert f"the module '{top}' is {sys.modules[top].__file__}, not " in err
    path = "./random.py" if module == "random" else "./json/decoder.py"
    assert err.endswith(f"give the file's path instead: --objective {path}:f\n")


def test_warnings_reach_the_command_user_as_one_line_each_named_by_their_origin(
    tmp_path, monkeypatch, capsys
):
    # the objective's (and a library's) warnings were shown as "manibo: warning: ...", taken for
    # manibo's own; they now say their category, file and line, and manibo's keep their prefix
    script = tmp_path / "warns.py"
    script.write_text(
        "import warnings\n\ndef f(x):\n    warnings.warn('the solver is slow')\n"
        "    return float(x[0])\n"
    )
    monkeypatch.chdir(tmp_path)
    arguments = ["run", "--objective", "warns.py:f", "--space", "sphere2", "--quiet"]
    with warnings.catch_warnings():
        warnings.simplefilter("always", UserWarning)
        main([*arguments, "--budget", "3", "--initial-design", "3", "--out", "out"])
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert lines.count("warning: the solver is slow (UserWarning at warns.py:4)") == 3, err
    library = f"{Path(torch.__file__).parent.parent}/torch/nn/modules/module.py"
    from manibo.cli import _show_warning
    from manibo.exceptions import TruncationWarning

    _show_warning("old API", DeprecationWarning, library, 17)
    _show_warning("few levels", TruncationWarning, str(script), 4)
    assert capsys.readouterr().err.splitlines() == [
        "warning: old API (DeprecationWarning at torch/nn/modules/module.py:17)",
        "manibo: warning: few levels",
    ]


def test_the_proposal_summary_advises_flags_the_command_has(tmp_path, monkeypatch, capsys):
    """The summary of BoTorch's warnings advised raising `raw_samples`, which ``manibo run``
    could not set: it has --num-restarts and --raw-samples, and the advice names them."""
    from manibo.models import registry

    monkeypatch.setattr(registry.SURROGATES, "_objects", dict(registry.SURROGATES._objects))
    (tmp_path / "hard.py").write_text(
        "import warnings\n"
        "from botorch.exceptions.warnings import OptimizationWarning\n"
        "from manibo.models import build_surrogate, register_surrogate\n\n"
        "@register_surrogate('cli-test-hard')\n"
        "def hard(space, train_X, train_Y, **options):\n"
        "    warnings.warn('`scipy_minimize` terminated with FAILURE', OptimizationWarning)\n"
        "    return build_surrogate('matern', space, train_X, train_Y, **options)\n\n"
        "def f(x):\n    return float(x[0])\n"
    )
    monkeypatch.chdir(tmp_path)
    arguments = ["run", "--objective", "hard.py:f", "--space", "sphere2", "--quiet"]
    arguments += ["--surrogate", "cli-test-hard", "--budget", "4", "--initial-design", "3"]
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        assert main([*arguments, "--num-restarts", "2", "--raw-samples", "16", "--out", "o"]) == 0
    err = capsys.readouterr().err
    assert "raise --num-restarts" in err and "--raw-samples" in err and "`raw_samples`" not in err
    config = json.loads(next((tmp_path / "o").glob("*.json")).read_text())["config"]
    assert (config["num_restarts"], config["raw_samples"]) == (2, 16)


def test_an_empty_graph_file_gives_manibos_error_only(tmp_path, capsys):
    (tmp_path / "empty.txt").write_text("")
    arguments = ["run", "--objective", "math:fsum", "--space", f"graph:{tmp_path / 'empty.txt'}"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(SystemExit) as exit_info:
            main([*arguments, "--out", str(tmp_path / "out")])
    assert "the edge list holds no edge" in _error_line(capsys, exit_info)
    assert [str(w.message) for w in caught] == []


def test_a_run_in_which_every_evaluation_failed_exits_1_and_writes_the_messages(tmp_path, capsys):
    script = tmp_path / "fails.py"
    script.write_text(
        "import manibo\n\ndef f(x):\n    raise manibo.EvaluationFailed(f'diverged at {x[0]:.3f}')\n"
    )
    out = tmp_path / "out"
    arguments = ["run", "--objective", f"{script}:f", "--space", "sphere2", "--quiet"]
    assert main([*arguments, "--budget", "3", "--initial-design", "3", "--out", str(out)]) == 1
    result = json.loads((out / "f_sphere2_matern_qlognei_seed0.json").read_text())
    assert result["best_x"] is None and result["observed"] == [None] * 3
    assert result["errors"] == [
        f"EvaluationFailed: diverged at {p[0]:.3f}" for p in result["points"]
    ]
    err = capsys.readouterr().err
    assert err.startswith("manibo: error: no evaluation succeeded (3 of 3 failed; the last: ")
    assert err.count("\n") == 1 and result["errors"][-1] in err  # said once, not also warned


def test_on_error_records_the_named_exceptions_and_refuses_names_that_are_not_exceptions(
    tmp_path, capsys
):
    # the crash note advised run(..., on_error=...), which `manibo run` had no flag for
    script = tmp_path / "solver.py"
    script.write_text(
        "class Diverged(Exception):\n    pass\n\n\ndef f(x):\n    if x[0] > 0:\n"
        "        raise Diverged('diverged')\n    if x[1] > 0.9:\n"
        "        raise TimeoutError('slow')\n    return float(x[2])\n"
    )
    arguments = ["run", "--objective", f"{script}:f", "--space", "sphere2", "--quiet"]
    arguments += ["--budget", "8", "--initial-design", "8"]
    flags = ["--on-error", "Diverged", "--on-error", "TimeoutError"]
    assert main([*arguments, *flags, "--out", str(tmp_path / "out")]) == 0
    result = json.loads((tmp_path / "out" / "f_sphere2_matern_qlognei_seed0.json").read_text())
    failed = [e for e in result["errors"] if e is not None]
    assert len(result["errors"]) == 8 and failed
    assert all(e in ("Diverged: diverged", "TimeoutError: slow") for e in failed), failed
    for name, why in (
        ("Nope", "the --objective's module or Python's built-ins has no exception of that name"),
        ("KeyboardInterrupt", "not a subclass of Exception (Ctrl-C and SystemExit always stop"),
        ("print", "it names <built-in function print>, not a subclass of Exception"),
        (f"{script}:Diverged", "by its name alone (--on-error Diverged)"),
    ):
        with pytest.raises(SystemExit) as exit_info:
            main([*arguments, "--on-error", name, "--out", str(tmp_path / name.replace("/", "-"))])
        assert why in _error_line(capsys, exit_info)
        assert not (tmp_path / name.replace("/", "-")).exists()  # refused before any evaluation
    with pytest.raises(SystemExit):
        main([*arguments, "--out", str(tmp_path / "unnamed")])
    assert "Diverged: diverged" in (err := capsys.readouterr().err)
    assert "--on-error with manibo run." in err


def test_on_error_finds_the_objective_s_own_classes_however_the_objective_is_made(
    tmp_path, monkeypatch, capsys
):
    # a functools.partial objective names functools as its module, so a bare name was not found;
    # MODULE:CLASS naming the objective's file imported it a second time, and its class (another
    # object) caught nothing: the run crashed at the first Diverged
    (tmp_path / "solver3.py").write_text(
        "import functools\n\n\nclass Diverged(Exception):\n    pass\n\n\n"
        "def g(x, scale):\n    if x[0] > 0:\n        raise Diverged('diverged')\n"
        "    return float(scale * x[2])\n\n\nf = functools.partial(g, scale=2.0)\n"
    )
    (tmp_path / "entry.py").write_text("from solver3 import f  # noqa: F401\n")  # re-exported
    monkeypatch.chdir(tmp_path)
    for k, (objective, name) in enumerate(
        [(o, n) for o in ("solver3.py:f", "entry.py:f") for n in ("Diverged", "solver3:Diverged")]
    ):
        arguments = ["run", "--objective", objective, "--space", "sphere2", "--quiet"]
        arguments += ["--budget", "6", "--initial-design", "6"]
        assert main([*arguments, "--on-error", name, "--out", f"out{k}"]) == 0
        result = json.loads(Path(f"out{k}/f_sphere2_matern_qlognei_seed0.json").read_text())
        assert "Diverged: diverged" in result["errors"]
    for name, why in (
        ("solver3:Nope", "module 'solver3' has no exception of that name"),
        ("nosuchmod:Diverged", "cannot import 'nosuchmod': no module of that name is found"),
    ):
        with pytest.raises(SystemExit) as exit_info:
            main([*arguments, "--on-error", name, "--out", "refused"])
        assert why in _error_line(capsys, exit_info)


OBJECTIVE_MODULES = {
    "cli_test_imports_missing": "import nonexistent_pkg_zz\n\ndef f(x):\n    return 1.0\n",
    "cli_test_syntax": "def f(x):\n    return 1.0 +\n",
    "cli_test_name_error": "def f(x):\n    return float(x[0]) + undefined_name\n",
    "cli_test_returns_none": "def f(x):\n    print(x)\n",
}


@pytest.mark.parametrize(
    ("reference", "expected"),
    [
        (
            "cli_test_imports_missing:f",
            'cli_test_imports_missing.py", line 1, in <module>\n    import nonexistent_pkg_zz\n'
            "ModuleNotFoundError: No module named 'nonexistent_pkg_zz'\n",
        ),
        ("cli_test_syntax:f", 'cli_test_syntax.py", line 2\n'),
        ("cli_test_syntax.py:f", 'cli_test_syntax.py", line 2\n'),
        (
            "cli_test_name_error:f",
            'cli_test_name_error.py", line 2, in f\n    return float(x[0]) + undefined_name\n',
        ),
        ("cli_test_returns_none:f", "manibo: error: the objective returned NoneType None at x"),
    ],
)
def test_an_error_of_the_objectives_code_shows_that_code_and_exits_1(
    tmp_path, monkeypatch, capsys, reference, expected
):
    for name, text in OBJECTIVE_MODULES.items():
        (tmp_path / f"{name}.py").write_text(text)
    monkeypatch.chdir(tmp_path)
    arguments = ["run", "--objective", reference, "--space", "sphere2", "--quiet"]
    with pytest.raises(SystemExit) as exit_info:
        main([*arguments, "--budget", "3", "--initial-design", "3", "--out", "out"])
    err = capsys.readouterr().err
    assert exit_info.value.code == 1 and expected in err
    assert "cli.py" not in err and "loop.py" not in err and "importlib" not in err
    if "syntax" in reference:
        assert err.endswith("SyntaxError: invalid syntax\n") and "Traceback" not in err
    if "none" in reference:
        assert err.count("\n") == 1


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ([], "give either --problem NAME"),
        (["--problem", "ackley-sphere2", "--objective", "m:f"], "give either --problem NAME"),
        (["--objective", "m:f"], "--objective needs --space SPEC"),
        (["--problem", "ackley-sphere2", "--space", "so3"], "--space goes with --objective"),
        (["--problem", "ackley-sphere2", "--maximize"], "--maximize goes with --objective"),
        (["--objective", "nocolon", "--space", "so3"], "must look like MODULE:FUNCTION"),
        (["--objective", "m:f", "--space", "so3", "--noise", "0.1"], "--noise adds noise"),
        (["--objective", "no_such_module_x:f", "--space", "so3"], "cannot import"),
        (["--objective", "json:no_function", "--space", "so3"], "has no function 'no_function'"),
        (["--objective", "math:pi", "--space", "so3"], "has no function 'pi' (it is a float)"),
        (["--objective", "math:cos", "--space", "klein-bottle"], "unknown space 'klein-bottle'"),
        (["--objective", "math:cos", "--space", "sphere2*"], "a product has an empty factor"),
        (
            ["--problem", "ackley-sphere2", "--max-seconds", "0"],
            "--max-seconds must be a positive number of seconds, got 0.0",
        ),
    ],
)
def test_run_objective_mistakes_end_with_one_error_line(tmp_path, capsys, arguments, message):
    with pytest.raises(SystemExit) as exit_info:
        main(["run", *arguments, "--budget", "4", "--initial-design", "3", "--out", str(tmp_path)])
    assert message in _error_line(capsys, exit_info)
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["run", "--budget", "6.5"], "--budget must be an integer, got '6.5'."),
        (["run", "--budget", "abc"], "--budget must be an integer, got 'abc'."),
        (["run", "--q", "x"], "--q must be an integer, got 'x'."),
        (["run", "--seed", "1.5"], "--seed must be an integer, got '1.5'."),
        (["run", "--noise", "loud"], "--noise must be a number, got 'loud'."),
        (["run", "--budget"], "--budget needs a value."),
        (
            ["run", "--optimizer", "lbfgs"],
            "--optimizer must be one of 'riemannian', 'projection', got 'lbfgs'.",
        ),
        (
            ["demo", "nosuch"],
            "manibo demo NAME must be one of 'search', 'sphere-regression', got 'nosuch'.",
        ),
        (["demo", "--budget", "long"], "--budget must be a number, got 'long'."),
        (["frobnicate"], "manibo COMMAND must be one of 'info', 'demo', 'run', 'bench', got"),
    ],
)
def test_a_value_that_does_not_fit_its_argument_ends_with_one_error_line(
    capsys, arguments, message
):
    with pytest.raises(SystemExit) as exit_info:
        main(arguments)
    assert _error_line(capsys, exit_info).startswith(f"manibo: error: {message}")


def test_help_is_plain_text_and_a_wrong_option_shows_its_command_usage(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    text = capsys.readouterr().out
    assert "manibo run keeps a journal in --out" in " ".join(text.split()) and "``" not in text
    # a `manibo: error:` line is status 1 where the run failed (the objective returned None),
    # not only status 2 (bad arguments) as the help said
    for said in (
        "2, manibo refused the input (arguments, settings, a resume with other settings, data off "
        "the space), told in one manibo: error: ... line without a traceback",
        "1, the run failed: an error in the code of your objective shows its traceback, and an "
        "objective that returns something other than one number, or a run in which no "
        "evaluation succeeded, ends with one manibo: error: ... line",
    ):
        assert said in " ".join(text.split())
    with pytest.raises(SystemExit) as exit_info:
        main(["run", "--problem", "ackley-sphere2", "--budget2", "3"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: manibo run [-h]")
    assert err.endswith("manibo run: error: unrecognized arguments: --budget2 3\n")


def test_run_help_lists_spaces_surrogates_acquisitions_problems_and_defaults(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["run", "--help"])
    assert exit_info.value.code == 0
    text = capsys.readouterr().out
    for name in ("sphere<d>", "so3", "graph:FILE", "matern", "vish", "qlognei", "qkg"):
        assert name in text
    for name in ("ackley-sphere<d>", "orientation-so3", "(default: matern)", "(default: 100)"):
        assert name in text


def test_a_problem_without_a_minimum_is_refused_before_the_run(tmp_path, capsys, monkeypatch):
    from manibo.problems import SpaceProblem, register_problem
    from manibo.problems.registry import PROBLEMS
    from manibo.spaces import Torus

    class NoMinimum(SpaceProblem):
        name, space = "test-cli-no-minimum", Torus(2)

        def evaluate_true(self, x):
            return (1 - torch.cos(x)).sum(-1)

        @property
        def optimizers(self):
            raise NotImplementedError

    monkeypatch.setattr(PROBLEMS, "_objects", dict(PROBLEMS._objects))
    register_problem("test-cli-no-minimum")(NoMinimum)
    arguments = ["run", "--problem", "test-cli-no-minimum", "--budget", "4"]
    with pytest.raises(SystemExit) as exit_info:
        main([*arguments, "--initial-design", "3", "--quiet", "--out", str(tmp_path / "out")])
    assert "`optimal_value` of problem `test-cli-no-minimum`" in _error_line(capsys, exit_info)
    assert not list(tmp_path.glob("**/*.jsonl"))  # refused before the first evaluation


# ---------------------------------------------------------------- start-up: fast, and Ctrl-C
PROBE = """
import sys
from manibo.cli import main
try:
    main(sys.argv[1:])
except SystemExit as exit:
    print(exit.code, "torch" in sys.modules)
"""


@pytest.mark.parametrize(
    "arguments", [["--help"], ["run", "--budget", "abc"], ["demo", "--seed", "x"]]
)
def test_help_and_argument_mistakes_import_no_torch(arguments):
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])}
    probe = subprocess.run(
        [sys.executable, "-c", PROBE, *arguments], env=env, capture_output=True, text=True
    )
    assert probe.stdout.splitlines()[-1] == f"{0 if '--help' in arguments else 2} False"


@pytest.mark.parametrize(
    ("command", "wait"),
    [
        (["info"], 0.3),
        (["info"], 0.6),
        (["info"], 0.9),
        (["run", "--problem", "ackley-sphere2"], 0.5),
        (["run", "--problem", "ackley-sphere2"], 1.0),
    ],
)
def test_ctrl_c_while_manibo_starts_gives_the_one_line(command, wait, tmp_path):
    process = _manibo_process(*command, *(["--out", str(tmp_path)] if "run" in command else []))
    try:
        time.sleep(wait)  # importing torch and the surrogates takes seconds: it is under way
        os.killpg(process.pid, signal.SIGINT)
        out, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    # the resume is promised only where the journal exists (at 0.5 s it did not, yet was)
    written = list(tmp_path.glob("*.journal.jsonl"))
    resume = "; the same command resumes the run from its journal" if written else ""
    assert (process.returncode, err) == (130, f"\nmanibo: interrupted{resume}\n")


def test_the_same_objective_spelled_otherwise_or_run_from_another_folder_resumes_its_run(
    tmp_path, monkeypatch, capsys
):
    # `panel:f` run in the folder of panel.py, then `/abs/panel.py:f` from another folder, was
    # refused as "the run of another objective (objective: 'panel:f' in the journal, ...)"
    (tmp_path / "panel.py").write_text("def f(x):\n    return float(x[0])\n")
    (tmp_path / "elsewhere").mkdir()
    out = tmp_path / "results"
    common = ["run", "--space", "sphere2", "--initial-design", "3", "--quiet", "--out", str(out)]
    monkeypatch.chdir(tmp_path)
    assert main([*common, "--objective", "panel:f", "--budget", "3"]) == 0
    monkeypatch.chdir(tmp_path / "elsewhere")
    for spelling, budget in ((f"{tmp_path / 'panel.py'}:f", "4"), ("../panel.py:f", "5")):
        assert main([*common, "--objective", spelling, "--budget", budget]) == 0
        assert "resuming " in capsys.readouterr().out
    journal = out / "f_sphere2_matern_qlognei_seed0.journal.jsonl"
    config, evaluations = Journal(journal).read()
    assert len(evaluations) == 5
    assert config["metadata"]["objective"] == "panel:f"  # as first spelled
    assert config["metadata"]["objective_file"] == str((tmp_path / "panel.py").resolve())
    # another file of the same name and content is another objective
    (tmp_path / "elsewhere" / "panel.py").write_text("def f(x):\n    return float(x[0])\n")
    with pytest.raises(SystemExit) as exit_info:
        main([*common, "--objective", "./panel.py:f", "--budget", "6"])
    assert "objective_file: " in _error_line(capsys, exit_info)
    assert len(Journal(journal).read()[1]) == 5


def test_a_journal_without_the_objective_file_of_an_older_version_resumes(
    tmp_path, monkeypatch, capsys
):
    # journals written before the objective's file was recorded were refused as "a run with other
    # settings: metadata.objective_file: (not set) in the journal, '.../older.py' now"
    (tmp_path / "older.py").write_text("def f(x):\n    return float(x[0])\n")
    monkeypatch.chdir(tmp_path)
    common = ["run", "--space", "sphere2", "--initial-design", "3", "--quiet"]
    assert main([*common, "--objective", "older.py:f", "--budget", "3"]) == 0
    journal = Path("results", "f_sphere2_matern_qlognei_seed0.journal.jsonl")
    lines = journal.read_text().splitlines(keepends=True)
    header = json.loads(lines[0])
    del header["config"]["metadata"]["objective_file"]
    journal.write_text(json.dumps(header) + "\n" + "".join(lines[1:]))
    assert main([*common, "--objective", "older.py:f", "--budget", "4"]) == 0
    config, evaluations = Journal(journal).read()
    assert len(evaluations) == 4 and "objective_file" not in config["metadata"]


def test_the_same_spelling_resumes_after_the_project_folder_moved(tmp_path, monkeypatch, capsys):
    # the recorded file no longer exists where it was: the run was refused as "another objective
    # (objective_file: '.../before/moving.py' in the journal, '.../after/moving.py' now)"
    (tmp_path / "before").mkdir()
    (tmp_path / "before" / "moving.py").write_text("def f(x):\n    return float(x[0])\n")
    monkeypatch.chdir(tmp_path / "before")
    common = ["run", "--space", "sphere2", "--initial-design", "3", "--quiet"]
    assert main([*common, "--objective", "moving.py:f", "--budget", "3"]) == 0
    (tmp_path / "before").rename(tmp_path / "after")
    monkeypatch.chdir(tmp_path / "after")
    assert main([*common, "--objective", "moving.py:f", "--budget", "4"]) == 0
    journal = Path("results", "f_sphere2_matern_qlognei_seed0.journal.jsonl")
    assert len(Journal(journal).read()[1]) == 4


@pytest.mark.parametrize("where", ["evaluation", "import"])
@pytest.mark.parametrize("code", [0, 3])
def test_an_objective_that_calls_sys_exit_ends_the_run_with_status_1_and_its_line(
    tmp_path, monkeypatch, capsys, where, code
):
    # sys.exit(0) in the objective ended `manibo run` with status 0, no message and no results
    body = f"import sys\n\ndef f(x):\n    sys.exit({code})\n"
    if where == "import":
        body = f"import sys\nsys.exit({code})\n\ndef f(x):\n    return 0.0\n"
    (tmp_path / "quits.py").write_text(body)
    monkeypatch.chdir(tmp_path)
    arguments = ["run", "--objective", "quits.py:f", "--space", "sphere2", "--quiet"]
    with pytest.raises(SystemExit) as exit_info:
        main([*arguments, "--budget", "4", "--initial-design", "3"])
    err = capsys.readouterr().err
    assert exit_info.value.code == 1
    who = "module of --objective quits.py:f" if where == "import" else "objective"
    assert f"ObjectiveExitedError: the {who} called sys.exit({code})" in err
    assert f'quits.py", line {4 if where == "evaluation" else 2}' in err and "cli.py" not in err
    assert "--on-error" not in err  # a sys.exit() is no failure to record: that advice misled


def test_results_are_written_where_asked_after_the_objective_changes_folder(
    tmp_path, monkeypatch, capsys
):
    # os.chdir("/") in the objective made the run fail writing results/...json (a relative path)
    (tmp_path / "wanders.py").write_text(
        "import os\n\ndef f(x):\n    os.chdir('/')\n    return float(x[0])\n"
    )
    monkeypatch.chdir(tmp_path)
    common = ["run", "--objective", "wanders.py:f", "--space", "sphere2", "--quiet"]
    assert main([*common, "--budget", "3", "--initial-design", "3"]) == 0
    written = sorted(p.suffix for p in (tmp_path / "results").iterdir())
    assert written == [".json", ".jsonl", ".lock", ".png", ".txt"]
    assert "wrote results/f_sphere2_matern_qlognei_seed0.json" in capsys.readouterr().out


def test_a_relative_module_name_is_refused_in_one_line(tmp_path, monkeypatch, capsys):
    # `.kw:f` gave an ImportError traceback ("no package specified for '.kw'")
    monkeypatch.chdir(tmp_path)
    for reference in (".kw:f", "pkg..mod:f", "my-module:f"):
        with pytest.raises(SystemExit) as exit_info:
            main(["run", "--objective", reference, "--space", "sphere2", "--budget", "5"])
        err = _error_line(capsys, exit_info)
        assert "--objective must look like MODULE:FUNCTION" in err and reference in err


@pytest.mark.parametrize("suffix", [".txt", ".csv", ".json", ".npy"])
def test_initial_points_from_a_file_are_evaluated_first(tmp_path, capsys, suffix):
    import numpy as np

    points = [[0.0, 0.0, 1.0], [0.6, 0.0, 0.8]]
    file = tmp_path / f"points{suffix}"
    if suffix == ".npy":
        np.save(file, np.array(points))
    elif suffix == ".json":
        file.write_text(json.dumps(points))
    else:
        separator = "," if suffix == ".csv" else " "
        file.write_text("".join(separator.join(map(str, p)) + "\n" for p in points))
    out = tmp_path / "results"
    args = [*COMMON, "--budget", "4", "--initial-points", str(file), "--out", str(out)]
    assert main(args) == 0
    summary = json.loads(next(out.glob("*.json")).read_text())
    assert summary["points"][:2] == points
    assert summary["config"]["initial_points"] == points


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "--initial-points MISSING: cannot read points from it"),
        ("0 0 2\n", "--initial-points holds points off Sphere(2)"),
        (
            "0 0\n",
            "--initial-points must have shape (*batch, 3) for points of Sphere(2), got (1, 2)",
        ),
        ("a b c\n", "--initial-points POINTS: cannot read points from it"),
    ],
    ids=["missing", "off-the-space", "shape", "not-numbers"],
)
def test_unreadable_initial_points_end_with_one_error_line(tmp_path, capsys, content, message):
    file = tmp_path / ("MISSING" if content is None else "POINTS")
    if content is not None:
        file.write_text(content)
    out = tmp_path / "results"
    with pytest.raises(SystemExit) as exit_info:
        main([*COMMON, "--initial-points", str(file), "--out", str(out)])
    assert message.replace("MISSING", str(file)).replace("POINTS", str(file)) in _error_line(
        capsys, exit_info
    )
    assert not list(tmp_path.glob("**/*.jsonl"))


def test_a_graph_spec_with_eigenpairs_runs_and_resumes_with_them(tmp_path, capsys):
    """graph:FILE?eigenpairs=K: the run keeps K eigenpairs, and a resume from the journal (whose
    metadata records the spec) rebuilds the same space."""
    from manibo import BayesianOptimizer
    from manibo.exceptions import TruncationWarning

    (tmp_path / "path.txt").write_text("".join(f"{i} {i + 1}\n" for i in range(7)))
    spec = f"graph:{tmp_path / 'path.txt'}?eigenpairs=3"
    common = ["run", "--objective", "math:fsum", "--space", spec, "--initial-design", "2"]
    common += ["--out", str(tmp_path / "out"), "--quiet"]
    advice = r"keeps the lowest 3 of its 8 eigenpairs.*graph:FILE\?eigenpairs=8 or mesh:FILE"
    with warnings.catch_warnings():
        warnings.simplefilter("always", TruncationWarning)
        assert main([*common, "--budget", "3"]) == 0
    assert re.search(advice, capsys.readouterr().err)  # the fit needs more: says the spelling
    journal = next((tmp_path / "out").glob("*.journal.jsonl"))
    config, evaluations = Journal(journal).read()
    assert config["metadata"]["space"] == spec and len(evaluations) == 3
    resumed = BayesianOptimizer.resume(journal)
    assert resumed.space.num_levels_available == 3
    resumed.close()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TruncationWarning)
        assert main([*common, "--budget", "4"]) == 0  # the CLI resumes the run too
    assert len(Journal(journal).read()[1]) == 4


def test_a_new_run_with_initial_points_does_not_say_it_resumes(tmp_path, capsys):
    file = tmp_path / "points.txt"
    file.write_text("0 0 1\n0 1 0\n")
    out = tmp_path / "results"
    assert main([*COMMON, "--initial-points", str(file), "--out", str(out)]) == 0
    assert "resuming" not in capsys.readouterr().out


def test_initial_points_given_as_matrices_are_flattened_row_major(tmp_path, capsys):
    import numpy as np

    from manibo.spaces import SpecialOrthogonal

    rotations = SpecialOrthogonal(3).random(2, generator=0).reshape(2, 3, 3)
    file = tmp_path / "rotations.npy"
    np.save(file, rotations.numpy())
    (tmp_path / "cost.py").write_text("def f(x):\n    return float(x[0])\n")
    out = tmp_path / "results"
    arguments = ["run", "--objective", f"{tmp_path / 'cost.py'}:f", "--space", "so3", "--quiet"]
    arguments += ["--budget", "3", "--initial-design", "3", "--out", str(out)]
    assert main([*arguments, "--initial-points", str(file)]) == 0
    summary = json.loads(next(out.glob("*.json")).read_text())
    assert summary["points"][:2] == rotations.reshape(2, 9).tolist()


def test_an_empty_initial_points_file_is_refused_in_one_line_without_numpys_warning(
    tmp_path, capsys
):
    file = tmp_path / "empty.txt"
    file.write_text("")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's "input contained no data" must not reach users
        with pytest.raises(SystemExit) as exit_info:
            main([*COMMON, "--initial-points", str(file), "--out", str(tmp_path / "results")])
    assert f"--initial-points {file}: the file holds no points" in _error_line(capsys, exit_info)
    number = tmp_path / "number.json"  # a single number is no table of points
    number.write_text("5")
    with pytest.raises(SystemExit) as exit_info:
        main([*COMMON, "--initial-points", str(number), "--out", str(tmp_path / "results")])
    assert "holds no points (a table of them" in _error_line(capsys, exit_info)
