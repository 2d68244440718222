r"""GPNet's measurement distribution :math:`c(x)`: uniform on the space mixed with noisy inputs.

GPNet matches the network to the mirror-descent target at measurement points drawn from :math:`c(x)`
every iteration. Low-dimensional problems use uniform draws; high-dimensional ones sample "near" the
data by perturbing training inputs (Shi, Khan & Zhu 2019, §3.3). Here a configurable fraction is
uniform on the space and the rest are training inputs moved by tangent Gaussian noise through the
space's retraction, so every measurement point lies on the space (on a graph or a mesh, training
inputs are used as they are).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from manibo.exceptions import ConfigurationError
from manibo.spaces.base import Space


class MeasurementDistribution:
    r"""Measurement points: a fraction uniform on ``space``, the rest noisy training inputs.

    Args:
        space: the space of the inputs.
        train_X: training inputs ``(N, *point_shape)`` on the space; needed when
            ``uniform_fraction < 1``. Stays on its device; only sampled rows are read.
        uniform_fraction: fraction in [0, 1] of each draw taken uniformly on the space (rounded to a
            whole number of points per draw).
        noise_scale: standard deviation of the tangent noise added to training inputs: a float, or a
            tensor broadcastable to ``point_shape`` (per coordinate, e.g. :math:`\ell/\sqrt2` from
            an ARD lengthscale, the official GPNet choice). Ignored on discrete spaces.
    """

    def __init__(
        self,
        space: Space,
        train_X: Tensor | None = None,
        uniform_fraction: float = 0.5,
        noise_scale: float | Tensor = 0.0,
    ) -> None:
        uniform_fraction = float(uniform_fraction)
        if not 0.0 <= uniform_fraction <= 1.0:
            raise ConfigurationError(
                f"`uniform_fraction` must lie in [0, 1], got {uniform_fraction!r}."
            )
        if uniform_fraction < 1.0 and train_X is None:
            raise ConfigurationError(
                f"`uniform_fraction` = {uniform_fraction} < 1 mixes in training inputs, so "
                "`train_X` is required; pass it, or use uniform_fraction=1."
            )
        noise = torch.as_tensor(noise_scale, dtype=torch.float64)
        if not (torch.isfinite(noise).all() and (noise >= 0).all()):
            raise ConfigurationError(f"`noise_scale` must be finite and >= 0, got {noise_scale!r}.")
        if train_X is not None:
            space.check(train_X, "train_X")
            if train_X.dim() != 1 + len(space.point_shape) or train_X.shape[0] == 0:
                raise ConfigurationError(
                    f"`train_X` must have shape (N, {', '.join(map(str, space.point_shape))}) with "
                    f"N >= 1, got {tuple(train_X.shape)}."
                )
        self.space = space
        self.train_X = train_X
        self.uniform_fraction = uniform_fraction
        self.noise_scale = noise

    def __repr__(self) -> str:
        return (
            f"MeasurementDistribution({self.space!r}, uniform_fraction={self.uniform_fraction}, "
            f"noise_scale={self.noise_scale.tolist()})"
        )

    def sample(
        self,
        num: int,
        generator: torch.Generator | None = None,
        dtype: torch.dtype = torch.float64,
        device: torch.device | str | None = None,
    ) -> Tensor:
        """Draw ``num`` measurement points (uniform ones first, then noisy training inputs).

        Args:
            num: number of points ``M >= 1``.
            generator: CPU random generator.
            dtype: dtype of the points.
            device: device of the points.

        Returns:
            Points on the space, shape ``(num, *point_shape)``.
        """
        if isinstance(num, bool) or int(num) != num or num < 1:
            raise ConfigurationError(f"the number of measurement points must be >= 1, got {num!r}.")
        num_uniform = int(round(num * self.uniform_fraction))
        parts = []
        if num_uniform:
            parts.append(self.space.random(num_uniform, generator=generator, dtype=dtype))
        if num > num_uniform:
            rows = torch.randint(self.train_X.shape[0], (num - num_uniform,), generator=generator)
            x = self.train_X[rows.to(self.train_X.device)].to(device="cpu", dtype=dtype)
            if not self.space.is_discrete and bool((self.noise_scale > 0).any()):
                step = torch.randn(x.shape, generator=generator, dtype=dtype) * self.noise_scale.to(
                    dtype
                )
                x = self.space.retract(x, self.space.to_tangent(x, step))
            parts.append(x)
        return torch.cat(parts).to(device)


def lengthscale_noise(lengthscale: Tensor | float) -> Tensor:
    r"""The official GPNet noise scale :math:`\ell/\sqrt2` (per coordinate for ARD lengthscales)."""
    return torch.as_tensor(lengthscale, dtype=torch.float64).detach().cpu().reshape(-1) / math.sqrt(
        2.0
    )
