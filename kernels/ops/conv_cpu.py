"""im2col and col2im of 2-D convolutions on the CPU: :mod:`tinynet.kernels.ops.conv_spec`
as compiled loops, shared out over threads.

The reference pads the input (a copy), copies the strided view of its
windows into ``cols``, and in col2im adds each kernel offset's columns into
a zero-padded gradient, one strided NumPy pass per offset through a transposed
view (the columns are (C, k, k, N, h, w), the gradient (N, C, H, W)), then
crops the padding off (a second copy where the next op needs it contiguous).
All of it runs on one thread. Here the work is split into the tasks of a
parallel loop, and a row of the output is one loop, which the compiler turns
into vector code at stride 1:

* **im2col**, a task per row (c, i, j) of cols: cols[c, i, j, n, h, :] is a
  stretch of input row h·stride − padding + i·dilation, zeros where it hangs
  into the padding (the padding is never built). At stride 1 with rows as
  long as the input's (``padding="same"``), a plane's columns are the input
  plane shifted, one flat copy and then zeros at the edges;
* **col2im**, a task per input channel c: the gradient of channel c is zeroed,
  then each kernel offset's columns are added into it in raster order of the
  offsets, as the reference adds them (the same sums in the same order, so
  the same bits), the taps that fall into the padding skipped (nothing to crop).
  At stride 1 with rows as long as the input's, a plane takes its k·k kernel
  offsets while it is in the cache, each one flat add of shifted columns whose
  padding taps are first set to 0 in ``dcols`` (which col2im may overwrite);
* **swap_leading_axes**, a task per sample: the product's (O, N, P) result
  copied into the output's (N, O, P) layout with the bias added in the same
  pass (NumPy's transposed copy and broadcast add are two passes on one
  thread, much slower); without a bias, the output's gradient back.

2-D convolutions of float32 and float64 NumPy arrays are compiled; others go
to the reference. Inputs below kernels/_common.PARALLEL_MIN_ELEMENTS run on one
thread.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from .._common import FLOAT_DTYPES, PARALLEL_MIN_ELEMENTS
from .._compile import first_calls_noticed
from . import conv_spec

__all__ = ["im2col", "col2im", "swap_leading_axes"]

_OPTIONS = dict(cache=True, error_model="numpy")
_NOTICED = first_calls_noticed("the CPU im2col/col2im kernels")


@njit(**_OPTIONS)
def _inside(shift, step, length, out):
    """The range [low, high) of output positions o with 0 ≤ o·step + shift < length."""
    low = max(0, -(shift // step))                  # ceil(−shift / step)
    high = min(out, -((shift - length) // step))    # ceil((length − shift) / step)
    return low, max(low, high)


# The arrays are passed flat, their shapes beside them, and every index is made
# unsigned (_AT) where it is used: an index that may be negative makes Numba
# wrap it around, and the loop is no longer vectorized. A view per
# row (x[n, c, h]) would cost more than the row's 14 values.
_AT = np.uint64


@njit(**_OPTIONS)
def _fill_columns(x, cols, shape, geometry, out_h, out_w, r):
    """Row r = (c, i, j) of cols, flat (C·kh·kw, N·out_h·out_w), from channel c
    of x, flat (N, C, H, W), at kernel offset (i, j)."""
    kh, kw, sh, sw, top, left, dh, dw = geometry
    batch, channels, height, width = shape
    c, i, j = r // (kh * kw), r // kw % kh, r % kw
    shift = j * dw - left
    low, high = _inside(shift, sw, width, out_w)
    for n in range(batch):
        plane = (n * channels + c) * height
        if sh == 1 and sw == 1 and out_w == width:
            _fill_plane_shifted(x, cols, plane, (r * batch + n) * out_h, i * dh - top,
                                shift, low, high, height, out_h, out_w)
            continue
        for oh in range(out_h):
            start = ((r * batch + n) * out_h + oh) * out_w
            h = oh * sh - top + i * dh
            if h < 0 or h >= height:
                for ow in range(out_w):
                    cols[_AT(start + ow)] = 0
                continue
            source = (plane + h) * width + shift
            for ow in range(low):
                cols[_AT(start + ow)] = 0
            if sw == 1:
                for ow in range(low, high):
                    cols[_AT(start + ow)] = x[_AT(source + ow)]
            else:
                for ow in range(low, high):
                    cols[_AT(start + ow)] = x[_AT(source + ow * sw)]
            for ow in range(high, out_w):
                cols[_AT(start + ow)] = 0


@njit(**_OPTIONS)
def _fill_plane_shifted(x, cols, plane, row, down, shift, low, high, height, out_h, out_w):
    """At stride 1 with rows as long as the input's, one kernel offset's
    columns of a plane are the input plane shifted by ``down`` rows and
    ``shift`` columns: one flat copy, then zeros where the shift hangs over
    the edge (rows outside the input, and the columns the flat copy wrapped)."""
    first, last = _inside(down, 1, height, out_h)
    for k in range(row * out_w, (row + first) * out_w):
        cols[_AT(k)] = 0
    for k in range((row + last) * out_w, (row + out_h) * out_w):
        cols[_AT(k)] = 0
    if first == last:
        return
    start = (row + first) * out_w + low
    offset = (plane + first + down) * out_w + shift - (row + first) * out_w
    for k in range(start, (row + last - 1) * out_w + high):
        cols[_AT(k)] = x[_AT(k + offset)]
    for oh in range(row + first, row + last):
        for ow in range(low):
            cols[_AT(oh * out_w + ow)] = 0
        for ow in range(high, out_w):
            cols[_AT(oh * out_w + ow)] = 0


@njit(**_OPTIONS)
def _add_columns(dcols, dx, shape, geometry, out_h, out_w, c):
    """dx[:, c] = the sum of channel c's columns at the positions they were read from,
    the kernel offsets in raster order."""
    kh, kw, sh, sw, top, left, dh, dw = geometry
    batch, channels, height, width = shape
    shifted = sh == 1 and sw == 1 and out_w == width      # _add_plane_shifted's case
    for n in range(batch):
        plane = (n * channels + c) * height * width
        for k in range(height * width):
            dx[_AT(plane + k)] = 0
        if shifted:
            for i in range(kh):
                for j in range(kw):
                    shift = j * dw - left
                    low, high = _inside(shift, 1, width, out_w)
                    _add_plane_shifted(dcols, dx, plane // width,
                                       (((c * kh + i) * kw + j) * batch + n) * out_h,
                                       i * dh - top, shift, low, high, height, out_h, out_w)
    if shifted:
        return
    for i in range(kh):
        for j in range(kw):
            r = (c * kh + i) * kw + j
            shift = j * dw - left
            low, high = _inside(shift, sw, width, out_w)
            for n in range(batch):
                plane = (n * channels + c) * height
                for oh in range(out_h):
                    h = oh * sh - top + i * dh
                    if h < 0 or h >= height:
                        continue
                    start = ((r * batch + n) * out_h + oh) * out_w
                    target = (plane + h) * width + shift
                    if sw == 1:
                        for ow in range(low, high):
                            dx[_AT(target + ow)] += dcols[_AT(start + ow)]
                    else:
                        for ow in range(low, high):
                            dx[_AT(target + ow * sw)] += dcols[_AT(start + ow)]


@njit(**_OPTIONS)
def _add_plane_shifted(dcols, dx, plane, row, down, shift, low, high, height, out_h, out_w):
    """col2im's counterpart of :func:`_fill_plane_shifted`: one kernel offset's
    columns of a plane added into the gradient plane shifted by ``down`` rows and
    ``shift`` columns, in one flat loop. The columns that the flat loop would wrap
    onto the neighbouring row are those read from the padding, which belong to no
    input position: they are set to 0 first. Adding 0 to a sum that started at +0
    leaves it as it is (such a sum is never −0), so the bits are the row loop's."""
    first, last = _inside(down, 1, height, out_h)
    if first == last:
        return
    for oh in range(row + first, row + last):
        for ow in range(low):
            dcols[_AT(oh * out_w + ow)] = 0
        for ow in range(high, out_w):
            dcols[_AT(oh * out_w + ow)] = 0
    offset = (plane + down - row) * out_w + shift
    for k in range((row + first) * out_w + low, (row + last - 1) * out_w + high):
        dx[_AT(k + offset)] += dcols[_AT(k)]


