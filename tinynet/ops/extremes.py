"""The largest and smallest elements: max/min, over all elements or along a dim with
their indices, and argmax/argmin, with PyTorch's conventions.

NaN wins (the max of values holding a NaN is NaN, at the NaN's index), the first
index wins at ties, and the gradient of ``max(x)`` is shared evenly by the tied
elements while ``max(x, dim)`` sends it to the one index it returns, as in PyTorch.
"""
from __future__ import annotations

from collections import namedtuple

from ..autograd import Function
from ..backend import get_array_module
from ..tensor import Tensor
from . import elementwise
from .elementwise import zero_where
from .reduction import attains, normalize_axis

__all__ = ["max", "min", "argmax", "argmin"]

MaxResult = namedtuple("MaxResult", ["values", "indices"])


class AllMax(Function):
    """Max (or min) over all elements; ties share the gradient evenly (as PyTorch)."""

    @staticmethod
    def forward(ctx, x, largest):
        out = x.max() if largest else x.min()
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx, grad):
        x, out = ctx.saved
        hits = attains(x, out)
        return zero_where(~hits, grad / hits.sum(dtype=grad.dtype)), None


class TakeAlongAxis(Function):
    """``values = x[..., indices, ...]`` along one axis (the backward of max(dim))."""

    backward_reads_inputs = False

    @staticmethod
    def forward(ctx, x, indices, axis, keepdim):
        xp = get_array_module(x)
        index = xp.expand_dims(indices, axis)
        ctx.meta = (x.shape, x.dtype, index, axis)
        out = xp.take_along_axis(x, index, axis=axis)
        return out if keepdim else out.squeeze(axis)

    @staticmethod
    def backward(ctx, grad):
        shape, dtype, index, axis = ctx.meta
        xp = get_array_module(grad)
        full = xp.zeros(shape, dtype)
        xp.put_along_axis(full, index, grad.reshape(index.shape), axis=axis)
        return full, None, None, None


# ------------------------------------------------------------------ functions

def _merge_aliases(dim, keepdim, axis, keepdims):
    """The PyTorch spelling of a single (dim, keepdim) pair."""
    return (dim if axis is None else axis), bool(keepdim if keepdims is None else keepdims)


def _extreme(x, dim, keepdim, axis, keepdims, largest):
    dim, keepdim = _merge_aliases(dim, keepdim, axis, keepdims)
    if dim is None:
        return AllMax.apply(x, largest)
    axis = normalize_axis(dim, x.ndim)
    xp = get_array_module(x.array)
    if x.ndim == 0:                      # its one element, at index 0
        return MaxResult(x.reshape(()), Tensor._make(xp.zeros((), xp.int64)))
    indices = (xp.argmax if largest else xp.argmin)(x.array, axis=axis)
    values = TakeAlongAxis.apply(x, indices, axis, keepdim)
    if keepdim:
        indices = xp.expand_dims(indices, axis)
    return MaxResult(values, Tensor._make(indices))


def max(x, dim=None, keepdim=False, *, axis=None, keepdims=None):
    """``max(x)`` is a tensor; ``max(x, dim)`` is ``(values, indices)`` as in PyTorch;
    ``max(x, other)`` with a tensor ``other`` is ``maximum(x, other)``."""
    if isinstance(dim, Tensor):
        return elementwise.maximum(x, dim)
    return _extreme(x, dim, keepdim, axis, keepdims, largest=True)


def min(x, dim=None, keepdim=False, *, axis=None, keepdims=None):
    """``min(x)`` is the smallest element (a 0-d tensor); ``min(x, dim)`` is
    ``(values, indices)`` along ``dim``, as ``torch.min`` (indices int64). NaN wins;
    ties share the gradient of ``min(x)`` evenly. ``min(x, other)`` with a tensor
    ``other`` is ``minimum(x, other)``.
    """
    if isinstance(dim, Tensor):
        return elementwise.minimum(x, dim)
    return _extreme(x, dim, keepdim, axis, keepdims, largest=False)


def _arg(x, dim, keepdim, axis, keepdims, largest):
    xp = get_array_module(x.array)
    find = xp.argmax if largest else xp.argmin
    dim, keepdim = _merge_aliases(dim, keepdim, axis, keepdims)
    if dim is None:
        return Tensor._make(xp.asarray(find(x.array)))
    axis = normalize_axis(dim, x.ndim)
    if x.ndim == 0:
        return Tensor._make(xp.zeros((), xp.int64))
    return Tensor._make(find(x.array, axis=axis, keepdims=keepdim))


def argmax(x, dim=None, keepdim=False, *, axis=None, keepdims=None):
    """The int64 index of the largest element: of the flattened tensor with ``dim=None``
    (a 0-d tensor), else along ``dim`` (``keepdim`` keeps it with size 1); the first
    one at ties, as ``torch.argmax``. Not differentiable.
    """
    return _arg(x, dim, keepdim, axis, keepdims, largest=True)


def argmin(x, dim=None, keepdim=False, *, axis=None, keepdims=None):
    """The int64 index of the smallest element: of the flattened tensor with ``dim=None``,
    else along ``dim`` (``keepdim`` keeps it with size 1); the first one at ties, as
    ``torch.argmin``. Not differentiable.
    """
    return _arg(x, dim, keepdim, axis, keepdims, largest=False)
