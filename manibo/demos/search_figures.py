"""Figures of the search demo: the told mission on the globe, planners' paths, POS curves, TTDs."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import torch

from manibo.search.geography import distance_km, great_circle_track
from manibo.search.mission import MissionRecord, Scenario, prior_particles
from manibo.search.sensor import Outcome

MANIBO = "manibo GP (S²)"


def write_all(
    out_dir: Path,
    scenario: Scenario,
    records: dict,
    summary: dict,
    curves: dict,
    config,
    colors: dict,
) -> list[Path]:
    """Write the four PNG figures into ``out_dir``; returns their paths."""
    import matplotlib

    matplotlib.use("Agg")
    told = records[(0, MANIBO)]
    paths = [
        mission_figure(out_dir / "search_mission.png", scenario, told, config.num_particles),
        paths_figure(out_dir / "search_paths.png", scenario, records, colors, config.num_particles),
        pos_figure(out_dir / "search_pos_curves.png", curves, colors, config.num_scenarios),
        ttd_figure(out_dir / "search_time_to_detection.png", summary, colors, config),
    ]
    return paths


def _comoving_searches(scenario: Scenario, record: MissionRecord) -> torch.Tensor:
    """Where the water searched at each step was at the loss, ``(steps, 3)``."""
    points = torch.stack([s.point for s in record.steps])
    hours = torch.tensor([s.arrive_h for s in record.steps], dtype=points.dtype)
    return scenario.drift.to_comoving(points, hours.to(points.device))


def _comoving_truth(scenario: Scenario, record: MissionRecord) -> torch.Tensor:
    """The object's track carried back to the loss (only its diffusion remains), ``(k, 3)``."""
    if not record.steps:
        return scenario.truth.unsqueeze(0)
    hours = torch.tensor([s.arrive_h for s in record.steps], dtype=scenario.truth.dtype)
    back = scenario.drift.to_comoving(record.truth_track, hours.to(scenario.truth.device))
    return torch.cat([scenario.truth.unsqueeze(0), back])


def _comoving_belief(scenario: Scenario, record: MissionRecord) -> torch.Tensor:
    """The final belief's particles carried back to the loss, ``(n, 3)``."""
    if not record.steps:
        return record.belief.positions
    last = record.steps[-1]
    hours = last.arrive_h if record.found else last.end_h
    return scenario.drift.to_comoving(record.belief.positions, hours)


def _zoom_extent(scenario: Scenario, record: MissionRecord, particles: torch.Tensor) -> float:
    reach = [distance_km(particles, scenario.lkp).quantile(0.99)]
    if record.steps:
        reach.append(distance_km(_comoving_searches(scenario, record), scenario.lkp).max())
    reach.append(distance_km(_comoving_truth(scenario, record), scenario.lkp).max())
    reach.append(distance_km(scenario.start, scenario.lkp))
    return float(max(reach)) * 1.12


def _zoom_axes(ax, view, mask, title):
    from manibo.plotting import draw_graticule, draw_land_and_sea

    draw_land_and_sea(ax, view, mask, size=420)
    draw_graticule(ax, view, step_deg=5.0, labels=True)
    ax.set_xlabel("km east of the last known position (water's frame at the loss)")
    ax.set_ylabel("km north of the last known position")
    ax.set_title(title, fontsize=10)


