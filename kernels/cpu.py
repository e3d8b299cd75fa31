"""Numba CPU kernels: LayerNorm forward and backward, and the fused Adam step.

Same calling convention as :mod:`tinynet.kernels.reference` (the spec)::

    layer_norm_forward(x, gain, bias, eps) -> (y, mean, rstd)
    layer_norm_backward(dy, x, mean, rstd, gain) -> (dx, dgain, dbias)

Rows are independent (the point of layer normalization: statistics per sample,
Eq. 3 of Ba, Kiros & Hinton, 2016), so the rows are cut into chunks and the
chunks run in parallel. Within a chunk the passes over a row are
*software-pipelined*: the loop that finishes row r also starts row r + 1, so
that reading from memory never pauses while a cached row is worked on.

* forward, per row r: one loop sums (d − mean d)² of row r and d = x − x₀ of
  row r + 1 (x₀: the row's first element); then y = gain·x̂ + bias for row r.
* backward, per row r: one loop writes dx of row r, adds dy·x̂ and dy of row r
  into the running sums of dgain and dbias, and sums g = dy·gain and g·x̂ of row
  r + 1.

Sums over a row are taken in x's dtype over blocks of BLOCK columns (LLVM keeps
8 to 32 partial sums in vector registers, so each adds at most 128 numbers) and
the blocks' sums are added in float64. dgain and dbias are summed per fixed
*chunk* of rows, not per thread, and the chunks' sums are added in order at
the end. The input's size alone picks the serial or parallel driver, so a
result is the same, bit for bit, for any number of threads (see _use_parallel).
The drivers are compiled for exactly the types they take and check the shapes
(and eps) themselves; the arguments are checked in Python only if a driver
refuses them (_run), since for a small input those checks cost as much as the
work.
Outputs too large for the cache are written with streaming stores (_streams);
on one thread, large inputs with short rows are prefetched (_prefetch_rows).
docs/kernels.md explains the choices.
"""
from __future__ import annotations

import numba
import numpy as np
from numba import njit, prange, types

from . import _cpu_rung
from ._arguments import FLOAT_DTYPES, backward_arguments, forward_arguments
from ._compile import compiled_per_dtype
from ._noalias import NOALIAS
from ._prefetch import CACHE_LINE, prefetch
from ._recycling import empty_like
from ._streaming_stores import rows_are_aligned, store_fence, store_streaming

__all__ = ["layer_norm_forward", "layer_norm_backward", "adam_step"]

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

# Below this many elements a call runs serially (see _cpu_rung).
PARALLEL_MIN_ELEMENTS = _cpu_rung.PARALLEL_MIN_ELEMENTS

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

# ----------------------------------------------------------------------------
# Chunks of rows, serial or parallel
# ----------------------------------------------------------------------------

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
def _add_chunks(parts, gain_grads):
    """gain_grads = (dgain, dbias) = the chunks' sums, added in chunk order."""
    total = parts[0].copy()
    for chunk in range(1, parts.shape[0]):
        total += parts[chunk]
    gain_grads[:] = total


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
    _add_chunks(parts, gain_grads)
    return True


@_driver(_backward_types, _PLAN, parallel=True)
def _backward_parallel(dy, x, mean, rstd, gain, dx, gain_grads, streaming, ahead_rows):
    """The backward with chunks of rows on threads, as _forward_parallel."""
    if not _backward_shapes_fit(dy, x, mean, rstd, gain, dx, gain_grads):
        return False
    parts = np.zeros((chunk_count(*x.shape), 2, x.shape[1]))
    for chunk in prange(parts.shape[0]):
        _backward_chunk(chunk, dy, x, mean, rstd, gain, dx, parts, streaming, ahead_rows)
    _add_chunks(parts, gain_grads)
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


