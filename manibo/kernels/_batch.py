"""Batch indexing ``kernel[i]`` of manibo kernels.

GPyTorch's ``Kernel.__getitem__`` indexes every parameter and buffer the kernel owns by the batch
index, and reaches sub-kernels through ``named_modules``. manibo kernels also own tables without
batch dimensions (eigenvalues of a spectrum, random phases), which that indexing cuts up, and
kernels that keep their batch in sub-kernels (:class:`~manibo.kernels.BoxMaternKernel`,
:class:`~manibo.kernels.FactorProductKernel`, in a ``ModuleList``) or have no parameters at all
(:class:`~manibo.kernels.ArcCosineKernel`), whose ``batch_shape`` it never updates.
"""

from __future__ import annotations

import copy

import torch
from gpytorch.kernels import Kernel
from torch import nn


class IndexesBatch:
    """Mixin of manibo kernels, listed before GPyTorch's ``Kernel`` in its bases:
    ``kernel[index]`` is the kernel of the batch members ``index`` (its values equal
    ``kernel(x)[index]`` for a kernel whose batch is all in ``batch_shape``).

    The copy indexes the kernel's own parameters and buffers, except the buffers named in
    :attr:`_batchless_buffers` (shared with the copy, not copied), and its sub-kernels (direct
    children and the kernels of a ``ModuleList`` child) that have a batch shape; its
    ``batch_shape`` is ``batch_shape`` indexed. A kernel without batch dimensions returns itself,
    as GPyTorch's kernels do.
    """

    _batchless_buffers: tuple[str, ...] = ()
    """Buffers without batch dimensions (tables shared by every batch member)."""

    def __getitem__(self, index) -> Kernel:
        if len(self.batch_shape) == 0:
            return self
        index = index if isinstance(index, tuple) else (index,)
        on_cpu = tuple(i.cpu() if isinstance(i, torch.Tensor) else i for i in index)  # a CUDA index
        batch_shape = torch.empty(self.batch_shape, device="meta")[on_cpu].shape
        tables = [self._buffers[name] for name in self._batchless_buffers]
        new = copy.deepcopy(self, {id(t): t for t in tables if t is not None})
        for name, value in [*new._parameters.items(), *new._buffers.items()]:
            if value is not None and name not in self._batchless_buffers:
                rest = (slice(None),) * (value.dim() - len(self.batch_shape))
                value.data = value.data[(*index, *rest)]  # an Ellipsis spans batch dims only
        for name, child in new.named_children():
            if isinstance(child, nn.ModuleList):
                for i, kernel in enumerate(child):
                    if isinstance(kernel, Kernel):
                        child[i] = kernel[index]
            elif isinstance(child, Kernel):
                setattr(new, name, child[index])
        new.batch_shape = batch_shape
        return new
