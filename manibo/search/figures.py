"""Figures of the search: expected and realised fraction found, times to detection, mission maps.

Maps are drawn in the water's frame at mission time 0 (every track and position carried back by
the current to the time of the loss), where the prior is drawn and where a track covers the water
it actually swept.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

from manibo.geo import distance_km
from manibo.search.evaluation import Evaluation, HiddenObjects
from manibo.search.legs import Leg, total_hazard
from manibo.search.mission import MissionRecord, Scenario, prior_particles
from manibo.search.planners.registry import PLANNERS

ASSET_COLORS = ("#1f5fbf", "#12a4b8", "#d9822b", "#8e44ad")
LANDMARK_STYLES = {
    "last known position": {"marker": "*", "s": 150, "color": "#10b0b0"},
    "reverse-drift sighting": {"marker": "^", "s": 60, "color": "#f0d020"},
    "arc middle": {"marker": "*", "s": 150, "color": "#10b0b0"},
    "ship joins": {"marker": "s", "s": 36, "color": "#d9822b"},
}


def label(planner_id: str) -> str:
    """The planner's display label."""
    return PLANNERS.get(planner_id).label


def color(planner_id: str) -> str:
    """The planner's colour."""
    return PLANNERS.get(planner_id).color


def expected_found_figure(
    path: Path,
    hours: Tensor,
    expected: Mapping[str, Tensor],
    realised: Mapping[str, Tensor],
    headline: str = "manibo",
) -> Path:
    """Expected fraction found (mean and quartiles over scenarios), realised fraction found, and
    the headline planner's paired lead over each other planner (mean ± 2 standard errors).

    Args:
        path: the PNG to write.
        hours: the time grid ``(G,)``.
        expected: planner id → each scenario's expected fraction found, ``(S, G)``.
        realised: planner id → realised times to detection of every mission, any shape.
        headline: the planner whose lead is drawn in panel c.
    """
    import matplotlib.pyplot as plt

    from manibo.search.metrics import fraction_found_by, hours_to_fraction, paired_difference

    x = hours.numpy()
    fig, axes = plt.subplots(1, 3, figsize=(18, 5), constrained_layout=True)
    for planner, curves in expected.items():
        mean = curves.mean(0)
        half = hours_to_fraction(hours, mean)
        text = f"half at {half:.0f} h" if half is not None else "half: never"
        (line,) = axes[0].plot(
            x,
            mean.numpy(),
            color=color(planner),
            lw=2.2 if planner == headline else 1.6,
            label=f"{label(planner)} ({text})",
        )
        if curves.shape[0] > 1:
            low, high = torch.quantile(
                curves, torch.tensor([0.25, 0.75], dtype=curves.dtype), dim=0
            )
            axes[0].fill_between(
                x, low.numpy(), high.numpy(), color=line.get_color(), alpha=0.08, lw=0
            )
        axes[1].step(
            x,
            fraction_found_by(realised[planner], hours).numpy(),
            where="post",
            color=color(planner),
            lw=1.8,
            label=label(planner),
        )
        if planner != headline and headline in expected and curves.shape[0] > 1:
            mean_gap, se = paired_difference(expected[headline], curves)
            axes[2].plot(
                x, mean_gap.numpy(), color=color(planner), lw=1.8, label=f"minus {label(planner)}"
            )
            axes[2].fill_between(
                x,
                (mean_gap - 2 * se).numpy(),
                (mean_gap + 2 * se).numpy(),
                color=color(planner),
                alpha=0.12,
                lw=0,
            )
    scenarios = next(iter(expected.values())).shape[0]
    missions = next(iter(realised.values())).numel()
    axes[0].set_title(
        f"a. Expected fraction found: mean over {scenarios} "
        f"scenario{'s' if scenarios != 1 else ''} of each plan's\n"
        "probability of success (band: quartiles over scenarios)",
        fontsize=10,
    )
    axes[1].set_title(
        f"b. Realised: fraction of {missions} missions (scenarios × hidden objects)\n"
        "that had detected the object by t",
        fontsize=10,
    )
    axes[2].set_title(
        f"c. {label(headline)} minus each planner, paired by scenario\n"
        "(expected fraction found; band: ± 2 standard errors)",
        fontsize=10,
    )
    for ax in axes[:2]:
        ax.axhline(0.5, color="0.5", lw=0.8, ls=":")
        ax.set_ylim(0, 1)
        ax.set_ylabel("fraction of objects found")
    axes[2].axhline(0.0, color="0.3", lw=0.8)
    axes[2].set_ylabel("difference in expected fraction found")
    for ax in axes:
        ax.set_xlabel("mission time [h]")
        ax.grid(alpha=0.3)
        if ax.get_legend_handles_labels()[0]:  # no paired leads from a single scenario
            ax.legend(fontsize=8, loc="upper left")
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def time_to_detection_figure(path: Path, realised: Mapping[str, Tensor], duration_h: float) -> Path:
    """Realised times to detection per planner (box of all missions, never-found marked)."""
    import matplotlib.pyplot as plt

    from manibo.plotting import plot_censored_distributions

    values = {label(p): v.flatten().tolist() for p, v in realised.items()}
    colors = {label(p): color(p) for p in realised}
    missions = next(iter(realised.values())).numel()
    fig, ax = plt.subplots(figsize=(10, 4.8), constrained_layout=True)
    plot_censored_distributions(
        ax, values, f"not found in {duration_h:.0f} h", colors, censor_at=duration_h * 1.06
    )
    ax.set_xlabel("time to detection [h of mission time]")
    ax.set_title(
        f"Realised time to detection of {missions} missions per planner (every scenario against "
        "each of its hidden objects;\nbox: median and quartiles, the missions that did not find "
        "the object counted as never)",
        fontsize=10,
    )
    ax.grid(axis="x", alpha=0.3)
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def _water_legs(scenario: Scenario, legs: Sequence[Leg]) -> list[tuple[int, Tensor]]:
    return [(leg.asset, torch.stack(leg.comoving(scenario.drift))) for leg in legs]


