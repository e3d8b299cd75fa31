"""where, masked_fill and clamp: each output element is taken from one of several
sources (two branches, a fill value, a bound), and its gradient goes back to the
source it was taken from, as in PyTorch.
"""
from __future__ import annotations

import numpy as np

from ..autograd import Function, unbroadcast
from ..backend import get_array_module
from ..tensor import Tensor
from .elementwise import _grad_for, _shape, broadcast, operand, zero_where
from .promotion import promoted, result_dtype

__all__ = ["where", "masked_fill", "clip", "clamp"]


class Where(Function):
    """``where(condition, a, b)``: the gradient follows the chosen branch."""

    backward_reads_inputs = False

    @staticmethod
    def forward(ctx, condition, a, b):
        xp = get_array_module(condition, a, b)
        ctx.condition = condition
        ctx.shapes = (_shape(a), _shape(b))
        a, b = promoted(a, b)
        try:
            out = xp.where(condition, a, b)
        except ValueError:
            raise ValueError(
                f"where: condition {tuple(condition.shape)}, a {_shape(a)} and "
                f"b {_shape(b)} cannot be broadcast together") from None
        if not (hasattr(a, "dtype") or hasattr(b, "dtype")):   # two numbers: NumPy's
            out = out.astype(result_dtype(a, b))               # float64, PyTorch's float32
        return out

    @staticmethod
    def backward(ctx, grad):
        xp = get_array_module(grad)
        shape_a, shape_b = ctx.shapes
        zero = grad.dtype.type(0)
        return (None,
                _grad_for(xp.where(ctx.condition, grad, zero), shape_a),
                _grad_for(xp.where(ctx.condition, zero, grad), shape_b))


class MaskedFill(Function):
    """``x`` with ``value`` where ``mask`` is True (broadcast together, as PyTorch).

    The gradient reaches x where the mask is False; a 0-d tensor ``value`` gets
    the sum of the gradient where it is True.
    """

    @staticmethod
    def forward(ctx, x, mask, value):
        xp = get_array_module(x)
        ctx.meta = (mask, _shape(x))
        try:
            return xp.where(mask, xp.asarray(value, dtype=x.dtype), x)
        except ValueError:
            raise ValueError(
                f"masked_fill: mask {tuple(mask.shape)} and tensor {tuple(x.shape)} "
                "cannot be broadcast together") from None

    @staticmethod
    def backward(ctx, grad):
        mask, shape = ctx.meta
        xp = get_array_module(grad)
        zero = grad.dtype.type(0)
        grad_value = xp.where(mask, grad, zero).sum() if ctx.needs_input_grad(2) else None
        return unbroadcast(xp.where(mask, zero, grad), shape), None, grad_value


class Clip(Function):
    """Clamp to [low, high]: min(max(x, low), high), each bound None, a number or a
    tensor (broadcast with x). The gradient reaches x where low <= x <= high (not
    at NaN), low where x < low < high, and high where x > high or high < low: the
    one that gave each output, as in PyTorch."""

    @staticmethod
    def forward(ctx, x, low, high):
        xp = get_array_module(x)
        ctx.save_for_backward(x, low, high)
        ctx.shapes = (x.shape, _shape(low), _shape(high))
        if low is not None:
            x = broadcast("clamp", xp.maximum, x, low)
        return x if high is None else broadcast("clamp", xp.minimum, x, high)

    @staticmethod
    def backward(ctx, grad):
        x, low, high = ctx.saved
        shape_x, shape_low, shape_high = ctx.shapes
        inside = True
        if low is not None:
            inside = x >= low
        if high is not None:
            inside = inside & (x <= high)
        grad_low = grad_high = None
        if shape_low is not None:
            gives_low = x < low if high is None else (x < low) & (low < high)
            grad_low = _grad_for(zero_where(~gives_low, grad), shape_low)
        if shape_high is not None:
            gives_high = x > high if low is None else (x > high) | (high < low)
            grad_high = _grad_for(zero_where(~gives_high, grad), shape_high)
        return _grad_for(zero_where(~inside, grad), shape_x), grad_low, grad_high


def where(condition, a, b):
    """``a`` where the bool ``condition`` is True, ``b`` elsewhere, the three broadcast
    together (``torch.where``); the gradient flows to the chosen branch only.
    """
    if isinstance(condition, Tensor):
        condition = condition.array
    return Where.apply(condition, operand(a), operand(b))


def masked_fill(x, mask, value):
    """``value`` (a number or a 0-d tensor) where the bool ``mask`` is True."""
    if getattr(mask, "dtype", None) != np.bool_:
        raise TypeError(
            f"masked_fill: mask must be a bool tensor, got {type(mask).__name__} of dtype "
            f"{getattr(mask, 'dtype', None)}")
    if isinstance(value, Tensor) and value.ndim != 0:
        raise ValueError(
            f"masked_fill: value must be a number or a 0-dimensional tensor, got a tensor "
            f"of shape {tuple(value.shape)}")
    return MaskedFill.apply(x, operand(mask), operand(value))


def clip(x, min=None, max=None):
    """``x`` clamped to ``[min, max]`` elementwise (``torch.clamp``; ``clamp`` is the same
    function); either bound may be None, not both, and either a number or a tensor,
    broadcast with x. The gradient reaches x where ``min <= x <= max`` and a tensor
    bound where it is the output.
    """
    if min is None and max is None:
        raise ValueError("clip: at least one of min and max must be given")
    return Clip.apply(x, *(None if bound is None else operand(bound) for bound in (min, max)))


clamp = clip
