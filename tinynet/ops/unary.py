"""Unary elementwise operations: neg, exp, log, sqrt, abs, tanh, sigmoid, relu.

Each backward is the derivative written from what the forward saved: the
output where it gives the derivative directly (e^x, √x, tanh, σ and ReLU's
mask), else the input. exp, log, sqrt, tanh and sigmoid of an integer or bool tensor
are float32, PyTorch's default dtype. At the edges (0, inf, NaN) values and gradients are
PyTorch's, as for the binary ops (elementwise.py). The activations' arithmetic
is the device's kernels (``tanh_backward``, ``sigmoid_forward``...: the spec in
kernels/ops/pointwise_spec.py, one compiled pass in float32 on the CPU).
"""
from __future__ import annotations

from ..autograd import Function
from ..backend import get_array_module, kernels_for
from .elementwise import no_fp_warnings, sign
from .promotion import floating

__all__ = ["neg", "exp", "log", "sqrt", "abs", "tanh", "sigmoid", "relu"]


class Neg(Function):
    backward_reads_inputs = False

    @staticmethod
    def forward(ctx, x):
        return -x

    @staticmethod
    def backward(ctx, grad):
        return -grad


@no_fp_warnings
class Exp(Function):
    backward_reads_inputs = False

    @staticmethod
    def forward(ctx, x):
        x = floating(x)
        out = get_array_module(x).exp(x)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad):
        (out,) = ctx.saved
        return grad * out


@no_fp_warnings
class Log(Function):
    @staticmethod
    def forward(ctx, x):
        x = floating(x)
        ctx.save_for_backward(x)
        return get_array_module(x).log(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved
        return grad / x


@no_fp_warnings
class Sqrt(Function):
    backward_reads_inputs = False

    @staticmethod
    def forward(ctx, x):
        x = floating(x)
        out = get_array_module(x).sqrt(x)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad):
        (out,) = ctx.saved
        return grad / (2 * out)


@no_fp_warnings
class Abs(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return get_array_module(x).abs(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved
        return grad * sign(x)


@no_fp_warnings
class Tanh(Function):
    backward_reads_inputs = False

    @staticmethod
    def forward(ctx, x):
        x = floating(x)
        out = get_array_module(x).tanh(x)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad):
        (out,) = ctx.saved
        return kernels_for(out).tanh_backward(grad, out)


def sigmoid_array(x):
    """σ(x) = 1 / (1 + e^-x), as PyTorch computes it: the device's ``sigmoid_forward``
    kernel (kernels/ops/pointwise_spec.py is the spec; one compiled pass in float32 on the CPU).

    For x below about -88.7 (float32; -709 in float64) e^-x overflows to inf
    and σ comes out 0, its limit. The form (1 + tanh(x/2)) / 2 never overflows
    but cancels for negative x (σ(-20) = 2e-9 becomes 0 in float32).
    """
    return kernels_for(x).sigmoid_forward(x)


@no_fp_warnings
class Sigmoid(Function):
    backward_reads_inputs = False

    @staticmethod
    def forward(ctx, x):
        x = floating(x)
        out = sigmoid_array(x)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad):
        (out,) = ctx.saved
        return kernels_for(out).sigmoid_backward(grad, out)


class Relu(Function):
    """max(x, 0); the gradient passes where the output is above 0 or NaN (as PyTorch)."""

    backward_reads_inputs = False

    @staticmethod
    def forward(ctx, x):
        out = kernels_for(x).relu_forward(x)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad):
        (out,) = ctx.saved
        return kernels_for(out).relu_backward(grad, out)


def neg(x):
    """``-x``, elementwise, of the same shape and dtype."""
    return Neg.apply(x)


def exp(x):
    """e^x elementwise, of the same shape and dtype; d/dx = e^x."""
    return Exp.apply(x)


def log(x):
    """The natural logarithm elementwise (-inf at 0, NaN below); d/dx = 1 / x."""
    return Log.apply(x)


def sqrt(x):
    """√x elementwise (NaN below 0); d/dx = 1 / (2 √x)."""
    return Sqrt.apply(x)


def abs(x):
    """|x| elementwise, of the same shape and dtype; d/dx = sign(x) (0 at 0, as PyTorch)."""
    return Abs.apply(x)


def tanh(x):
    """tanh x elementwise; d/dx = 1 - tanh² x, computed from the output."""
    return Tanh.apply(x)


def sigmoid(x):
    """σ(x) = 1 / (1 + e^-x) elementwise; d/dx = σ(x) (1 - σ(x)), from the output."""
    return Sigmoid.apply(x)


def relu(x):
    """max(x, 0) elementwise; the gradient passes where the output is above 0 (and at NaN)."""
    return Relu.apply(x)
