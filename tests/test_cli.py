"""The command line: ``manibo info`` prints versions; unknown commands fail with usage."""

import pytest
import torch

from manibo.cli import main


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
    assert (tmp_path / "ackley-sphere2_matern_qlognei_seed0.journal.jsonl").exists()
    assert (
        main(args[:3] + ["--budget", "7"] + args[5:]) == 0
    )  # same command, larger budget: resumes
    assert "resuming" in capsys.readouterr().out
    result = json.loads((tmp_path / "ackley-sphere2_matern_qlognei_seed0.json").read_text())
    assert len(result["simple_regret"]) == 7


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
        (["--workers", "0"], "workers >= 1"),
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
