r"""Benchmarks on the hyperbolic space :math:`H^d` (MaternGaBO's :math:`H^3` set).

The base point is the origin :math:`o = (1, 0, \dots, 0)` of the hyperboloid; the normal
coordinates of :math:`x` are the spatial part of :math:`\mathrm{Log}_o(x)`,
:math:`\vec x\,\operatorname{asinh}(|\vec x|)/|\vec x|`, whose norm is the geodesic distance
:math:`d(o, x)`; the domain is the geodesic ball of radius 3 around :math:`o` (its ambient box,
:math:`|x_i| \le \sinh 3 \approx 10.02`, is the box of Jaquier, Borovitskiy, Smolensky, Terenin,
Asfour and Rozo 2021's Euclidean baseline). Styblinski–Tang's factor is 1, as theirs.
"""

from __future__ import annotations

import torch
from torch import Tensor

from manibo.problems.tangent import NormalCoordinateProblem, register_families
from manibo.spaces.hyperbolic import Hyperbolic

DOMAIN_RADIUS = 3.0


class HyperbolicProblem(NormalCoordinateProblem):
    """A re-centred test function of the normal coordinates at the origin of :math:`H^d`.

    Args:
        kind: ``"ackley"``, ``"rosenbrock"`` or ``"styblinski-tang"``.
        dim: the dimension ``d``.
        noise_std: standard deviation of the observation noise.
    """

    def __init__(self, kind: str, dim: int, noise_std: float = 0.0) -> None:
        self.space = Hyperbolic(dim, radius=DOMAIN_RADIUS)
        super().__init__(kind, dim, 1.0, noise_std)
        self.name = f"{kind}-hyperbolic{dim}"

    @property
    def base(self) -> Tensor:
        return self.space.origin()

    def normal_coordinates(self, x: Tensor) -> Tensor:
        """Spatial part of :math:`\\mathrm{Log}_o(x)`: ``(*batch, d + 1)`` → ``(*batch, d)``."""
        spatial = x[..., 1:]
        norm = spatial.norm(dim=-1, keepdim=True)
        # asinh(r) / r, finite (and 1) at the origin
        ratio = torch.where(
            norm > 0, torch.asinh(norm) / norm.clamp_min(1e-300), torch.ones_like(norm)
        )
        return spatial * ratio


register_families("hyperbolic", "d", HyperbolicProblem)
