"""a + b, a − b, a · b and a / b on the CPU where one operand is broadcast.

NumPy runs these at about half its speed where one operand is broadcast
against the other ((768, 512) + (512,), (768, 512) · (768, 1)) as on two
arrays of one shape. Here the two broadcasts of a network's arithmetic are
compiled loops over the rows, as fast as NumPy on one shape
(benchmarks/ops.py's ``add`` and ``mul`` rows):

* a row (C,) against every row of (…, C): a bias, a LayerNorm's gain;
* a column (…, 1) against every column of (…, C): a per-row scale or mean.

Each element is the IEEE operation NumPy does, so the bits are NumPy's. Two
arrays of one shape, other layouts, Python numbers, mixed dtypes, arrays
under :data:`MIN_ELEMENTS` and CuPy's arrays run the spec, NumPy's own
operator (as fast as a loop for arrays of one shape). The loops run on one
thread: on (768, 512), sharing them out over the workers cost more than it
saved.
"""
from __future__ import annotations

import operator

import numpy as np
from numba import njit

from .._common import FLOAT_DTYPES
from . import binary_spec

__all__ = ["binary", "MIN_ELEMENTS"]

MIN_ELEMENTS = 8192     # below, NumPy's call costs less than choosing a loop

_CODES = {operator.add: 0, operator.sub: 1, operator.mul: 2, operator.truediv: 3}
_LOOP = dict(cache=True, error_model="numpy")


@njit(inline="always", error_model="numpy")
def _apply(code, x, y):
    if code == 0:
        return x + y
    if code == 1:
        return x - y
    if code == 2:
        return x * y
    return x / y


@njit(**_LOOP)
def _with_row(code, rows, row, out, row_first):
    for i in range(out.shape[0]):
        if row_first:
            for j in range(out.shape[1]):
                out[i, j] = _apply(code, row[j], rows[i, j])
        else:
            for j in range(out.shape[1]):
                out[i, j] = _apply(code, rows[i, j], row[j])


@njit(**_LOOP)
def _with_column(code, rows, column, out, column_first):
    for i in range(out.shape[0]):
        value = column[i]
        if column_first:
            for j in range(out.shape[1]):
                out[i, j] = _apply(code, value, rows[i, j])
        else:
            for j in range(out.shape[1]):
                out[i, j] = _apply(code, rows[i, j], value)


def binary(op, a, b):
    """The spec's ``op(a, b)``, as a compiled loop over the rows where one operand is
    a row or a column broadcast against the other."""
    if not (type(a) is np.ndarray and type(b) is np.ndarray
            and (a.size >= MIN_ELEMENTS or b.size >= MIN_ELEMENTS)
            and a.shape != b.shape and a.dtype == b.dtype and a.dtype in FLOAT_DTYPES
            and a.ndim and b.ndim and a.flags.c_contiguous and b.flags.c_contiguous):
        return binary_spec.binary(op, a, b)
    big, small = (a, b) if a.size >= b.size else (b, a)
    small_first = small is a
    if small.shape[-1] == big.shape[-1] == small.size and small.ndim <= big.ndim:
        loop, small = _with_row, small.reshape(-1)
    elif small.shape == big.shape[:-1] + (1,):
        loop, small = _with_column, small.reshape(-1)
    else:
        return binary_spec.binary(op, a, b)
    out = np.empty_like(big)
    loop(_CODES[op], big.reshape(-1, big.shape[-1]), small, out.reshape(-1, big.shape[-1]),
         small_first)
    return out
