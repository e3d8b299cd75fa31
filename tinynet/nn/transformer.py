"""The Transformer encoder (Vaswani et al., 2017, Section 3.1), as ``torch.nn``'s.

Each layer is self-attention then a position-wise feed-forward network
(Eq. 2: FFN(x) = activation(x W_1 + b_1) W_2 + b_2), each sub-layer with a
residual connection and a LayerNorm. Where the LayerNorm sits is the
difference Xiong et al. (2020) analyse:

    Post-LN (norm_first=False, the original):  x = LN(x + Sublayer(x))
    Pre-LN  (norm_first=True):                 x = x + Sublayer(LN(x))

Pre-LN keeps an identity path from the input to the output, so its gradients
are well behaved at initialization and it trains without a learning-rate
warm-up; Post-LN needs the warm-up. The decoder and the whole encoder–decoder
are in :mod:`tinynet.nn.transformer_decoder`.
"""
from __future__ import annotations

import copy

from ..backend import get_array_module
from ..hyperparameters import check_count
from ..ops.attention import causal_bias
from . import functional as F
from .attention import MultiheadAttention, additive_mask
from .containers import ModuleList
from .layers import Dropout, Linear
from .module import Module
from .normalization import LayerNorm

__all__ = ["TransformerEncoderLayer", "TransformerEncoder"]

_ACTIVATIONS = {"relu": F.relu, "gelu": F.gelu}


def activation_fn(where, activation):
    """The feed-forward activation: 'relu', 'gelu' or a callable (a Module or a function)."""
    if isinstance(activation, str):
        if activation not in _ACTIVATIONS:
            raise ValueError(f"{where}: activation should be relu/gelu or a callable, "
                             f"not {activation!r}")
        return _ACTIVATIONS[activation]
    if not callable(activation):
        raise TypeError(f"{where}: activation must be 'relu', 'gelu' or a callable, got "
                        f"{type(activation).__name__}")
    return activation


def sequence_length(x, batch_first):
    """The length of a (T, N, E), (N, T, E) with ``batch_first``, or unbatched (T, E) input."""
    return x.shape[1 if batch_first and x.ndim == 3 else 0]


def batch_size(where, x, name, batch_first):
    """The batch size of a 3-D input, None for an unbatched 2-D one."""
    if x.ndim not in (2, 3):
        raise ValueError(f"{where}: {name} must be 3-D (batched) or 2-D (unbatched), got "
                         f"shape {tuple(x.shape)}")
    return x.shape[0 if batch_first else 1] if x.ndim == 3 else None


def check_masks(where, nhead, batch, queries, keys, names, attn_mask, key_padding_mask):
    """A ValueError naming the mask (``names``: the attention mask's, the key padding
    mask's) whose shape is not (L, S) or (N·nhead, L, S), or (N, S), or (S,) unbatched."""
    shapes = [(queries, keys), ((batch or 1) * nhead, queries, keys)]
    if attn_mask is not None and tuple(attn_mask.shape) not in shapes:
        raise ValueError(f"{where}: {names[0]} has shape {tuple(attn_mask.shape)}, expected "
                         f"{shapes[0]} or {shapes[1]}")
    shape = (keys,) if batch is None else (batch, keys)
    if key_padding_mask is not None and tuple(key_padding_mask.shape) != shape:
        raise ValueError(f"{where}: {names[1]} has shape {tuple(key_padding_mask.shape)}, "
                         f"expected {shape}")


def is_causal_mask(mask, size):
    """Whether the additive ``mask`` is the (size, size) causal mask: −∞ above the
    diagonal, 0 elsewhere (PyTorch's detection for ``is_causal=None``)."""
    if mask is None or tuple(mask.shape) != (size, size):
        return False
    xp = get_array_module(mask.array)
    return bool((mask.array == causal_bias(xp, size, size, mask.dtype)).all())


