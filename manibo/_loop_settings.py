"""The settings of an optimisation loop: checked in full before a journal or an evaluation exists.

:func:`validated_settings` checks every value and the combinations that cannot work (an analytic
acquisition with batches, the projection optimiser on a finite space, ...);
:func:`check_buildable` builds the surrogate and the acquisition once on a few random points, so
that an option the surrogate factory refuses is reported by the constructor, not after the
initial design; :func:`settings_differences` lists what differs between a journal and a resume.
"""

from __future__ import annotations

import math
import re
import sys
import warnings
from typing import Any

import numpy as np
import torch
from botorch.acquisition import qKnowledgeGradient
from torch import Tensor

from manibo import _json
from manibo._autograd import autograd_on
from manibo._validation import as_points, as_tensor_arg, check_bool, check_int, shown
from manibo.acquisitions import (
    build_acquisition,
    check_acquisition,
    chooses_one_at_a_time,
    required_features,
)
from manibo.exceptions import ConfigurationError, InputDataError, ManiboError
from manibo.models import build_surrogate, check_surrogate_supports, surrogate_entry
from manibo.models.registry import factory_options, factory_parameters
from manibo.optim import LBFGSOptions
from manibo.spaces.base import Space, UnsupportedError

SETTINGS = (
    "surrogate",
    "acquisition",
    "q",
    "minimize",
    "initial_design",
    "seed",
    "surrogate_options",
    "optimizer",
    "num_restarts",
    "raw_samples",
    "exclude_evaluated",
    "optimizer_options",
    "initial_points",
    "noise_std",
)
"""The constructor settings recorded in a journal's header and compared on resume."""

ADDED_SETTINGS = {"initial_points": None, "noise_std": None}
"""Settings that journals of earlier versions lack, with the value their runs had."""

SEED_MAX = 2**32 - 1
"""Largest seed: the loop derives per-step seeds from it that must stay within 64 bits."""


def json_values(name: str, value: dict | None) -> dict[str, Any]:
    """``value`` as it reads back from the journal (tuples become lists), or a clear error."""
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
        raise ConfigurationError(
            f"`{name}` must be a dict with string keys, got {type(value).__name__} {value!r}."
        )
    try:
        return _json.loads(_json.dumps(value))
    except (TypeError, ValueError, RecursionError) as err:  # RecursionError: a dict in itself
        raise ConfigurationError(
            f"`{name}` must hold JSON values (numbers, strings, booleans, lists, dicts) so that "
            f"the journal can record them, got {value!r} ({err})."
        ) from err


def number_of_points(space: Space) -> int | None:
    """How many points a finite space has; None for a continuous one."""
    return int(space.all_points().shape[0]) if space.is_discrete else None


def checked_initial_design(value: object) -> int:
    """``initial_design`` as an ``int >= 1``; points given in its place (a tensor, an array, a
    list) are refused with the way to start from known points.

    Raises:
        ConfigurationError: naming what arrived and what to do.
    """
    if isinstance(value, (Tensor, np.ndarray)) and value.ndim > 0:
        kind = "tensor" if isinstance(value, Tensor) else "NumPy array"
        what = f"a {kind} of shape {tuple(value.shape)}"
    elif isinstance(value, (list, tuple)):
        what = f"a {type(value).__name__} of {len(value)} entr{'y' if len(value) == 1 else 'ies'}"
    else:
        return check_int("initial_design", value, minimum=1)
    raise ConfigurationError(
        "`initial_design` must be an integer, the number of random points drawn before the "
        f"surrogate takes over; got {what}. To start from points already evaluated, tell them "
        "to a BayesianOptimizer before its first ask(), where they count toward the initial "
        "design and the budget: `opt = manibo.BayesianOptimizer(space, seed=0)`, "
        "`opt.tell(X, Y)` (X of shape (n, *point_shape), Y of n values), then "
        "`result = opt.run(objective, budget)`. To evaluate chosen points first, pass them as "
        "`initial_points=X` (to minimize() and maximize() too)."
    )


