"""Operations that move elements around without changing their values (joining
and splitting tensors is in :mod:`tinynet.ops.joining`).

Their backward passes move the gradient back the same way: reshape it,
transpose it back, or scatter it into the places an index read from.
"""
from __future__ import annotations

import numbers

import numpy as np

from ..autograd import Function, unbroadcast
from ..backend import get_array_module, scatter_add
from ..tensor import Tensor
from .reduction import normalize_axis

__all__ = ["reshape", "view", "permute", "transpose", "flatten", "squeeze", "unsqueeze",
           "expand", "repeat", "clone", "getitem"]


def _sizes(args) -> tuple:
    """``f(2, 3)`` or ``f((2, 3))`` -> (2, 3)."""
    if len(args) == 1 and not isinstance(args[0], numbers.Integral):
        args = tuple(args[0])
    return tuple(int(n) for n in args)


class Reshape(Function):
    output_is_view = True
    backward_reads_inputs = False

    @staticmethod
    def forward(ctx, x, shape, view=False):
        ctx.input_shape = x.shape
        try:
            out = x.reshape(shape)
        except ValueError:
            raise ValueError(
                f"{'view' if view else 'reshape'}: cannot reshape a tensor of shape "
                f"{tuple(x.shape)} ({x.size} elements) into shape {tuple(shape)}") from None
        if view and out.size and not get_array_module(x).may_share_memory(out, x):
            raise RuntimeError(
                f"view size is not compatible with input tensor's size and stride (at least "
                f"one dimension spans across two contiguous subspaces): shape "
                f"{tuple(x.shape)} into {tuple(shape)}. Use .reshape(...) instead, or "
                f".contiguous().view(...)")
        return out

    @staticmethod
    def backward(ctx, grad):
        return grad.reshape(ctx.input_shape), None


class Permute(Function):
    output_is_view = True
    backward_reads_inputs = False

    @staticmethod
    def forward(ctx, x, dims):
        ctx.dims = dims
        return x.transpose(dims)

    @staticmethod
    def backward(ctx, grad):
        inverse = [0] * len(ctx.dims)         # dim d of the output came from input dim dims[d]
        for d, source in enumerate(ctx.dims):
            inverse[source] = d
        return grad.transpose(inverse), None


class Expand(Function):
    output_is_view = True
    backward_reads_inputs = False

    @staticmethod
    def forward(ctx, x, shape):
        ctx.input_shape = x.shape
        try:
            return get_array_module(x).broadcast_to(x, shape)
        except ValueError:
            raise ValueError(
                f"expand: a tensor of shape {tuple(x.shape)} cannot be expanded to "
                f"shape {tuple(shape)}") from None

    @staticmethod
    def backward(ctx, grad):
        return unbroadcast(grad, ctx.input_shape), None


class Repeat(Function):
    """``x`` tiled ``repeats[d]`` times along each dim d (``torch.Tensor.repeat``).

    Extra leading repeats add leading dims. The gradient of each element of x is
    the sum over its copies.
    """

    backward_reads_output = False
    backward_reads_inputs = False

    @staticmethod
    def forward(ctx, x, repeats):
        shape = (1,) * (len(repeats) - x.ndim) + tuple(x.shape)
        ctx.meta = (x.shape, shape, repeats)
        return get_array_module(x).tile(x.reshape(shape), repeats)

    @staticmethod
    def backward(ctx, grad):
        input_shape, shape, repeats = ctx.meta
        # Along dim d the output holds repeats[d] copies of shape[d] elements:
        # split each dim into (copy, element) and sum over the copies.
        split_dims = [n for pair in zip(repeats, shape, strict=True) for n in pair]
        copies = tuple(range(0, 2 * len(shape), 2))
        return grad.reshape(split_dims).sum(axis=copies).reshape(input_shape), None


class Clone(Function):
    """A copy with its own memory; the gradient passes through unchanged."""

    backward_reads_output = False
    backward_reads_inputs = False

    @staticmethod
    def forward(ctx, x):
        return x.copy()

    @staticmethod
    def backward(ctx, grad):
        return grad


def _is_basic_index(index) -> bool:
    """Slices, integers, None and Ellipsis only: each element is read at most once."""
    items = index if isinstance(index, tuple) else (index,)
    return all(isinstance(i, (numbers.Integral, slice)) or i is None or i is Ellipsis
               for i in items)


class GetItem(Function):
    """``x[index]``; the backward scatters back, adding where an index repeats."""

    output_is_view = True
    backward_reads_inputs = False

    @staticmethod
    def forward(ctx, x, index):
        ctx.meta = (x.shape, x.dtype, index)
        return x[index]

    @staticmethod
    def backward(ctx, grad):
        shape, dtype, _ = ctx.meta
        full = get_array_module(grad).zeros(shape, dtype)
        GetItem.add_backward(ctx, grad, full)
        return full, None

    @staticmethod
    def add_backward(ctx, grad, total):
        """total[index] += grad: the backward added into the gradient summed so far
        at x, in place, so that many slices of one tensor (``emb[:, t]`` for each t)
        fill one array instead of a zero-filled array each."""
        index = ctx.meta[2]
        if _is_basic_index(index):
            total[index] += grad
        else:
            scatter_add(total, index, grad)


