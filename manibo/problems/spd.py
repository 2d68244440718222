r"""Benchmarks on :math:`\mathrm{SPD}(n)` with the affine-invariant metric (MaternGaBO's
:math:`S^2_{++}` set), and their Cholesky pull-back for the Euclidean baseline.

The base point is :math:`B = 2I`; the normal coordinates of :math:`X` are the Mandel vector
(diagonal, then :math:`\sqrt2\times` the upper off-diagonal entries) of
:math:`\log(B^{-1/2} X B^{-1/2}) = \log(X/2)`, whose Euclidean norm is the geodesic distance
:math:`d(B, X)`. The domain is the eigenvalue box :math:`[10^{-3}, 5]` of
:class:`~manibo.spaces.SymmetricPositiveDefinite`, with initial designs (and raw samples of the
acquisition optimiser) whose eigenvalues are uniform on it, as in the code published with them
(``sampling="eigenvalues"``; uniform points of the Riemannian volume would almost all lie near
the singular edge of the box). Jaquier, Borovitskiy, Smolensky, Terenin,
Asfour and Rozo (2021) use the Voigt vector of :math:`\mathrm{Log}_B(X) = 2\log(X/2)` instead
(twice these coordinates on the diagonal, :math:`\sqrt2\times` them off it); the functions, their
re-centring and Styblinski–Tang's factor 5 are theirs.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from manibo.problems.base import SpaceProblem
from manibo.problems.tangent import NormalCoordinateProblem, register_families
from manibo.spaces.box import Box
from manibo.spaces.spd import SymmetricPositiveDefinite

STYBLINSKI_TANG_SCALE = 5.0


class SPDProblem(NormalCoordinateProblem):
    r"""A re-centred test function of the normal coordinates at :math:`2I` on SPD(n).

    Args:
        kind: ``"ackley"``, ``"rosenbrock"`` or ``"styblinski-tang"``.
        n: matrix size (``n(n+1)/2`` coordinates).
        noise_std: standard deviation of the observation noise.
    """

    def __init__(self, kind: str, n: int, noise_std: float = 0.0) -> None:
        self.space = SymmetricPositiveDefinite(n, sampling="eigenvalues")
        super().__init__(kind, self.space.dim, STYBLINSKI_TANG_SCALE, noise_std)
        self.name = f"{kind}-spd{n}"

    @property
    def base(self) -> Tensor:
        return (2 * torch.eye(self.space.n, dtype=torch.float64)).reshape(-1)

    def normal_coordinates(self, x: Tensor) -> Tensor:
        """Mandel vector of :math:`\\log(X/2)`: ``(*batch, n * n)`` → ``(*batch, n(n+1)/2)``."""
        return self.space.chart(x / 2)


register_families("spd", "n", SPDProblem)


def cholesky_box(space: SymmetricPositiveDefinite) -> Box:
    r"""The box of lower-triangular Cholesky entries that covers the eigenvalue domain.

    For :math:`X = LL^\top` with eigenvalues in :math:`[a, b]`, every squared diagonal entry of
    :math:`L` is a Schur complement of :math:`X`, hence in :math:`[a, b]`, and every squared
    off-diagonal entry is at most a diagonal entry of :math:`X`, hence at most :math:`b`. The
    coordinates are the entries on and below the diagonal, row by row.
    """
    low, high = (math.sqrt(b) for b in space.bounds)
    rows, cols = torch.tril_indices(space.n, space.n)
    lower = torch.full(rows.shape, -high, dtype=torch.float64)
    lower[rows == cols] = low
    upper = torch.full(rows.shape, high, dtype=torch.float64)
    return Box(lower, upper)


class CholeskyPullback(SpaceProblem):
    r"""An SPD problem pulled back to a box of Cholesky coordinates (Euclidean BO's pairing).

    A point :math:`\ell` of :func:`cholesky_box` is the matrix :math:`X = LL^\top` with its
    eigenvalues clamped into the domain (:meth:`SymmetricPositiveDefinite.project`), evaluated by
    the SPD problem itself, so its values, optimum and regret are those of the SPD problem.

    Args:
        problem: a problem on :class:`~manibo.spaces.SymmetricPositiveDefinite`.
    """

    def __init__(self, problem: SPDProblem) -> None:
        super().__init__(problem.noise_std)
        self.problem = problem
        self.name = f"{problem.name}-cholesky"
        self.space = cholesky_box(problem.space)
        self.optimal_value = problem.optimal_value

    def matrices(self, coordinates: Tensor) -> Tensor:
        """The SPD points of Cholesky coordinates: ``(*batch, n(n+1)/2)`` → ``(*batch, n * n)``."""
        n = self.problem.space.n
        rows, cols = torch.tril_indices(n, n, device=coordinates.device)
        factor = coordinates.new_zeros(*coordinates.shape[:-1], n, n)
        factor[..., rows, cols] = coordinates
        product = factor @ factor.transpose(-1, -2)
        return self.problem.space.project(product.reshape(*coordinates.shape[:-1], n * n))

    def coordinates(self, matrices: Tensor) -> Tensor:
        """Cholesky coordinates of SPD points: ``(*batch, n * n)`` → ``(*batch, n(n+1)/2)``.

        Points of the SPD domain land in the box (see :func:`cholesky_box`).
        """
        n = self.problem.space.n
        factor = torch.linalg.cholesky(matrices.reshape(*matrices.shape[:-1], n, n))
        rows, cols = torch.tril_indices(n, n, device=matrices.device)
        return factor[..., rows, cols]

    def evaluate_true(self, x: Tensor) -> Tensor:
        return self.problem.evaluate_true(self.matrices(x))

    @property
    def optimizers(self) -> Tensor:
        return self.coordinates(self.problem.optimizers)
