r"""GPNet's tanh network features; the feature maps of kernels come from
:func:`manibo.kernels.feature_map`.

The module maps points ``(*batch, P, *point_shape)`` to features ``(*batch, P, F)`` and exposes
``num_features``, like every :class:`~manibo.kernels.FeatureMap`, so a
:class:`~manibo.models.gpnet.BayesianLinearNetwork` takes either.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from manibo.exceptions import ConfigurationError
from manibo.spaces.base import Space, UnsupportedError


class MLPFeatures(nn.Module):
    r"""A deterministic tanh network, :math:`\phi = \sqrt{\sigma^2/H}\tanh(\dots(W_1\hat x + b_1))`.

    Under a Bayesian last layer this is GPNet's "deep" network. Points are flattened to their
    ambient coordinates and, where the space has an ambient bounding box, mapped affinely to
    :math:`[-1, 1]`. Weights start as :math:`\mathcal N(0, g^2/\text{fan-in})` with gain :math:`g =
    3` in the first layer (so the features vary on the scale of the box) and 1 after; biases start
    uniform in :math:`[-1, 1]`.

    Args:
        space: the space of the inputs (a :class:`~manibo.spaces.Box` for :math:`\mathbb R^D`).
        widths: hidden widths; the last one is ``F``.
        variance: :math:`\sigma^2`, the prior variance scale.
        generator: random generator (CPU) for the initial weights.
        dtype: floating dtype of the weights.
    """

    def __init__(
        self,
        space: Space,
        widths: tuple[int, ...] = (64, 64),
        variance: float = 1.0,
        generator: torch.Generator | None = None,
        dtype: torch.dtype = torch.float64,
    ) -> None:
        super().__init__()
        widths = tuple(int(w) for w in widths)
        if not widths or min(widths) < 1:
            raise ConfigurationError(f"`widths` must be positive integers, got {widths!r}.")
        if not variance > 0:
            raise ConfigurationError(f"`variance` must be > 0, got {variance!r}.")
        self.space = space
        in_dim = math.prod(space.point_shape)
        try:
            bounds = space.ambient_bounds().to(dtype).reshape(2, in_dim)
            center, half = bounds.mean(0), (bounds[1] - bounds[0]) / 2
        except UnsupportedError:
            center, half = torch.zeros(in_dim, dtype=dtype), torch.ones(in_dim, dtype=dtype)
        self.register_buffer("input_center", center)
        self.register_buffer("input_half_width", half)
        layers = []
        for i, (fan_in, fan_out) in enumerate(zip((in_dim, *widths[:-1]), widths, strict=True)):
            layer = nn.Linear(fan_in, fan_out, dtype=dtype)
            gain = 3.0 if i == 0 else 1.0
            with torch.no_grad():
                weight = torch.randn(fan_out, fan_in, generator=generator, dtype=dtype)
                layer.weight.copy_(weight * gain / math.sqrt(fan_in))
                layer.bias.copy_(2 * torch.rand(fan_out, generator=generator, dtype=dtype) - 1)
            layers.append(layer)
        self.layers = nn.ModuleList(layers)
        self.register_buffer(
            "amplitude", torch.tensor(math.sqrt(variance / widths[-1]), dtype=dtype)
        )

    @property
    def num_features(self) -> int:
        """``F``, the last hidden width."""
        return self.layers[-1].out_features

    def forward(self, x: Tensor) -> Tensor:
        """Features of points ``x`` ``(*batch, P, *point_shape)``; returns ``(*batch, P, F)``."""
        self.space.check(x, "x")
        k = len(self.space.point_shape)
        h = (x.flatten(-k) - self.input_center) / self.input_half_width
        for layer in self.layers:
            h = torch.tanh(layer(h))
        return self.amplitude * h
