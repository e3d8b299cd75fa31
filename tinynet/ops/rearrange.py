"""Moving elements to new places: roll, flip, diagonal, diag, unflatten and
unfold (sliding windows).

Each backward moves the gradient back the way the forward moved the values:
roll it back, flip it again, write it onto the diagonal, or add the windows'
gradients into the elements they share.
"""
from __future__ import annotations

import numbers

from ..autograd import Function
from ..backend import get_array_module
from .indexing import take, take_backward
from .reduction import normalize_axis
from .shape import reshape

__all__ = ["roll", "flip", "diagonal", "diag", "unflatten", "unfold"]


def _int(value, name, what):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name}: {what} must be an integer, got {value!r}")
    return int(value)


def _ints(values, name, what):
    """An int or a sequence of ints, as a tuple."""
    if isinstance(values, numbers.Integral) and not isinstance(values, bool):
        return (int(values),)
    return tuple(_int(v, name, what) for v in values)


def _axes(dims, ndim, name):
    axes = tuple(normalize_axis(d, ndim) for d in _ints(dims, name, "dims"))
    if len(set(axes)) != len(axes):
        raise ValueError(f"{name}: a dim appears more than once in {dims}")
    return axes


def rolled(x, shifts, axes):
    """A new array: ``x`` rolled ``shifts[i]`` places along ``axes[i]`` (as NumPy's
    ``roll``), each roll the array's last ``shift`` places put before the rest."""
    xp, moved = get_array_module(x), False
    for shift, axis in zip(shifts, axes, strict=True):
        size = x.shape[axis]
        shift = shift % size if size else 0
        if shift:
            before = (slice(None),) * axis
            x = xp.concatenate((x[before + (slice(size - shift, None),)],
                                x[before + (slice(0, size - shift),)]), axis=axis)
            moved = True
    return x if moved else x.copy()


class Roll(Function):
    backward_reads_inputs = False

    @staticmethod
    def forward(ctx, x, shifts, axes):
        ctx.meta = (shifts, axes)
        return rolled(x, shifts, axes)

    @staticmethod
    def backward(ctx, grad):
        shifts, axes = ctx.meta
        return rolled(grad, tuple(-s for s in shifts), axes), None, None


def roll(input, shifts, dims=None):
    """Elements shifted ``shifts`` places along ``dims``, wrapping around
    (``torch.roll``): element i moves to (i + shift) mod n. Without ``dims`` the
    tensor is flattened, rolled and reshaped back. ``shifts`` and ``dims`` are
    ints or sequences of the same length."""
    shifts = _ints(shifts, "roll", "shifts")
    if dims is None:
        if len(shifts) != 1:
            raise ValueError(f"roll: without dims, shifts must be one integer, got {shifts}")
        return Roll.apply(input.reshape(-1), shifts, (0,)).reshape(tuple(input.shape))
    if input.ndim == 0:
        raise IndexError("roll: a 0-d tensor has no dims to roll (leave dims=None)")
    axes = tuple(normalize_axis(d, input.ndim) for d in _ints(dims, "roll", "dims"))
    if len(axes) != len(shifts):
        raise ValueError(f"roll: shifts and dims must have the same length, got "
                         f"{len(shifts)} shifts and {len(axes)} dims")
    return Roll.apply(input, shifts, axes)


class Flip(Function):
    output_is_view = True
    backward_reads_inputs = False

    @staticmethod
    def forward(ctx, x, axes):
        ctx.axes = axes
        return get_array_module(x).flip(x, axes).copy()     # its own memory, as in torch

    @staticmethod
    def backward(ctx, grad):
        xp = get_array_module(grad)
        return (xp.flip(grad, ctx.axes) if ctx.axes else grad), None


def flip(input, dims):
    """The order of the elements reversed along each of ``dims`` (``torch.flip``)."""
    axes = () if input.ndim == 0 else _axes(dims, input.ndim, "flip")
    return Flip.apply(input, axes)


def _diagonal_positions(xp, shape, offset, axis1, axis2):
    """Row and column indices of the diagonal ``offset`` of dims (axis1, axis2)."""
    rows, cols = shape[axis1], shape[axis2]
    length = max(0, min(rows, cols - offset) if offset >= 0 else min(rows + offset, cols))
    steps = xp.arange(length)
    return (steps, steps + offset) if offset >= 0 else (steps - offset, steps)


class Diagonal(Function):
    """The diagonal of dims (axis1, axis2) as the last dim; the backward writes
    the gradient onto that diagonal of zeros."""

    output_is_view = True
    backward_reads_inputs = False

    @staticmethod
    def forward(ctx, x, offset, axis1, axis2):
        ctx.meta = (x.shape, x.dtype, offset, axis1, axis2)
        return get_array_module(x).diagonal(x, offset, axis1, axis2).copy()

    @staticmethod
    def backward(ctx, grad):
        shape, dtype, offset, axis1, axis2 = ctx.meta
        xp = get_array_module(grad)
        full = xp.zeros(shape, dtype)
        rows, cols = _diagonal_positions(xp, shape, offset, axis1, axis2)
        xp.moveaxis(full, (axis1, axis2), (-2, -1))[..., rows, cols] = grad
        return full, None, None, None


