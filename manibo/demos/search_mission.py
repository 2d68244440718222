"""``manibo demo search``: plan the search for a lost aircraft on the globe, and compare planners.

The demo tells one seeded AF447-style mission step by step (the manibo planner: a GP on S² driving a
travel-aware BoTorch acquisition), and meanwhile runs every planner on the same scenarios (the AF447
one and random ones over the world ocean) in worker processes. It prints a table and writes figures
and a JSON summary. Everything is offline and reproducible from ``seed``.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field, replace
from multiprocessing import get_context
from pathlib import Path

import torch
from torch import Tensor

from manibo._validation import checked_device
from manibo.exceptions import ConfigurationError
from manibo.search.geography import unit_to_latlon
from manibo.search.metrics import (
    median,
    pos_against_effort,
    pos_against_time,
    quantile,
    regret,
    survival,
    time_to_detection,
    travel_share,
)
from manibo.search.mission import MissionRecord, Scenario, StepRecord, simulate
from manibo.search.ocean import ocean_mask
from manibo.search.planners import ExpandingSquare, GPPlanner, GreedyBayes, Planner, RandomSearch
from manibo.search.scenarios import (
    DEFAULT_ENDURANCE_H,
    MissionSettings,
    af447_scenario,
    random_scenario,
)
from manibo.search.sensor import Outcome

MANIBO = "manibo GP (S²)"
#: Scenarios of the default comparison (the first is the AF447-style one).
DEFAULT_SCENARIOS = 80
PLANNERS: dict[str, Callable[[], Planner]] = {
    MANIBO: lambda: GPPlanner("sphere"),
    "GP on lat/lon": lambda: GPPlanner("latlon"),
    "greedy Bayes": GreedyBayes,
    "expanding square": ExpandingSquare,
    "random": RandomSearch,
}
COLORS = {
    MANIBO: "#1f5fbf",
    "GP on lat/lon": "#e08a1e",
    "greedy Bayes": "#2e9e4f",
    "expanding square": "#c43b3b",
    "random": "#7f7f7f",
}


@dataclass(frozen=True)
class DemoConfig:
    """Size and seeds of the demo.

    Attributes:
        num_scenarios: scenarios in the comparison (the first is the AF447-style one).
        budget_h: the asset's endurance in mission hours.
        seed: seeds the AF447 truth and every random scenario.
        device: torch device of the simulations.
        workers: worker processes for the comparison (1: run in this process).
        num_particles: particles of the exact belief.
    """

    num_scenarios: int = DEFAULT_SCENARIOS
    budget_h: float = DEFAULT_ENDURANCE_H
    seed: int = 0
    device: str = "cpu"
    workers: int = 2
    num_particles: int = 1500
    settings: MissionSettings = field(init=False)

    def __post_init__(self) -> None:
        asset = replace(MissionSettings().asset, endurance_hours=self.budget_h)
        object.__setattr__(self, "settings", MissionSettings(asset=asset))


def build_scenario(index: int, config: DemoConfig) -> Scenario:
    """Scenario ``index`` of the comparison: 0 is AF447-style, the others are random."""
    mask = ocean_mask()
    if index == 0:
        return af447_scenario(config.settings, mask, seed=config.seed, device=config.device)
    return random_scenario(config.seed * 100_003 + index, config.settings, mask, config.device)


def _run_task(
    index: int, planner: str, config: DemoConfig
) -> tuple[int, str, MissionRecord, float]:
    torch.set_num_threads(1)
    start = time.perf_counter()
    record = simulate(build_scenario(index, config), PLANNERS[planner](), config.num_particles)
    return index, planner, record, time.perf_counter() - start


def _narrate(step: StepRecord) -> None:
    lat, lon = (float(v) for v in unit_to_latlon(step.point))
    outcome = {
        Outcome.NOTHING: "nothing",
        Outcome.CONTACT: "a contact; investigated: not the object",
        Outcome.FOUND: "CONTACT CONFIRMED - the object is found",
    }[step.outcome]
    print(
        f"  {step.index + 1:3d}  t={step.arrive_h:6.1f} h  transit {step.transit_km:5.0f} km  "
        f"search {abs(lat):5.2f}°{'N' if lat >= 0 else 'S'} "
        f"{abs(lon):6.2f}°{'E' if lon >= 0 else 'W'}"
        f": {outcome:8s}  POS {step.pos:.3f}  cumulative {step.cumulative_pos:.3f}  "
        f"[hidden: object {step.truth_distance_km:4.0f} km away]"
    )


def introduce_mission(scenario: Scenario) -> None:
    """Print the told mission's setting: prior, current, asset, sensor, planner."""
    s, a = scenario.sensor, scenario.asset
    print(f"\nThe mission: {scenario.name}")
    lat, lon = (float(v) for v in unit_to_latlon(scenario.lkp))
    print(
        f"  Last known position {lat:.2f}°N {abs(lon):.2f}°W; prior = 0.50 LKP blob "
        "+ 0.35 corridor "
        "ahead on the great circle to Paris + 0.15 reverse-drift sighting, masked to the ocean."
    )
    print(
        f"  Current {float(scenario.drift.velocity_kmh(scenario.lkp).norm()) / 3.6:.2f} m/s "
        "at the LKP "
        "(solid-body rotation about a tilted axis) "
        f"+ diffusion {scenario.drift.diffusion_km2_per_day:.0f} km²/day."
    )
    print(
        f"  Asset: {a.speed_kmh:.0f} km/h, {a.search_hours:.0f} h per search, endurance "
        f"{a.endurance_hours:.0f} h. Sensor: POD {s.max_pod:.2f}·exp(-½(d/{s.range_km:.0f} km)²), "
        f"false alarms {s.false_alarm:.2f} per search, confirmation {s.confirm_pod:.2f}."
    )


