"""Softmax, log-softmax, the cross-entropy, row sums and a layer's bias on the
CPU: compiled loops over the rows of the last axis, in float32.

NumPy's softmax is five passes over the array (max, subtract, exp, sum,
divide), each allocating a temporary, and its max and sum along a short last
axis (65 classes, 64 keys) cost several passes each. Here there are three
compiled passes, each writing in place: every row's maximum, then
e^(x − max) by :func:`~tinynet.kernels.ops.pointwise_cpu.exp32` (vectorized), then
each row's sum and the division. The arrays of a GPT step (200–800 KB) stay
in the cache between passes, and the compiler vectorizes each short pass
better than one loop doing all three for a row (timed on a softmax over
(12, 4, 64, 64)). A row's sum is a function of its own, compiled with
``reassoc``, which lets the compiler add in SIMD lanes (faster than one
running sum); the loops that call it are not, so that the exponential's range
reduction keeps its order. The compiler does not
vectorize a running maximum at all: it is kept in eight running maxima.
Row sums of kernels/_common.PARALLEL_MIN_ELEMENTS elements or more are shared
out over the threads, a row to a thread (the same bits).

As for the activations (kernels/ops/pointwise_cpu.py), float64, other axes and
CuPy's arrays run kernels/rows_spec.py's NumPy formulas.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from .._common import PARALLEL_MIN_ELEMENTS
from . import rows_spec
from .pointwise_cpu import compiled, exp32

__all__ = ["softmax_forward", "softmax_backward", "log_softmax_forward",
           "log_softmax_backward", "cross_entropy_forward", "cross_entropy_backward",
           "sum_last_axis", "sum_last_axis_of_product", "sum_last_axis_backward", "add_bias",
           "row_sum", "row_dot", "row_max", "as_rows"]

_LOOP = dict(cache=True, error_model="numpy", fastmath={"contract"})
_INLINE = dict(inline="always", error_model="numpy", fastmath={"contract"})
_SUM = dict(cache=True, error_model="numpy", fastmath={"reassoc", "nsz", "contract"})
_F = np.float32


@njit(**_SUM)
def row_sum(a, i):
    """Σ_j a[i, j], which ``reassoc`` lets the compiler add in SIMD lanes."""
    total = _F(0)
    for j in range(a.shape[1]):
        total += a[i, j]
    return total


@njit(**_SUM)
def row_dot(a, b, i):
    """Σ_j a[i, j] b[i, j], in SIMD lanes as :func:`row_sum`."""
    total = _F(0)
    for j in range(a.shape[1]):
        total += a[i, j] * b[i, j]
    return total


@njit(**_INLINE)
def _larger(a, b):
    return a if a > b else b            # b when a is NaN


@njit(**_INLINE)
def row_max(a, i):
    """max_j a[i, j] in eight running maxima, skipping NaN: a NaN element still
    makes its row NaN, through e^(NaN − max) in the sum."""
    columns = a.shape[1]
    whole = columns - columns % 8
    m0 = m1 = m2 = m3 = m4 = m5 = m6 = m7 = _F(-np.inf)
    for j in range(0, whole, 8):
        m0 = _larger(a[i, j], m0)
        m1 = _larger(a[i, j + 1], m1)
        m2 = _larger(a[i, j + 2], m2)
        m3 = _larger(a[i, j + 3], m3)
        m4 = _larger(a[i, j + 4], m4)
        m5 = _larger(a[i, j + 5], m5)
        m6 = _larger(a[i, j + 6], m6)
        m7 = _larger(a[i, j + 7], m7)
    peak = _larger(_larger(_larger(m0, m1), _larger(m2, m3)),
                   _larger(_larger(m4, m5), _larger(m6, m7)))
    for j in range(whole, columns):
        peak = _larger(a[i, j], peak)
    return peak


@njit(**_LOOP)
def _row_peaks(x):
    """max_j x[i, j] of every row."""
    peaks = np.empty(x.shape[0], _F)
    for i in range(x.shape[0]):
        peaks[i] = row_max(x, i)
    return peaks


@njit(**_INLINE)
def _exp_shifted(x, peaks, out):
    """out[i, j] = e^(x[i, j] − peaks[i])."""
    for i in range(x.shape[0]):
        peak = peaks[i]
        for j in range(x.shape[1]):
            out[i, j] = exp32(x[i, j] - peak)


@njit(**_LOOP)
def _softmax_loop(x, y):
    _exp_shifted(x, _row_peaks(x), y)
    for i in range(y.shape[0]):
        inverse = _F(1) / row_sum(y, i)
        for j in range(y.shape[1]):
            y[i, j] *= inverse


@njit(**_LOOP)
def _softmax_backward_loop(grad, y, dx):
    for i in range(y.shape[0]):
        for j in range(y.shape[1]):
            dx[i, j] = grad[i, j] * y[i, j]
        total = row_sum(dx, i)
        for j in range(y.shape[1]):
            dx[i, j] = y[i, j] * (grad[i, j] - total)


@njit(**_LOOP)
def _log_softmax_loop(x, y):
    peaks = _row_peaks(x)
    _exp_shifted(x, peaks, y)
    for i in range(y.shape[0]):
        log_total = _F(math.log(row_sum(y, i)))
        for j in range(y.shape[1]):
            y[i, j] = (x[i, j] - peaks[i]) - log_total


@njit(**_LOOP)
def _log_softmax_backward_loop(grad, y, dx):
    for i in range(y.shape[0]):
        total = row_sum(grad, i)
        for j in range(y.shape[1]):
            dx[i, j] = grad[i, j] - exp32(y[i, j]) * total


@njit(**_LOOP)
def _cross_entropy_loop(logits, target, losses, probs):
    peaks = _row_peaks(logits)
    _exp_shifted(logits, peaks, probs)
    for i in range(logits.shape[0]):
        total = row_sum(probs, i)
        losses[i] = (_F(math.log(total)) + peaks[i]) - logits[i, target[i]]
        inverse = _F(1) / total
        for j in range(probs.shape[1]):
            probs[i, j] *= inverse


@njit(**_LOOP)
def _cross_entropy_backward_loop(probs, scale, target, dlogits):
    for i in range(probs.shape[0]):
        s = scale[i]
        for j in range(probs.shape[1]):
            dlogits[i, j] = probs[i, j] * s
        dlogits[i, target[i]] -= s


@njit(**_LOOP)
def _row_sums(x, out):
    for i in range(x.shape[0]):
        out[i] = row_sum(x, i)


@njit(parallel=True, **_LOOP)
def _row_sums_shared(x, out):
    """:func:`_row_sums` with the rows shared out over the threads (each row's sum
    is the same)."""
    for i in prange(x.shape[0]):
        out[i] = row_sum(x, i)


@njit(**_LOOP)
def _row_dots(a, b, out):
    for i in range(a.shape[0]):
        out[i] = row_dot(a, b, i)


@njit(**_LOOP)
def _spread_rows(values, out):
    for i in range(out.shape[0]):
        value = values[i]
        for j in range(out.shape[1]):
            out[i, j] = value


@njit(**_LOOP)
def _add_bias_loop(rows, bias):
    for i in range(rows.shape[0]):
        for j in range(rows.shape[1]):
            rows[i, j] += bias[j]


@njit(**_LOOP)
def _add_bias_to_columns_loop(columns, bias):
    """The same for an F-ordered out, given as its transpose: bias[j] along column j."""
    for j in range(columns.shape[0]):
        for i in range(columns.shape[1]):
            columns[j, i] += bias[j]


def as_rows(a):
    """The rows of ``a``, a C-ordered array, as a 2-D view (rows of 0 columns too,
    whose count NumPy cannot infer from a −1)."""
    return a.reshape(math.prod(a.shape[:-1]), a.shape[-1])


def _along_rows(loop, fallback):
    """The kernel ``(*arrays, axis)`` that runs ``loop`` on the arrays' rows, and a
    new output's, when :func:`compiled` takes them and ``axis`` is the last, and
    ``fallback`` (rows_spec.py) otherwise (the pattern of pointwise_cpu)."""
    def kernel(*arrays_and_axis):
        *arrays, axis = arrays_and_axis
        first = arrays[0]
        if not (compiled(*arrays) and axis == first.ndim - 1 and first.size):
            return fallback(*arrays_and_axis)
        out = np.empty_like(first)
        loop(*(as_rows(a) for a in arrays), as_rows(out))
        return out
    kernel.__name__ = fallback.__name__
    kernel.__doc__ = fallback.__doc__
    return kernel


softmax_forward = _along_rows(_softmax_loop, rows_spec.softmax_forward)
softmax_backward = _along_rows(_softmax_backward_loop, rows_spec.softmax_backward)
log_softmax_forward = _along_rows(_log_softmax_loop, rows_spec.log_softmax_forward)
log_softmax_backward = _along_rows(_log_softmax_backward_loop, rows_spec.log_softmax_backward)


def cross_entropy_forward(logits, target):
    """``(losses, probs)``: log Σ_j e^(z_ij) − z_i[t_i] for each row of (N, C)
    logits, and the softmax, which the backward scales."""
    if not (compiled(logits) and logits.ndim == 2 and logits.size):
        return rows_spec.cross_entropy_forward(logits, target)
    losses, probs = np.empty(logits.shape[0], _F), np.empty_like(logits)
    _cross_entropy_loop(logits, np.ascontiguousarray(target, dtype=np.intp), losses, probs)
    return losses, probs


def cross_entropy_backward(probs, scale, target):
    """softmax(z) · s − s at each row's target: the cross-entropy's gradient with
    each row's factor ``s`` (an (N,) array, or 0-d for one factor for all)."""
    if not (compiled(probs) and probs.ndim == 2 and probs.size
            and isinstance(scale, (np.ndarray, np.float32)) and scale.dtype == _F):
        return rows_spec.cross_entropy_backward(probs, scale, target)
    dlogits = np.empty_like(probs)
    scale = np.ascontiguousarray(np.broadcast_to(scale, probs.shape[:1]))
    _cross_entropy_backward_loop(probs, scale, np.ascontiguousarray(target, dtype=np.intp),
                                 dlogits)
    return dlogits


