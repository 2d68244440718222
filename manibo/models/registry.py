"""Surrogates by name: one factory signature ``(space, train_X, train_Y, **options) -> Model``.

Each entry says what its surrogate cannot do, so that a loop configured with an impossible
combination fails when it is built, before any evaluation: the spaces it cannot model
(``unsupported``), the model features that are out of its reach (``unsupported_features``, keyed by
the names in :data:`FEATURES`), and whether it models several outcomes itself (``multi_output``;
otherwise, the default, :func:`build_surrogate` fits one model per column of ``train_Y`` and
returns them as a :class:`~manibo.models.model_list.OutcomeList`). An entry may also name cheaper
options under which the loop builds the surrogate once when it is constructed, to check the
configuration (``check_options``: fewer training steps of the same code).
"""

from __future__ import annotations

import contextlib
import copy
import functools
import inspect
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import torch
from botorch.models.model import Model
from torch import Tensor

from manibo._autograd import autograd_on, usable_in_autograd
from manibo.exceptions import ConfigurationError, InputDataError
from manibo.models.model_list import OutcomeList
from manibo.models.precision import Float64AdviceOnce
from manibo.models.transforms import SpaceIsometry, transform_outputs
from manibo.registry import Entry, Registry
from manibo.spaces.base import Space

SurrogateFactory = Callable[..., Model]
SpaceCheck = Callable[[Space], str | None]

FEATURES = {
    "fantasize": "fantasy models (condition_on_observations, fantasize): qKG, qNIPV, sequential "
    "qMES",
    "observation_noise_tensor": "known noise levels passed to posterior(observation_noise=tensor)",
    "input_transform": "a BoTorch input transform (input_transform=)",
    "outcome_transform": "a BoTorch outcome transform (outcome_transform=)",
    "train_Yvar": "known noise variances of the training outcomes (train_Yvar=)",
}
"""Model features a surrogate may declare out of its reach, with what each one covers."""


@dataclass(frozen=True)
class SurrogateEntry(Entry):
    """What the registry knows about one surrogate.

    Attributes:
        build: ``factory(space, train_X, train_Y, **options) -> Model``.
        unsupported: ``unsupported(space)`` says why the surrogate cannot model functions on
            ``space``, or returns None where it can; None: every space.
        unsupported_features: feature name (a key of :data:`FEATURES`) to the reason it is out of
            reach.
        multi_output: the factory models several columns of ``train_Y`` itself.
        check_options: options for the build that checks a loop's configuration when the loop
            is constructed (the user's options override them).
    """

    unsupported: SpaceCheck | None = None
    unsupported_features: Mapping[str, str] = field(default_factory=dict)
    multi_output: bool = False
    check_options: Mapping[str, Any] = field(default_factory=dict)


FACTORY = "a factory `(space, train_X, train_Y, **options) -> Model`"

SURROGATES: Registry[SurrogateEntry] = Registry(
    "surrogate", advice="register your own with @manibo.models.register_surrogate('name')"
)


