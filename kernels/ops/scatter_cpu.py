"""An embedding's gradient on the CPU: :func:`tinynet.kernels.ops.scatter_spec.add_rows`,
``target[rows[i]] += values[i]`` with rows repeating, as a compiled loop.

The reference sorts the rows (stably) and sums each run of equal rows with
NumPy's ``add.reduceat``. That is exact but slow on a GPT's shapes: 768 token
rows of 128 values into 65 embeddings, 8,320 runs-by-columns, each a call of
NumPy's inner loop over a dozen numbers spread across memory (most of the
reference's time). Here the same runs are found by a compiled counting sort
(the rows are bounded by the table: no comparison sort, no NumPy temporaries,
which cost more than the sums on a makemore model's 512 rows of 64) and summed
by one compiled loop, a row of values at a time.

The float sums must come out as the reference's, bit for bit: the GPT's
float32 training follows PyTorch's and its own earlier runs exactly. So the
loop adds a run's values in NumPy's order. ``reduceat`` starts from the run's
first row and adds the sum of the others, which NumPy forms by *pairwise
summation* (numpy/_core/src/umath/loops_utils.h.src): fewer than 8 numbers
one after another from −0.0; up to 128 in eight interleaved partial sums,
((r₀ + r₁) + (r₂ + r₃)) + ((r₄ + r₅) + (r₆ + r₇)), then the remainder; more
than that split in two halves (the first a multiple of 8) summed the same
way. :func:`_pairwise_rows` is that recursion, for all the columns of a row
at once. The test compares it with the reference on random runs of every
length, float32 and float64, −0.0 included.

NumPy arrays of float32 or float64, C-ordered, go to the loop; others (CuPy's
arrays) to the reference.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .._common import FLOAT_DTYPES
from . import scatter_spec

__all__ = ["add_rows"]

_OPTIONS = dict(cache=True, error_model="numpy")      # exact: no fast-math flags
_BLOCK = 128                                           # NumPy's PW_BLOCKSIZE


@njit(**_OPTIONS)
def _pairwise_rows(values, order, first, count, out):
    """out = Σ_{i < count} values[order[first + i]], column by column, summed as
    NumPy's pairwise summation sums one column."""
    columns = values.shape[1]
    if count < 8:
        out[:] = -0.0
        for i in range(first, first + count):
            row = values[order[i]]
            for j in range(columns):
                out[j] += row[j]
        return
    if count <= _BLOCK:
        partial = np.empty((8, columns), values.dtype)
        for lane in range(8):
            partial[lane] = values[order[first + lane]]
        i = 8
        while i < count - count % 8:
            for lane in range(8):
                row = values[order[first + i + lane]]
                for j in range(columns):
                    partial[lane, j] += row[j]
            i += 8
        for j in range(columns):
            out[j] = (((partial[0, j] + partial[1, j]) + (partial[2, j] + partial[3, j]))
                      + ((partial[4, j] + partial[5, j]) + (partial[6, j] + partial[7, j])))
        for k in range(first + i, first + count):
            row = values[order[k]]
            for j in range(columns):
                out[j] += row[j]
        return
    half = count // 2
    half -= half % 8
    second = np.empty(columns, values.dtype)
    _pairwise_rows(values, order, first, half, out)
    _pairwise_rows(values, order, first + half, count - half, second)
    for j in range(columns):
        out[j] += second[j]


@njit(**_OPTIONS)
def _counted_runs(rows, embeddings):
    """``(order, starts)``: the stable order that sorts ``rows`` and, for each row r
    of the table, its run ``order[starts[r]:starts[r + 1]]``, by a counting sort (the
    rows are bounded by the table). The spec's stable argsort gives the same order.
    ``starts[0] = -1`` says a row is outside [0, embeddings)."""
    starts = np.zeros(embeddings + 1, np.int64)
    order = np.empty(rows.shape[0], np.int64)
    for i in range(rows.shape[0]):
        if rows[i] < 0 or rows[i] >= embeddings:
            starts[0] = -1
            return order, starts
        starts[rows[i] + 1] += 1
    for row in range(embeddings):
        starts[row + 1] += starts[row]
    filled = starts[:embeddings].copy()
    for i in range(rows.shape[0]):
        order[filled[rows[i]]] = i
        filled[rows[i]] += 1
    return order, starts


@njit(**_OPTIONS)
def _add_runs(target, order, starts, values):
    """target[row] += the run's first row + the pairwise sum of the others."""
    columns = values.shape[1]
    rest = np.empty(columns, values.dtype)
    for row in range(target.shape[0]):
        begin, end = starts[row], starts[row + 1]
        if end == begin:
            continue
        first = values[order[begin]]
        if end - begin == 1:
            for j in range(columns):
                target[row, j] += first[j]
            continue
        _pairwise_rows(values, order, begin + 1, end - begin - 1, rest)
        for j in range(columns):
            target[row, j] += first[j] + rest[j]


def add_rows(target, rows, values):
    """``target[rows[i]] += values[i]`` for each i, in place, as
    :func:`tinynet.kernels.ops.scatter_spec.add_rows`, bit for bit."""
    if not (type(target) is np.ndarray and target.dtype in FLOAT_DTYPES and target.ndim == 2
            and target.flags.c_contiguous and type(values) is np.ndarray
            and values.dtype == target.dtype and values.shape == (rows.size, target.shape[1])
            and rows.size):
        return scatter_spec.add_rows(target, rows, values)
    rows = rows.reshape(-1)
    order, starts = _counted_runs(rows, target.shape[0])
    if starts[0] < 0:
        raise IndexError(f"add_rows: rows must be in [0, {target.shape[0]}), got "
                         f"{int(rows.min())} to {int(rows.max())}")
    _add_runs(target, order, starts, np.ascontiguousarray(values))
