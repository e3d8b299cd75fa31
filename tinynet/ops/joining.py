"""Joining tensors and cutting one into pieces: cat, stack, split, chunk, unbind.

A join's backward cuts the gradient at the same places; a split's joins the
pieces' gradients again, with zeros for a piece that no gradient reached.
"""
from __future__ import annotations

import numbers
from itertools import accumulate, pairwise

from ..autograd import Function
from ..backend import get_array_module
from .layout import empty_in_layout, joined_slices, memory_order
from .reduction import normalize_axis

__all__ = ["cat", "concatenate", "stack", "split", "chunk", "unbind"]


def _cut(array, boundaries, axis):
    """The pieces of ``array`` along ``axis`` between ``boundaries`` (increasing
    offsets), as views: ``np.split``'s result, without its cost per call."""
    lead = (slice(None),) * axis
    edges = (0, *boundaries, array.shape[axis])
    return [array[lead + (slice(start, stop),)] for start, stop in pairwise(edges)]


class Cat(Function):
    backward_reads_output = False
    backward_reads_inputs = False

    @staticmethod
    def forward(ctx, *arrays, axis):
        ctx.meta = (axis, tuple(accumulate(a.shape[axis] for a in arrays[:-1])))
        try:
            return get_array_module(*arrays).concatenate(arrays, axis=axis)
        except ValueError:
            raise ValueError(
                f"cat: shapes {[tuple(a.shape) for a in arrays]} must match except "
                f"in dimension {axis}") from None

    @staticmethod
    def backward(ctx, grad):
        axis, boundaries = ctx.meta
        return tuple(_cut(grad, boundaries, axis))


class Split(Function):
    """Pieces of x along ``axis``, cut at ``boundaries``: one node, many outputs."""

    output_is_view = True
    backward_reads_inputs = False

    @staticmethod
    def forward(ctx, x, axis, boundaries):
        ctx.meta = (x.shape, x.dtype, axis, boundaries)
        return tuple(_cut(x, boundaries, axis))

    @staticmethod
    def backward(ctx, *grads):
        shape, dtype, axis, boundaries = ctx.meta
        xp = get_array_module(*[g for g in grads if g is not None])
        edges = [0, *boundaries, shape[axis]]
        pieces = [g if g is not None else
                  xp.zeros(shape[:axis] + (stop - start,) + shape[axis + 1:], dtype)
                  for g, (start, stop) in zip(grads, pairwise(edges), strict=True)]
        return xp.concatenate(pieces, axis=axis), None, None


class Unbind(Function):
    """The slices ``x[..., i, ...]`` along ``axis``: one node, one output per slice.

    The backward writes the slices' gradients into an array laid out in memory
    as x is: x is often a permuted view (a GPT's q, k and v of one product), and
    its gradient then flows back through the permute and a reshape without a copy.
    Where the slices' gradients already lie as the slices of one array (the
    attention's heads kernel makes them so, ops/layout.py), that array is the
    gradient, and nothing is copied."""

    output_is_view = True
    backward_reads_inputs = False

    @staticmethod
    def forward(ctx, x, axis):
        ctx.meta = (x.shape, x.dtype, axis, memory_order(x))
        return tuple(get_array_module(x).moveaxis(x, axis, 0))

    @staticmethod
    def backward(ctx, *grads):
        shape, dtype, axis, order = ctx.meta
        joined = joined_slices(grads, axis)
        if joined is not None and joined.shape == shape and joined.dtype == dtype:
            return joined, None             # the slices' gradients already lie as one array
        xp = get_array_module(*[g for g in grads if g is not None])
        out = empty_in_layout(xp, shape, dtype, order)
        slices = xp.moveaxis(out, axis, 0)
        for i, g in enumerate(grads):
            slices[i] = 0 if g is None else g
        return out, None


class Stack(Function):
    backward_reads_output = False
    backward_reads_inputs = False

    @staticmethod
    def forward(ctx, *arrays, axis):
        ctx.axis = axis
        shapes = {tuple(a.shape) for a in arrays}
        if len(shapes) > 1:
            raise ValueError(f"stack: all tensors must have the same shape, got {sorted(shapes)}")
        return get_array_module(*arrays).stack(arrays, axis=axis)

    @staticmethod
    def backward(ctx, grad):
        return tuple(get_array_module(grad).moveaxis(grad, ctx.axis, 0))


# ------------------------------------------------------------------ functions

def cat(tensors, dim=0, *, axis=None):
    """The tensors joined along the existing dim ``dim`` (default 0), as ``torch.cat``
    (``concatenate`` is the same function); they must agree in every other dim.
    """
    tensors = list(tensors)
    if not tensors:
        raise ValueError("cat: expected a non-empty list of tensors")
    axis = normalize_axis(dim if axis is None else axis, tensors[0].ndim)
    return Cat.apply(*tensors, axis=axis)


concatenate = cat


def stack(tensors, dim=0, *, axis=None):
    """The tensors, all of one shape, joined along a new dim ``dim`` (default 0), as
    ``torch.stack``: n tensors of shape S give (n, *S) with ``dim=0``.
    """
    tensors = list(tensors)
    if not tensors:
        raise ValueError("stack: expected a non-empty list of tensors")
    axis = normalize_axis(dim if axis is None else axis, tensors[0].ndim + 1)
    return Stack.apply(*tensors, axis=axis)


def split(x, split_size_or_sections, dim=0):
    """Pieces of ``split_size`` along ``dim`` (the last may be smaller), or the
    given list of section sizes, as ``torch.split``."""
    axis = normalize_axis(dim, x.ndim)
    length = x.shape[axis]
    if isinstance(split_size_or_sections, numbers.Integral):
        size = int(split_size_or_sections)
        if size <= 0:
            raise ValueError(f"split: split_size must be positive, got {size}")
        sections = [min(size, length - start) for start in range(0, length, size)]
    else:
        sections = [int(n) for n in split_size_or_sections]
        if sum(sections) != length:
            raise ValueError(
                f"split: sections {sections} sum to {sum(sections)}, but dimension "
                f"{axis} has size {length}")
    return Split.apply(x, axis, list(accumulate(sections[:-1])))


def unbind(x, dim=0):
    """The slices along ``dim``, as a tuple (``torch.unbind``)."""
    return Unbind.apply(x, normalize_axis(dim, x.ndim))


def chunk(x, chunks, dim=0):
    """``chunks`` pieces along ``dim`` (default 0), each ceil(size / chunks) long but the
    last, as ``torch.chunk`` (fewer pieces when the size does not allow ``chunks``).
    """
    length = x.shape[normalize_axis(dim, x.ndim)]
    return split(x, max(1, -(-length // chunks)), dim)
