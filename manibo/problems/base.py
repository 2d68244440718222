"""The benchmark-problem contract: a function on a space with a known minimum, optionally noisy."""

from __future__ import annotations

from abc import ABC, abstractmethod

import torch
from botorch.test_functions.synthetic import SyntheticTestFunction
from torch import Tensor

from manibo._validation import check_real
from manibo.spaces.base import Space


def evaluate_on_device(function: SyntheticTestFunction, z: Tensor) -> Tensor:
    """``function.evaluate_true(z)`` with the BoTorch test function's bounds moved to ``z``'s
    device first (BoTorch checks the inputs against them, and a CUDA ``z`` against CPU bounds
    raised "Expected all tensors to be on the same device").

    Shapes: ``(*batch, k)`` → ``(*batch,)``.
    """
    return function.to(z.device).evaluate_true(z)


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
            # drawn where the generator lives (the CLI's is on the CPU), then moved to the value
            device = generator.device if generator is not None else value.device
            noise = torch.randn(value.shape, generator=generator, dtype=value.dtype, device=device)
            value = value + self.noise_std * noise.to(value.device)
        return value

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"
