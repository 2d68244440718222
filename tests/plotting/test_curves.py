"""Curves over runs and censored distributions: what is drawn matches the data."""

import math

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from manibo.plotting import plot_censored_distributions, plot_mean_curves  # noqa: E402


def test_mean_curve_is_the_mean_over_runs():
    fig, ax = plt.subplots()
    x = np.linspace(0, 1, 5)
    runs = np.array([[0, 0.1, 0.2, 0.3, 0.4], [0, 0.3, 0.4, 0.5, 0.6]])
    plot_mean_curves(ax, x, {"a": runs}, {"a": "red"})
    (line,) = ax.get_lines()
    assert np.allclose(line.get_ydata(), runs.mean(0)) and line.get_label() == "a"
    plt.close(fig)


def test_censored_runs_are_counted_and_the_box_median_counts_them_as_never():
    fig, ax = plt.subplots()
    values = {"a": [3.0, 1.0, 2.0, math.inf], "b": [1.0, math.inf, math.inf]}
    plot_censored_distributions(ax, values, "never", censor_at=10.0)
    texts = [t.get_text() for t in ax.texts]
    assert "1" in texts and "2" in texts and "never" in texts
    assert [t.get_text() for t in ax.get_yticklabels()] == ["a", "b"]
    medians = [line for line in ax.get_lines() if line.get_linewidth() == 2.5]
    # the medians of all runs with inf ranked last: 2.5 for a; b's is censored, at the line
    assert [float(np.mean(m.get_xdata())) for m in medians] == [2.5, 10.0]
    plt.close(fig)
