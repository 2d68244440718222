"""The convergence figure of one run: the best value so far against evaluations and wall time."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from manibo.exceptions import InputDataError


def best_so_far(values: np.ndarray, minimize: bool) -> np.ndarray:
    """The best value among the first ``i + 1`` entries, for each ``i``; NaN entries (failed
    evaluations) are skipped, and the curve is NaN until the first finite value.

    Args:
        values: observed values ``(n,)``, NaN where the evaluation failed.
        minimize: best means lowest.

    Returns:
        Array ``(n,)``.
    """
    values = np.asarray(values, dtype=float)
    worst = np.inf if minimize else -np.inf
    filled = np.where(np.isnan(values), worst, values)
    running = np.minimum.accumulate(filled) if minimize else np.maximum.accumulate(filled)
    return np.where(running == worst, np.nan, running)


def plot_convergence(result, path: str | Path | None = None, show: bool = False) -> Figure:
    """Two panels: the best observed value so far against the number of evaluations (with every
    observation as a dot and failed evaluations as crosses in a strip past the worst observed
    value), and against the run's wall time.

    Args:
        result: an :class:`~manibo.result.OptimizationResult` (it reads ``Y`` ``(n,)``,
            ``failed`` ``(n,)``, ``elapsed`` ``(n,)`` and ``minimize``).
        path: the file to save the figure to (PNG, or any format matplotlib writes, chosen by
            the suffix; matplotlib appends ``.png`` to a name without one); ``~`` is the home
            folder, and missing folders are created; None: not saved.
        show: also open the figure in a window with ``matplotlib.pyplot.show`` (which blocks in
            a script until the window is closed). In a notebook, the returned figure displays
            inline by itself.

    Returns:
        The ``matplotlib.figure.Figure``; made without pyplot (so nothing stays open across
        many runs, and its ``show()`` method is unavailable) unless ``show`` is True.

    Raises:
        InputDataError: ``path`` is an existing folder, or its folder cannot be created.
    """
    if isinstance(path, (str, os.PathLike)):
        path = Path(path).expanduser()
        if path.is_dir():
            raise InputDataError(
                f"`path` {str(path)!r} is a folder; give the name of the file to write, for "
                f"example {str(path / 'convergence.png')!r}."
            )
    values = result.Y.detach().cpu().numpy()
    failed = result.failed.detach().cpu().numpy()
    elapsed = result.elapsed.detach().cpu().numpy()
    best = best_so_far(values, result.minimize)
    label = "lowest" if result.minimize else "highest"
    figure = _new_figure(show)
    by_count, by_time = figure.subplots(1, 2)
    count = np.arange(1, values.size + 1)
    by_count.scatter(count, values, s=12, color="0.55", label="observed", zorder=2)
    by_count.step(count, best, where="post", color="C0", linewidth=2, label=f"{label} so far")
    _mark_failures(by_count, count[failed], values, result.minimize)
    by_count.set_xlabel("evaluations")
    by_count.set_ylabel("objective")
    by_count.legend(loc="best", fontsize=8)
    known = ~np.isnan(elapsed)
    if known.any():
        by_time.step(elapsed[known], best[known], where="post", color="C0", linewidth=2)
        by_time.scatter(elapsed[known], values[known], s=12, color="0.55", zorder=2)
    else:
        by_time.text(0.5, 0.5, "no timings recorded", ha="center", transform=by_time.transAxes)
    by_time.set_xlabel("wall time (s)")
    by_time.set_ylabel("objective")
    for ax in (by_count, by_time):
        ax.grid(alpha=0.3)
    failures = f", {int(failed.sum())} failed" if failed.any() else ""
    figure.suptitle(
        f"{'minimising' if result.minimize else 'maximising'} on {result.space!r}: "
        f"{values.size} evaluations{failures}",
        fontsize=10,
    )
    if path is not None:
        if isinstance(path, Path):  # missing folders are created, as for a journal
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as err:
                raise InputDataError(
                    f"cannot create the folder {str(path.parent)!r} for `path` {str(path)!r}: "
                    f"{err}. Give a path in a folder you can write to."
                ) from err
        figure.savefig(path, dpi=110)
    if show:
        import matplotlib.pyplot as plt

        plt.show()
    return figure


def _new_figure(show: bool) -> Figure:
    """A figure of the convergence figure's size; through pyplot only when it is to be shown."""
    if not show:
        return Figure(figsize=(10, 4), layout="constrained")
    import matplotlib.pyplot as plt

    return plt.figure(figsize=(10, 4), layout="constrained")


def _mark_failures(ax: Axes, at: np.ndarray, values: np.ndarray, minimize: bool) -> None:
    """Crosses for failed evaluations in a strip just past the worst observed value: above the
    data when minimising, below it when maximising, so never on the best-so-far line."""
    if not at.size:
        return
    finite = values[~np.isnan(values)]
    if finite.size:
        low, high = float(finite.min()), float(finite.max())
        margin = 0.08 * ((high - low) or max(abs(high), 1.0))
        level = high + margin if minimize else low - margin
    else:
        level = 0.0
    ax.scatter(at, np.full(at.size, level), marker="x", color="C3", s=24, label="failed")
