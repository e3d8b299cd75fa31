"""The loops of CPU rung 3 (cpu_3_pipelined): the per-element formulas, the
loops over the columns of one or two rows, the chunks of rows, and the exact
argument types the drivers are compiled for.

Numba's on-disk cache checks only the file of the function it caches (the
drivers, in cpu_3_pipelined.py): after editing this file, touch that one.
"""
from __future__ import annotations

import numba
import numpy as np
from numba import njit, types

from ._arguments import FLOAT_DTYPES
from ._compile import compiled_per_dtype
from ._noalias import NOALIAS
from ._prefetch import CACHE_LINE, prefetch
from ._streaming_stores import store_streaming

# Division by zero gives inf/nan as in NumPy, rather than raising. fastmath is
# switched off explicitly: a Numba function that leaves it unset inherits the
# fastmath of the function that calls it.
_EXACT = dict(error_model="numpy", fastmath=False)
# Row sums may be reordered, so that LLVM vectorizes them. 'nnan' and 'ninf'
# are left out on purpose: a NaN or an Inf in a row must reach that row's
# output. So is 'contract': fusing g = dy·gain into Σ g would give Σ g and g
# different roundings, and dx = g − mean(g) would not vanish for H = 1.
_REDUCTION = dict(_EXACT, fastmath={"reassoc", "nsz", "arcp"})
# The loops over a row's columns write only arrays the kernels allocated
# themselves, so they promise LLVM that no two arrays overlap (_noalias). They
# are inlined into the loop over rows: a call per row, with every array
# passed as a dozen words, cost as much as a short row's work. (forceinline is
# LLVM's inliner, which keeps each function's own fastmath flags; Numba's
# inline='always' does not, and was 2-6x slower.)
_ROW_LOOP = dict(_REDUCTION, forceinline=True, **NOALIAS)
_ROW_LOOP_EXACT = dict(_EXACT, forceinline=True, **NOALIAS)
# Only the entry points called from Python are cached on disk (so that tests
# and examples don't pay the compile each run); the helpers are compiled into
# whichever entry point needs them.
_ENTRY = dict(_EXACT, cache=True)

# Row sums are taken in x's dtype over blocks of this many columns.
BLOCK = 1024

# dgain/dbias are first summed in x's dtype over FLUSH_ROWS rows (cheap, and
# exact enough for so few terms), then added to float64 sums per chunk: at
# most MAX_CHUNKS chunks of at least CHUNK_MIN_ELEMENTS elements, and at most
# PARTIALS_MAX_ELEMENTS float64 partial sums in all.
FLUSH_ROWS = 16
MAX_CHUNKS = 64
CHUNK_MIN_ELEMENTS = 1 << 14
PARTIALS_MAX_ELEMENTS = 1 << 18

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

# ----------------------------------------------------------------------------
# The loops over the columns of one or two rows, BLOCK columns at a time.
# Column indices are unsigned: Numba wraps a negative index around, and for an
# index it cannot prove non-negative (a block's start + k) that check keeps
# LLVM from vectorizing the loop (5x slower).
# ----------------------------------------------------------------------------

@njit(**_ROW_LOOP)
def _forward_sums(x, r, offset, ahead):
    """float64 (Σ over row ``ahead`` of x − x₀, Σ over row r of (x − μ)²).

    offset = μ − x₀ of row r, in x's dtype. The sums are taken in x's dtype
    over blocks of BLOCK columns, and the blocks' sums added in float64.
    """
    H, zero = x.shape[1], x.dtype.type(0)
    shift, ahead_shift = x[r, 0], x[ahead, 0]
    deviations = squares = 0.0
    for start in range(0, H, BLOCK):
        block_deviations = block_squares = zero
        for j in range(np.uintp(start), np.uintp(min(start + BLOCK, H))):
            block_deviations += x[ahead, j] - ahead_shift
            centered = _centered(x[r, j], shift, offset)
            block_squares += centered * centered
        deviations += block_deviations
        squares += block_squares
    return deviations, squares


@njit(**_ROW_LOOP_EXACT)
def _normalize_row(x, r, offset, scale, gain, bias, y, streaming):
    """y = gain · (x − μ)/σ + bias (paper, Eq. 4), in x's dtype."""
    shift = x[r, 0]
    for j in range(np.uintp(0), np.uintp(x.shape[1])):
        _store(y, r, j, _centered(x[r, j], shift, offset) * scale * gain[j] + bias[j], streaming)


