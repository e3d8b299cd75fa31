"""Numba CPU kernels: LayerNorm forward and backward, and the fused Adam step.

Same calling convention as :mod:`tinynet.kernels.reference` (the spec)::

    layer_norm_forward(x, gain, bias, eps) -> (y, mean, rstd)
    layer_norm_backward(dy, x, mean, rstd, gain) -> (dx, dgain, dbias)

Rows are independent (the point of layer normalization: statistics per sample,
Eq. 3 of Ba, Kiros & Hinton, 2016), so the work is split by rows. One thread
takes a *tile* of a few rows (about TILE_ELEMENTS numbers) through all passes
before it moves on, so that only the first pass reads from memory and the
others find the tile in its L1/L2 cache:

* forward: (1) sum d = x − x₀ (the shift x₀ is the row's first element);
  (2) sum (d − mean(d))²; (3) write y = gain·x̂ + bias.
* backward: (1) sum g = dy·gain and g·d; (2) write dx and add dy·x̂ and dy into
  the running sums of dgain and dbias.

Sums over a row are float64; per-element arithmetic stays in x's dtype where
that is exact enough (see each function). dgain and dbias are summed per fixed
*chunk* of rows, not per thread, and the chunks' sums are added in order at
the end: the result is the same, bit for bit, for any number of threads and
for the serial and parallel drivers. docs/kernels.md explains the choices.
"""
from __future__ import annotations

import numba
import numpy as np
from numba import njit, prange

from ._arguments import FLOAT_DTYPES, backward_arguments, forward_arguments

__all__ = ["layer_norm_forward", "layer_norm_backward", "adam_step"]

# Division by zero gives inf/nan as in NumPy, rather than raising.
_EXACT = dict(cache=True, error_model="numpy")
# Row sums may be reordered, so that LLVM vectorizes them. 'nnan' and 'ninf'
# are left out on purpose: a NaN or an Inf in a row must reach that row's output.
_REDUCTION = dict(_EXACT, fastmath={"reassoc", "contract", "nsz", "arcp"})

# Below this many elements a call runs serially: waking the thread pool costs
# several microseconds, more than a small batch (say 4 x 1000) takes in total.
PARALLEL_MIN_ELEMENTS = 1 << 16

# A tile: the rows one thread takes through all passes while they are cached.
TILE_ELEMENTS = 1 << 13

# dgain/dbias are first summed in x's dtype over about FLUSH_ROWS rows (cheap,
# and exact enough for so few terms), then added to float64 sums per chunk:
# at most MAX_CHUNKS chunks of at least CHUNK_MIN_ELEMENTS elements, and at
# most PARTIALS_MAX_ELEMENTS float64 partial sums in all.
FLUSH_ROWS = 16
MAX_CHUNKS = 64
CHUNK_MIN_ELEMENTS = 1 << 14
PARTIALS_MAX_ELEMENTS = 1 << 18

# ----------------------------------------------------------------------------
# The passes over one tile (rows start..stop-1). Reductions and elementwise
# passes are separate functions because only reductions may use fastmath (see
# _normalize_tile). They take the 2-D arrays and row bounds, not row views:
# a view costs Numba reference-count updates, as much as a short row's math.
# ----------------------------------------------------------------------------

@njit(**_REDUCTION)
def _statistics_tile(x, start, stop, eps, shifted_mean, mean, rstd):
    """μ and 1/σ of each row, and μ − x₀ in shifted_mean[r − start] (paper, Eq. 3).

    Shifted two-pass: with the shift x₀ = x[r, 0] and d = x − x₀ (in x's
    dtype, as the reference), μ = x₀ + mean(d) and σ² = mean((d − mean(d))²).
    A float32 d is widened to float64 before it is added. Should fastmath
    regroup (x − x₀) − mean(d) (it cannot across the widening of a float32 d),
    every deviation would move by the same rounding error δ of μ, and σ² by
    only δ²: harmless here, unlike in _normalize_tile.
    """
    n = x.shape[1]
    for r in range(start, stop):
        shift = x[r, 0]
        total = 0.0
        for j in range(n):
            total += x[r, j] - shift
        offset = total / n
        squares = 0.0
        for j in range(n):
            centered = (x[r, j] - shift) - offset
            squares += centered * centered
        shifted_mean[r - start] = offset
        mean[r] = shift + offset
        rstd[r] = 1.0 / np.sqrt(squares / n + eps)


