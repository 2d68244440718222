r"""The Mercer spectrum of a VISH prior on :math:`S^{d-1}`: eigenvalues per level, the prior
variance :math:`\kappa(1)`, the truncation residual, and the levels that a feature budget buys.

A VISH prior is :math:`\sigma^2 r r' \kappa(z \cdot z')` with a zonal :math:`\kappa` on
:math:`S^{d-1}` (:math:`r = 1` for data on the sphere). Its Mercer expansion is
:math:`\kappa(t) = \sum_n \lambda_n N(d, n) P_n(t)`; the features of the chosen levels carry
:math:`\sum_{n \in \mathcal L} \lambda_n N(d, n)` of the prior variance :math:`\kappa(1)` and the
rest, the *residual* :math:`\rho = \kappa(1) - \sum_{n \in \mathcal L} \lambda_n N(d, n) \ge 0`, is
the diagonal of :math:`K_{ff} - Q_{ff}` (divided by :math:`\sigma^2 r^2`).

Two families of kernels from :mod:`manibo.kernels` are understood:

* :class:`~manibo.kernels.GeometricMaternKernel` (Matérn or heat) on a
  :class:`~manibo.spaces.Sphere`: :math:`\lambda_n` are its normalised level weights (differentiable
  in the lengthscale), zero beyond the kernel's own truncation.
* :class:`~manibo.kernels.ZonalKernel` and its subclasses
  (:class:`~manibo.kernels.ChordalMaternKernel`, :class:`~manibo.kernels.ArcCosineKernel`):
  Funk–Hecke eigenvalues (quadrature, or the closed forms of the arc-cosine kernels, whose zero
  levels are dropped by parity, never by a threshold).
"""

from __future__ import annotations

import torch
from torch import Tensor

from manibo.exceptions import ConfigurationError
from manibo.harmonics.gegenbauer import harmonic_dimension
from manibo.harmonics.series import GegenbauerLevels, level_series
from manibo.kernels.arccosine import ArcCosineKernel
from manibo.kernels.spectral import GeometricMaternKernel
from manibo.kernels.zonal import ZonalKernel
from manibo.spaces.sphere import Sphere


