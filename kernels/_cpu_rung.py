"""What every CPU rung shares: the public functions around a rung's drivers.

A rung compiles four *drivers*, a serial and a parallel loop over the rows for
the forward and for the backward (the rung's own module shows them)::

    forward(x, gain, bias, eps, centered, y, mean, rstd)
    backward(dy, x, mean, rstd, gain, centered, dx, parts, gain_grads)

``centered`` is False for RMSNorm: no shift, μ = 0, no mean(g) term. The
backward adds each chunk's Σ dy·x̂ and Σ dy into ``parts[chunk]`` (float64 zeros);
the chunks are fixed by the shape alone (:func:`chunk_count`) and added in
order (:func:`add_chunks`) into ``gain_grads`` = (dgain, dbias), so that they
are the same bits for any thread count. The input's size alone picks the
serial or the parallel driver. The outputs come from NumPy's allocator unless
a rung passes another (:func:`kernel_functions`). (Numba's on-disk cache checks only the file of
the function it caches: after editing this file, touch the rungs' files.)
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ._arguments import public_kernels

__all__ = ["PARALLEL_MIN_ELEMENTS", "chunk_count", "add_chunks", "kernel_functions"]

# Below this many elements the rows are looped over on one thread. Handing work
# to the worker threads costs time, more where they sleep than where they spin
# (tinynet/runtime/threads.py). Timed alone on two cores, one thread was faster up to
# about 512 K elements; inside training steps, where each pass comes after a
# product, two were faster from 64 K: the GPT's LayerNorms (768 x 128) and GELUs
# (768 x 512) shared out made its iteration faster, while the MLP's and the
# convnet's steps hardly changed (iterations alternated in one process).
PARALLEL_MIN_ELEMENTS = 1 << 16
MAX_CHUNKS = 64                 # dgain/dbias partial sums: at most this many chunks,
CHUNK_MIN_ELEMENTS = 1 << 14    # each of at least this many elements,
PARTIALS_MAX_ELEMENTS = 1 << 18  # and at most this many float64 partial sums in all


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
    (Loops, not array expressions: Numba compiles those much more slowly.)"""
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
