"""Reading elements by index or by mask: index_select, repeat_interleave,
masked_select, and the index-valued nonzero and argsort; and writing them,
the node of a recorded item assignment (``SetItem``).

``IndexSelect`` is the one gather along a dim that the others (and ``unfold``,
``pad``) build on: its backward adds each output gradient into the element it
was read from, once per read, so repeated and overlapping reads sum.
"""
from __future__ import annotations

import numbers

import numpy as np

from ..autograd import Function, unbroadcast
from ..backend import get_array_module, scatter_add
from ..tensor import Tensor
from .reduction import normalize_axis

__all__ = ["index_select", "repeat_interleave", "masked_select", "nonzero", "argsort"]


def take(x, index, axis):
    """``x`` read at ``index`` along ``axis``: that axis becomes ``index``'s axes."""
    return get_array_module(x).take(x, index, axis=axis)


def take_backward(grad, shape, dtype, index, axis):
    """The gradient of :func:`take`: ``grad`` added back into zeros of ``shape``."""
    xp = get_array_module(grad)
    full = xp.zeros(shape, dtype)
    # index's axes of grad to the front, to line up with the rows of the moved full.
    source = tuple(range(axis, axis + index.ndim))
    values = xp.moveaxis(grad, source, tuple(range(index.ndim)))
    scatter_add(xp.moveaxis(full, axis, 0), index, values)
    return full


class SetItem(Function):
    """``t[index] = value``, recorded in place (:meth:`Tensor.__setitem__`): the node's
    inputs are t as it was and the value. The gradient reaches t where it was not
    written, and the value from the places it was written to (summed where it was
    broadcast), as PyTorch's ``index_put_``. The write happens in the tensor's own
    memory, so this node has no forward."""

    backward_reads_inputs = False
    backward_reads_output = False

    @staticmethod
    def backward(ctx, grad):
        index, value_shape = ctx.index, ctx.value_shape
        grad_before = grad.copy()
        grad_before[index] = 0
        grad_value = None if value_shape is None else unbroadcast(grad[index], value_shape)
        return grad_before, grad_value


class IndexSelect(Function):
    """``out = take(x, index, axis)``; each element's gradient is the sum over its reads."""

    backward_reads_inputs = False

    @staticmethod
    def forward(ctx, x, index, axis):
        ctx.meta = (x.shape, x.dtype, index, axis)
        return take(x, index, axis)

    @staticmethod
    def backward(ctx, grad):
        return take_backward(grad, *ctx.meta), None, None


def _integer_array(index, like, name):
    xp = get_array_module(like.array)
    array = index.array if isinstance(index, Tensor) else xp.asarray(index)
    if array.dtype == np.bool_ or not np.issubdtype(array.dtype, np.integer):
        raise TypeError(f"{name}: expected an integer tensor, got dtype {array.dtype}")
    return array


def index_select(input, dim: int, index):
    """The slices of ``input`` along ``dim`` at ``index`` (a 0-d or 1-D integer
    tensor), as ``torch.index_select``; the result has ``len(index)`` there."""
    index = _integer_array(index, input, "index_select")
    if index.ndim > 1:
        raise ValueError(f"index_select: index must be 0-d or 1-D, got shape {tuple(index.shape)}")
    axis = normalize_axis(dim, input.ndim)
    source = input if input.ndim else input.reshape(1)
    size = source.shape[axis]
    if index.size and (int(index.min()) < -size or int(index.max()) >= size):
        raise IndexError(f"index_select: index out of range for dim {dim} of size {size}")
    out = IndexSelect.apply(source, index.reshape(-1) % max(size, 1), axis)
    return out.reshape(()) if input.ndim == 0 else out


def repeat_interleave(input, repeats=None, dim=None):
    """Each element (or slice along ``dim``) repeated ``repeats`` times in place,
    as ``torch.repeat_interleave``: ``[a, b]`` with 2 repeats is ``[a, a, b, b]``.

    ``repeats`` is an int or an integer tensor with one count per slice (or a
    single count); with ``dim=None`` the input is flattened first. Called with
    one integer tensor ``r`` alone, returns ``arange(len(r))`` repeated ``r``
    times, as torch does. Gradients add up over the copies.
    """
    if repeats is None:
        counts = _integer_array(input, input, "repeat_interleave")
        if counts.ndim != 1:
            raise ValueError("repeat_interleave: repeats must be a 1-D tensor")
        _check_counts(counts)
        xp = get_array_module(counts)
        return Tensor._make(xp.repeat(xp.arange(counts.shape[0]), counts).astype(np.int64))
    if dim is None:
        input, axis = input.reshape(-1), 0
    else:
        axis = normalize_axis(dim, input.ndim)
        if input.ndim == 0:
            input = input.reshape(1)
    size = input.shape[axis]
    if isinstance(repeats, numbers.Integral) and not isinstance(repeats, bool):
        counts = np.asarray(int(repeats))
    else:
        counts = _integer_array(repeats, input, "repeat_interleave")
    if counts.ndim > 1 or (counts.ndim == 1 and counts.shape[0] not in (1, size)):
        raise ValueError(
            f"repeat_interleave: repeats must be a single count or one per slice: got "
            f"shape {tuple(counts.shape)} for dim of size {size}")
    _check_counts(counts)
    xp = get_array_module(input.array)
    per_slice = counts.ndim == 1 and counts.shape[0] == size and size != 1
    times = xp.asarray(counts) if per_slice else int(counts.reshape(-1)[0])
    index = xp.repeat(xp.arange(size), times)
    return IndexSelect.apply(input, index, axis)


