r"""The Grassmann manifold :math:`\mathrm{Gr}(k, n)`: ``k``-dimensional subspaces of
:math:`\mathbb{R}^n`."""

from __future__ import annotations

import functools

import torch
from torch import Tensor

from manibo._validation import check_int, default_tolerance
from manibo.exceptions import ConfigurationError, InputDataError
from manibo.harmonics.grassmann import (
    Partition,
    casimir,
    chebyshev_series,
    dimension,
    largest_affordable_degree,
    partitions_up_to,
    zonal_coefficients,
)
from manibo.spaces._snap import onto_orthonormal
from manibo.spaces.base import CompactSpace, pairwise_in_chunks, safe_sqrt

#: largest part of the partitions that a default level cap reaches, by rank: the cost per pair of
#: points grows like (largest part + 1) ** rank; above rank 3, the largest part whose polynomials
#: fit the collocation budget (6 at rank 4, 4 at rank 5, 2 at rank 6, 1 at rank 7; above, the
#: kernels are refused). Rank 2: 50 (852 levels on Gr(2, 4)) keeps the cap quiet at surrogate
#: tolerance (1e-4) down to lengthscale 0.155 (40: 0.195) for 22% more time per kernel matrix
#: where the extra levels are used, none where they are not.
_DEFAULT_LARGEST_PART = {1: 99, 2: 50, 3: 12}  # rank 1: RP^(n-1)'s 100 levels

#: numbers held per pair of points in a block of the spectral sum
_BLOCK_NUMBERS = 1 << 22


class _Spectrum:
    r"""The levels of the Grassmann manifolds of one rank in :math:`\mathbb{R}^n` and the tables of
    their zonal functions, enumerated as far as asked: pure maths, shared by every such space of
    the process (:func:`_shared_spectrum`) and by the copies of models."""

    def __init__(self, rank: int, n: int) -> None:
        self.rank, self.n = rank, n
        self.levels: list[tuple[int, tuple[Partition, ...]]] = []
        self.bound = 0
        self.tables: dict[int, tuple[tuple[Partition, ...], Tensor]] = {}
        self.values = (torch.zeros(0, dtype=torch.float64), torch.zeros(0, dtype=torch.float64))
        self.default_max_levels: int | None = None

    def __deepcopy__(self, memo: dict) -> _Spectrum:
        return self


@functools.cache
def _shared_spectrum(rank: int, n: int) -> _Spectrum:
    """One :class:`_Spectrum` per rank and ``n`` (Gr(k, n) and Gr(n - k, n) share it): building a
    kernel on Gr(3, 5) enumerated 7,000 levels again for every space, about 1 s."""
    return _Spectrum(rank, n)


def _frames(x: Tensor, n: int, k: int) -> Tensor:
    return x.reshape(*x.shape[:-1], n, k)


def _flat(m: Tensor) -> Tensor:
    return m.flatten(-2)


def _orthonormal_basis(m: Tensor) -> tuple[Tensor, Tensor]:
    """Orthonormal frames spanning the columns of ``m`` ``(*batch, n, k)``: the Q of a QR
    decomposition with a positive diagonal of R, so that an orthonormal frame is returned as it
    is; and that diagonal ``(*batch, k)``, near zero where ``m`` is rank deficient."""
    q, r = torch.linalg.qr(m)
    diagonal = r.diagonal(dim1=-2, dim2=-1)
    sign = torch.sign(diagonal)
    sign = torch.where(sign == 0, torch.ones_like(sign), sign)
    return q * sign.unsqueeze(-2), diagonal.abs()