def checked_initial_points(
    space: Space, value: object, exclude_evaluated: bool
) -> list[list[float]] | None:
    """``initial_points`` as nested lists of float64 coordinates, one list per point (as the
    journal records points), or None.

    Args:
        space: the search space.
        value: None, or points ``(k, *point_shape)`` (one point ``point_shape``) of ``space``, a
            floating tensor or NumPy array; on a finite space with ``exclude_evaluated``,
            distinct.
        exclude_evaluated: the loop's setting of that name.

    Raises:
        ConfigurationError: naming what arrived and what is expected.
    """
    if value is None:
        return None
    shape = space.point_shape
    try:
        X = as_tensor_arg("initial_points", as_points("initial_points", value))
        X = X.detach().to("cpu", torch.float64)
        if X.dim() == len(shape):
            X = X.unsqueeze(0)
        space.check_point_shape(X, "initial_points")
        if X.dim() != 1 + len(shape) or X.shape[0] == 0:
            raise InputDataError(
                f"`initial_points` must have shape (k, {', '.join(map(str, shape))}) with k >= 1, "
                f"got {tuple(X.shape)}; stack the points along one leading dimension."
            )
        space.check(X, "initial_points")
    except InputDataError as err:
        raise ConfigurationError(str(err)) from None
    if space.is_discrete and exclude_evaluated:
        first: dict[tuple[float, ...], int] = {}
        repeated = [i for i, x in enumerate(X) if first.setdefault(space.point_key(x), i) != i]
        if repeated:
            raise ConfigurationError(
                f"`initial_points` repeats points (rows {repeated} repeat earlier rows), and "
                "with exclude_evaluated=True no point of a finite space is evaluated twice; "
                "drop the repeats, or pass `exclude_evaluated=False`."
            )
    return X.tolist()


def checked_noise_std(surrogate: str, space: Space, value: object) -> float | None:
    """``noise_std`` as a float, or None (the noise is fitted).

    Raises:
        ConfigurationError: it is not a number above 0 whose square is a float64 number, or
            the surrogate cannot take known noise variances.
    """
    if value is None:
        return None
    number = None
    if not isinstance(value, (bool, np.bool_)) and isinstance(
        value, (int, float, np.integer, np.floating)
    ):
        number = float(value)
    elif isinstance(value, Tensor) and value.numel() == 1 and value.dtype.is_floating_point:
        number = float(value)
    if number is None or not (
        number > 0 and math.isfinite(number * number) and number * number >= sys.float_info.min
    ):
        raise ConfigurationError(
            "`noise_std` must be a number above 0 whose square is a float64 number (about "
            "1e-150 to 1e150), the standard deviation of each measurement in the objective's "
            f"units, got {shown(value)}. Leave it out to have the noise fitted (for a "
            "noiseless objective too: the fitted noise then stays near its floor)."
        )
    check_surrogate_supports(surrogate, space, ("train_Yvar",))
    return number


def validated_settings(space: Space, **settings: Any) -> dict[str, Any]:
    """Check every loop setting and return them normalised (plain ints, bools, JSON dicts).

    Args:
        space: the search space.
        **settings: exactly the names in :data:`SETTINGS`.

    Raises:
        ConfigurationError: naming the setting, what it must be and what arrived.
    """
    s = dict(settings)
    check_surrogate_supports(s["surrogate"], space)
    s["q"] = check_int("q", s["q"], minimum=1)
    check_batch_size(s["acquisition"], s["optimizer"], s["q"])
    check_surrogate_supports(s["surrogate"], space, required_features(s["acquisition"]))
    s["minimize"] = check_bool("minimize", s["minimize"])
    s["exclude_evaluated"] = check_bool("exclude_evaluated", s["exclude_evaluated"])
    s["initial_design"] = checked_initial_design(s["initial_design"])
    s["initial_points"] = checked_initial_points(space, s["initial_points"], s["exclude_evaluated"])
    count = number_of_points(space)
    if count is not None and s["initial_design"] > count:
        raise ConfigurationError(
            f"`initial_design` ({s['initial_design']}) exceeds the {count} points of {space!r}; "
            f"choose at most {count}."
        )
    s["seed"] = check_int("seed", s["seed"], minimum=0, maximum=SEED_MAX)
    s["num_restarts"] = check_int("num_restarts", s["num_restarts"], minimum=1)
    s["raw_samples"] = check_int("raw_samples", s["raw_samples"], minimum=1)
    if s["raw_samples"] < s["num_restarts"]:
        raise ConfigurationError(
            f"`raw_samples` ({s['raw_samples']}) must be at least `num_restarts` "
            f"({s['num_restarts']}): the starts are chosen among the raw samples."
        )
    if "train_Yvar" in (s["surrogate_options"] or {}):
        raise ConfigurationError(
            "`surrogate_options` cannot hold `train_Yvar`: fixed variances would not follow the "
            "data as it grows. For a known noise level, pass `noise_std` (the standard deviation "
            "of every measurement, in the objective's units); for one variance per point, fit "
            "manibo.models.build_surrogate(name, space, X, Y, train_Yvar=...) yourself and "
            "optimise an acquisition on it with manibo.optim.optimize_acqf_on_space."
        )
    s["noise_std"] = checked_noise_std(s["surrogate"], space, s["noise_std"])
    s["surrogate_options"] = json_values("surrogate_options", s["surrogate_options"])
    s["optimizer_options"] = json_values("optimizer_options", s["optimizer_options"])
    _check_optimizer(space, s)
    return s


