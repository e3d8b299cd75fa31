"""The loops of CPU rung 3 (cpu_3_pipelined): the per-element formulas, the
loops over the columns of two rows at once, and the chunks of rows they run in.

Numba's on-disk cache checks only the file of the function it caches (the
drivers, in cpu_3_pipelined.py and cpu_5_typed.py): after editing this file,
touch those.
"""
from __future__ import annotations

import numpy as np
from numba import njit

# Division by zero gives inf/nan as in NumPy, rather than raising. fastmath is
# switched off explicitly: a Numba function that leaves it unset inherits the
# fastmath of the function that calls it.
_EXACT = dict(error_model="numpy", fastmath=False)
# Row sums may be reordered, so that LLVM vectorizes them. 'nnan' and 'ninf'
# are left out on purpose: a NaN or an Inf in a row must reach that row's
# output. So is 'contract': fusing g = dy·gain into Σ g would give Σ g and g
# different roundings, and dx = g − mean(g) would not vanish for H = 1.
_REDUCTION = dict(_EXACT, fastmath={"reassoc", "nsz", "arcp"})
# The loops over a row's columns are inlined into the loop over rows: a call
# per row, with every array passed as a dozen words, costs as much as a short
# row's work. (forceinline is LLVM's inliner, which keeps each function's own
# fastmath flags; Numba's inline='always' does not, and is much slower.)
_ROW_LOOP = dict(_REDUCTION, forceinline=True)
_ROW_LOOP_EXACT = dict(_EXACT, forceinline=True)

# Row sums are taken in x's dtype over blocks of this many columns.
BLOCK = 1024

# dgain/dbias are first summed in x's dtype over FLUSH_ROWS rows (cheap, and
# exact enough for so few terms), then added to the chunk's float64 sums.
FLUSH_ROWS = 16

# ----------------------------------------------------------------------------
# Per-element formulas. They are compiled without fastmath, and keep that
# when LLVM inlines them into the fastmath loops below: reassociation may
# reorder the loops' sums, but not regroup these.
# ----------------------------------------------------------------------------

@njit(**_EXACT)
def _centered(value, shift, offset):
    """value − μ, computed as (value − x₀) − (μ − x₀) with offset = μ − x₀.

    value − x₀ is exact for nearby values and μ − x₀ is of the size of σ, so it
    rounds harmlessly to x's dtype. Regrouped as value − (x₀ + offset), μ would
    be rounded to x's dtype instead: for float32 rows at 10⁴ an error of 10⁻³,
    where σ may be 10⁻².
    """
    return (value - shift) - offset


@njit(**_EXACT)
def _input_gradient(g, x_hat, scale, mean_g, mean_g_x_hat):
    """dx = (g − mean(g) − x̂ · mean(g·x̂)) / σ, with g = dy·gain and scale = 1/σ."""
    return scale * (g - mean_g - x_hat * mean_g_x_hat)


@njit(**_EXACT)
def shift_of(x, r, centered):
    """x₀, the first element of row r, by which it is shifted; 0 for RMSNorm."""
    return x[r, 0] if centered else x.dtype.type(0)

# ----------------------------------------------------------------------------
# The loops over the columns of two rows, BLOCK columns at a time.
# Column indices are unsigned: Numba wraps a negative index around, and for an
# index it cannot prove non-negative (a block's start + k) that check keeps
# LLVM from vectorizing the loop.
# ----------------------------------------------------------------------------

@njit(**_ROW_LOOP)
def forward_sums(x, row, ahead):
    """float64 (Σ over row ``ahead`` of x − x₀, Σ over row r of (x − μ)²).

    ``row`` = (r, x₀, offset) with offset = μ − x₀ of row r, in x's dtype;
    ``ahead`` = (index, x₀). The sums are taken in x's dtype over blocks of
    BLOCK columns, and the blocks' sums added in float64.
    """
    H, zero = x.shape[1], x.dtype.type(0)
    r, shift, offset = row
    ahead_r, ahead_shift = ahead
    deviations = squares = 0.0
    for start in range(0, H, BLOCK):
        block_deviations = block_squares = zero
        for j in range(np.uintp(start), np.uintp(min(start + BLOCK, H))):
            block_deviations += x[ahead_r, j] - ahead_shift
            centered = _centered(x[r, j], shift, offset)
            block_squares += centered * centered
        deviations += block_deviations
        squares += block_squares
    return deviations, squares


@njit(**_ROW_LOOP_EXACT)
def normalize_row(x, row, scale, gain, bias, y):
    """y = gain · (x − μ)/σ + bias (paper, Eq. 4), in x's dtype; ``row`` as in
    forward_sums, scale = 1/σ."""
    r, shift, offset = row
    for j in range(np.uintp(0), np.uintp(x.shape[1])):
        y[r, j] = _centered(x[r, j], shift, offset) * scale * gain[j] + bias[j]


@njit(**_ROW_LOOP)
def backward_sums(dy, x, gain, row, ahead, dx, recent):
    """Row r's dx, with its dy·x̂ and dy added into ``recent``; row ``ahead``'s
    float64 (Σ g, Σ g·(x − μ)), g = dy·gain, summed in blocks as in forward_sums.

    ``row`` = (r, x₀, offset, scale, mean(g), mean(g·x̂)) and ``ahead`` = (index,
    x₀, offset), with offset = μ − x₀ in x's dtype and scale = 1/σ. Without a
    row (None), only the sums of row ``ahead`` are taken: that starts a chunk.
    """
    H, zero = x.shape[1], x.dtype.type(0)
    ahead_r, ahead_shift, ahead_offset = ahead
    sum_g = sum_g_centered = 0.0
    for start in range(0, H, BLOCK):
        block_g = block_g_centered = zero
        for j in range(np.uintp(start), np.uintp(min(start + BLOCK, H))):
            if row is not None:
                r, shift, offset, scale, mean_g, mean_g_x_hat = row
                x_hat = _centered(x[r, j], shift, offset) * scale
                dx[r, j] = _input_gradient(dy[r, j] * gain[j], x_hat, scale, mean_g,
                                           mean_g_x_hat)
                recent[0, j] += dy[r, j] * x_hat
                recent[1, j] += dy[r, j]
            g = dy[ahead_r, j] * gain[j]
            block_g += g
            block_g_centered += g * _centered(x[ahead_r, j], ahead_shift, ahead_offset)
        sum_g += block_g
        sum_g_centered += block_g_centered
    return sum_g, sum_g_centered


@njit(**_EXACT)
def flush(recent, total):
    """total += recent (widening to float64), then recent = 0."""
    for i in range(recent.shape[0]):
        for j in range(recent.shape[1]):
            total[i, j] += recent[i, j]
            recent[i, j] = 0


@njit(**_EXACT)
def chunk_rows(chunk, chunks, rows):
    """The rows ``start:stop`` of chunk number ``chunk`` of ``chunks``."""
    return chunk * rows // chunks, (chunk + 1) * rows // chunks
