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

import functools
import math

import numpy as np

from tinynet.backend import get_array_module

__all__ = ["layer_norm_forward", "layer_norm_backward", "rms_norm_forward", "rms_norm_backward",
           "reciprocal_std",
           "adam_step", "erf", "gelu_forward", "gelu_backward", "attention_softmax_forward",
           "attention_softmax_backward", "attention_heads_forward", "attention_heads_backward",
           "sigmoid_forward", "sigmoid_backward", "silu_forward",
           "silu_backward", "tanh_backward", "relu_forward", "relu_backward",
           "gelu_tanh_forward", "gelu_tanh_backward", "peak", "softmax_forward", "softmax_backward",
           "log_softmax_forward", "log_softmax_backward", "cross_entropy_forward",
           "cross_entropy_backward", "sum_last_axis", "sum_last_axis_backward", "add_bias",
           "add_rows", "sorted_runs"]

SQRT_HALF = math.sqrt(0.5)
ONE_OVER_SQRT_TWO_PI = 1.0 / math.sqrt(2.0 * math.pi)
SQRT_TWO_OVER_PI = math.sqrt(2.0 / math.pi)
GELU_TANH_CUBIC = 0.044715      # Hendrycks & Gimpel (2016), Eq. (2)


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


def adam_step(param, grad, exp_avg, exp_avg_sq, step, lr, beta1, beta2, eps,
              weight_decay, decay=1.0):
    """One Adam update in place, with PyTorch's exact rule (``torch.optim.Adam``)::

        g ← g + λ θ                        (if weight_decay λ > 0)
        m ← β₁ m + (1 − β₁) g              v ← β₂ v + (1 − β₂) g²
        θ ← θ · decay                      (AdamW: decay = 1 − lr λ)
        θ ← θ − (lr / (1 − β₁ᵗ)) · m / (sqrt(v) / sqrt(1 − β₂ᵗ) + ε)
    """
    xp = get_array_module(param)
    if decay != 1:
        param *= decay
    if weight_decay:
        grad = grad + weight_decay * param
    exp_avg *= beta1
    exp_avg += (1 - beta1) * grad
    exp_avg_sq *= beta2
    exp_avg_sq += (1 - beta2) * grad * grad
    step_size = lr / (1 - beta1 ** step)
    denom = xp.sqrt(exp_avg_sq)
    denom /= np.sqrt(1 - beta2 ** step)
    denom += eps
    param -= step_size * exp_avg / denom


@functools.cache
def _erf_ufunc(xp_name):
    """The C library's erf as a ufunc: Numba compiles ``math.erf`` (kept in its
    on-disk cache) on the CPU; CuPy ships one."""
    if xp_name == "cupy":
        from cupyx.scipy.special import erf as cupy_erf
        return cupy_erf
    import numba

    @numba.vectorize(["float32(float32)", "float64(float64)"], cache=True)
    def c_erf(x):
        return math.erf(x)
    return c_erf


def erf(x):
    """erf(x) = (2/√π) ∫₀ˣ e^(−t²) dt elementwise, by the C library's ``erf``
    (``erff`` in float32), as PyTorch computes it. Integer inputs give float64."""
    if x.dtype.kind != "f":
        x = x.astype(np.float64)
    return _erf_ufunc(get_array_module(x).__name__)(x)


def gelu_forward(x):
    """GELU(x) = x Φ(x) (Hendrycks & Gimpel, 2016), Φ(x) = (1 + erf(x/√2))/2.
    Returns (y, Φ(x)): the backward reuses Φ."""
    cdf = 0.5 * (1 + erf(x * SQRT_HALF))
    return x * cdf, cdf


def gelu_backward(grad, x, cdf):
    """dGELU/dx = Φ(x) + x φ(x), φ(x) = e^(−x²/2)/√(2π), times the incoming ``grad``."""
    xp = get_array_module(x)
    pdf = xp.exp(-0.5 * x * x) * ONE_OVER_SQRT_TWO_PI
    return grad * (cdf + x * pdf)


