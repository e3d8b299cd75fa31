"""Multi-head attention (Vaswani et al., 2017, Section 3.2), as ``torch.nn.MultiheadAttention``.

    head_i = Attention(Q W_i^Q, K W_i^K, V W_i^V)         Eq. (1) for each of the h heads
    MultiHead(Q, K, V) = Concat(head_1, …, head_h) W^O

The three projections are stacked in ``in_proj_weight`` (3E, E): rows [0, E)
project the queries, [E, 2E) the keys, [2E, 3E) the values; head i reads
columns [i·E/h, (i+1)·E/h) of each projection. ``out_proj`` is W^O.
"""
from __future__ import annotations

import math

import numpy as np

from .. import creation
from ..backend import get_array_module
from ..hyperparameters import check_count, check_real
from ..ops.attention import ScaledDotProductAttention
from ..tensor import Tensor
from . import functional as F
from . import init
from .layers import Linear
from .module import Module, Parameter

__all__ = ["MultiheadAttention", "NonDynamicallyQuantizableLinear"]


class NonDynamicallyQuantizableLinear(Linear):
    """The Linear of ``MultiheadAttention.out_proj``, under PyTorch's name."""


class _AttentionWithWeights(ScaledDotProductAttention):
    """The attention node that also returns its weights P ∘ D (after dropout, as
    PyTorch returns them), read from the same softmax. Its backward is the node's:
    the weights' own gradient joins dP = dO Vᵀ before the softmax's backward."""

    @staticmethod
    def forward(ctx, q, k, v, bias, dropout_p, scale):
        out = ScaledDotProductAttention.forward(ctx, q, k, v, bias, dropout_p, scale)
        weights, drop = ctx.saved[3:]
        return out, weights if drop is None else weights * drop


def additive_mask(mask, name, like):
    """An attention mask as a float tensor to add to the scores. A bool mask
    follows MultiheadAttention's convention (True: may NOT attend, the
    opposite of ``scaled_dot_product_attention``'s) and becomes −∞ / 0; a
    float mask is returned as it is, keeping its gradient."""
    if mask is None:
        return None
    if not isinstance(mask, Tensor):
        mask = Tensor._make(creation._to_array(mask, device=like.device))
    if mask.dtype == np.bool_:
        xp = get_array_module(mask.array)
        return Tensor._make(xp.where(mask.array, -np.inf, 0).astype(like.dtype))
    if mask.dtype != like.dtype:
        raise TypeError(f"{name} must be bool or of the input's dtype {like.dtype}, "
                        f"got {mask.dtype}")
    return mask


def _xavier_uniform_(tensor):
    """U(−a, a) with a = √(6 / (fan_in + fan_out)) (Glorot & Bengio, 2010)."""
    fan_out, fan_in = tensor.shape
    bound = math.sqrt(6.0 / (fan_in + fan_out))
    return init.uniform_(tensor, -bound, bound)


