"""What every CPU rung shares: running a rung's drivers on checked arguments.

A rung compiles four *drivers*, a serial and a parallel loop over the rows for
the forward and for the backward (the rung's own module shows them)::

    forward(x, gain, bias, eps, centered, y, mean, rstd)
    backward(dy, x, mean, rstd, gain, centered, dx, parts, gain_grads)

``centered`` is False for RMSNorm: no shift, μ = 0, no mean(g) term. The
backward adds each chunk's Σ dy·x̂ and Σ dy into ``parts[chunk]`` (float64 zeros);
the chunks are fixed by the shape alone (:func:`chunk_count`) and added in
order (:func:`add_chunks`) into ``gain_grads`` = (dgain, dbias), so that they
are the same bits for any thread count. The input's size alone picks the
serial or the parallel driver (:func:`run_forward`, :func:`run_backward`); the
outputs come from NumPy's allocator unless a rung's :class:`Drivers` name another.
(Numba's on-disk cache checks only the file of the function it caches: after
editing this file, touch the rungs' files.)
"""
from __future__ import annotations

from typing import Callable, NamedTuple

import numpy as np
from numba import njit

from .._common import PARALLEL_MIN_ELEMENTS

__all__ = ["Drivers", "chunk_count", "add_chunks", "run_forward", "run_backward"]

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


class Drivers(NamedTuple):
    """A rung's compiled loops, (serial, parallel) for each direction, and
    ``empty_like``, which gives its outputs y and dx (an uninitialized C-order
    array of its argument's shape and dtype)."""
    forward: tuple
    backward: tuple
    empty_like: Callable = np.empty_like


def run_forward(drivers, x, gain, bias, eps, centered):
    """``(y, mean, rstd)`` of checked arguments by a rung's :class:`Drivers`."""
    serial, parallel = drivers.forward
    rows = x.shape[0]
    y, mean, rstd = drivers.empty_like(x), np.empty(rows), np.empty(rows)
    driver = parallel if x.size >= PARALLEL_MIN_ELEMENTS else serial
    driver(x, gain, bias, eps, centered, y, mean, rstd)
    return y, mean, rstd


def run_backward(drivers, dy, x, mean, rstd, gain, centered):
    """``(dx, dgain, dbias)`` of checked arguments by a rung's :class:`Drivers`."""
    serial, parallel = drivers.backward
    dx, gain_grads = drivers.empty_like(x), np.empty((2, x.shape[1]), x.dtype)
    parts = np.zeros((chunk_count(*x.shape), 2, x.shape[1]))
    driver = parallel if x.size >= PARALLEL_MIN_ELEMENTS else serial
    driver(dy, x, mean, rstd, gain, centered, dx, parts, gain_grads)
    return dx, gain_grads[0], gain_grads[1]
