"""An encoder–decoder Transformer for sequence-to-sequence tasks (Vaswani et al.
2017, Figure 1), set up as Xiong et al. (2020) study it.

    memory = encoder(src_tok_emb(src) · √d_model + PE)
    logits = generator(decoder(tgt_tok_emb(tgt) · √d_model + PE, memory))

The stacks are ``nn.Transformer``'s layers (:mod:`tinynet.nn.transformer` and
:mod:`tinynet.nn.transformer_decoder`); the names of the parts follow PyTorch's
translation tutorial (``src_tok_emb``, ``tgt_tok_emb``, ``transformer``,
``generator``). Two choices are configuration:

* ``norm_first``: False is Post-LN, x = LN(x + F(x)) (Vaswani et al.); True is
  Pre-LN, x = x + F(LN(x)) (Xiong et al.), whose two stacks end in a LayerNorm.
  As in fairseq's Transformer, the Post-LN stacks have no final LayerNorm (their
  last residual sum is already normalized).
* ``activation``: ``'relu'`` (Xiong et al.'s model) or ``'gelu'``.

The defaults are the IWSLT14 De-En model of Xiong et al.'s Figure 3: d_model 512,
4 heads, a feed-forward width of 1024, 6 + 6 layers, ReLU. Every matrix of the
layers and of the output layer is Xavier-uniform, U(−a, a) with
a = √(6 / (fan_in + fan_out)) (Glorot & Bengio, 2010), and every bias 0, as in
fairseq; token embeddings are N(0, 1/d_model), scaled by √d_model (Vaswani et
al., Section 3.4); positions are the sinusoids of Vaswani et al. (Section 3.5),
not learned. Dropout is 0 by default, so that the gradients at initialisation
are a function of the weights and the batch alone.
"""
from __future__ import annotations

import math

import numpy as np

from .. import creation, nn
from ..nn import functional as F

__all__ = ["Seq2SeqTransformer", "sinusoidal_positions"]


