"""Surrogates by name: one factory signature ``(space, train_X, train_Y, **options) -> Model``."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass

from botorch.models.model import Model
from torch import Tensor

from manibo.exceptions import ConfigurationError
from manibo.registry import Entry, Registry
from manibo.spaces.base import Space

SurrogateFactory = Callable[..., Model]
SpaceCheck = Callable[[Space], str | None]


@dataclass(frozen=True)
class SurrogateEntry(Entry):
    """A surrogate factory and the check of the spaces it cannot model (None: it models all)."""

    unsupported: SpaceCheck | None = None


SURROGATES: Registry[SurrogateEntry] = Registry(
    "surrogate", advice="register your own with @manibo.models.register_surrogate('name')"
)


def register_surrogate(
    name: str, unsupported: SpaceCheck | None = None
) -> Callable[[SurrogateFactory], SurrogateFactory]:
    """Decorator registering ``factory(space, train_X, train_Y, **options)`` under ``name``.

    Args:
        name: the name the loop, the command line and :func:`build_surrogate` use.
        unsupported: ``unsupported(space)`` says why the surrogate cannot model functions on
            ``space`` (a sentence that ends with what to use instead), or returns None where it
            can. Checked before any data exist (:func:`check_surrogate_supports`) and before every
            build. None: every space is supported.

    Raises:
        ConfigurationError: ``name`` is taken by another factory (or by the same factory with
            another ``unsupported``).
    """

    def decorate(factory: SurrogateFactory) -> SurrogateFactory:
        SURROGATES.register(name, SurrogateEntry(factory, unsupported))
        return factory

    return decorate


def available_surrogates() -> list[str]:
    """Names accepted by :func:`build_surrogate` (plug-ins included), sorted."""
    return SURROGATES.names()


def unsupported_reason(name: str, space: Space) -> str | None:
    """Why the surrogate ``name`` cannot model functions on ``space``; None when it can.

    Raises:
        ConfigurationError: ``name`` is not registered.
    """
    check = SURROGATES.get(name).unsupported
    return None if check is None else check(space)


def check_surrogate_supports(name: str, space: Space) -> None:
    """Raise a clear error when the surrogate ``name`` is unknown or cannot model ``space``.

    Raises:
        ConfigurationError: with the reason and what to use instead.
    """
    reason = unsupported_reason(name, space)
    if reason is not None:
        raise ConfigurationError(reason)


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
    check_surrogate_supports(name, space)
    factory = SURROGATES.get(name).build
    if previous_model is not None and "previous_model" in inspect.signature(factory).parameters:
        options = {**options, "previous_model": previous_model}
    return factory(space, train_X, train_Y, **options)