def _markers(ax, view, scenario: Scenario, record: MissionRecord, path_color: str):
    from manibo.plotting import draw_path, draw_points

    landmarks = [
        (
            scenario.lkp,
            {
                "marker": "*",
                "s": 160,
                "color": "#10b0b0",
                "edgecolor": "k",
                "linewidth": 0.5,
                "label": "last known position",
            },
        ),
        (
            scenario.sighting,
            {
                "marker": "^",
                "s": 60,
                "color": "#f0d020",
                "edgecolor": "k",
                "linewidth": 0.5,
                "label": "reverse-drift sighting",
            },
        ),
        (scenario.start, {"marker": "s", "s": 40, "color": "k", "label": "asset start"}),
    ]
    handles = [draw_points(ax, view, point, zorder=8, **style) for point, style in landmarks]
    if record.steps:
        searched = _comoving_searches(scenario, record)
        points = torch.cat([scenario.start.unsqueeze(0), searched])
        handles += draw_path(
            ax,
            view,
            points,
            color=path_color,
            linewidth=1.2,
            zorder=6,
            label="search path",
        )
        handles.append(
            draw_points(
                ax,
                view,
                searched,
                s=14,
                color=path_color,
                edgecolor="white",
                linewidth=0.4,
                zorder=7,
                label="searched points",
            )
        )
        contacts = [
            p for p, s in zip(searched, record.steps, strict=True) if s.outcome == Outcome.CONTACT
        ]
        if contacts:
            handles.append(
                draw_points(
                    ax,
                    view,
                    torch.stack(contacts),
                    marker="D",
                    s=30,
                    facecolor="none",
                    edgecolor="#d02090",
                    zorder=8,
                    label="false contact",
                )
            )
    handles += draw_path(
        ax,
        view,
        _comoving_truth(scenario, record),
        color="k",
        linestyle=":",
        linewidth=1.2,
        zorder=6,
        label="the object's drift (hidden)",
    )
    final = _comoving_truth(scenario, record)[-1]
    label = "object found" if record.found else "object (not found)"
    style = (
        {"marker": "X", "edgecolor": "k", "linewidth": 0.6}
        if record.found
        else {"marker": "x", "linewidth": 1.6}
    )
    handles.append(
        draw_points(ax, view, final, s=110, color="#e02020", zorder=9, label=label, **style)
    )
    return handles


def mission_figure(
    path: Path, scenario: Scenario, record: MissionRecord, num_particles: int
) -> Path:
    """Globe with the prior; the mission's path over the prior; the final belief, searches."""
    import matplotlib.pyplot as plt

    from manibo.plotting import (
        AzimuthalView,
        draw_density,
        draw_graticule,
        draw_land_and_sea,
        draw_path,
        draw_points,
    )

    particles = prior_particles(scenario, num_particles)
    fig, axes = plt.subplots(1, 3, figsize=(20, 6.8), constrained_layout=True)
    globe = AzimuthalView(scenario.lkp, "orthographic")
    draw_land_and_sea(axes[0], globe, scenario.mask, size=520)
    draw_graticule(axes[0], globe, step_deg=15.0)
    image = draw_density(axes[0], globe, particles, bins=260, smooth_bins=1.2)
    route = great_circle_track(scenario.origin, scenario.destination, 200)
    draw_path(
        axes[0],
        globe,
        route,
        color="navy",
        linestyle="--",
        linewidth=1,
        zorder=4,
        label="great-circle route",
    )
    draw_points(
        axes[0],
        globe,
        scenario.lkp,
        marker="*",
        s=160,
        color="#10b0b0",
        edgecolor="k",
        linewidth=0.5,
        zorder=8,
        label="last known position",
    )
    extent = _zoom_extent(scenario, record, particles)
    zoom = AzimuthalView(scenario.lkp, "equidistant", extent)
    box = np.array([[-1, -1], [1, -1], [1, 1], [-1, 1], [-1, -1]]) * extent
    boundary = torch.stack([_unproject(zoom, x, y) for x, y in _densify(box)])
    draw_path(axes[0], globe, boundary, color="k", linewidth=0.8, zorder=6, label="map b, c")
    axes[0].set_axis_off()
    axes[0].legend(loc="lower left", fontsize=8)
    axes[0].set_title(
        "a. The prior on the globe: LKP blob, route corridor,\n"
        "reverse-drift sighting (orthographic view)",
        fontsize=10,
    )
    fig.colorbar(image, ax=axes[0], shrink=0.6, label="prior probability per 10,000 km²")

    _zoom_axes(
        axes[1],
        zoom,
        scenario.mask,
        f"b. {record.planner}: its {len(record.steps)} searches, in order, over the prior",
    )
    draw_density(axes[1], zoom, particles, bins=140)
    handles = _markers(axes[1], zoom, scenario, record, "#1f5fbf")
    _number_steps(axes[1], zoom, scenario, record)
    fig.legend(handles=handles, loc="outside lower center", ncol=len(handles), fontsize=9)

    outcome = (
        f"found after {record.time_to_detection_h:.0f} h"
        if record.found
        else f"not found in {record.endurance_h:.0f} h"
    )
    _zoom_axes(
        axes[2],
        zoom,
        scenario.mask,
        f"c. The exact belief at the end ({outcome}; cumulative POS "
        f"{record.steps[-1].cumulative_pos if record.steps else 0:.2f})",
    )
    belief = _comoving_belief(scenario, record)
    image = draw_density(axes[2], zoom, belief, record.belief.weights, bins=140)
    _markers(axes[2], zoom, scenario, record, "#1f5fbf")
    fig.colorbar(image, ax=axes[2], shrink=0.8, label="posterior probability per 10,000 km²")
    fig.suptitle(
        f"{scenario.name}: one search mission planned by manibo "
        f"(sensor range {scenario.sensor.range_km:.0f} km, "
        f"asset {scenario.asset.speed_kmh:.0f} km/h, "
        f"current {_current_ms(scenario):.2f} m/s at the LKP)\n"
        "maps b and c are in the water's frame: every position is carried back by the current to "
        "the time of the loss",
        fontsize=12,
    )
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def _current_ms(scenario: Scenario) -> float:
    return float(scenario.drift.velocity_kmh(scenario.lkp).norm()) / 3.6


