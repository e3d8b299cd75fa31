"""CPU rung 3: pipelined passes, and what is left of a call's fixed cost.

The idea this rung adds to rung 2 (cpu_2_vectorized): fewer passes over a row.
Within a chunk of rows the passes are *software-pipelined*: the loop that
finishes row r also starts row r + 1, so that reading from memory never pauses
while a cached row is worked on.

* forward, per row r: one loop sums (d − mean d)² of row r and d = x − x₀ of
  row r + 1 (x₀: the row's first element); then y = gain·x̂ + bias for row r.
* backward, per row r: one loop writes dx of row r, adds dy·x̂ and dy of row r
  into the running sums of dgain and dbias, and sums g = dy·gain and g·x̂ of row
  r + 1.

Sums, chunks and dgain/dbias as in rung 2 (_cpu_pipelined_loops). And for the
fixed cost: the drivers are compiled for exactly the types they take and check
shapes (and eps) themselves, so arguments are checked in Python only when a
driver refuses them (_run); the row loops promise LLVM that their arrays do not
overlap (_noalias); outputs too large for the cache are written with streaming
stores (_streams); on one thread, large inputs with short rows are prefetched
(_prefetch_rows). No RMSNorm of its own: the ladder gives rung 2's.
"""
from __future__ import annotations

import numba
import numpy as np
from numba import njit, prange

from . import _cpu_rung
from ._arguments import backward_arguments, forward_arguments
from ._cpu_pipelined_loops import (
    _EXACT,
    _PLAN,
    FLUSH_ROWS,
    _backward_sums,
    _backward_types,
    _chunk_rows,
    _driver,
    _flush,
    _forward_sums,
    _forward_types,
    _normalize_row,
    _prefetch_row,
    chunk_count,
)
from ._cpu_rung import add_chunks
from ._recycling import empty_like
from ._streaming_stores import rows_are_aligned, store_fence

__all__ = ["layer_norm_forward", "layer_norm_backward"]

# Below this many elements a call runs serially (see _cpu_rung).
PARALLEL_MIN_ELEMENTS = _cpu_rung.PARALLEL_MIN_ELEMENTS

# Outputs this large are written past the cache, with streaming stores
# (_streaming_stores); smaller ones are left in the cache for whoever reads them next.
STREAMING_MIN_BYTES = 1 << 24

# On one thread, inputs this large are prefetched PREFETCH_AHEAD_BYTES ahead
# of the row being worked on (_prefetch), if a row of all the arrays read
# (x; dy and x) comes to at most PREFETCH_MAX_ROW_BYTES. Measured
# (benchmarks/layernorm.py --prefetch): longer rows and smaller arrays gained
# little or lost, and so did two threads.
PREFETCH_MIN_BYTES = 1 << 25
PREFETCH_MAX_ROW_BYTES = 2048
PREFETCH_AHEAD_BYTES = 4096


@njit(**_EXACT)
def _forward_chunk(chunk, chunks, x, gain, bias, eps, y, mean, rstd, streaming, ahead_rows):
    """Rows of one chunk; Σd of row r + 1 is summed in the loop over row r.
    ``streaming``: whether y is written with streaming stores (_streams);
    ``ahead_rows``: how far ahead rows are prefetched, 0 for not (_prefetch_rows)."""
    start, stop = _chunk_rows(chunk, chunks, x.shape[0])
    H, as_dtype = x.shape[1], x.dtype.type
    if start == stop:
        return
    # The first row's Σd; the squares summed alongside (of μ = x₀) are discarded.
    deviations, _ = _forward_sums(x, start, as_dtype(0), start)
    for r in range(start, stop):
        if ahead_rows and r + ahead_rows < stop:
            _prefetch_row(x, r + ahead_rows)
        offset = deviations / H
        deviations, squares = _forward_sums(x, r, as_dtype(offset), min(r + 1, stop - 1))
        mean[r] = x[r, 0] + offset
        rstd[r] = 1.0 / np.sqrt(squares / H + eps)
        _normalize_row(x, r, as_dtype(offset), as_dtype(rstd[r]), gain, bias, y, streaming)
    if streaming:
        store_fence()


@njit(**_EXACT)
def _forward_arguments_fit(x, gain, bias, eps, y, mean, rstd):
    """Whether the arrays' shapes fit together and eps ≥ 0 (not NaN)."""
    rows, H = x.shape
    return (H > 0 and gain.shape[0] == H and bias.shape[0] == H and y.shape == x.shape
            and mean.shape[0] == rows and rstd.shape[0] == rows and eps >= 0)