def _extent(scenario: Scenario, particles: Tensor, legs: Sequence[Leg]) -> float:
    reach = [float(distance_km(particles, scenario.datum).quantile(0.995))]
    for _, ends in _water_legs(scenario, legs):
        reach.append(float(distance_km(ends, scenario.datum).max()))
    return min(max(reach) * 1.08, 4500.0)


def _zoom(ax, view, scenario: Scenario, title: str, size: int = 360) -> None:
    from manibo.plotting import draw_graticule, draw_land_and_sea

    draw_land_and_sea(ax, view, scenario.mask, size=size)
    draw_graticule(ax, view, step_deg=10.0 if view.extent_km > 1500 else 5.0, labels=True)
    ax.set_xlabel("km east of the datum (the water's frame at the loss)")
    ax.set_ylabel("km north of the datum")
    ax.set_title(title, fontsize=10)


def _tracks(ax, view, scenario: Scenario, legs: Sequence[Leg], width: float = 1.0) -> list:
    from manibo.plotting import draw_path

    handles, seen = [], set()
    for asset, ends in _water_legs(scenario, legs):
        style = {
            "color": ASSET_COLORS[asset % len(ASSET_COLORS)],
            "linewidth": width,
            "alpha": 0.85,
            "zorder": 6,
        }
        lines = draw_path(ax, view, ends, **style)
        if asset not in seen and lines:
            seen.add(asset)
            a = scenario.assets[asset]
            lines[0].set_label(f"{a.name} ({a.sweep.width_km:.0f} km sweep, {a.sweep.law})")
            handles.append(lines[0])
    return handles


def _landmarks(ax, view, scenario: Scenario) -> list:
    from manibo.plotting import draw_points

    handles = []
    for name, point in scenario.landmarks.items():
        style = LANDMARK_STYLES.get(name, {"marker": "P", "s": 70, "color": "k"})
        water = scenario.drift.to_comoving(point, 0.0)
        handles.append(
            draw_points(
                ax, view, water, edgecolor="k", linewidth=0.5, zorder=8, label=name, **style
            )
        )
    return handles


