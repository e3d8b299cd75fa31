"""Scaled dot-product attention as one graph node (Vaswani et al., 2017, Eq. 1).

    S = scale · Q Kᵀ + M          scores, M the additive mask (0 or −∞ where masked)
    P = softmax(S) along keys     each query's weights over the keys
    O = dropout(P) V

The backward is written out, as LayerNorm's is: with D the dropout mask
scaled by 1/(1 − p) (all ones without dropout),

    dV = (P ∘ D)ᵀ dO
    dP = (dO Vᵀ) ∘ D
    dS = P ∘ (dP − rowsum(dP ∘ P))     the softmax's Jacobian applied to dP
    dQ = scale · dS K,  dK = scale · dSᵀ Q,  dM = dS

A query whose keys are all masked gets P = 0, so its output and gradients
are 0 (PyTorch's convention), not the NaN of softmax over −∞ only. The
softmax and its backward are kernels of the backend's table
(``attention_softmax_forward``/``_backward``: the spec in kernels/reference.py,
compiled row loops on the CPU in kernels/cpu_softmax.py).
Every product is batched over the leading axes, which broadcast. Without
dropout, the whole node may run as one kernel of the table
(``attention_heads_forward``/``_backward``, kernels/cpu_attention.py: every
head at once, on the CPU's cores); where it returns None, as the spec's
always does, the products and the softmax above run.

O is laid out in memory as Q is, and each gradient as its input (dQ as Q...),
as PyTorch's CPU attention does. A GPT's q, k and v are views of one
projection (batch, L, 3, heads, E): its heads then merge back into (batch, L,
C) as a view, and the three gradients go into the projection's layout in one
copy of whole rows (``Unbind.backward``), or in none where the heads kernel
wrote them into one buffer shaped as the projection (ops/layout.py).
"""
from __future__ import annotations

import numpy as np

from ..autograd import Function, unbroadcast
from ..backend import device_of, get_array_module, get_backend, kernels_for
from .layout import empty_product_like

__all__ = ["ScaledDotProductAttention", "causal_bias", "scaled_dot_product_attention"]

_causal_biases = {}


def causal_bias(xp, queries, keys, dtype):
    """The additive mask of ``is_causal``: 0 where key j <= query i, −∞ above the
    diagonal (aligned at the top left, as PyTorch); cached per shape and device."""
    key = (xp.__name__, queries, keys, np.dtype(dtype).str)
    if key not in _causal_biases:
        upper = xp.triu(xp.ones((queries, keys), dtype=bool), 1)
        _causal_biases[key] = xp.where(upper, -np.inf, 0).astype(dtype)
    return _causal_biases[key]


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


class ScaledDotProductAttention(Function):
    """``softmax(scale · q kᵀ + mask) v`` (see the module docstring).

    q (…, L, E), k (…, S, E), v (…, S, Ev) -> (…, L, Ev). ``bias`` is the
    additive mask (…, L, S) or None; ``dropout_p`` drops attention weights.
    """

    @staticmethod
    def forward(ctx, q, k, v, bias, dropout_p, scale):
        kernels = kernels_for(q)
        ctx.meta = (scale, None if bias is None else bias.shape)
        heads = None if dropout_p > 0 else kernels.attention_heads_forward(q, k, v, bias, scale)
        if heads is not None:           # every head at once, where the device has a kernel
            out, weights = heads
            ctx.save_for_backward(q, k, v, weights, None)
            return out
        weights = kernels.attention_softmax_forward(q @ _swap(k), bias, scale)
        kept = weights
        drop = None
        if dropout_p > 0:
            rng = get_backend(device_of(q)).rng
            drop = (rng.random(weights.shape, dtype=weights.dtype) >= dropout_p)
            drop = drop.astype(weights.dtype) * weights.dtype.type(1 / (1 - dropout_p))
            kept = weights * drop
        ctx.save_for_backward(q, k, v, weights, drop)
        return _product(kept, v, q)

    @staticmethod
    def backward(ctx, grad):
        q, k, v, weights, drop = ctx.saved
        scale, bias_shape = ctx.meta
        kernels = kernels_for(q)
        if drop is None and not (bias_shape is not None and ctx.needs_input_grad(3)):
            heads = kernels.attention_heads_backward(q, k, v, weights, grad, scale)
            if heads is not None:
                return (*heads, None, None, None)
        grad_v = None
        if ctx.needs_input_grad(2):
            kept = weights if drop is None else weights * drop
            grad_v = _product(_swap(kept), grad, v, v.shape)
        grad_weights = grad @ _swap(v)
        if drop is not None:
            grad_weights *= drop
        grad_bias = None
        if bias_shape is not None and ctx.needs_input_grad(3):     # dM is dS unscaled
            grad_scores = kernels.attention_softmax_backward(grad_weights, weights, 1.0)
            grad_bias = unbroadcast(grad_scores.copy(), bias_shape)
            grad_scores *= grad_scores.dtype.type(scale)
        else:
            grad_scores = kernels.attention_softmax_backward(grad_weights, weights, scale)
        grad_q = _product(grad_scores, k, q, q.shape) if ctx.needs_input_grad(0) else None
        grad_k = _product(_swap(grad_scores), q, k, k.shape) if ctx.needs_input_grad(1) else None
        return grad_q, grad_k, grad_v, grad_bias, None, None


