"""The kernel-speed benchmark at smoke size on every space: complete JSON, PNGs and GPU columns."""

import copy
import json
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

BENCHMARKS = Path(__file__).parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import doc_tables  # noqa: E402
import kernel_speed  # noqa: E402
from _kernel_cases import CASES  # noqa: E402


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    """The smoke run of every space, inline in this process (the script itself runs as the
    workers of test_cases_run_in_fresh_processes)."""
    out = tmp_path_factory.mktemp("kernel_speed")
    assert kernel_speed.main(["--smoke", "--device", "auto", "--out", str(out)]) == 0
    return out


def _load(folder, space):
    return json.loads((folder / f"kernel_speed_{space}.json").read_text())


@pytest.mark.parametrize("space", list(CASES))
def test_every_space_is_measured_and_checked(smoke, space):
    data = _load(smoke, space)
    assert (smoke / f"kernel_speed_{space}.png").stat().st_size > 0
    config, env = data["config"], data["environment"]
    assert config["smoke"] is True and config["inline"] is True
    assert config["devices"] == (["cpu", "cuda"] if torch.cuda.is_available() else ["cpu"])
    for key in ("versions", "cpu_model", "cpu_cores", "torch_threads", "gpu", "python"):
        assert key in env
    assert all(load is not None for load in data["load_average_start_end"])

    case = CASES[space]
    names = ["manibo"] + (["naive_torch"] if case.naive else [])
    for device in config["devices"]:
        for name in names:
            runs = data["results"][device][name]
            assert [run["n"] for run in runs] == config["sizes"]
            for run in runs:
                assert "error" not in run, run
                assert run["time_s"] > 0 and run["cpu_time_s"] >= 0
                assert run["peak_memory_bytes"] >= 0
                if case.homogeneous:
                    assert run["max_abs_diagonal_minus_one"] < 1e-10
                else:  # meshes and graphs: k(x, x) = 1 on average over the space
                    assert abs(run["diagonal_mean"] - 1) < 0.3
        assert data["results"][device]["geometric_kernels"] == []  # not in smoke runs
        for row in data["comparisons"][device]:
            assert row["gk_over_manibo_time"] is None
            if case.naive:  # the independent textbook sum agrees with manibo
                assert row["naive_over_manibo_time"] > 0
                assert row["naive_max_abs_diff"] < 1e-10
    gpu_rows = data["device_ratios"]
    assert bool(gpu_rows) == torch.cuda.is_available()
    assert data["targets"]["time"]["pass"] is None  # N = 5000 is not run in a smoke test


def test_summary_figure(smoke, tmp_path):
    assert kernel_speed.main(["--summary", str(smoke), "--out", str(tmp_path)]) == 0
    assert (tmp_path / "kernel_speed.png").stat().st_size > 10_000


def test_cases_run_in_fresh_processes(tmp_path):
    # the driver in this process; each case runs the script in a fresh one (--worker)
    options = ["--smoke", "--no-inline", "--space", "sphere2", "--sizes", "30"]
    assert kernel_speed.main([*options, "--out", str(tmp_path)]) == 0
    data = _load(tmp_path, "sphere2")
    assert data["config"]["inline"] is False
    for name in ("manibo", "naive_torch"):
        (run,) = data["results"]["cpu"][name]
        assert "fresh subprocess" in run["memory_measure"]
        assert run["setup_s"] > 0 and run["torch_threads"] >= 1


def test_gpu_results_give_ratios_figure_and_table_columns(smoke, tmp_path):
    """The CPU/GPU code path on a record with a second device (here: the CPU's times halved)."""
    data = _load(smoke, "sphere2")
    gpu = copy.deepcopy(data["results"]["cpu"])
    for runs in gpu.values():
        for run in runs:
            run.update(time_s=run["time_s"] / 2, time_min_s=run["time_min_s"] / 2)
            run["times_s"] = [t / 2 for t in run["times_s"]]
    data["results"]["cuda"] = gpu
    data["comparisons"]["cuda"] = data["comparisons"]["cpu"]
    data["config"]["devices"] = ["cpu", "cuda"]
    data["device_ratios"] = kernel_speed.device_ratios(data["results"])
    manibo_rows = [r for r in data["device_ratios"] if r["implementation"] == "manibo"]
    assert [r["n"] for r in manibo_rows] == data["config"]["sizes"]
    assert all(r["cpu_over_device_time"] == pytest.approx(2.0) for r in manibo_rows)
    kernel_speed.plot_space(data, tmp_path / "gpu.png")
    assert (tmp_path / "gpu.png").stat().st_size > 10_000
    markdown = doc_tables.kernel_table(data)
    assert "manibo CUDA" in markdown.splitlines()[0] and "| 2.0× |" in markdown


@pytest.mark.parametrize("space", ["hyperbolic3", "spd2"])
def test_random_phases_are_compared_with_the_kernel_they_estimate(smoke, space):
    agreement = _load(smoke, space)["agreement"]
    assert agreement["points"] == kernel_speed.SMOKE_AGREEMENT["points"]
    stats = agreement["manibo_features"]
    assert stats["num_phases"] == 4096 and stats["keys"] == 2
    # 4096 phases on these domains: errors of a few hundredths (documented), not of order 1
    assert 0 < stats["max_abs_error"] < 0.1 and 0 < stats["max_standard_error"] < 0.1
    assert "geometric_kernels" not in agreement  # not in smoke runs


def test_monte_carlo_statistics_closed_form():
    reference = np.zeros((3, 3))
    offsets = np.array([0.1, -0.1, 0.3])  # three keys: mean 0.1, sample std 0.2
    stack = reference + offsets[:, None, None]
    stats = kernel_speed.monte_carlo_statistics(stack, reference)
    assert stats["keys"] == 3
    assert stats["max_standard_error"] == pytest.approx(0.2)
    assert stats["max_abs_error"] == pytest.approx(0.1)
    assert stats["max_abs_error_of_mean"] == pytest.approx(0.1)
    assert stats["max_standard_error_of_mean"] == pytest.approx(0.2 / np.sqrt(3))
    assert stats["fraction_within_3_standard_errors"] == 1.0
    stack[:, 0, 1] += 1.0  # one entry far off, with the same spread
    stats = kernel_speed.monte_carlo_statistics(stack, reference)
    assert stats["fraction_within_3_standard_errors"] == pytest.approx(5 / 6)
