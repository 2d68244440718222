"""Benchmark problems by name: single problems (``orientation-so3``) and families with an integer
parameter (``ackley-sphere`` + a dimension: ``ackley-sphere5``), in one registry."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from manibo.exceptions import ConfigurationError
from manibo.problems.base import SpaceProblem
from manibo.registry import Entry, Registry

ProblemBuilder = Callable[..., SpaceProblem]


@dataclass(frozen=True)
class ProblemEntry(Entry):
    """A problem class or builder; a family names its integer parameter and the parameter's minimum.

    Attributes:
        parameter: None for a single problem, built as ``build(noise_std=...)``; for a family, the
            parameter's name in listings (``"d"`` shows as ``ackley-sphere<d>``), and the family is
            built as ``build(value, noise_std=...)`` from the digits that end the name.
        minimum: the smallest value of the parameter.
    """

    parameter: str | None = None
    minimum: int = 1


PROBLEMS: Registry[ProblemEntry] = Registry("problem")
_FAMILY_MEMBER = re.compile(r"(?P<family>.*\D)(?P<value>\d+)")


def register_problem(
    name: str, parameter: str | None = None, minimum: int = 1
) -> Callable[[ProblemBuilder], ProblemBuilder]:
    """Decorator registering a problem class (or any builder of a :class:`SpaceProblem`).

    Args:
        name: a single problem's name, or a family's name without its parameter
            (``"ackley-sphere"`` for ``ackley-sphere2``, ``ackley-sphere5``, ...).
        parameter: None for a single problem, built as ``build(noise_std=noise_std)``. For a family,
            the name of its integer parameter as listings show it (``"d"``); ``name`` followed by
            digits builds ``build(int(digits), noise_std=noise_std)``.
        minimum: a family's smallest parameter value; smaller values are refused with a clear error.

    Raises:
        ConfigurationError: ``name`` is taken, or a family's ``name`` ends with a digit (its
            members' names could not be split into family and parameter).
    """
    if parameter is not None and name[-1:].isdigit():
        raise ConfigurationError(
            f"a problem family's name must not end with a digit, got {name!r}: its members are "
            f"named by appending the {parameter!r} value. Add a separator, e.g. {name + '-'!r}."
        )

    def decorate(build: ProblemBuilder) -> ProblemBuilder:
        PROBLEMS.register(name, ProblemEntry(build, parameter, int(minimum)))
        return build

    return decorate


def available_problems() -> list[str]:
    """Problem names for listings, families with their parameter (``ackley-sphere<d>``), sorted."""
    return sorted(_listed(name, PROBLEMS.get(name)) for name in PROBLEMS.names())


def _listed(name: str, entry: ProblemEntry) -> str:
    return name if entry.parameter is None else f"{name}<{entry.parameter}>"


def make_problem(name: str, noise_std: float = 0.0) -> SpaceProblem:
    """Build a registered problem by name.

    Args:
        name: a single problem (``orientation-so3``, ``bumps-mesh``, ``bumps-graph``) or a member
            of a family (``ackley-sphere5``, ``rosenbrock-sphere3``, ``styblinski-tang-sphere2``,
            ``product-of-sines-sphere3``, ``arm-torus3``); :func:`available_problems` lists them.
        noise_std: standard deviation of the Gaussian noise added to observations.

    Raises:
        ConfigurationError: the name is unknown (the message lists the known ones), or names a
            family without its parameter or with a parameter below the family's minimum.
    """
    if name in PROBLEMS:  # first: a single problem's name may end with digits ("orientation-so3")
        entry = PROBLEMS.get(name)
        if entry.parameter is None:
            return entry.build(noise_std=noise_std)
        raise ConfigurationError(
            f"the problem family {name!r} needs its {entry.parameter}: name a member such as "
            f"'{name}{max(entry.minimum, 2)}'."
        )
    member = _FAMILY_MEMBER.fullmatch(name) if isinstance(name, str) else None
    family = PROBLEMS.get(member["family"]) if member and member["family"] in PROBLEMS else None
    if family is None or family.parameter is None:
        raise ConfigurationError(
            f"unknown problem {name!r}; known: {', '.join(available_problems())} (<...> stands "
            "for an integer, e.g. ackley-sphere5); register your own with "
            "@manibo.problems.register_problem('name')."
        )
    value = int(member["value"])
    if value < family.minimum:
        raise ConfigurationError(
            f"problem {name!r}: {family.parameter} must be at least {family.minimum}, got {value}; "
            f"use e.g. '{member['family']}{family.minimum}'."
        )
    return family.build(value, noise_std=noise_std)
