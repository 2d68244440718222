"""Benchmark problems by name: single problems (``orientation-so3``) and families with an integer
parameter (``ackley-sphere`` + a dimension: ``ackley-sphere5``), in one registry."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from manibo._validation import check_real
from manibo.exceptions import ConfigurationError
from manibo.problems.base import SpaceProblem
from manibo.registry import (
    FamilyEntry,
    Registry,
    check_family_name,
    family_listing,
    resolve_member,
)

ProblemBuilder = Callable[..., SpaceProblem]


@dataclass(frozen=True)
class ProblemEntry(FamilyEntry):
    """A problem class or builder; a family names its integer parameter and the parameter's minimum.

    Attributes:
        parameter: None for a single problem, built as ``build(noise_std=...)``; for a family, the
            parameter's name in listings (``"d"`` shows as ``ackley-sphere<d>``), and the family is
            built as ``build(value, noise_std=...)`` from the digits that end the name.
        minimum: the smallest value of the parameter.
    """


PROBLEMS: Registry[ProblemEntry] = Registry(
    "problem", advice="register your own with @manibo.problems.register_problem('name')"
)


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
    PROBLEMS.check_name(name)
    check_family_name("problem", name, parameter)

    def decorate(build: ProblemBuilder) -> ProblemBuilder:
        takes = 0 if parameter is None else 1
        PROBLEMS.check_builder(name, build, "a builder of the problem", takes)
        if isinstance(build, type) and not issubclass(build, SpaceProblem):
            raise ConfigurationError(
                f"register_problem({name!r}) decorates a SpaceProblem subclass or a function "
                f"that returns a SpaceProblem, got the class {build.__qualname__}, which is not "
                "a SpaceProblem."
            )
        PROBLEMS.register(name, ProblemEntry(build, parameter, int(minimum)))
        return build

    return decorate


def available_problems() -> list[str]:
    """Problem names for listings, families with their parameter (``ackley-sphere<d>``), sorted."""
    return family_listing(PROBLEMS)


def make_problem(name: str, noise_std: float = 0.0) -> SpaceProblem:
    """Build a registered problem by name.

    Args:
        name: a single problem (``orientation-so3``, ``bumps-mesh``, ``bumps-graph``) or a member
            of a family (``ackley-sphere5``, ``rosenbrock-sphere3``, ``styblinski-tang-sphere2``,
            ``product-of-sines-sphere3``, ``arm-torus3``, ``ackley-spd2``,
            ``rosenbrock-hyperbolic3``, ``orientation-so4``); :func:`available_problems` lists
            them.
        noise_std: standard deviation of the Gaussian noise added to observations.

    Raises:
        ConfigurationError: the name is unknown (the message lists the known ones), or names a
            family without its parameter or with a parameter below the family's minimum; the
            problem built has no finite ``optimal_value``; ``noise_std`` is negative or not finite.
    """
    registered, value = resolve_member(PROBLEMS, name)
    build = PROBLEMS.get(registered).build
    problem = build(noise_std=noise_std) if value is None else build(value, noise_std=noise_std)
    _check_problem(name, problem)
    return problem


def _check_problem(name: str, problem: object) -> None:
    """Refuse what the benchmarks cannot use before anything is evaluated: not a
    :class:`SpaceProblem`, or a minimum (``optimal_value``) that is not a finite number."""
    if not isinstance(problem, SpaceProblem):
        raise ConfigurationError(
            f"the builder registered as {name!r} must return a SpaceProblem, got "
            f"{type(problem).__name__}."
        )
    check_real(
        f"optimal_value` of problem `{name}",
        getattr(problem, "optimal_value", None),
        what=" (the minimum the regret is measured from; for a function whose minimum is not "
        "known, use `manibo.minimize` or `manibo run --objective`)",
    )