# ----------------------------------------------------------------------------
# Public kernels
# ----------------------------------------------------------------------------

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
    (tools/count_instructions.py). But a refusal by Numba's dispatcher costs far more (it
    takes 100-250 µs to explain one), so _forward and _backward first look for
    the likely ones: a missing gain or bias, and x or dy a view that is not
    C-contiguous.
    """
    try:
        return driver(*arguments)
    except TypeError:
        return False


# ----------------------------------------------------------------------------
# Adam
# ----------------------------------------------------------------------------

@njit(**_EXACT)
def _adam_element(i, param, grad, exp_avg, exp_avg_sq, hyper):
    step_size, bias_correction2_sqrt, beta1, one_minus_beta1, beta2, one_minus_beta2, \
        eps, weight_decay, tiny = hyper
    g = grad[i]
    if weight_decay != 0:
        g = g + weight_decay * param[i]
    m = beta1 * exp_avg[i] + one_minus_beta1 * g
    v = beta2 * exp_avg_sq[i] + one_minus_beta2 * g * g
    # Flush subnormal moments to zero. A weight whose gradient is always 0 (an
    # MNIST border pixel) has m decaying by β₁ per step through the subnormal
    # range, where x86 arithmetic is ~15x slower; such an m moves the weight by
    # less than 1e-30.
    exp_avg[i] = m if abs(m) >= tiny else m * 0
    exp_avg_sq[i] = v if v >= tiny else v * 0
    denom = np.sqrt(exp_avg_sq[i]) / bias_correction2_sqrt + eps
    param[i] -= step_size * exp_avg[i] / denom


@njit(**_ENTRY)
def _adam_serial(param, grad, exp_avg, exp_avg_sq, hyper):
    for i in range(param.size):
        _adam_element(i, param, grad, exp_avg, exp_avg_sq, hyper)


@njit(parallel=True, **_ENTRY)
def _adam_parallel(param, grad, exp_avg, exp_avg_sq, hyper):
    for i in prange(param.size):
        _adam_element(i, param, grad, exp_avg, exp_avg_sq, hyper)


def adam_step(param, grad, exp_avg, exp_avg_sq, step, lr, beta1, beta2, eps,
              weight_decay):
    """One Adam update in place, in one pass over the flattened arrays.

    The rule of :func:`tinynet.kernels.reference.adam_step` (PyTorch's):
    m ← β₁m + (1 − β₁)g, v ← β₂v + (1 − β₂)g²,
    θ ← θ − (lr / (1 − β₁ᵗ)) · m / (sqrt(v) / sqrt(1 − β₂ᵗ) + ε),
    with g ← g + λθ first when weight_decay λ ≠ 0. Arithmetic is in the
    parameters' dtype, with the constants rounded to it once; subnormal
    moments are flushed to zero (see _adam_element).
    """
    arrays = {"param": param, "grad": grad, "exp_avg": exp_avg, "exp_avg_sq": exp_avg_sq}
    for name, a in arrays.items():
        if a.shape != param.shape or a.dtype != param.dtype:
            raise ValueError(f"adam_step: {name} has shape {a.shape} and dtype {a.dtype}; "
                             f"param has shape {param.shape} and dtype {param.dtype}")
        if not a.flags.c_contiguous:
            raise ValueError(f"adam_step updates in place and needs contiguous arrays; "
                             f"{name} is not")
    if param.dtype not in FLOAT_DTYPES:
        raise ValueError(f"adam_step takes float32 or float64 arrays; param is {param.dtype}")
    as_dtype = param.dtype.type
    hyper = tuple(as_dtype(h) for h in (
        lr / (1 - beta1 ** step), np.sqrt(1 - beta2 ** step),
        beta1, 1 - beta1, beta2, 1 - beta2, eps, weight_decay, np.finfo(param.dtype).tiny))
    run = _adam_parallel if _use_parallel(param.size) else _adam_serial
    run(param.reshape(-1), grad.reshape(-1), exp_avg.reshape(-1), exp_avg_sq.reshape(-1),
        hyper)