class ZonalSpectrum:
    r"""The zonal part :math:`\kappa` of a VISH prior, seen through its Mercer spectrum.

    Args:
        kernel: a :class:`~manibo.kernels.GeometricMaternKernel` on a
            :class:`~manibo.spaces.Sphere` of dimension ``>= 2``, or a
            :class:`~manibo.kernels.ZonalKernel` (chordal Matérn, arc-cosine, custom shape
            function). Its parameters (lengthscale) stay trainable: they change the eigenvalues
            only.
    """

    def __init__(self, kernel: GeometricMaternKernel | ZonalKernel) -> None:
        if isinstance(kernel, GeometricMaternKernel):
            if not isinstance(kernel.space, Sphere):
                raise ConfigurationError(
                    "VISH needs a kernel on a Sphere; the GeometricMaternKernel lives on "
                    f"{kernel.space!r}. Use GeometricMaternKernel(Sphere(dim)) or a ZonalKernel."
                )
            sphere = kernel.space
        elif isinstance(kernel, ZonalKernel):
            sphere = kernel.sphere
        else:
            raise ConfigurationError(
                "VISH needs a zonal kernel on a sphere: GeometricMaternKernel(Sphere(dim)), "
                "ChordalMaternKernel, ArcCosineKernel or ZonalKernel (wrapped in "
                f"HomogeneousLiftKernel for inputs in R^D), got {type(kernel).__name__}."
            )
        if sphere.dim < 2:
            raise ConfigurationError(
                f"VISH needs a sphere of dimension >= 2 (d >= 3), got {sphere!r}; S^1 has no "
                "fundamental systems (use the exact GP on Circle())."
            )
        self.kernel = kernel
        self.d = sphere.dim + 1
        self._levels = GegenbauerLevels(self.d)

    @property
    def max_level(self) -> int | None:
        """The highest level with a non-zero eigenvalue (None: unbounded)."""
        if isinstance(self.kernel, GeometricMaternKernel):
            return (self.kernel.num_levels or self.kernel.max_levels) - 1
        return None

    def is_zero_level(self, n: int) -> bool:
        """Whether level ``n`` has a zero eigenvalue exactly (by parity, or beyond the
        truncation)."""
        if self.max_level is not None and n > self.max_level:
            return True
        if isinstance(self.kernel, ArcCosineKernel) and n >= 2:
            return (n % 2 == 1) if self.kernel.order == 1 else (n % 2 == 0)
        return False

    def select_levels(self, num_features: int) -> tuple[int, ...]:
        """The lowest non-zero levels whose harmonics number at most ``num_features`` in total.

        Levels are taken in ascending order, skipping the zero levels; the first level that does
        not fit ends the selection (so the set is the budget's best prefix of the spectrum).

        Returns:
            Strictly increasing levels.
        """
        if isinstance(num_features, bool) or int(num_features) != num_features or num_features < 1:
            raise ConfigurationError(
                f"`num_features` must be an integer >= 1, got {num_features!r}."
            )
        levels, total, n = [], 0, 0
        while self.max_level is None or n <= self.max_level:
            if not self.is_zero_level(n):
                size = harmonic_dimension(self.d, n)
                if total + size > num_features:
                    break
                levels.append(n)
                total += size
            n += 1
        return tuple(levels)

    def _all_weights(self, dtype: torch.dtype, device: torch.device) -> Tensor:
        """Geometric Matérn: its normalised weights over its own levels, shape ``(L_k,)``."""
        return self.kernel.level_weights().reshape(-1).to(dtype=dtype, device=device)

    def eigenvalues(self, levels: tuple[int, ...], dtype: torch.dtype, device) -> Tensor:
        r"""Eigenvalues :math:`\lambda_n` of ``levels`` (negative quadrature round-off set to 0).

        Returns:
            Shape ``(len(levels),)``, differentiable in the kernel's parameters.
        """
        if isinstance(self.kernel, GeometricMaternKernel):
            weights = self._all_weights(dtype, device)
            padded = torch.cat([weights, weights.new_zeros(max(0, max(levels) + 1 - len(weights)))])
            values = padded[list(levels)]
        else:
            values = self.kernel.eigenvalues(max(levels) + 1).reshape(-1)
            values = values.to(dtype=dtype, device=device)[list(levels)]
        return values.clamp_min(0)

    def variance(self, dtype: torch.dtype, device) -> Tensor:
        r"""The prior variance :math:`\kappa(1)` on the sphere (before :math:`\sigma^2 r^2`), shape
        ``()``."""
        if isinstance(self.kernel, GeometricMaternKernel):
            weights = self._all_weights(dtype, device)
            sizes = self._sizes(len(weights), dtype, device)
            return (weights * sizes).sum()
        one = torch.ones(1, 1, dtype=dtype, device=device)
        return self.kernel.shape_function(one).reshape(())

    def residual(self, levels: tuple[int, ...], eigenvalues: Tensor) -> Tensor:
        r""":math:`\rho = \kappa(1) - \sum_{n \in \mathcal L} \lambda_n N(d, n)`, clamped at 0,
        shape ``()``."""
        sizes = torch.tensor(
            [float(harmonic_dimension(self.d, n)) for n in levels],
            dtype=eigenvalues.dtype,
            device=eigenvalues.device,
        )
        captured = (eigenvalues * sizes).sum()
        return (self.variance(eigenvalues.dtype, eigenvalues.device) - captured).clamp_min(0)

    def residual_correlation(
        self, t: Tensor, levels: tuple[int, ...], eigenvalues: Tensor
    ) -> Tensor:
        r""":math:`\kappa(t) - \sum_{n \in \mathcal L} \lambda_n N(d, n) P_n(t)` at inner products
        ``t``.

        Args:
            t: inner products of unit vectors, any shape, in :math:`[-1, 1]`.
            levels: the feature levels.
            eigenvalues: their eigenvalues, shape ``(len(levels),)``.

        Returns:
            Shape of ``t``.
        """
        top = max(levels) + 1
        kept = t.new_zeros(top)
        sizes = self._sizes(top, t.dtype, t.device)
        kept[list(levels)] = eigenvalues.to(t) * sizes[list(levels)]
        if isinstance(self.kernel, GeometricMaternKernel):
            weights = self._all_weights(t.dtype, t.device)
            full = weights * self._sizes(len(weights), t.dtype, t.device)
            width = max(len(full), top)
            coeffs = torch.cat([full, full.new_zeros(width - len(full))])
            coeffs = coeffs - torch.cat([kept, kept.new_zeros(width - top)])
            return level_series(t, coeffs, self._levels)
        shape = self.kernel.shape_function(t.unsqueeze(-1)).squeeze(-1)
        return shape - level_series(t, kept, self._levels)

    def _sizes(self, num: int, dtype: torch.dtype, device) -> Tensor:
        return torch.tensor(
            [float(harmonic_dimension(self.d, n)) for n in range(num)], dtype=dtype, device=device
        )
