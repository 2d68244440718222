"""The convergence figure: the curves drawn are the best values so far of the run's data."""

import math

import numpy as np
import pytest
import torch
from matplotlib.collections import PathCollection
from PIL import Image

from manibo.exceptions import InputDataError
from manibo.journal import Evaluation
from manibo.plotting import best_so_far, plot_convergence
from manibo.result import result_from_history
from manibo.spaces import Circle


def _running_best(values, minimize):
    """An independent loop: the best finite value so far, NaN before the first one."""
    best, out = None, []
    for v in values:
        if not math.isnan(v) and (best is None or (v < best if minimize else v > best)):
            best = v
        out.append(math.nan if best is None else best)
    return out


@pytest.mark.parametrize("minimize", [True, False])
def test_best_so_far_skips_failures_and_is_nan_before_the_first_success(minimize):
    values = [math.nan, 3.0, 5.0, math.nan, 1.0, 4.0, 0.5]
    np.testing.assert_array_equal(
        best_so_far(np.array(values), minimize), _running_best(values, minimize)
    )


def _result(values, elapsed, minimize=True):
    history = [
        Evaluation(
            x=[0.1 * i],
            y=None if v is None else v,
            status="failed" if v is None else "ok",
            index=i,
            seconds=0.01,
            elapsed=t,
        )
        for i, (v, t) in enumerate(zip(values, elapsed, strict=True))
    ]
    config = {"minimize": minimize, "surrogate": "matern", "acquisition": "qlognei", "seed": 0}
    return result_from_history(
        history, Circle(), config, torch.device("cpu"), None, "budget", lambda: None, 1.0
    )


def test_the_figure_draws_the_best_so_far_against_evaluations_and_wall_time(tmp_path):
    values = [4.0, None, 2.5, 3.0, None, 1.0]
    elapsed = [0.1, 0.2, 1.5, 2.0, 2.1, 4.0]
    result = _result(values, elapsed)
    path = tmp_path / "convergence.png"
    figure = plot_convergence(result, path)
    by_count, by_time = figure.axes
    expected = _running_best([math.nan if v is None else v for v in values], True)
    (count_line,) = by_count.get_lines()
    np.testing.assert_array_equal(count_line.get_xdata(), np.arange(1, 7))
    np.testing.assert_array_equal(count_line.get_ydata(), expected)
    (time_line,) = by_time.get_lines()
    np.testing.assert_array_equal(time_line.get_xdata(), elapsed)
    np.testing.assert_array_equal(time_line.get_ydata(), expected)
    # the two failed evaluations are crosses at evaluations 2 and 5
    crosses = [c for c in by_count.collections if c.get_label() == "failed"]
    assert isinstance(crosses[0], PathCollection)
    np.testing.assert_array_equal(crosses[0].get_offsets()[:, 0], [2, 5])
    assert "2 failed" in figure.texts[0].get_text()
    with Image.open(path) as image:
        assert image.format == "PNG" and image.size[0] > image.size[1] > 200


def test_without_timings_the_wall_time_panel_says_so():
    figure = _result([1.0, 2.0], [None, None], minimize=False).plot()
    by_count, by_time = figure.axes
    np.testing.assert_array_equal(by_count.get_lines()[0].get_ydata(), [1.0, 2.0])
    assert not by_time.get_lines() and by_time.texts[0].get_text() == "no timings recorded"


@pytest.mark.parametrize("minimize", [True, False])
def test_failures_sit_past_the_worst_observed_value_not_on_the_best_so_far_line(minimize):
    values = [4.0, None, 2.5, 3.0, None, 1.0]
    figure = plot_convergence(_result(values, [None] * 6, minimize))
    (crosses,) = [c for c in figure.axes[0].collections if c.get_label() == "failed"]
    heights = crosses.get_offsets()[:, 1]
    np.testing.assert_array_equal(crosses.get_offsets()[:, 0], [2, 5])
    if minimize:  # the best so far is 1.0 at the end; failures above the worst (4.0)
        assert np.all(heights > 4.0)
    else:  # the best so far is 4.0 throughout; failures below the worst (1.0)
        assert np.all(heights < 1.0)


def test_a_folder_as_path_is_refused_and_nothing_is_written_beside_it(tmp_path):
    folder = tmp_path / "runs"
    folder.mkdir()
    with pytest.raises(InputDataError, match=r"is a folder.*runs/convergence\.png"):
        _result([1.0, 2.0], [0.1, 0.2]).plot(folder)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["runs"] and not any(folder.iterdir())


def test_a_path_with_a_tilde_or_missing_folders_is_written_there(tmp_path, monkeypatch):
    """result.plot('~/a.png') wrote nothing under the home folder, and plot('nodir/a.png')
    raised a bare FileNotFoundError."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    result = _result([1.0, 2.0], [0.1, 0.2])
    result.plot("~/figures/a.png")
    result.plot("nodir/deeper/b.png")
    assert (tmp_path / "home" / "figures" / "a.png").stat().st_size > 0
    assert (tmp_path / "nodir" / "deeper" / "b.png").stat().st_size > 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["home", "nodir"]  # no folder "~"
    (tmp_path / "file").write_text("")
    with pytest.raises(InputDataError, match="cannot create the folder.*file"):
        result.plot(tmp_path / "file" / "c.png")


def test_show_opens_the_figure_through_pyplot(monkeypatch):
    import matplotlib.pyplot as plt

    shown = []
    monkeypatch.setattr(plt, "show", lambda: shown.append(plt.get_fignums()))
    figure = _result([1.0, 2.0], [0.1, 0.2]).plot(show=True)
    try:
        assert figure.canvas.manager is not None and shown == [[figure.number]]
    finally:
        plt.close(figure)
    # without show, nothing is left open in pyplot
    assert _result([1.0], [0.1]).plot().canvas.manager is None and not plt.get_fignums()
