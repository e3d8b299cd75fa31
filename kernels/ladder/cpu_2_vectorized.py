"""CPU rung 2: vectorized row sums.

The idea this rung adds to rung 1: let the compiler vectorize the sums over a
row. Rung 1 adds one number at a time into one float64 sum; each addition
waits for the one before it (some 4 cycles), and a float32 row is converted
element by element. A vector unit adds 8 float32 (or 4 float64) numbers at
once, into 8 (or 4) partial sums, several vectors in flight: that is a
reordering of the sum, which LLVM may only do when allowed to reassociate
(the ``reassoc`` fast-math flag). So here:

* the loops that sum over a row are compiled with ``reassoc`` and take their
  sums in x's dtype, over blocks of BLOCK columns (each partial sum then adds
  at most BLOCK / 8 numbers, of the size of σ); the blocks' sums are added in
  float64;
* the per-element formulas, (x − x₀) − (μ − x₀) above all, are compiled
  *without* it, in functions of their own: LLVM's flags belong to each
  instruction and survive inlining, so the sums may be reordered but the shift
  that keeps float32 rows far from zero exact (rung 1, reference.py) may not be
  regrouped away. 'nnan' and 'ninf' stay off: a NaN must reach its row.

Sums in float32 overflow where rung 1's float64 ones do not (a row's squares,
past about 1.8·10¹⁹ per element): after its pass over the rows, each driver
hands the rows whose sums overflowed to rung 1, which does them again
(cpu_1_textbook.renormalize_overflowed_rows, regrade_overflowed_rows).

The passes, the drivers and dgain/dbias are rung 1's; several times faster
than it at the rows of the paper's models (benchmarks/kernel_ladder.py).
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from .._compile import first_calls_noticed
from . import _arguments as checked
from ._cpu_rung import Drivers, add_chunks, run_backward, run_forward
from .cpu_1_textbook import (
    reciprocal_std,
    regrade_overflowed_rows,
    renormalize_overflowed_rows,
)

__all__ = ["layer_norm_forward", "layer_norm_backward", "rms_norm_forward",
           "rms_norm_backward"]

BLOCK = 1024

_EXACT = dict(error_model="numpy", fastmath=False)
# Sums may be reordered; 'nsz' lets -0.0 + x fold; forceinline puts them into
# the row's loop, where a call per row would cost what a short row's work does.
_SUMS = dict(error_model="numpy", fastmath={"reassoc", "nsz"}, forceinline=True)
_DRIVER = dict(_EXACT, cache=True)
_NOTICED = first_calls_noticed("the CPU LayerNorm kernels")


@njit(**_EXACT)
def _centered(value, shift, offset):
    """value − μ as (value − x₀) − (μ − x₀), exactly in this order."""
    return (value - shift) - offset


@njit(**_EXACT)
def _gradient(g, x_hat, scale, mean_g, mean_g_x_hat):
    """dx = (g − mean(g) − x̂ · mean(g·x̂)) / σ, with scale = 1/σ."""
    return scale * (g - mean_g - x_hat * mean_g_x_hat)


# Column indices are unsigned: Numba wraps a negative index around, and the
# check for one (a block's start + j) keeps LLVM from vectorizing the loop.

@njit(**_SUMS)
def _sum_shifted(x, r, shift):
    """Σ_j (x[r, j] − x₀), in blocks."""
    H, total = x.shape[1], 0.0
    for start in range(0, H, BLOCK):
        block = x.dtype.type(0)
        for j in range(np.uintp(start), np.uintp(min(start + BLOCK, H))):
            block += x[r, j] - shift
        total += block
    return total


@njit(**_SUMS)
def _sum_squares(x, r, shift, offset):
    """Σ_j (x[r, j] − μ)², in blocks."""
    H, total = x.shape[1], 0.0
    for start in range(0, H, BLOCK):
        block = x.dtype.type(0)
        for j in range(np.uintp(start), np.uintp(min(start + BLOCK, H))):
            value = _centered(x[r, j], shift, offset)
            block += value * value
        total += block
    return total


@njit(**_SUMS)
def _gradient_sums(dy, x, gain, r, shift, offset):
    """(Σ_j g, Σ_j g·(x − μ)) of row r, g = dy·gain, in blocks."""
    H, sum_g, sum_g_centered = x.shape[1], 0.0, 0.0
    for start in range(0, H, BLOCK):
        block_g = block_g_centered = x.dtype.type(0)
        for j in range(np.uintp(start), np.uintp(min(start + BLOCK, H))):
            g = dy[r, j] * gain[j]
            block_g += g
            block_g_centered += g * _centered(x[r, j], shift, offset)
        sum_g += block_g
        sum_g_centered += block_g_centered
    return sum_g, sum_g_centered


@njit(**_EXACT)
def _forward_row(r, x, gain, bias, eps, centered, y, mean, rstd):
    H, as_dtype = x.shape[1], x.dtype.type
    shift = x[r, 0] if centered else as_dtype(0)
    offset = _sum_shifted(x, r, shift) / H if centered else 0.0     # μ − x₀
    squares = _sum_squares(x, r, shift, as_dtype(offset))
    scale = reciprocal_std(squares, H, eps)
    mean[r] = shift + offset
    rstd[r] = scale
    offset, scale = as_dtype(offset), as_dtype(scale)
    for j in range(np.uintp(0), np.uintp(H)):
        y[r, j] = _centered(x[r, j], shift, offset) * scale * gain[j] + bias[j]


FLUSH_ROWS = 16


@njit(**_EXACT)
def _backward_rows(r, dy, x, mean, rstd, gain, centered, dx, recent):
    H, as_dtype = x.shape[1], x.dtype.type
    shift = x[r, 0] if centered else as_dtype(0)
    offset = as_dtype(mean[r] - shift)
    sum_g, sum_g_centered = _gradient_sums(dy, x, gain, r, shift, offset)
    mean_g = as_dtype(sum_g / H if centered else 0.0)
    mean_g_x_hat = as_dtype(rstd[r] * sum_g_centered / H)
    scale = as_dtype(rstd[r])
    for j in range(np.uintp(0), np.uintp(H)):
        x_hat = _centered(x[r, j], shift, offset) * scale
        dx[r, j] = _gradient(dy[r, j] * gain[j], x_hat, scale, mean_g, mean_g_x_hat)
        recent[0, j] += dy[r, j] * x_hat
        recent[1, j] += dy[r, j]


@njit(**_EXACT)
def _backward_chunk(chunk, dy, x, mean, rstd, gain, centered, dx, parts):
    rows, H = x.shape
    chunks = parts.shape[0]
    start, stop = chunk * rows // chunks, (chunk + 1) * rows // chunks
    recent = np.zeros((2, H), x.dtype)
    for r in range(start, stop):
        _backward_rows(r, dy, x, mean, rstd, gain, centered, dx, recent)
        if (r - start + 1) % FLUSH_ROWS == 0 or r == stop - 1:
            for i in range(2):
                for j in range(H):
                    parts[chunk, i, j] += recent[i, j]
                    recent[i, j] = 0


@_NOTICED
@njit(**_DRIVER)
def _forward_serial(x, gain, bias, eps, centered, y, mean, rstd):
    for r in range(x.shape[0]):
        _forward_row(r, x, gain, bias, eps, centered, y, mean, rstd)
    renormalize_overflowed_rows(x, gain, bias, eps, centered, y, mean, rstd)


@_NOTICED
@njit(parallel=True, **_DRIVER)
def _forward_parallel(x, gain, bias, eps, centered, y, mean, rstd):
    for r in prange(x.shape[0]):
        _forward_row(r, x, gain, bias, eps, centered, y, mean, rstd)
    renormalize_overflowed_rows(x, gain, bias, eps, centered, y, mean, rstd)


@_NOTICED
@njit(**_DRIVER)
def _backward_serial(dy, x, mean, rstd, gain, centered, dx, parts, gain_grads):
    for chunk in range(parts.shape[0]):
        _backward_chunk(chunk, dy, x, mean, rstd, gain, centered, dx, parts)
    regrade_overflowed_rows(dy, x, mean, rstd, gain, centered, dx)
    add_chunks(parts, gain_grads)


@_NOTICED
@njit(parallel=True, **_DRIVER)
def _backward_parallel(dy, x, mean, rstd, gain, centered, dx, parts, gain_grads):
    for chunk in prange(parts.shape[0]):
        _backward_chunk(chunk, dy, x, mean, rstd, gain, centered, dx, parts)
    regrade_overflowed_rows(dy, x, mean, rstd, gain, centered, dx)
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