class Grassmann(CompactSpace):
    r"""The Grassmann manifold :math:`\mathrm{Gr}(k, n)` of ``k``-dimensional linear subspaces of
    :math:`\mathbb{R}^n`, ``1 <= k < n``, of dimension :math:`k(n - k)`.

    A point is an orthonormal frame: an ``n x k`` matrix :math:`Y` with :math:`Y^\top Y = I`,
    flattened row-major, ``(*batch, n * k)``. Frames :math:`Y` and :math:`YQ` (:math:`Q` orthogonal)
    span the same subspace and are the same point: every operation depends on the subspace only,
    and :meth:`embed` gives the projector :math:`YY^\top`, one matrix per subspace.

    The metric is the one whose geodesic distance is :math:`(\sum_i \theta_i^2)^{1/2}` over the
    principal angles :math:`\theta_i \in [0, \pi/2]` between two subspaces (the quotient of the
    Frobenius metric on frames); :math:`\mathrm{Gr}(1, n)` is :math:`\mathbb{RP}^{n-1}`. The
    eigenfunctions are grouped by the representations of :math:`O(n)` in
    :math:`L^2(\mathrm{Gr}(k, n))`: partitions :math:`\mu` with at most :math:`r = \min(k, n - k)`
    parts, eigenvalue :math:`\sum_i 2\mu_i(2\mu_i + n - 2i)` and level kernel :math:`d_\mu
    \varphi_\mu`, where the zonal spherical function :math:`\varphi_\mu` is a polynomial in the
    squared sines of the principal angles (:mod:`manibo.harmonics.grassmann`). Levels gather the
    partitions of one eigenvalue. There are no explicit eigenfunctions.

    Args:
        k: dimension of the subspaces.
        n: dimension of the ambient space, ``> k``.
    """

    def __init__(self, k: int, n: int) -> None:
        k = check_int("k of Grassmann(k, n)", k, minimum=1)
        n = check_int("n of Grassmann(k, n)", n, minimum=2)
        if k >= n:
            raise ConfigurationError(
                f"Grassmann(k, n) needs 1 <= k < n (k-dimensional subspaces of R^n), got "
                f"Grassmann({k}, {n})."
            )
        self.k, self.n = k, n
        self.rank = min(k, n - k)
        self.dim = self.spectral_dim = k * (n - k)
        self.point_shape = (n * k,)
        self.matrix_shape = (n, k)
        self._shared = _shared_spectrum(self.rank, n)
        self._affordable_degree = largest_affordable_degree(self.rank)
        largest = min(_DEFAULT_LARGEST_PART.get(self.rank, 6), self._affordable_degree)
        if self._shared.default_max_levels is None:
            top = casimir((largest,) + (0,) * (self.rank - 1), n)
            levels = self._levels_up_to(top)
            self._shared.default_max_levels = sum(1 for e, _ in levels if e <= top)
        self.default_max_levels = self._shared.default_max_levels
        self.max_scan_levels = 8 * self.default_max_levels

    def __repr__(self) -> str:
        return f"Grassmann({self.k}, {self.n})"

    # geometry -------------------------------------------------------------------------------
    def random(self, n, generator=None, dtype=torch.float64, device=None) -> Tensor:
        """Uniform subspaces: the spans of Gaussian ``n x k`` matrices, ``(n, n * k)``."""
        gauss = torch.randn(n, self.n, self.k, generator=generator, dtype=dtype, device=device)
        return _flat(_orthonormal_basis(gauss)[0])

    def _check_membership(self, x: Tensor, name: str) -> None:
        y = _frames(x, self.n, self.k)
        eye = torch.eye(self.k, dtype=x.dtype, device=x.device)
        err = (y.transpose(-1, -2) @ y - eye).abs().amax(dim=(-1, -2))
        tol = default_tolerance(x.dtype)
        if (err > tol).any():
            advice = f"Map them to orthonormal frames of their spans with `space.project({name})`."
            # read column after column (NumPy's order='F', MATLAB's Y(:)), an orthonormal frame
            # is no frame row-major, and projecting it would give another subspace
            rows = x.reshape(*x.shape[:-1], self.k, self.n)  # the frames' columns, as rows
            off = (rows @ rows.transpose(-1, -2) - eye).abs().amax(dim=(-1, -2))
            if self.k > 1 and bool((off <= tol).all()):  # all of them: the advice reorders all
                advice = (
                    "They are orthonormal frames read column after column (NumPy's order='F', "
                    "MATLAB's Y(:)): flatten the n x k frames row-major instead, "
                    f"`Y.reshape(*Y.shape[:-2], {self.n * self.k})`, or reorder these, "
                    f"`{name}.reshape(*{name}.shape[:-1], {self.k}, {self.n}).transpose(-1, -2)"
                    f".reshape({name}.shape)`; `space.project` would give another subspace."
                )
            raise self._membership_error(
                name,
                f"rows must be {self.n}x{self.k} orthonormal frames flattened row-major with "
                f"YᵀY = I within {tol:g}, the worst is off by {float(err.max()):.3g}",
                advice,
            )

    def _shape_advice(self, x: Tensor, name: str) -> str | None:
        if self.k == self.n or x.shape[-2:] != (self.k, self.n):
            return None
        return (
            f"A shape ending in ({self.k}, {self.n}) looks like transposed frames; points of "
            f"{self!r} are {self.n}x{self.k} frames flattened row-major: "
            f"`{name}.transpose(-1, -2).reshape(*{name}.shape[:-2], {self.n * self.k})`."
        )

    def snap(self, x: Tensor) -> Tensor:
        """Frames within :meth:`check`'s tolerance of orthonormal, moved to the nearest orthonormal
        frame of the same plane by Newton–Schulz steps where they are off by more than rounding
        (:meth:`Space.snap`); shapes ``(*batch, n*k)``."""
        return _flat(onto_orthonormal(_frames(x, self.n, self.k)))

    def point_key(self, x: Tensor) -> tuple[float, ...]:
        """The entries of the projector ``Y Yᵀ`` onto the subspace, rounded to 12 decimals
        (float64 frames of one subspace give it to rounding): the same key for every frame of
        it, but for a subspace with an entry within rounding of a boundary of the 12th decimal
        (1 in 40 random planes of Gr(2, 100), none in 300 of Gr(2, 4)), which gets two keys."""
        frame = _frames(x.detach().to(torch.float64), self.n, self.k)
        return tuple(round(v, 12) for v in (frame @ frame.transpose(-1, -2)).reshape(-1).tolist())

    def project(self, x: Tensor) -> Tensor:
        """An orthonormal frame of the span of each ``n x k`` matrix (QR; a frame is returned as
        it is). Shapes ``(*batch, n * k)``."""
        y = _frames(x, self.n, self.k)
        frames, diagonal = _orthonormal_basis(y)
        # the QR's |R_ii| against LAPACK's rank tolerance (largest times size times eps)
        scale = diagonal.detach().amax(-1, keepdim=True)
        deficient = (diagonal.detach() <= scale * self.n * torch.finfo(y.dtype).eps).any(-1)
        if deficient.any():
            raise InputDataError(
                f"`x` holds {int(deficient.sum())} matrices of rank < {self.k}, which span "
                f"no {self.k}-dimensional subspace; give {self.n}x{self.k} matrices of full rank."
            )
        return _flat(frames)

    def to_tangent(self, x: Tensor, v: Tensor) -> Tensor:
        r"""The horizontal part :math:`V - Y Y^\top V`, shapes ``(*batch, n * k)``."""
        y, w = _frames(x, self.n, self.k), _frames(v, self.n, self.k)
        return _flat(w - y @ (y.transpose(-1, -2) @ w))

    def retract(self, x: Tensor, v: Tensor) -> Tensor:
        """The orthonormal frame of the span of :math:`Y + V` (QR retraction)."""
        return _flat(_orthonormal_basis(_frames(x + v, self.n, self.k))[0])

    def principal_cosines_squared(self, x: Tensor, y: Tensor) -> Tensor:
        r""":math:`\cos^2\theta_i` of the ``r`` largest principal angles, ascending: the ``r``
        smallest eigenvalues of :math:`WW^\top`, :math:`W = Y_1^\top Y_2`.

        Shapes ``(*batch, n * k)`` → ``(*batch, r)``."""
        w = _frames(x, self.n, self.k).transpose(-1, -2) @ _frames(y, self.n, self.k)
        return torch.linalg.eigvalsh(w @ w.transpose(-1, -2))[..., : self.rank]

    def distance(self, x: Tensor, y: Tensor) -> Tensor:
        r""":math:`(\sum_i \theta_i^2)^{1/2}`, each angle as :math:`\mathrm{atan2}(\sin, \cos)`
        from the singular values of :math:`Y_1^\top Y_2` (cosines) and of :math:`Y_2 - Y_1
        Y_1^\top Y_2` (sines), accurate near 0 and :math:`\pi/2`. Shape ``(*batch)``."""
        a, b = torch.broadcast_tensors(_frames(x, self.n, self.k), _frames(y, self.n, self.k))
        w = a.transpose(-1, -2) @ b
        cos = torch.linalg.svdvals(w)  # descending
        sin = torch.linalg.svdvals(b - a @ w).flip(-1)  # ascending: paired with cos
        return safe_sqrt(torch.atan2(sin, cos.clamp(max=1.0)).square().sum(-1))

    def embed(self, x: Tensor) -> Tensor:
        r"""The projector :math:`YY^\top` onto the subspace, flattened: one matrix per subspace,
        whatever the frame. Shape ``(*batch, n * k)`` → ``(*batch, n^2)``."""
        y = _frames(x, self.n, self.k)
        return _flat(y @ y.transpose(-1, -2))

    def ambient_bounds(self) -> Tensor:
        """The box ``[-1, 1]^(n * k)`` holding every orthonormal frame's entries."""
        return torch.tensor([[-1.0], [1.0]], dtype=torch.float64).expand(2, self.n * self.k).clone()

    # spectrum -------------------------------------------------------------------------------
    def _levels_up_to(self, bound: int) -> list[tuple[int, tuple[Partition, ...]]]:
        grouped: dict[int, list[Partition]] = {}
        for mu in partitions_up_to(self.rank, bound, self.n):
            grouped.setdefault(casimir(mu, self.n), []).append(mu)
        return [(value, tuple(sorted(mus))) for value, mus in sorted(grouped.items())]

    def _level_list(self, num_levels: int) -> list[tuple[int, tuple[Partition, ...]]]:
        """The ``num_levels`` lowest levels: eigenvalue and partitions (the bound doubles)."""
        shared = self._shared
        bound = shared.bound
        while len(shared.levels) < num_levels:
            bound = max(16 * self.n, 2 * bound)
            shared.levels = self._levels_up_to(bound)
            shared.bound = bound
        return shared.levels[:num_levels]

    def levels(self, num_levels: int) -> tuple[Tensor, Tensor]:
        shared = self._shared
        if shared.values[0].shape[0] < num_levels:
            levels = self._level_list(num_levels)
            eigenvalues = [float(value) for value, _ in levels]
            multiplicities = [float(sum(dimension(mu, self.n) for mu in mus)) for _, mus in levels]
            shared.values = (
                torch.tensor(eigenvalues, dtype=torch.float64),
                torch.tensor(multiplicities, dtype=torch.float64),
            )
        eigenvalues, multiplicities = shared.values
        return eigenvalues[:num_levels].clone(), multiplicities[:num_levels].clone()

    def _table(self, num_levels: int) -> tuple[tuple[Partition, ...], Tensor]:
        r"""The symmetrised Chebyshev products ``betas`` the first ``num_levels`` levels need and
        the matrix ``(num_levels, len(betas))`` of :math:`\sum_{\mu \in l} d_\mu c_{\mu\beta}`."""
        tables = self._shared.tables
        if num_levels not in tables:
            if self._affordable_degree == 0:
                raise ConfigurationError(
                    f"the spectral kernels of {self!r} cannot be computed: its rank "
                    f"min(k, n - k) = {self.rank} leaves only the constant function within the "
                    "budget of the zonal polynomials (ranks up to 7 have kernels). Use a "
                    "surrogate on its projector embedding ('euclidean'), or a Grassmann manifold "
                    "of lower rank."
                )
            levels = self._level_list(num_levels)
            degree = max(mu[0] for _, mus in levels for mu in mus)
            betas, coefficients = zonal_coefficients(self.rank, self.n, degree)
            index = {beta: i for i, beta in enumerate(betas)}
            rows = torch.zeros(len(levels), len(betas), dtype=torch.float64)
            for row, (_, mus) in enumerate(levels):
                for mu in mus:
                    # d_mu passes 2**63 from Gr(2, 11) on: as a float, not a too-large int
                    rows[row] += float(dimension(mu, self.n)) * coefficients[index[mu]]
            if len(tables) >= 8:
                tables.clear()
            tables[num_levels] = (betas, rows)
        return tables[num_levels]

    def spectral_sum(self, weights: Tensor, x1: Tensor, x2: Tensor, diag: bool = False) -> Tensor:
        betas, matrix = self._table(weights.shape[-1])
        coefficients = weights @ matrix.to(weights)  # (*wbatch, B)

        def series(u: Tensor, extra_dims: int) -> Tensor:  # u: cos^2 of the angles, (..., r)
            s = (1 - 2 * u).clamp(-1.0, 1.0)  # 2 sin^2 - 1
            shaped = coefficients.reshape(
                *coefficients.shape[:-1], *([1] * (extra_dims - 1)), coefficients.shape[-1]
            )
            return chebyshev_series(s, shaped, betas)

        if diag:
            return series(self.principal_cosines_squared(x1, x2), 1)

        def block(a: Tensor, b: Tensor) -> Tensor:
            return series(self.principal_cosines_squared(a.unsqueeze(-2), b.unsqueeze(-3)), 2)

        degree = max(beta[0] for beta in betas)
        per_pair = 2 * (degree + 1) ** self.rank
        return pairwise_in_chunks(
            block, x1, x2, point_ndim=1, target_elements=max(1, _BLOCK_NUMBERS // per_pair)
        )
