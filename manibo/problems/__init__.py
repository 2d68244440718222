"""Benchmark problems on spaces, with known optima, by name (``make_problem("ackley-sphere5")``)."""

from __future__ import annotations

import re

from manibo.exceptions import ConfigurationError
from manibo.problems.base import SpaceProblem

_SPHERE_PROBLEMS = {
    "ackley": "AckleySphere",
    "rosenbrock": "RosenbrockSphere",
    "styblinski-tang": "StyblinskiTangSphere",
    "product-of-sines": "ProductOfSinesSphere",
}

PROBLEM_NAMES = [f"{k}-sphere<d>" for k in _SPHERE_PROBLEMS] + [
    "arm-torus<n>",
    "orientation-so<n>",
    "pose-se3",
    "bumps-mesh",
    "bumps-graph",
]


def make_problem(name: str, noise_std: float = 0.0) -> SpaceProblem:
    """Build a problem by name.

    Valid names include ``ackley-sphere5``, ``rosenbrock-sphere3``, ``styblinski-tang-sphere2``,
    ``product-of-sines-sphere3``, ``arm-torus3``, ``orientation-so3``, ``orientation-so4`` (any
    ``n >= 3``), ``pose-se3``, ``bumps-mesh`` and ``bumps-graph``.
    """
    match = re.fullmatch(r"([a-z-]+)-sphere(\d+)", name)
    if match and match.group(1) in _SPHERE_PROBLEMS:
        from manibo.problems import sphere

        return getattr(sphere, _SPHERE_PROBLEMS[match.group(1)])(
            int(match.group(2)), noise_std=noise_std
        )
    match = re.fullmatch(r"arm-torus(\d+)", name)
    if match:
        from manibo.problems.torus import ArmReachTorus

        return ArmReachTorus(int(match.group(1)), noise_std=noise_std)
    if name == "orientation-so3":
        from manibo.problems.rotation import OrientationAckley

        return OrientationAckley(noise_std=noise_std)
    match = re.fullmatch(r"orientation-so(\d+)", name)
    if match and int(match.group(1)) >= 4:
        from manibo.problems.rotation import OrientationAckleySO

        return OrientationAckleySO(int(match.group(1)), noise_std=noise_std)
    if name == "pose-se3":
        from manibo.problems.pose import PoseAckleySE3

        return PoseAckleySE3(noise_std=noise_std)
    if name in ("bumps-mesh", "bumps-graph"):
        from manibo.problems.discrete import BumpsOnGraph, BumpsOnMesh

        return (BumpsOnMesh if name == "bumps-mesh" else BumpsOnGraph)(noise_std=noise_std)
    raise ConfigurationError(f"unknown problem {name!r}; known: {', '.join(PROBLEM_NAMES)}.")


__all__ = ["PROBLEM_NAMES", "SpaceProblem", "make_problem"]