def mission_figure(
    path: Path,
    scenario: Scenario,
    record: MissionRecord,
    evaluation: Evaluation,
    objects: HiddenObjects,
    index: int,
    num_particles: int,
) -> Path:
    """The told mission: the prior on the globe; the tracks until the detection over the prior,
    with the object's path and where it was found; the exact belief at that moment.

    Args:
        path: the PNG to write.
        scenario: the told scenario.
        record: its mission by the headline planner.
        evaluation: that mission played against ``objects``.
        objects: the scenario's hidden objects.
        index: which object is the told one.
        num_particles: particles of the prior drawn.
    """
    import matplotlib.pyplot as plt

    from manibo.plotting import (
        AzimuthalView,
        draw_density,
        draw_graticule,
        draw_land_and_sea,
        draw_path,
        draw_points,
    )

    ttd = float(evaluation.time_to_detection_h[index])
    found = math.isfinite(ttd)
    until = ttd if found else scenario.duration_h
    flown = [leg for leg in record.legs if leg.arrive_h <= until + 1e-9]
    if found:
        last = record.legs[int(evaluation.detection_leg[index])]
        share = (ttd - last.depart_h) / max(last.arrive_h - last.depart_h, 1e-9)
        flown = [leg for leg in flown if leg is not last]
        flown.append(
            Leg(
                last.asset,
                last.start,
                last.point_at(torch.tensor(min(max(share, 0.0), 1.0))),
                last.depart_h,
                ttd,
                last.sweep,
            )
        )
    particles = prior_particles(scenario, num_particles)
    fig, axes = plt.subplots(1, 3, figsize=(21, 7.2), constrained_layout=True)
    globe = AzimuthalView(scenario.datum, "orthographic")
    draw_land_and_sea(axes[0], globe, scenario.mask, size=440)
    draw_graticule(axes[0], globe, step_deg=15.0)
    image = draw_density(axes[0], globe, particles, bins=240, smooth_bins=1.2)
    for name, line in scenario.lines.items():
        draw_path(axes[0], globe, line, color="navy", ls="--", lw=1, zorder=4, label=name)
    _landmarks(axes[0], globe, scenario)
    extent = _extent(scenario, particles, flown)
    zoom = AzimuthalView(scenario.datum, "equidistant", extent)
    edge = np.linspace(-extent, extent, 30)
    side = np.full(30, extent)
    box, _ = zoom.unproject(
        np.concatenate([edge, side, edge[::-1], -side]),
        np.concatenate([-side, edge, side, edge[::-1]]),
    )
    draw_path(axes[0], globe, box, color="k", lw=0.8, zorder=6)
    axes[0].set_axis_off()
    axes[0].legend(loc="lower left", fontsize=8)
    axes[0].set_title(
        "a. The prior on the globe (orthographic view), the airfields;\nthe box is maps b and c",
        fontsize=10,
    )
    fig.colorbar(image, ax=axes[0], shrink=0.55, label="prior probability per 10,000 km²")

    outcome = f"found after {ttd:.1f} h" if found else f"not found in {scenario.duration_h:.0f} h"
    _zoom(
        axes[1],
        zoom,
        scenario,
        f"b. {label(record.planner)}: its {len(flown)} leg{'s' * (len(flown) != 1)} until "
        f"{until:.1f} h over the prior",
    )
    draw_density(axes[1], zoom, particles, bins=150)
    handles = _tracks(axes[1], zoom, scenario, flown) + _landmarks(axes[1], zoom, scenario)
    water_path = torch.stack([objects.comoving(t)[index] for t in np.linspace(0, until, 40)])
    handles += draw_path(
        axes[1],
        zoom,
        water_path,
        color="k",
        ls=":",
        lw=1.4,
        zorder=7,
        label="the object's path (hidden; diffusion)",
    )
    final = water_path[-1]
    if found:
        detector = scenario.drift.to_comoving(evaluation.detection_point[index], ttd)
        handles.append(
            draw_points(
                axes[1],
                zoom,
                final,
                marker="X",
                s=140,
                color="#e02020",
                edgecolor="k",
                lw=0.6,
                zorder=9,
                label=f"found here after {ttd:.1f} h",
            )
        )
        handles.append(
            draw_points(
                axes[1],
                zoom,
                detector,
                marker="o",
                s=40,
                facecolor="none",
                edgecolor="#e02020",
                lw=1.2,
                zorder=9,
                label="the detecting asset",
            )
        )
    else:
        handles.append(
            draw_points(
                axes[1],
                zoom,
                final,
                marker="x",
                s=120,
                color="#e02020",
                lw=1.6,
                zorder=9,
                label="the object (not found)",
            )
        )

    hazard = total_hazard(flown, scenario.drift, particles)
    weights = torch.exp(-hazard)
    _zoom(
        axes[2],
        zoom,
        scenario,
        f"c. The exact belief at {until:.1f} h ({outcome}; the plan had a\n"
        f"probability {evaluation.expected_found_by(until):.2f} of finding such an object by then)",
    )
    image = draw_density(axes[2], zoom, particles, weights, bins=150)
    _tracks(axes[2], zoom, scenario, flown, width=0.6)
    draw_points(
        axes[2], zoom, final, marker="X" if found else "x", s=120, color="#e02020", zorder=9
    )
    fig.colorbar(image, ax=axes[2], shrink=0.7, label="posterior probability per 10,000 km²")
    # two rows at most: a third overlapped the x-axis labels of maps b and c
    columns = max(1, math.ceil(len(handles) / 2))
    fig.legend(handles=handles, loc="outside lower center", ncol=columns, fontsize=9)
    fig.suptitle(
        f"{scenario.name}: the representative mission planned by {label(record.planner)} (the "
        "median of its times to detection)\nmaps b and c are in the water's frame: every "
        "position is carried back by the current to the time of the loss",
        fontsize=12,
    )
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def paths_figure(
    path: Path,
    scenario: Scenario,
    records: Mapping[str, MissionRecord],
    expected: Mapping[str, Tensor],
    hours: Tensor,
    num_particles: int,
) -> Path:
    """Every planner's tracks in one scenario over the prior (whole mission), and their expected
    fraction found in it."""
    import matplotlib.pyplot as plt

    from manibo.plotting import AzimuthalView, draw_density

    particles = prior_particles(scenario, num_particles)
    extent = max(_extent(scenario, particles, r.legs) for r in records.values())
    view = AzimuthalView(scenario.datum, "equidistant", extent)
    panels = len(records) + 1
    columns = min(4, panels)
    rows = math.ceil(panels / columns)
    fig, axes = plt.subplots(
        rows, columns, figsize=(5.2 * columns, 5.2 * rows), constrained_layout=True, squeeze=False
    )
    cells = list(axes.flat)
    handles = []
    for ax, (planner, record) in zip(cells, records.items(), strict=False):
        final = float(expected[planner][-1])
        _zoom(
            ax, view, scenario, f"{label(planner)}: {len(record.legs)} legs, found {final:.2f}", 200
        )
        draw_density(ax, view, particles, bins=110)
        tracks = _tracks(ax, view, scenario, record.legs, width=0.7)
        handles = handles or tracks
    curve_ax = cells[len(records)]
    for planner, curve in expected.items():
        curve_ax.plot(
            hours.numpy(), curve.numpy(), color=color(planner), lw=1.8, label=label(planner)
        )
    curve_ax.set_xlabel("mission time [h]")
    curve_ax.set_ylabel("expected fraction found")
    curve_ax.set_ylim(0, 1)
    curve_ax.grid(alpha=0.3)
    curve_ax.legend(fontsize=8, loc="upper left")
    curve_ax.set_title("this scenario's expected fraction found", fontsize=10)
    for ax in cells[panels:]:
        ax.set_axis_off()
    fig.legend(handles=handles, loc="outside lower center", ncol=len(handles), fontsize=9)
    fig.suptitle(
        f"{scenario.name}: each planner's tracks over the prior ({scenario.duration_h:.0f} h; "
        "the water's frame at the loss)",
        fontsize=12,
    )
    fig.savefig(path, dpi=75)
    plt.close(fig)
    return path