@_NOTICED
@njit(**_OPTIONS)
def _columns_serial(x, cols, shape, geometry, out_h, out_w):
    for r in range(shape[1] * geometry[0] * geometry[1]):
        _fill_columns(x, cols, shape, geometry, out_h, out_w, r)


@_NOTICED
@njit(parallel=True, **_OPTIONS)
def _columns_parallel(x, cols, shape, geometry, out_h, out_w):
    for r in prange(shape[1] * geometry[0] * geometry[1]):
        _fill_columns(x, cols, shape, geometry, out_h, out_w, np.int64(r))


@_NOTICED
@njit(**_OPTIONS)
def _gradient_serial(dcols, dx, shape, geometry, out_h, out_w):
    for c in range(shape[1]):
        _add_columns(dcols, dx, shape, geometry, out_h, out_w, c)


@_NOTICED
@njit(parallel=True, **_OPTIONS)
def _gradient_parallel(dcols, dx, shape, geometry, out_h, out_w):
    for c in prange(shape[1]):
        _add_columns(dcols, dx, shape, geometry, out_h, out_w, np.int64(c))


@njit(**_OPTIONS)
def _swap_sample(a, bias, out, n):
    """out[n, i] = a[i, n] + bias[i] for every row i of A."""
    for i in range(a.shape[0]):
        shift = bias[i]
        for p in range(a.shape[2]):
            out[n, i, p] = a[i, n, p] + shift