@njit(**_EXACT)
def _normalize_tile(x, start, stop, shifted_mean, rstd, gain, bias, y):
    """y = gain · (x − μ)/σ + bias (paper, Eq. 4), in x's dtype.

    x − μ is computed as (x − x₀) − (μ − x₀): x − x₀ is exact for nearby
    values and μ − x₀ is of the size of σ, so it rounds harmlessly to x's
    dtype. No fastmath here: it would reassociate this into x − (x₀ + (μ − x₀))
    and round μ to x's dtype (for float32 rows at 10⁴ an error of 10⁻³, where
    σ may be 10⁻²).
    """
    as_dtype = x.dtype.type
    for r in range(start, stop):
        shift = x[r, 0]
        offset, scale = as_dtype(shifted_mean[r - start]), as_dtype(rstd[r])
        for j in range(x.shape[1]):
            y[r, j] = ((x[r, j] - shift) - offset) * scale * gain[j] + bias[j]


@njit(**_REDUCTION)
def _gradient_sums_tile(dy, x, start, stop, gain, sums):
    """sums[:, r − start] = Σ g, Σ g·d over row r; g = dy·gain, d = x − x₀; float64.

    mean(g·x̂) follows as (Σ g·d − (μ − x₀) Σ g) / (σH): the reduction sees
    only the single subtraction d, which fastmath cannot reassociate.
    """
    for r in range(start, stop):
        shift = x[r, 0]
        g_total = 0.0
        g_d_total = 0.0
        for j in range(x.shape[1]):
            g = dy[r, j] * gain[j]
            g_total += g
            g_d_total += g * (x[r, j] - shift)
        sums[0, r - start] = g_total
        sums[1, r - start] = g_d_total


@njit(**_EXACT)
def _input_gradient_tile(dy, x, start, stop, mean, rstd, gain, sums, dx, recent):
    """dx = (g − mean(g) − x̂ · mean(g·x̂)) / σ; add dy·x̂, dy to recent[0], recent[1].

    x̂ as in _normalize_tile, in x's dtype; no fastmath, for the same reason.
    """
    as_dtype = x.dtype.type
    n = x.shape[1]
    for r in range(start, stop):
        shift = x[r, 0]
        offset = mean[r] - shift
        sum_g, sum_g_d = sums[0, r - start], sums[1, r - start]
        mean_g = sum_g / n
        mean_g_xhat = rstd[r] * (sum_g_d - offset * sum_g) / n
        offset, scale = as_dtype(offset), as_dtype(rstd[r])
        a, b = as_dtype(mean_g), as_dtype(mean_g_xhat)
        for j in range(n):
            x_hat = ((x[r, j] - shift) - offset) * scale
            dx[r, j] = scale * (dy[r, j] * gain[j] - a - x_hat * b)
            recent[0, j] += dy[r, j] * x_hat
            recent[1, j] += dy[r, j]


@njit(**_EXACT)
def _flush(recent, total):
    """total += recent (widening to float64), then recent = 0."""
    for i in range(recent.shape[0]):
        for j in range(recent.shape[1]):
            total[i, j] += recent[i, j]
            recent[i, j] = 0


# ----------------------------------------------------------------------------
# Drivers: tiles (forward) and chunks of tiles (backward), serial or parallel
# ----------------------------------------------------------------------------

