"""``optimize_acqf_on_space``: maximise any BoTorch acquisition over the points of a space."""

from __future__ import annotations

import itertools
import math

import torch
from botorch.acquisition import AcquisitionFunction
from botorch.acquisition.fixed_feature import FixedFeatureAcquisitionFunction
from botorch.acquisition.knowledge_gradient import qKnowledgeGradient
from botorch.optim.optimize import optimize_acqf_discrete
from torch import Tensor

from manibo._validation import check_int
from manibo.exceptions import ConfigurationError, InputDataError
from manibo.optim.initial_conditions import initial_conditions_on_space
from manibo.optim.mixed import alternate
from manibo.optim.riemannian_lbfgs import LBFGSOptions, riemannian_lbfgs_ascent
from manibo.spaces.base import Space
from manibo.spaces.product import setting_coordinates


def reference_tensor(acq_function: AcquisitionFunction, starts: Tensor | None = None) -> Tensor:
    """A tensor whose dtype and device the candidates take.

    In order: the model's training inputs (``train_inputs``, as BoTorch's GPs keep them, or those
    of the first sub-model of a model list), the given starts (an acquisition without a model,
    e.g. a Monte Carlo value over particles), the model's parameters, then its buffers. The model
    of a wrapper such as BoTorch's ``FixedFeatureAcquisitionFunction`` is that of the acquisition
    it wraps (``acq_func``).

    Raises:
        ConfigurationError: none of these exists (a model that keeps its tensors as plain
            attributes); the message says what to pass.
    """
    model = _model_of(acq_function)
    for candidate in (model, *getattr(model, "models", ())):
        train = getattr(candidate, "train_inputs", None)
        while isinstance(train, (tuple, list)) and train:  # BoTorch's ModelListGP: a list of
            train = train[0]  # tuples
        if isinstance(train, Tensor):
            return train
    if starts is not None:
        return starts
    if model is None:
        raise ConfigurationError(
            "the acquisition has no model to take the candidates' dtype and device from; pass "
            "`batch_initial_conditions` (the starts) or `reference=` (a tensor in the wanted dtype "
            "on the wanted device)."
        )
    tensor = next(itertools.chain(model.parameters(), model.buffers()), None)
    if tensor is not None:
        return tensor
    raise ConfigurationError(
        f"the candidates' dtype and device cannot be read from the acquisition: its model "
        f"({type(model).__name__}) has no `train_inputs`, parameters or buffers. Pass "
        "`reference=` (any tensor on the wanted device, in the wanted dtype, such as the training "
        "inputs), or give the model `train_inputs = (train_X,)` as BoTorch's GPs have."
    )


def _model_of(acq_function: AcquisitionFunction):
    """The model of ``acq_function`` or of the acquisition it wraps (``acq_func``), else None."""
    model = getattr(acq_function, "model", None)
    inner = getattr(acq_function, "acq_func", None)
    if model is None and isinstance(inner, AcquisitionFunction):
        return _model_of(inner)
    return model


def _one_point_only(acq_function: AcquisitionFunction) -> bool:
    """Whether ``acq_function`` scores one point per q-batch only.

    BoTorch marks such acquisitions (analytic ones, max-value entropy search) by wrapping
    ``forward`` in ``t_batch_mode_transform(expected_q=1)``, whose closure holds ``expected_q``;
    the wrappers are followed through ``__wrapped__``.
    """
    forward = type(acq_function).forward
    while forward is not None:
        code = getattr(forward, "__code__", None)
        cells = dict(zip(code.co_freevars, forward.__closure__ or (), strict=True)) if code else {}
        if "expected_q" in cells:
            return cells["expected_q"].cell_contents == 1
        forward = getattr(forward, "__wrapped__", None)
    return False