def register_surrogate(
    name: str,
    unsupported: SpaceCheck | None = None,
    *,
    unsupported_features: Mapping[str, str] | None = None,
    multi_output: bool = False,
    check_options: Mapping[str, Any] | None = None,
) -> Callable[[SurrogateFactory], SurrogateFactory]:
    """Decorator registering ``factory(space, train_X, train_Y, **options)`` under ``name``.

    Args:
        name: the name the loop, the command line and :func:`build_surrogate` use.
        unsupported: ``unsupported(space)`` says why the surrogate cannot model functions on
            ``space`` (a sentence that ends with what to use instead), or returns None where it
            can. Checked before any data exist (:func:`check_surrogate_supports`) and before every
            build. None: every space is supported.
        unsupported_features: the model features (keys of :data:`FEATURES`) that are out of the
            surrogate's reach, each with a sentence saying why and what to use instead; the loop
            refuses an acquisition that needs one of them when it is built.
        multi_output: the factory models several outcomes (``train_Y`` of shape ``(n, m)``)
            itself; False (the default): it takes one column, and :func:`build_surrogate` fits
            one model per column.
        check_options: options that make a build cheap without changing what it runs, such as
            one training step instead of hundreds: the loop builds the surrogate once on a few
            design points when it is constructed, to refuse a configuration that cannot be
            built before any evaluation, and that build uses these options where the user's
            ``surrogate_options`` do not set them. None: the defaults.

    Raises:
        ConfigurationError: the name is taken, a feature name is unknown, or the decorated
            object cannot be called as ``factory(space, train_X, train_Y)``.
    """
    SURROGATES.check_name(name)
    if unsupported is not None and not callable(unsupported):
        raise ConfigurationError(
            f"`unsupported` of the surrogate {name!r} is a function of the space that returns why "
            f"the surrogate cannot model it (or None where it can), got {unsupported!r}."
        )
    if not isinstance(unsupported_features, Mapping | None):
        raise ConfigurationError(
            f"`unsupported_features` of the surrogate {name!r} maps feature names to reasons, "
            f"e.g. {{'fantasize': 'why, and what to use instead'}}, got {unsupported_features!r}."
        )
    features = dict(unsupported_features or {})
    for feature, reason in features.items():
        if not isinstance(reason, str) or not reason.strip():
            raise ConfigurationError(
                f"the reason given for {feature!r} in `unsupported_features` of the surrogate "
                f"{name!r} must be a sentence saying why and what to use instead, got {reason!r}."
            )
    unknown = sorted(set(features) - set(FEATURES))
    if unknown:
        raise ConfigurationError(
            f"unknown feature(s) {unknown} in `unsupported_features`; the features are "
            f"{', '.join(sorted(FEATURES))}."
        )

    def decorate(factory: SurrogateFactory) -> SurrogateFactory:
        SURROGATES.check_builder(name, factory, FACTORY, 3)
        SURROGATES.register(
            name,
            SurrogateEntry(
                factory, unsupported, features, bool(multi_output), dict(check_options or {})
            ),
        )
        return factory

    return decorate


def _checked_model(name: str, model: Any) -> Model:
    """``model`` if it is a BoTorch ``Model``, else a ``ConfigurationError`` naming the
    factory's fault."""
    if not isinstance(model, Model):
        raise ConfigurationError(
            f"the factory of the surrogate {name!r} returned {type(model).__name__}, not a "
            "BoTorch Model (botorch.models.model.Model); a factory must return the fitted model."
        )
    return model


def available_surrogates(module: str | None = None) -> list[str]:
    """Names accepted by :func:`build_surrogate` (plug-ins included), sorted.

    Args:
        module: only the names whose factory is defined in this module or in a submodule of it
            (``"my_plugin"``: the surrogates a plug-in registers, for its coverage test with
            :func:`manibo.testing.covered`); None: every name.

    Raises:
        ConfigurationError: ``module`` is not imported (its decorators have not run, so a
            coverage test would see none of its names and pass).
    """
    names = SURROGATES.names()
    if module is None:
        return names
    if module not in sys.modules:
        raise ConfigurationError(
            f"the module {module!r} is not imported, so the surrogates it registers are not "
            f"known yet; import it first (`import {module}`), and check its spelling."
        )
    return [n for n in names if _defined_in(SURROGATES.get(n).build, module)]


def _defined_in(factory: SurrogateFactory, module: str) -> bool:
    """Whether ``factory`` (or the function a ``functools.partial`` wraps) is defined in
    ``module`` or a submodule of it."""
    while isinstance(factory, functools.partial):
        factory = factory.func
    home = getattr(factory, "__module__", None) or ""
    return home == module or home.startswith(module + ".")


def surrogate_entry(name: str) -> SurrogateEntry:
    """The registry entry of ``name``.

    Raises:
        ConfigurationError: ``name`` is not registered; the message lists the known names.
    """
    return SURROGATES.get(name)


def unsupported_reason(name: str, space: Space) -> str | None:
    """Why the surrogate ``name`` cannot model functions on ``space``; None when it can.

    Raises:
        ConfigurationError: ``name`` is not registered.
    """
    check = surrogate_entry(name).unsupported
    return None if check is None else check(space)


def unsupported_feature(name: str, feature: str) -> str | None:
    """Why the surrogate ``name`` cannot offer ``feature`` (a key of :data:`FEATURES`); None when
    it can.

    Raises:
        ConfigurationError: ``name`` is not registered, or ``feature`` is unknown.
    """
    if feature not in FEATURES:
        raise ConfigurationError(
            f"unknown feature {feature!r}; the features are {', '.join(sorted(FEATURES))}."
        )
    return surrogate_entry(name).unsupported_features.get(feature)