@njit(**_EXACT)
def _tile_rows(H):
    return max(1, TILE_ELEMENTS // H)


@njit(**_EXACT)
def _forward_tile(tile, x, gain, bias, eps, y, mean, rstd):
    start = tile * _tile_rows(x.shape[1])
    stop = min(start + _tile_rows(x.shape[1]), x.shape[0])
    shifted_mean = np.empty(stop - start)
    _statistics_tile(x, start, stop, eps, shifted_mean, mean, rstd)
    _normalize_tile(x, start, stop, shifted_mean, rstd, gain, bias, y)


@njit(**_EXACT)
def _forward_serial(tiles, x, gain, bias, eps, y, mean, rstd):
    for tile in range(tiles):
        _forward_tile(tile, x, gain, bias, eps, y, mean, rstd)


@njit(parallel=True, **_EXACT)
def _forward_parallel(tiles, x, gain, bias, eps, y, mean, rstd):
    for tile in prange(tiles):
        _forward_tile(tile, x, gain, bias, eps, y, mean, rstd)


@njit(**_EXACT)
def _backward_chunk(chunk, dy, x, mean, rstd, gain, dx, parts):
    """The rows of one chunk, tile by tile: dx, and in parts[chunk] Σ dy·x̂ and Σ dy."""
    chunks, (rows, H) = parts.shape[0], x.shape
    chunk_start, chunk_stop = chunk * rows // chunks, (chunk + 1) * rows // chunks
    sums = np.empty((2, _tile_rows(H)))
    recent = np.zeros((2, H), x.dtype)
    unflushed = 0
    for start in range(chunk_start, chunk_stop, _tile_rows(H)):
        stop = min(start + _tile_rows(H), chunk_stop)
        _gradient_sums_tile(dy, x, start, stop, gain, sums)
        _input_gradient_tile(dy, x, start, stop, mean, rstd, gain, sums, dx, recent)
        unflushed += stop - start
        if unflushed >= FLUSH_ROWS or stop == chunk_stop:
            _flush(recent, parts[chunk])
            unflushed = 0


@njit(**_EXACT)
def _add_chunks(parts, dgain, dbias):
    """dgain, dbias = the chunks' sums, added in chunk order (deterministic)."""
    total = parts[0].copy()
    for chunk in range(1, parts.shape[0]):
        total += parts[chunk]
    dgain[:] = total[0]
    dbias[:] = total[1]


@njit(**_EXACT)
def _backward_serial(dy, x, mean, rstd, gain, dx, parts, dgain, dbias):
    for chunk in range(parts.shape[0]):
        _backward_chunk(chunk, dy, x, mean, rstd, gain, dx, parts)
    _add_chunks(parts, dgain, dbias)


@njit(parallel=True, **_EXACT)
def _backward_parallel(dy, x, mean, rstd, gain, dx, parts, dgain, dbias):
    for chunk in prange(parts.shape[0]):
        _backward_chunk(chunk, dy, x, mean, rstd, gain, dx, parts)
    _add_chunks(parts, dgain, dbias)


def _use_parallel(size: int) -> bool:
    return size >= PARALLEL_MIN_ELEMENTS and numba.get_num_threads() > 1


def chunk_count(rows: int, H: int) -> int:
    """How many chunks of rows the backward sums dgain and dbias over.

    A function of the shape alone, so that the result is bitwise the same for
    any number of threads.
    """
    by_work = rows * H // CHUNK_MIN_ELEMENTS
    by_memory = PARTIALS_MAX_ELEMENTS // H
    return max(1, min(rows, MAX_CHUNKS, by_work, by_memory))


# ----------------------------------------------------------------------------
# Public kernels
# ----------------------------------------------------------------------------

def layer_norm_forward(x, gain, bias, eps):
    """Normalize each row of ``x`` (rows, H); return ``(y, mean, rstd)``.

    ``gain``/``bias`` are (H,) arrays of x's dtype or None; a missing one acts
    as 1 (resp. 0), which is exact. ``mean`` and ``rstd`` are float64.
    """
    x, gain, bias = forward_arguments(x, gain, bias)
    rows, H = x.shape
    y = np.empty_like(x)
    mean, rstd = np.empty(rows), np.empty(rows)
    tiles = -(-rows // _tile_rows(H))
    run = _forward_parallel if _use_parallel(x.size) else _forward_serial
    run(tiles, x, gain, bias, float(eps), y, mean, rstd)
    return y, mean, rstd


def layer_norm_backward(dy, x, mean, rstd, gain):
    """Gradients of :func:`layer_norm_forward`: ``(dx, dgain, dbias)``.

    ``dgain`` and ``dbias`` have gain's dtype, and are None when gain is None.
    """
    dy, x, mean, rstd, gain, affine = backward_arguments(dy, x, mean, rstd, gain)
    rows, H = x.shape
    dx, dgain, dbias = np.empty_like(x), np.empty(H, x.dtype), np.empty(H, x.dtype)
    parts = np.zeros((chunk_count(rows, H), 2, H))
    run = _backward_parallel if _use_parallel(x.size) else _backward_serial
    run(dy, x, mean, rstd, gain, dx, parts, dgain, dbias)
    return (dx, dgain, dbias) if affine else (dx, None, None)


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


@njit(**_EXACT)
def _adam_serial(param, grad, exp_avg, exp_avg_sq, hyper):
    for i in range(param.size):
        _adam_element(i, param, grad, exp_avg, exp_avg_sq, hyper)


@njit(parallel=True, **_EXACT)
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
