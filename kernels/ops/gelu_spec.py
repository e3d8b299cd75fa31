"""The exact GELU and erf: the spec of ``gelu_cpu`` (NumPy/CuPy array code)."""
from __future__ import annotations

import functools
import math

import numpy as np

from tinynet.backend import get_array_module

__all__ = ["erf", "gelu_forward", "gelu_backward", "SQRT_HALF", "ONE_OVER_SQRT_TWO_PI"]

SQRT_HALF = math.sqrt(0.5)
ONE_OVER_SQRT_TWO_PI = 1.0 / math.sqrt(2.0 * math.pi)


@functools.cache
def _erf_ufunc(xp_name):
    """The C library's erf as a ufunc: Numba compiles ``math.erf`` (kept in its
    on-disk cache) on the CPU; CuPy ships one."""
    if xp_name == "cupy":
        from cupyx.scipy.special import erf as cupy_erf
        return cupy_erf
    import numba

    @numba.vectorize(["float32(float32)", "float64(float64)"], cache=True)
    def c_erf(x):
        return math.erf(x)
    return c_erf


def erf(x):
    """erf(x) = (2/√π) ∫₀ˣ e^(−t²) dt elementwise, by the C library's ``erf``
    (``erff`` in float32), as PyTorch computes it. Integer inputs give float64."""
    if x.dtype.kind != "f":
        x = x.astype(np.float64)
    return _erf_ufunc(get_array_module(x).__name__)(x)


def gelu_forward(x):
    """GELU(x) = x Φ(x) (Hendrycks & Gimpel, 2016), Φ(x) = (1 + erf(x/√2))/2.
    Returns (y, Φ(x)): the backward reuses Φ."""
    cdf = 0.5 * (1 + erf(x * SQRT_HALF))
    return x * cdf, cdf


def gelu_backward(grad, x, cdf):
    """dGELU/dx = Φ(x) + x φ(x), φ(x) = e^(−x²/2)/√(2π), times the incoming ``grad``."""
    xp = get_array_module(x)
    pdf = xp.exp(-0.5 * x * x) * ONE_OVER_SQRT_TWO_PI
    return grad * (cdf + x * pdf)
