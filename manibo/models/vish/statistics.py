r"""Sufficient statistics of the collapsed VISH bound, gathered in one streaming pass over the data.

For features :math:`\phi_i = r_i Y(z_i)` and outcomes :math:`y_i`, the collapsed (Titsias) bound and
the posterior depend on the data only through

.. math::
    \Phi^\top\Phi,\quad \Phi^\top y,\quad \Phi^\top 1,\quad \textstyle\sum y_i,\quad y^\top y,\quad
    \sum r_i^2,\quad N,

which are sums over the points. :class:`SufficientStatistics` therefore adds with ``+``: the pass
over chunks of one tensor, over any iterable of chunks, and the map-reduce over Dask partitions
(:mod:`manibo.models.vish.distributed`) are one code path, :func:`statistics_from_chunks`.

The pass runs on the data's device. Each chunk's features are computed in ``compute_dtype``
(default: the data's dtype) and their Gram matrix is added to a float64 accumulator; only the upper
block triangle of :math:`Z^\top Z` is multiplied (``k`` column blocks, ``(k+1)/2k`` of the full
product). The chunk products are formed on the zonal features :math:`Z` and mapped to harmonic
coordinates once, :math:`\Phi^\top\Phi = W^\top (Z^\top Z) W`. With float32 chunk products the
statistics carry float32 rounding (see ``docs/vish.md`` for the measured effect on predictions);
the accumulation across chunks is float64 either way.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, fields

import torch
from torch import Tensor

from manibo._validation import as_tensor_arg, check_finite
from manibo.exceptions import InputDataError

DEFAULT_CHUNK_SIZE = 8192
"""Rows per chunk: a float64 chunk of 660 features is 43 MB."""

GRAM_BLOCKS = 4
"""Column blocks of the upper-triangular Gram product."""


@dataclass(frozen=True)
class SufficientStatistics:
    r"""Sums over the data that the collapsed bound needs; float64, any device.

    Batch dimensions (fantasies) broadcast: ``gram`` and ``feature_sum`` depend on the inputs only,
    the others on the outcomes too.

    Attributes:
        gram: :math:`\Phi^\top\Phi`, shape ``(*batch, M, M)``.
        cross: :math:`\Phi^\top y`, shape ``(*batch, M)``.
        feature_sum: :math:`\Phi^\top 1`, shape ``(*batch, M)``.
        y_sum: :math:`\sum_i y_i`, shape ``(*batch)``.
        y_squared: :math:`y^\top y`, shape ``(*batch)``.
        radius_squared: :math:`\sum_i r_i^2`, shape ``(*batch)``.
        count: :math:`N`, shape ``(*batch)``.
    """

    gram: Tensor
    cross: Tensor
    feature_sum: Tensor
    y_sum: Tensor
    y_squared: Tensor
    radius_squared: Tensor
    count: Tensor

    def __add__(self, other: SufficientStatistics) -> SufficientStatistics:
        if not isinstance(other, SufficientStatistics):
            return NotImplemented
        if other.gram.shape[-1] != self.gram.shape[-1]:
            raise InputDataError(
                f"cannot add statistics of {self.gram.shape[-1]} and {other.gram.shape[-1]} "
                "features; gather both with the same features."
            )
        return SufficientStatistics(
            *(getattr(self, f.name) + getattr(other, f.name) for f in fields(self))
        )

    def __radd__(self, other) -> SufficientStatistics:
        if isinstance(other, int) and other == 0:  # so that sum(...) works
            return self
        return self.__add__(other)

    @property
    def num_features(self) -> int:
        """``M``."""
        return self.gram.shape[-1]

    def to(self, device: torch.device | str) -> SufficientStatistics:
        """The same statistics on ``device``."""
        return SufficientStatistics(*(getattr(self, f.name).to(device) for f in fields(self)))

    def standardized(self, mean: Tensor | float, std: Tensor | float) -> SufficientStatistics:
        r"""The statistics of :math:`(y - \mu)/s` instead of :math:`y`.

        Computed from the sums (no second pass); the relative rounding of ``y_squared`` grows like
        :math:`\epsilon (\mu/s)^2`, negligible unless :math:`|\mu|/s > 10^4`.
        """
        mean = torch.as_tensor(mean, dtype=self.gram.dtype, device=self.gram.device)
        std = torch.as_tensor(std, dtype=self.gram.dtype, device=self.gram.device)
        count = self.count
        return SufficientStatistics(
            gram=self.gram,
            cross=(self.cross - mean.unsqueeze(-1) * self.feature_sum) / std.unsqueeze(-1),
            feature_sum=self.feature_sum,
            y_sum=(self.y_sum - count * mean) / std,
            y_squared=(self.y_squared - 2 * mean * self.y_sum + count * mean**2) / std**2,
            radius_squared=self.radius_squared,
            count=count,
        )

    def outcome_moments(self) -> tuple[Tensor, Tensor]:
        """Mean and (population) standard deviation of the outcomes, shapes ``(*batch)``."""
        mean = self.y_sum / self.count
        variance = (self.y_squared / self.count - mean**2).clamp_min(0)
        return mean, variance.sqrt()


def block_edges(m: int, blocks: int) -> list[int]:
    """Edges of ``blocks`` (at most ``m``) nearly equal column blocks of ``m`` columns."""
    blocks = max(1, min(blocks, m))
    return [round(i * m / blocks) for i in range(blocks + 1)]


def add_upper_gram(accumulator: Tensor, Z: Tensor, blocks: int = GRAM_BLOCKS) -> None:
    r"""Add the upper block triangle of :math:`Z^\top Z` to ``accumulator`` in place.

    Only blocks on and above the diagonal are written; :func:`symmetrize_upper` completes it.

    Args:
        accumulator: float64, shape ``(M, M)``.
        Z: a chunk of features, shape ``(n, M)``, any floating dtype (the product runs in it).
        blocks: number of column blocks.
    """
    edges = block_edges(Z.shape[-1], blocks)
    for start, stop in zip(edges[:-1], edges[1:], strict=True):
        product = Z[:, start:stop].T @ Z[:, start:]
        accumulator[start:stop, start:] += product.to(accumulator.dtype)


def symmetrize_upper(upper: Tensor, blocks: int = GRAM_BLOCKS) -> Tensor:
    """The symmetric matrix whose upper block triangle (as written by :func:`add_upper_gram`) is
    ``upper``."""
    edges = block_edges(upper.shape[-1], blocks)
    block_of = torch.bucketize(
        torch.arange(upper.shape[-1], device=upper.device),
        torch.tensor(edges[1:-1], device=upper.device),
        right=True,
    )
    lower_blocks = block_of[:, None] > block_of[None, :]
    return torch.where(lower_blocks, upper.transpose(-1, -2), upper)


class _ZonalAccumulator:
    """Float64 sums over chunks in zonal coordinates; :meth:`finish` maps them to harmonics once."""

    def __init__(self, features, compute_dtype: torch.dtype | None, device) -> None:
        m = features.num_features
        kwargs = {"dtype": torch.float64, "device": device}
        self.features = features
        self.compute_dtype = compute_dtype
        self.gram = torch.zeros(m, m, **kwargs)
        self.cross = torch.zeros(m, **kwargs)
        self.feature_sum = torch.zeros(m, **kwargs)
        self.scalars = torch.zeros(4, **kwargs)  # y_sum, y_squared, radius_squared, count

    def add(self, X: Tensor, y: Tensor) -> None:
        Z, radius = self.features.zonal_and_radius(X, self.compute_dtype)
        y = y.to(Z.dtype)
        add_upper_gram(self.gram, Z)
        self.cross += (y @ Z).to(torch.float64)
        self.feature_sum += Z.sum(0).to(torch.float64)
        y64, r64 = y.to(torch.float64), radius.to(torch.float64)
        self.scalars += torch.stack([y64.sum(), y64 @ y64, r64 @ r64, y64.new_tensor(len(y64))])

    def finish(self) -> SufficientStatistics:
        W = self.features.transform.to(self.gram.device)
        gram = W.T @ symmetrize_upper(self.gram) @ W
        y_sum, y_squared, radius_squared, count = self.scalars.unbind()
        return SufficientStatistics(
            gram=0.5 * (gram + gram.T),
            cross=self.cross @ W,
            feature_sum=self.feature_sum @ W,
            y_sum=y_sum,
            y_squared=y_squared,
            radius_squared=radius_squared,
            count=count,
        )


def _check_chunk(features, X: Tensor, y: Tensor, index: int) -> Tensor:
    features.check_inputs(f"X (chunk {index})", X)
    as_tensor_arg(f"y (chunk {index})", y)
    check_finite(f"y (chunk {index})", y)
    if X.dim() != 2 or y.reshape(-1).shape[0] != X.shape[0] or y.dim() > 2:
        raise InputDataError(
            f"chunk {index}: `X` must have shape (n, {features.input_dim}) and `y` shape (n,) or "
            f"(n, 1) with the same n, got {tuple(X.shape)} and {tuple(y.shape)}."
        )
    if X.device != y.device:
        raise InputDataError(
            f"chunk {index}: `X` is on {X.device} but `y` on {y.device}; move both to one device."
        )
    return y.reshape(-1)


def statistics_from_chunks(
    features,
    chunks: Iterable[tuple[Tensor, Tensor]],
    compute_dtype: torch.dtype | None = None,
) -> SufficientStatistics:
    r"""Gather the statistics over an iterable of ``(X, y)`` chunks in one pass.

    Args:
        features: the :class:`~manibo.models.vish.features.VISHFeatures`.
        chunks: ``(X, y)`` pairs with ``X`` of shape ``(n_i, input_dim)`` and ``y`` of shape
            ``(n_i,)`` or ``(n_i, 1)``, all on one device (the pass runs there).
        compute_dtype: dtype of the chunk features and products (default: each chunk's dtype).

    Returns:
        The statistics in harmonic coordinates, float64 on the chunks' device.
    """
    accumulator = None
    with torch.no_grad():
        for index, (X, y) in enumerate(chunks):
            y = _check_chunk(features, X, y, index)
            if accumulator is None:
                accumulator = _ZonalAccumulator(features, compute_dtype, X.device)
            elif X.device != accumulator.gram.device:
                raise InputDataError(
                    f"chunk {index} is on {X.device} but the first chunk was on "
                    f"{accumulator.gram.device}; keep all chunks on one device."
                )
            accumulator.add(X, y)
    if accumulator is None:
        raise InputDataError("`chunks` is empty: the statistics need at least one data point.")
    return accumulator.finish()


def gather_statistics(
    features,
    X: Tensor,
    y: Tensor,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    compute_dtype: torch.dtype | None = None,
) -> SufficientStatistics:
    """:func:`statistics_from_chunks` over row chunks of in-memory data.

    Args:
        features: the features.
        X: inputs, shape ``(N, input_dim)``.
        y: outcomes, shape ``(N,)`` or ``(N, 1)``.
        chunk_size: rows per chunk.
        compute_dtype: dtype of the chunk features and products (default ``X.dtype``).
    """
    if isinstance(chunk_size, bool) or int(chunk_size) != chunk_size or chunk_size < 1:
        raise InputDataError(f"`chunk_size` must be an integer >= 1, got {chunk_size!r}.")
    as_tensor_arg("X", X)
    as_tensor_arg("y", y)
    if y.shape[0] != X.shape[0]:
        raise InputDataError(
            f"`X` has {X.shape[0]} rows but `y` has {y.shape[0]}; give one outcome per input."
        )
    return statistics_from_chunks(
        features,
        zip(X.split(int(chunk_size)), y.split(int(chunk_size)), strict=True),
        compute_dtype,
    )


class _SymmetricGram(torch.autograd.Function):
    r""":math:`Z^\top Z` with a one-product backward: :math:`\bar Z = Z(\bar G + \bar G^\top)`.

    Autograd through ``Z.T @ Z`` treats the two factors as different tensors and forms two
    ``(n, M) x (M, M)`` products; this forms one.
    """

    @staticmethod
    def forward(ctx, Z: Tensor) -> Tensor:
        ctx.save_for_backward(Z)
        return Z.T @ Z

    @staticmethod
    def backward(ctx, grad: Tensor) -> Tensor:
        (Z,) = ctx.saved_tensors
        return Z @ (grad + grad.T)


def differentiable_statistics(
    features, X: Tensor, y: Tensor, compute_dtype: torch.dtype | None = None
) -> SufficientStatistics:
    r"""The statistics of a small in-memory sample with autograd through the features (and lift).

    Holds the ``(n, M)`` zonal features: for subsamples (fitting the lift), not for the full data.
    The products are taken on the zonal features and mapped to harmonic coordinates once
    (:math:`W^\top Z^\top Z W`, as in the streaming pass), and the backward of the Gram matrix is
    one ``(n, M) x (M, M)`` product.

    Args:
        features: the features.
        X: inputs, shape ``(n, input_dim)``.
        y: outcomes, shape ``(n,)``, float64.
        compute_dtype: dtype of the features and of the ``(n, M)`` products (default float64);
            the results are float64.

    Returns:
        The statistics in harmonic coordinates, float64, differentiable in the lift's parameters.
    """
    Z, radius = features.zonal_and_radius(X.to(torch.float64), compute_dtype or torch.float64)
    y = y.reshape(-1).to(torch.float64)
    W = features.transform
    gram = W.T @ _SymmetricGram.apply(Z).to(torch.float64) @ W
    return SufficientStatistics(
        gram=0.5 * (gram + gram.T),
        cross=(y.to(Z.dtype) @ Z).to(torch.float64) @ W,
        feature_sum=Z.sum(0).to(torch.float64) @ W,
        y_sum=y.sum(),
        y_squared=y @ y,
        radius_squared=radius @ radius,
        count=y.new_tensor(float(len(y))),
    )
