"""Curves over runs (mean and quartile band per method); distributions with censoring."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import matplotlib
import numpy as np
from matplotlib.axes import Axes

# matplotlib 3.10 replaced ``vert=False`` by ``orientation="horizontal"``; 3.11 deprecates vert.
_HORIZONTAL = (
    {"orientation": "horizontal"}
    if tuple(int(p) for p in matplotlib.__version__.split(".")[:2]) >= (3, 10)
    else {"vert": False}
)


def plot_mean_curves(
    ax: Axes,
    x: np.ndarray,
    curves: Mapping[str, np.ndarray],
    colors: Mapping[str, str] | None = None,
    band: bool = True,
) -> None:
    """One line per method: the mean over runs, with a band between the 25% and 75% quantiles.

    Args:
        ax: the axes.
        x: the common abscissa, shape ``(t,)``.
        curves: method name → values of shape ``(runs, t)``.
        colors: method name → colour.
        band: draw the interquartile band.
    """
    for name, values in curves.items():
        values = np.asarray(values, dtype=float)
        color = (colors or {}).get(name)
        (line,) = ax.plot(x, values.mean(0), label=name, color=color, linewidth=1.8)
        if band and values.shape[0] > 1:
            low, high = np.quantile(values, [0.25, 0.75], axis=0)
            ax.fill_between(x, low, high, color=line.get_color(), alpha=0.12, linewidth=0)


def plot_censored_distributions(
    ax: Axes,
    values: Mapping[str, Sequence[float]],
    censor_label: str,
    colors: Mapping[str, str] | None = None,
    seed: int = 0,
    censor_at: float | None = None,
) -> None:
    """Box plots per method (first on top) over all runs, censored runs counted as the longest.

    The box and its median line are those of every run, a censored run ranking above every finite
    value (at the censoring position), so the median drawn is the median that counts censored
    runs as "never"; a box or median that reaches the censoring line means that quantile was
    censored. Finite values are jittered points; censored runs are crosses at the censoring
    position, with their count beside them.

    Args:
        ax: the axes (methods along y, values along x).
        values: method name → values (``math.inf`` for censored runs).
        censor_label: text placed at the censoring position (e.g. "not found").
        colors: method name → colour.
        seed: seed of the jitter.
        censor_at: where censored runs are drawn (e.g. the time budget); default: 12% past the
            largest finite value.
    """
    rng = np.random.default_rng(seed)
    names = list(values)
    finite_max = max((v for vs in values.values() for v in vs if math.isfinite(v)), default=1.0)
    censor_x = finite_max * 1.12 if censor_at is None else censor_at
    for row, name in enumerate(names):
        color = (colors or {}).get(name, "C0")
        data = np.asarray(values[name], dtype=float)
        finite = data[np.isfinite(data)]
        censored = int((~np.isfinite(data)).sum())
        if data.size:
            ax.boxplot(
                np.where(np.isfinite(data), data, censor_x),
                positions=[row],
                **_HORIZONTAL,
                widths=0.5,
                whis=(0, 100),
                showfliers=False,
                medianprops={"color": color, "linewidth": 2.5},
            )
        if finite.size:
            ax.scatter(
                finite,
                row + rng.uniform(-0.18, 0.18, finite.size),
                s=12,
                color=color,
                alpha=0.7,
                zorder=3,
            )
        if censored:
            ax.scatter(
                np.full(censored, censor_x),
                row + rng.uniform(-0.18, 0.18, censored),
                marker="x",
                s=18,
                color=color,
                zorder=3,
            )
            ax.annotate(f"{censored}", (censor_x * 1.03, row), fontsize=8, ha="left", va="center")
    ax.axvline(censor_x, color="0.6", linewidth=0.8, linestyle=":")
    ax.text(censor_x, -0.75, censor_label, ha="center", va="center", fontsize=8)
    ax.set_yticks(range(len(names)), names)
    ax.set_ylim(len(names) - 0.4, -0.95)  # the first method on top
    ax.set_xlim(0, censor_x * 1.1)
