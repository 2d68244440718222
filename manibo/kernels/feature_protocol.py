r"""The feature-map protocol: a module :math:`x \mapsto \Phi(x)` that says whether it is exact and
how many features it has.

The maps themselves live in :mod:`manibo.kernels.features` (eigenfunction, addition-theorem,
scaled and product maps, and :func:`~manibo.kernels.features.feature_map`, which builds the map of a
kernel), :mod:`manibo.kernels.fourier_features` (random Fourier features of Euclidean kernels) and
:class:`~manibo.models.vish.VISHFeatures` (the harmonics of a VISH model).
"""

from __future__ import annotations

import hashlib

import torch
from torch import Tensor

from manibo.exceptions import ConfigurationError

DEFAULT_MAX_FEATURES = 10_000
"""The most eigenfunction features a kernel's map builds when no cap is given
(:func:`~manibo.kernels.features.feature_map` without ``max_features``, a kernel's
``feature_map(x)`` without ``num_levels``): about 20 s for the first call on SO(3) at 10 660
features; SO(3) at its default lengthscale uses 400 995."""


def check_feature_count(kernel: object, count: int, remedy: str) -> None:
    """Refuse an eigenfunction map of more than :data:`DEFAULT_MAX_FEATURES` features per point,
    before anything is computed.

    Args:
        kernel: the kernel (for the message).
        count: features per point of its map at its current levels.
        remedy: what the caller can pass instead (the end of the message).

    Raises:
        ConfigurationError: ``count > DEFAULT_MAX_FEATURES``.
    """
    if count > DEFAULT_MAX_FEATURES:
        raise ConfigurationError(
            f"the eigenfunction map of {kernel!r} at its current levels has {count} features per "
            f"point, more than the default budget of {DEFAULT_MAX_FEATURES} (building it may take "
            f"minutes and gigabytes): {remedy}"
        )


class FeatureMap(torch.nn.Module):
    r"""A feature map :math:`\Phi` of a kernel.

    Subclasses implement :meth:`forward` and :attr:`num_features` and set :attr:`exact`.

    Attributes:
        exact: True when :math:`\Phi(x)\Phi(y)^\top` equals the kernel (for an eigenfunction map,
            the kernel truncated to the levels it uses), False when it equals it in expectation
            over the map's seeded randomness.
    """

    exact: bool

    def forward(self, x: Tensor) -> Tensor:
        """Features of points ``x`` ``(*batch, n, *point_shape)``; returns ``(*batch, n, M)``."""
        raise NotImplementedError

    @property
    def num_features(self) -> int:
        """``M``, the number of features (at the current hyperparameters)."""
        raise NotImplementedError

    def gram(self, x1: Tensor, x2: Tensor | None = None) -> Tensor:
        r""":math:`\Phi(x_1)\Phi(x_2)^\top`, shape ``(*batch, n, m)``."""
        phi1 = self(x1)
        phi2 = phi1 if x2 is None else self(x2)
        return phi1 @ phi2.transpose(-1, -2)


def module_dtype_device(module: torch.nn.Module) -> tuple[torch.dtype, torch.device]:
    """The dtype and device of a module's first floating parameter or buffer (float64 on the CPU
    for a module without one)."""
    for tensor in (*module.parameters(), *module.buffers()):
        if tensor.is_floating_point():
            return tensor.dtype, tensor.device
    return torch.float64, torch.device("cpu")


def seeded_generator(seed: int) -> torch.Generator:
    """A CPU generator seeded with ``seed``: maps draw on the CPU and move their draws to the
    kernel's device, so a seed gives the same map on every device."""
    return torch.Generator().manual_seed(int(seed))


def point_generator(seed: int) -> torch.Generator:
    """A CPU generator for a map's random points on its space, seeded with a fixed hash of
    ``seed``: the first 8 bytes (little-endian) of the SHA-256 of
    ``"manibo.feature-points:<seed>"``.

    ``space.random(n, generator=seed)``, which draws the loop's initial design
    (:func:`~manibo.loop.seeded_design`) and often a user's data, seeds its generator with ``seed``
    itself. Points drawn from that stream would be training points too, where
    :math:`\\Phi\\Phi^\\top` is then far from the kernel (on SO(4) at lengthscale 0.4 its diagonal
    was 21 where the kernel is 1); the hash keeps the streams apart, and a seed still gives the same
    points on every device.
    """
    digest = hashlib.sha256(f"manibo.feature-points:{int(seed)}".encode()).digest()
    return torch.Generator().manual_seed(int.from_bytes(digest[:8], "little"))
