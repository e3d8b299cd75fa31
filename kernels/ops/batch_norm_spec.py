"""Batch normalization in NumPy/CuPy array code: the spec of the compiled
kernels (kernels/ops/batch_norm_cpu.py), and the CUDA backend's kernels.

``x`` is (N, C, *spatial); each channel c is normalized by its own ``mean[c]``
and ``rstd[c]`` = 1/sqrt(var[c] + ε), then scaled by γ_c and shifted by β_c:

    x̂ = (x − μ_c) · rstd_c          y = γ_c x̂ + β_c

The statistics are the batch's (training) or the running ones (eval). With
the batch's, the backward differentiates through them too: with g = dy · γ_c
and m = N·H·W values per channel,

    dx = rstd_c · (g − mean(g) − x̂ · Σ(g x̂) / dof)

(dof = m for the biased variance, m − 1 for the unbiased one); with running
statistics they are constants and dx = g · rstd_c. Either way dγ = Σ dy x̂ and
dβ = Σ dy over all but the channel axis. The forward keeps nothing but rstd:
the backward recomputes x̂ from x, the same bits as the forward's.
"""
from __future__ import annotations

from tinynet.backend import get_array_module

__all__ = ["batch_norm_statistics", "channel_rstd", "batch_norm_forward",
           "batch_norm_backward"]


def _channel_view(x):
    """Reshape per-channel values (C,) to broadcast against (N, C, *spatial)."""
    return (1, -1) + (1,) * (x.ndim - 2)


def _axes(x):
    return (0,) + tuple(range(2, x.ndim))


def batch_norm_statistics(x):
    """``(mean, squares)`` per channel: the mean of each channel's N·H·W values, of
    x's dtype, and their Σ (x − mean)², summed in float64: a float32 channel's squares
    past about 1.8·10¹⁹ would overflow float32, and the channel come out as β."""
    xp = get_array_module(x)
    mean = x.mean(axis=_axes(x))
    deviations = x - mean.reshape(_channel_view(x))
    squares = xp.square(deviations, dtype=xp.float64).sum(axis=_axes(x))
    return mean, squares


def channel_rstd(var, eps, dtype):
    """1/sqrt(var + ε) per channel, in ``dtype`` (x's). ``var`` may be float64: a
    float32 batch's variance, which may be past float32's range while 1/σ is not."""
    return (1.0 / get_array_module(var).sqrt(var + eps)).astype(dtype, copy=False)


def batch_norm_forward(x, gain, bias, mean, var, eps):
    """``(y, rstd)``: y = γ (x − mean) · rstd + β per channel, rstd = 1/sqrt(var + ε);
    ``gain`` and ``bias`` (C,) or None."""
    view = _channel_view(x)
    rstd = channel_rstd(var, eps, x.dtype)
    x_hat = (x - mean.reshape(view)) * rstd.reshape(view)
    y = x_hat if gain is None else x_hat * gain.reshape(view)
    return (y if bias is None else y + bias.reshape(view)), rstd


def batch_norm_backward(grad, x, mean, rstd, gain, has_bias, dof):
    """``(dx, dgain, dbias)`` (dgain None without a gain, dbias None without a bias).
    ``dof`` None: the statistics were constants; a number: they were the batch's."""
    view, axes = _channel_view(x), _axes(x)
    x_hat = (x - mean.reshape(view)) * rstd.reshape(view)
    g = grad if gain is None else grad * gain.reshape(view)
    if dof is None:
        dx = g * rstd.reshape(view)
    else:
        dx = rstd.reshape(view) * (g - g.mean(axis=axes, keepdims=True)
                                   - x_hat * (g * x_hat).sum(axis=axes, keepdims=True) / dof)
    dgain = None if gain is None else (grad * x_hat).sum(axis=axes)
    dbias = grad.sum(axis=axes) if has_bias else None
    return dx, dgain, dbias
