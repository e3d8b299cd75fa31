"""Tensor methods for :mod:`tinynet.ops.shape`, :mod:`tinynet.ops.rearrange`,
:mod:`tinynet.ops.indexing` and :mod:`tinynet.ops.cumulative`: ``x.reshape(2, -1)``,
``x.transpose(0, 1)``, ``x.roll(1, 0)``, ``x.flip(0)``, ``x.diagonal()``,
``x.unfold(0, 3, 1)``, ``x.argsort()``, ``x.cumsum(0)``, ``x.cummax(0)``...

Mixed into :class:`~tinynet.tensor.Tensor` like :mod:`tinynet.math_methods`; each
one dispatches to the op of the same name (PyTorch's names and signatures) and
shows that op's docstring (given by :mod:`tinynet.tensor` once the ops are imported).
"""
from __future__ import annotations

__all__ = ["IndexingMethods"]


ops = None      # tinynet.ops, bound by tinynet.tensor once it has imported the ops


class IndexingMethods:
    """Shape, rearranging, selecting and cumulative methods of a Tensor."""

    __slots__ = ()

    def roll(self, shifts, dims=None): return ops.roll(self, shifts, dims)

    def flip(self, *dims):
        return ops.flip(self, dims[0] if len(dims) == 1 and not isinstance(dims[0], int)
                           else dims)

    def diagonal(self, offset=0, dim1=0, dim2=1): return ops.diagonal(self, offset, dim1, dim2)
    def diag(self, diagonal=0): return ops.diag(self, diagonal)
    def unflatten(self, dim, sizes): return ops.unflatten(self, dim, sizes)
    def unfold(self, dimension, size, step): return ops.unfold(self, dimension, size, step)
    def index_select(self, dim, index): return ops.index_select(self, dim, index)

    def repeat_interleave(self, repeats=None, dim=None):
        if repeats is None:
            return ops.repeat_interleave(self)
        return ops.repeat_interleave(self, repeats, dim)

    def masked_select(self, mask): return ops.masked_select(self, mask)
    def nonzero(self, *, as_tuple=False): return ops.nonzero(self, as_tuple)

    def argsort(self, dim=-1, descending=False, *, stable=False):
        return ops.argsort(self, dim, descending, stable)

    def cumsum(self, dim, *, dtype=None): return ops.cumsum(self, dim, dtype=dtype)
    def cumprod(self, dim, *, dtype=None): return ops.cumprod(self, dim, dtype=dtype)
    def cummax(self, dim): return ops.cummax(self, dim)
    def cummin(self, dim): return ops.cummin(self, dim)
    def logcumsumexp(self, dim): return ops.logcumsumexp(self, dim)
    def narrow(self, dim, start, length): return ops.narrow(self, dim, start, length)

    # Shape
    def reshape(self, *shape): return ops.reshape(self, *shape)
    def transpose(self, dim0, dim1): return ops.transpose(self, dim0, dim1)
    def permute(self, *dims): return ops.permute(self, *dims)
    def flatten(self, start_dim=0, end_dim=-1): return ops.flatten(self, start_dim, end_dim)
    def squeeze(self, dim=None): return ops.squeeze(self, dim)
    def unsqueeze(self, dim): return ops.unsqueeze(self, dim)
    def expand(self, *sizes): return ops.expand(self, *sizes)
    def repeat(self, *sizes): return ops.repeat(self, *sizes)
    def split(self, split_size_or_sections, dim=0):
        return ops.split(self, split_size_or_sections, dim)

    def unbind(self, dim=0): return ops.unbind(self, dim)

    def __iter__(self):
        """The slices along the first dim, one node for all (``unbind(0)``, as PyTorch)."""
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter(ops.unbind(self, 0))

    def tril(self, diagonal=0): return ops.tril(self, diagonal)
    def triu(self, diagonal=0): return ops.triu(self, diagonal)
    def gather(self, dim, index): return ops.gather(self, dim, index)

    def topk(self, k, dim=-1, largest=True, sorted=True):
        return ops.topk(self, k, dim, largest, sorted)

    def sort(self, dim=-1, descending=False, *, stable=False):
        return ops.sort(self, dim, descending, stable)

    def chunk(self, chunks, dim=0): return ops.chunk(self, chunks, dim)

    def t(self):
        """The transpose of a tensor of at most 2 dims (a 0-d or 1-d tensor unchanged), as
        ``torch.Tensor.t``.
        """
        if self.ndim > 2:
            raise ValueError(f"t() expects a tensor with at most 2 dims, got shape {self.shape}")
        return self if self.ndim < 2 else ops.transpose(self, 0, 1)

    @property
    def T(self):
        """All dims reversed: the transpose of a matrix, ``permute(ndim - 1, ..., 0)``."""
        return ops.permute(self, *reversed(range(self.ndim)))
