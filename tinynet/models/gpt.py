"""A GPT as nanoGPT builds it (Karpathy's ``model.py``; Radford et al., 2019).

    x = wte(idx) + wpe(position)                token and position embeddings
    x = x + attn(norm_1(x)),  x = x + mlp(norm_2(x))    each block (Pre-LN)
    logits = lm_head(norm_f(x))                 the output layer is wte, transposed

The attention is causal (each position sees itself and the positions before
it) and multi-headed; the MLP is 4× wide with an exact GELU. Initialisation is
GPT-2's: every weight N(0, 0.02²), biases 0, and the projections back into the
residual path (``c_proj``) N(0, (0.02/√(2·n_layer))²), since each block adds
two of them to the residual sum.

Two choices are configuration, not copies of the model:

* ``norm``: ``'layer'`` (LayerNorm, the paper's Eq. 4), ``'rms'`` (RMSNorm,
  Zhang & Sennrich 2019: no centring, no bias) or ``'none'``;
* ``placement``: ``'pre'`` (the norm before each branch, GPT-2 and nanoGPT, with
  a final norm) or ``'post'`` (the original Transformer: the norm after each
  residual sum, x = norm_1(x + attn(x)), and no final norm). Xiong et al. (2020)
  show that at initialisation Post-LN's gradients grow toward the output layer.

A third exists only to be wrong: ``norm_axis='time'`` (with ``norm='layer'``)
takes each LayerNorm's statistics over the whole sequence of a sample instead
of over the features of one position (:class:`TimeAxisLayerNorm`). The model
then sees the future, and ``tinynet.testing.check_causal`` says so. The
default, ``'features'``, is the paper's LayerNorm.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .. import creation, nn
from ..nn import functional as F
from .generation import configure_adamw, generate, windowed_next_logits

__all__ = ["GPT", "GPTConfig", "GPT_NORMS", "PLACEMENTS", "NORM_AXES", "TimeAxisLayerNorm"]

GPT_NORMS = ("layer", "rms", "none")
PLACEMENTS = ("pre", "post")
NORM_AXES = ("features", "time")


@dataclass
class GPTConfig:
    """nanoGPT's configuration names; the defaults are GPT-2 small's."""

    block_size: int = 1024      # the context: the most positions one forward sees
    vocab_size: int = 50304
    n_layer: int = 12
    n_head: int = 12
    n_embd: int = 768
    dropout: float = 0.0
    bias: bool = True           # biases in the Linear layers and LayerNorms
    norm: str = "layer"
    placement: str = "pre"
    norm_axis: str = "features"     # 'time': the deliberately wrong TimeAxisLayerNorm

    def __post_init__(self):
        if self.norm not in GPT_NORMS:
            raise ValueError(f"GPTConfig: norm must be one of {GPT_NORMS}, got {self.norm!r}")
        if self.placement not in PLACEMENTS:
            raise ValueError(f"GPTConfig: placement must be one of {PLACEMENTS}, got "
                             f"{self.placement!r}")
        if self.norm_axis not in NORM_AXES:
            raise ValueError(f"GPTConfig: norm_axis must be one of {NORM_AXES}, got "
                             f"{self.norm_axis!r}")
        if self.norm_axis == "time" and self.norm != "layer":
            raise ValueError(f"GPTConfig: norm_axis='time' is LayerNorm over the sequence "
                             f"(TimeAxisLayerNorm) and needs norm='layer', got "
                             f"norm={self.norm!r}")
        for name in ("block_size", "vocab_size", "n_layer", "n_head", "n_embd"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"GPTConfig: {name} must be a positive integer, got {value!r}")
        if self.n_embd % self.n_head:
            raise ValueError(f"GPTConfig: n_embd ({self.n_embd}) must be a multiple of "
                             f"n_head ({self.n_head})")
        if not 0 <= self.dropout < 1:
            raise ValueError(f"GPTConfig: dropout must be in [0, 1), got {self.dropout}")


class TimeAxisLayerNorm(nn.Module):
    """A deliberate mistake, kept to fail ``tinynet.testing.check_causal``:
    LayerNorm with its statistics taken over the whole sequence of a sample.

    For x (B, T, C), y[b, t, c] = weight[c] · (x[b, t, c] − μ_b) / σ_b + bias[c],
    with μ_b and σ_b² the mean and (biased) variance of all T·C values of x[b];
    gain and bias are per channel, as LayerNorm's. The statistics over the
    sequence include the later positions, so every output depends on the
    future: a model trained with it reads tokens it is meant to predict, and
    its outputs at earlier positions change as a text is generated. The
    paper's LayerNorm takes μ and σ over the C features of one position, which
    keeps the GPT (and the LN-LSTM) causal. Parameters are named as
    ``nn.LayerNorm``'s, so state dicts interchange.
    """

    def __init__(self, features: int, eps: float = 1e-5, bias: bool = True):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(creation.ones(features))
        if bias:
            self.bias = nn.Parameter(creation.zeros(features))
        else:
            self.register_parameter("bias", None)

    def forward(self, x):
        y = F.layer_norm(x, x.shape[-2:], eps=self.eps) * self.weight     # over (T, C)
        return y if self.bias is None else y + self.bias


def make_norm(config: GPTConfig, features: int) -> nn.Module:
    if config.norm_axis == "time":
        return TimeAxisLayerNorm(features, bias=config.bias)
    if config.norm == "layer":
        return nn.LayerNorm(features, bias=config.bias)
    if config.norm == "rms":
        return nn.RMSNorm(features, eps=1e-5)
    return nn.Identity()


class CausalSelfAttention(nn.Module):
    """Multi-head causal self-attention: one Linear makes q, k and v for every
    head at once (``c_attn``), the heads attend in one fused node, ``c_proj``
    mixes them back (Vaswani et al. 2017: Concat(head_1, …, head_h) W^O)."""

    def __init__(self, config: GPTConfig):
        super().__init__()
        self.n_head, self.n_embd, self.dropout = config.n_head, config.n_embd, config.dropout
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd, bias=config.bias)
        self.c_proj = nn.Linear(config.n_embd, config.n_embd, bias=config.bias)
        self.resid_dropout = nn.Dropout(config.dropout)

    def forward(self, x):
        batch, steps, channels = x.shape
        heads = self.n_head
        # (B, T, 3C) -> 3 × (B, heads, T, C/heads)
        qkv = self.c_attn(x).reshape(batch, steps, 3, heads, channels // heads)
        q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)
        y = F.scaled_dot_product_attention(q, k, v, dropout_p=self.dropout if self.training
                                           else 0.0, is_causal=True)
        y = y.transpose(1, 2).reshape(batch, steps, channels)
        return self.resid_dropout(self.c_proj(y))


class MLP(nn.Module):
    """Linear to 4× the width, GELU, Linear back (Radford et al. 2018)."""

    def __init__(self, config: GPTConfig):
        super().__init__()
        self.c_fc = nn.Linear(config.n_embd, 4 * config.n_embd, bias=config.bias)
        self.gelu = nn.GELU()
        self.c_proj = nn.Linear(4 * config.n_embd, config.n_embd, bias=config.bias)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x):
        return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))


class Block(nn.Module):
    """Attention then MLP, each on a residual path, with the norm before the
    branch (``pre``) or after the sum (``post``)."""

    def __init__(self, config: GPTConfig):
        super().__init__()
        self.pre = config.placement == "pre"
        self.ln_1 = make_norm(config, config.n_embd)
        self.attn = CausalSelfAttention(config)
        self.ln_2 = make_norm(config, config.n_embd)
        self.mlp = MLP(config)

    def forward(self, x):
        if self.pre:
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp(self.ln_2(x))
        x = self.ln_1(x + self.attn(x))
        return self.ln_2(x + self.mlp(x))


class GPT(nn.Module):
    """The language model: ``model(idx)`` for token ids (B, T) gives the logits of
    the next token at the last position (B, 1, vocab); ``model(idx, targets)``
    gives the logits at every position (B, T, vocab) and the mean cross-entropy
    (targets equal to -1 are ignored, as in nanoGPT)."""

    def __init__(self, config: GPTConfig):
        super().__init__()
        self.config = config
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(config.vocab_size, config.n_embd),
            wpe=nn.Embedding(config.block_size, config.n_embd),
            drop=nn.Dropout(config.dropout),
            h=nn.ModuleList([Block(config) for _ in range(config.n_layer)]),
            ln_f=make_norm(config, config.n_embd) if config.placement == "pre"
            else nn.Identity(),
        ))
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.transformer["wte"].weight = self.lm_head.weight     # weight tying
        self.apply(self._init_weights)
        residual_std = 0.02 / math.sqrt(2 * config.n_layer)
        for name, p in self.named_parameters():
            if name.endswith("c_proj.weight"):
                nn.init.normal_(p, 0.0, residual_std)

    @staticmethod
    def _init_weights(module):
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, 0.0, 0.02)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)

    def get_num_params(self, non_embedding: bool = True) -> int:
        """The number of parameters (the tied output layer counted once); without
        the position embeddings by default, as nanoGPT reports it."""
        total = sum(p.numel() for p in self.parameters())
        if non_embedding:
            total -= self.transformer["wpe"].weight.numel()
        return total

    def forward(self, idx, targets=None):
        """``idx`` (B, T) token ids, T <= block_size. Without ``targets``: ``(logits, None)``,
        the logits of the next token at the last position, (B, 1, vocab_size). With
        ``targets`` (B, T): the logits at every position, (B, T, vocab_size), and the
        mean cross-entropy against them (-1 ignored), a 0-d tensor.
        """
        batch, steps = idx.shape
        if steps > self.config.block_size:
            raise ValueError(f"GPT: a sequence of {steps} tokens is longer than the context "
                             f"block_size={self.config.block_size}")
        t = self.transformer
        position = creation.arange(steps, dtype=np.int64, device=idx.device)
        x = t["drop"](t["wte"](idx) + t["wpe"](position))
        for block in t["h"]:
            x = block(x)
        x = t["ln_f"](x)
        if targets is None:
            return self.lm_head(x[:, -1:, :]), None
        logits = self.lm_head(x)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1),
                               ignore_index=-1)
        return logits, loss

    def configure_optimizers(self, weight_decay: float, learning_rate: float, betas=(0.9, 0.95)):
        """AdamW with weight decay on the matrices (Linear and embedding weights)
        and none on the vectors (biases and norm gains), as nanoGPT."""
        return configure_adamw(self, weight_decay, learning_rate, betas)

    def generate(self, idx, max_new_tokens: int, temperature: float = 1.0, top_k=None,
                 generator=None):
        """Append ``max_new_tokens`` tokens to ``idx`` (B, T), each drawn from the
        model's distribution at ``temperature`` (restricted to the ``top_k`` most
        likely, if given), reading at most ``block_size`` tokens back; a seeded
        ``tinynet.Generator`` repeats the same text."""
        return generate(windowed_next_logits(self, self.config.block_size), idx,
                        max_new_tokens, temperature, top_k, generator)