def diagonal(input, offset: int = 0, dim1: int = 0, dim2: int = 1):
    """The elements (i, i + offset) of dims ``dim1`` and ``dim2`` (``torch.diagonal``):
    those two dims are removed and the diagonal, possibly empty, becomes the last
    dim. ``offset`` > 0 is above the main diagonal, < 0 below."""
    offset = _int(offset, "diagonal", "offset")
    axis1, axis2 = normalize_axis(dim1, input.ndim), normalize_axis(dim2, input.ndim)
    if input.ndim < 2:
        raise IndexError(f"diagonal: expected a tensor of at least 2 dims, got shape "
                         f"{tuple(input.shape)}")
    if axis1 == axis2:
        raise ValueError(f"diagonal: dim1 and dim2 must differ, got {dim1} and {dim2}")
    return Diagonal.apply(input, offset, axis1, axis2)


class DiagEmbed(Function):
    """A vector of n values as diagonal ``offset`` of an (n + |offset|)² matrix of zeros."""

    backward_reads_inputs = False

    @staticmethod
    def forward(ctx, x, offset):
        xp = get_array_module(x)
        size = x.shape[0] + abs(offset)
        ctx.offset = offset
        out = xp.zeros((size, size), x.dtype)
        rows, cols = _diagonal_positions(xp, out.shape, offset, 0, 1)
        out[rows, cols] = x
        return out

    @staticmethod
    def backward(ctx, grad):
        return get_array_module(grad).diagonal(grad, ctx.offset).copy(), None


def diag(input, diagonal: int = 0):
    """``torch.diag``: a 1-D input becomes the square matrix with it on diagonal
    ``diagonal`` (zeros elsewhere); a 2-D input gives its diagonal ``diagonal``
    as a 1-D tensor."""
    offset = _int(diagonal, "diag", "diagonal")
    if input.ndim == 1:
        return DiagEmbed.apply(input, offset)
    if input.ndim == 2:
        return Diagonal.apply(input, offset, 0, 1)
    raise ValueError(f"diag: expected a 1-D or 2-D tensor, got {input.ndim}-D")


def unflatten(input, dim: int, sizes):
    """Dim ``dim`` split into dims of ``sizes`` (``torch.unflatten``); one size
    may be -1, inferred from the others. The inverse of ``flatten``."""
    if input.ndim == 0:
        raise IndexError("unflatten: a 0-d tensor has no dim to unflatten")
    axis = normalize_axis(dim, input.ndim)
    if isinstance(sizes, numbers.Integral):
        raise TypeError(f"unflatten: sizes must be a sequence of ints, got {sizes!r}")
    sizes = _ints(sizes, "unflatten", "sizes")
    size = input.shape[axis]
    if not sizes:
        raise ValueError("unflatten: sizes must be non-empty")
    if sizes.count(-1) > 1 or any(n < -1 for n in sizes):
        raise ValueError(f"unflatten: sizes {list(sizes)} may hold one -1 and no other "
                         "negative size")
    known = 1
    for n in sizes:
        known *= n if n != -1 else 1
    if -1 in sizes:
        if known == 0:
            raise ValueError(f"unflatten: the -1 in sizes {list(sizes)} is ambiguous when "
                             "the other sizes multiply to 0")
        sizes = tuple(size // known if n == -1 else n for n in sizes)
        known *= size // known
    if known != size:
        raise ValueError(f"unflatten: sizes {list(sizes)} do not multiply up to the size "
                         f"of dim {dim} ({size})")
    shape = tuple(input.shape)
    return reshape(input, shape[:axis] + sizes + shape[axis + 1:])


class Unfold(Function):
    """Windows of ``size`` elements every ``step`` along ``axis``: that axis holds
    the windows and a new last axis the elements of each. An element in several
    windows receives the sum of their gradients."""

    backward_reads_inputs = False

    @staticmethod
    def forward(ctx, x, axis, size, step):
        xp = get_array_module(x)
        count = (x.shape[axis] - size) // step + 1
        index = xp.arange(count)[:, None] * step + xp.arange(size)[None, :]
        ctx.meta = (x.shape, x.dtype, index, axis)
        return xp.moveaxis(take(x, index, axis), axis + 1, -1)

    @staticmethod
    def backward(ctx, grad):
        shape, dtype, index, axis = ctx.meta
        grad = get_array_module(grad).moveaxis(grad, -1, axis + 1)
        return take_backward(grad, shape, dtype, index, axis), None, None, None


def unfold(input, dimension: int, size: int, step: int):
    """``Tensor.unfold``: every window of ``size`` consecutive elements along
    ``dimension``, starting every ``step``. A dim of n becomes
    ``(n - size) // step + 1`` windows, and a new last dim of ``size`` is added.
    A 0-d tensor counts as one element."""
    size, step = _int(size, "unfold", "size"), _int(step, "unfold", "step")
    axis = normalize_axis(dimension, input.ndim)
    source = input.reshape(1) if input.ndim == 0 else input
    length = source.shape[axis]
    if step <= 0:
        raise ValueError(f"unfold: step must be > 0, got {step}")
    if not 0 <= size <= length:
        raise ValueError(f"unfold: size must be in [0, {length}] for dim {dimension} of "
                         f"shape {tuple(input.shape)}, got {size}")
    out = Unfold.apply(source, axis, size, step)
    return out.reshape(size) if input.ndim == 0 else out