@_NOTICED
@njit(**_OPTIONS)
def _swap_serial(a, bias, out):
    for n in range(a.shape[1]):
        _swap_sample(a, bias, out, n)


@_NOTICED
@njit(parallel=True, **_OPTIONS)
def _swap_parallel(a, bias, out):
    for n in prange(a.shape[1]):
        _swap_sample(a, bias, out, np.int64(n))


def _geometry(kernel, stride, padding, dilation):
    (top, _), (left, _) = padding
    return tuple(int(v) for v in (*kernel, *stride, top, left, *dilation))


def _compiled_case(a, spatial_dims):
    return type(a) is np.ndarray and a.dtype in FLOAT_DTYPES and spatial_dims == 2


def im2col(x, kernel, stride, padding, dilation, out_sizes=None):
    """``(cols, padded_shape, out_sizes)`` as :func:`tinynet.kernels.ops.conv_spec.im2col`."""
    if not _compiled_case(x, len(kernel)):
        return conv_spec.im2col(x, kernel, stride, padding, dilation, out_sizes)
    padded_shape = x.shape[:2] + tuple(size + before + after for size, (before, after)
                                       in zip(x.shape[2:], padding, strict=True))
    if out_sizes is None:
        out_sizes = tuple((size - d * (k - 1) - 1) // s + 1 for size, k, s, d
                          in zip(padded_shape[2:], kernel, stride, dilation, strict=True))
    x = np.ascontiguousarray(x)
    cols = np.empty((x.shape[1],) + tuple(kernel) + (x.shape[0],) + tuple(out_sizes), x.dtype)
    run = _columns_parallel if cols.size >= PARALLEL_MIN_ELEMENTS else _columns_serial
    run(x.reshape(-1), cols.reshape(-1), x.shape, _geometry(kernel, stride, padding, dilation),
        *out_sizes)
    return cols, padded_shape, tuple(out_sizes)


def col2im(dcols, padded_shape, stride, dilation, padding, sizes):
    """The input's gradient as :func:`tinynet.kernels.ops.conv_spec.col2im`;
    ``dcols``'s entries read from the padding may be overwritten with 0."""
    if not _compiled_case(dcols, len(sizes)):
        return conv_spec.col2im(dcols, padded_shape, stride, dilation, padding, sizes)
    dcols = np.ascontiguousarray(dcols)
    dx = np.empty(tuple(padded_shape[:2]) + tuple(sizes), dcols.dtype)
    run = _gradient_parallel if dcols.size >= PARALLEL_MIN_ELEMENTS else _gradient_serial
    run(dcols.reshape(-1), dx.reshape(-1), dx.shape,
        _geometry(dcols.shape[1:3], stride, padding, dilation), *dcols.shape[4:])
    return dx


def swap_leading_axes(a, bias=None):
    """``a`` (A, B, …) as a C-ordered (B, A, …) array, plus the bias, as
    :func:`tinynet.kernels.ops.conv_spec.swap_leading_axes`."""
    if not (type(a) is np.ndarray and a.dtype in FLOAT_DTYPES and a.ndim >= 2
            and (bias is None or (type(bias) is np.ndarray and bias.dtype == a.dtype))):
        return conv_spec.swap_leading_axes(a, bias)
    rows = np.ascontiguousarray(a).reshape(a.shape[0], a.shape[1], -1)
    out = np.empty((a.shape[1], a.shape[0]) + a.shape[2:], a.dtype)
    # no bias: + (−0.0), which leaves every value as it is, −0.0 included
    shifts = np.full(a.shape[0], -0.0, a.dtype) if bias is None else bias.reshape(-1)
    run = _swap_parallel if a.size >= PARALLEL_MIN_ELEMENTS else _swap_serial
    run(rows, shifts, out.reshape(rows.shape[1], rows.shape[0], -1))
    return out
