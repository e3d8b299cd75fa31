"""Smooth activations: erf, GELU (exact and tanh approximation), SiLU.

NumPy has no erf: :func:`erf_array` calls the C library's, compiled into a
ufunc by Numba (CuPy has its own). The exact GELU is a kernel of the backend's
table (``gelu_forward``, ``gelu_backward``; the spec in kernels/reference.py,
one compiled pass each on the CPU in kernels/cpu_gelu.py). Each op's backward is its
closed-form derivative, written next to the forward that it differentiates.
"""
from __future__ import annotations

import math

from ..autograd import Function
from ..backend import device_of, get_array_module, get_backend
from ..kernels import reference
from .elementwise import sigmoid_array

__all__ = ["erf", "gelu", "silu", "erf_array", "GELU_APPROXIMATIONS"]

GELU_APPROXIMATIONS = ("none", "tanh")
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
_SQRT_TWO_OVER_PI = math.sqrt(2.0 / math.pi)
_GELU_TANH_CUBIC = 0.044715      # Hendrycks & Gimpel (2016), Eq. (2)


# ------------------------------------------------------------------------ erf
def erf_array(x):
    """erf of a NumPy or CuPy array, by the C library (see kernels/reference.py)."""
    return reference.erf(x)


class Erf(Function):
    """d erf(x)/dx = (2/√π) e^(−x²)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return erf_array(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved
        return grad * (_TWO_OVER_SQRT_PI * get_array_module(x).exp(-x * x))


# ----------------------------------------------------------------------- GELU
class Gelu(Function):
    """GELU(x) = x Φ(x), Φ the standard normal CDF (Hendrycks & Gimpel, 2016).

    ``approximate='none'``: Φ(x) = (1 + erf(x/√2))/2 and
    d/dx = Φ(x) + x φ(x), φ(x) = e^(−x²/2)/√(2π).
    ``approximate='tanh'``: GELU(x) ≈ x (1 + tanh(u))/2 with
    u = √(2/π) (x + 0.044715 x³); d/dx = (1 + tanh u)/2 + x/2 (1 − tanh² u) du/dx.
    The formulas are PyTorch's, operation for operation.
    """

    @staticmethod
    def forward(ctx, x, approximate):
        xp = get_array_module(x)
        ctx.save_for_backward(x)
        ctx.approximate = approximate
        if approximate == "tanh":
            inner = _SQRT_TWO_OVER_PI * (x + _GELU_TANH_CUBIC * x * x * x)
            return 0.5 * x * (1 + xp.tanh(inner))
        y, ctx.cdf = get_backend(device_of(x)).kernels.gelu_forward(x)
        return y

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved
        xp = get_array_module(x)
        if ctx.approximate == "tanh":
            square = x * x
            tanh_inner = xp.tanh(_SQRT_TWO_OVER_PI * (x + _GELU_TANH_CUBIC * square * x))
            inner_slope = _SQRT_TWO_OVER_PI * (1 + 3 * _GELU_TANH_CUBIC * square)
            slope = 0.5 * (1 + tanh_inner) + 0.5 * x * (1 - tanh_inner * tanh_inner) * inner_slope
            return grad * slope, None
        return get_backend(device_of(x)).kernels.gelu_backward(grad, x, ctx.cdf), None


class Silu(Function):
    """SiLU(x) = x σ(x) (also called swish); d/dx = σ(x) (1 + x (1 − σ(x)))."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * sigmoid_array(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved
        s = sigmoid_array(x)
        return grad * s * (1 + x * (1 - s))


def erf(x):
    return Erf.apply(x)


def gelu(x, approximate: str = "none"):
    """GELU(x) = x Φ(x), exact (``'none'``) or with the tanh approximation."""
    if approximate not in GELU_APPROXIMATIONS:
        raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    return Gelu.apply(x, approximate)


def silu(x):
    """SiLU(x) = x σ(x)."""
    return Silu.apply(x)
