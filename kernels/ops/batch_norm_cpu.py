"""Batch normalization on the CPU: the statistics, forward and backward of
:mod:`tinynet.kernels.ops.batch_norm_spec` as compiled loops.

x (N, C, *spatial) is read as N·C *planes*, plane (n, c) holding the H·W
values of sample n in channel c, contiguous. The reference makes some eight
NumPy passes forward and fifteen backward, each a reduction over all but the
channel axis or a broadcast against it, on one thread. Here:

* **sums** (the statistics; Σ dy and Σ dy·x̂ in the backward) are taken per
  channel, a channel's planes one after another, each plane's sum in a
  vectorized loop in float64 (the squares of the deviations too, as in the
  reference), then added in order: a task per channel, so the
  result does not depend on the thread count;
* **elementwise steps** (x̂, γ x̂ + β; dx) are one loop per plane, with the
  per-channel coefficients computed once; a task per sample in the forward.

x̂ is computed as the reference computes it, (x − μ) · rstd in x's dtype, so
the forward's values are the reference's bits; the sums differ from NumPy's
pairwise ones only in rounding. Inputs with spatial dims, of float32 or
float64 with every per-channel array of the same dtype, are compiled; others
(BatchNorm1d's (N, C), mixed dtypes) go to the reference. Inputs below
kernels/_common.PARALLEL_MIN_ELEMENTS run on one thread.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from .._common import FLOAT_DTYPES, PARALLEL_MIN_ELEMENTS
from .._compile import first_calls_noticed
from . import batch_norm_spec
from .batch_norm_spec import channel_rstd

__all__ = ["batch_norm_statistics", "batch_norm_forward", "batch_norm_backward"]

_OPTIONS = dict(cache=True, error_model="numpy")
_NOTICED = first_calls_noticed("the CPU batch-norm kernels")
# A plane's sums may be reordered (``reassoc``), so that LLVM vectorizes them.
_SUMS = dict(_OPTIONS, fastmath={"reassoc", "nsz"})


@njit(**_SUMS)
def _plane_sum(plane):
    total = 0.0
    for s in range(plane.shape[0]):
        total += plane[s]
    return total


@njit(**_SUMS)
def _plane_squares(plane, mean):
    """Σ (x − mean)², each deviation squared in float64 (the reference's)."""
    total = 0.0
    for s in range(plane.shape[0]):
        deviation = np.float64(plane[s] - mean)
        total += deviation * deviation
    return total


@njit(**_SUMS)
def _plane_grad_sums(grad, x, mean, rstd):
    """(Σ dy, Σ dy · x̂) over one plane."""
    grad_total, product_total = 0.0, 0.0
    for s in range(x.shape[0]):
        x_hat = (x[s] - mean) * rstd
        grad_total += grad[s]
        product_total += grad[s] * x_hat
    return grad_total, product_total


@njit(**_OPTIONS)
def _channel_statistics(x, c, mean, squares):
    batch = x.shape[0]
    total = 0.0
    for n in range(batch):
        total += _plane_sum(x[n, c])
    mean[c] = total / (batch * x.shape[2])
    total = 0.0
    for n in range(batch):
        total += _plane_squares(x[n, c], mean[c])
    squares[c] = total


@njit(**_OPTIONS)
def _normalize_plane(source, target, m, r, g, b, has_gain, has_bias):
    """target = ((source − μ) · rstd) · γ + β, a step skipped without γ or β."""
    for s in range(source.shape[0]):
        value = (source[s] - m) * r
        if has_gain:
            value = value * g
        if has_bias:
            value = value + b
        target[s] = value


@njit(**_OPTIONS)
def _channel_backward(grad, x, c, mean, rstd, gain, dof, dx, terms, gain_grad, bias_grad):
    """Σ dy and Σ dy x̂ of channel c, then its dx; ``dof`` 0 for constant statistics."""
    batch = x.shape[0]
    m, r, g = mean[c], rstd[c], gain[c]
    grad_total, product_total = 0.0, 0.0
    for n in range(batch):
        plane_grad, plane_product = _plane_grad_sums(grad[n, c], x[n, c], m, r)
        grad_total += plane_grad
        product_total += plane_product
    bias_grad[c], gain_grad[c] = grad_total, product_total
    terms[c, 0] = g * grad_total / (batch * x.shape[2]) if dof else 0.0   # mean(g)
    terms[c, 1] = g * product_total / dof if dof else 0.0                 # Σ(g x̂) / dof
    mean_g, slope = terms[c, 0], terms[c, 1]                  # rounded to x's dtype
    for n in range(batch):
        dy, source, target = grad[n, c], x[n, c], dx[n, c]
        if dof == 0:
            for s in range(source.shape[0]):
                target[s] = dy[s] * g * r
            continue
        for s in range(source.shape[0]):
            x_hat = (source[s] - m) * r
            target[s] = r * (dy[s] * g - mean_g - x_hat * slope)


@_NOTICED
@njit(**_OPTIONS)
def _statistics_serial(x, mean, squares):
    for c in range(x.shape[1]):
        _channel_statistics(x, c, mean, squares)


@_NOTICED
@njit(parallel=True, **_OPTIONS)
def _statistics_parallel(x, mean, squares):
    for c in prange(x.shape[1]):
        _channel_statistics(x, c, mean, squares)


@_NOTICED
@njit(**_OPTIONS)
def _normalize_serial(x, gain, bias, mean, rstd, y, has_gain, has_bias):
    for n in range(x.shape[0]):
        for c in range(x.shape[1]):
            _normalize_plane(x[n, c], y[n, c], mean[c], rstd[c], gain[c], bias[c],
                             has_gain, has_bias)


@_NOTICED
@njit(parallel=True, **_OPTIONS)
def _normalize_parallel(x, gain, bias, mean, rstd, y, has_gain, has_bias):
    for n in prange(x.shape[0]):
        for c in range(x.shape[1]):
            _normalize_plane(x[n, c], y[n, c], mean[c], rstd[c], gain[c], bias[c],
                             has_gain, has_bias)


@_NOTICED
@njit(**_OPTIONS)
def _backward_serial(grad, x, mean, rstd, gain, dof, dx, terms, gain_grad, bias_grad):
    for c in range(x.shape[1]):
        _channel_backward(grad, x, c, mean, rstd, gain, dof, dx, terms, gain_grad, bias_grad)


@_NOTICED
@njit(parallel=True, **_OPTIONS)
def _backward_parallel(grad, x, mean, rstd, gain, dof, dx, terms, gain_grad, bias_grad):
    for c in prange(x.shape[1]):
        _channel_backward(grad, x, c, mean, rstd, gain, dof, dx, terms, gain_grad, bias_grad)


def _planes(a):
    """(N, C, *spatial) as a C-ordered (N, C, H·W...) array."""
    return np.ascontiguousarray(a).reshape(a.shape[0], a.shape[1], -1)


def _compiled_case(x, *per_channel):
    return (type(x) is np.ndarray and x.ndim >= 3 and x.dtype in FLOAT_DTYPES
            and x.shape[2:].count(0) == 0 and x.shape[1] > 0 and x.shape[0] > 0
            and all(a is None or (type(a) is np.ndarray and a.dtype == x.dtype)
                    for a in per_channel))


def _driver(serial, parallel, x):
    return parallel if x.size >= PARALLEL_MIN_ELEMENTS else serial


def batch_norm_statistics(x):
    """``(mean, squares)`` as :func:`tinynet.kernels.ops.batch_norm_spec.batch_norm_statistics`."""
    if not _compiled_case(x):
        return batch_norm_spec.batch_norm_statistics(x)
    mean, squares = np.empty(x.shape[1], x.dtype), np.empty(x.shape[1])     # squares in float64
    _driver(_statistics_serial, _statistics_parallel, x)(_planes(x), mean, squares)
    return mean, squares


def batch_norm_forward(x, gain, bias, mean, var, eps):
    """``(y, rstd)`` as :func:`tinynet.kernels.ops.batch_norm_spec.batch_norm_forward`."""
    if not _compiled_case(x, gain, bias, mean):
        return batch_norm_spec.batch_norm_forward(x, gain, bias, mean, var, eps)
    rstd = channel_rstd(var, eps, x.dtype)
    y = np.empty(x.shape, x.dtype)
    _driver(_normalize_serial, _normalize_parallel, x)(
        _planes(x), rstd if gain is None else gain, rstd if bias is None else bias, mean,
        rstd, _planes(y), gain is not None, bias is not None)
    return y, rstd


def batch_norm_backward(grad, x, mean, rstd, gain, has_bias, dof):
    """``(dx, dgain, dbias)`` as
    :func:`tinynet.kernels.ops.batch_norm_spec.batch_norm_backward`."""
    if not _compiled_case(x, grad, mean, rstd, gain) or grad.shape != x.shape:
        return batch_norm_spec.batch_norm_backward(grad, x, mean, rstd, gain, has_bias,
                                                        dof)
    channels = x.shape[1]
    dx, terms = np.empty(x.shape, x.dtype), np.empty((channels, 2), x.dtype)
    gain_grad, bias_grad = np.empty(channels, x.dtype), np.empty(channels, x.dtype)
    _driver(_backward_serial, _backward_parallel, x)(
        _planes(grad), _planes(x), mean, rstd,
        np.ones(channels, x.dtype) if gain is None else gain, float(dof or 0), _planes(dx),
        terms, gain_grad, bias_grad)
    return dx, (None if gain is None else gain_grad), (bias_grad if has_bias else None)
