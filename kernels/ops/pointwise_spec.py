"""The activations' elementwise kernels: the spec of ``pointwise_cpu``."""
from __future__ import annotations

import math

import numpy as np

from tinynet.backend import get_array_module

__all__ = ["sigmoid_forward", "sigmoid_backward", "silu_forward", "silu_backward",
           "tanh_backward", "relu_forward", "relu_backward", "gelu_tanh_forward",
           "gelu_tanh_backward", "SQRT_TWO_OVER_PI", "GELU_TANH_CUBIC"]

SQRT_TWO_OVER_PI = math.sqrt(2.0 / math.pi)
GELU_TANH_CUBIC = 0.044715      # Hendrycks & Gimpel (2016), Eq. (2)


def sigmoid_forward(x):
    """σ(x) = 1 / (1 + e^−x), as PyTorch computes it. Below about −88.7 (float32;
    −709 in float64) e^−x overflows to inf and σ comes out 0, its limit."""
    with np.errstate(over="ignore"):
        return 1 / (1 + get_array_module(x).exp(-x))


def sigmoid_backward(grad, y):
    """dσ/dx = σ (1 − σ), from the output ``y``, times ``grad``."""
    return grad * y * (1 - y)


def silu_forward(x):
    """``(SiLU(x), σ(x))``: SiLU(x) = x σ(x) (also called swish), and σ(x) for the
    backward."""
    s = sigmoid_forward(x)
    return x * s, s


def silu_backward(grad, x, s):
    """dSiLU/dx = σ(x) (1 + x (1 − σ(x))), times ``grad``; ``s`` is σ(x)."""
    return grad * s * (1 + x * (1 - s))


def tanh_backward(grad, y):
    """d tanh x / dx = 1 − tanh² x, from the output ``y``, times ``grad``."""
    return grad * (1 - y * y)


def relu_forward(x):
    """max(x, 0), NaN where x is NaN."""
    xp = get_array_module(x)
    y = xp.zeros_like(x)
    return xp.maximum(x, y, out=y)      # NumPy's loop against a scalar 0 is slower


def relu_backward(grad, y):
    """``grad`` where the output is above 0 or NaN, and 0 where it is 0 (as PyTorch)."""
    from tinynet.ops.elementwise import zero_where
    return zero_where(y <= 0, grad)


def _gelu_tanh_inner(x):
    return SQRT_TWO_OVER_PI * (x + GELU_TANH_CUBIC * x * x * x)


def gelu_tanh_forward(x):
    """GELU(x) ≈ x (1 + tanh u) / 2, u = √(2/π) (x + 0.044715 x³) (PyTorch's
    ``approximate='tanh'``, operation for operation)."""
    return 0.5 * x * (1 + get_array_module(x).tanh(_gelu_tanh_inner(x)))


def gelu_tanh_backward(grad, x):
    """d/dx = (1 + tanh u)/2 + x/2 (1 − tanh² u) du/dx, du/dx = √(2/π) (1 + 3·0.044715 x²)."""
    square = x * x
    tanh_inner = get_array_module(x).tanh(SQRT_TWO_OVER_PI * (x + GELU_TANH_CUBIC * square * x))
    inner_slope = SQRT_TWO_OVER_PI * (1 + 3 * GELU_TANH_CUBIC * square)
    slope = 0.5 * (1 + tanh_inner) + 0.5 * x * (1 - tanh_inner * tanh_inner) * inner_slope
    return grad * slope