def check_surrogate_supports(name: str, space: Space, features: tuple[str, ...] = ()) -> None:
    """Raise a clear error when the surrogate ``name`` is unknown, cannot model ``space``, or
    lacks one of ``features``.

    Raises:
        ConfigurationError: with the reason and what to use instead.
    """
    reason = unsupported_reason(name, space)
    if reason is not None:
        raise ConfigurationError(reason)
    for feature in features:
        reason = unsupported_feature(name, feature)
        if reason is not None:
            raise ConfigurationError(
                f"the {name!r} surrogate offers no {FEATURES[feature]}: {reason}"
            )


def build_surrogate(
    name: str,
    space: Space,
    train_X: Tensor,
    train_Y: Tensor,
    previous_model: Model | None = None,
    **options,
) -> Model:
    """Build (and fit) the surrogate registered as ``name`` on the data (with gradients enabled,
    also inside the caller's ``torch.no_grad()`` or ``torch.inference_mode()``).

    Args:
        name: a registered name (see :func:`available_surrogates`).
        space: the space the inputs live on.
        train_X: inputs ``(n, *point_shape)``.
        train_Y: outcomes ``(n, m)``; a surrogate registered with ``multi_output=False`` is
            fitted to each column alone and the models are returned as an
            :class:`~manibo.models.model_list.OutcomeList`. Each column's model then gets its own
            deep copy of the ``outcome_transform`` and ``input_transform`` options (the objects
            passed are left untouched), so an ``outcome_transform`` must be one for one output
            (e.g. ``Standardize(m=1)``), and its column of ``train_Yvar``.
        previous_model: the surrogate of the previous iteration, passed on to factories that take
            a ``previous_model`` argument (to warm-start their training); ignored by the others.
        **options: passed to the factory. ``train_Yvar``, known noise variances, has the shape of
            ``train_Y``, ``(n, m)``; surrogates that declare the ``"train_Yvar"`` feature out of
            reach refuse it.

    Raises:
        ConfigurationError: ``name`` is unknown, cannot model ``space`` or takes no
            ``train_Yvar``; or an ``outcome_transform`` for several outputs is given for a
            surrogate fitted column by column.
        InputDataError: ``train_Yvar`` does not have the shape of ``train_Y``.
    """
    train_Yvar = options.get("train_Yvar")
    check_surrogate_supports(name, space, () if train_Yvar is None else ("train_Yvar",))
    if train_Yvar is not None:
        _check_yvar_shape(train_Yvar, train_Y)
    entry = SURROGATES.get(name)
    factory = entry.build
    if previous_model is not None and "previous_model" in inspect.signature(factory).parameters:
        options = {**options, "previous_model": previous_model}
    # fitting differentiates the likelihood: a caller's no_grad() or inference_mode() must not
    # stop it, and tensors made under inference_mode() cannot be saved for the backward pass
    with (
        autograd_on(),
        Float64AdviceOnce(),
        _blaming_input_transform(options.get("input_transform")),
        _naming_the_options(name),
    ):
        train_X, train_Y = usable_in_autograd(train_X), usable_in_autograd(train_Y)
        if "train_Yvar" in options:
            options = {**options, "train_Yvar": usable_in_autograd(options["train_Yvar"])}
        if entry.multi_output or train_Y.dim() != 2 or train_Y.shape[-1] == 1:
            return _checked_model(name, factory(space, train_X, train_Y, **options))
        options.pop("previous_model", None)
        _check_one_output_transform(name, options.get("outcome_transform"), train_Y.shape[-1])
        return OutcomeList(
            *(
                _checked_model(name, factory(space, train_X, y, **_column_options(options, j)))
                for j, y in enumerate(train_Y.split(1, dim=-1))
            )
        )


def factory_parameters(name: str) -> tuple[list[str], bool]:
    """The options that the factory of surrogate ``name`` names (after the space and the data),
    and whether it passes others on (``**options``)."""
    try:
        parameters = list(inspect.signature(SURROGATES.get(name).build).parameters.values())
    except (TypeError, ValueError):
        return [], True
    data = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)][:3]
    named = [
        p.name
        for p in parameters
        if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and p not in data
    ]
    return named, any(p.kind in (p.VAR_KEYWORD, p.VAR_POSITIONAL) for p in parameters)