def attention_softmax_forward(scores, bias, scale):
    """P = softmax(scale · scores + bias) over the last axis (the attention weights
    of Vaswani et al. 2017, Eq. 1), written into ``scores``; ``bias`` is the
    additive mask (0 or −∞), broadcast to the scores, or None. A row that is −∞
    everywhere (a query that may attend to nothing) becomes 0, as in PyTorch."""
    xp = get_array_module(scores)
    scores *= scores.dtype.type(scale)
    if bias is not None:
        scores += bias
    peak = scores.max(axis=-1, keepdims=True)
    masked_rows = xp.isneginf(peak)
    peak[masked_rows] = 0
    scores -= peak
    xp.exp(scores, out=scores)
    total = scores.sum(axis=-1, keepdims=True)
    total[masked_rows] = 1
    scores *= 1 / total
    return scores


def attention_softmax_backward(grad_weights, weights, scale):
    """dS = scale · P ∘ (dP − rowsum(dP ∘ P)): the gradient at the scores S given the
    one at the weights P = softmax(scale · S + bias), written into ``grad_weights``."""
    product = grad_weights * weights
    grad_weights[...] = product
    grad_weights -= weights * product.sum(axis=-1, keepdims=True)
    grad_weights *= grad_weights.dtype.type(scale)
    return grad_weights


def attention_heads_forward(q, k, v, bias, scale):
    """The whole attention of every head in one kernel, where a device has one
    (kernels/cpu_attention.py). Its spec is ScaledDotProductAttention's own batched
    products and the softmax above (tinynet/ops/attention.py), which run where this
    returns None, as it always does here."""
    return None


def attention_heads_backward(q, k, v, weights, grad, scale):
    """The gradients of :func:`attention_heads_forward`'s attention; None here."""
    return None



# ------------------------------------------------------------ the activations
def sigmoid_forward(x):
    """σ(x) = 1 / (1 + e^−x), as PyTorch computes it. Below about −88.7 (float32;
    −709 in float64) e^−x overflows to inf and σ comes out 0, its limit."""
    with np.errstate(over="ignore"):
        return 1 / (1 + get_array_module(x).exp(-x))


def sigmoid_backward(grad, y):
    """dσ/dx = σ (1 − σ), from the output ``y``, times ``grad``."""
    return grad * y * (1 - y)


def silu_forward(x):
    """``(SiLU(x), σ(x))``: SiLU(x) = x σ(x) (also called swish), and σ(x) for the
    backward."""
    s = sigmoid_forward(x)
    return x * s, s


def silu_backward(grad, x, s):
    """dSiLU/dx = σ(x) (1 + x (1 − σ(x))), times ``grad``; ``s`` is σ(x)."""
    return grad * s * (1 + x * (1 - s))


def tanh_backward(grad, y):
    """d tanh x / dx = 1 − tanh² x, from the output ``y``, times ``grad``."""
    return grad * (1 - y * y)


def relu_forward(x):
    """max(x, 0), NaN where x is NaN."""
    xp = get_array_module(x)
    y = xp.zeros_like(x)
    return xp.maximum(x, y, out=y)      # NumPy's loop against a scalar 0 is slower


def relu_backward(grad, y):
    """``grad`` where the output is above 0 or NaN, and 0 where it is 0 (as PyTorch)."""
    from tinynet.ops.elementwise import zero_where
    return zero_where(y <= 0, grad)


def _gelu_tanh_inner(x):
    return SQRT_TWO_OVER_PI * (x + GELU_TANH_CUBIC * x * x * x)


def gelu_tanh_forward(x):
    """GELU(x) ≈ x (1 + tanh u) / 2, u = √(2/π) (x + 0.044715 x³) (PyTorch's
    ``approximate='tanh'``, operation for operation)."""
    return 0.5 * x * (1 + get_array_module(x).tanh(_gelu_tanh_inner(x)))


def gelu_tanh_backward(grad, x):
    """d/dx = (1 + tanh u)/2 + x/2 (1 − tanh² u) du/dx, du/dx = √(2/π) (1 + 3·0.044715 x²)."""
    square = x * x
    tanh_inner = get_array_module(x).tanh(SQRT_TWO_OVER_PI * (x + GELU_TANH_CUBIC * square * x))
    inner_slope = SQRT_TWO_OVER_PI * (1 + 3 * GELU_TANH_CUBIC * square)
    slope = 0.5 * (1 + tanh_inner) + 0.5 * x * (1 - tanh_inner * tanh_inner) * inner_slope
    return grad * slope


