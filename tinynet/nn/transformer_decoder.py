"""The Transformer decoder and the whole encoder–decoder (Vaswani et al., 2017,
Section 3.1 and Figure 1), as ``torch.nn``'s.

A decoder layer has three sub-layers: self-attention over the target, masked
so that position t attends only to positions ≤ t (the model trains on whole
sequences and still generates one token at a time); attention over the
encoder's output, the *memory* (queries from the decoder, keys and values from
the encoder); and the feed-forward network. Each has a residual connection and
a LayerNorm, placed as in the encoder (:mod:`tinynet.nn.transformer`):

    Post-LN (norm_first=False, Vaswani et al.):  x = LN(x + Sublayer(x))
    Pre-LN  (norm_first=True, Xiong et al. 2020): x = x + Sublayer(LN(x))
"""
from __future__ import annotations

import copy
import math

from .. import creation
from ..hyperparameters import check_count
from . import functional as F
from . import init
from .attention import MultiheadAttention, additive_mask
from .containers import ModuleList
from .layers import Dropout, Linear
from .module import Module
from .normalization import LayerNorm
from .transformer import (
    TransformerEncoder,
    TransformerEncoderLayer,
    activation_fn,
    batch_size,
    check_masks,
    is_causal_mask,
    sequence_length,
)

__all__ = ["TransformerDecoderLayer", "TransformerDecoder", "Transformer"]


def _xavier_uniform_(tensor):
    """U(−a, a) with a = √(6 / (fan_in + fan_out)) (Glorot & Bengio, 2010); a weight of
    more than two dims counts its trailing dims in both fans, as PyTorch."""
    receptive = math.prod(tensor.shape[2:])
    fan_out, fan_in = tensor.shape[0] * receptive, tensor.shape[1] * receptive
    bound = math.sqrt(6.0 / (fan_in + fan_out))
    return init.uniform_(tensor, -bound, bound)


def _check_heads(where, d_model, nhead):
    check_count(where, "d_model", d_model)
    check_count(where, "nhead", nhead)
    if d_model % nhead:
        raise ValueError(f"{where}: d_model {d_model} is not divisible by nhead {nhead}")


