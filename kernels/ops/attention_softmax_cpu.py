"""The attention's softmax on the CPU: ``attention_softmax_forward`` and
``attention_softmax_backward`` of :mod:`tinynet.kernels.ops.attention_softmax_spec` as
compiled loops over the rows of the scores.

The reference makes eight NumPy passes forward and four backward over the
(batch, heads, L, S) scores, and NumPy's max and sum along a short last axis
(S = 64 keys) cost several passes each. Here a row is read while it is in
the cache: the scale, the mask and the row's maximum in one loop, NumPy's
(vectorized) exp in place, then the sum and the division in a second loop; in
float32 the same three steps as three passes over the scores with
pointwise_cpu.exp32, which the compiler vectorizes better than one loop doing
all three for a row (timed on the GPT's (12, 4, 64, 64)). The backward is
one loop. A mask of the scores' (L, S) shape, such as the causal one, is
added row by row; any other is added by NumPy first.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .pointwise_cpu import exp32
from .rows_cpu import as_rows, row_max, row_sum

__all__ = ["attention_softmax_forward", "attention_softmax_backward"]

_OPTIONS = dict(cache=True, error_model="numpy")
# The row sums may be reordered (``reassoc``), so that LLVM vectorizes them.
_SUMS = dict(_OPTIONS, fastmath={"reassoc", "nsz"})


@njit(**_OPTIONS)
def _scale_mask_shift(rows, bias_rows, scale):
    """row ← scale · row + bias, then row − max(row); an all −∞ row stays −∞."""
    count, keys = rows.shape
    queries = bias_rows.shape[0]
    for i in range(count):
        row, bias = rows[i], bias_rows[i % queries]
        peak = -np.inf
        for j in range(keys):
            value = row[j] * scale + bias[j]
            row[j] = value
            peak = max(peak, value)
        if peak != -np.inf:
            for j in range(keys):
                row[j] -= peak


@njit(**_OPTIONS)
def _softmax_rows_float32(rows, bias_rows, scale):
    """float32: the scale, the mask and each row's maximum; e^(· − max) by
    pointwise_cpu.exp32; the sums and the division: three passes over the
    scores, which stay in the cache (the steps of the three loops beside)."""
    count, keys = rows.shape
    queries = bias_rows.shape[0]
    shifts = np.empty(count, np.float32)
    for i in range(count):
        bias = i % queries
        for j in range(keys):
            rows[i, j] = rows[i, j] * scale + bias_rows[bias, j]
        peak = row_max(rows, i)
        shifts[i] = peak if peak != -np.inf else np.float32(0)      # e^−∞ = 0
    for i in range(count):
        shift = shifts[i]
        for j in range(keys):
            rows[i, j] = exp32(rows[i, j] - shift)
    for i in range(count):
        total = row_sum(rows, i)
        if total != 0:                  # see _normalize
            inverse = np.float32(1) / total
            for j in range(keys):
                rows[i, j] *= inverse


@njit(**_SUMS)
def _normalize(rows):
    """Each row divided by its sum. A row that was −∞ everywhere (a query that may
    attend to nothing) sums to 0 and stays 0; a row with a NaN sums to NaN, which
    then fills the row, as in PyTorch."""
    for i in range(rows.shape[0]):
        row = rows[i]
        total = row.sum()
        if total != 0:
            inverse = 1 / total
            for j in range(row.size):
                row[j] *= inverse


@njit(**_SUMS)
def _backward_rows(grad_rows, weight_rows, scale):
    for i in range(grad_rows.shape[0]):
        grad, weight = grad_rows[i], weight_rows[i]
        total = 0.0
        for j in range(grad.size):
            grad[j] *= weight[j]
            total += grad[j]
        for j in range(grad.size):
            grad[j] = scale * (grad[j] - weight[j] * total)


def attention_softmax_forward(scores, bias, scale):
    """P = softmax(scale · scores + bias) over the last axis, written into ``scores``
    (into a C-ordered copy if it is not C-ordered: a product's result may not be)."""
    scores = np.ascontiguousarray(scores)
    queries, keys = scores.shape[-2:]
    if bias is not None and any(n != 1 for n in bias.shape[:-2]):
        scores *= scores.dtype.type(scale)          # a mask per batch or head
        scores += bias
        bias, scale = None, 1.0
    if bias is None:
        bias_rows = np.zeros((1, keys), scores.dtype)
    else:
        bias_rows = np.ascontiguousarray(np.broadcast_to(
            bias.reshape(bias.shape[-2:]) if bias.ndim > 2 else bias, (queries, keys)),
            dtype=scores.dtype)
    rows = as_rows(scores)
    if rows.dtype == np.float32 and rows.size:
        _softmax_rows_float32(rows, bias_rows, np.float32(scale))
        return scores
    _scale_mask_shift(rows, bias_rows, scores.dtype.type(scale))
    np.exp(rows, out=rows)
    _normalize(rows)
    return scores


def attention_softmax_backward(grad_weights, weights, scale):
    """dS = scale · P ∘ (dP − rowsum(dP ∘ P)), written into ``grad_weights`` (or
    into a C-ordered copy)."""
    grad_weights = np.ascontiguousarray(grad_weights)
    weights = np.ascontiguousarray(weights)
    _backward_rows(as_rows(grad_weights), as_rows(weights), grad_weights.dtype.type(scale))
    return grad_weights