def _check_batch_size(acq_function: AcquisitionFunction, q: int, sequential: bool) -> None:
    """Refuse ``q > 1`` points that ``acq_function`` cannot score: jointly for an acquisition of
    one point per q-batch, one at a time (``sequential``) for one that takes no pending points."""
    name = type(acq_function).__name__
    takes_pending = hasattr(acq_function, "X_pending")  # BoTorch's analytic ones have none
    if sequential and not takes_pending:
        raise ConfigurationError(
            f"{name} takes no pending points, so it cannot choose q = {q} points one at a time "
            "(sequential=True); use q=1, or a Monte Carlo acquisition such as "
            "qLogNoisyExpectedImprovement."
        )
    if not sequential and _one_point_only(acq_function):
        advice = (
            "pass sequential=True (the points are chosen one at a time, each with the earlier "
            "ones pending) or q=1"
            if takes_pending
            else "use q=1, or a Monte Carlo acquisition such as qLogNoisyExpectedImprovement"
        )
        raise ConfigurationError(
            f"{name} scores one point at a time (its forward expects X of shape "
            f"(batch, q=1, d)), but q = {q} points were asked for jointly; {advice}."
        )


def optimize_acqf_on_space(
    acq_function: AcquisitionFunction,
    space: Space,
    q: int = 1,
    num_restarts: int = 8,
    raw_samples: int = 256,
    sequential: bool = False,
    options: LBFGSOptions | dict | None = None,
    exclude: Tensor | None = None,
    max_batch_size: int = 2048,
    seed: int | None = None,
    batch_initial_conditions: Tensor | None = None,
    reference: Tensor | None = None,
) -> tuple[Tensor, Tensor]:
    """Maximise ``acq_function`` over ``q`` points of ``space``; every evaluation is on the space.

    Continuous spaces: ``raw_samples`` uniform q-batches, ``num_restarts`` Boltzmann-selected
    starts, and batched Riemannian L-BFGS ascent with retractions (all restarts in one tensor).
    Discrete spaces (mesh vertices, graph nodes): enumeration in chunks of ``max_batch_size``,
    sequential greedy for ``q > 1`` whatever ``sequential`` (which then only decides the value
    returned, and which acquisitions are refused, as on continuous spaces), optionally skipping
    the points in ``exclude``.

    Args:
        acq_function: any BoTorch acquisition (analytic, Monte Carlo, one-shot qKnowledgeGradient).
        space: the space to search.
        q: batch size.
        num_restarts: local optimisations run together.
        raw_samples: uniform q-batches scored to choose the starts.
        sequential: for ``q > 1``, choose points one at a time (greedy, each conditioned on the
            previous ones as pending points) instead of jointly. Acquisitions that score one
            point at a time (BoTorch's ``expected_q=1``, e.g. qMaxValueEntropy) need it for
            ``q > 1``; those that take no pending points (analytic ones) are refused with it.
        options: settings of the local solver: :class:`LBFGSOptions`, or a dict of its fields
            (``{"maxiter": 200}``; a dict, as BoTorch's ``optimize_acqf`` takes its options, but
            of these fields: BoTorch's own names such as ``batch_limit`` are refused).
        exclude: discrete spaces only: points ``(k, *point_shape)`` never proposed (e.g. the
            evaluated ones).
        max_batch_size: discrete spaces only: points scored per acquisition call.
        seed: seed of the raw samples and of the start selection.
        batch_initial_conditions: continuous spaces, joint optimisation only: the starts
            ``(r, q, *point_shape)`` on the space, used instead of raw samples (for acquisitions
            that vanish on most of the space, such as a search confined to a region of the globe).
            An acquisition without a model (``model=None``) needs them, and its candidates take
            their dtype and device.
        reference: a tensor whose dtype and device the candidates take; None: read them from
            the acquisition (:func:`reference_tensor`).

    Returns:
        ``(candidates, value)``: candidates ``(q, *point_shape)`` on the space and the acquisition
        value of the batch (a scalar, on discrete spaces too; for ``sequential`` and ``q > 1`` the
        values of each greedy step, shape ``(q,)``).

    Raises:
        ConfigurationError: ``q``, ``num_restarts``, ``raw_samples`` or ``max_batch_size`` is
            not an integer (``2.0`` counts as 2), or not ``1 <= num_restarts <= raw_samples``;
            ``options`` is neither an :class:`LBFGSOptions` nor a dict, names a field it does not
            have, or gives a field a value of the wrong type;
            an acquisition that cannot score ``q`` points as asked (see ``sequential``).
        NonFiniteAcquisitionError: the acquisition was NaN or -inf at every raw sample.
    """
    q = check_int("q", q, minimum=1)
    num_restarts = check_int("num_restarts", num_restarts)
    raw_samples = check_int("raw_samples", raw_samples)
    max_batch_size = check_int("max_batch_size", max_batch_size, minimum=1)
    if isinstance(options, dict):
        options = LBFGSOptions.from_options(options)
    elif options is not None and not isinstance(options, LBFGSOptions):
        raise ConfigurationError(
            f"`options` must be an LBFGSOptions or a dict of its fields, got "
            f"{type(options).__name__}."
        )
    if num_restarts < 1 or raw_samples < num_restarts:
        raise ConfigurationError(
            f"need 1 <= num_restarts <= raw_samples, got num_restarts={num_restarts}, "
            f"raw_samples={raw_samples}."
        )
    ref = (
        reference
        if reference is not None
        else reference_tensor(acq_function, batch_initial_conditions)
    )
    if space.is_discrete:
        if q > 1:
            _check_batch_size(acq_function, q, sequential)
        return _optimize_discrete(acq_function, space, q, sequential, exclude, max_batch_size, ref)
    if exclude is not None:
        raise ConfigurationError(
            "`exclude` applies to discrete spaces only (mesh vertices, graph nodes)."
        )
    if batch_initial_conditions is not None and sequential and q > 1:
        raise ConfigurationError(
            "`batch_initial_conditions` applies to joint optimisation; pass sequential=False."
        )
    if q > 1:
        _check_batch_size(acq_function, q, sequential)
    if batch_initial_conditions is not None:
        return _optimize_from(acq_function, space, q, batch_initial_conditions, options, ref)
    if sequential and q > 1 and not isinstance(acq_function, qKnowledgeGradient):
        return _optimize_sequential(
            acq_function, space, q, num_restarts, raw_samples, options, seed, ref
        )
    return _optimize_joint(acq_function, space, q, num_restarts, raw_samples, options, seed, ref)