@njit(**_ROW_LOOP)
def _backward_sums(dy, x, gain, row, ahead, dx, recent, streaming):
    """Row r's dx, with its dy·x̂ and dy added into ``recent``; row ``ahead``'s
    float64 (Σ g, Σ g·(x − μ)), g = dy·gain, summed in blocks as in _forward_sums.

    ``row`` = (r, offset, scale, mean(g), mean(g·x̂)) and ``ahead`` = (index,
    offset), with offset = μ − x₀ in x's dtype and scale = 1/σ. Without a row
    (None), only the sums of row ``ahead`` are taken: that starts a chunk.
    """
    H, zero = x.shape[1], x.dtype.type(0)
    ahead_r, ahead_offset = ahead
    ahead_shift = x[ahead_r, 0]
    sum_g = sum_g_centered = 0.0
    for start in range(0, H, BLOCK):
        block_g = block_g_centered = zero
        for j in range(np.uintp(start), np.uintp(min(start + BLOCK, H))):
            if row is not None:
                r, offset, scale, mean_g, mean_g_x_hat = row
                x_hat = _centered(x[r, j], x[r, 0], offset) * scale
                _store(dx, r, j, _input_gradient(dy[r, j] * gain[j], x_hat, scale, mean_g,
                                                 mean_g_x_hat), streaming)
                recent[0, j] += dy[r, j] * x_hat
                recent[1, j] += dy[r, j]
            g = dy[ahead_r, j] * gain[j]
            block_g += g
            block_g_centered += g * _centered(x[ahead_r, j], ahead_shift, ahead_offset)
        sum_g += block_g
        sum_g_centered += block_g_centered
    return sum_g, sum_g_centered


@njit(**_EXACT)
def _store(out, r, j, value, streaming):
    """out[r, j] = value, written straight to memory if ``streaming``
    (_streaming_stores). The branch does not stay in the loop: LLVM compiles the
    loop twice and picks one before it starts."""
    if streaming:
        store_streaming(out, r, j, value)
    else:
        out[r, j] = value


@njit(**_EXACT)
def _prefetch_row(a, r):
    """Ask for every cache line of row r of ``a`` (_prefetch)."""
    for j in range(np.uintp(0), np.uintp(a.shape[1]), np.uintp(CACHE_LINE // a.itemsize)):
        prefetch(a, r, j)


@njit(**_EXACT)
def _flush(recent, total):
    """total += recent (widening to float64), then recent = 0."""
    for i in range(recent.shape[0]):
        for j in range(recent.shape[1]):
            total[i, j] += recent[i, j]
            recent[i, j] = 0

@njit(**_EXACT)
def chunk_count(rows, H):
    """How many chunks the rows are cut into (dgain and dbias are summed per chunk).

    A function of the shape alone, so that the result is bitwise the same for
    any number of threads.
    """
    by_work = rows * H // CHUNK_MIN_ELEMENTS
    by_memory = PARTIALS_MAX_ELEMENTS // H
    return max(1, min(rows, MAX_CHUNKS, by_work, by_memory))


@njit(**_EXACT)
def _chunk_rows(chunk, chunks, rows):
    return chunk * rows // chunks, (chunk + 1) * rows // chunks




# The drivers (the entry points called from Python) are compiled for exactly
# the argument types they take: C-contiguous arrays of float32 or of float64,
# the statistics in float64; each dtype when a driver is first called with it
# (_compile). Inputs are typed read-only, so that read-only arrays are taken
# too (Numba types them apart; a writable array converts). Numba's dispatcher
# turns away anything else with a TypeError before a driver starts, so it is
# the type check of _run.
def _signature(arrays, plan=()):
    """The Numba signature of a driver for one float dtype: boolean(*arrays(dtype), *plan)."""
    return lambda dtype: types.boolean(*arrays(numba.from_dtype(dtype)), *plan)


def _driver(arrays, plan=(), **options):
    """Decorator: a driver taking ``arrays`` (then ``plan``), compiled per dtype."""
    return compiled_per_dtype(_signature(arrays, plan), FLOAT_DTYPES,
                              "the CPU LayerNorm kernels", **_ENTRY, **options)


def _input(dtype, ndim):
    return types.Array(dtype, ndim, "C", readonly=True)


def _output(dtype, ndim):
    return types.Array(dtype, ndim, "C")


def _forward_types(dtype):
    """x, gain, bias, eps, y, mean, rstd."""
    return (_input(dtype, 2), _input(dtype, 1), _input(dtype, 1), types.float64,
            _output(dtype, 2), _output(types.float64, 1), _output(types.float64, 1))


def _backward_types(dtype):
    """dy, x, mean, rstd, gain, dx, gain_grads."""
    return (_input(dtype, 2), _input(dtype, 2), _input(types.float64, 1),
            _input(types.float64, 1), _input(dtype, 1), _output(dtype, 2), _output(dtype, 2))


# The parallel drivers' further arguments: streaming (bool) and ahead_rows (int).
_PLAN = (types.boolean, types.intp)