def factory_options(name: str) -> str:
    """Which options the factory of surrogate ``name`` names, and where the others are listed."""
    factory = SURROGATES.get(name).build
    named, more = factory_parameters(name)
    inner = getattr(factory, "func", factory)  # a functools.partial's function
    if not hasattr(inner, "__qualname__"):  # an instance with __call__: its class
        inner = type(inner)
    where = f"{inner.__module__}.{inner.__qualname__}"
    takes = ", ".join(named) if named else "no option of its own"
    return (
        f"The factory of {name!r}, {where}, takes {takes}"
        + (" and passes other options on" if more else "")
        + f"; help({where}) describes them."
    )


@contextlib.contextmanager
def _naming_the_options(name: str):
    """Add to an unknown option's ``TypeError`` the options the factory of ``name`` takes."""
    try:
        yield
    except TypeError as err:
        if "unexpected keyword argument" in str(err):
            err.add_note(factory_options(name))
        raise


@contextlib.contextmanager
def _blaming_input_transform(transform: object):
    """Say that ``transform`` (an ``input_transform`` option) moved the training points off the
    space, where the surrogate refuses them as off it: the points the user gave were on it."""
    try:
        yield
    except InputDataError as err:
        if transform is None or isinstance(transform, SpaceIsometry) or " off " not in str(err):
            raise
        raise InputDataError(
            f"{str(err).rstrip('.')}. These are the points after `input_transform` "
            f"({type(transform).__name__}), which moves points of the space off it: a surrogate "
            "on the space takes only transforms that keep its points on it "
            "(manibo.models.SpaceIsometry); leave `input_transform` out, as the surrogate reads "
            "the space's own geometry."
        ) from err


def _check_yvar_shape(train_Yvar: object, train_Y: Tensor) -> None:
    """Raise ``InputDataError`` unless ``train_Yvar`` is a tensor of ``train_Y``'s shape
    ``(n, m)``."""
    if isinstance(train_Yvar, Tensor) and train_Yvar.shape == train_Y.shape:
        return
    got = type(train_Yvar).__name__
    if isinstance(train_Yvar, Tensor):
        got = f"shape {tuple(train_Yvar.shape)}"
    raise InputDataError(
        f"`train_Yvar` holds the known noise variance of each outcome, a tensor of the shape "
        f"of train_Y {tuple(train_Y.shape)}, got {got}; give one column per column of "
        "train_Y (e.g. yvar.expand_as(train_Y) for one variance shared by every output)."
    )


def _check_one_output_transform(name: str, transform: object, m: int) -> None:
    """Raise ``ConfigurationError`` when an ``outcome_transform`` for several outputs is given to
    the surrogate ``name``, fitted column by column on ``train_Y`` of ``m`` columns."""
    chosen = [
        t for t in getattr(transform, "modules", list)() if getattr(t, "_outputs", None) is not None
    ]
    if chosen:
        raise ConfigurationError(
            f"`outcome_transform` holds a {type(chosen[0]).__name__} for the outputs "
            f"{list(chosen[0]._outputs)} only, but the {name!r} surrogate fits each of the {m} "
            "columns of train_Y as a model of its own with a copy of the transform, whose one "
            "output is column 0 of its model. Build one model per column with the transform "
            "it needs (`build_surrogate(name, space, X, Y[:, j:j+1], outcome_transform=...)`) "
            "and join them with `manibo.models.OutcomeList(*models)`."
        )
    outputs = sorted(transform_outputs(transform) - {1})
    if outputs:
        raise ConfigurationError(
            f"`outcome_transform` is a {type(transform).__name__} of m={outputs[0]} outputs, but "
            f"the {name!r} surrogate fits each of the {m} columns of train_Y as a model of its "
            "own, which takes a transform of one output (each model gets its own copy of the "
            "one passed): pass a one-output transform such as Standardize(m=1)."
        )


def _column_options(options: Mapping[str, Any], j: int) -> dict[str, Any]:
    """The options of column ``j``'s model: deep copies of the transforms, so that no two
    models share (or fit) one object, and column ``j`` of ``train_Yvar`` (shape ``(n, 1)``)."""
    column = dict(options)
    for key in ("outcome_transform", "input_transform"):
        if isinstance(column.get(key), torch.nn.Module):
            column[key] = copy.deepcopy(column[key])
    if column.get("train_Yvar") is not None:
        column["train_Yvar"] = column["train_Yvar"][:, j : j + 1]
    return column