def _attention_bias(attn_mask, is_causal, q, k):
    """The additive mask as an array or Tensor (or None): a bool mask (True: the
    query may attend to the key, PyTorch's convention) becomes 0 / −∞; a float
    mask is added as it is, and gets a gradient if it requires one."""
    from ..tensor import Tensor
    xp = get_array_module(q.array)
    queries, keys = q.shape[-2], k.shape[-2]
    if is_causal:
        if attn_mask is not None:
            raise ValueError("scaled_dot_product_attention: give attn_mask or is_causal=True, "
                             "not both")
        return causal_bias(xp, queries, keys, q.dtype)
    if attn_mask is None:
        return None
    mask = attn_mask.array if isinstance(attn_mask, Tensor) else xp.asarray(attn_mask)
    try:
        np.broadcast_shapes(mask.shape, q.shape[:-1] + (keys,))
    except ValueError:
        raise ValueError(
            f"scaled_dot_product_attention: attn_mask of shape {tuple(mask.shape)} does not "
            f"broadcast to the scores' shape {tuple(q.shape[:-1]) + (keys,)}") from None
    if mask.dtype == np.bool_:
        return xp.where(mask, 0, -np.inf).astype(q.dtype)
    if mask.dtype != q.dtype:
        raise TypeError(f"scaled_dot_product_attention: attn_mask must be bool or of the "
                        f"query's dtype {q.dtype}, got {mask.dtype}")
    return attn_mask if isinstance(attn_mask, Tensor) else mask


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, scale=None):
    """softmax(scale · Q Kᵀ + mask) V, as ``torch.nn.functional.scaled_dot_product_attention``.

    query (…, L, E), key (…, S, E), value (…, S, Ev) -> (…, L, Ev); the leading
    axes (batch, heads) broadcast. ``scale`` defaults to 1/√E. ``attn_mask`` is
    bool (True: may attend) or additive, broadcast to (…, L, S); ``is_causal``
    lets query i attend to keys 0..i. Dropout with ``dropout_p`` applies
    whenever it is positive (pass 0 in eval mode, as PyTorch's callers do).
    """
    from ..hyperparameters import check_real
    for name, t in (("query", query), ("key", key), ("value", value)):
        if t.ndim < 2 or not np.issubdtype(t.dtype, np.floating):
            raise ValueError(f"scaled_dot_product_attention: {name} must be a floating point "
                             f"tensor of at least 2 dims, got shape {tuple(t.shape)} and "
                             f"dtype {t.dtype}")
    if query.shape[-1] != key.shape[-1] or key.shape[-2] != value.shape[-2]:
        raise ValueError(
            f"scaled_dot_product_attention: query {tuple(query.shape)}, key "
            f"{tuple(key.shape)} and value {tuple(value.shape)} do not fit (query and key "
            "need the same last dim, key and value the same number of positions)")
    try:
        np.broadcast_shapes(query.shape[:-2], key.shape[:-2], value.shape[:-2])
    except ValueError:
        raise ValueError(
            f"scaled_dot_product_attention: the leading (batch) dims of query "
            f"{tuple(query.shape)}, key {tuple(key.shape)} and value {tuple(value.shape)} "
            "do not broadcast together") from None
    if not query.dtype == key.dtype == value.dtype:
        raise TypeError(f"scaled_dot_product_attention: query, key and value have dtypes "
                        f"{query.dtype}, {key.dtype}, {value.dtype}; expected one dtype")
    dropout_p = check_real("scaled_dot_product_attention", "dropout_p", dropout_p, 0, 1,
                           high_included=False)
    if scale is None:         # with no features (E = 0) every score is 0, at any scale
        scale = 1 / np.sqrt(query.shape[-1]) if query.shape[-1] else 1.0
    scale = check_real("scaled_dot_product_attention", "scale", scale)
    bias = _attention_bias(attn_mask, is_causal, query, key)
    return ScaledDotProductAttention.apply(query, key, value, bias, dropout_p, float(scale))
