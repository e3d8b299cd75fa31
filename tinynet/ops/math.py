"""Trigonometric, hyperbolic and rounding functions, rsqrt, lerp and floor division.

Every function is elementwise: the output has the input's shape (broadcast
shape for ``lerp`` and ``floor_divide``). A floating point input keeps its
dtype; an integer or bool input of the smooth functions becomes float32,
PyTorch's default dtype, as ``torch.sin(int_tensor)`` does.

The backward formulas are PyTorch's, written the way it writes them, so that
the gradients agree at the edges too (0, ±1, ±inf, NaN): d asin/dx is
``rsqrt(1 - x²)``, inf at x = ±1, and d rsqrt/dx is ``-0.5 · y³``, from the
output y. floor, ceil, round and trunc are step functions: their gradient is
0 everywhere, also where the incoming gradient is inf or NaN, as in PyTorch.
"""
from __future__ import annotations

import math
import numbers

import numpy as np

from ..autograd import Function
from ..backend import get_array_module
from ..tensor import Tensor
from .elementwise import _grad_for, _shape, broadcast, no_fp_warnings, operand
from .promotion import floating

__all__ = ["sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh",
           "acosh", "atanh", "log1p", "expm1", "log2", "log10", "rsqrt", "floor", "ceil",
           "round", "trunc", "lerp", "floor_divide"]


_LN2, _LN10 = math.log(2.0), math.log(10.0)


def _rsqrt(xp, x):
    return 1 / xp.sqrt(x)


def _smooth(name, f, derivative, doc):
    """A Function computing ``y = f(xp, x)`` whose backward is
    ``derivative(xp, grad, x, y)``: dL/dx from dL/dy, the input and the output."""

    def forward(ctx, x):
        x = floating(x)
        out = f(get_array_module(x), x)
        ctx.save_for_backward(x, out)
        return out

    def backward(ctx, grad):
        x, out = ctx.saved
        return derivative(get_array_module(grad), grad, x, out)

    namespace = {"forward": staticmethod(forward), "backward": staticmethod(backward),
                 "__doc__": doc, "__module__": __name__}
    return no_fp_warnings(type(name, (Function,), namespace))


# The derivative column is PyTorch's formula (tools/autograd/derivatives.yaml).
Sin = _smooth("Sin", lambda xp, x: xp.sin(x),
              lambda xp, g, x, y: g * xp.cos(x), "sin x; d/dx = cos x.")
Cos = _smooth("Cos", lambda xp, x: xp.cos(x),
              lambda xp, g, x, y: g * -xp.sin(x), "cos x; d/dx = -sin x.")
Tan = _smooth("Tan", lambda xp, x: xp.tan(x),
              lambda xp, g, x, y: g * (1 + y * y), "tan x; d/dx = 1 + tan² x.")
Asin = _smooth("Asin", lambda xp, x: xp.arcsin(x),
               lambda xp, g, x, y: g * _rsqrt(xp, 1 - x * x),
               "asin x, NaN outside [-1, 1]; d/dx = 1 / sqrt(1 - x²).")
Acos = _smooth("Acos", lambda xp, x: xp.arccos(x),
               lambda xp, g, x, y: g * -_rsqrt(xp, 1 - x * x),
               "acos x, NaN outside [-1, 1]; d/dx = -1 / sqrt(1 - x²).")
Atan = _smooth("Atan", lambda xp, x: xp.arctan(x),
               lambda xp, g, x, y: g / (x * x + 1), "atan x; d/dx = 1 / (1 + x²).")
Sinh = _smooth("Sinh", lambda xp, x: xp.sinh(x),
               lambda xp, g, x, y: g * xp.cosh(x), "sinh x; d/dx = cosh x.")
Cosh = _smooth("Cosh", lambda xp, x: xp.cosh(x),
               lambda xp, g, x, y: g * xp.sinh(x), "cosh x; d/dx = sinh x.")
Asinh = _smooth("Asinh", lambda xp, x: xp.arcsinh(x),
                lambda xp, g, x, y: g * _rsqrt(xp, x * x + 1),
                "asinh x; d/dx = 1 / sqrt(x² + 1).")
Acosh = _smooth("Acosh", lambda xp, x: xp.arccosh(x),
                lambda xp, g, x, y: g * _rsqrt(xp, x * x - 1),
                "acosh x, NaN below 1; d/dx = 1 / sqrt(x² - 1).")
Atanh = _smooth("Atanh", lambda xp, x: xp.arctanh(x),
                lambda xp, g, x, y: g * 1 / (1 - x * x),
                "atanh x, ±inf at ±1 and NaN beyond; d/dx = 1 / (1 - x²).")
