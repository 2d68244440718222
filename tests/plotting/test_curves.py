"""Curves over runs and censored distributions: what is drawn matches the data."""

import math

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from manibo.exceptions import ConfigurationError, InputDataError  # noqa: E402
from manibo.plotting import plot_censored_distributions, plot_median_curves  # noqa: E402


@pytest.fixture
def ax():
    fig, ax = plt.subplots()
    yield ax
    plt.close(fig)


def test_median_curve_is_the_median_over_runs(ax):
    x = np.linspace(0, 1, 5)
    runs = np.array([[0, 0.1, 0.2, 0.3, 0.4], [0, 0.3, 0.4, 0.5, 0.6], [1, 1, 1, 1, 1]])
    plot_median_curves(ax, x, {"a": runs}, {"a": "red"})
    (line,) = ax.get_lines()
    assert np.allclose(line.get_ydata(), [0, 0.3, 0.4, 0.5, 0.6]) and line.get_label() == "a"


def test_the_line_lies_inside_its_band_when_one_run_diverges(ax):
    # four runs at 1e-6 and one at 10: the mean (2.0) would sit far above the quartiles
    runs = np.array([[1e-6, 1e-6]] * 4 + [[10.0, 10.0]])
    plot_median_curves(ax, np.array([1.0, 2.0]), {"a": runs})
    (line,) = ax.get_lines()
    (band,) = ax.collections
    band_y = band.get_paths()[0].vertices[:, 1]
    assert np.all(line.get_ydata() >= band_y.min()) and np.all(line.get_ydata() <= band_y.max())
    np.testing.assert_array_equal(line.get_ydata(), [1e-6, 1e-6])


@pytest.mark.parametrize(
    ("x", "values", "message"),
    [
        ([1, 2, 3], [0.1, 0.2, 0.3], r"one curve.*\(1, t\)"),
        ([1, 2, 3], [[0.1, 0.2, 0.3], [0.1, 0.2]], r"lengths \[3, 2\]"),
        ([1, 2], [[0.1, 0.2, 0.3]], "3 values per run but `x` has 2"),
        ([1, 2], np.zeros((0, 2)), "at least one run"),
        ([[1, 2]], [[0.1, 0.2]], "`x` must be 1-D"),
    ],
)
def test_malformed_curves_are_refused_with_what_arrived(ax, x, values, message):
    with pytest.raises(InputDataError, match=message):
        plot_median_curves(ax, x, {"a": values})


def test_no_methods_is_refused(ax):
    with pytest.raises(InputDataError, match="`curves` is empty"):
        plot_median_curves(ax, [1, 2], {})


def test_censored_runs_are_counted_and_the_box_median_counts_them_as_never(ax):
    values = {"a": [3.0, 1.0, 2.0, math.inf], "b": [1.0, math.inf, math.inf]}
    plot_censored_distributions(ax, values, "never", censor_at=10.0)
    texts = [t.get_text() for t in ax.texts]
    assert "1" in texts and "2" in texts and "never" in texts
    assert [t.get_text() for t in ax.get_yticklabels()] == ["a", "b"]
    medians = [line for line in ax.get_lines() if line.get_linewidth() == 2.5]
    # the medians of all runs with inf ranked last: 2.5 for a; b's is censored, at the line
    assert [float(np.mean(m.get_xdata())) for m in medians] == [2.5, 10.0]
    assert ax.get_xlim() == pytest.approx((0.0, 11.0))


def _censor_line(ax):
    (line,) = [line for line in ax.get_lines() if line.get_linestyle() == ":"]
    return float(line.get_xdata()[0])


def test_positive_values_are_censored_past_the_largest_from_zero(ax):
    plot_censored_distributions(ax, {"a": [2.0, 5.0, math.inf]}, "never")
    assert _censor_line(ax) == pytest.approx(5.6)  # 12% of [0, 5] past 5
    assert ax.get_xlim()[0] == 0.0


def test_negative_values_keep_the_axis_increasing_and_the_censoring_line_past_them(ax):
    values = {"a": [-1.1, -0.5, math.inf], "b": [-0.8, -0.2]}
    plot_censored_distributions(ax, values, "never")
    low, high = ax.get_xlim()
    censor = _censor_line(ax)
    assert low < -1.1 < -0.2 < censor < high
    assert censor == pytest.approx(-0.2 + 0.12 * 0.9)  # 12% of [-1.1, -0.2] past -0.2


@pytest.mark.parametrize(("bad", "what"), [(math.nan, "1 NaN"), (-math.inf, "1 -inf")])
def test_nan_and_minus_inf_are_refused_not_counted_as_censored(ax, bad, what):
    with pytest.raises(InputDataError, match=rf"`values\['b'\]` holds {what} of 3.*\[1\]"):
        plot_censored_distributions(ax, {"a": [1.0], "b": [1.0, bad, math.inf]}, "never")


def test_a_censoring_position_among_the_data_is_refused(ax):
    with pytest.raises(ConfigurationError, match="largest is 3"):
        plot_censored_distributions(ax, {"a": [1.0, 3.0, math.inf]}, "never", censor_at=2.0)
