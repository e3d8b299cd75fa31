"""Max pooling on the CPU: :func:`tinynet.kernels.ops.pooling_spec.max_pool_forward`
and ``max_pool_backward`` as compiled loops over the planes of the input.

The reference pads the input with −inf, then makes five NumPy passes per
kernel offset over all the windows (a comparison, an isnan, an or, and two
maxima): for a 2×2 window that is twenty passes, none of them in a thread but
the caller's. Here each (sample, channel) plane is one task of a parallel
loop, and each window is read once, while it is in the cache:

* **forward**: the taps of a window in raster order, the ones in the padding
  skipped instead of padded (so no padded copy), keeping the running maximum
  and its offset by the reference's rule (larger or NaN wins), so ties, NaN
  and −inf come out the same, ``arg`` included;
* **backward**: the plane's gradient zeroed, then each window's gradient added
  at the tap that won (windows that overlap add up, as in the reference).

The rule is applied without a branch (a select, :func:`_wins`): the winner of
random data is unpredictable, and a mispredicted branch costs more than the
whole comparison. The common case, 2×2 windows at stride 2 inside the input,
has loops of its own with the four taps unrolled, which the compiler turns
into vector code along the rows (much faster than the general loop); its
backward writes every element of a row, the winner's gradient or 0, in order.

The loops serve 1-D and 2-D pooling (1-D is 2-D with one row) of float32 and
float64 NumPy arrays; anything else goes to the reference. Inputs below
kernels/_common.PARALLEL_MIN_ELEMENTS run on one thread.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from .._common import FLOAT_DTYPES, PARALLEL_MIN_ELEMENTS
from .._compile import first_calls_noticed
from . import pooling_spec

__all__ = ["max_pool_forward", "max_pool_backward"]

_OPTIONS = dict(cache=True, error_model="numpy")
_NOTICED = first_calls_noticed("the CPU max-pooling kernels")


@njit(**_OPTIONS)
def _first_tap_inside(start, dilation, kernel):
    """The index of the first tap start + i·dilation ≥ 0 (at most kernel − 1)."""
    if start >= 0:
        return 0
    return min((-start + dilation - 1) // dilation, kernel - 1)


@njit(**_OPTIONS)
def _wins(value, peak):
    """The reference's rule: a larger value or a NaN takes the window (no branch)."""
    return (value > peak) | (value != value)


@njit(**_OPTIONS)
def _pool_plane(x, best, arg, geometry):
    """Any window: its taps in raster order, those in the padding skipped."""
    kh, kw, sh, sw, ph, pw, dh, dw = geometry
    height, width = x.shape
    for oh in range(best.shape[0]):
        top = oh * sh - ph
        first_row = _first_tap_inside(top, dh, kh)
        for ow in range(best.shape[1]):
            left = ow * sw - pw
            peak = -np.inf
            winner = first_row * kw + _first_tap_inside(left, dw, kw)
            for i in range(kh):
                h = top + i * dh
                if h < 0 or h >= height:
                    continue
                for j in range(kw):
                    w = left + j * dw
                    if w < 0 or w >= width:
                        continue
                    value = x[h, w]
                    wins = _wins(value, peak)
                    peak = value if wins else peak
                    winner = i * kw + j if wins else winner
            best[oh, ow] = peak
            arg[oh, ow] = winner


@njit(**_OPTIONS)
def _pool_plane_2x2(x, best, arg):
    """2×2 windows at stride 2, all inside: four taps unrolled, which the compiler
    turns into vector code along the row."""
    for oh in range(best.shape[0]):
        upper, lower = x[2 * oh], x[2 * oh + 1]
        peaks, winners = best[oh], arg[oh]
        for ow in range(peaks.shape[0]):
            peak, winner = upper[2 * ow], 0
            for tap, value in ((1, upper[2 * ow + 1]), (2, lower[2 * ow]),
                               (3, lower[2 * ow + 1])):
                wins = _wins(value, peak)
                peak = value if wins else peak
                winner = tap if wins else winner
            peaks[ow], winners[ow] = peak, winner


@njit(**_OPTIONS)
def _unpool_plane(grad, arg, dx, geometry):
    kh, kw, sh, sw, ph, pw, dh, dw = geometry
    dx[:] = 0
    for oh in range(grad.shape[0]):
        for ow in range(grad.shape[1]):
            i, j = divmod(arg[oh, ow], kw)
            dx[oh * sh - ph + i * dh, ow * sw - pw + j * dw] += grad[oh, ow]