def sinusoidal_positions(length: int, d_model: int) -> np.ndarray:
    """The (length, d_model) position table of Vaswani et al. (2017, Section 3.5):
    PE[p, 2i] = sin(p / 10000^(2i/d_model)), PE[p, 2i+1] = cos(p / 10000^(2i/d_model))."""
    position = np.arange(length, dtype=np.float64)[:, None]
    frequency = np.exp(-math.log(10000.0) * np.arange(0, d_model, 2) / d_model)
    table = np.zeros((length, d_model))
    table[:, 0::2] = np.sin(position * frequency)
    table[:, 1::2] = np.cos(position * frequency[:d_model // 2])
    return table


def _xavier_uniform_(weight) -> None:
    fan_out, fan_in = weight.shape
    bound = math.sqrt(6.0 / (fan_in + fan_out))
    nn.init.uniform_(weight, -bound, bound)


class Seq2SeqTransformer(nn.Module):
    """Token ids in, the logits of each next target token out (see the module docstring).

    ``vocab_size`` counts every id, the padding id ``pad_idx`` included (source and
    target share the vocabulary, each with its own embedding). ``d_model``,
    ``nhead``, ``num_encoder_layers``, ``num_decoder_layers``, ``dim_feedforward``,
    ``dropout``, ``activation``, ``norm_first``, ``device`` and ``dtype`` are
    ``nn.Transformer``'s. ``model.transformer.encoder.layers[l].linear1`` is
    layer l's FFN W¹ (d_model → dim_feedforward) and ``linear2`` its W².
    """

    def __init__(self, vocab_size: int, d_model: int = 512, nhead: int = 4,
                 num_encoder_layers: int = 6, num_decoder_layers: int = 6,
                 dim_feedforward: int = 1024, dropout: float = 0.0, activation="relu",
                 norm_first: bool = False, pad_idx: int = 0, device=None, dtype=None):
        super().__init__()
        if not 0 <= pad_idx < vocab_size:
            raise ValueError(f"Seq2SeqTransformer: pad_idx {pad_idx} is not an id of a "
                             f"vocabulary of {vocab_size}")
        factory = dict(device=device, dtype=dtype)
        self.d_model, self.pad_idx, self.norm_first = d_model, pad_idx, norm_first
        layer = dict(d_model=d_model, nhead=nhead, dim_feedforward=dim_feedforward,
                     dropout=dropout, activation=activation, batch_first=True,
                     norm_first=norm_first, **factory)

        def final_norm():
            return nn.LayerNorm(d_model, **factory) if norm_first else None

        encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(**layer),
                                        num_encoder_layers, final_norm())
        decoder = nn.TransformerDecoder(nn.TransformerDecoderLayer(**layer),
                                        num_decoder_layers, final_norm())
        self.transformer = nn.Transformer(d_model, nhead, custom_encoder=encoder,
                                          custom_decoder=decoder, batch_first=True,
                                          **factory)       # Xavier on every matrix
        self.src_tok_emb = nn.Embedding(vocab_size, d_model, **factory)
        self.tgt_tok_emb = nn.Embedding(vocab_size, d_model, **factory)
        self.generator = nn.Linear(d_model, vocab_size, **factory)
        for embedding in (self.src_tok_emb, self.tgt_tok_emb):
            nn.init.normal_(embedding.weight, 0.0, d_model ** -0.5)
        _xavier_uniform_(self.generator.weight)
        for name, p in self.named_parameters():
            if name.endswith("bias"):
                nn.init.zeros_(p)

    def embed(self, embedding, ids):
        """``embedding(ids) · √d_model`` plus the sinusoidal positions: (N, L, d_model)."""
        weight = embedding.weight
        positions = creation.tensor(sinusoidal_positions(ids.shape[-1], self.d_model),
                                    dtype=weight.dtype, device=weight.device)
        return embedding(ids) * math.sqrt(self.d_model) + positions

    def forward(self, src, tgt, targets=None):
        """``src`` (N, S) source ids, ``tgt`` (N, T) the decoder's input (the target
        shifted right behind a start id), both padded with ``pad_idx`` at the end.
        Returns ``(logits, loss)``: logits (N, T, vocab_size), each position's next
        target token, and with ``targets`` (N, T) the mean cross-entropy over the
        positions whose target is not ``pad_idx`` (a 0-d tensor; None without).

        The encoder and the decoder's attention over the memory skip the source's
        padding; the decoder's self-attention is causal, which also hides the
        target's padding (it comes after every real position) from real positions.
        """
        if src.ndim != 2 or tgt.ndim != 2 or src.shape[0] != tgt.shape[0]:
            raise ValueError(f"Seq2SeqTransformer: src and tgt must be (N, S) and (N, T) ids "
                             f"with the same N, got {tuple(src.shape)} and {tuple(tgt.shape)}")
        padding = src == self.pad_idx
        weight = self.tgt_tok_emb.weight
        causal = nn.Transformer.generate_square_subsequent_mask(
            tgt.shape[1], device=weight.device, dtype=weight.dtype)
        x = self.transformer(self.embed(self.src_tok_emb, src),
                             self.embed(self.tgt_tok_emb, tgt), tgt_mask=causal,
                             src_key_padding_mask=padding, memory_key_padding_mask=padding,
                             src_is_causal=False, tgt_is_causal=True)
        logits = self.generator(x)
        if targets is None:
            return logits, None
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1),
                               ignore_index=self.pad_idx)
        return logits, loss

    def ffn_layers(self) -> dict:
        """Each stack's FFN weights, the matrices Xiong et al.'s Figure 3 follows:
        ``{"encoder": [(W¹, W²) of layer 0, …], "decoder": [...]}``, layer 0 nearest
        the input, each W a Parameter (``linear1.weight``, ``linear2.weight``)."""
        return {name: [(layer.linear1.weight, layer.linear2.weight) for layer in stack.layers]
                for name, stack in (("encoder", self.transformer.encoder),
                                    ("decoder", self.transformer.decoder))}
