"""Activations beyond ReLU: erf, GELU (exact and tanh approximation), SiLU,
softplus, ELU, leaky ReLU and PReLU (with its learnable slopes).

NumPy has no erf: :func:`erf_array` calls the C library's, compiled into a
ufunc by Numba (CuPy has its own). GELU (both forms) and SiLU are kernels of the
device's table (``gelu_forward``, ``gelu_tanh_backward``, ``silu_forward``...;
the specs in kernels/ops/gelu_spec.py and pointwise_spec.py, one compiled pass each on the CPU in
kernels/ops/gelu_cpu.py and kernels/ops/pointwise_cpu.py). Each op's backward is its
closed-form derivative; softplus, ELU and leaky ReLU follow PyTorch's CPU
kernels branch for branch, so their values and gradients at 0, ±inf and NaN
are PyTorch's.
"""
from __future__ import annotations

import math

from ..autograd import Function, unbroadcast
from ..backend import get_array_module, kernels_for
from ..hyperparameters import check_real
from ..kernels.ops import gelu_spec
from .elementwise import no_fp_warnings

__all__ = ["erf", "gelu", "silu", "softplus", "elu", "leaky_relu", "prelu"]

GELU_APPROXIMATIONS = ("none", "tanh")
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


# ------------------------------------------------------------------------ erf
def erf_array(x):
    """erf of a NumPy or CuPy array, by the C library (see kernels/ops/gelu_spec.py)."""
    return gelu_spec.erf(x)


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
    The reference formulas are PyTorch's, operation for operation; the CPU's
    float32 kernel computes the tanh form as x σ(2u) (kernels/ops/pointwise_cpu.py).
    """

    @staticmethod
    def forward(ctx, x, approximate):
        ctx.save_for_backward(x)
        ctx.approximate = approximate
        if approximate == "tanh":
            return kernels_for(x).gelu_tanh_forward(x)
        y, ctx.cdf = kernels_for(x).gelu_forward(x)
        return y

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved
        if ctx.approximate == "tanh":
            return kernels_for(x).gelu_tanh_backward(grad, x), None
        return kernels_for(x).gelu_backward(grad, x, ctx.cdf), None


class Silu(Function):
    """SiLU(x) = x σ(x) (also called swish); d/dx = σ(x) (1 + x (1 − σ(x)))."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        y, ctx.sigmoid = kernels_for(x).silu_forward(x)
        return y

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved
        return kernels_for(x).silu_backward(grad, x, ctx.sigmoid)


# ------------------------------------------------- softplus, ELU, leaky ReLU
@no_fp_warnings
class Softplus(Function):
    """softplus(x) = log(1 + e^(βx)) / β, smooth ReLU; x itself where βx > threshold
    (the linear asymptote, reached to rounding there, as PyTorch).

    d/dx = e^(βx) / (1 + e^(βx)) = σ(βx), and 1 past the threshold. At x = -inf
    the value and slope are 0; at NaN both are NaN.
    """

    @staticmethod
    def forward(ctx, x, beta, threshold):
        xp = get_array_module(x)
        scaled = x * beta
        ctx.save_for_backward(x)
        ctx.params = (beta, threshold)
        return xp.where(scaled > threshold, x, xp.log1p(xp.exp(scaled)) / beta)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved
        beta, threshold = ctx.params
        xp = get_array_module(x)
        scaled = x * beta
        z = xp.exp(scaled)
        return xp.where(scaled > threshold, grad, grad * z / (z + 1)), None, None


@no_fp_warnings
class Elu(Function):
    """ELU(x) = x for x > 0, α (e^x − 1) otherwise (Clevert et al., 2015), e^x − 1
    by expm1 (exact for tiny x); d/dx = 1 for x > 0, α e^x otherwise (α at x = 0).

    At NaN the gradient is NaN, as in PyTorch's vectorized loop (its scalar loop,
    used for a tensor's last few elements, passes the upstream gradient instead).
    """

    @staticmethod
    def forward(ctx, x, alpha):
        xp = get_array_module(x)
        ctx.save_for_backward(x)
        ctx.alpha = alpha
        return xp.where(x > 0, x, xp.expm1(x) * alpha)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved
        xp = get_array_module(x)
        return xp.where(x > 0, grad, grad * ctx.alpha * xp.exp(x)), None