def check_batch_size(acquisition: str, optimizer: str, q: int) -> None:
    """Refuse proposing ``q`` points at once with an acquisition and optimiser that cannot: an
    analytic acquisition at ``q > 1``, or one that chooses a batch one point at a time with the
    'projection' optimiser (which optimises a batch jointly).

    Raises:
        ConfigurationError: naming the acquisition, ``q`` and what to use instead.
    """
    check_acquisition(acquisition, q)
    if optimizer == "projection" and q > 1 and chooses_one_at_a_time(acquisition):
        raise ConfigurationError(
            f"the acquisition {acquisition!r} chooses q = {q} points one at a time, which the "
            "'projection' optimiser does not do; use optimizer='riemannian' or q = 1."
        )


def _check_optimizer(space: Space, s: dict[str, Any]) -> None:
    if s["optimizer"] == "riemannian":
        LBFGSOptions.from_options(s["optimizer_options"])
    elif s["optimizer"] == "projection":
        unknown = sorted(set(s["optimizer_options"]) - {"maxiter"})
        if unknown:
            raise ConfigurationError(
                f"unknown optimizer option(s) {', '.join(map(repr, unknown))}; the 'projection' "
                "optimiser (BoTorch's L-BFGS-B in the ambient box) takes maxiter."
            )
        if "maxiter" in s["optimizer_options"]:
            check_int("maxiter", s["optimizer_options"]["maxiter"], minimum=1)
        try:
            space.ambient_bounds()
        except UnsupportedError as err:
            raise ConfigurationError(
                f"optimizer='projection' needs a box around the space, and {space!r} has none "
                f"({err}); use optimizer='riemannian'."
            ) from err
    else:
        raise ConfigurationError(
            f"`optimizer` must be 'riemannian' or 'projection', got {s['optimizer']!r}."
        )
    if space.is_discrete and s["acquisition"] == "qkg":
        raise ConfigurationError(
            "the one-shot knowledge gradient 'qkg' optimises fantasy points continuously and "
            f"cannot run on the finite space {space!r}; use 'qlognei' or 'qucb'."
        )


def check_buildable(
    space: Space, settings: dict[str, Any], design: Tensor, device: torch.device
) -> None:
    """Build the surrogate and the acquisition once on 4 design points and query the posterior.

    The query is made where the optimiser will evaluate the acquisition: on the space, or for
    the projection optimiser at points of the ambient box. The build takes the surrogate's
    ``check_options`` (a network surrogate trains for one step) where the user's options do not
    set them: a fraction of a second; the global random state is left as it was and the build's
    warnings are dropped.

    Args:
        space: the search space.
        settings: validated settings.
        design: at least one point of the space ``(n, *point_shape)`` (the initial design).
        device: where the loop fits surrogates.

    Raises:
        ConfigurationError: what failed, with the surrogate's or acquisition's own message.
    """
    with autograd_on():  # the build fits, also inside a caller's no_grad() or inference_mode()
        _check_build(space, settings, design, device)


