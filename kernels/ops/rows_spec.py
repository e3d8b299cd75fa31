"""Kernels along rows (the softmax family, cross-entropy, row sums, a bias): the spec
of ``rows_cpu``."""
from __future__ import annotations

import numpy as np

from tinynet.backend import get_array_module

__all__ = ["peak", "softmax_forward", "softmax_backward", "log_softmax_forward",
           "log_softmax_backward", "cross_entropy_forward", "cross_entropy_backward",
           "sum_last_axis", "sum_last_axis_of_product", "sum_last_axis_backward", "add_bias"]


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


def sum_last_axis_of_product(a, b):
    """Σ_j a[..., j] b[..., j]: a product of two arrays of one shape, summed over the
    last axis (a column factor's gradient)."""
    return (a * b).sum(axis=-1)


def sum_last_axis_backward(grad, size):
    """The gradient of the sum over a last axis of ``size``: each value of ``grad``
    repeated along it (a broadcast view)."""
    xp = get_array_module(grad)
    return xp.broadcast_to(grad[..., None], grad.shape + (size,))


def add_bias(out, bias):
    """``out += bias`` along the last axis, in place (a layer's bias); returns ``out``."""
    out += bias
    return out
