r"""Benchmarks on :math:`S^d` (MaternGaBO definitions).

Each is a Euclidean test function of the tangent vector at e₁.

With base point :math:`b = e_1`, :math:`z = \mathrm{Log}_b(x)` minus its first (zero) coordinate is
a vector of :math:`\mathbb{R}^d` with :math:`\|z\| \le \pi`, and each problem evaluates BoTorch's
own test function at an affine image of :math:`z` whose minimiser is :math:`z = 0`, i.e.
:math:`x = b`: Ackley(z), Rosenbrock(z + 1), Styblinski–Tang(3z − 2.903534), and the product of
sines :math:`100 \sin(z'_1) \prod_i \sin(z'_i)` at :math:`z' = z + (\pi/2, -\pi/2, \pi/2, \dots)`.
"""

from __future__ import annotations

import math

import torch
from botorch.test_functions.synthetic import Ackley, Rosenbrock, StyblinskiTang
from torch import Tensor

from manibo.problems.base import SpaceProblem, evaluate_on_device
from manibo.problems.registry import register_problem
from manibo.spaces.sphere import Sphere

STYBLINSKI_TANG_MINIMISER = -2.903534


def sphere_log_at_e1(x: Tensor) -> Tensor:
    r"""Tangent coordinates of :math:`\mathrm{Log}_{e_1}(x)`.

    Shapes: ``(*batch, d+1)`` → ``(*batch, d)``.

    At the antipode :math:`-e_1` the logarithm has no direction (every geodesic from :math:`e_1`
    reaches it at length :math:`\pi`); there it returns :math:`(\pi, 0, \dots, 0)`, the limit
    along the geodesic through :math:`e_2`, so that a function of it takes a value it takes
    nearby, not its value at :math:`e_1`.
    """
    rest = x[..., 1:]
    norm = rest.norm(dim=-1, keepdim=True)
    angle = torch.atan2(norm, x[..., :1])
    # angle / sin(angle) * rest, written so that it stays finite (and smooth) at x = e1
    z = rest * torch.where(norm > 0, angle / norm.clamp_min(1e-300), torch.ones_like(norm))
    antipode = (norm == 0) & (x[..., :1] < 0)
    first = torch.zeros_like(z)
    first[..., 0] = math.pi
    return torch.where(antipode, first, z)


class _TangentProblem(SpaceProblem):
    def __init__(self, dim: int, noise_std: float = 0.0) -> None:
        super().__init__(noise_std)
        self.space = Sphere(dim)
        self.dim = dim

    @property
    def optimizers(self) -> Tensor:
        e1 = torch.zeros(1, self.dim + 1, dtype=torch.float64)
        e1[0, 0] = 1.0
        return e1

    def evaluate_true(self, x: Tensor) -> Tensor:
        return self._euclidean(sphere_log_at_e1(x))


@register_problem("ackley-sphere", parameter="d")
class AckleySphere(_TangentProblem):
    """Ackley of the tangent vector at e₁; minimum 0 at e₁."""

    optimal_value = 0.0

    def __init__(self, dim: int, noise_std: float = 0.0) -> None:
        super().__init__(dim, noise_std)
        self.name = f"ackley-sphere{dim}"
        self._f = Ackley(dim=dim)

    def _euclidean(self, z: Tensor) -> Tensor:
        return evaluate_on_device(self._f, z)


@register_problem("rosenbrock-sphere", parameter="d")
class RosenbrockSphere(_TangentProblem):
    """Rosenbrock(z + 1) of the tangent vector z at e₁; minimum 0 at e₁."""

    optimal_value = 0.0

    def __init__(self, dim: int, noise_std: float = 0.0) -> None:
        super().__init__(dim, noise_std)
        self.name = f"rosenbrock-sphere{dim}"
        self._f = Rosenbrock(dim=dim)

    def _euclidean(self, z: Tensor) -> Tensor:
        return evaluate_on_device(self._f, z + 1)


@register_problem("styblinski-tang-sphere", parameter="d")
class StyblinskiTangSphere(_TangentProblem):
    """Styblinski–Tang(3z − 2.903534); minimum −39.16616570377…·d at e₁."""

    def __init__(self, dim: int, noise_std: float = 0.0) -> None:
        super().__init__(dim, noise_std)
        self.name = f"styblinski-tang-sphere{dim}"
        # 3z - 2.9 spans [-12.3, 6.5] for |z| <= pi: widen BoTorch's [-5, 5] input check accordingly
        self._f = StyblinskiTang(dim=dim, bounds=[(-4 * math.pi - 3, 4 * math.pi)] * dim)
        z = torch.full((1, dim), STYBLINSKI_TANG_MINIMISER, dtype=torch.float64)
        self.optimal_value = float(self._f.evaluate_true(z))

    def _euclidean(self, z: Tensor) -> Tensor:
        return evaluate_on_device(self._f, 3 * z + STYBLINSKI_TANG_MINIMISER)


@register_problem("product-of-sines-sphere", parameter="d")
class ProductOfSinesSphere(_TangentProblem):
    """100·sin(z'₁)·Π sin(z'ᵢ) at z' = z + (π/2, −π/2, π/2, …); minimum −100 at e₁."""

    optimal_value = -100.0

    def __init__(self, dim: int, noise_std: float = 0.0) -> None:
        super().__init__(dim, noise_std)
        self.name = f"product-of-sines-sphere{dim}"

    def _euclidean(self, z: Tensor) -> Tensor:
        shift = torch.tensor(
            [math.pi / 2 * (-1) ** i for i in range(self.dim)], dtype=z.dtype, device=z.device
        )
        zs = z + shift
        return 100 * torch.sin(zs[..., 0]) * torch.sin(zs).prod(-1)
