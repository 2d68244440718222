"""Surrogates by name: one factory signature ``(space, train_X, train_Y, **options) -> Model``."""

from __future__ import annotations

import inspect
from collections.abc import Callable

from botorch.models.model import Model
from torch import Tensor

from manibo.exceptions import ConfigurationError
from manibo.spaces.base import Space

SurrogateFactory = Callable[..., Model]
_REGISTRY: dict[str, SurrogateFactory] = {}


def register_surrogate(name: str) -> Callable[[SurrogateFactory], SurrogateFactory]:
    """Decorator registering ``factory(space, train_X, train_Y, **options)`` under ``name``."""

    def decorate(factory: SurrogateFactory) -> SurrogateFactory:
        if name in _REGISTRY and _REGISTRY[name] is not factory:
            raise ConfigurationError(f"a surrogate named {name!r} is already registered.")
        _REGISTRY[name] = factory
        return factory

    return decorate


def available_surrogates() -> list[str]:
    """Names accepted by :func:`build_surrogate`."""
    return sorted(_REGISTRY)


def build_surrogate(
    name: str,
    space: Space,
    train_X: Tensor,
    train_Y: Tensor,
    previous_model: Model | None = None,
    **options,
) -> Model:
    """Build (and fit) the surrogate registered as ``name`` on the data.

    Args:
        name: a registered name (see :func:`available_surrogates`).
        space: the space the inputs live on.
        train_X: inputs ``(n, *point_shape)`` on the space.
        train_Y: outcomes ``(n, 1)``.
        previous_model: the surrogate of the previous iteration, passed on to factories that take
            a ``previous_model`` argument (to warm-start their training); ignored by the others.
        **options: passed to the factory.
    """
    if name not in _REGISTRY:
        raise ConfigurationError(
            f"unknown surrogate {name!r}; choose one of {', '.join(available_surrogates())}, or "
            "register your own with @manibo.models.register_surrogate('name')."
        )
    factory = _REGISTRY[name]
    if previous_model is not None and "previous_model" in inspect.signature(factory).parameters:
        options = {**options, "previous_model": previous_model}
    return factory(space, train_X, train_Y, **options)
