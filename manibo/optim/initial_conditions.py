"""Starting points for acquisition optimisation.

Uniform raw samples on the space, Boltzmann-selected.
"""

from __future__ import annotations

import torch
from botorch.acquisition import AcquisitionFunction
from botorch.acquisition.knowledge_gradient import qKnowledgeGradient
from botorch.optim.initializers import gen_batch_initial_conditions
from torch import Tensor

from manibo.spaces.base import Space


def augmented_q(acq_function: AcquisitionFunction, q: int) -> int:
    """Number of points per restart.

    ``q``, or ``q + num_fantasies`` for one-shot knowledge gradient.
    """
    if isinstance(acq_function, qKnowledgeGradient):
        return acq_function.get_augmented_q_batch_size(q)
    return q


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

    They are kept by Boltzmann selection: BoTorch's ``gen_batch_initial_conditions`` does the
    selection (the best raw sample is always kept, the rest drawn with weights
    ``exp(eta * standardised acquisition value)``); manibo supplies the raw samples, so every start
    lies on the space (fantasy points of one-shot qKG included).

    ``seed`` seeds the raw samples and the selection (which draws from torch's global generator,
    here forked and seeded, so the caller's generator states, CUDA's included, are left as they
    were); None draws both from the global generator.

    Returns:
        Tensor ``(num_restarts, augmented_q, *point_shape)``.
    """
    q_aug = augmented_q(acq_function, q)
    numel = int(torch.tensor(space.point_shape).prod())

    def generator(n: int, q_: int, seed_: int | None) -> Tensor:
        gen = torch.Generator(device=device)
        gen.manual_seed(int(seed_) if seed_ is not None else int(torch.randint(0, 2**31, (1,))))
        points = space.random(n * q_, generator=gen, dtype=dtype, device=device)
        return points.reshape(n, q_, numel)

    bounds = torch.zeros(2, numel, dtype=dtype, device=device)
    bounds[1] = 1.0  # only its shape, dtype and device are used with a custom generator
    devices = list(range(torch.cuda.device_count()))
    with torch.random.fork_rng(devices=devices, enabled=seed is not None):
        if seed is not None:
            torch.manual_seed(seed)
        ics = gen_batch_initial_conditions(
            acq_function=acq_function,
            bounds=bounds,
            q=q_aug,
            num_restarts=num_restarts,
            raw_samples=raw_samples,
            options={"seed": seed} if seed is not None else {},
            generator=generator,
        )
    return ics.reshape(num_restarts, q_aug, *space.point_shape)
