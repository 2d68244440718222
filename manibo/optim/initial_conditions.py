"""Starting points for acquisition optimisation.

Uniform raw samples on the space, Boltzmann-selected among those with a usable value.
"""

from __future__ import annotations

import math
import warnings

import torch
from botorch.acquisition import AcquisitionFunction
from botorch.acquisition.knowledge_gradient import qKnowledgeGradient
from botorch.exceptions.warnings import BadInitialCandidatesWarning
from botorch.optim.initializers import (
    initialize_q_batch,
    initialize_q_batch_nonneg,
    is_nonnegative,
)
from torch import Tensor

from manibo._random import seeded_global_generators
from manibo._stack import user_stacklevel
from manibo.exceptions import NonFiniteAcquisitionError, NonFiniteGradientWarning
from manibo.spaces.base import Space

ROUNDS = 4
"""Draws of raw samples at most (``raw_samples`` times 1, 2, 3, 4), as BoTorch's
``gen_batch_initial_conditions``: a further draw when the values were flat or too few usable."""


def augmented_q(acq_function: AcquisitionFunction, q: int) -> int:
    """Number of points per restart.

    ``q``, or ``q + num_fantasies`` for one-shot knowledge gradient.
    """
    if isinstance(acq_function, qKnowledgeGradient):
        return acq_function.get_augmented_q_batch_size(q)
    return q


def _choose(X: Tensor, values: Tensor, n: int, select) -> Tensor:
    """``n`` starts (fewer where fewer are given) from raw samples of usable values (finite or
    +inf): those of value +inf first, the others by BoTorch's ``select``."""
    top = values == math.inf
    k = int(top.sum())
    if k >= n:
        index = torch.nonzero(top).squeeze(-1)
        return X[index[torch.randperm(k, device=index.device)[:n]]]
    rest_X, rest_values = X[~top], values[~top]
    if rest_X.shape[0] > n - k:
        rest_X = select(X=rest_X, acq_vals=rest_values, n=n - k)[0]
    return torch.cat([X[top], rest_X])


def initial_conditions_on_space(
    acq_function: AcquisitionFunction,
    space: Space,
    q: int,
    num_restarts: int,
    raw_samples: int,
    dtype: torch.dtype,
    device: torch.device,
    seed: int | None = None,
) -> Tensor:
    """Draw ``raw_samples`` uniform q-batches on ``space``; keep ``num_restarts`` of them.

    They are kept by Boltzmann selection, BoTorch's ``initialize_q_batch`` (or
    ``initialize_q_batch_nonneg`` for an acquisition BoTorch knows to be non-negative, as its
    ``gen_batch_initial_conditions`` chooses): the best raw sample is always kept, the rest drawn
    with weights ``exp(eta * standardised acquisition value)``; manibo supplies the raw samples,
    so every start lies on the space (fantasy points of one-shot qKG included). Where the values
    are all equal, ``raw_samples`` times 2, 3 and 4 are drawn in turn, as BoTorch does.

    Raw samples whose acquisition value is NaN or -inf are never starts (one
    :class:`~manibo.exceptions.NonFiniteGradientWarning` says how many there were); those of value
    +inf, the best the acquisition can say, are taken first. Where fewer than ``num_restarts``
    raw samples are usable, further ones are drawn as above, and if still too few, fewer starts
    are returned. The warning is issued for a NaN, or for too few starts, not for -inf values
    alone (the worst value of a log acquisition, which may well cover most of the space).

    ``seed`` seeds the raw samples and the selection (which draws from torch's global generator,
    here forked and seeded, so the caller's generator states, CUDA's included, are left as they
    were); None draws both from the global generator.

    Returns:
        Tensor ``(r, augmented_q, *point_shape)``, ``r = num_restarts`` unless fewer raw samples
        had a usable value.

    Raises:
        NonFiniteAcquisitionError: every raw sample drawn had a NaN or -inf value.
    """
    q_aug = augmented_q(acq_function, q)
    numel = int(torch.tensor(space.point_shape).prod())
    select = initialize_q_batch_nonneg if is_nonnegative(acq_function) else initialize_q_batch

    def generator(n: int, seed_: int | None) -> Tensor:
        gen = torch.Generator(device=device)
        gen.manual_seed(int(seed_) if seed_ is not None else int(torch.randint(0, 2**31, (1,))))
        points = space.random(n * q_aug, generator=gen, dtype=dtype, device=device)
        return points.reshape(n, q_aug, numel)

    pool_X, pool_values = [], []
    drawn = nans = minus_infs = 0
    round_seed = seed
    with seeded_global_generators(seed, device):
        for factor in range(1, ROUNDS + 1):
            # as BoTorch's gen_batch_initial_conditions: the warnings of a round are dropped, a
            # BadInitialCandidatesWarning (flat values) asks for another round
            with warnings.catch_warnings(record=True) as caught:
                X = generator(raw_samples * factor, round_seed)
                with torch.no_grad():
                    values = acq_function(X).detach()
                nan, minus_inf = values.isnan(), values == -math.inf
                usable = ~(nan | minus_inf)
                drawn += X.shape[0]
                nans += int(nan.sum())
                minus_infs += int(minus_inf.sum())
                pool_X.append(X[usable])
                pool_values.append(values[usable])
                starts = _choose(torch.cat(pool_X), torch.cat(pool_values), num_restarts, select)
            flat = any(issubclass(w.category, BadInitialCandidatesWarning) for w in caught)
            if starts.shape[0] == num_restarts and not flat:
                break
            if seed is not None:
                round_seed += 1  # other raw samples next round
        else:
            if flat:
                warnings.warn(
                    "Unable to find non-zero acquisition function values - initial conditions "
                    "are being selected randomly.",
                    BadInitialCandidatesWarning,
                    stacklevel=2,
                )
    name = type(acq_function).__name__
    if starts.shape[0] == 0:
        raise NonFiniteAcquisitionError(
            f"the acquisition ({name}) was not finite at any of the {drawn} raw samples drawn on "
            f"{space!r} in {ROUNDS} rounds of raw_samples = {raw_samples} times 1 to {ROUNDS} "
            f"({nans} NaN, {minus_infs} -inf), so its ascent has no point to start "
            "from. A NaN everywhere usually comes from the model (a NaN in its training data or "
            "hyperparameters): check them. If the acquisition is finite on a small region only, "
            "pass starts there (`batch_initial_conditions`) or raise `raw_samples`."
        )
    if nans or starts.shape[0] < num_restarts:
        fewer = (
            f"; only {starts.shape[0]} of the {num_restarts} restarts had a start (raise "
            "`raw_samples` for more, or pass `batch_initial_conditions`)"
            if starts.shape[0] < num_restarts
            else ""
        )
        warnings.warn(
            NonFiniteGradientWarning(
                f"{nans + minus_infs} of {drawn} raw samples for the starts of the ascent of "
                f"{name} had a value that is not finite ({nans} NaN, where the model or the "
                f"acquisition is not defined; {minus_infs} -inf) and were not used as "
                f"starts{fewer}."
            ),
            stacklevel=user_stacklevel(),
        )
    return starts.reshape(starts.shape[0], q_aug, *space.point_shape)
