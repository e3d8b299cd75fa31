"""Scaled dot-product attention as one graph node (Vaswani et al., 2017, Eq. 1).

    S = scale · Q Kᵀ + M          scores, M the additive mask (0 or −∞ where masked)
    P = softmax(S) along keys     each query's weights over the keys
    O = dropout(P) V

The node calls one kernel of the device's table each way,
``attention_heads_forward`` and ``attention_heads_backward``: their spec,
kernels/ops/attention_heads_spec.py, is the composite above (batched products,
the mask, the softmax, a product) and its backward written out, as LayerNorm's
is; on the CPU, kernels/ops/attention_heads_cpu.py runs every head at once on the
CPU's cores where it can, the spec's composite elsewhere.

A query whose keys are all masked gets P = 0, so its output and gradients are 0
(PyTorch's convention), not the NaN of softmax over −∞ only. A GPT's q, k and v
are views of one projection (batch, L, 3, heads, E): its heads then merge back
into (batch, L, C) as a view, and the three gradients go into the projection's
layout in one copy of whole rows (``Unbind.backward``), or in none where the
heads kernel wrote them into one buffer shaped as the projection (ops/layout.py).
"""
from __future__ import annotations

import numpy as np

from ..autograd import Function
from ..backend import device_of, get_array_module, get_backend, kernels_for

__all__ = ["scaled_dot_product_attention"]

_causal_biases = {}


def causal_bias(xp, queries, keys, dtype):
    """The additive mask of ``is_causal``: 0 where key j <= query i, −∞ above the
    diagonal (aligned at the top left, as PyTorch); cached per shape and device."""
    key = (xp.__name__, queries, keys, np.dtype(dtype).str)
    if key not in _causal_biases:
        upper = xp.triu(xp.ones((queries, keys), dtype=bool), 1)
        _causal_biases[key] = xp.where(upper, -np.inf, 0).astype(dtype)
    return _causal_biases[key]


def dropout_mask(q, k, dropout_p):
    """D: for each attention weight, 0 with probability ``dropout_p``, else
    1/(1 − p), drawn from the device's generator."""
    shape = np.broadcast_shapes(q.shape[:-2], k.shape[:-2]) + (q.shape[-2], k.shape[-2])
    dtype = get_array_module(q).result_type(q, k)
    drop = get_backend(device_of(q)).rng.random(shape, dtype=dtype) >= dropout_p
    return drop.astype(dtype) * dtype.type(1 / (1 - dropout_p))


class ScaledDotProductAttention(Function):
    """``softmax(scale · q kᵀ + mask) v`` (see the module docstring).

    q (…, L, E), k (…, S, E), v (…, S, Ev) -> (…, L, Ev). ``bias`` is the
    additive mask (…, L, S) or None; ``dropout_p`` drops attention weights.
    """

    @staticmethod
    def forward(ctx, q, k, v, bias, dropout_p, scale):
        drop = dropout_mask(q, k, dropout_p) if dropout_p > 0 else None
        out, weights = kernels_for(q).attention_heads_forward(q, k, v, bias, scale, drop)
        ctx.save_for_backward(q, k, v, weights, drop)
        ctx.meta = (scale, None if bias is None else bias.shape)
        return out

    @staticmethod
    def backward(ctx, grad, grad_weights=None):
        """dQ, dK, dV and dM from dO (``grad``) and, where a layer also returned the
        weights, their own gradient (``grad_weights``)."""
        q, k, v, weights, drop = ctx.saved
        scale, bias_shape = ctx.meta
        needs = tuple(ctx.needs_input_grad(i) for i in range(4))
        grads = kernels_for(q).attention_heads_backward(q, k, v, weights, drop, grad,
                                                        grad_weights, scale, needs, bias_shape)
        return (*grads, None, None)


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
