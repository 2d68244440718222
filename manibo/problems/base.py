"""The benchmark-problem contract: a function on a space with a known minimum, optionally noisy."""

from __future__ import annotations

from abc import ABC, abstractmethod

import torch
from torch import Tensor

from manibo._validation import check_real
from manibo.spaces.base import Space


class SpaceProblem(ABC):
    """A minimisation problem on a space, in the manner of BoTorch's ``SyntheticTestFunction``.

    Attributes:
        name: identifier used by the CLI and the benchmarks.
        space: where the inputs live.
        noise_std: standard deviation of the Gaussian noise added by :meth:`__call__`.
        optimal_value: the minimum of :meth:`evaluate_true`.
    """

    name: str
    space: Space
    optimal_value: float

    def __init__(self, noise_std: float = 0.0) -> None:
        self.noise_std = check_real("noise_std", noise_std, minimum=0.0, what=" (0: noise-free)")

    @abstractmethod
    def evaluate_true(self, x: Tensor) -> Tensor:
        """Noise-free values; points ``(*batch, *point_shape)`` → ``(*batch,)``."""

    @property
    @abstractmethod
    def optimizers(self) -> Tensor:
        """Known minimisers, shape ``(k, *point_shape)``."""

    def __call__(self, x: Tensor, generator: torch.Generator | None = None) -> Tensor:
        """Observed values: :meth:`evaluate_true` plus noise.

        Shapes: ``(*batch, *point_shape)`` → ``(*batch,)``.
        """
        self.space.check(x)
        value = self.evaluate_true(x)
        if self.noise_std:
            value = value + self.noise_std * torch.randn(
                value.shape, generator=generator, dtype=value.dtype, device=value.device
            )
        return value

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"