@no_fp_warnings
class LeakyRelu(Function):
    """x for x > 0, negative_slope · x otherwise; the slope is 1 or negative_slope
    (negative_slope at 0 and at NaN, as PyTorch)."""

    backward_reads_inputs = False

    @staticmethod
    def forward(ctx, x, slope):
        positive = x > 0
        ctx.positive, ctx.slope = positive, slope
        return get_array_module(x).where(positive, x, x * slope)

    @staticmethod
    def backward(ctx, grad):
        return get_array_module(grad).where(ctx.positive, grad, grad * ctx.slope), None


def softplus(x, beta: float = 1.0, threshold: float = 20.0):
    """log(1 + e^(βx)) / β, linear where βx > threshold (``torch.nn.functional.softplus``)."""
    return Softplus.apply(x, check_real("softplus", "beta", beta),
                          check_real("softplus", "threshold", threshold))


def elu(x, alpha: float = 1.0):
    """x for x > 0, α (e^x − 1) otherwise (``torch.nn.functional.elu``)."""
    return Elu.apply(x, check_real("elu", "alpha", alpha))


def leaky_relu(x, negative_slope: float = 0.01):
    """x for x > 0, negative_slope · x otherwise (``torch.nn.functional.leaky_relu``)."""
    return LeakyRelu.apply(x, check_real("leaky_relu", "negative_slope", negative_slope))


def erf(x):
    """The error function erf x = (2/√π) ∫₀ˣ e^(-t²) dt elementwise, by the C library;
    d/dx = (2/√π) e^(-x²).
    """
    return Erf.apply(x)


def gelu(x, approximate: str = "none"):
    """GELU(x) = x Φ(x), exact (``'none'``) or with the tanh approximation."""
    if approximate not in GELU_APPROXIMATIONS:
        raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    return Gelu.apply(x, approximate)


def silu(x):
    """SiLU(x) = x σ(x)."""
    return Silu.apply(x)


# ---------------------------------------------------------------------- PReLU
class Prelu(Function):
    """PReLU(x) = max(0, x) + a · min(0, x) (He et al., 2015): x where x > 0, a x
    elsewhere, with learnable slopes ``a``, one for all of x or one per channel.

    ∂y/∂x = 1 where x > 0, a elsewhere; ∂y/∂a = 0 where x > 0, x elsewhere, summed over
    the elements that share a slope (``unbroadcast``). At 0 and NaN, x takes the slope
    branch, as in PyTorch.
    """

    @staticmethod
    def forward(ctx, x, weight):
        a = weight.reshape(slope_shape(x.ndim, weight.size))     # broadcasts against x
        ctx.save_for_backward(x, a)
        ctx.weight_shape = weight.shape
        return get_array_module(x).where(x > 0, x, a * x)

    @staticmethod
    def backward(ctx, grad):
        x, a = ctx.saved
        xp = get_array_module(x)
        positive = x > 0
        grad_x = xp.where(positive, grad, a * grad)
        grad_a = unbroadcast(xp.where(positive, 0, x * grad), a.shape)
        return grad_x, grad_a.reshape(ctx.weight_shape)


def slope_shape(ndim: int, slopes: int) -> tuple:
    """The shape of PReLU's slopes that broadcasts them against an input of ``ndim`` dims:
    () for one slope, (C, 1, ..., 1) for one per channel (dim 1)."""
    return () if slopes == 1 else (slopes,) + (1,) * (ndim - 2)


def prelu(input, weight):
    """max(0, x) + weight · min(0, x) elementwise, as ``torch.nn.functional.prelu``.

    ``weight`` holds one slope (shape () or (1,)) or one per channel (shape (C,), C the
    size of the input's dim 1); the output has the input's shape and dtype.
    """
    channels = input.shape[1] if input.ndim >= 2 else 1
    if weight.ndim > 1 or weight.numel() not in (1, channels):
        per_channel = (f"{channels}, the input's dim 1" if input.ndim >= 2
                       else "1: an input of under 2 dims has one channel")
        raise ValueError(
            f"prelu: weight of shape {tuple(weight.shape)} does not fit the input of shape "
            f"{tuple(input.shape)}: the weight must be 0-D or 1-D, with 1 slope or one per "
            f"channel ({per_channel})")
    if weight.dtype != input.dtype:
        raise TypeError(f"prelu: weight of dtype {weight.dtype} does not match the input's "
                        f"dtype {input.dtype}")
    return Prelu.apply(input, weight)