def _raw_index(index):
    """Tensors and lists inside an index become arrays."""
    if isinstance(index, tuple):
        return tuple(_raw_index(i) for i in index)
    if isinstance(index, Tensor):
        return index.array
    if isinstance(index, list):     # [] indexes nothing: integer positions, not floats
        return np.asarray(index) if index else np.zeros(0, dtype=np.intp)
    return index


# ------------------------------------------------------------------ functions

def reshape(x, *shape):
    """The same elements in the shape ``shape`` (``reshape(x, 2, 3)`` or ``(2, 3)``; one
    dim may be -1, inferred), in row-major order, as ``torch.reshape``: a view of x's
    memory where NumPy can make one, else a copy. ``view`` is the same function.
    """
    return Reshape.apply(x, _sizes(shape))


def view(x, *shape):
    """The same elements in the shape ``shape``, as a view of x's memory, as
    ``torch.Tensor.view``: an error where the memory's layout cannot hold that
    shape without a copy (a transposed tensor made flat, for one); ``reshape``
    copies there, and ``contiguous()`` first makes any view possible."""
    return Reshape.apply(x, _sizes(shape), view=True)


def permute(x, *dims):
    """The dims reordered: ``permute(x, 2, 0, 1)`` of an (A, B, C) tensor is (C, A, B),
    a view, as ``torch.permute``.
    """
    dims = tuple(normalize_axis(d, x.ndim) for d in _sizes(dims))
    if sorted(dims) != list(range(x.ndim)):
        raise ValueError(
            f"permute: {dims} is not a permutation of the {x.ndim} dims of shape "
            f"{tuple(x.shape)}")
    return Permute.apply(x, dims)


def transpose(x, dim0, dim1):
    """Dims ``dim0`` and ``dim1`` swapped, a view (``torch.transpose``)."""
    dims = list(range(x.ndim))
    d0, d1 = normalize_axis(dim0, x.ndim), normalize_axis(dim1, x.ndim)
    if x.ndim == 0:
        return reshape(x, ())
    dims[d0], dims[d1] = dims[d1], dims[d0]
    return Permute.apply(x, tuple(dims))


def flatten(x, start_dim=0, end_dim=-1):
    """Dims ``start_dim`` to ``end_dim`` (default: all) merged into one, as
    ``torch.flatten``; a 0-d tensor becomes (1,).
    """
    if x.ndim == 0:
        return reshape(x, 1)
    start, end = normalize_axis(start_dim, x.ndim), normalize_axis(end_dim, x.ndim)
    shape = x.shape[:start] + (-1,) + x.shape[end + 1:]
    return reshape(x, shape)


def squeeze(x, dim=None):
    """Without its dims of size 1 (``dim=None``), or without dim ``dim`` if its size is 1
    (else unchanged), as ``torch.squeeze``.
    """
    if dim is None:
        shape = tuple(n for n in x.shape if n != 1)
    elif x.ndim == 0:
        normalize_axis(dim, 0)
        shape = ()
    else:
        d = normalize_axis(dim, x.ndim)
        shape = x.shape[:d] + x.shape[d + 1:] if x.shape[d] == 1 else x.shape
    return reshape(x, shape)


def unsqueeze(x, dim):
    """A new dim of size 1 inserted at position ``dim`` (in [-ndim-1, ndim]), as
    ``torch.unsqueeze``.
    """
    d = normalize_axis(dim, x.ndim + 1)
    return reshape(x, x.shape[:d] + (1,) + x.shape[d:])


def expand(x, *sizes):
    """A broadcast view to ``sizes`` (``expand(x, 4, 3)``; -1 keeps a dim's size, new
    leading dims may be added), without copying, as ``torch.Tensor.expand``; the
    gradient is summed back over the expanded dims. The view is read-only.
    """
    sizes = _sizes(sizes)
    offset = len(sizes) - x.ndim
    shape = tuple(x.shape[i - offset] if n == -1 and i >= offset else n
                  for i, n in enumerate(sizes))
    return Expand.apply(x, shape)


def repeat(x, *sizes):
    """``x.repeat(2, 3)``: as ``torch.Tensor.repeat`` (``numpy.tile``); at least one
    repeat per dim of x, extra ones add leading dims."""
    if not sizes:
        raise TypeError("repeat: missing the number of repeats per dim")
    repeats = _sizes(sizes)
    if len(repeats) < x.ndim:
        raise ValueError(
            f"repeat: {len(repeats)} repeat(s) given for a tensor with {x.ndim} dims; "
            "give at least one per dim")
    if any(n < 0 for n in repeats):
        raise ValueError(f"repeat: repeats must not be negative, got {repeats}")
    return Repeat.apply(x, repeats)


def clone(x):
    """A copy with its own memory, still in the graph: the gradient passes through
    unchanged (``torch.clone``).
    """
    return Clone.apply(x)


def getitem(x, index):
    """``x[index]``: NumPy's (and PyTorch's) basic and advanced indexing with ints,
    slices, None, Ellipsis, int or bool tensors; the gradient is scattered back to
    the indexed places (summed where an index repeats).
    """
    return GetItem.apply(x, _raw_index(index))
