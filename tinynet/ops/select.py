"""Selecting elements: the triangles of a matrix (tril, triu), gather, topk, sort.

Each backward sends the gradient back to the elements that were selected and
0 to the others.
"""
from __future__ import annotations

import numbers
from collections import namedtuple

import numpy as np

from ..autograd import Function
from ..backend import get_array_module, scatter_add
from ..tensor import Tensor
from .indexing import sort_order
from .reduction import normalize_axis

__all__ = ["tril", "triu", "gather", "topk", "sort", "narrow"]

TopkResult = namedtuple("TopkResult", ["values", "indices"])
SortResult = namedtuple("SortResult", ["values", "indices"])


class Triangle(Function):
    """The lower (``upper=False``) or upper triangle of the last two axes, the
    rest set to 0; ``diagonal`` shifts the boundary as in NumPy and PyTorch."""

    backward_reads_inputs = False

    @staticmethod
    def forward(ctx, x, diagonal, upper):
        xp = get_array_module(x)
        ctx.meta = (diagonal, upper)
        return xp.triu(x, diagonal) if upper else xp.tril(x, diagonal)

    @staticmethod
    def backward(ctx, grad):
        diagonal, upper = ctx.meta
        xp = get_array_module(grad)
        return (xp.triu(grad, diagonal) if upper else xp.tril(grad, diagonal)), None, None


def _triangle(x, diagonal, upper):
    name = "triu" if upper else "tril"
    if x.ndim < 2:
        raise ValueError(f"{name}: expected a tensor of at least 2 dims, got shape "
                         f"{tuple(x.shape)}")
    if isinstance(diagonal, bool) or not isinstance(diagonal, numbers.Integral):
        raise TypeError(f"{name}: diagonal must be an integer, got {diagonal!r}")
    return Triangle.apply(x, int(diagonal), upper)


def tril(input, diagonal: int = 0):
    """The lower triangle of the last two dims (elements j <= i + diagonal), zeros above."""
    return _triangle(input, diagonal, upper=False)


def triu(input, diagonal: int = 0):
    """The upper triangle of the last two dims (elements j >= i + diagonal), zeros below."""
    return _triangle(input, diagonal, upper=True)


class Gather(Function):
    """``out[..., i, ...] = x[..., index[..., i, ...], ...]`` along one axis; the
    backward adds each gradient into the element it came from (once per use)."""

    backward_reads_inputs = False

    @staticmethod
    def forward(ctx, x, index, axis):
        xp = get_array_module(x)
        ctx.meta = (x.shape, x.dtype, index, axis)
        # index may be shorter than x along the other axes (as in PyTorch): only
        # the leading part of x takes part; take_along_axis would broadcast.
        x = x[tuple(slice(None) if d == axis else slice(n) for d, n in enumerate(index.shape))]
        return xp.take_along_axis(x, index, axis=axis)

    @staticmethod
    def backward(ctx, grad):
        shape, dtype, index, axis = ctx.meta
        xp = get_array_module(grad)
        full = xp.zeros(shape, dtype)
        positions = list(xp.indices(index.shape, sparse=True))
        positions[axis] = index
        scatter_add(full, tuple(positions), grad)
        return full, None, None


def gather(input, dim: int, index):
    """Values of ``input`` along ``dim`` at ``index``, as ``torch.gather``:
    ``index`` is an integer tensor with as many dims as ``input``, no larger than
    it outside ``dim``, and holds indices in [0, input.size(dim)); the result has
    ``index``'s shape."""
    xp = get_array_module(input.array)
    index = index.array if isinstance(index, Tensor) else xp.asarray(index)
    if not np.issubdtype(index.dtype, np.integer):
        raise TypeError(f"gather: index must be an integer tensor, got dtype {index.dtype}")
    if index.ndim != input.ndim:
        raise ValueError(f"gather: index has {index.ndim} dims but input has {input.ndim} "
                         f"(shapes {tuple(index.shape)} and {tuple(input.shape)})")
    axis = normalize_axis(dim, input.ndim)
    if input.ndim == 0:
        return gather(input.reshape(1), axis, index.reshape(1)).reshape(())
    sizes = enumerate(zip(index.shape, input.shape, strict=True))
    if any(n > m for d, (n, m) in sizes if d != axis):
        raise ValueError(f"gather: index of shape {tuple(index.shape)} is larger than input of "
                         f"shape {tuple(input.shape)} outside dim {dim}")
    size = input.shape[axis]
    if index.size and (int(index.min()) < 0 or int(index.max()) >= size):
        raise IndexError(f"gather: index out of range [0, {size}) for dim {dim}")
    return Gather.apply(input, index, axis)


def topk(input, k: int, dim: int = -1, largest: bool = True, sorted: bool = True):
    """The ``k`` largest (or smallest) elements along ``dim``, as ``(values, indices)``,
    in order from the largest (smallest) when ``sorted``; NaN counts as the largest
    value, as in PyTorch. Gradients reach the chosen elements."""
    axis = normalize_axis(dim, input.ndim)
    size = input.shape[axis] if input.ndim else 1
    if isinstance(k, bool) or not isinstance(k, numbers.Integral) or not 0 <= k <= size:
        raise ValueError(f"topk: k must be an integer in [0, {size}] for dim {dim} of "
                         f"shape {tuple(input.shape)}, got {k!r}")
    xp = get_array_module(input.array)
    source = input if input.ndim else input.reshape(1)
    order = sort_order(source.array, axis, descending=largest)
    return _taken(input, source, xp.take(order, xp.arange(k), axis=axis), axis, TopkResult)


def sort(input, dim: int = -1, descending: bool = False, stable: bool = False):
    """``(values, indices)`` of ``input`` sorted along ``dim`` (``torch.sort``): NaN
    as the largest value, ties in input order. Gradients go back to the elements
    where each value came from."""
    axis = normalize_axis(dim, input.ndim)
    source = input if input.ndim else input.reshape(1)
    return _taken(input, source, sort_order(source.array, axis, descending), axis, SortResult)


def _taken(input, source, indices, axis, result):
    """``result(values, indices)``: the elements of ``source`` (``input`` as at
    least 1-D) at ``indices`` along ``axis``, 0-d again for a 0-d input."""
    values = Gather.apply(source, indices, axis)
    if input.ndim == 0:
        values, indices = values.reshape(()), indices.reshape(())
    return result(values, Tensor._make(indices.astype(np.int64, copy=False)))


def narrow(input, dim: int, start: int, length: int):
    """Elements ``start`` to ``start + length`` along ``dim``, a view (``torch.narrow``);
    a negative ``start`` counts from the end."""
    axis = normalize_axis(dim, input.ndim)
    size = input.shape[axis]
    for name, value in (("start", start), ("length", length)):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise TypeError(f"narrow: {name} must be an int, got {value!r}")
    start = start + size if start < 0 else start
    if not (0 <= start <= size and 0 <= length <= size - start):
        raise IndexError(f"narrow: start {start} and length {length} are out of range for "
                         f"dim {dim} of size {size}")
    index = (slice(None),) * axis + (slice(int(start), int(start + length)),)
    from .shape import getitem
    return getitem(input, index)