def _optimize_joint(acq_function, space, q, num_restarts, raw_samples, options, seed, ref):
    starts = initial_conditions_on_space(
        acq_function, space, q, num_restarts, raw_samples, ref.dtype, ref.device, seed
    )
    return _ascend(acq_function, space, q, starts, options)


def _optimize_from(acq_function, space, q, starts, options, ref):
    expected = (q, *space.point_shape)
    if starts.dim() != len(expected) + 1 or tuple(starts.shape[1:]) != expected:
        raise InputDataError(
            "`batch_initial_conditions` must have shape "
            f"(num_starts, {', '.join(map(str, expected))}), "
            f"got {tuple(starts.shape)}."
        )
    if isinstance(acq_function, qKnowledgeGradient):
        raise ConfigurationError(
            "`batch_initial_conditions` is not supported for one-shot qKnowledgeGradient (its "
            "starts also hold fantasy points); let the optimiser draw them."
        )
    space.check(starts, "batch_initial_conditions")
    return _ascend(acq_function, space, q, starts.to(ref), options)


def _ascend(acq_function, space, q, starts, options):
    shape = starts.shape

    def objective(x: Tensor) -> Tensor:
        return acq_function(x.reshape(x.shape[0], shape[1], -1))

    x, values = riemannian_lbfgs_ascent(objective, space, starts, options)
    best = int(torch.argmax(values.nan_to_num(nan=-math.inf)))  # argmax would pick a NaN
    batch, value = x[best].reshape(shape[1], *space.point_shape), values[best]
    if setting_coordinates(space):  # the ascent cannot move them: enumerate them
        batch, value = alternate(objective, space, batch, value, options, rows=q)
    if isinstance(acq_function, qKnowledgeGradient):
        batch = acq_function.extract_candidates(batch.reshape(1, shape[1], -1))[0]
        batch = batch.reshape(q, *space.point_shape)
    return space.project(batch).detach(), value.detach()