class TransformerDecoderLayer(Module):
    """Self-attention over the target, attention over the memory and a feed-forward
    network, each with a residual and a LayerNorm (Pre-LN with ``norm_first``,
    Xiong et al. 2020; else Post-LN, Vaswani et al. 2017; see the module docstring).

    tgt (T, N, E) and memory (S, N, E), or (N, T, E) and (N, S, E) with
    ``batch_first``, or unbatched (T, E) and (S, E) -> the shape of tgt. Masks
    follow MultiheadAttention's conventions (bool True: may NOT attend; float:
    added to the scores): ``tgt_mask`` (T, T) or (N·nhead, T, T),
    ``memory_mask`` (T, S) or (N·nhead, T, S), ``tgt_key_padding_mask`` (N, T)
    and ``memory_key_padding_mask`` (N, S). Sub-modules and their names are
    PyTorch's, so state dicts interchange.
    """

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation=F.relu, layer_norm_eps: float = 1e-5,
                 batch_first: bool = False, norm_first: bool = False, bias: bool = True,
                 device=None, dtype=None):
        super().__init__()
        _check_heads("TransformerDecoderLayer", d_model, nhead)
        check_count("TransformerDecoderLayer", "dim_feedforward", dim_feedforward)
        factory = dict(device=device, dtype=dtype)
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                            batch_first=batch_first, **factory)
        self.multihead_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                                 batch_first=batch_first, **factory)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **factory)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **factory)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.norm3 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.dropout3 = Dropout(dropout)
        self.activation = activation_fn("TransformerDecoderLayer", activation)

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal: bool = False,
                memory_is_causal: bool = False):
        """``tgt`` (T, N, E) and ``memory`` (S, N, E) (batch first: (N, T, E)...) or
        unbatched -> the shape of ``tgt``. Post-LN: x = norm1(x + SA(x)),
        x = norm2(x + MHA(x, memory)), x = norm3(x + FF(x)); Pre-LN (``norm_first``):
        x = x + SA(norm1(x)), x = x + MHA(norm2(x), memory), x = x + FF(norm3(x)).
        ``tgt_is_causal`` and ``memory_is_causal`` are hints that ``tgt_mask`` and
        ``memory_mask`` are causal masks, as MultiheadAttention's ``is_causal``.
        """
        tgt_mask, memory_mask, tgt_key_padding_mask, memory_key_padding_mask = (
            self._checked_masks(tgt, memory, tgt_mask, memory_mask, tgt_key_padding_mask,
                                memory_key_padding_mask))
        x = tgt
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask, tgt_is_causal)
            x = x + self._mha_block(self.norm2(x), memory, memory_mask,
                                    memory_key_padding_mask, memory_is_causal)
            x = x + self._ff_block(self.norm3(x))
        else:
            x = self.norm1(x + self._sa_block(x, tgt_mask, tgt_key_padding_mask, tgt_is_causal))
            x = self.norm2(x + self._mha_block(x, memory, memory_mask, memory_key_padding_mask,
                                               memory_is_causal))
            x = self.norm3(x + self._ff_block(x))
        return x

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal):
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                           need_weights=False, is_causal=is_causal)[0]
        return self.dropout1(x)

    def _mha_block(self, x, memory, attn_mask, key_padding_mask, is_causal):
        x = self.multihead_attn(x, memory, memory, attn_mask=attn_mask,
                                key_padding_mask=key_padding_mask, need_weights=False,
                                is_causal=is_causal)[0]
        return self.dropout2(x)

    def _ff_block(self, x):
        x = self.linear2(self.dropout(self.activation(self.linear1(x))))
        return self.dropout3(x)

    def _checked_masks(self, tgt, memory, *masks):
        """The four masks as additive ones, once tgt, memory and the masks' shapes fit."""
        where, batch_first = "TransformerDecoderLayer", self.self_attn.batch_first
        d_model, nhead = self.self_attn.embed_dim, self.self_attn.num_heads
        batch = batch_size(where, tgt, "tgt", batch_first)
        if batch_size(where, memory, "memory", batch_first) != batch:
            raise ValueError(f"{where}: tgt {tuple(tgt.shape)} and memory "
                             f"{tuple(memory.shape)} must have the same batch size (or both "
                             f"be unbatched), batch_first={batch_first}")
        if tgt.shape[-1] != d_model or memory.shape[-1] != d_model:
            raise ValueError(f"{where}: tgt {tuple(tgt.shape)} and memory "
                             f"{tuple(memory.shape)} must both end in d_model {d_model}")
        names = ("tgt_mask", "memory_mask", "tgt_key_padding_mask", "memory_key_padding_mask")
        tgt_mask, memory_mask, tgt_padding, memory_padding = (
            additive_mask(mask, name, tgt) for mask, name in zip(masks, names, strict=True))
        targets = sequence_length(tgt, batch_first)
        check_masks(where, nhead, batch, targets, targets, names[0::2], tgt_mask, tgt_padding)
        check_masks(where, nhead, batch, targets, sequence_length(memory, batch_first),
                    names[1::2], memory_mask, memory_padding)
        return tgt_mask, memory_mask, tgt_padding, memory_padding


class TransformerDecoder(Module):
    """``num_layers`` deep copies of ``decoder_layer`` (``layers.0``, ``layers.1``,
    …), then the optional final ``norm`` (a Pre-LN stack needs one: its last
    residual sum is otherwise never normalized).

    ``forward(tgt, memory, tgt_mask, memory_mask, tgt_key_padding_mask,
    memory_key_padding_mask, tgt_is_causal, memory_is_causal)``: shapes as
    TransformerDecoderLayer. ``tgt_is_causal=None`` detects a causal
    ``tgt_mask``, as PyTorch does.
    """

    def __init__(self, decoder_layer, num_layers: int, norm=None):
        super().__init__()
        self.num_layers = check_count("TransformerDecoder", "num_layers", num_layers)
        self.layers = ModuleList(copy.deepcopy(decoder_layer) for _ in range(num_layers))
        self.norm = norm

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal=None,
                memory_is_causal: bool = False):
        """``tgt`` through each layer in turn, each attending to ``memory`` (with the
        masks), then ``norm`` if given: the shape of ``tgt``, (T, N, E) or batch first.
        """
        tgt_mask = additive_mask(tgt_mask, "tgt_mask", tgt)
        memory_mask = additive_mask(memory_mask, "memory_mask", tgt)
        if tgt_is_causal is None:
            length = sequence_length(tgt, self.layers[0].self_attn.batch_first)
            tgt_is_causal = is_causal_mask(tgt_mask, length)
        output = tgt
        for layer in self.layers:
            output = layer(output, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                           tgt_key_padding_mask=tgt_key_padding_mask,
                           memory_key_padding_mask=memory_key_padding_mask,
                           tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)
        if self.norm is not None:
            output = self.norm(output)
        return output


