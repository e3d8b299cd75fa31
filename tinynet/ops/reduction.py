"""Reductions over axes: sum, mean, var/std, norm (max/min and argmax/argmin are in
:mod:`tinynet.ops.extremes`, the softmax family in :mod:`tinynet.ops.softmax`).

Dimensions follow PyTorch (``dim``, ``keepdim``); NumPy's ``axis`` and
``keepdims`` are accepted as aliases. The backward of a reduction copies the
incoming gradient back along the reduced axes (``_expand``). At inf and NaN the
values and gradients are PyTorch's, as for the elementwise ops.

So are the degenerate cases: over an empty axis sum is 0 and mean NaN; var and
std without degrees of freedom (one value with ``correction=1``, an empty axis)
are NaN (inf where the deviations are not all 0) with PyTorch's warning, not
an error. (prod, in :mod:`.product`, is 1 over an empty axis.)
"""
from __future__ import annotations

import builtins
import numbers
import os
import sys
import warnings

import numpy as np

from ..autograd import Function
from ..backend import get_array_module, kernels_for
from .conversion import computed_in
from .elementwise import no_fp_warnings, sign, zero_where

__all__ = ["sum", "mean", "var", "std", "norm"]

def normalize_axis(axis: int, ndim: int) -> int:
    """A non-negative axis, or an ``IndexError`` naming the valid range."""
    size = builtins.max(ndim, 1)
    if not (type(axis) is int or isinstance(axis, numbers.Integral)) or not -size <= axis < size:
        raise IndexError(
            f"dimension {axis} is out of range for a tensor with {ndim} dimensions "
            f"(expected an integer in [{-size}, {size - 1}])")
    return int(axis) % size


def resolve_dims(x, dim, keepdim, axis=None, keepdims=None):
    """Merge the PyTorch and NumPy spellings; return (axes tuple, or None for all
    of them, and keepdim)."""
    if axis is not None:
        if dim is not None:
            raise TypeError("give either dim or axis, not both")
        dim = axis
    if keepdims is not None:
        keepdim = keepdims
    dims = (dim,) if dim is None or isinstance(dim, numbers.Integral) else tuple(dim)
    if dims in ((None,), ()):            # dim=() reduces every dim too, as in torch.sum
        return None, bool(keepdim)
    axes = tuple(normalize_axis(d, x.ndim) for d in dims)
    if len(set(axes)) != len(axes):
        raise ValueError(f"dimension repeated in {dim}")
    if x.ndim == 0:
        return (), bool(keepdim)     # dim 0 (or -1) of a 0-d tensor: its one element
    return axes, bool(keepdim)


def _expand(grad, shape, axes, keepdim):
    """Broadcast the gradient of a reduction back to the input's shape; over the
    last axis alone, the device's kernel spreads it (a C-ordered array on the CPU,
    which the engine stores without copying)."""
    if axes == (len(shape) - 1,):
        return kernels_for(grad).sum_last_axis_backward(grad.reshape(shape[:-1]), shape[-1])
    xp = get_array_module(grad)
    if not keepdim:
        grad = grad.reshape([1 if axes is None or i in axes else n
                             for i, n in enumerate(shape)])
    return xp.broadcast_to(grad, shape)


def _count(shape, axes):
    if axes is None:
        return int(np.prod(shape))
    return int(np.prod([shape[a] for a in axes]))


# The rows whose sums the sum of all elements adds (_sum_all): at least this many
# elements a row, for the kernel's loop to pay, and at most this many, so that each
# of its SIMD lanes adds few numbers.
ROW_SUM_ELEMENTS = (16, 4096)
_ROW_SUM_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def _sum_all(x, keepdims):
    """Σ of every element of x. A float32 or float64 array whose rows (its last axis) have
    ROW_SUM_ELEMENTS: the device's row sums (sum_last_axis), then their sum. On
    the CPU a row is added in SIMD lanes, which NumPy's pairwise sum over the whole
    array is not (several times faster); short rows keep its accuracy."""
    shortest, longest = ROW_SUM_ELEMENTS
    if x.dtype in _ROW_SUM_DTYPES and x.ndim and shortest <= x.shape[-1] <= longest:
        total = kernels_for(x).sum_last_axis(x).sum()
        return total.reshape((1,) * x.ndim) if keepdims else total
    return x.sum(keepdims=keepdims)


