r"""Random Fourier features of stationary kernels on :math:`\mathbb R^D` (Rahimi & Recht 2007).

For GPyTorch's ``RBFKernel`` and ``MaternKernel`` (with or without ARD) and for
:class:`~manibo.kernels.BoxMaternKernel` (which first scales its box to the unit cube),

.. math::
    \Phi(x) = \sqrt{1/H}\,\bigl[\cos(x\Omega/\ell),\ \sin(x\Omega/\ell)\bigr],
    \qquad \mathbb E[\Phi(x)\Phi(y)^\top] = k(x, y),

where the ``H`` columns of :math:`\Omega` are drawn once, from a seed, from the kernel's spectral
density: standard normal for the RBF kernel, multivariate Student-t with :math:`2\nu` degrees of
freedom for Matérn-:math:`\nu`.
"""

from __future__ import annotations

import math

import torch
from gpytorch.kernels import Kernel, MaternKernel, RBFKernel
from torch import Tensor, nn

from manibo._validation import as_tensor_arg, check_int, check_trailing_shape
from manibo.exceptions import ConfigurationError
from manibo.kernels.box import BoxMaternKernel
from manibo.kernels.feature_protocol import FeatureMap, module_dtype_device, seeded_generator


def spectral_frequencies(
    kernel: RBFKernel | MaternKernel, dim: int, num_frequencies: int, generator: torch.Generator
) -> Tensor:
    r"""``H`` frequencies :math:`\Omega` of a unit-lengthscale RBF or Matérn kernel on
    :math:`\mathbb R^D`, shape ``(D, H)``, float64 on the CPU.

    Matérn-:math:`\nu` columns are :math:`z / \sqrt{\chi^2_{2\nu} / 2\nu}` with standard normal
    :math:`z` (a multivariate Student-t), which needs :math:`2\nu` to be an integer.
    """
    omega = torch.randn(dim, num_frequencies, generator=generator, dtype=torch.float64)
    if isinstance(kernel, MaternKernel):
        dof = int(round(2 * kernel.nu))
        chi2 = torch.randn(dof, num_frequencies, generator=generator, dtype=torch.float64)
        omega = omega / (chi2.square().sum(0) / dof).sqrt()
    return omega


class RandomFourierFeatureMap(FeatureMap):
    r"""Random Fourier features :math:`\sqrt{1/H}\,[\cos(x\Omega/\ell), \sin(x\Omega/\ell)]`.

    Args:
        kernel: a GPyTorch ``RBFKernel`` or ``MaternKernel`` (:math:`\nu \in \{1/2, 3/2, 5/2\}`),
            or a :class:`~manibo.kernels.BoxMaternKernel`; shared, so the map follows its
            lengthscale (unless ``trainable``). Its outputscale, if any, is applied by
            :class:`~manibo.kernels.features.ScaledFeatureMap`.
        num_frequencies: ``H``; the map has ``2H`` features.
        seed: seed of :math:`\Omega`, drawn on the CPU in float64 and moved to the kernel's
            dtype and device.
        input_dim: ``D`` for a kernel without ``ard_num_dims`` (a kernel with ARD knows it).
        trainable: make :math:`\Omega` and the lengthscale the map's own parameters (the
            lengthscale stored as its logarithm, starting at the kernel's current value), as in
            the trainable random-feature networks of Shi, Khan & Zhu (2019); the map then no
            longer follows the kernel's lengthscale.

    Inputs are ``(*batch, n, D)`` (points of the box for a ``BoxMaternKernel``); features are
    ``(*batch, n, 2H)``.
    """

    def __init__(
        self,
        kernel: Kernel,
        num_frequencies: int,
        seed: int = 0,
        input_dim: int | None = None,
        trainable: bool = False,
    ) -> None:
        super().__init__()
        self.exact = False
        self.box = kernel.space if isinstance(kernel, BoxMaternKernel) else None
        base = kernel.base if self.box is not None else kernel
        if not isinstance(base, (RBFKernel, MaternKernel)):
            raise ConfigurationError(
                "random Fourier features need an RBFKernel, a MaternKernel or a BoxMaternKernel, "
                f"got {type(kernel).__name__}."
            )
        num_frequencies = check_int("num_frequencies", num_frequencies, minimum=1)
        dim = base.ard_num_dims
        if input_dim is not None:
            input_dim = check_int("input_dim", input_dim, minimum=1)
            if dim is not None and dim != input_dim:
                raise ConfigurationError(
                    f"`input_dim` = {input_dim} but the kernel has ard_num_dims = {dim}."
                )
            dim = input_dim
        if dim is None:
            raise ConfigurationError(
                f"{type(base).__name__} without `ard_num_dims` does not know its input dimension: "
                "pass `input_dim` (D of the inputs in R^D)."
            )
        self.kernel = base
        self.input_dim = int(dim)
        self.num_frequencies = num_frequencies
        self.trainable = bool(trainable)
        dtype, device = module_dtype_device(base)
        omega = spectral_frequencies(base, self.input_dim, num_frequencies, seeded_generator(seed))
        omega = omega.to(dtype=dtype, device=device)
        if self.trainable:
            self.frequencies = nn.Parameter(omega)
            self.log_lengthscale = nn.Parameter(base.lengthscale.detach().log().clone())
        else:
            self.register_buffer("frequencies", omega)

    @property
    def num_features(self) -> int:
        """``2H``."""
        return 2 * self.num_frequencies

    @property
    def lengthscale(self) -> Tensor:
        """:math:`\\ell`, shape ``(*batch_shape, 1, D)`` or ``(*batch_shape, 1, 1)``: the map's own
        when ``trainable``, else the kernel's."""
        return self.log_lengthscale.exp() if self.trainable else self.kernel.lengthscale

    def forward(self, x: Tensor) -> Tensor:
        check_trailing_shape("x", as_tensor_arg("x", x), (self.input_dim,), f"R^{self.input_dim}")
        if self.box is not None:
            self.box.check(x, "x")
            lower, upper = self.box.lower.to(x), self.box.upper.to(x)
            x = (x - lower) / (upper - lower)
        projection = (x / self.lengthscale.to(x)) @ self.frequencies.to(x)
        features = torch.cat([projection.cos(), projection.sin()], dim=-1)
        return features * math.sqrt(1.0 / self.num_frequencies)