Log1p = _smooth("Log1p", lambda xp, x: xp.log1p(x), lambda xp, g, x, y: g / (x + 1),
                "log(1 + x), exact for small x (NaN below -1); d/dx = 1 / (1 + x).")
Expm1 = _smooth("Expm1", lambda xp, x: xp.expm1(x), lambda xp, g, x, y: g * (y + 1),
                "e^x - 1, exact for small x; d/dx = e^x, from the output.")
Log2 = _smooth("Log2", lambda xp, x: xp.log2(x), lambda xp, g, x, y: g / (x * _LN2),
               "log₂ x; d/dx = 1 / (x ln 2).")
Log10 = _smooth("Log10", lambda xp, x: xp.log10(x), lambda xp, g, x, y: g / (x * _LN10),
                "log₁₀ x; d/dx = 1 / (x ln 10).")
Rsqrt = _smooth("Rsqrt", _rsqrt, lambda xp, g, x, y: -0.5 * g * (y * y * y),
                "1 / sqrt x (-inf at -0, NaN below 0); d/dx = -y³ / 2.")


def _step(name, f, doc):
    """A Function computing the step function ``f(xp, x)``, whose gradient is 0.

    Integer tensors come back unchanged (a copy), as in PyTorch; bool tensors
    are refused, as PyTorch refuses them.
    """

    def forward(ctx, x):
        if x.dtype == np.bool_:
            raise TypeError(f"{name.lower()}: not implemented for bool tensors")
        if not np.issubdtype(x.dtype, np.floating):
            return x.copy()
        return f(get_array_module(x), x)

    def backward(ctx, grad):
        return get_array_module(grad).zeros_like(grad)

    namespace = {"forward": staticmethod(forward), "backward": staticmethod(backward),
                 "backward_reads_inputs": False, "__doc__": doc, "__module__": __name__}
    return type(name, (Function,), namespace)


Floor = _step("Floor", lambda xp, x: xp.floor(x), "The largest integer <= x.")
Ceil = _step("Ceil", lambda xp, x: xp.ceil(x), "The smallest integer >= x.")
Round = _step("Round", lambda xp, x: xp.round(x),
              "The nearest integer, halves to even (0.5 -> 0, 1.5 -> 2, -2.5 -> -2).")
Trunc = _step("Trunc", lambda xp, x: xp.trunc(x), "x rounded towards 0.")


@no_fp_warnings
class Lerp(Function):
    """``start + weight (end - start)``, broadcast; ``weight`` a number or an array.

    Computed as PyTorch computes it: for |weight| >= 0.5 (and NaN) as
    ``end - (end - start)(1 - weight)``, exact at weight = 1. The gradients
    are 1 - weight, weight and end - start.
    """

    @staticmethod
    def forward(ctx, start, end, weight):
        xp = get_array_module(start, end)
        ctx.save_for_backward(start, end, weight)
        try:
            step = end - start
            if isinstance(weight, numbers.Number):
                return start + weight * step if abs(weight) < 0.5 else end - step * (1 - weight)
            return xp.where(xp.abs(weight) < 0.5, start + weight * step,
                            end - step * (1 - weight))
        except ValueError:
            raise ValueError(
                f"lerp: shapes {tuple(start.shape)}, {tuple(end.shape)} and "
                f"{tuple(_shape(weight) or ())} cannot be broadcast together") from None

    @staticmethod
    def backward(ctx, grad):
        start, end, weight = ctx.saved
        grad_start = None
        if ctx.needs_input_grad(0):
            grad_start = _grad_for(grad * (1 - weight), _shape(start))
        grad_end = _grad_for(grad * weight, _shape(end)) if ctx.needs_input_grad(1) else None
        grad_weight = None
        if ctx.needs_input_grad(2):
            grad_weight = _grad_for(grad * (end - start), _shape(weight))
        return grad_start, grad_end, grad_weight


@no_fp_warnings
class FloorDivide(Function):
    """floor(a / b), computed as Python's ``//`` (PyTorch's floor_divide agrees,
    inf and NaN included). PyTorch defines no derivative for it: its output
    requires grad when an input does, and backward through it is an error."""

    backward_reads_inputs = False

    @staticmethod
    def forward(ctx, a, b):
        xp = get_array_module(a, b)
        if _integral(a) and _integral(b) and bool(xp.any(xp.asarray(b) == 0)):
            raise ZeroDivisionError("floor_divide: integer division by zero")
        return broadcast("floor_divide", xp.floor_divide, a, b)

    @staticmethod
    def backward(ctx, grad):
        raise RuntimeError(
            "the derivative for floor_divide is not implemented (nor is it in PyTorch): "
            "compute it under tinynet.no_grad(), or on detach()ed tensors")