@no_fp_warnings
class Sum(Function):
    backward_reads_inputs = False

    @staticmethod
    def forward(ctx, x, axes, keepdim):
        ctx.meta = (x.shape, axes, keepdim)
        if axes == (x.ndim - 1,):           # rows: the device's compiled kernel
            out = kernels_for(x).sum_last_axis(x)
            return out[..., None] if keepdim else out
        if axes is None:
            return _sum_all(x, keepdim)
        return x.sum(axis=axes, keepdims=keepdim)

    @staticmethod
    def backward(ctx, grad):
        return _expand(grad, *ctx.meta), None, None


def _mean(x, axes, keepdims):
    """x.mean(), but NaN over an empty axis without NumPy's "Mean of empty slice"."""
    count = _count(x.shape, axes)
    if count == 0:
        return x.sum(axis=axes, keepdims=keepdims) / 0       # 0 / 0: NaN
    if axes is None:
        return _sum_all(x, keepdims) / count
    return x.mean(axis=axes, keepdims=keepdims)


@no_fp_warnings
class Mean(Function):
    """The mean; NaN over an empty axis, as in PyTorch."""

    backward_reads_inputs = False

    @staticmethod
    def forward(ctx, x, axes, keepdim):
        ctx.meta = (x.shape, axes, keepdim)
        return _mean(x, axes, keepdim)

    @staticmethod
    def backward(ctx, grad):
        shape, axes, _ = ctx.meta
        return _expand(grad / _count(shape, axes), *ctx.meta), None, None


@no_fp_warnings
class Var(Function):
    """Variance with Bessel's ``correction``: Σ (x - mean)² / (n - correction).

    With no degrees of freedom left (n - correction <= 0) the values and the
    gradients are PyTorch's: the divisor is max(0, n - correction), so the
    variance is inf, or NaN where every deviation is 0 (one element, an empty
    axis). Over all elements the gradient is then inf, NaN where x equals the
    mean; along dims it is 2 (x - mean) / (n - correction), inf · 0 = NaN at
    n = correction and finite, negative beyond. :func:`var` warns, as PyTorch.
    """

    backward_reads_inputs = False

    @staticmethod
    def forward(ctx, x, axes, keepdim, correction):
        return Var.wide(ctx, x, axes, keepdim, correction).astype(x.dtype)

    @staticmethod
    def wide(ctx, x, axes, keepdim, correction):
        """The variance, float32's summed in float64 (as PyTorch sums it): the
        squares of float32 deviations past about 1.8·10¹⁹ overflow float32, and
        those under 10⁻²³ underflow it."""
        mean = _mean(x, axes, True)
        deviation = x - mean
        dof = _count(x.shape, axes) - correction
        whole = axes is None or x.ndim == 0
        ctx.save_for_backward(deviation)
        ctx.meta = (x.shape, axes, keepdim, dof)
        ctx.at_mean = (x == mean) if whole and dof <= 0 else None
        xp = get_array_module(x)
        squares = xp.square(deviation, dtype=np.float64 if x.dtype == np.float32 else None)
        return xp.asarray(squares.sum(axis=axes, keepdims=keepdim) / builtins.max(dof, 0))

    @staticmethod
    def backward(ctx, grad):
        (deviation,) = ctx.saved
        shape, axes, keepdim, dof = ctx.meta
        if ctx.at_mean is not None:
            xp = get_array_module(grad)
            return grad * xp.where(ctx.at_mean, np.nan, np.inf).astype(grad.dtype), None, None, None
        scale = 2 / dof if dof != 0 else np.inf
        return _expand(scale * grad, shape, axes, keepdim) * deviation, None, None, None


def _dof_warning(name, x, axes, correction):
    """PyTorch's warning when ``correction`` leaves no degrees of freedom: the number
    of values reduced per output (0 when there is no output) minus ``correction``
    is <= 0."""
    outputs = 1 if axes is None else _count(x.shape, [i for i in range(x.ndim) if i not in axes])
    if (_count(x.shape, axes) if outputs else 0) - correction <= 0:
        warnings.warn(f"{name}(): degrees of freedom is <= 0. Correction should be strictly "
                      "less than the reduction factor (input numel divided by output numel).",
                      UserWarning, stacklevel=_caller_level())


