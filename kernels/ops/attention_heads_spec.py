"""Scaled dot-product attention, every head (Vaswani et al., 2017, Eq. 1), as plain
array code: the spec of ``attention_heads_cpu``, and what the CUDA table runs.

    S = scale · Q Kᵀ + M          scores, M the additive mask (0 or −∞ where masked)
    P = softmax(S) along keys     each query's weights over the keys
    O = (P ∘ D) V                 D the dropout mask scaled by 1/(1 − p), or all ones

and the backward, with dP̃ the gradient that reaches the weights P ∘ D directly
(where a layer returns them, as MultiheadAttention does), else 0:

    dV = (P ∘ D)ᵀ dO
    dP = (dO Vᵀ + dP̃) ∘ D
    dS = P ∘ (dP − rowsum(dP ∘ P))     the softmax's Jacobian applied to dP
    dQ = scale · dS K,  dK = scale · dSᵀ Q,  dM = dS

Every product is batched over the leading axes, which broadcast; a gradient is
summed over the axes its input was broadcast along. O is laid out in memory as Q
is, and each gradient as its input (dQ as Q...), as PyTorch's CPU attention does.
The softmax and its backward are the ``attention_softmax_*`` kernels, passed in:
their spec by default, the CPU's compiled row loops where ``attention_heads_cpu``
runs this composite.
"""
from __future__ import annotations

import numpy as np

from tinynet.autograd import unbroadcast
from tinynet.backend import get_array_module
from tinynet.ops.layout import empty_product_like

from .attention_softmax_spec import attention_softmax_backward, attention_softmax_forward

__all__ = ["attention_heads_forward", "attention_heads_backward"]


def _swap(a):
    return a.swapaxes(-1, -2)


def _product(a, b, layout_of, shape=None):
    """a @ b, laid out in memory as the array ``layout_of`` is where it has as many
    axes and its rows are contiguous (as BLAS writes them), else C-ordered; summed
    to ``shape``, a gradient's, over the axes broadcast against it."""
    xp = get_array_module(a)
    full = np.broadcast_shapes(a.shape[:-2], b.shape[:-2]) + (a.shape[-2], b.shape[-1])
    out = xp.matmul(a, b, out=empty_product_like(xp, full, xp.result_type(a, b), layout_of))
    return out if shape is None else unbroadcast(out, shape)


def attention_heads_forward(q, k, v, bias, scale, drop=None,
                            softmax_forward=attention_softmax_forward):
    """``(O, P)``: the output and the weights (before dropout). q (…, L, E), k (…, S,
    E), v (…, S, Ev); ``bias`` the additive mask broadcast to (…, L, S), or None;
    ``drop`` D, of the weights' shape, or None."""
    weights = softmax_forward(q @ _swap(k), bias, scale)
    kept = weights if drop is None else weights * drop
    return _product(kept, v, q), weights


def attention_heads_backward(q, k, v, weights, drop, grad, grad_weights, scale, needs,
                             bias_shape, softmax_backward=attention_softmax_backward):
    """``(dQ, dK, dV, dM)`` from ``grad`` = dO (or None) and ``grad_weights`` = dP̃
    (or None); ``needs`` says which of q, k, v and the mask want theirs (the others
    are None), ``bias_shape`` is the mask's shape (None: no mask)."""
    needs_q, needs_k, needs_v, needs_bias = needs
    grad_v = None
    if grad is not None:
        if needs_v:
            kept = weights if drop is None else weights * drop
            grad_v = _product(_swap(kept), grad, v, v.shape)
        from_out = grad @ _swap(v)
        grad_weights = from_out if grad_weights is None else from_out + grad_weights
    else:
        grad_weights = grad_weights.copy()          # the softmax's backward writes into it
    if drop is not None:
        grad_weights *= drop
    grad_bias = None
    if bias_shape is not None and needs_bias:       # dM is dS unscaled
        grad_scores = softmax_backward(grad_weights, weights, 1.0)
        grad_bias = unbroadcast(grad_scores.copy(), bias_shape)
        grad_scores *= grad_scores.dtype.type(scale)
    else:
        grad_scores = softmax_backward(grad_weights, weights, scale)
    grad_q = _product(grad_scores, k, q, q.shape) if needs_q else None
    grad_k = _product(_swap(grad_scores), q, k, k.shape) if needs_k else None
    return grad_q, grad_k, grad_v, grad_bias