def _pending_of(acq_function: AcquisitionFunction) -> Tensor | None:
    """The pending points of ``acq_function``, ``(k, d)`` or None.

    ``X_pending``, except for BoTorch's incremental noisy expected improvement (qLogNEI's and
    qNEI's default), which folds its pending points into the baseline and keeps ``X_pending``
    None: there, the baseline's rows past the evaluated ones. Those of BoTorch's
    ``FixedFeatureAcquisitionFunction`` are its inner acquisition's, with all coordinates.
    """
    if isinstance(acq_function, FixedFeatureAcquisitionFunction):
        return _pending_of(acq_function.acq_func)
    if acq_function.X_pending is not None or not getattr(acq_function, "incremental", False):
        return acq_function.X_pending
    full = getattr(acq_function, "_full_X_baseline", None)
    evaluated = getattr(acq_function, "_X_baseline", None)
    if full is None or evaluated is None or full.shape[-2] == evaluated.shape[-2]:
        return None
    return full[..., evaluated.shape[-2] :, :]


def _optimize_sequential(acq_function, space, q, num_restarts, raw_samples, options, seed, ref):
    # the caller's pending points stay pending at every step and are restored at the end
    base_pending = _pending_of(acq_function)
    if base_pending is not None and isinstance(acq_function, FixedFeatureAcquisitionFunction):
        raise ConfigurationError(
            "sequential=True cannot add points to the pending points of a "
            "FixedFeatureAcquisitionFunction: BoTorch's wrapper hands them out with all "
            f"{acq_function.d} coordinates but takes back only the free ones. Optimise the "
            "q-batch jointly (sequential=False), or set the pending points after the batch."
        )
    chosen, values = [], []
    try:
        for i in range(q):
            point, value = _optimize_joint(
                acq_function,
                space,
                1,
                num_restarts,
                raw_samples,
                options,
                None if seed is None else seed + i,
                ref,
            )
            chosen.append(point)
            values.append(value)
            pending = torch.cat(chosen, dim=0).reshape(len(chosen), -1)
            if base_pending is not None:
                pending = torch.cat([base_pending, pending], dim=-2)
            acq_function.set_X_pending(pending)
    finally:
        acq_function.set_X_pending(base_pending)
    return torch.cat(chosen, dim=0), torch.stack(values)


def _optimize_discrete(acq_function, space, q, sequential, exclude, max_batch_size, ref):
    if isinstance(acq_function, qKnowledgeGradient):
        raise ConfigurationError(
            "one-shot qKnowledgeGradient needs a continuous space; on mesh vertices or graph "
            "nodes use qLogNoisyExpectedImprovement or another acquisition."
        )
    choices = space.all_points(dtype=ref.dtype, device=ref.device)
    if exclude is not None:
        if exclude.dim() != 2 or exclude.shape[-1] != choices.shape[-1]:
            raise InputDataError(
                f"`exclude` must have shape (k, {choices.shape[-1]}), got {tuple(exclude.shape)}."
            )
        keep = ~(choices.unsqueeze(1) == exclude.to(choices).unsqueeze(0)).all(-1).any(-1)
        choices = choices[keep]
    if choices.shape[0] < q:
        raise ConfigurationError(
            f"only {choices.shape[0]} points of {space!r} are left to choose from, but q = {q}."
        )
    candidates, values = optimize_acqf_discrete(
        acq_function, q=q, choices=choices, max_batch_size=max_batch_size, unique=True
    )
    if sequential and q > 1:
        return candidates, values  # one per greedy step
    if q == 1:
        return candidates, values.reshape(())
    with torch.no_grad():  # the batch's value, as the joint optimisation returns it
        return candidates, acq_function(candidates.unsqueeze(0)).reshape(())
