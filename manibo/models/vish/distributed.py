r"""The VISH statistics as a map-reduce over the partitions of Dask arrays (optional extra
``dask``).

Each partition runs the same pass as in-memory data
(:func:`~manibo.models.vish.statistics.gather_statistics`) on a worker; the partial statistics are
summed pairwise in a tree, because :class:`~manibo.models.vish.statistics.SufficientStatistics`
adds. The features (fundamental systems, lift) are shipped to the workers with the task; a worker
computes or loads the fundamental systems once (disk cache).
"""

from __future__ import annotations

import operator

import numpy as np
import torch

from manibo.exceptions import ConfigurationError, InputDataError
from manibo.models.vish.statistics import (
    DEFAULT_CHUNK_SIZE,
    SufficientStatistics,
    gather_statistics,
)


def _partition_statistics(
    features, X: np.ndarray, y: np.ndarray, compute_dtype, chunk_size, device
):
    X = torch.as_tensor(np.ascontiguousarray(X)).to(device)
    y = torch.as_tensor(np.ascontiguousarray(y)).to(device)
    return gather_statistics(features, X, y.reshape(-1), chunk_size, compute_dtype)


def dask_statistics(
    features,
    X,
    y,
    compute_dtype: torch.dtype | None = None,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    device: str | torch.device = "cpu",
) -> SufficientStatistics:
    """Gather the statistics of Dask arrays partition by partition on the current Dask scheduler.

    Args:
        features: the :class:`~manibo.models.vish.features.VISHFeatures`.
        X: a floating ``dask.array.Array`` of shape ``(N, input_dim)``, chunked along rows only.
        y: a ``dask.array.Array`` of shape ``(N,)`` with the same row chunks.
        compute_dtype: dtype of the chunk products on the workers (default: the data's dtype).
        chunk_size: rows per chunk within a partition.
        device: where each worker runs its pass (``"cuda"`` for workers with a GPU).

    Returns:
        The summed statistics, float64 on the CPU.
    """
    try:
        import dask
        import dask.array as da
    except ImportError as error:  # pragma: no cover - the extra is installed in the test env
        raise ConfigurationError(
            "dask_statistics needs Dask: install manibo with the `dask` extra "
            "(pip install 'manibo[dask]')."
        ) from error
    if not isinstance(X, da.Array) or not isinstance(y, da.Array):
        raise InputDataError(
            f"`X` and `y` must be dask arrays, got {type(X).__name__} and {type(y).__name__}; "
            "wrap in-memory data with dask.array.from_array(x, chunks=(rows, -1))."
        )
    if X.ndim != 2 or X.numblocks[1] != 1:
        raise InputDataError(
            f"`X` must be 2-D and chunked along rows only (chunks=(rows, -1)), got shape "
            f"{X.shape} with {X.numblocks} blocks."
        )
    y = y.reshape(-1) if y.ndim == 2 and y.shape[1] == 1 else y
    if y.ndim != 1 or y.chunks[0] != X.chunks[0]:
        raise InputDataError(
            f"`y` must have shape (N,) with the row chunks of `X` {X.chunks[0]}, got shape "
            f"{y.shape} and chunks {y.chunks}. Rechunk with y.rechunk(X.chunks[0])."
        )
    task = dask.delayed(_partition_statistics, pure=True)
    parts = [
        task(features, xb, yb, compute_dtype, int(chunk_size), str(device))
        for xb, yb in zip(X.to_delayed().ravel(), y.to_delayed().ravel(), strict=True)
    ]
    add = dask.delayed(operator.add, pure=True)
    while len(parts) > 1:  # pairwise tree reduction
        paired = [add(a, b) for a, b in zip(parts[::2], parts[1::2], strict=False)]
        parts = paired + ([parts[-1]] if len(parts) % 2 else [])
    return parts[0].compute().to("cpu")
