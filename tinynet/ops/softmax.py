"""The softmax family over one or more axes: logsumexp, softmax, log_softmax.

Each is shifted by its maximum before the exponential, so that nothing overflows:
log Σ exp(x) = m + log Σ exp(x − m) for any m, and m = max(x) keeps every
exponent ≤ 0. Dimensions follow PyTorch (``dim``, ``keepdim``), NumPy's ``axis``
and ``keepdims`` are accepted as aliases.
"""
from __future__ import annotations

from ..autograd import Function
from ..backend import get_array_module, kernels_for
from ..kernels.ops.rows_spec import peak
from .elementwise import no_fp_warnings
from .reduction import _expand, _reduced_shape, normalize_axis, resolve_dims

__all__ = ["logsumexp", "softmax", "log_softmax"]


@no_fp_warnings
class LogSumExp(Function):
    """log Σ exp(x), shifted by the max so that nothing overflows."""

    @staticmethod
    def forward(ctx, x, axes, keepdim):
        xp = get_array_module(x)
        shift = peak(x, axes)
        shift = xp.where(xp.isfinite(shift), shift, 0)
        out = xp.log(xp.exp(x - shift).sum(axis=axes, keepdims=True)) + shift
        ctx.save_for_backward(x, out)
        ctx.meta = (axes, keepdim)
        return out if keepdim else out.reshape(_reduced_shape(x.shape, axes))

    @staticmethod
    def backward(ctx, grad):
        x, out = ctx.saved
        axes, keepdim = ctx.meta
        xp = get_array_module(x)
        return _expand(grad, x.shape, axes, keepdim) * xp.exp(x - out), None, None


@no_fp_warnings
class Softmax(Function):
    """The device's ``softmax_forward`` / ``softmax_backward`` kernels
    (kernels/ops/rows_spec.py; compiled row loops in float32 on the CPU)."""

    backward_reads_inputs = False

    @staticmethod
    def forward(ctx, x, axis):
        y = kernels_for(x).softmax_forward(x, axis)
        ctx.save_for_backward(y)
        ctx.axis = axis
        return y

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved
        return kernels_for(y).softmax_backward(grad, y, ctx.axis), None


@no_fp_warnings
class LogSoftmax(Function):
    """The device's ``log_softmax_forward`` / ``log_softmax_backward`` kernels."""

    backward_reads_inputs = False

    @staticmethod
    def forward(ctx, x, axis):
        out = kernels_for(x).log_softmax_forward(x, axis)
        ctx.save_for_backward(out)
        ctx.axis = axis
        return out

    @staticmethod
    def backward(ctx, grad):
        (out,) = ctx.saved
        return kernels_for(out).log_softmax_backward(grad, out, ctx.axis), None


def logsumexp(x, dim, keepdim=False, *, axis=None, keepdims=None):
    """log Σ exp(x) over ``dim`` (an int or a tuple; required, as ``torch.logsumexp``),
    computed stably by shifting by the max; ``keepdim`` keeps the reduced dims. The
    gradient is the softmax of ``x`` over ``dim``.
    """
    axes, keepdim = resolve_dims(x, dim, keepdim, axis, keepdims)
    return LogSumExp.apply(x, axes, keepdim)


def _one_axis(x, dim, axis):
    return normalize_axis(axis if axis is not None else dim, x.ndim)


def softmax(x, dim=-1, *, axis=None):
    """softmax(x)_i = exp(x_i) / Σ_j exp(x_j) along ``dim`` (default -1), computed stably
    (shifted by the max); same shape and dtype, each slice sums to 1. Backward:
    y (g - Σ g y).
    """
    return Softmax.apply(x, _one_axis(x, dim, axis))


def log_softmax(x, dim=-1, *, axis=None):
    """log softmax along ``dim`` (default -1): x - log Σ exp(x), without forming the
    softmax; same shape and dtype. Backward: g - softmax(x) Σ g.
    """
    return LogSoftmax.apply(x, _one_axis(x, dim, axis))