def sum_last_axis(x):
    """Σ over the last axis, the other axes kept."""
    if not (compiled(x) and x.ndim > 0 and x.size):
        return rows_spec.sum_last_axis(x)
    out = np.empty(x.shape[:-1], _F)
    loop = _row_sums_shared if x.size >= PARALLEL_MIN_ELEMENTS else _row_sums
    loop(as_rows(x), out.reshape(-1))
    return out


def sum_last_axis_of_product(a, b):
    """Σ_j a[..., j] b[..., j] in one pass, without the product's array."""
    if not (compiled(a, b) and a.ndim > 0 and a.size):
        return rows_spec.sum_last_axis_of_product(a, b)
    out = np.empty(a.shape[:-1], _F)
    _row_dots(as_rows(a), as_rows(b), out.reshape(-1))
    return out


def sum_last_axis_backward(grad, size):
    """Each value of ``grad`` repeated along a new last axis of ``size``, as a
    C-ordered array: the engine stores it as a gradient without copying it, and
    the compiled loop writes it in half the time of NumPy's copy of the
    broadcast view."""
    if not (compiled(grad) and grad.size and size):
        return rows_spec.sum_last_axis_backward(grad, size)
    out = np.empty(grad.shape + (size,), _F)
    _spread_rows(grad.reshape(-1), as_rows(out))
    return out


def add_bias(out, bias):
    """``out += bias`` along the last axis, in place: NumPy's broadcast add runs
    slower on a Linear's (768, 128…512) outputs, and on its F-ordered (few rows ×
    features) ones (tinynet/ops/linalg.py) it costs more than the product's rows."""
    if not (type(out) is np.ndarray and out.dtype == _F and out.ndim > 0
            and type(bias) is np.ndarray and bias.shape == out.shape[-1:] and bias.dtype == _F):
        return rows_spec.add_bias(out, bias)
    if out.flags.c_contiguous:
        _add_bias_loop(as_rows(out), bias)
    elif out.ndim == 2 and out.flags.f_contiguous:
        _add_bias_to_columns_loop(out.T, bias)
    else:
        rows_spec.add_bias(out, bias)
    return out