@_driver(_forward_types)
def _forward_serial(x, gain, bias, eps, y, mean, rstd):
    """The forward of an input too small to share out (_use_parallel), and so
    also too small to stream or prefetch. False, and nothing done, if the
    arguments don't fit (_forward_arguments_fit)."""
    if not _forward_arguments_fit(x, gain, bias, eps, y, mean, rstd):
        return False
    chunks = chunk_count(*x.shape)
    for chunk in range(chunks):
        _forward_chunk(chunk, chunks, x, gain, bias, eps, y, mean, rstd, False, 0)
    return True


@_driver(_forward_types, _PLAN, parallel=True)
def _forward_parallel(x, gain, bias, eps, y, mean, rstd, streaming, ahead_rows):
    """The forward with chunks of rows on threads; as _forward_serial, and
    ``streaming``, ``ahead_rows`` as in _forward_chunk."""
    if not _forward_arguments_fit(x, gain, bias, eps, y, mean, rstd):
        return False
    chunks = chunk_count(*x.shape)
    for chunk in prange(chunks):
        _forward_chunk(chunk, chunks, x, gain, bias, eps, y, mean, rstd, streaming, ahead_rows)
    return True


@njit(**_EXACT)
def _backward_chunk(chunk, dy, x, mean, rstd, gain, dx, parts, streaming, ahead_rows):
    """dx of one chunk's rows, and in parts[chunk] (float64) their Σ dy·x̂ and Σ dy.
    ``streaming`` and ``ahead_rows`` as in _forward_chunk."""
    start, stop = _chunk_rows(chunk, parts.shape[0], x.shape[0])
    H, as_dtype = x.shape[1], x.dtype.type
    if start == stop:
        return
    recent = np.zeros((2, H), x.dtype)
    ahead = (start, as_dtype(mean[start] - x[start, 0]))
    sum_g, sum_g_centered = _backward_sums(dy, x, gain, None, ahead, dx, recent, streaming)
    for r in range(start, stop):
        if ahead_rows and r + ahead_rows < stop:
            _prefetch_row(dy, r + ahead_rows)
            _prefetch_row(x, r + ahead_rows)
        scale = rstd[r]
        row = (r, ahead[1], as_dtype(scale), as_dtype(sum_g / H),
               as_dtype(scale * sum_g_centered / H))
        following = min(r + 1, stop - 1)
        ahead = (following, as_dtype(mean[following] - x[following, 0]))
        sum_g, sum_g_centered = _backward_sums(dy, x, gain, row, ahead, dx, recent, streaming)
        if (r - start + 1) % FLUSH_ROWS == 0 or r == stop - 1:
            _flush(recent, parts[chunk])
    if streaming:
        store_fence()


@njit(**_EXACT)
def _backward_shapes_fit(dy, x, mean, rstd, gain, dx, gain_grads):
    rows, H = x.shape
    return (H > 0 and dy.shape == x.shape and mean.shape[0] == rows
            and rstd.shape[0] == rows and gain.shape[0] == H and dx.shape == x.shape
            and gain_grads.shape == (2, H))


@_driver(_backward_types)
def _backward_serial(dy, x, mean, rstd, gain, dx, gain_grads):
    """The backward of a small input, as _forward_serial: False, and nothing
    done, if the shapes don't fit."""
    if not _backward_shapes_fit(dy, x, mean, rstd, gain, dx, gain_grads):
        return False
    parts = np.zeros((chunk_count(*x.shape), 2, x.shape[1]))
    for chunk in range(parts.shape[0]):
        _backward_chunk(chunk, dy, x, mean, rstd, gain, dx, parts, False, 0)
    add_chunks(parts, gain_grads)
    return True


@_driver(_backward_types, _PLAN, parallel=True)
def _backward_parallel(dy, x, mean, rstd, gain, dx, gain_grads, streaming, ahead_rows):
    """The backward with chunks of rows on threads, as _forward_parallel."""
    if not _backward_shapes_fit(dy, x, mean, rstd, gain, dx, gain_grads):
        return False
    parts = np.zeros((chunk_count(*x.shape), 2, x.shape[1]))
    for chunk in prange(parts.shape[0]):
        _backward_chunk(chunk, dy, x, mean, rstd, gain, dx, parts, streaming, ahead_rows)
    add_chunks(parts, gain_grads)
    return True


def _use_parallel(size: int) -> bool:
    """Whether to run the parallel driver: by size alone, not by thread count.

    The two drivers are compiled separately, and LLVM may vectorize their sums
    differently (they agree to an ulp, not always to the bit). Deciding by size,
    with chunks that depend on the shape alone (chunk_count), makes a result
    the same bits on one thread and on many.
    """
    return size >= PARALLEL_MIN_ELEMENTS


