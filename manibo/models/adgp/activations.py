r"""Activated inducing functions :math:`g_m(x) = \|\tilde x\|\|w_m\|\sigma(\hat w_m\cdot\hat z)`.

An activation :math:`\sigma : [-1, 1] \to \mathbb R` is expanded in the level reproducing kernels of
:math:`S^{d-1}` (Funk–Hecke, normalised measure), :math:`\sigma(t) = \sum_n \sigma_n G_n(t)`, which
is what makes the inducing variable :math:`u_m = \langle f, g_m \rangle_{\mathcal H}` computable
(Dutordoir 2021, §4.3). Both activations here have :math:`\sigma(t) - t/2` even, so
:math:`\sigma_n = 0` exactly for odd :math:`n \ge 3`; these levels are dropped by parity, never by a
magnitude threshold.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod

import torch
from torch import Tensor
from torch.nn import functional

from manibo.exceptions import ConfigurationError
from manibo.harmonics.funk_hecke import funk_hecke, relu_coefficients


class Activation(ABC):
    """An activation :math:`\\sigma` on :math:`[-1, 1]` with its Funk–Hecke coefficients."""

    name: str

    @abstractmethod
    def __call__(self, t: Tensor) -> Tensor:
        """:math:`\\sigma(t)` elementwise, same shape as ``t``."""

    @abstractmethod
    def coefficients(
        self, d: int, num_levels: int, dtype: torch.dtype, device: torch.device | None
    ) -> Tensor:
        r"""Funk–Hecke coefficients :math:`\sigma_0 \dots \sigma_{L-1}` on :math:`S^{d-1}`.

        Args:
            d: ambient dimension of the sphere (the lifted input dimension).
            num_levels: number of levels ``L``.
            dtype: dtype of the result.
            device: device of the result.

        Returns:
            Shape ``(L,)``; exactly zero on the levels that vanish by parity.
        """

    def vanishes(self, n: int) -> bool:
        """True where :math:`\\sigma_n = 0` exactly (by symmetry): such levels are dropped.

        The default claims no exact zeros; :class:`ReLU` and :class:`Softplus` vanish on odd
        ``n >= 3``.
        """
        return False

    def inducing_function(self, lifted: Tensor, weights: Tensor) -> Tensor:
        r""":math:`g_m = \|\tilde x\|\|w_m\|\sigma(w_m^\top\tilde x / \|w_m\|\|\tilde x\|)`.

        Args:
            lifted: lifted inputs :math:`\tilde x = [h, b]`, shape ``(*batch, n, d)``, nonzero.
            weights: weights :math:`w_m`, shape ``(M, d)``, nonzero rows.

        Returns:
            Shape ``(*batch, n, M)``.
        """
        radius = lifted.norm(dim=-1, keepdim=True)
        norms = weights.norm(dim=-1)
        scale = radius * norms
        cosine = ((lifted @ weights.transpose(-1, -2)) / scale).clamp(-1, 1)
        return scale * self(cosine)


def vanishes_by_parity(n: int) -> bool:
    """True where :math:`\\sigma_n = 0` as :math:`\\sigma(t) - t/2` is even (odd ``n >= 3``)."""
    return n >= 3 and n % 2 == 1


class ReLU(Activation):
    r""":math:`\sigma(t) = \max(0, t)`, homogeneous: :math:`g_m = \mathrm{ReLU}(w_m^\top \tilde x)`.

    Coefficients in closed form (:func:`~manibo.harmonics.relu_coefficients`). ReLU is *not* in
    the RKHS of the order-1 arc-cosine kernel: :math:`\sigma_n^2/\lambda_n = 1/(2d)` on every
    nonzero level, so the truncated :math:`\|g_m\|_{\mathcal H}^2` grows without bound with the
    truncation level (Dutordoir 2021, §4.3.3).
    """

    name = "relu"

    def __repr__(self) -> str:
        return "ReLU()"

    def __call__(self, t: Tensor) -> Tensor:
        return torch.relu(t)

    def vanishes(self, n: int) -> bool:
        return vanishes_by_parity(n)

    def coefficients(self, d, num_levels, dtype, device) -> Tensor:
        return relu_coefficients(d, num_levels, dtype=dtype, device=device)

    def inducing_function(self, lifted: Tensor, weights: Tensor) -> Tensor:
        return torch.relu(lifted @ weights.transpose(-1, -2))


class Softplus(Activation):
    r""":math:`\sigma(t) = \log(1 + e^{\beta t})/\beta` (``torch.nn.Softplus(beta)``), in the RKHS.

    Not homogeneous: the inducing function uses the zonal form
    :math:`\|\tilde x\|\|w_m\|\sigma(\cos\angle(w_m, \tilde x))`, not
    :math:`\sigma(w_m^\top \tilde x)` (Dutordoir 2021, eq. 4.6). Larger :math:`\beta` is closer to
    ReLU; its coefficients decay geometrically (like :math:`\rho^{-n}`, :math:`\rho = \pi/\beta +
    \sqrt{1 + \pi^2/\beta^2}`), so :math:`\|g_m\|^2_{\mathcal H}` converges with the truncation
    level. Coefficients by Gauss–Gegenbauer quadrature (``num_nodes`` nodes; the integrand is
    analytic, so 512 nodes give every coefficient to about 1e-16 absolute).

    Args:
        beta: sharpness :math:`\beta > 0`; default 3, the activation of Dutordoir (2021), Fig. 4.2.
        num_nodes: quadrature nodes for the coefficients.
    """

    name = "softplus"

    def __init__(self, beta: float = 3.0, num_nodes: int = 512) -> None:
        if not (isinstance(beta, int | float) and math.isfinite(beta) and beta > 0):
            raise ConfigurationError(
                f"`beta` of Softplus must be a finite number > 0, got {beta!r}."
            )
        self.beta = float(beta)
        self.num_nodes = int(num_nodes)

    def __repr__(self) -> str:
        return f"Softplus(beta={self.beta:g})"

    def __call__(self, t: Tensor) -> Tensor:
        return functional.softplus(t, beta=self.beta)

    def vanishes(self, n: int) -> bool:
        return vanishes_by_parity(n)

    def coefficients(self, d, num_levels, dtype, device) -> Tensor:
        values = funk_hecke(self, d, num_levels, self.num_nodes, dtype=torch.float64)
        odd = [vanishes_by_parity(n) for n in range(num_levels)]
        values[torch.tensor(odd, dtype=torch.bool)] = 0.0
        return values.to(dtype=dtype, device=device)


def make_activation(activation: str | Activation) -> Activation:
    """An :class:`Activation` from a name (``"softplus"``, ``"relu"``) or an instance."""
    if isinstance(activation, Activation):
        return activation
    if activation == "softplus":
        return Softplus()
    if activation == "relu":
        return ReLU()
    raise ConfigurationError(
        f"`activation` must be 'softplus', 'relu' or an Activation instance, got {activation!r}."
    )