@njit(**_OPTIONS)
def _unpool_plane_2x2(grad, arg, dx):
    """Each window's gradient to its winning tap, 0 to the other three (and 0 to
    a last row or column that no window reads). The loop runs along the rows of
    dx, so that its stores are contiguous; 0 + g, as the reference adds."""
    dx[2 * grad.shape[0]:] = 0
    dx[:, 2 * grad.shape[1]:] = 0
    for oh in range(grad.shape[0]):
        upper, lower = dx[2 * oh], dx[2 * oh + 1]
        grads, winners = grad[oh], arg[oh]
        for w in range(2 * grads.shape[0]):
            g = grads[w >> 1] + 0.0
            tap = winners[w >> 1] - (w & 1)        # 0 or 2 where column w won
            upper[w] = g if tap == 0 else 0.0
            lower[w] = g if tap == 2 else 0.0


@_NOTICED
@njit(**_OPTIONS)
def _pool_serial(x, best, arg, geometry, two_by_two):
    for plane in range(x.shape[0]):
        if two_by_two:
            _pool_plane_2x2(x[plane], best[plane], arg[plane])
        else:
            _pool_plane(x[plane], best[plane], arg[plane], geometry)


@_NOTICED
@njit(parallel=True, **_OPTIONS)
def _pool_parallel(x, best, arg, geometry, two_by_two):
    for plane in prange(x.shape[0]):
        if two_by_two:
            _pool_plane_2x2(x[plane], best[plane], arg[plane])
        else:
            _pool_plane(x[plane], best[plane], arg[plane], geometry)


@_NOTICED
@njit(**_OPTIONS)
def _unpool_serial(grad, arg, dx, geometry, two_by_two):
    for plane in range(grad.shape[0]):
        if two_by_two:
            _unpool_plane_2x2(grad[plane], arg[plane], dx[plane])
        else:
            _unpool_plane(grad[plane], arg[plane], dx[plane], geometry)


@_NOTICED
@njit(parallel=True, **_OPTIONS)
def _unpool_parallel(grad, arg, dx, geometry, two_by_two):
    for plane in prange(grad.shape[0]):
        if two_by_two:
            _unpool_plane_2x2(grad[plane], arg[plane], dx[plane])
        else:
            _unpool_plane(grad[plane], arg[plane], dx[plane], geometry)


def _compiled_case(a, kernel):
    return type(a) is np.ndarray and a.dtype in FLOAT_DTYPES and len(kernel) in (1, 2)


def _as_2d(kernel, stride, padding, dilation):
    """The geometry of 1-D or 2-D pooling as 2-D pooling (one row for 1-D)."""
    if len(kernel) == 1:
        kernel, stride, padding, dilation = ((1,) + kernel, (1,) + stride, (0,) + padding,
                                             (1,) + dilation)
    return tuple(int(v) for v in (*kernel, *stride, *padding, *dilation))


def _two_by_two(geometry, shape, out):
    """Whether the windows are 2×2 at stride 2 and all inside the input."""
    return (geometry == (2, 2, 2, 2, 0, 0, 1, 1) and 2 * out[-2] <= shape[-2]
            and 2 * out[-1] <= shape[-1])


def _planes(a, spatial):
    """``a`` as a C-ordered (planes, H, W) array (H = 1 for one spatial dim)."""
    return np.ascontiguousarray(a).reshape((-1,) + (1,) * (2 - len(spatial)) + spatial)


def max_pool_forward(x, kernel, stride, padding, dilation, out):
    """``(best, arg)`` as :func:`tinynet.kernels.ops.pooling_spec.max_pool_forward`."""
    if not _compiled_case(x, kernel):
        return pooling_spec.max_pool_forward(x, kernel, stride, padding, dilation, out)
    n = len(kernel)
    shape = x.shape[:-n] + tuple(out)
    best, arg = np.empty(shape, x.dtype), np.empty(shape, np.int32)
    run = _pool_parallel if x.size >= PARALLEL_MIN_ELEMENTS else _pool_serial
    geometry = _as_2d(kernel, stride, padding, dilation)
    run(_planes(x, x.shape[-n:]), _planes(best, tuple(out)), _planes(arg, tuple(out)),
        geometry, _two_by_two(geometry, x.shape, out))
    return best, arg


def max_pool_backward(grad, arg, shape, kernel, stride, padding, dilation, out):
    """The input's gradient, as :func:`tinynet.kernels.ops.pooling_spec.max_pool_backward`."""
    if not _compiled_case(grad, kernel) or type(arg) is not np.ndarray:
        return pooling_spec.max_pool_backward(grad, arg, shape, kernel, stride, padding,
                                                   dilation, out)
    n = len(kernel)
    dx = np.empty(shape, grad.dtype)
    run = _unpool_parallel if dx.size >= PARALLEL_MIN_ELEMENTS else _unpool_serial
    geometry = _as_2d(kernel, stride, padding, dilation)
    run(_planes(grad, tuple(out)), _planes(arg.astype(np.int32, copy=False), tuple(out)),
        _planes(dx, tuple(shape[-n:])), geometry, _two_by_two(geometry, shape, out))
    return dx