class MultiheadAttention(Module):
    """Multi-head attention with PyTorch's names, layouts, init and masks.

    query (L, N, E), key and value (S, N, E) -> (L, N, E); (N, L, E) with
    ``batch_first``; (L, E) and (S, E) unbatched. ``forward`` returns
    ``(attn_output, attn_weights)``: the weights are (N, L, S) averaged over
    heads, (N, h, L, S) with ``average_attn_weights=False``, None with
    ``need_weights=False`` (then the attention is ``F.scaled_dot_product_attention``).

    Masks are bool (True: may NOT attend) or float (added to the scores):
    ``attn_mask`` (L, S) or (N·h, L, S), ``key_padding_mask`` (N, S) or (S,).
    ``is_causal`` is PyTorch's hint that ``attn_mask`` is the causal mask: it
    needs ``attn_mask`` and replaces it only when neither weights nor a key
    padding mask are asked for. A query with every key masked gets zero
    weights (PyTorch gives NaN with ``need_weights=True``, zeros without).
    Dropout drops attention weights in training mode only.
    """

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 add_bias_kv: bool = False, add_zero_attn: bool = False, kdim=None, vdim=None,
                 batch_first: bool = False, device=None, dtype=None):
        super().__init__()
        self.embed_dim = check_count("MultiheadAttention", "embed_dim", embed_dim)
        self.num_heads = check_count("MultiheadAttention", "num_heads", num_heads)
        if embed_dim % num_heads:
            raise ValueError(f"MultiheadAttention: embed_dim {embed_dim} is not divisible by "
                             f"num_heads {num_heads}")
        if add_bias_kv or add_zero_attn:
            raise NotImplementedError("MultiheadAttention: add_bias_kv and add_zero_attn are "
                                      "not supported")
        if kdim not in (None, embed_dim) or vdim not in (None, embed_dim):
            raise NotImplementedError(f"MultiheadAttention: only kdim = vdim = embed_dim "
                                      f"({embed_dim}) is supported, got {kdim} and {vdim}")
        self.kdim = self.vdim = embed_dim
        self.head_dim = embed_dim // num_heads
        self.dropout = check_real("MultiheadAttention", "dropout", dropout, 0, 1,
                                  high_included=False)
        self.batch_first = batch_first
        self.in_proj_weight = Parameter(_xavier_uniform_(
            creation.empty(3 * embed_dim, embed_dim, dtype=dtype, device=device)))
        if bias:
            self.in_proj_bias = Parameter(creation.zeros(3 * embed_dim, dtype=dtype,
                                                         device=device))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias,
                                                        dtype=dtype, device=device)
        if bias:
            init.zeros_(self.out_proj.bias)

    def forward(self, query, key, value, key_padding_mask=None, need_weights: bool = True,
                attn_mask=None, average_attn_weights: bool = True, is_causal: bool = False):
        """Attention(Q, K, V) = softmax(Q Kᵀ / √d_k) V (Vaswani et al., 2017, Eq. 1) per head
        on the projected inputs, then ``out_proj``: query (L, N, E), key and value
        (S, N, E) (batch first: (N, L, E)...) or unbatched (L, E) -> ``(attn_output,
        attn_weights)``, the output the query's shape and the weights (N, L, S) averaged
        over heads (None with ``need_weights=False``). The masks are the class docstring's.
        """
        key_padding_mask = additive_mask(key_padding_mask, "key_padding_mask", query)
        attn_mask = additive_mask(attn_mask, "attn_mask", query)
        batched = self._check_shapes(query, key, value, key_padding_mask, attn_mask)
        if is_causal and attn_mask is None:
            raise ValueError("MultiheadAttention: is_causal=True is a hint that attn_mask is "
                             "the causal mask, and needs attn_mask")
        batch_first = self.batch_first or not batched
        self_attention = query is key and key is value
        if not batched:
            query, key, value = query.unsqueeze(0), key.unsqueeze(0), value.unsqueeze(0)
        w, b = self.in_proj_weight, self.in_proj_bias
        if self_attention:
            q, k, v = F.linear(query, w, b).chunk(3, dim=-1)
        else:
            biases = (None,) * 3 if b is None else b.chunk(3)
            q, k, v = (F.linear(x, wi, bi)
                       for x, wi, bi in zip((query, key, value), w.chunk(3), biases, strict=True))
        q, k, v = (self._split_heads(x, batch_first) for x in (q, k, v))
        batch, _, queries, _ = q.shape
        keys = k.shape[2]

        causal = is_causal and key_padding_mask is None and not need_weights
        bias = None
        if not causal and attn_mask is not None:
            bias = (attn_mask if attn_mask.ndim == 2
                    else attn_mask.reshape(-1, self.num_heads, queries, keys))
        if key_padding_mask is not None:
            padding = key_padding_mask.reshape(batch, 1, 1, keys)
            bias = padding if bias is None else bias + padding
        dropout_p = self.dropout if self.training else 0.0
        if need_weights:
            out, weights = _AttentionWithWeights.apply(q, k, v, bias, dropout_p,
                                                       1 / math.sqrt(self.head_dim))
        else:
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=bias, dropout_p=dropout_p,
                                                 is_causal=causal)
            weights = None
        # (N, h, L, E/h) -> Concat(head_1, …, head_h), in the input's layout
        out = out.permute(0, 2, 1, 3) if batch_first else out.permute(2, 0, 1, 3)
        out = self.out_proj(out.reshape(*out.shape[:2], self.embed_dim))
        if weights is not None and average_attn_weights:
            weights = weights.mean(dim=1)
        if not batched:
            out = out.squeeze(0)
            weights = None if weights is None else weights.squeeze(0)
        return out, weights

    def _split_heads(self, x, batch_first):
        """(N, T, E) or (T, N, E) -> (N, h, T, E/h)."""
        x = x.reshape(*x.shape[:2], self.num_heads, self.head_dim)
        return x.permute(0, 2, 1, 3) if batch_first else x.permute(1, 2, 0, 3)

    def _check_shapes(self, query, key, value, key_padding_mask, attn_mask):
        """Whether the input is batched; a ValueError naming the shapes if they do not fit."""
        def fail(problem):
            raise ValueError(f"MultiheadAttention({self.embed_dim}, {self.num_heads}): "
                             f"{problem}")

        if query.ndim not in (2, 3):
            fail(f"query must be 2-D (unbatched) or 3-D, got shape {tuple(query.shape)}")
        batched = query.ndim == 3
        if key.ndim != query.ndim or tuple(key.shape) != tuple(value.shape):
            fail(f"key {tuple(key.shape)} and value {tuple(value.shape)} must have the same "
                 f"shape, with as many dims as query {tuple(query.shape)}")
        if query.shape[-1] != self.embed_dim or key.shape[-1] != self.embed_dim:
            fail(f"query {tuple(query.shape)} and key {tuple(key.shape)} must end in "
                 f"embed_dim {self.embed_dim}")
        seq, batch = (1, 0) if self.batch_first and batched else (0, 1)
        queries, keys = query.shape[seq], key.shape[seq]
        batch_size = query.shape[batch] if batched else 1
        if batched and key.shape[batch] != batch_size:
            fail(f"query {tuple(query.shape)} and key {tuple(key.shape)} have different "
                 "batch sizes")
        if key_padding_mask is not None:
            expected = (batch_size, keys) if batched else (keys,)
            if tuple(key_padding_mask.shape) != expected:
                fail(f"key_padding_mask has shape {tuple(key_padding_mask.shape)}, expected "
                     f"{expected}")
        if attn_mask is not None:
            shapes = [(queries, keys), (batch_size * self.num_heads, queries, keys)]
            if tuple(attn_mask.shape) not in shapes:
                fail(f"attn_mask has shape {tuple(attn_mask.shape)}, expected {shapes[0]} or "
                     f"{shapes[1]}")
        return batched

    def extra_repr(self):
        return (f"embed_dim={self.embed_dim}, num_heads={self.num_heads}, "
                f"dropout={self.dropout}, batch_first={self.batch_first}")
