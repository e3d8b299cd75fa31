"""Reference kernels in plain NumPy/CuPy array code: the spec the fast kernels
(the rungs of ``tinynet.kernels.ladder``) are tested against.

Layer normalization (Ba, Kiros & Hinton, 2016, Eq. 4) normalizes each row
``a`` of H summed inputs by its own statistics::

    μ = (1/H) Σ_i a_i          σ = sqrt((1/H) Σ_i (a_i − μ)² + ε)
    â_i = (a_i − μ) / σ        y_i = g_i â_i + b_i

Arrays are 2-D: one row per sample (all leading axes flattened), H columns.
``mean`` and ``rstd`` = 1/σ are returned per row, in float64, for the backward.

Numerics: rows are shifted by their first element before the statistics are
taken. For x = 10⁴ + 0.01·N(0, 1) in float32 the plain two-pass mean is off by
about one float32 ulp of 10⁴ (≈ 10⁻³), which is 10 % of σ: x̂ comes out wrong
by that much. The shifted row holds values of size σ, whose mean is exact to
float32 precision. Statistics are accumulated in float64: the saved float64
mean keeps x̂ accurate in the backward too, and a float32 row's squares cannot
overflow them (for the float32 row [10²⁰, 1, 2, 3] PyTorch's LayerNorm returns
NaN; this one the exact [1.73, −0.58, −0.58, −0.58]). A row whose squares
overflow float64 as well gets NaN.

RMSNorm (Zhang & Sennrich, 2019) drops the mean: each row is divided by its root
mean square, rms = sqrt((1/H) Σ_i a_i² + ε), and scaled by g. With no mean to
subtract there is nothing to cancel; the squares are taken and summed in float64,
which also keeps them finite for float32 inputs above 10¹⁹.
"""
from __future__ import annotations

import numpy as np

from tinynet.backend import get_array_module

__all__ = ["layer_norm_forward", "layer_norm_backward", "rms_norm_forward", "rms_norm_backward",
           "reciprocal_std"]



def layer_norm_forward(x, gain, bias, eps):
    """Normalize each row of ``x`` (rows, H); return ``(y, mean, rstd)``.

    ``gain`` and ``bias`` have shape (H,), or are None for no affine step.
    ``y`` has x's dtype; ``mean`` and ``rstd`` are float64, one per row.
    """
    shift = x[:, :1]
    shifted = x - shift                                    # values of size σ, not 10⁴
    shifted_mean = shifted.mean(axis=1, keepdims=True, dtype=np.float64)
    centered = shifted - shifted_mean                      # a_i − μ, in float64
    variance = (centered * centered).mean(axis=1, keepdims=True)
    rstd = reciprocal_std(variance, eps)                   # 1/σ
    x_hat = centered * rstd
    y = x_hat if gain is None else x_hat * gain
    y = y if bias is None else y + bias
    mean = shift + shifted_mean
    return y.astype(x.dtype), mean[:, 0], rstd[:, 0]


def reciprocal_std(variance, eps):
    """1/σ = 1/sqrt(variance + ε), NaN where the variance overflowed float64 (a
    float64 row past about 10¹⁵⁴): 1/sqrt(∞) would be 0, and the row would come
    out as β, with a zero gradient, instead of showing that it diverged."""
    xp = get_array_module(variance)
    return xp.where(xp.isinf(variance), xp.nan, 1.0 / xp.sqrt(variance + eps))


def layer_norm_backward(dy, x, mean, rstd, gain):
    """Gradients of layer_norm_forward: ``(dx, dgain, dbias)``.

    With g = dy · gain and x̂ = (x − μ)/σ, differentiating through μ and σ gives::

        dx = (1/σ) · (g − mean(g) − x̂ · mean(g · x̂))      per row
        dgain = Σ_rows dy · x̂        dbias = Σ_rows dy

    The two subtracted terms are why Σ_i dx_i = 0 and Σ_i dx_i x̂_i = 0 for
    every row when gain = 1: the output cannot change if the input is shifted
    or scaled along the row (the invariances of the paper's Table 1).
    ``dgain`` and ``dbias`` are None when ``gain`` is None.
    """
    x_hat = (x - mean[:, None]) * rstd[:, None]            # float64
    g = dy if gain is None else dy * gain
    dx = rstd[:, None] * (g - g.mean(axis=1, keepdims=True)
                          - x_hat * (g * x_hat).mean(axis=1, keepdims=True))
    if gain is None:
        return dx.astype(x.dtype), None, None
    dgain = (dy * x_hat).sum(axis=0)
    dbias = dy.sum(axis=0, dtype=np.float64)
    return dx.astype(x.dtype), dgain.astype(gain.dtype), dbias.astype(gain.dtype)


def rms_norm_forward(x, gain, eps):
    """Divide each row of ``x`` (rows, H) by its root mean square; return ``(y, rstd)``.

    ::

        rstd = 1 / sqrt((1/H) Σ_i x_i² + ε)        x̂ = x · rstd        y = g · x̂

    ``gain`` has shape (H,), or is None for no affine step. ``y`` has x's dtype;
    ``rstd`` is float64, one per row.
    """
    x64 = x.astype(np.float64, copy=False)
    mean_square = (x64 * x64).mean(axis=1, keepdims=True)
    rstd = reciprocal_std(mean_square, eps)
    x_hat = x64 * rstd
    y = x_hat if gain is None else x_hat * gain
    return y.astype(x.dtype), rstd[:, 0]


def rms_norm_backward(dy, x, rstd, gain):
    """Gradients of rms_norm_forward: ``(dx, dgain)``.

    With g = dy · gain and x̂ = x · rstd, differentiating through rstd
    (∂rstd/∂x_i = −rstd³ x_i / H) gives::

        dx = rstd · (g − x̂ · mean(g · x̂))      per row
        dgain = Σ_rows dy · x̂

    Unlike LayerNorm's there is no mean(g) term (the output changes when a row
    is shifted), and Σ_i dx_i x_i = rstd³ · ε · Σ_i g_i x_i: zero when ε = 0, for
    any gain, because the output cannot change when a row is scaled.
    ``dgain`` is None when ``gain`` is None.
    """
    x_hat = x.astype(np.float64, copy=False) * rstd[:, None]
    g = dy if gain is None else dy * gain
    dx = rstd[:, None] * (g - x_hat * (g * x_hat).mean(axis=1, keepdims=True))
    if gain is None:
        return dx.astype(x.dtype), None
    dgain = (dy * x_hat).sum(axis=0)
    return dx.astype(x.dtype), dgain.astype(gain.dtype)