def _number_steps(ax, view, scenario: Scenario, record: MissionRecord) -> None:
    if not record.steps:
        return
    points = _comoving_searches(scenario, record)
    for step in record.steps[:: max(1, len(record.steps) // 12)]:
        xy, visible = view.project(points[step.index])
        if bool(visible):
            ax.annotate(
                str(step.index + 1),
                xy,
                fontsize=7,
                color="#0b2f6b",
                zorder=9,
                xytext=(3, 3),
                textcoords="offset points",
            )


def _densify(corners: np.ndarray, per_edge: int = 40) -> list[tuple[float, float]]:
    points = []
    for a, b in zip(corners[:-1], corners[1:], strict=True):
        for t in np.linspace(0, 1, per_edge, endpoint=False):
            points.append(tuple(a + t * (b - a)))
    return points


def _unproject(view, x: float, y: float) -> torch.Tensor:
    points, _ = view.unproject(np.array(x), np.array(y))
    return points


def paths_figure(
    path: Path, scenario: Scenario, records: dict, colors: dict, num_particles: int
) -> Path:
    """Every planner's search path in the AF447-style scenario, over the prior; one legend."""
    import matplotlib.pyplot as plt

    from manibo.plotting import AzimuthalView, draw_density

    names = [name for (index, name) in records if index == 0]
    particles = prior_particles(scenario, num_particles)
    extent = max(_zoom_extent(scenario, records[(0, n)], particles) for n in names)
    view = AzimuthalView(scenario.lkp, "equidistant", extent)
    columns = min(3, len(names) + 1)
    rows = math.ceil((len(names) + 1) / columns)
    fig, axes = plt.subplots(
        rows, columns, figsize=(5.4 * columns, 5.4 * rows), constrained_layout=True, squeeze=False
    )
    cells = list(axes.flat)
    entries = {}  # one legend entry per label, over all maps
    for ax, name in zip(cells, names, strict=False):
        record = records[(0, name)]
        ttd = f"found at {record.time_to_detection_h:.0f} h" if record.found else "not found"
        _zoom_axes(ax, view, scenario.mask, f"{name}: {len(record.steps)} searches, {ttd}")
        draw_density(ax, view, particles, bins=120)
        for handle in _markers(ax, view, scenario, record, colors.get(name, "C0")):
            entries.setdefault(handle.get_label(), _neutral(handle))
    legend = cells[len(names)]
    legend.set_axis_off()
    legend.legend(
        handles=list(entries.values()),
        loc="center",
        fontsize=10,
    )
    for ax in cells[len(names) + 1 :]:
        ax.set_axis_off()
    fig.suptitle(
        f"{scenario.name}: the same mission planned by each planner (the prior underneath; "
        "the water's frame at the loss)",
        fontsize=12,
    )
    fig.savefig(path, dpi=80)
    plt.close(fig)
    return path


def _neutral(handle):
    """The legend entry of ``handle``, drawn in grey when it shows a planner's own colour."""
    from matplotlib.lines import Line2D

    label = handle.get_label()
    if label == "search path":
        return Line2D([], [], color="0.35", linewidth=1.2, label="search path (planner's colour)")
    if label == "searched points":
        return Line2D([], [], color="0.35", marker="o", linestyle="", markersize=4, label=label)
    return handle


def pos_figure(path: Path, curves: dict, colors: dict, num_scenarios: int) -> Path:
    """Mean cumulative POS against mission time and against effort; fraction found against time."""
    import matplotlib.pyplot as plt

    from manibo.plotting import plot_mean_curves

    hours = np.asarray(curves["hours"])
    effort = np.asarray(curves["effort_hours"])
    planners = curves["planners"]
    fig, axes = plt.subplots(1, 3, figsize=(17, 4.8), constrained_layout=True)
    plot_mean_curves(
        axes[0], hours, {n: c["cumulative_pos_vs_time"] for n, c in planners.items()}, colors
    )
    axes[0].set_xlabel("mission time [h] (transit included)")
    axes[0].set_ylabel("cumulative probability of success")
    axes[0].set_title(
        "a. Cumulative POS against mission time (mean over scenarios,\n"
        "band: quartiles; a mission stops gaining when it finds the object)",
        fontsize=10,
    )
    plot_mean_curves(
        axes[1], effort, {n: c["cumulative_pos_vs_effort"] for n, c in planners.items()}, colors
    )
    axes[1].set_xlabel("search effort [h on task] (transit excluded)")
    axes[1].set_ylabel("cumulative probability of success")
    axes[1].set_title("b. Cumulative POS against search effort", fontsize=10)
    for name, c in planners.items():
        axes[2].step(
            hours,
            c["fraction_found_vs_time"],
            where="post",
            label=name,
            color=colors.get(name),
            linewidth=1.8,
        )
    axes[2].axhline(0.5, color="0.4", linewidth=0.9, linestyle=":")
    axes[2].set_xlabel("mission time [h]")
    axes[2].set_ylabel("fraction of missions that found the object")
    axes[2].set_title(
        f"c. Fraction found by time t ({num_scenarios} scenarios);\n"
        "a curve crosses the dotted line at its median time to detection",
        fontsize=10,
    )
    for ax in axes:
        ax.set_ylim(0, 1)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="upper left")
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def ttd_figure(path: Path, summary: dict, colors: dict, config) -> Path:
    """Time to detection per planner over the scenarios (censored missions marked at the right)."""
    import matplotlib.pyplot as plt

    from manibo.plotting import plot_censored_distributions

    values = {
        name: [math.inf if t is None else t for t in s["time_to_detection_h"]]
        for name, s in summary.items()
    }
    fig, ax = plt.subplots(figsize=(9, 4.5), constrained_layout=True)
    plot_censored_distributions(
        ax,
        values,
        f"not found in {config.budget_h:.0f} h",
        colors,
        censor_at=config.budget_h * 1.05,
    )
    ax.set_xlabel("time to detection [h of mission time]")
    ax.set_title(
        f"Time to detection over {config.num_scenarios} scenarios: one dot per mission, × not "
        f"found in {config.budget_h:.0f} h\n(box: median and quartiles of all missions, those "
        "not found counted as never, as in the table)",
        fontsize=10,
    )
    ax.grid(axis="x", alpha=0.3)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
