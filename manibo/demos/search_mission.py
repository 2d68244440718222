"""``manibo demo search``: plan a multi-asset ocean search on the globe, and compare planners.

Every registered planner of :data:`~manibo.search.planners.COMPARED` flies the same scenarios (the
AF447-style one, then satellite arcs and lost flights on ocean routes, alternating), in worker
processes. Each mission is played to its end and then against hidden objects drawn from the
scenario's prior (:mod:`manibo.search.evaluation`): the table leads with the expected fraction
found over time and the hours to half found, then gives the realised times to detection. The
demo then tells one representative mission (the one at the median of the manibo planner's
realised times to detection) and writes figures and a JSON summary. Everything is offline and
reproducible from ``seed``.
"""

from __future__ import annotations

import datetime
import json
import math
import os
import platform
import signal
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from multiprocessing import get_context
from pathlib import Path

import torch

from manibo._machine import CORE_PACKAGES, cpu_model, package_versions
from manibo._validation import checked_device
from manibo.exceptions import ConfigurationError
from manibo.geo import unit_to_latlon
from manibo.search.assets import Asset
from manibo.search.evaluation import Evaluation, evaluate, scenario_objects
from manibo.search.legs import Leg
from manibo.search.metrics import hours_to_fraction, median, paired_difference, quantile
from manibo.search.mission import MissionRecord, Scenario, simulate
from manibo.search.ocean import ocean_mask
from manibo.search.planners import COMPARED, PLANNERS, make_planner
from manibo.search.scenarios import DEFAULT_DURATION_H, MissionSettings, af447_scenario, scenario

HEADLINE = "manibo"
#: Scenarios of the default demo (the first is the AF447-style one).
DEFAULT_SCENARIOS = 8
#: Hidden objects each plan is played against.
DEFAULT_OBJECTS = 300
FAMILY_CYCLE = ("arc", "route")
GRID_STEP_H = 0.5


@dataclass(frozen=True)
class DemoConfig:
    """Size and seeds of the demo.

    Attributes:
        num_scenarios: scenarios in the comparison (the first is the AF447-style one).
        duration_h: each mission's length in hours.
        seed: seeds every scenario.
        device: torch device of the simulations.
        workers: worker processes (1: run in this process).
        num_particles: particles of the exact belief.
        num_objects: hidden objects per scenario.
    """

    num_scenarios: int = DEFAULT_SCENARIOS
    duration_h: float = DEFAULT_DURATION_H
    seed: int = 0
    device: str = "cpu"
    workers: int = 2
    num_particles: int = 1500
    num_objects: int = DEFAULT_OBJECTS

    @property
    def checkpoints_h(self) -> list[float]:
        """Six evenly spaced checkpoints up to the mission's end (12 h apart for 72 h)."""
        return [self.duration_h * k / 6 for k in range(1, 7)]


def build_scenario(index: int, config: DemoConfig) -> Scenario:
    """Scenario ``index`` of the demo: 0 is AF447-style, then arcs and routes alternate."""
    settings = MissionSettings(duration_h=config.duration_h)
    mask = ocean_mask()
    if index == 0:
        return af447_scenario(config.seed, settings, mask, config.device)
    family = FAMILY_CYCLE[(index - 1) % len(FAMILY_CYCLE)]
    return scenario(family, config.seed * 100_003 + index, settings, mask, config.device)


def _grid(config: DemoConfig) -> torch.Tensor:
    return torch.arange(0, config.duration_h + 1e-9, GRID_STEP_H, dtype=torch.float64)


def _run_task(index: int, planner: str, config: DemoConfig) -> tuple:
    torch.set_num_threads(1)
    case = build_scenario(index, config)
    start = time.process_time()
    record = simulate(case, make_planner(planner), config.num_particles)
    evaluation = evaluate(record.legs, scenario_objects(case, config.num_objects), _grid(config))
    return index, planner, record, evaluation, time.process_time() - start