def _check_counts(counts):
    if counts.size and int(counts.min()) < 0:
        raise ValueError("repeat_interleave: repeats must be non-negative")


class MaskedSelect(Function):
    """The elements of ``x`` (broadcast with the mask) where the mask is True,
    as a 1-D array in row-major order; gradients return to those places."""

    backward_reads_inputs = False

    @staticmethod
    def forward(ctx, x, mask, shape):
        xp = get_array_module(x)
        mask = xp.broadcast_to(mask, shape)
        ctx.meta = (x.shape, x.dtype, mask, shape)
        return xp.broadcast_to(x, shape)[mask]

    @staticmethod
    def backward(ctx, grad):
        input_shape, dtype, mask, shape = ctx.meta
        full = get_array_module(grad).zeros(shape, dtype)
        full[mask] = grad
        return unbroadcast(full, input_shape), None, None


def masked_select(input, mask):
    """A 1-D tensor of the elements of ``input`` where the bool ``mask`` is True,
    the two broadcast together first (``torch.masked_select``)."""
    xp = get_array_module(input.array)
    mask = mask.array if isinstance(mask, Tensor) else xp.asarray(mask)
    if mask.dtype != np.bool_:
        raise TypeError(f"masked_select: expected a bool mask, got dtype {mask.dtype}")
    try:
        shape = np.broadcast_shapes(tuple(input.shape), tuple(mask.shape))
    except ValueError:
        raise ValueError(f"masked_select: mask of shape {tuple(mask.shape)} does not broadcast "
                         f"with input of shape {tuple(input.shape)}") from None
    return MaskedSelect.apply(input, mask, shape)


def nonzero(input, as_tuple: bool = False):
    """The indices of the nonzero elements (NaN counts as nonzero), in row-major
    order: an int64 tensor of shape (count, ndim), or with ``as_tuple=True`` one
    1-D tensor per dim (a 0-d input counts as 1-D there, as in torch). Outside
    the graph."""
    data = input.array
    xp = get_array_module(data)
    if as_tuple:
        flat = data.reshape(1) if data.ndim == 0 else data
        return tuple(Tensor._make(i.astype(np.int64)) for i in xp.nonzero(flat))
    if data.ndim == 0:
        count = int(bool(data != 0))
        return Tensor._make(xp.zeros((count, 0), np.int64))
    return Tensor._make(xp.stack(xp.nonzero(data), axis=1).astype(np.int64))


def sort_order(data, axis, descending=False):
    """The indices that sort the array ``data`` along ``axis``, in PyTorch's
    order: NaN as the largest value (last ascending, first descending), ties in
    their input order in both directions (a stable sort)."""
    xp = get_array_module(data)
    if not descending:
        return xp.argsort(data, axis=axis, kind="stable")      # NumPy puts NaN last
    # Descending and stable: sort the reversed input ascending, read the order
    # backwards, and map positions of the reversed input back (n - 1 - i).
    order = xp.argsort(xp.flip(data, axis), axis=axis, kind="stable")
    return data.shape[axis] - 1 - xp.flip(order, axis)


def argsort(input, dim: int = -1, descending: bool = False, stable: bool = False):
    """The int64 indices that sort ``input`` along ``dim`` (``torch.argsort``).

    NaN sorts as the largest value (last ascending, first descending). Ties keep
    their input order in both directions: the ``stable=True`` order, which is
    also a valid answer when ``stable=False``. Outside the graph.
    """
    axis = normalize_axis(dim, input.ndim)
    data = input.array
    if data.ndim == 0:
        return Tensor._make(get_array_module(data).zeros((), np.int64))
    return Tensor._make(sort_order(data, axis, descending).astype(np.int64))