def _caller_level():
    """The ``stacklevel`` that points a warning at the first caller outside tinynet."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    frame, level = sys._getframe(2), 2
    while frame is not None and frame.f_code.co_filename.startswith(package + os.sep):
        frame, level = frame.f_back, level + 1
    return level


@no_fp_warnings
class Std(Function):
    """The square root of :class:`Var`; where it is 0 the gradient is 0 (as PyTorch),
    not the 0/0 of the chain rule through sqrt."""

    backward_reads_inputs = False

    @staticmethod
    def forward(ctx, x, axes, keepdim, correction):
        out = get_array_module(x).sqrt(Var.wide(ctx, x, axes, keepdim, correction))
        out = out.astype(x.dtype)
        ctx.out = out
        return out

    @staticmethod
    def backward(ctx, grad):
        return Var.backward(ctx, zero_where(ctx.out == 0, grad / (2 * ctx.out)))


@no_fp_warnings
class Norm(Function):
    """The p-norm over ``axes``: (Σ |x|^p)^(1/p); max |x| for p = inf, min |x| for
    p = -inf, the number of non-zeros for p = 0.

    The gradients are PyTorch's: 0 where the norm is 0, sign(x) for p = 1 (0 at
    x = 0 and at NaN), and for p = ±inf shared evenly by the elements that attain
    it (a NaN attains a NaN norm).
    """

    @staticmethod
    def forward(ctx, x, p, axes, keepdim):
        xp = get_array_module(x)
        size = xp.abs(x)
        if p == 2:
            out = xp.sqrt((x * x).sum(axis=axes, keepdims=True))
        elif p == 1:
            out = size.sum(axis=axes, keepdims=True)
        elif p == np.inf:
            out = size.max(axis=axes, keepdims=True)
        elif p == -np.inf:
            out = size.min(axis=axes, keepdims=True)
        elif p == 0:
            out = (x != 0).sum(axis=axes, keepdims=True).astype(x.dtype)
        else:
            out = (size ** p).sum(axis=axes, keepdims=True) ** (1 / p)
        ctx.save_for_backward(x, out)
        ctx.meta = (p, axes)
        return out if keepdim else out.reshape(_reduced_shape(x.shape, axes))

    @staticmethod
    def backward(ctx, grad):
        x, out = ctx.saved
        p, axes = ctx.meta
        if p == 0:
            return None, None, None, None
        xp = get_array_module(x)
        grad = grad.reshape(out.shape)
        size = xp.abs(x)
        if p == 1:
            dx = sign(x) * grad
        elif p in (np.inf, -np.inf):
            hits = attains(size, out).astype(grad.dtype)
            dx = sign(x) * hits * (grad / hits.sum(axis=axes, keepdims=True))
        elif p < 1:
            # |x|^(p-1) is infinite at x = 0: PyTorch uses 0
            dx = sign(x) * zero_where(x == 0, size ** (p - 1)) * grad * out ** (1 - p)
        elif p == 2:
            dx = grad * zero_where(out == 0, x / out)
        else:
            # d norm / dx = sign(x) |x|^(p-1) / norm^(p-1), and 0 where the norm is 0
            dx = sign(x) * size ** (p - 1) * zero_where(out == 0, grad / out ** (p - 1))
        return dx, None, None, None


def attains(x, extreme):
    """Where ``x`` equals its max or min ``extreme``; a NaN attains it too (the max
    of values holding a NaN is NaN), as PyTorch's gradients of max and min count."""
    return (x == extreme) | get_array_module(x).isnan(x)


def _reduced_shape(shape, axes):
    return tuple(n for i, n in enumerate(shape) if axes is not None and i not in axes)


# ------------------------------------------------------------------ functions

