"""Tensor methods for :mod:`tinynet.ops.rearrange`, :mod:`tinynet.ops.indexing` and
:mod:`tinynet.ops.cumulative`: ``x.roll(1, 0)``, ``x.flip(0)``, ``x.diagonal()``,
``x.unfold(0, 3, 1)``, ``x.argsort()``, ``x.cumsum(0)``, ``x.cummax(0)``...

Mixed into :class:`~tinynet.tensor.Tensor` like :mod:`tinynet.math_methods`; each
one dispatches to the op of the same name (PyTorch's names and signatures) and
shows that op's docstring (given by :mod:`tinynet.tensor` once the ops are imported).
"""
from __future__ import annotations

from . import tensor as _tensor

__all__ = ["IndexingMethods"]


def _ops():
    return _tensor.ops      # bound once tinynet.tensor has imported the ops


class IndexingMethods:
    """Rearranging, selecting and cumulative methods of a Tensor."""

    __slots__ = ()

    def roll(self, shifts, dims=None): return _ops().roll(self, shifts, dims)

    def flip(self, *dims):
        return _ops().flip(self, dims[0] if len(dims) == 1 and not isinstance(dims[0], int)
                           else dims)

    def diagonal(self, offset=0, dim1=0, dim2=1): return _ops().diagonal(self, offset, dim1, dim2)
    def diag(self, diagonal=0): return _ops().diag(self, diagonal)
    def unflatten(self, dim, sizes): return _ops().unflatten(self, dim, sizes)
    def unfold(self, dimension, size, step): return _ops().unfold(self, dimension, size, step)
    def index_select(self, dim, index): return _ops().index_select(self, dim, index)

    def repeat_interleave(self, repeats=None, dim=None):
        if repeats is None:
            return _ops().repeat_interleave(self)
        return _ops().repeat_interleave(self, repeats, dim)

    def masked_select(self, mask): return _ops().masked_select(self, mask)
    def nonzero(self, *, as_tuple=False): return _ops().nonzero(self, as_tuple)

    def argsort(self, dim=-1, descending=False, *, stable=False):
        return _ops().argsort(self, dim, descending, stable)

    def cumsum(self, dim, *, dtype=None): return _ops().cumsum(self, dim, dtype=dtype)
    def cumprod(self, dim, *, dtype=None): return _ops().cumprod(self, dim, dtype=dtype)
    def cummax(self, dim): return _ops().cummax(self, dim)
    def cummin(self, dim): return _ops().cummin(self, dim)
    def logcumsumexp(self, dim): return _ops().logcumsumexp(self, dim)
    def narrow(self, dim, start, length): return _ops().narrow(self, dim, start, length)
