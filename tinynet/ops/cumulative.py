"""Running totals along a dim: cumsum, cumprod, cummax, cummin, logcumsumexp.

Output k along ``dim`` combines inputs 0..k, so input i reaches outputs
i..n-1, and its gradient is a *reversed* cumulative sum (from the end back to
i) of something: the gradient itself for cumsum, ``grad · y / x`` for cumprod
(with the care torch takes where x has zeros), ``grad · exp(x - y)`` for
logcumsumexp. cummax and cummin send each gradient to the element chosen.

A 0-d input counts as one element (dim 0 or -1), as in torch.
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from ..autograd import Function
from ..backend import get_array_module
from ..tensor import Tensor
from .conversion import check_reduction_dtype
from .elementwise import no_fp_warnings
from .reduction import normalize_axis
from .select import Gather

__all__ = ["cumsum", "cumprod", "cummax", "cummin", "logcumsumexp"]

CummaxResult = namedtuple("cummax", ["values", "indices"])
CumminResult = namedtuple("cummin", ["values", "indices"])


def _reversed_cumsum(xp, a, axis):
    """Sums from the end of ``axis`` back to each position."""
    return xp.flip(xp.cumsum(xp.flip(a, axis), axis), axis)


def _accumulate(xp, name, a, axis):
    """``xp.<name>.accumulate`` along ``axis``, one step at a time where the
    array module has no accumulate for that ufunc."""
    ufunc = getattr(xp, name)
    try:
        return ufunc.accumulate(a, axis=axis)
    except (AttributeError, NotImplementedError, TypeError):
        out = xp.moveaxis(a.copy(), axis, 0)
        for k in range(1, out.shape[0]):
            out[k] = ufunc(out[k - 1], out[k])
        return xp.moveaxis(out, 0, axis)


def _prepare(input, dim, name, floating=False):
    """(input as at least 1-D, axis); a float dtype check when ``floating``."""
    axis = normalize_axis(dim, input.ndim)
    if floating and not np.issubdtype(input.dtype, np.floating):
        raise TypeError(f"{name}: expected a floating point tensor, got dtype {input.dtype}")
    return (input.reshape(1) if input.ndim == 0 else input), axis


def _integer_result(input, dtype, name):
    """torch's result dtype: ``dtype`` if given (not bool), else int64 for bools and
    integers."""
    if dtype is not None:
        if np.dtype(dtype) == np.bool_:
            raise TypeError(f"{name}: dtype=bool is not supported (as in torch)")
        check_reduction_dtype(input, dtype)
        return input.to(dtype)
    if not np.issubdtype(input.dtype, np.floating):
        return input.to(np.int64)
    return input


def _as_given(out, dtype):
    """The result in the ``dtype`` given (NumPy's cumsum of int32 is int64, torch's int32)."""
    return out if dtype is None or out.dtype == dtype else out.to(dtype)


class CumSum(Function):
    backward_reads_inputs = False

    @staticmethod
    def forward(ctx, x, axis):
        ctx.axis = axis
        return get_array_module(x).cumsum(x, axis=axis)

    @staticmethod
    def backward(ctx, grad):
        return _reversed_cumsum(get_array_module(grad), grad, ctx.axis), None


def cumsum(input, dim: int, *, dtype=None):
    """``y[k] = x[0] + ... + x[k]`` along ``dim`` (``torch.cumsum``); bool and
    integer inputs give int64 unless ``dtype`` is given (the input is cast to it
    first). dL/dx[i] = Σ_{k >= i} dL/dy[k]."""
    source, axis = _prepare(input, dim, "cumsum")
    out = _as_given(CumSum.apply(_integer_result(source, dtype, "cumsum"), axis), dtype)
    return out.reshape(()) if input.ndim == 0 else out


@no_fp_warnings
class CumProd(Function):
    """``y[k] = x[0] · ... · x[k]``; the backward is torch's ``cumprod_backward``.

    Where no x is 0, dL/dx[i] = Σ_{k >= i} g[k] y[k] / x[i]. Where a slice has
    zeros, with z its first: before z that formula still holds (y[k] = 0 for
    k >= z adds nothing); at z, dL/dx[z] = Σ_{k >= z} g[k] Π_{j <= k, j != z} x[j]
    (the cumulative product with x[z] replaced by 1); after z the gradient is 0,
    since every output there also holds the factor x[z] = 0.
    """

    @staticmethod
    def forward(ctx, x, axis):
        out = get_array_module(x).cumprod(x, axis=axis)
        ctx.axis = axis
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx, grad):
        x, out = ctx.saved
        axis = ctx.axis
        xp = get_array_module(grad)
        if x.size <= 1 or x.shape[axis] == 1:
            return grad, None
        w = out * grad
        is_zero = x == 0
        if not bool(is_zero.any()):
            return _reversed_cumsum(xp, w, axis) / x, None
        zeros_so_far = xp.cumsum(is_zero, axis=axis)
        before = zeros_so_far == 0
        first = is_zero & (zeros_so_far == 1)
        zero = x.dtype.type(0)
        dx = _reversed_cumsum(xp, xp.where(before, w, zero), axis) / xp.where(before, x, 1)
        dx = xp.where(before, dx, zero)
        skip_first = xp.cumprod(xp.where(first, x.dtype.type(1), x), axis=axis)
        at_first = _reversed_cumsum(xp, xp.where(before, zero, grad * skip_first), axis)
        return xp.where(first, at_first, dx), None


def cumprod(input, dim: int, *, dtype=None):
    """``y[k] = x[0] · ... · x[k]`` along ``dim`` (``torch.cumprod``), with
    torch's gradient also where x has zeros (see ``CumProd``); bool and integer
    inputs give int64 unless ``dtype`` is given."""
    source, axis = _prepare(input, dim, "cumprod")
    out = _as_given(CumProd.apply(_integer_result(source, dtype, "cumprod"), axis), dtype)
    return out.reshape(()) if input.ndim == 0 else out


def _cumulative_extreme(input, dim, largest):
    """(values, indices) of the running max (min): torch's rule keeps the *last*
    index among equal extremes, and once a NaN appears the values stay NaN and
    the index follows the latest NaN."""
    name = "cummax" if largest else "cummin"
    source, axis = _prepare(input, dim, name)
    data = source.array
    xp = get_array_module(data)
    running = _accumulate(xp, "maximum" if largest else "minimum", data, axis)
    chosen = data == running                       # where the extreme was (re)taken
    if np.issubdtype(data.dtype, np.floating):
        chosen |= xp.isnan(data)
    positions = xp.arange(data.shape[axis]).reshape(
        (-1,) + (1,) * (data.ndim - 1 - axis))
    indices = _accumulate(xp, "maximum", xp.where(chosen, positions, 0), axis)
    indices = indices.astype(np.int64, copy=False)
    values = Gather.apply(source, indices, axis)   # gradients go to the chosen elements
    if input.ndim == 0:
        values, indices = values.reshape(()), indices.reshape(())
    result = CummaxResult if largest else CumminResult
    return result(values, Tensor._make(indices))


def cummax(input, dim: int):
    """The running maximum along ``dim`` and where it was taken, as a
    ``(values, indices)`` namedtuple (``torch.cummax``). Among equal maxima the
    latest index is kept; NaN propagates. dL/dx adds each gradient into the
    element at its index."""
    return _cumulative_extreme(input, dim, largest=True)


def cummin(input, dim: int):
    """The running minimum along ``dim`` and where it was taken (``torch.cummin``),
    with cummax's rules for ties and NaN."""
    return _cumulative_extreme(input, dim, largest=False)