def _check_build(
    space: Space, settings: dict[str, Any], design: Tensor, device: torch.device
) -> None:
    name, options = settings["surrogate"], settings["surrogate_options"]
    X = _dry_points(space, design).to(device)
    n = X.shape[0]
    X = X.reshape(n, -1)
    Y = torch.linspace(-1.0, 1.0, n, dtype=torch.float64, device=device).reshape(n, 1)
    cuda = [device] if device.type == "cuda" else []
    with torch.random.fork_rng(devices=cuda), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_options = {
            k: v for k, v in surrogate_entry(name).check_options.items() if k not in options
        }
        known = {}
        if settings["noise_std"] is not None:  # the factory's train_Yvar, exercised
            known["train_Yvar"] = torch.full_like(Y, 0.01)
        try:
            model = build_surrogate(name, space, X, Y, **check_options, **options, **known)
            _check_posterior_shape(model, X)  # kernels build lazily: a broken one fails here
        except Exception as err:
            blamed = isinstance(err, TypeError) and any(k in str(err) for k in check_options)
            checked = (
                f" (built with the check_options {check_options} of its registration)"
                if blamed
                else ""
            )
            raise _build_error(
                f"the surrogate {name!r}{checked}", space, options, err, name
            ) from err
        try:
            acqf = build_acquisition(settings["acquisition"], model, X, Y, None, 0, space=space)
            _evaluate_once(acqf, space, settings, X)
        except Exception as err:
            raise _acquisition_error(settings, space, err) from err
        if settings["optimizer"] == "projection":
            bounds = space.ambient_bounds().to(X)
            probe = bounds[0] + (bounds[1] - bounds[0]) * torch.rand(1, X.shape[-1]).to(X)
            try:
                model.posterior(probe)
            except InputDataError as err:
                raise ConfigurationError(
                    "optimizer='projection' evaluates the surrogate at points of the ambient box, "
                    f"off the space, but the surrogate {name!r} is defined only on {space!r} "
                    f"({err}). Use optimizer='riemannian', or a surrogate defined off the space "
                    "such as 'euclidean'."
                ) from err


def _evaluate_once(acqf, space: Space, settings: dict[str, Any], X: Tensor) -> None:
    """Evaluate ``acqf`` on one batch of random points of ``space``, of the size the optimiser
    scores (one point for an acquisition chosen one point at a time; with the fantasy points of
    the one-shot knowledge gradient), so that a model that cannot serve it (fantasies not
    implemented) fails before any evaluation."""
    q = 1 if chooses_one_at_a_time(settings["acquisition"]) else settings["q"]
    if isinstance(acqf, qKnowledgeGradient):
        q = acqf.get_augmented_q_batch_size(q)
    points = space.random(q, generator=torch.Generator().manual_seed(2)).to(X)
    try:
        with torch.no_grad():
            acqf(points.reshape(1, q, -1))
    except NotImplementedError as err:  # a model's method left out, fantasies most often
        if isinstance(err, UnsupportedError):
            raise
        raise ConfigurationError(
            f"NotImplementedError: {err}. A surrogate without fantasy models declares so with "
            "register_surrogate(..., unsupported_features={'fantasize': 'why, and what to use "
            "instead'}), and the loop then refuses the acquisitions that need them by name"
        ) from err


def _dry_points(space: Space, design: Tensor) -> Tensor:
    """Up to 4 design points; a design of one point is completed by seeded random points."""
    if design.shape[0] >= 4 or (space.is_discrete and design.shape[0] == number_of_points(space)):
        return design[:4]
    extra = space.random(4 - design.shape[0], generator=torch.Generator().manual_seed(1))
    return torch.cat([design, extra.to(design)])


def _check_posterior_shape(model, X: Tensor) -> None:
    """Refuse a model whose posterior at a batch ``(3, k, D)`` of points of ``X`` ``(n, D)``
    (``k = min(n, 2)``) does not have a mean of shape ``(3, k, num_outputs)``, the shape every
    BoTorch acquisition reads."""
    k = min(X.shape[0], 2)
    batch = X[:k].unsqueeze(0).expand(3, k, X.shape[-1])
    posterior = model.posterior(batch)
    shape = tuple(posterior.mean.shape)
    expected = (3, k, model.num_outputs)
    if shape != expected:
        raise ConfigurationError(
            f"its posterior at points of shape {tuple(batch.shape)} has a mean of shape {shape}, "
            f"but BoTorch's acquisitions need {expected}: the model must keep the batch "
            "dimensions of X (manibo.testing.run_model_check checks this and the rest of "
            "BoTorch's model contract)"
        )
    for what, values in (("mean", posterior.mean), ("variance", posterior.variance)):
        if not torch.isfinite(values).all():
            raise ConfigurationError(
                f"its posterior {what} at {k} of the design points is not finite "
                f"({values.flatten().tolist()[:4]}), fitted to the outcomes -1 to 1"
            )