# ------------------------------------------------------------------- the rows
def peak(x, axis):
    """The maximum of ``x`` along ``axis`` (an int or a tuple), kept as a dim of
    size 1: the shift of the softmax family. Over an empty axis it is −∞, the
    maximum of nothing, as PyTorch's softmax and logsumexp take it (a sum of no
    exponentials is 0, and log 0 = −∞), where NumPy's max refuses."""
    if x.size:
        return x.max(axis=axis, keepdims=True)
    axes = {a % x.ndim for a in (axis if isinstance(axis, tuple) else (axis,))}
    shape = tuple(1 if a in axes else n for a, n in enumerate(x.shape))
    return get_array_module(x).full(shape, -np.inf, x.dtype)


def softmax_forward(x, axis):
    """softmax(x) = e^(x − max) / Σ e^(x − max) along ``axis``: shifted by the
    maximum, so that nothing overflows."""
    y = get_array_module(x).exp(x - peak(x, axis))
    y /= y.sum(axis=axis, keepdims=True)
    return y


def softmax_backward(grad, y, axis):
    """y ∘ (g − Σ g ∘ y) along ``axis``, from the output ``y``."""
    return y * (grad - (grad * y).sum(axis=axis, keepdims=True))


def log_softmax_forward(x, axis):
    """log softmax(x) = (x − max) − log Σ e^(x − max) along ``axis``."""
    xp = get_array_module(x)
    shifted = x - peak(x, axis)
    return shifted - xp.log(xp.exp(shifted).sum(axis=axis, keepdims=True))


def log_softmax_backward(grad, y, axis):
    """g − softmax · Σ g along ``axis``, softmax = e^y from the output ``y``."""
    return grad - get_array_module(y).exp(y) * grad.sum(axis=axis, keepdims=True)


def cross_entropy_forward(logits, target):
    """``(losses, probs)`` of (N, C) logits and N class indices: losses_i =
    log Σ_j e^(z_ij) − z_i[t_i], the log-normalizer shifted by the row's maximum,
    and probs = softmax(z) = e^(z − log Σ e^z), which the backward needs."""
    xp = get_array_module(logits)
    shift = peak(logits, 1)
    log_norm = xp.log(xp.exp(logits - shift).sum(axis=1, keepdims=True)) + shift
    losses = log_norm[:, 0] - logits[xp.arange(logits.shape[0]), target]
    return losses, xp.exp(logits - log_norm)


def cross_entropy_backward(probs, scale, target):
    """softmax · s − s at each row's target, in PyTorch's order (log-softmax's
    backward g − softmax · Σg of the NLL's g = −s there); ``scale`` is (N,) or 0-d."""
    xp = get_array_module(probs)
    dlogits = probs * (scale[:, None] if scale.ndim else scale)
    dlogits[xp.arange(probs.shape[0]), target] -= scale
    return dlogits


def sum_last_axis(x):
    """Σ over the last axis."""
    return x.sum(axis=-1)


def sum_last_axis_backward(grad, size):
    """The gradient of the sum over a last axis of ``size``: each value of ``grad``
    repeated along it (a broadcast view)."""
    xp = get_array_module(grad)
    return xp.broadcast_to(grad[..., None], grad.shape + (size,))


def add_bias(out, bias):
    """``out += bias`` along the last axis, in place (a layer's bias); returns ``out``."""
    out += bias
    return out


def sorted_runs(rows):
    """``(order, sorted_rows, starts)``: the stable order that sorts ``rows``, the
    sorted rows, and where each run of equal rows starts in them."""
    order = np.argsort(rows, kind="stable")
    sorted_rows = rows[order]
    starts = np.flatnonzero(np.diff(sorted_rows, prepend=sorted_rows[0] - 1))
    return order, sorted_rows, starts


def add_rows(target, rows, values):
    """``target[rows[i]] += values[i]`` for each i, rows repeating, in place: the
    gradient of reading rows (an embedding). In NumPy the rows are sorted
    (stably) and each run of equal rows summed at once (``add.reduceat``, which
    adds a run's values by NumPy's pairwise summation): ``add.at`` goes element
    by element, several times slower."""
    if not isinstance(target, np.ndarray):
        import cupyx
        cupyx.scatter_add(target, rows, values)
        return
    if rows.size == 0:
        return
    order, sorted_rows, starts = sorted_runs(rows)
    target[sorted_rows[starts]] += np.add.reduceat(values[order], starts, axis=0)
