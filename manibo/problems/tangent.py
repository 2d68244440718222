r"""Euclidean test functions of normal coordinates at a base point (MaternGaBO's construction).

A problem on a non-compact space evaluates a Euclidean test function at the normal coordinates
:math:`z \in \mathbb R^k` of the point at a base point :math:`b` (an orthonormal basis of
:math:`T_b` applied to :math:`\mathrm{Log}_b(x)`, so that :math:`\|z\| = d(b, x)`), re-centred so
that the minimiser is :math:`z = 0`, i.e. :math:`x = b` (Jaquier, Borovitskiy, Smolensky,
Terenin, Asfour and Rozo 2021): Ackley(z), Rosenbrock(z + 1) and Styblinski–Tang(s z − 2.903534).
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable
from functools import partial

import torch
from botorch.test_functions.synthetic import (
    Ackley,
    Rosenbrock,
    StyblinskiTang,
)
from torch import Tensor

from manibo.exceptions import ConfigurationError
from manibo.problems.base import SpaceProblem, evaluate_on_device
from manibo.problems.registry import register_problem

STYBLINSKI_TANG_MINIMISER = -2.903534
TANGENT_FUNCTIONS = ("ackley", "rosenbrock", "styblinski-tang")


def recentred_function(
    kind: str, dim: int, scale: float = 1.0
) -> tuple[Callable[[Tensor], Tensor], float]:
    """A Euclidean test function of ``z`` with its minimiser at ``z = 0``, and its minimum.

    Args:
        kind: ``"ackley"``, ``"rosenbrock"`` or ``"styblinski-tang"``.
        dim: the number of coordinates ``k``.
        scale: Styblinski–Tang's factor ``s`` in ``ST(s z − 2.903534)`` (ignored otherwise).

    Returns:
        ``(f, minimum)`` with ``f`` mapping ``(*batch, k)`` to ``(*batch,)``.

    Raises:
        ConfigurationError: ``kind`` is not one of :data:`TANGENT_FUNCTIONS`.
    """
    # the bounds only widen BoTorch's input check: the domains of the problems on spaces reach
    # outside the functions' usual boxes (Styblinski-Tang's [-5, 5]^k, Rosenbrock's [-5, 10]^k)
    bounds = [(-1e6, 1e6)] * dim
    if kind == "ackley":
        ackley = Ackley(dim=dim, bounds=bounds)
        return (lambda z: evaluate_on_device(ackley, z)), 0.0
    if kind == "rosenbrock":
        rosenbrock = Rosenbrock(dim=dim, bounds=bounds)
        return (lambda z: evaluate_on_device(rosenbrock, z + 1)), 0.0
    if kind == "styblinski-tang":
        tang = StyblinskiTang(dim=dim, bounds=bounds)
        minimiser = torch.full((1, dim), STYBLINSKI_TANG_MINIMISER, dtype=torch.float64)
        return (lambda z: evaluate_on_device(tang, scale * z + STYBLINSKI_TANG_MINIMISER)), float(
            tang.evaluate_true(minimiser)
        )
    raise ConfigurationError(f"`kind` must be one of {', '.join(TANGENT_FUNCTIONS)}, got {kind!r}.")


class NormalCoordinateProblem(SpaceProblem):
    """A re-centred test function of the normal coordinates at the base point.

    Subclasses set ``space`` and define :meth:`normal_coordinates` and :attr:`base`.

    Args:
        kind: one of :data:`TANGENT_FUNCTIONS`.
        dim: the number of normal coordinates (the manifold's dimension).
        scale: Styblinski–Tang's factor ``s``.
        noise_std: standard deviation of the observation noise.
    """

    def __init__(self, kind: str, dim: int, scale: float = 1.0, noise_std: float = 0.0) -> None:
        super().__init__(noise_std)
        self.kind = kind
        self._f, self.optimal_value = recentred_function(kind, dim, scale)

    @property
    @abstractmethod
    def base(self) -> Tensor:
        """The base point and minimiser, ``point_shape``, float64."""

    @abstractmethod
    def normal_coordinates(self, x: Tensor) -> Tensor:
        """Normal coordinates at :attr:`base`: ``(*batch, *point_shape)`` → ``(*batch, dim)``."""

    @property
    def optimizers(self) -> Tensor:
        return self.base.unsqueeze(0)

    def evaluate_true(self, x: Tensor) -> Tensor:
        return self._f(self.normal_coordinates(x))


def register_families(space_name: str, parameter: str, problem_class: type) -> None:
    """Register ``<kind>-<space_name><parameter>`` for every kind of :data:`TANGENT_FUNCTIONS`.

    Args:
        space_name: e.g. ``"spd"`` for ``ackley-spd2``.
        parameter: the family parameter's name in listings (smallest value 2).
        problem_class: built as ``problem_class(kind, value, noise_std=...)``.
    """
    for kind in TANGENT_FUNCTIONS:
        register_problem(f"{kind}-{space_name}", parameter=parameter, minimum=2)(
            partial(problem_class, kind)
        )