class TransformerEncoderLayer(Module):
    """Self-attention and a feed-forward network, each with a residual and a
    LayerNorm (Pre-LN with ``norm_first``, else Post-LN; see the module docstring).

    src (S, N, E), or (N, S, E) with ``batch_first``, or (S, E) -> the same
    shape. ``src_mask`` (S, S) or (N·nhead, S, S) and ``src_key_padding_mask``
    (N, S) follow MultiheadAttention's conventions (bool True: may NOT attend).
    Sub-modules and their names are PyTorch's, so state dicts interchange.
    """

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation="relu", layer_norm_eps: float = 1e-5,
                 batch_first: bool = False, norm_first: bool = False, bias: bool = True,
                 device=None, dtype=None):
        super().__init__()
        check_count("TransformerEncoderLayer", "dim_feedforward", dim_feedforward)
        factory = dict(device=device, dtype=dtype)
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                            batch_first=batch_first, **factory)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **factory)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **factory)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.activation = activation_fn("TransformerEncoderLayer", activation)

    def forward(self, src, src_mask=None, src_key_padding_mask=None, is_causal: bool = False):
        """``src`` (S, N, E), (N, S, E) with ``batch_first``, or (S, E) -> the same shape.
        Post-LN: x = norm1(x + SA(x)), x = norm2(x + FF(x)); Pre-LN (``norm_first``):
        x = x + SA(norm1(x)), x = x + FF(norm2(x)). ``src_mask`` and
        ``src_key_padding_mask`` are passed to the self-attention; ``is_causal`` is a hint
        that ``src_mask`` is the causal mask.
        """
        src_mask = additive_mask(src_mask, "src_mask", src)
        src_key_padding_mask = additive_mask(src_key_padding_mask, "src_key_padding_mask", src)
        batch_first = self.self_attn.batch_first
        length = sequence_length(src, batch_first)
        check_masks("TransformerEncoderLayer", self.self_attn.num_heads,
                    batch_size("TransformerEncoderLayer", src, "src", batch_first), length,
                    length, ("src_mask", "src_key_padding_mask"), src_mask, src_key_padding_mask)
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            x = x + self._ff_block(self.norm2(x))
        else:
            x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
            x = self.norm2(x + self._ff_block(x))
        return x

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal):
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                           need_weights=False, is_causal=is_causal)[0]
        return self.dropout1(x)

    def _ff_block(self, x):
        x = self.linear2(self.dropout(self.activation(self.linear1(x))))
        return self.dropout2(x)


class TransformerEncoder(Module):
    """``num_layers`` deep copies of ``encoder_layer`` (``layers.0``, ``layers.1``,
    …), then the optional final ``norm`` (a Pre-LN stack needs one: its last
    residual sum is otherwise never normalized).

    ``forward(src, mask, src_key_padding_mask, is_causal)``: shapes as
    TransformerEncoderLayer. ``is_causal=None`` detects a causal ``mask``, as
    PyTorch does. ``enable_nested_tensor`` and ``mask_check`` concern PyTorch's
    nested-tensor fast path; they are accepted and have no effect.
    """

    def __init__(self, encoder_layer, num_layers: int, norm=None,
                 enable_nested_tensor: bool = True, mask_check: bool = True):
        super().__init__()
        self.num_layers = check_count("TransformerEncoder", "num_layers", num_layers)
        self.layers = ModuleList(copy.deepcopy(encoder_layer) for _ in range(num_layers))
        self.norm = norm
        self.enable_nested_tensor = enable_nested_tensor
        self.mask_check = mask_check

    def forward(self, src, mask=None, src_key_padding_mask=None, is_causal=None):
        """``src`` through each layer in turn (with ``mask`` and ``src_key_padding_mask``),
        then ``norm`` if given: the same shape as ``src``, (S, N, E) or batch first.
        """
        mask = additive_mask(mask, "mask", src)
        if is_causal is None:
            is_causal = self._is_causal_mask(mask, src)
        output = src
        for layer in self.layers:
            output = layer(output, src_mask=mask, src_key_padding_mask=src_key_padding_mask,
                           is_causal=is_causal)
        if self.norm is not None:
            output = self.norm(output)
        return output

    def _is_causal_mask(self, mask, src):
        """Whether ``mask`` is the (S, S) causal mask: −∞ above the diagonal, 0 elsewhere."""
        return is_causal_mask(mask, sequence_length(src, self.layers[0].self_attn.batch_first))