def _acquisition_error(
    settings: dict[str, Any], space: Space, err: Exception
) -> ConfigurationError:
    """The error for an acquisition that cannot be built or evaluated on the surrogate; one that
    asserts a batch of one point (BoTorch's analytic acquisitions) at ``q > 1`` was registered
    without ``analytic=True``."""
    name, q = settings["acquisition"], settings["q"]
    kind = "" if isinstance(err, ManiboError) else f"{type(err).__name__}: "
    advice = (
        f" It takes one point at a time, but was registered without analytic=True, so q = {q} "
        "reached it: register it with register_acquisition(..., analytic=True), and the loop "
        "refuses q > 1 for it, or choose a batch acquisition such as 'qlognei'."
        if q > 1 and "q=1" in str(err)
        else ""
    )
    return ConfigurationError(
        f"the acquisition {name!r} cannot be built on the surrogate {settings['surrogate']!r} on "
        f"{space!r}: {kind}{str(err).rstrip('.')}.{advice}"
    )


def _build_error(
    what: str, space: Space, options: dict, err: Exception, name: str
) -> ConfigurationError:
    unknown = re.search(r"unexpected keyword argument '(\w+)'", str(err))
    advice = (
        f" {factory_options(name)}"
        if isinstance(err, TypeError)
        and unknown
        and unknown.group(1) in options
        and unknown.group(1) not in factory_parameters(name)[0]
        else " Check the option names and values in the surrogate's documentation."
        if isinstance(err, (TypeError, ConfigurationError)) and options
        else " Choose another surrogate for this space: 'matern' (the default) models every space "
        "of manibo.spaces, and manibo.models.available_surrogates() lists the others."
        if isinstance(err, UnsupportedError) and type(space).__module__.startswith("manibo.")
        else " Choose another surrogate for this space: manibo.models.available_surrogates() "
        "lists them; 'matern' (the default) models a space of your own once a kernel is "
        "registered for it with `@manibo.kernels.matern_kernel.register`."
        if isinstance(err, UnsupportedError)
        else ""
    )
    kind = "" if isinstance(err, ManiboError) else f"{type(err).__name__}: "
    reason = str(err).rstrip(".")
    return ConfigurationError(
        f"{what} cannot be built on {space!r} with surrogate_options={options}: {kind}{reason}."
        f"{advice}"
    )


def settings_differences(recorded: dict[str, Any], wanted: dict[str, Any]) -> list[str]:
    """What differs between a journal's configuration and the one asked for.

    One item per setting (per entry for dict settings such as ``surrogate_options``), as
    ``"q: 1 in the journal, 2 now"``.
    """
    differences = []
    for key in (*SETTINGS, "metadata"):
        old, new = recorded.get(key, ADDED_SETTINGS.get(key)), wanted.get(key)
        if isinstance(old, dict) and isinstance(new, dict):
            for sub in sorted(set(old) | set(new), key=str):
                if not _same(old.get(sub, _ABSENT), new.get(sub, _ABSENT)):
                    differences.append(
                        f"{key}.{sub}: {_shown(old.get(sub, _ABSENT))} in the journal, "
                        f"{_shown(new.get(sub, _ABSENT))} now"
                    )
        elif not _same(old, new):
            differences.append(f"{key}: {_briefly(old)} in the journal, {_briefly(new)} now")
    if recorded.get("space_fingerprint") != wanted["space_fingerprint"]:
        same = recorded.get("space") == wanted["space"]
        differences.append(
            f"space: {recorded.get('space')} in the journal, {wanted['space']} now"
            + (" (same description, other content)" if same else "")
        )
    return differences


_ABSENT = object()


def _same(old: object, new: object) -> bool:
    """Whether a setting read back from the journal equals the one asked for: as ``==``, but a
    NaN (which the journal records) equals a NaN, in lists and dicts too."""
    if isinstance(old, float) and isinstance(new, float) and math.isnan(old) and math.isnan(new):
        return True
    if isinstance(old, dict) and isinstance(new, dict):
        return old.keys() == new.keys() and all(_same(old[k], new[k]) for k in old)
    if isinstance(old, list) and isinstance(new, list):
        return len(old) == len(new) and all(_same(a, b) for a, b in zip(old, new, strict=True))
    return old == new


def _briefly(value: object) -> str:
    """``repr(value)``; a list of points (``initial_points``) as their number."""
    if isinstance(value, list) and value and isinstance(value[0], list):
        return f"{len(value)} point{'s' if len(value) > 1 else ''} {shown(value, 60)}"
    return repr(value)


def _shown(value: object) -> str:
    return "(not set)" if value is _ABSENT else repr(value)
