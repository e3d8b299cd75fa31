"""What every CPU rung shares: the public functions around a rung's drivers.

A rung compiles four *drivers*, a serial and a parallel loop over the rows for
the forward and for the backward (the rung's own module shows them)::

    forward(x, gain, bias, eps, centered, y, mean, rstd)
    backward(dy, x, mean, rstd, gain, centered, dx, parts, gain_grads)

``centered`` is False for RMSNorm: no shift, μ = 0, no mean(g) term. The
backward adds each chunk's Σ dy·x̂ and Σ dy into ``parts[chunk]`` (float64 zeros);
the chunks are fixed by the shape alone (:func:`chunk_count`) and added in
order (:func:`add_chunks`) into ``gain_grads`` = (dgain, dbias), so that they
are the same bits for any thread count.

Rung 1 sums each row in float64, one element at a time
(:func:`row_sums_in_float64`, :func:`gradient_sums_in_float64`); the faster
rungs sum in x's dtype, and where such a sum overflows (the squares of float32
values past about 1.8·10¹⁹ exceed float32's largest number, 3.4·10³⁸) they
take that row again with rung 1's sums, which do not. A row that overflows even
float64 (a float64 row past about 10¹⁵⁴) gets NaN (:func:`reciprocal_std`),
never a finite wrong number. The input's size alone picks the
serial or the parallel driver. The outputs come from NumPy's allocator unless
a rung passes another (:func:`kernel_functions`). (Numba's on-disk cache checks only the file of
the function it caches: after editing this file, touch the rungs' files.)
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ._arguments import public_kernels

__all__ = ["PARALLEL_MIN_ELEMENTS", "chunk_count", "add_chunks", "kernel_functions",
           "reciprocal_std", "row_sums_in_float64", "gradient_sums_in_float64"]

# Below this many elements the rows are looped over on one thread. Handing work
# to the worker threads costs about 10 µs where they spin, tens where they sleep
# (tinynet/threads.py). Timed alone on two cores, one thread was faster up to
# about 512 K elements; inside training steps, where each pass comes after a
# product, two were faster from 64 K: the GPT's LayerNorms (768 x 128) and GELUs
# (768 x 512) shared out took its iteration 5 % less, while the MLP's and the
# convnet's steps stayed within 1.5 % (iterations alternated in one process).
PARALLEL_MIN_ELEMENTS = 1 << 16
MAX_CHUNKS = 64                 # dgain/dbias partial sums: at most this many chunks,
CHUNK_MIN_ELEMENTS = 1 << 14    # each of at least this many elements,
PARTIALS_MAX_ELEMENTS = 1 << 18  # and at most this many float64 partial sums in all


# No fastmath: every sum and formula is computed as written; a division by
# zero gives inf/nan as in NumPy instead of raising.
_EXACT = dict(error_model="numpy", fastmath=False)


@njit(**_EXACT)
def reciprocal_std(squares, H, eps):
    """1/σ = 1/sqrt(Σ_j (x_j − μ)² / H + ε) (Ba, Kiros & Hinton, 2016, Eq. 4),
    from a row's float64 sum of squares. NaN where that sum overflowed: 1/sqrt(∞)
    would be 0, and the row would come out as β with a zero gradient."""
    if squares == np.inf:
        return np.nan
    return 1.0 / np.sqrt(squares / H + eps)


@njit(**_EXACT)
def row_sums_in_float64(x, r, shift, centered):
    """(μ − x₀, Σ_j (x[r, j] − μ)²) of row r, each summed in float64 one element
    at a time: the mean of the row shifted by x₀ = ``shift``, then the squares
    about it (never mean(x²) − mean(x)², which cancels). Without ``centered``
    (RMSNorm): (0, Σ_j x[r, j]²)."""
    H = x.shape[1]
    offset = 0.0
    if centered:
        total = 0.0
        for j in range(H):
            total += x[r, j] - shift
        offset = total / H
    squares = 0.0
    for j in range(H):
        value = (x[r, j] - shift) - offset
        squares += value * value
    return offset, squares


@njit(**_EXACT)
def gradient_sums_in_float64(dy, x, gain, r, mean):
    """(Σ_j g, Σ_j g·(x[r, j] − μ)) of row r with g = dy·gain and μ = ``mean``,
    summed in float64 one element at a time."""
    sum_g = sum_g_centered = 0.0
    for j in range(x.shape[1]):
        g = dy[r, j] * gain[j]
        sum_g += g
        sum_g_centered += g * (x[r, j] - mean)
    return sum_g, sum_g_centered


@njit(cache=True)
def chunk_count(rows, H):
    """How many chunks of rows the gain gradients are summed in: a function of
    the shape alone, so that the result does not depend on the thread count."""
    by_work = rows * H // CHUNK_MIN_ELEMENTS
    by_memory = PARTIALS_MAX_ELEMENTS // (2 * H)
    return max(1, min(rows, MAX_CHUNKS, by_work, by_memory))


@njit(cache=True)
def add_chunks(parts, gain_grads):
    """gain_grads = (dgain, dbias) = the chunks' sums, added in chunk order.
    (Loops, not array expressions: Numba compiles those some 10x slower.)"""
    for i in range(2):
        for j in range(parts.shape[2]):
            total = parts[0, i, j]
            for chunk in range(1, parts.shape[0]):
                total += parts[chunk, i, j]
            gain_grads[i, j] = total


def kernel_functions(forward_drivers, backward_drivers, empty_like=np.empty_like):
    """The four public kernels of a rung, from its (serial, parallel) drivers:
    ``layer_norm_forward, layer_norm_backward, rms_norm_forward, rms_norm_backward``,
    with the calling convention of kernels/reference.py; y and dx come from
    ``empty_like`` (an uninitialized C-order array of its argument's shape and dtype)."""

    def driver(drivers, x):
        serial, parallel = drivers
        return parallel if x.size >= PARALLEL_MIN_ELEMENTS else serial

    def run_forward(x, gain, bias, eps, centered):
        rows = x.shape[0]
        y, mean, rstd = empty_like(x), np.empty(rows), np.empty(rows)
        driver(forward_drivers, x)(x, gain, bias, eps, centered, y, mean, rstd)
        return y, mean, rstd

    def run_backward(dy, x, mean, rstd, gain, centered):
        dx, gain_grads = empty_like(x), np.empty((2, x.shape[1]), x.dtype)
        parts = np.zeros((chunk_count(*x.shape), 2, x.shape[1]))
        driver(backward_drivers, x)(dy, x, mean, rstd, gain, centered, dx, parts, gain_grads)
        return dx, gain_grads[0], gain_grads[1]

    return public_kernels(run_forward, run_backward)
