"""Torch's global random generators, forked and seeded for one computation."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch


@contextmanager
def seeded_global_generators(
    seed: int | None, device: torch.device | str | None = None
) -> Iterator[None]:
    """Torch's global generators forked and seeded with ``seed`` inside, restored on exit: the
    CPU's, and the generator of ``device`` when it is a CUDA device. No other GPU's generator is
    touched, and a CPU computation does not initialise CUDA (``torch.manual_seed`` would seed
    every GPU, and queue that seed for a CUDA that is not started yet). Used as they are when
    ``seed`` is None.

    Args:
        seed: the seed, or None.
        device: the device the computation draws on (None: the CPU).
    """
    device = torch.device("cpu" if device is None else device)
    cuda = [device] if device.type == "cuda" else []
    with torch.random.fork_rng(devices=cuda, enabled=seed is not None):
        if seed is not None:
            torch.random.default_generator.manual_seed(int(seed))
            if cuda:
                with torch.cuda.device(device):
                    torch.cuda.manual_seed(int(seed))
        yield