def compare(config: DemoConfig) -> tuple[dict, dict, dict]:
    """Every planner on every scenario: ``records``, ``evaluations`` and CPU ``seconds``, each
    keyed by ``(scenario index, planner id)``."""
    tasks = [(i, p) for i in range(config.num_scenarios) for p in COMPARED]
    records, evaluations, seconds = {}, {}, {}

    def collect(index, planner, record, evaluation, cpu):
        records[(index, planner)] = record
        evaluations[(index, planner)] = evaluation
        seconds[(index, planner)] = cpu

    if config.workers <= 1:
        for i, p in tasks:
            collect(*_run_task(i, p, config))
        return records, evaluations, seconds
    pool = ProcessPoolExecutor(
        config.workers, mp_context=get_context("spawn"), initializer=_ignore_interrupts
    )
    try:
        futures = [pool.submit(_run_task, i, p, config) for i, p in tasks]
        for done, future in enumerate(as_completed(futures), start=1):
            collect(*future.result())
            if done % max(1, len(tasks) // 8) == 0 or done == len(tasks):
                print(f"  {done}/{len(tasks)} missions done", flush=True)
    except BaseException:  # Ctrl-C or a mission's error: stop now, not after the missions in flight
        _stop(pool)
        raise
    pool.shutdown()
    return records, evaluations, seconds


def _ignore_interrupts() -> None:
    """In a worker: leave Ctrl-C to the main process, which ends the workers (no tracebacks)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _stop(pool: ProcessPoolExecutor) -> None:
    """Cancel the pool's pending missions and end its workers without waiting for them."""
    workers = list((pool._processes or {}).values())  # Python 3.14: pool.terminate_workers()
    pool.shutdown(wait=False, cancel_futures=True)
    for worker in workers:
        worker.terminate()


def summarise(evaluations: dict, seconds: dict, config: DemoConfig) -> dict:
    """Per planner: expected fraction found at the checkpoints, hours to half, realised times,
    and the headline planner's paired lead (JSON-ready)."""
    hours = _grid(config)
    at = [int(round(c / GRID_STEP_H)) for c in config.checkpoints_h]
    expected = _expected(evaluations, config)
    summary = {}
    for planner in COMPARED:
        ttd = _realised(evaluations, planner, config)
        mean = expected[planner].mean(0)
        half = hours_to_fraction(hours, mean)
        summary[planner] = {
            "label": PLANNERS.get(planner).label,
            "expected_found_at": {
                f"{c:g}": float(mean[i]) for c, i in zip(config.checkpoints_h, at, strict=True)
            },
            "hours_to_half_expected": half,
            "realised_found": float(torch.isfinite(ttd).double().mean()),
            "realised_median_ttd_h": _finite(median(ttd.flatten().tolist())),
            "realised_ttd_quartiles_h": [
                _finite(quantile(ttd.flatten().tolist(), q)) for q in (0.25, 0.75)
            ],
            "mean_cpu_s": sum(seconds[(i, planner)] for i in range(config.num_scenarios))
            / config.num_scenarios,
        }
        if planner != HEADLINE and config.num_scenarios > 1:
            gap, se = paired_difference(expected[HEADLINE][:, at], expected[planner][:, at])
            summary[planner]["manibo_lead_at"] = {
                f"{c:g}": {"mean": float(g), "standard_error": float(s)}
                for c, g, s in zip(config.checkpoints_h, gap, se, strict=True)
            }
    return summary


def _expected(evaluations: dict, config: DemoConfig) -> dict:
    return {
        p: torch.stack([evaluations[(i, p)].expected_found for i in range(config.num_scenarios)])
        for p in COMPARED
    }


def _realised(evaluations: dict, planner: str, config: DemoConfig) -> torch.Tensor:
    return torch.stack(
        [evaluations[(i, planner)].time_to_detection_h for i in range(config.num_scenarios)]
    )


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def print_table(summary: dict, config: DemoConfig) -> None:
    """The comparison table: expected fraction found first, then the realised detections."""
    checkpoints = list(next(iter(summary.values()))["expected_found_at"])
    print(
        f"\nExpected fraction found (mean over {config.num_scenarios} "
        f"scenario{'s' if config.num_scenarios != 1 else ''} of each plan's "
        "probability of success; no luck of objects or dice), then the realised detections:"
    )
    header = f"{'planner':24s} " + " ".join(f"{c + ' h':>7s}" for c in checkpoints)
    header += f" {'half at':>8s} | {'found':>6s} {'median TTD':>11s} {'TTD quartiles':>15s}"
    print(header)
    print("-" * len(header))
    for s in summary.values():
        values = " ".join(f"{v:7.3f}" for v in s["expected_found_at"].values())
        half, median_h = s["hours_to_half_expected"], s["realised_median_ttd_h"]
        quartiles = "–".join(_hours(v, "") for v in s["realised_ttd_quartiles_h"]) + " h"
        print(
            f"{s['label']:24s} {values} {_hours(half):>8s} | {s['realised_found']:6.1%} "
            f"{_hours(median_h):>11s} {quartiles:>15s}"
        )
    print(
        "(half at: the hour by which the expected fraction found reaches one half; right of |: "
        f"realised over {config.num_scenarios} × {config.num_objects} missions, each "
        "scenario's plan against each of its hidden objects; TTD = time to detection)"
    )
    lead = [(s["label"], s["manibo_lead_at"]) for s in summary.values() if "manibo_lead_at" in s]
    if lead:
        middle = checkpoints[len(checkpoints) // 2 - 1]
        gaps = [
            f"{n} {v[middle]['mean']:+.3f} ± {v[middle]['standard_error']:.3f}" for n, v in lead
        ]
        print(f"manibo's lead at {middle} h, paired by scenario (mean ± standard error):")
        print("  " + "; ".join(gaps))


def _hours(value: float | None, unit: str = " h") -> str:
    return "never" if value is None else f"{value:.1f}{unit}" if unit else f"{value:.0f}"


def representative(evaluations: dict, config: DemoConfig) -> tuple[int, int]:
    """The (scenario, object) whose realised time to detection is the median of the headline
    planner's (the lower median; ties broken by scenario, then object)."""
    ttd = _realised(evaluations, HEADLINE, config)
    order = torch.argsort(ttd.flatten(), stable=True)
    pick = int(order[(order.numel() - 1) // 2])
    return divmod(pick, ttd.shape[1])


def tell_mission(case: Scenario, record: MissionRecord, evaluation: Evaluation, index: int) -> None:
    """Print the representative mission: the scenario, each asset's legs, the detection."""
    ttd = float(evaluation.time_to_detection_h[index])
    until = ttd if math.isfinite(ttd) else case.duration_h
    lat, lon = (float(v) for v in unit_to_latlon(case.datum))
    planner = PLANNERS.get(record.planner).label
    parts = ", ".join(c.name for c in case.prior.components)
    speed = float(case.drift.velocity_kmh(case.datum).norm()) / 3.6
    print(f"\nThe representative mission (the median of {planner}'s times to detection):")
    print(f"  {case.name}. Datum {_latlon(lat, lon)}; prior: {parts}, at sea.")
    print(
        f"  Current {speed:.2f} m/s at the datum (a rotation about a tilted axis), diffusion "
        f"{case.drift.diffusion_km2_per_day:.0f} km²/day."
    )
    for a, asset in enumerate(case.assets):
        legs = [leg for leg in record.legs if leg.asset == a and leg.depart_h < until]
        km = sum(flown_km(asset, leg, until) for leg in legs)
        where = "sorties from its airfield" if asset.returns_to_base else "on scene"
        print(
            f"  {asset.name} ({asset.speed_kmh:.0f} km/h, {asset.sweep.width_km:.0f} km "
            f"{asset.sweep.law} sweep, {where}): {len(legs)} leg{'s' * (len(legs) != 1)} "
            f"begun and {km:,.0f} km flown by {until:.1f} h"
        )
    if math.isfinite(ttd):
        leg = record.legs[int(evaluation.detection_leg[index])]
        plat, plon = (float(v) for v in unit_to_latlon(evaluation.detection_point[index]))
        print(
            f"  DETECTED after {ttd:.1f} h by {case.assets[leg.asset].name} at "
            f"{_latlon(plat, plon)}; the plan had a probability "
            f"{evaluation.expected_found_by(ttd):.2f} of finding such an object by then."
        )
    else:
        print(f"  Not found within {case.duration_h:.0f} h.")


def flown_km(asset: Asset, leg: Leg, until_h: float) -> float:
    """Kilometres of ``leg`` that ``asset`` has flown by ``until_h``: the leg is flown at the
    asset's speed from its departure (any loiter comes after), so a leg under way counts in part."""
    hours = min(float(asset.hours(leg.start, leg.end)), max(0.0, until_h - leg.depart_h))
    return hours * asset.speed_kmh


def _latlon(lat: float, lon: float) -> str:
    return f"{abs(lat):.2f}°{'N' if lat >= 0 else 'S'} {abs(lon):.2f}°{'E' if lon >= 0 else 'W'}"


def run(
    out_dir: Path,
    num_scenarios: int = DEFAULT_SCENARIOS,
    duration_h: float = DEFAULT_DURATION_H,
    seed: int = 0,
    device: str = "cpu",
    workers: int = 2,
    num_particles: int = 1500,
    num_objects: int = DEFAULT_OBJECTS,
) -> dict:
    """The whole demo: compare the planners, print the table, tell a mission, write figures, JSON.

    Args:
        out_dir: folder for ``search_*.png`` and ``search_summary.json``.
        num_scenarios: scenarios in the comparison (the first is AF447-style).
        duration_h: each mission's length in hours.
        seed: reproduces everything.
        device: ``"cpu"`` or ``"cuda"``.
        workers: processes for the comparison (1 runs it in this process).
        num_particles: particles of the exact belief.
        num_objects: hidden objects per scenario.

    Returns:
        The JSON summary as a dict.
    """
    from manibo.search import figures

    if num_scenarios < 1 or workers < 1 or not duration_h > 0 or num_objects < 1:
        raise ConfigurationError(
            f"need num_scenarios >= 1, workers >= 1, duration_h > 0 and num_objects >= 1, got "
            f"{num_scenarios}, {workers}, {duration_h} and {num_objects}."
        )
    device = str(checked_device(device))
    wall, load_start = time.perf_counter(), _load_average()
    out_dir.mkdir(parents=True, exist_ok=True)
    config = DemoConfig(
        num_scenarios, duration_h, seed, device, workers, num_particles, num_objects
    )
    print("manibo search demo: an ocean search by two aircraft and a ship on the globe (offline).")
    print(
        f"Comparing {len(COMPARED)} planners on {num_scenarios} "
        f"scenario{'s' if num_scenarios != 1 else ''} of {duration_h:.0f} h "
        f"({workers} worker{'s' if workers != 1 else ''})...",
        flush=True,
    )
    records, evaluations, seconds = compare(config)
    summary = summarise(evaluations, seconds, config)
    print_table(summary, config)
    told_scenario, told_object = representative(evaluations, config)
    case = build_scenario(told_scenario, config)
    told = records[(told_scenario, HEADLINE)]
    tell_mission(case, told, evaluations[(told_scenario, HEADLINE)], told_object)
    hours = _grid(config)
    expected = _expected(evaluations, config)
    realised = {p: _realised(evaluations, p, config) for p in COMPARED}
    paths = [
        figures.expected_found_figure(out_dir / "search_pos_curves.png", hours, expected, realised),
        figures.time_to_detection_figure(
            out_dir / "search_time_to_detection.png", realised, duration_h
        ),
        figures.mission_figure(
            out_dir / "search_mission.png",
            case,
            told,
            evaluations[(told_scenario, HEADLINE)],
            scenario_objects(case, num_objects),
            told_object,
            num_particles,
        ),
        figures.paths_figure(
            out_dir / "search_paths.png",
            case,
            {p: records[(told_scenario, p)] for p in COMPARED},
            {p: expected[p][told_scenario] for p in COMPARED},
            hours,
            num_particles,
        ),
    ]
    result = {
        "config": {**vars(config), "checkpoints_h": config.checkpoints_h},
        "scenario_names": [records[(i, HEADLINE)].scenario for i in range(num_scenarios)],
        "planners": summary,
        "told_mission": {
            "scenario": told_scenario,
            "object": told_object,
            "name": case.name,
            "time_to_detection_h": _finite(
                float(evaluations[(told_scenario, HEADLINE)].time_to_detection_h[told_object])
            ),
        },
        "expected_found": {p: expected[p].mean(0).round(decimals=5).tolist() for p in COMPARED},
        "hours": hours.tolist(),
        "figures": [p.name for p in paths],
        "seconds": {
            "total": time.perf_counter() - wall,
            "cpu_per_mission": {p: summary[p]["mean_cpu_s"] for p in COMPARED},
        },
        "load_average_start_end": [load_start, _load_average()],
        "cpu_count": os.cpu_count(),
        "environment": {  # the plans depend on the machine's rounding (docs/search.md)
            "versions": package_versions((*CORE_PACKAGES, "scipy")),
            "python": platform.python_version(),
            "cpu_model": cpu_model(),
            "timestamp_utc": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        },
    }
    path = out_dir / "search_summary.json"
    path.write_text(json.dumps(result, indent=1) + "\n")
    print(
        f"\nWrote {', '.join(p.name for p in paths)} and {path.name} in {out_dir}/ "
        f"({result['seconds']['total']:.0f} s)."
    )
    return result


def _load_average() -> list[float] | None:
    try:
        return [round(v, 2) for v in os.getloadavg()]
    except OSError:
        return None
