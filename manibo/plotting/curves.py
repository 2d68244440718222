"""Curves over runs (median and interquartile band per method); distributions with censoring."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib
import numpy as np
from matplotlib.axes import Axes

from manibo.exceptions import ConfigurationError, InputDataError

# matplotlib 3.10 replaced ``vert=False`` by ``orientation="horizontal"``; 3.11 deprecates vert.
_HORIZONTAL = (
    {"orientation": "horizontal"}
    if tuple(int(p) for p in matplotlib.__version__.split(".")[:2]) >= (3, 10)
    else {"vert": False}
)


def plot_median_curves(
    ax: Axes,
    x: np.ndarray,
    curves: Mapping[str, np.ndarray],
    colors: Mapping[str, str] | None = None,
    band: bool = True,
) -> None:
    """One line per method: the median over runs, with a band between the 25% and 75% quantiles.

    The median always lies inside its interquartile band, however skewed the runs are (a mean
    would not: one diverging run pulls it out of the band).

    Args:
        ax: the axes.
        x: the common abscissa, shape ``(t,)``.
        curves: method name → values of shape ``(runs, t)`` (one run is ``(1, t)``).
        colors: method name → colour.
        band: draw the interquartile band (with two runs or more).

    Raises:
        InputDataError: ``x`` is not 1-D, ``curves`` is empty, or a method's values are not a
            non-empty ``(runs, t)`` array (1-D, ragged, no runs, or ``t`` differs from ``x``).
    """
    x = np.asarray(x, dtype=float)
    if x.ndim != 1:
        raise InputDataError(f"`x` must be 1-D, shape (t,); got shape {x.shape}.")
    if not curves:
        raise InputDataError("`curves` is empty; give at least one method name → (runs, t) array.")
    for name, values in curves.items():
        runs = _runs(name, values, x.size)
        color = (colors or {}).get(name)
        (line,) = ax.plot(x, np.median(runs, 0), label=name, color=color, linewidth=1.8)
        if band and runs.shape[0] > 1:
            low, high = np.quantile(runs, [0.25, 0.75], axis=0)
            ax.fill_between(x, low, high, color=line.get_color(), alpha=0.12, linewidth=0)


def _runs(name: str, values: np.ndarray, t: int) -> np.ndarray:
    """``values`` as a float array ``(runs, t)``, or an ``InputDataError`` saying what is wrong."""
    where = f"`curves[{name!r}]`"
    try:
        runs = np.asarray(values, dtype=float)
    except ValueError as error:  # ragged rows, or entries that are not numbers
        lengths = [len(row) if hasattr(row, "__len__") else "scalar" for row in values]
        raise InputDataError(
            f"{where} must hold runs of equal length, shape (runs, t) with t = {t}; its rows "
            f"have lengths {lengths}. Cut or pad the runs to a common length first."
        ) from error
    if runs.ndim == 1:
        raise InputDataError(
            f"{where} has shape {runs.shape}, one curve: give an array of shape (runs, t), "
            "for one run `values[None]` (shape (1, t))."
        )
    if runs.ndim != 2 or runs.shape[0] == 0:
        raise InputDataError(
            f"{where} must have shape (runs, t) with at least one run; got shape {runs.shape}."
        )
    if runs.shape[1] != t:
        raise InputDataError(
            f"{where} has {runs.shape[1]} values per run but `x` has {t}; give one value per "
            "entry of `x`."
        )
    return runs


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
    position, with their count beside them. The axis starts at 0, or below the lowest value when
    values are negative, and the censoring position lies to the right of every finite value.

    Args:
        ax: the axes (methods along y, values along x).
        values: method name → values (``math.inf`` for censored runs). NaN is refused: a run
            that was not measured is neither a value nor censored; drop it before plotting.
        censor_label: text placed at the censoring position (e.g. "not found").
        colors: method name → colour.
        seed: seed of the jitter.
        censor_at: where censored runs are drawn (e.g. the time budget), above every finite
            value; default: past the largest finite value by 12% of the range from
            ``min(0, smallest value)`` to it.

    Raises:
        InputDataError: ``values`` is empty or holds NaN or ``-inf``.
        ConfigurationError: ``censor_at`` is not above every finite value.
    """
    data = {name: _censorable(name, vs) for name, vs in values.items()}
    if not data:
        raise InputDataError("`values` is empty; give at least one method name → values.")
    finite = np.concatenate([d[np.isfinite(d)] for d in data.values()])
    low = min(0.0, float(finite.min())) if finite.size else 0.0
    high = float(finite.max()) if finite.size else 1.0
    if censor_at is None:
        censor_x = high + 0.12 * ((high - low) or 1.0)
    elif not censor_at > high:
        raise ConfigurationError(
            f"`censor_at` must lie above every finite value (the largest is {high:.6g}), got "
            f"{censor_at!r}; give a larger position, or None to place it automatically."
        )
    else:
        censor_x = float(censor_at)
    span = censor_x - low
    rng = np.random.default_rng(seed)
    for row, (name, runs) in enumerate(data.items()):
        color = (colors or {}).get(name, "C0")
        shown = runs[np.isfinite(runs)]
        censored = int(np.isinf(runs).sum())
        if runs.size:
            ax.boxplot(
                np.where(np.isfinite(runs), runs, censor_x),
                positions=[row],
                **_HORIZONTAL,
                widths=0.5,
                whis=(0, 100),
                showfliers=False,
                medianprops={"color": color, "linewidth": 2.5},
            )
        if shown.size:
            ax.scatter(
                shown,
                row + rng.uniform(-0.18, 0.18, shown.size),
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
            ax.annotate(
                f"{censored}", (censor_x + 0.03 * span, row), fontsize=8, ha="left", va="center"
            )
    ax.axvline(censor_x, color="0.6", linewidth=0.8, linestyle=":")
    ax.text(censor_x, -0.75, censor_label, ha="center", va="center", fontsize=8)
    ax.set_yticks(range(len(data)), list(data))
    ax.set_ylim(len(data) - 0.4, -0.95)  # the first method on top
    ax.set_xlim(low - (0.05 * span if low < 0 else 0.0), censor_x + 0.1 * span)


def _censorable(name: str, values: Sequence[float]) -> np.ndarray:
    """``values`` as a 1-D float array of finite values and ``+inf``; NaN and ``-inf`` refused."""
    runs = np.asarray(values, dtype=float).reshape(-1)
    for bad, what in ((np.isnan(runs), "NaN"), (runs == -np.inf, "-inf")):
        if bad.any():
            raise InputDataError(
                f"`values[{name!r}]` holds {int(bad.sum())} {what} of {runs.size} values "
                f"(at positions {np.flatnonzero(bad).tolist()}); give a finite value per run, "
                "or math.inf for a censored run, and drop runs that were not measured."
            )
    return runs
