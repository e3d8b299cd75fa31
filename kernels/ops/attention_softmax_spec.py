"""The attention's softmax and its backward: the spec of ``attention_softmax_cpu``."""
from __future__ import annotations

from tinynet.backend import get_array_module

__all__ = ["attention_softmax_forward", "attention_softmax_backward"]


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
