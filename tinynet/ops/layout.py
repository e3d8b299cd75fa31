"""Where arrays lie in memory: new arrays laid out as others are.

A gradient laid out as its input lets the backward of a permute, a transpose or
a reshape stay a view. One step further, the gradients of views into one buffer
(a GPT's q, k and v, slices of one projection's output) can be made views into
one new buffer at the same places: the gradient of the slicing is then that
buffer, and the split's backward copies nothing (``Unbind.backward``).
"""
from __future__ import annotations

from itertools import combinations, pairwise

import numpy as np

__all__ = ["memory_order", "empty_in_layout", "empty_product_like", "empty_gradients_like",
           "joined_slices"]


def memory_order(x):
    """x's axes from the slowest-varying in memory to the fastest."""
    return sorted(range(x.ndim), key=lambda axis: -abs(x.strides[axis]))


def empty_in_layout(xp, shape, dtype, order):
    """An uninitialized array of ``shape`` whose axes lie in memory in ``order``
    (:func:`memory_order` of another array): its gradient, laid out as it is."""
    buffer = xp.empty([shape[axis] for axis in order], dtype)
    return buffer.transpose([order.index(axis) for axis in range(len(shape))])


def empty_product_like(xp, shape, dtype, like):
    """An uninitialized array of ``shape`` for a matrix product to write, laid out in
    memory as ``like`` is where it has as many axes and its rows are contiguous (as
    BLAS writes them), else C-ordered."""
    order = memory_order(like) if like.ndim == len(shape) else None
    if order is None or order[-1] != len(shape) - 1:
        order = list(range(len(shape)))
    return empty_in_layout(xp, shape, dtype, order)


def _address(a):
    return a.__array_interface__["data"][0]


def empty_gradients_like(arrays, dtype):
    """Uninitialized NumPy arrays for the gradients of ``arrays``, one each, of its
    shape and laid out as it is (:func:`empty_product_like`). Where the arrays are
    views that share no element and together fill one C-ordered buffer of
    ``dtype``, the gradients are the same views into one new buffer of its shape."""
    base = arrays[0].base
    if (isinstance(base, np.ndarray) and base.dtype == dtype and base.flags.c_contiguous
            and all(a.base is base and a.dtype == dtype for a in arrays)
            and sum(a.size for a in arrays) == base.size
            and not any(np.shares_memory(a, b) for a, b in combinations(arrays, 2))):
        buffer = np.empty_like(base)
        return [np.ndarray(a.shape, dtype, buffer=buffer, offset=_address(a) - _address(base),
                           strides=a.strides) for a in arrays]
    return [empty_product_like(np, a.shape, dtype, a) for a in arrays]


def _never_overlaps(shape, strides, itemsize):
    """Whether no two elements of a strided array are the same memory: with the
    axes in order of stride, each stride is past the extent of the axes below."""
    extent = itemsize
    for n, stride in sorted(zip(shape, strides, strict=True), key=lambda pair: pair[1]):
        if n > 1:
            if stride < extent:
                return False
            extent = stride * (n - 1) + extent
    return True


def joined_slices(slices, axis):
    """The array whose slices along ``axis`` are ``slices``, as a view of their
    memory, where they are NumPy views of one buffer, alike in shape and strides,
    evenly spaced and apart (as :func:`empty_gradients_like` makes a split's
    gradients); else None."""
    first = slices[0]
    if (len(slices) < 2 or any(not isinstance(s, np.ndarray) for s in slices)
            or first.base is None
            or any(s.base is not first.base or s.shape != first.shape
                   or s.strides != first.strides or s.dtype != first.dtype for s in slices)):
        return None
    addresses = [_address(s) for s in slices]
    step = addresses[1] - addresses[0]
    shape = first.shape[:axis] + (len(slices),) + first.shape[axis:]
    strides = first.strides[:axis] + (step,) + first.strides[axis:]
    if (step <= 0 or any(b - a != step for a, b in pairwise(addresses))
            or min(strides, default=1) <= 0
            or not _never_overlaps(shape, strides, first.itemsize)):
        return None
    return np.lib.stride_tricks.as_strided(first, shape, strides)