def _logcumsumexp(xp, a, axis):
    # logaddexp(a, b) = max + log1p(exp(-|a - b|)), exact at ±inf: never overflows.
    return _accumulate(xp, "logaddexp", a, axis)


@no_fp_warnings
class LogCumSumExp(Function):
    """``y[k] = log Σ_{j <= k} exp x[j]``, accumulated pairwise with logaddexp.

    dL/dx[i] = Σ_{k >= i} g[k] exp(x[i] - y[k]); torch computes it in log space,
    the positive and negative parts of g apart, and so does this backward (so
    that -inf inputs give torch's values: 0, or NaN where y is -inf too).
    """

    @staticmethod
    def forward(ctx, x, axis):
        out = _logcumsumexp(get_array_module(x), x, axis)
        ctx.axis = axis
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx, grad):
        x, out = ctx.saved
        axis = ctx.axis
        xp = get_array_module(grad)
        if grad.size == 0:
            return grad, None
        lowest = grad.dtype.type(np.finfo(grad.dtype).min)
        log_abs = xp.log(xp.abs(grad))

        def part(mask):
            log_grad = xp.where(mask, log_abs, lowest)
            reversed_lcse = xp.flip(_logcumsumexp(xp, xp.flip(log_grad - out, axis), axis), axis)
            return xp.exp(reversed_lcse + x)

        return part(grad > 0) - part(grad < 0), None


def logcumsumexp(input, dim: int):
    """``log(cumsum(exp(x)))`` along ``dim`` without overflow or underflow
    (``torch.logcumsumexp``): -inf inputs add nothing, +inf gives +inf, NaN
    propagates. Floating point inputs only, as in torch."""
    source, axis = _prepare(input, dim, "logcumsumexp", floating=True)
    if input.ndim == 0:
        return input.clone()            # torch: the value itself, the gradient unchanged
    return LogCumSumExp.apply(source, axis)