class Transformer(Module):
    """The encoder–decoder of Vaswani et al. (2017, Figure 1), as ``torch.nn.Transformer``:
    ``encoder`` (``num_encoder_layers`` TransformerEncoderLayers and the final LayerNorm
    ``encoder.norm``) reads ``src``; ``decoder`` (``num_decoder_layers``
    TransformerDecoderLayers and ``decoder.norm``) reads ``tgt`` and attends to the
    encoder's output. ``norm_first`` makes every layer Pre-LN (Xiong et al., 2020). As
    PyTorch, both stacks end in a LayerNorm whichever the placement (the original
    Post-LN model has none), and every parameter with more than one dimension is
    initialized Xavier-uniform (Glorot & Bengio, 2010), U(−a, a) with
    a = √(6 / (fan_in + fan_out)). ``custom_encoder`` and ``custom_decoder`` replace
    the stacks (and are initialized the same way).
    """

    def __init__(self, d_model: int = 512, nhead: int = 8, num_encoder_layers: int = 6,
                 num_decoder_layers: int = 6, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation=F.relu, custom_encoder=None,
                 custom_decoder=None, layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device=None, dtype=None):
        super().__init__()
        if custom_encoder is None or custom_decoder is None:
            _check_heads("Transformer", d_model, nhead)
        layer_args = (d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps,
                      batch_first, norm_first, bias)
        factory = dict(device=device, dtype=dtype)
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            self.encoder = TransformerEncoder(
                TransformerEncoderLayer(*layer_args, **factory), num_encoder_layers,
                LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory))
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            self.decoder = TransformerDecoder(
                TransformerDecoderLayer(*layer_args, **factory), num_decoder_layers,
                LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory))
        self._reset_parameters()
        self.d_model = d_model
        self.nhead = nhead
        self.batch_first = batch_first

    def forward(self, src, tgt, src_mask=None, tgt_mask=None, memory_mask=None,
                src_key_padding_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, src_is_causal=None, tgt_is_causal=None,
                memory_is_causal: bool = False):
        """``src`` (S, N, E) through the encoder, then ``tgt`` (T, N, E) through the
        decoder attending to the encoder's output -> (T, N, E); (N, S, E) and (N, T, E)
        with ``batch_first``; (S, E) and (T, E) unbatched. Masks: ``src_mask`` (S, S),
        ``tgt_mask`` (T, T), ``memory_mask`` (T, S) (or (N·nhead, ·, ·)),
        ``*_key_padding_mask`` (N, S), (N, T), (N, S). ``src_is_causal`` and
        ``tgt_is_causal`` default to detecting a causal mask.
        """
        batch = 0 if self.batch_first else 1
        if src.ndim == 3 and (tgt.ndim != 3 or src.shape[batch] != tgt.shape[batch]):
            raise ValueError(f"Transformer: the batch number of src {tuple(src.shape)} and "
                             f"tgt {tuple(tgt.shape)} must be equal "
                             f"(batch_first={self.batch_first})")
        if src.shape[-1] != self.d_model or tgt.shape[-1] != self.d_model:
            raise ValueError(f"Transformer: the feature number of src {tuple(src.shape)} and "
                             f"tgt {tuple(tgt.shape)} must be equal to d_model {self.d_model}")
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask,
                              is_causal=src_is_causal)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask,
                            tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)

    @staticmethod
    def generate_square_subsequent_mask(sz: int, device=None, dtype=None):
        """The (sz, sz) causal mask: −∞ above the diagonal (position t may not attend
        to later ones), 0.0 elsewhere; float32 unless ``dtype`` is given."""
        mask = creation.full((sz, sz), -math.inf, dtype=dtype,
                             device=device)
        return mask.triu(1)

    def _reset_parameters(self):
        for p in self.parameters():
            if p.ndim > 1:
                _xavier_uniform_(p)
