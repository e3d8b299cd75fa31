"""CPU rung 1: the textbook kernels, one parallel loop over rows.

Rows are independent: each sample is normalized by its own statistics
(Ba, Kiros & Hinton, 2016, Eqs. 3-4), so Numba's ``prange`` hands whole rows to
threads and no thread ever waits for another; an input too small to be worth
waking the threads loops over its rows on one (_cpu_rung). Each row takes
three passes:

1. the mean, of the row shifted by its first element x₀ (shifted values are of
   the size of σ, so their mean loses nothing: reference.py);
2. the variance about that mean — two passes, never mean(x²) − mean(x)², which
   cancels to noise when the mean is large against σ;
3. y = g · (x − μ)/σ + b.

Sums are taken in float64 whatever x's dtype: the squares of a float32 row
cannot overflow them, and a row that overflows float64 gets NaN
(:func:`reciprocal_std`), never the bias. The backward takes two passes
per row: the sums of g = dy·gain and of g·x̂, then
dx = (g − mean(g) − x̂ · mean(g·x̂)) / σ (reference.layer_norm_backward).
dgain and dbias add up over *rows*, which threads share: each chunk of rows
adds into a partial sum of its own, and the chunks' sums are added in order
(_cpu_rung): no atomics, and the same bits for any number of threads.

RMSNorm is the same code with the mean left out (``centered=False``): no
shift, μ = 0 and no mean(g) term in dx.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from .._compile import first_calls_noticed
from . import _arguments as checked
from ._cpu_rung import Drivers, add_chunks, run_backward, run_forward

__all__ = ["layer_norm_forward", "layer_norm_backward", "rms_norm_forward",
           "rms_norm_backward"]

# error_model="numpy": a division by zero gives inf/nan as in NumPy instead of
# raising; no fastmath, so every sum and formula is computed as written.
_EXACT = dict(error_model="numpy", fastmath=False)
_DRIVER = dict(_EXACT, cache=True)        # compiled once, then loaded from Numba's cache
_NOTICED = first_calls_noticed("the CPU LayerNorm kernels")


@njit(**_EXACT)
def reciprocal_std(squares, H, eps):
    """1/σ = 1/sqrt(Σ_j (x_j − μ)² / H + ε) (Eq. 4), from a row's float64 sum of
    squares. NaN where that sum overflowed: 1/sqrt(∞) would be 0, and the row
    would come out as the bias, with a zero gradient."""
    if squares == np.inf:
        return np.nan
    return 1.0 / np.sqrt(squares / H + eps)


@njit(**_EXACT)
def normalize_row(r, x, gain, bias, eps, centered, y, mean, rstd):
    """Row r of the forward, its statistics summed in float64."""
    H = x.shape[1]
    shift = x[r, 0] if centered else x.dtype.type(0)     # x₀, in x's dtype
    offset = 0.0                                         # μ − x₀
    if centered:
        total = 0.0
        for j in range(H):
            total += x[r, j] - shift
        offset = total / H
    squares = 0.0
    for j in range(H):
        centered_value = (x[r, j] - shift) - offset
        squares += centered_value * centered_value
    scale = reciprocal_std(squares, H, eps)              # 1/σ
    mean[r] = shift + offset
    rstd[r] = scale
    for j in range(H):
        y[r, j] = ((x[r, j] - shift) - offset) * scale * gain[j] + bias[j]


@njit(**_EXACT)
def input_gradient_row(r, dy, x, mean, rstd, gain, centered, dx):
    """dx of row r = (g − mean(g) − x̂ · mean(g·x̂)) / σ with g = dy·gain, its
    sums taken in float64."""
    H = x.shape[1]
    mu, scale = mean[r], rstd[r]
    sum_g = sum_g_x_hat = 0.0
    for j in range(H):
        g = dy[r, j] * gain[j]
        sum_g += g
        sum_g_x_hat += g * ((x[r, j] - mu) * scale)
    mean_g = sum_g / H if centered else 0.0
    mean_g_x_hat = sum_g_x_hat / H
    for j in range(H):
        x_hat = (x[r, j] - mu) * scale
        dx[r, j] = scale * (dy[r, j] * gain[j] - mean_g - x_hat * mean_g_x_hat)


@njit(**_EXACT)
def _backward_chunk(chunk, dy, x, mean, rstd, gain, centered, dx, parts):
    """dx of one chunk's rows; their Σ dy·x̂ and Σ dy into parts[chunk]."""
    rows, H = x.shape
    chunks = parts.shape[0]
    for r in range(chunk * rows // chunks, (chunk + 1) * rows // chunks):
        input_gradient_row(r, dy, x, mean, rstd, gain, centered, dx)
        for j in range(H):
            parts[chunk, 0, j] += dy[r, j] * ((x[r, j] - mean[r]) * rstd[r])
            parts[chunk, 1, j] += dy[r, j]


# The faster rungs sum a row in x's dtype, and a float32 sum of squares
# overflows where this rung's float64 one does not (the squares of values past
# about 1.8·10¹⁹ exceed float32's largest number, 3.4·10³⁸). After their own
# pass over the rows they hand such rows to these two, which do them again
# with this rung's float64 sums.

@njit(**_EXACT)
def renormalize_overflowed_rows(x, gain, bias, eps, centered, y, mean, rstd):
    """Rows whose 1/σ came out NaN, normalized again: a sum of squares that
    overflowed gives NaN (reciprocal_std), and so does a mean that did. (A row
    holding a NaN or an infinity comes out NaN again.)"""
    for r in range(x.shape[0]):
        if np.isnan(rstd[r]):
            normalize_row(r, x, gain, bias, eps, centered, y, mean, rstd)


@njit(**_EXACT)
def regrade_overflowed_rows(dy, x, mean, rstd, gain, centered, dx):
    """dx of the rows whose gradient sums overflowed, again: an infinite sum
    makes dx infinite or NaN in every column of its row, so the first column
    tells. (dgain and dbias do not use those sums.)"""
    for r in range(x.shape[0]):
        if not np.isfinite(dx[r, 0]):
            input_gradient_row(r, dy, x, mean, rstd, gain, centered, dx)


# The drivers: a serial and a parallel loop over the rows (over the chunks of
# rows, for the backward).

@_NOTICED
@njit(**_DRIVER)
def _forward_serial(x, gain, bias, eps, centered, y, mean, rstd):
    for r in range(x.shape[0]):
        normalize_row(r, x, gain, bias, eps, centered, y, mean, rstd)


@_NOTICED
@njit(parallel=True, **_DRIVER)
def _forward_parallel(x, gain, bias, eps, centered, y, mean, rstd):
    for r in prange(x.shape[0]):
        normalize_row(r, x, gain, bias, eps, centered, y, mean, rstd)


@_NOTICED
@njit(**_DRIVER)
def _backward_serial(dy, x, mean, rstd, gain, centered, dx, parts, gain_grads):
    for chunk in range(parts.shape[0]):
        _backward_chunk(chunk, dy, x, mean, rstd, gain, centered, dx, parts)
    add_chunks(parts, gain_grads)


@_NOTICED
@njit(parallel=True, **_DRIVER)
def _backward_parallel(dy, x, mean, rstd, gain, centered, dx, parts, gain_grads):
    for chunk in prange(parts.shape[0]):
        _backward_chunk(chunk, dy, x, mean, rstd, gain, centered, dx, parts)
    add_chunks(parts, gain_grads)


DRIVERS = Drivers((_forward_serial, _forward_parallel), (_backward_serial, _backward_parallel))


def layer_norm_forward(x, gain, bias, eps):
    """``(y, mean, rstd)`` of each row of x (rows, H), as reference.layer_norm_forward."""
    return checked.layer_norm_forward(run_forward, DRIVERS, x, gain, bias, eps)


def layer_norm_backward(dy, x, mean, rstd, gain):
    """``(dx, dgain, dbias)``, as reference.layer_norm_backward."""
    return checked.layer_norm_backward(run_backward, DRIVERS, dy, x, mean, rstd, gain)


def rms_norm_forward(x, gain, eps):
    """``(y, rstd)``, as reference.rms_norm_forward."""
    return checked.rms_norm_forward(run_forward, DRIVERS, x, gain, eps)


def rms_norm_backward(dy, x, rstd, gain):
    """``(dx, dgain)``, as reference.rms_norm_backward."""
    return checked.rms_norm_backward(run_backward, DRIVERS, dy, x, rstd, gain)
