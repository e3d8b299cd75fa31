"""CPU rung 3: pipelined passes.

The idea this rung adds to rung 2 (cpu_2_vectorized): fewer passes over a row.
Rung 2 reads a row three times in the forward (Σ d, Σ (d − mean d)², y) and
twice in the backward (Σ g and Σ g·x̂, then dx), where d = x − x₀ (x₀: the
row's first element) and g = dy·gain. A long row, or a short row whose next
one is still on its way from memory, makes the core wait at the start of each
pass. Here the passes of neighbouring rows share one loop, *software-pipelined*
within a chunk of rows: the loop that finishes row r also starts row r + 1.

* forward, per row r: one loop sums (d − mean d)² of row r and d of row
  r + 1; then y = gain·x̂ + bias for row r (_cpu_pipelined_loops.forward_sums,
  normalize_row).
* backward, per row r: one loop writes dx of row r, adds dy·x̂ and dy of row r
  into the running sums of dgain and dbias, and sums g and g·x̂ of row r + 1
  (backward_sums).

So the forward takes two loops per row instead of three and the backward one
instead of two, and each row's first read from memory overlaps with work on a
row already in the cache. The sums, their order and dgain/dbias are rung 2's;
so are the drivers' arguments, the public functions around them (_cpu_rung),
RMSNorm (``centered`` False), and rung 1's second look at rows whose sums
overflowed. Faster than rung 2 at (4096, 1024), (64, 128) and (64, 512)
(benchmarks/kernel_ladder.py).
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from .._compile import first_calls_noticed
from . import _arguments as checked
from ._cpu_pipelined_loops import (
    _EXACT,
    FLUSH_ROWS,
    backward_sums,
    chunk_rows,
    flush,
    forward_sums,
    normalize_row,
    shift_of,
)
from ._cpu_rung import Drivers, add_chunks, chunk_count, run_backward, run_forward
from .cpu_1_textbook import (
    reciprocal_std,
    regrade_overflowed_rows,
    renormalize_overflowed_rows,
)

__all__ = ["layer_norm_forward", "layer_norm_backward", "rms_norm_forward",
           "rms_norm_backward"]

_DRIVER = dict(_EXACT, cache=True)
_NOTICED = first_calls_noticed("the CPU LayerNorm kernels")


@njit(**_EXACT)
def forward_chunk(chunk, chunks, x, gain, bias, eps, centered, y, mean, rstd):
    """The rows of one chunk; Σ d of row r + 1 is summed in the loop over row r."""
    start, stop = chunk_rows(chunk, chunks, x.shape[0])
    if start == stop:
        return
    H, as_dtype = x.shape[1], x.dtype.type
    # The first row's Σ d; the squares summed alongside (about x₀) are discarded.
    first = (start, shift_of(x, start, centered))
    deviations, _ = forward_sums(x, (start, first[1], as_dtype(0)), first)
    for r in range(start, stop):
        shift = shift_of(x, r, centered)
        offset = deviations / H if centered else 0.0                     # μ − x₀
        following = min(r + 1, stop - 1)
        row = (r, shift, as_dtype(offset))
        deviations, squares = forward_sums(x, row, (following, shift_of(x, following, centered)))
        mean[r] = shift + offset
        rstd[r] = reciprocal_std(squares, H, eps)
        normalize_row(x, row, as_dtype(rstd[r]), gain, bias, y)


@njit(**_EXACT)
def _ahead(x, mean, r, centered):
    """(r, x₀, μ − x₀) of row r, the last two in x's dtype."""
    shift = shift_of(x, r, centered)
    return r, shift, x.dtype.type(mean[r] - shift)


@njit(**_EXACT)
def backward_chunk(chunk, dy, x, mean, rstd, gain, centered, dx, parts):
    """dx of one chunk's rows, and in parts[chunk] (float64) their Σ dy·x̂ and Σ dy;
    Σ g and Σ g·x̂ of row r + 1 are summed in the loop that writes dx of row r."""
    start, stop = chunk_rows(chunk, parts.shape[0], x.shape[0])
    if start == stop:
        return
    H, as_dtype = x.shape[1], x.dtype.type
    recent = np.zeros((2, H), x.dtype)
    ahead = _ahead(x, mean, start, centered)
    sum_g, sum_g_centered = backward_sums(dy, x, gain, None, ahead, dx, recent)
    for r in range(start, stop):
        scale = rstd[r]
        mean_g = sum_g / H if centered else 0.0
        row = ahead + (as_dtype(scale), as_dtype(mean_g), as_dtype(scale * sum_g_centered / H))
        ahead = _ahead(x, mean, min(r + 1, stop - 1), centered)
        sum_g, sum_g_centered = backward_sums(dy, x, gain, row, ahead, dx, recent)
        if (r - start + 1) % FLUSH_ROWS == 0 or r == stop - 1:
            flush(recent, parts[chunk])


# The drivers, with rung 1's arguments (_cpu_rung): a serial and a parallel
# loop over the chunks of rows.

@_NOTICED
@njit(**_DRIVER)
def _forward_serial(x, gain, bias, eps, centered, y, mean, rstd):
    chunks = chunk_count(*x.shape)
    for chunk in range(chunks):
        forward_chunk(chunk, chunks, x, gain, bias, eps, centered, y, mean, rstd)
    renormalize_overflowed_rows(x, gain, bias, eps, centered, y, mean, rstd)


@_NOTICED
@njit(parallel=True, **_DRIVER)
def _forward_parallel(x, gain, bias, eps, centered, y, mean, rstd):
    chunks = chunk_count(*x.shape)
    for chunk in prange(chunks):
        forward_chunk(chunk, chunks, x, gain, bias, eps, centered, y, mean, rstd)
    renormalize_overflowed_rows(x, gain, bias, eps, centered, y, mean, rstd)


@_NOTICED
@njit(**_DRIVER)
def _backward_serial(dy, x, mean, rstd, gain, centered, dx, parts, gain_grads):
    for chunk in range(parts.shape[0]):
        backward_chunk(chunk, dy, x, mean, rstd, gain, centered, dx, parts)
    regrade_overflowed_rows(dy, x, mean, rstd, gain, centered, dx)
    add_chunks(parts, gain_grads)


@_NOTICED
@njit(parallel=True, **_DRIVER)
def _backward_parallel(dy, x, mean, rstd, gain, centered, dx, parts, gain_grads):
    for chunk in prange(parts.shape[0]):
        backward_chunk(chunk, dy, x, mean, rstd, gain, centered, dx, parts)
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
