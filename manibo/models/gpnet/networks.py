r"""Inference networks with Gaussian outputs: a Bayesian linear layer on top of a feature map.

A network maps ``P`` points to a Gaussian over the values of ``C`` latent functions,

.. math::
    f_c(x) = \phi(x)^\top w_c, \qquad w_c \sim \mathcal N(m_c, L_c L_c^\top),

so that :math:`q(f_c(X)) = \mathcal N(\Phi m_c, (\Phi L_c)(\Phi L_c)^\top)` on any finite set, with
full covariance (Shi, Khan & Zhu 2019, eq. 30). :math:`L_c` is lower triangular with a softplus
diagonal and starts at the identity, and :math:`m_c` starts at zero, so an untrained network is the
GP whose kernel is :math:`\phi(x)^\top\phi(x')` — for features built from the prior kernel, a Monte
Carlo or truncated version of the prior. Kernel feature maps come from
:func:`manibo.kernels.feature_map`, the tanh network from :mod:`manibo.models.gpnet.features`.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from manibo.exceptions import ConfigurationError

_SOFTPLUS_INVERSE_OF_ONE = math.log(math.e - 1.0)


class BayesianLinearNetwork(nn.Module):
    r"""Gaussian outputs :math:`f_c = \phi^\top w_c`, :math:`w_c \sim \mathcal N(m_c, L_cL_c^\top)`.

    Args:
        features: a feature module mapping points ``(*batch, P, *point_shape)`` to
            ``(*batch, P, F)``, with an attribute ``num_features`` (``F``): a
            :class:`~manibo.kernels.FeatureMap` or :class:`~manibo.models.gpnet.MLPFeatures`; its
            trainable parameters (frequencies, points, hidden layers) train with the head.
        num_latents: number ``C`` of independent latent functions (1 for regression, the number of
            classes for a softmax likelihood).
    """

    def __init__(self, features: nn.Module, num_latents: int = 1) -> None:
        super().__init__()
        if isinstance(num_latents, bool) or int(num_latents) != num_latents or num_latents < 1:
            raise ConfigurationError(f"`num_latents` must be an integer >= 1, got {num_latents!r}.")
        reference = next(iter(list(features.parameters()) + list(features.buffers())), None)
        if reference is None:
            raise ConfigurationError(
                "`features` must hold at least one parameter or buffer (its dtype and device are "
                "those of the network)."
            )
        num_features = int(features.num_features)
        self.features = features
        self.num_latents = int(num_latents)
        kwargs = {"dtype": reference.dtype, "device": reference.device}
        self.weight_mean = nn.Parameter(torch.zeros(self.num_latents, num_features, **kwargs))
        raw = torch.zeros(self.num_latents, num_features, num_features, **kwargs)
        raw.diagonal(dim1=-2, dim2=-1).fill_(_SOFTPLUS_INVERSE_OF_ONE)
        self.raw_scale_tril = nn.Parameter(raw)

    @property
    def num_features(self) -> int:
        """``F``, the number of features."""
        return self.weight_mean.shape[-1]

    def scale_tril(self) -> Tensor:
        """:math:`L_c`: lower triangular, positive (softplus) diagonal, shape ``(C, F, F)``."""
        raw = self.raw_scale_tril
        diagonal = nn.functional.softplus(raw.diagonal(dim1=-2, dim2=-1))
        return torch.tril(raw, diagonal=-1) + torch.diag_embed(diagonal)

    @torch.no_grad()
    def set_posterior(self, mean: Tensor, scale_tril: Tensor) -> None:
        """Set the weights' distribution: means ``(C, F)``, and one lower Cholesky factor with a
        positive diagonal, ``(F, F)`` (shared by the latents) or ``(C, F, F)``."""
        shape = self.raw_scale_tril.shape
        if mean.shape != self.weight_mean.shape or scale_tril.shape not in (shape, shape[1:]):
            raise ConfigurationError(
                f"`mean` must have shape {tuple(self.weight_mean.shape)} and `scale_tril` "
                f"{tuple(shape[1:])} or {tuple(shape)}, got {tuple(mean.shape)} and "
                f"{tuple(scale_tril.shape)}."
            )
        diagonal = scale_tril.diagonal(dim1=-2, dim2=-1)
        if not bool((diagonal > 0).all()):
            raise ConfigurationError("`scale_tril` must have a positive diagonal.")
        raw = torch.tril(scale_tril, diagonal=-1) + torch.diag_embed(
            diagonal + torch.log(-torch.expm1(-diagonal))  # inverse softplus
        )
        self.weight_mean.copy_(mean)
        self.raw_scale_tril.copy_(raw.expand(shape))

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor]:
        r"""Mean and covariance root at ``P`` points: :math:`\mathrm{Cov}_c = R_c R_c^\top`.

        Args:
            x: points, shape ``(*batch, P, *point_shape)``.

        Returns:
            ``(mean, root)`` with shapes ``(*batch, C, P)`` and ``(*batch, C, P, F)``.
        """
        phi = self.features(x)
        mean = (phi @ self.weight_mean.transpose(-1, -2)).transpose(-1, -2)
        root = phi.unsqueeze(-3) @ self.scale_tril()
        return mean, root

    def marginals(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """Marginal means and variances, shapes ``(*batch, C, P)`` (no jitter added).

        Args:
            x: points, shape ``(*batch, P, *point_shape)``.
        """
        mean, root = self(x)
        return mean, root.square().sum(-1)