def sum(x, dim=None, keepdim=False, *, dtype=None, axis=None, keepdims=None):
    """The sum of the elements over ``dim`` (an int, a tuple of ints, or None: all of
    them), as ``torch.sum``; ``keepdim=True`` keeps the reduced dims with size 1.
    NumPy's ``axis``/``keepdims`` are accepted too. 0 over an empty dim; the
    gradient is the incoming one copied along the reduced dims. Bools and integers
    sum to int64; with ``dtype`` x is cast to it first and the sum is ``dtype``.
    """
    axes, keepdim = resolve_dims(x, dim, keepdim, axis, keepdims)
    if dtype is not None or x.dtype.kind == "u":
        return computed_in(Sum, x, dtype, axes, keepdim)
    return Sum.apply(x, axes, keepdim)


def mean(x, dim=None, keepdim=False, *, dtype=None, axis=None, keepdims=None):
    """The mean over ``dim`` (an int, a tuple of ints, or None: all elements), as
    ``torch.mean``; ``keepdim`` as :func:`sum`. NaN over an empty dim; the gradient
    is the incoming one divided by the count, copied along the reduced dims. With
    ``dtype`` (a floating-point one) x is cast to it first.
    """
    axes, keepdim = resolve_dims(x, dim, keepdim, axis, keepdims)
    if dtype is not None:
        if np.dtype(dtype).kind not in "fc":
            raise TypeError(f"mean(): dtype must be a floating point or complex dtype, "
                            f"not {np.dtype(dtype)}")
        return computed_in(Mean, x, dtype, axes, keepdim)
    _check_floating("mean", x, "; pass dtype= or call .float() first")
    return Mean.apply(x, axes, keepdim)


def _check_floating(name, x, hint=""):
    """Raise TypeError, as PyTorch does, unless x has a floating point (or complex)
    dtype: the mean or variance of integers has no dtype of its own to be in."""
    if x.dtype.kind not in "fc":
        raise TypeError(f"{name}(): expected a floating point tensor, got dtype {x.dtype}"
                        f"{hint}")


def _correction(unbiased, correction):
    if correction is not None:
        return correction
    return 0 if unbiased is False else 1


def var(x, dim=None, unbiased=None, keepdim=False, *, correction=None, axis=None,
        keepdims=None):
    """Variance; unbiased (``correction=1``) by default, as in PyTorch. Without
    degrees of freedom (one value, an empty axis) it is NaN, with a warning."""
    axes, keepdim = resolve_dims(x, dim, keepdim, axis, keepdims)
    _check_floating("var", x)
    correction = _correction(unbiased, correction)
    _dof_warning("var", x, axes, correction)
    return Var.apply(x, axes, keepdim, correction)


def std(x, dim=None, unbiased=None, keepdim=False, *, correction=None, axis=None,
        keepdims=None):
    """Standard deviation, the square root of :func:`var` (same arguments)."""
    axes, keepdim = resolve_dims(x, dim, keepdim, axis, keepdims)
    _check_floating("std", x)
    correction = _correction(unbiased, correction)
    _dof_warning("std", x, axes, correction)
    return Std.apply(x, axes, keepdim, correction)


def norm(x, p="fro", dim=None, keepdim=False):
    """The p-norm of x over ``dim`` (all of x by default), as ``torch.Tensor.norm``.

    ``p`` is a number (2, 1, ``inf``, ``-inf``, 0 or any other) or ``'fro'``, the
    Frobenius norm: the 2-norm over all of x or over one or two dims.
    """
    if not np.issubdtype(x.dtype, np.floating):
        raise TypeError(f"norm: expected a floating point tensor, got dtype {x.dtype}")
    if isinstance(p, str):
        if p != "fro":
            raise ValueError(f"norm: p={p!r} is not supported (a number or 'fro')")
        if dim is not None and not isinstance(dim, numbers.Integral) and len(dim) > 2:
            raise ValueError(f"norm: p='fro' reduces one or two dims, got dim={dim}")
        p = 2
    if not isinstance(p, numbers.Real):
        raise TypeError(f"norm: p must be a number or 'fro', got {type(p).__name__}")
    if dim is not None and not isinstance(dim, numbers.Integral) and len(dim) == 0:
        dim = None                          # dim=() reduces everything, as PyTorch
    axes, keepdim = resolve_dims(x, dim, keepdim)
    return Norm.apply(x, float(p), axes, keepdim)