def _integral(x):
    kind = x.dtype.kind if hasattr(x, "dtype") else None
    return kind in ("i", "u", "b") or (kind is None and isinstance(x, numbers.Integral))


def sin(input):
    """sin x elementwise (integers become float32); d/dx = cos x."""
    return Sin.apply(input)


def cos(input):
    """cos x elementwise (integers become float32); d/dx = -sin x."""
    return Cos.apply(input)


def tan(input):
    """tan x elementwise (integers become float32); d/dx = 1 + tan² x."""
    return Tan.apply(input)


def asin(input):
    """arcsin x elementwise, NaN outside [-1, 1]; d/dx = 1 / √(1 - x²)."""
    return Asin.apply(input)


def acos(input):
    """arccos x elementwise, NaN outside [-1, 1]; d/dx = -1 / √(1 - x²)."""
    return Acos.apply(input)


def atan(input):
    """arctan x elementwise (integers become float32); d/dx = 1 / (1 + x²)."""
    return Atan.apply(input)


def sinh(input):
    """sinh x elementwise (integers become float32); d/dx = cosh x."""
    return Sinh.apply(input)


def cosh(input):
    """cosh x elementwise (integers become float32); d/dx = sinh x."""
    return Cosh.apply(input)


def asinh(input):
    """arsinh x elementwise (integers become float32); d/dx = 1 / √(x² + 1)."""
    return Asinh.apply(input)


def acosh(input):
    """arcosh x elementwise, NaN below 1; d/dx = 1 / √(x² - 1)."""
    return Acosh.apply(input)


def atanh(input):
    """artanh x elementwise, ±inf at ±1 and NaN beyond; d/dx = 1 / (1 - x²)."""
    return Atanh.apply(input)


def log1p(input):
    """log(1 + x) elementwise, exact where x is small (integers become float32);
    d/dx = 1 / (1 + x)."""
    return Log1p.apply(input)


def expm1(input):
    """e^x - 1 elementwise, exact where x is small (integers become float32); d/dx = e^x."""
    return Expm1.apply(input)


def log2(input):
    """The base-2 logarithm elementwise (integers become float32); d/dx = 1 / (x ln 2)."""
    return Log2.apply(input)


def log10(input):
    """The base-10 logarithm elementwise (integers become float32); d/dx = 1 / (x ln 10)."""
    return Log10.apply(input)


def rsqrt(input):
    """1 / √x elementwise (inf at 0, NaN below 0), as ``torch.rsqrt``; d/dx = -y³ / 2."""
    return Rsqrt.apply(input)


def floor(input):
    """The largest integer <= x, elementwise, in x's dtype (integer tensors are returned
    unchanged, bool refused, as PyTorch); the gradient is 0.
    """
    return Floor.apply(input)


def ceil(input):
    """The smallest integer >= x, elementwise, in x's dtype (integer tensors are returned
    unchanged, bool refused, as PyTorch); the gradient is 0.
    """
    return Ceil.apply(input)


def trunc(input):
    """x rounded towards 0, elementwise, in x's dtype (integer tensors are returned
    unchanged, bool refused, as PyTorch); the gradient is 0.
    """
    return Trunc.apply(input)


def round(input, *, decimals=0):
    """Round to the nearest integer, halves to even, as ``torch.round``; only
    ``decimals=0`` is supported."""
    if decimals != 0:
        raise NotImplementedError(f"round: decimals={decimals} is not supported, only 0")
    return Round.apply(input)


def lerp(input, end, weight):
    """``input + weight * (end - input)``: ``end`` a tensor of the same dtype,
    ``weight`` a number or a tensor of the same dtype (all three broadcast)."""
    if not isinstance(end, Tensor):
        raise TypeError(f"lerp: end must be a Tensor, not {type(end).__name__}")
    if not np.issubdtype(input.dtype, np.floating):
        raise TypeError(f"lerp: expected floating point tensors, got dtype {input.dtype}")
    for name, t in (("end", end), ("weight", weight)):
        if isinstance(t, Tensor) and t.dtype != input.dtype:
            raise TypeError(f"lerp: expected dtype {input.dtype} for {name}, got {t.dtype}")
    return Lerp.apply(input, end, operand(weight))


def floor_divide(input, other):
    """``input // other`` rounded down (-7 // 2 = -4), numbers or tensors; not
    differentiable (see :class:`FloorDivide`); integer division by 0 is an error."""
    a, b = operand(input), operand(other)
    for x in (a, b):
        if getattr(x, "dtype", None) == np.bool_:
            raise TypeError("floor_divide: not implemented for bool tensors")
    return FloorDivide.apply(a, b)