def _streams(out) -> bool:
    """Whether to write ``out`` with streaming stores: only an output too large
    to stay in the cache (STREAMING_MIN_BYTES), and only with aligned rows."""
    return out.nbytes >= STREAMING_MIN_BYTES and rows_are_aligned(out)


def _prefetch_rows(x, arrays: int) -> int:
    """How many rows ahead of the row being worked on to prefetch the ``arrays``
    inputs of x's shape (1: x; 2: dy and x), 0 for none (see PREFETCH_MIN_BYTES).

    Only on one thread: one core alone keeps too few rows on their way from
    memory, two keep enough. Prefetching changes no result, so this choice,
    unlike _use_parallel's, may depend on the thread count.
    """
    if x.nbytes < PREFETCH_MIN_BYTES or numba.get_num_threads() > 1:
        return 0
    row_bytes = x.shape[1] * x.itemsize
    if row_bytes * arrays > PREFETCH_MAX_ROW_BYTES:
        return 0
    return max(1, PREFETCH_AHEAD_BYTES // row_bytes)


def layer_norm_forward(x, gain, bias, eps):
    """Normalize each row of ``x`` (rows, H); return ``(y, mean, rstd)``.

    ``gain``/``bias`` are (H,) arrays of x's dtype or None; a missing one acts
    as 1 (resp. 0), which is exact. ``mean`` and ``rstd`` are float64.
    """
    outputs = _forward(x, gain, bias, eps)
    if outputs is None:
        # Refused (_run): forward_arguments raises an error that names the
        # problem, or makes the arguments acceptable.
        outputs = _forward(*forward_arguments(x, gain, bias, eps))
        assert outputs is not None, "the forward refused checked arguments"
    return outputs


def layer_norm_backward(dy, x, mean, rstd, gain):
    """Gradients of :func:`layer_norm_forward`: ``(dx, dgain, dbias)``.

    ``dgain`` and ``dbias`` have gain's dtype, and are None when gain is None.
    """
    gradients = _backward(dy, x, mean, rstd, gain)
    if gradients is None:
        dy, x, mean, rstd, checked_gain, affine = backward_arguments(dy, x, mean, rstd, gain)
        gradients = _backward(dy, x, mean, rstd, checked_gain)
        assert gradients is not None, "the backward refused checked arguments"
        if not affine:
            gradients = (gradients[0], None, None)
    return gradients


def _forward(x, gain, bias, eps):
    """``(y, mean, rstd)`` from a driver, or None if it refused the arguments."""
    if not _is_c_matrix(x) or gain is None or bias is None:
        return None
    rows = len(x)
    y, mean, rstd = empty_like(x), np.empty(rows), np.empty(rows)
    if _use_parallel(x.size):
        ran = _run(_forward_parallel, x, gain, bias, eps, y, mean, rstd, _streams(y),
                   _prefetch_rows(x, 1))
    else:
        ran = _run(_forward_serial, x, gain, bias, eps, y, mean, rstd)
    return (y, mean, rstd) if ran else None


def _backward(dy, x, mean, rstd, gain):
    """``(dx, dgain, dbias)`` from a driver, or None if it refused the arguments."""
    if not (_is_c_matrix(dy) and _is_c_matrix(x)) or gain is None:
        return None
    dx, gain_grads = empty_like(x), np.empty((2, x.shape[1]), x.dtype)
    if _use_parallel(x.size):
        ran = _run(_backward_parallel, dy, x, mean, rstd, gain, dx, gain_grads, _streams(dx),
                   _prefetch_rows(x, 2))
    else:
        ran = _run(_backward_serial, dy, x, mean, rstd, gain, dx, gain_grads)
    return (dx, gain_grads[0], gain_grads[1]) if ran else None


def _is_c_matrix(a) -> bool:
    return type(a) is np.ndarray and a.ndim == 2 and a.flags.c_contiguous


def _run(driver, *arguments) -> bool:
    """Run a driver on arguments nobody has checked; False if it refused them.

    The drivers take only the types they were compiled for (_signature), and
    only arrays whose shapes fit together, with eps ≥ 0: anything else is
    refused before a driver has written anything. Checking everything first,
    in Python, costs about as much as the kernels' work on a small input
    (tools/count_instructions.py). But a refusal by Numba's dispatcher costs far
    more (it takes 100-250 µs to explain one), so _forward and _backward look for
    the likely ones: a missing gain or bias, and x or dy a view that is not
    C-contiguous.
    """
    try:
        return driver(*arguments)
    except TypeError:
        return False


