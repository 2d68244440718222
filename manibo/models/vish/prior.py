r"""The VISH prior: a scaled zonal (or lifted zonal) kernel, the levels its feature budget buys, and
the features of those levels.

:math:`k(x, x') = \sigma^2 r r' \kappa(z \cdot z')`, from a :class:`gpytorch.kernels.ScaleKernel`
around either a kernel on :math:`S^{d-1}` (:class:`~manibo.kernels.GeometricMaternKernel`,
:class:`~manibo.kernels.ZonalKernel`: data on the sphere) or a
:class:`~manibo.kernels.HomogeneousLiftKernel` (data in :math:`\mathbb R^D`). Parameters split in
two:

* *hyperparameters* (:meth:`VISHPrior.hyperparameters`): the variance :math:`\sigma^2` and the
  zonal kernel's own parameters (lengthscale on the sphere). They change the eigenvalues only, so
  the model trains them on the cached statistics;
* *lift parameters* (:meth:`VISHPrior.lift_parameters`): the lift's lengthscales and bias. They
  change the features; they are fixed while statistics are cached.
"""

from __future__ import annotations

import math

import torch
from gpytorch.kernels import Kernel, ScaleKernel
from torch import Tensor

from manibo._memory import physical_memory_bytes
from manibo.exceptions import ConfigurationError
from manibo.harmonics.spherical_harmonics import harmonic_dimension
from manibo.kernels.homogeneous import HomogeneousLiftKernel
from manibo.models.vish.features import VISHFeatures
from manibo.models.vish.spectrum import ZonalSpectrum
from manibo.spaces.base import safe_sqrt

SQUARE_MATRICES = 4
"""``M x M`` float64 matrices that a VISH fit holds at once at the least (the harmonic transform,
the Gram statistics, a Cholesky factor and a posterior covariance)."""


MEMORY_SHARE = 0.5
"""The share of the machine's memory that those matrices may take (the rest: the data, the
process, the other programs)."""


def _check_memory(num_features: int, d: int, levels: tuple[int, ...]) -> None:
    """Refuse, before anything is allocated, features whose ``M x M`` matrices alone take more
    than :data:`MEMORY_SHARE` of the machine's memory (``num_features = 10**5`` filled 23 GB and
    was killed)."""
    m = sum(harmonic_dimension(d, n) for n in levels)
    needed, memory = SQUARE_MATRICES * 8 * m * m, physical_memory_bytes()
    if memory is not None and needed > MEMORY_SHARE * memory:
        most = math.isqrt(int(MEMORY_SHARE * memory) // (SQUARE_MATRICES * 8))
        raise ConfigurationError(
            f"`num_features` = {num_features} buys {m:,} harmonics, whose {m:,} x {m:,} float64 "
            f"matrices need {needed / 2**30:,.1f} GiB ({SQUARE_MATRICES} of them at the least), "
            f"more than half of this machine's {memory / 2**30:,.1f} GiB of memory; choose "
            f"`num_features` of at most about {most:,} (the default is 400)."
        )


class VISHPrior(torch.nn.Module):
    """The kernel, its spectrum and the fixed features of a VISH model.

    Args:
        covar_module: ``ScaleKernel(kernel)`` (a bare kernel is wrapped in a ``ScaleKernel``),
            with ``kernel`` a sphere kernel or a ``HomogeneousLiftKernel``.
        num_features: the feature budget ``M``: the lowest non-zero levels whose harmonics fit.
        offset: centre subtracted from lifted inputs, shape ``(D,)`` (lifted data only).
    """

    def __init__(
        self, covar_module: Kernel, num_features: int, offset: Tensor | None = None
    ) -> None:
        super().__init__()
        if not isinstance(covar_module, ScaleKernel):
            if not isinstance(covar_module, Kernel):
                raise ConfigurationError(
                    f"`kernel` must be a gpytorch Kernel, got {type(covar_module).__name__}."
                )
            covar_module = ScaleKernel(covar_module)
        base = covar_module.base_kernel
        self.lift = base if isinstance(base, HomogeneousLiftKernel) else None
        zonal = base.base_kernel if self.lift is not None else base
        self.covar_module = covar_module.to(torch.float64)
        self.spectrum = ZonalSpectrum(zonal)
        self.levels = self.spectrum.select_levels(num_features)
        if not self.levels:
            raise ConfigurationError(
                f"`num_features` = {num_features} buys no level; the lowest non-zero level needs "
                "at least 1 feature."
            )
        _check_memory(num_features, self.spectrum.d, self.levels)
        self.features = VISHFeatures(self.spectrum.d, self.levels, self.lift, offset)
        position = {n: i for i, n in enumerate(self.levels)}
        index = torch.tensor([position[int(n)] for n in self.features.level_index])
        self.register_buffer("_feature_level", index, persistent=False)

    @property
    def outputscale(self) -> Tensor:
        r""":math:`\sigma^2`, shape ``()``."""
        return self.covar_module.outputscale.reshape(())

    def eigenvalues(self) -> Tensor:
        r""":math:`\lambda_n` of the feature levels, shape ``(L,)``, float64."""
        device = self.features.transform.device
        return self.spectrum.eigenvalues(self.levels, torch.float64, device)

    def scale(self) -> Tensor:
        r"""Prior standard deviations :math:`\sqrt{\sigma^2 \lambda}` per feature, shape
        ``(M,)``; 0, with gradient 0, for the levels the kernel's truncation gives no weight (a
        plain square root has an infinite derivative there, and the bound a NaN gradient)."""
        per_feature = self.eigenvalues()[self._feature_level]
        return safe_sqrt(self.outputscale * per_feature)

    def residual_variance(self) -> Tensor:
        r""":math:`\sigma^2 \rho`: prior variance on the unit sphere that the features miss, shape
        ``()``."""
        return self.outputscale * self.spectrum.residual(self.levels, self.eigenvalues())

    def residual_covariance(self, X1: Tensor, X2: Tensor) -> Tensor:
        r""":math:`K - Q` between inputs: :math:`\sigma^2 r r' [\kappa(t) - \sum_{n} \lambda_n
        G_n(t)]`.

        Args:
            X1: inputs, shape ``(*batch, n, input_dim)``.
            X2: inputs, shape ``(*batch, m, input_dim)``.

        Returns:
            Shape ``(*batch, n, m)``, float64.
        """
        r1, z1 = self.features.radius_direction(X1.to(torch.float64))
        r2, z2 = self.features.radius_direction(X2.to(torch.float64))
        t = (z1 @ z2.transpose(-1, -2)).clamp(-1, 1)
        correlation = self.spectrum.residual_correlation(t, self.levels, self.eigenvalues())
        return self.outputscale * r1.unsqueeze(-1) * r2.unsqueeze(-2) * correlation

    def lift_parameters(self) -> list[torch.nn.Parameter]:
        """The lift's raw lengthscale and bias (empty for sphere data)."""
        if self.lift is None:
            return []
        return [self.lift.raw_lengthscale, self.lift.raw_bias]

    def hyperparameters(self) -> list[torch.nn.Parameter]:
        """Parameters that leave the features unchanged: variance and zonal-kernel parameters."""
        lift = {id(p) for p in self.lift_parameters()}
        return [p for p in self.covar_module.parameters() if id(p) not in lift]