def tell_mission(record: MissionRecord) -> None:
    """Print the told mission step by step, then how it ended."""
    print(f"  Planner: {record.planner}. Step by step:")
    for step in record.steps:
        _narrate(step)
    if record.found:
        print(f"  Found after {record.time_to_detection_h:.1f} h and {len(record.steps)} searches.")
    else:
        last = record.steps[-1].cumulative_pos if record.steps else 0.0
        print(f"  Not found within {record.endurance_h:.0f} h; cumulative POS {last:.3f}.")


def compare(config: DemoConfig) -> tuple[dict, dict]:
    """Every planner on every scenario; returns ``records[(index, planner)]`` and seconds.

    The told mission (scenario 0, the manibo planner) runs first and is printed step by step as
    soon as it is done; with ``config.workers > 1`` the others run meanwhile in worker processes.
    """
    told = (0, MANIBO)
    tasks = [told] + [
        (index, name)
        for name in PLANNERS
        for index in range(config.num_scenarios)
        if (index, name) != told
    ]
    records, seconds = {}, {}

    def collect(index: int, name: str, record: MissionRecord, secs: float) -> None:
        records[(index, name)], seconds[(index, name)] = record, secs
        if (index, name) == told:
            tell_mission(record)
            print(
                f"\nComparing {len(PLANNERS)} planners on {config.num_scenarios} scenarios "
                f"({config.workers} workers)...",
                flush=True,
            )

    if config.workers <= 1:
        for index, name in tasks:
            collect(*_run_task(index, name, config))
        return records, seconds
    done = 0
    with ProcessPoolExecutor(config.workers, mp_context=get_context("spawn")) as pool:
        futures = [pool.submit(_run_task, i, n, config) for i, n in tasks]
        for future in as_completed(futures):
            collect(*future.result())
            done += 1
            if done % max(1, len(tasks) // 10) == 0 or done == len(tasks):
                print(f"  comparison: {done}/{len(tasks)} missions done", flush=True)
    return records, seconds


def summarise(records: dict, config: DemoConfig) -> dict:
    """Per-planner metrics over the scenarios (JSON-ready)."""
    summary = {}
    for name in PLANNERS:
        runs = [records[(i, name)] for i in range(config.num_scenarios)]
        ttd = [time_to_detection(r) for r in runs]
        final = [r.steps[-1].cumulative_pos if r.steps else 0.0 for r in runs]
        regrets = [regret(r) for r in runs]
        summary[name] = {
            "found": sum(math.isfinite(t) for t in ttd),
            "missions": len(runs),
            "median_ttd_h": _finite_or_none(median(ttd)),
            "ttd_q25_h": _finite_or_none(quantile(ttd, 0.25)),
            "ttd_q75_h": _finite_or_none(quantile(ttd, 0.75)),
            "mean_final_cumulative_pos": sum(final) / len(final),
            "mean_travel_share": sum(travel_share(r) for r in runs) / len(runs),
            "mean_searches": sum(len(r.steps) for r in runs) / len(runs),
            "mean_adjusted_regret": sum(g["adjusted"] for g in regrets) / len(runs),
            "mean_myopic_regret": sum(g["myopic"] for g in regrets) / len(runs),
            "time_to_detection_h": [_finite_or_none(t) for t in ttd],
        }
    return summary


def _finite_or_none(value: float) -> float | None:
    return value if math.isfinite(value) else None


def print_table(summary: dict, config: DemoConfig) -> None:
    """The comparison table on stdout."""
    print(
        f"\nAll planners on {config.num_scenarios} scenarios (endurance {config.budget_h:.0f} h; "
        "TTD = time to detection, censored missions count as never):"
    )
    header = (
        f"{'planner':18s} {'found':>7s} {'median TTD [h]':>15s} {'IQR [h]':>15s} "
        f"{'cum. POS':>9s} {'travel':>7s} {'regret':>7s} {'searches':>9s}"
    )
    print(header)
    print("-" * len(header))
    for name, s in summary.items():
        med = "never" if s["median_ttd_h"] is None else f"{s['median_ttd_h']:.1f}"
        q25 = "never" if s["ttd_q25_h"] is None else f"{s['ttd_q25_h']:.0f}"
        q75 = "never" if s["ttd_q75_h"] is None else f"{s['ttd_q75_h']:.0f}"
        print(
            f"{name:18s} {s['found']:3d}/{s['missions']:<3d} {med:>15s} {q25 + '–' + q75:>15s} "
            f"{s['mean_final_cumulative_pos']:9.3f} {s['mean_travel_share']:7.2f} "
            f"{s['mean_adjusted_regret']:7.2f} {s['mean_searches']:9.1f}"
        )


def _curves(records: dict, config: DemoConfig) -> dict:
    """Per planner and scenario: cumulative POS against time and effort, and the fraction found
    against time, on 161 points each (probabilities to 6 decimals, which keeps the JSON small)."""
    hours = torch.linspace(0, config.budget_h, 161, dtype=torch.float64)
    effort = torch.linspace(0, config.budget_h, 161, dtype=torch.float64)

    def listed(values: Tensor) -> list:
        return values.round(decimals=6).tolist()

    out = {"hours": hours.tolist(), "effort_hours": effort.tolist(), "planners": {}}
    for name in PLANNERS:
        runs = [records[(i, name)] for i in range(config.num_scenarios)]
        out["planners"][name] = {
            "cumulative_pos_vs_time": listed(
                torch.stack([pos_against_time(r, hours) for r in runs])
            ),
            "cumulative_pos_vs_effort": listed(
                torch.stack([pos_against_effort(r, effort) for r in runs])
            ),
            "fraction_found_vs_time": listed(
                1 - survival([time_to_detection(r) for r in runs], hours)
            ),
        }
    return out


def _mission_json(record: MissionRecord) -> dict:
    return {
        "scenario": record.scenario,
        "planner": record.planner,
        "found": record.found,
        "time_to_detection_h": record.time_to_detection_h,
        "steps": [
            {
                "lat_lon": [round(float(v), 4) for v in unit_to_latlon(s.point)],
                "arrive_h": round(s.arrive_h, 3),
                "transit_km": round(s.transit_km, 2),
                "outcome": s.outcome.name.lower(),
                "pos": s.pos,
                "cumulative_pos": s.cumulative_pos,
            }
            for s in record.steps
        ],
    }


def run(
    out_dir: Path,
    num_scenarios: int = DEFAULT_SCENARIOS,
    budget_h: float = DEFAULT_ENDURANCE_H,
    seed: int = 0,
    device: str = "cpu",
    workers: int = 2,
    num_particles: int = 1500,
) -> dict:
    """The whole demo: tell one mission, compare the planners, print a table, write figures, JSON.

    Args:
        out_dir: folder for ``search_*.png`` and ``search_summary.json``.
        num_scenarios: scenarios in the comparison (at least 1; the first is AF447-style).
        budget_h: the asset's endurance in hours.
        seed: reproduces everything.
        device: ``"cpu"`` or ``"cuda"``.
        workers: processes for the comparison (1 runs it in this process).
        num_particles: particles of the exact belief.

    Returns:
        The JSON summary as a dict.
    """
    from manibo.demos import search_figures

    if num_scenarios < 1 or workers < 1 or budget_h <= 0:
        raise ConfigurationError(
            f"need num_scenarios >= 1, workers >= 1 and budget_h > 0, got {num_scenarios}, "
            f"{workers} and {budget_h}."
        )
    device = str(checked_device(device))
    wall = time.perf_counter()
    load_start = _load_average()
    out_dir.mkdir(parents=True, exist_ok=True)
    config = DemoConfig(num_scenarios, budget_h, seed, device, workers, num_particles)
    print("manibo search demo: planning the search for a lost aircraft on the globe (offline).")
    mask_start = time.perf_counter()
    ocean_mask()
    mask_seconds = time.perf_counter() - mask_start
    scenario = build_scenario(0, config)
    introduce_mission(scenario)
    records, seconds = compare(config)
    summary = summarise(records, config)
    print_table(summary, config)
    curves = _curves(records, config)
    figures = search_figures.write_all(out_dir, scenario, records, summary, curves, config, COLORS)
    result = {
        "config": {k: v for k, v in vars(config).items() if k != "settings"},
        "scenario_names": [records[(i, MANIBO)].scenario for i in range(num_scenarios)],
        "planners": summary,
        "told_mission": _mission_json(records[(0, MANIBO)]),
        "curves": curves,
        "figures": [p.name for p in figures],
        "seconds": {
            "total": time.perf_counter() - wall,
            "ocean_mask": mask_seconds,
            "told_mission": seconds[(0, MANIBO)],
            "per_planner_mission_mean": {
                name: sum(seconds[(i, name)] for i in range(num_scenarios)) / num_scenarios
                for name in PLANNERS
            },
        },
        "load_average_start_end": [load_start, _load_average()],
        "cpu_count": os.cpu_count(),
    }
    path = out_dir / "search_summary.json"
    path.write_text(json.dumps(result, indent=1) + "\n")
    print(
        f"\nWrote {', '.join(p.name for p in figures)} and {path.name} in {out_dir}/ "
        f"({result['seconds']['total']:.0f} s)."
    )
    return result


def _load_average() -> list[float] | None:
    try:
        return [round(v, 2) for v in os.getloadavg()]
    except OSError:
        return None
