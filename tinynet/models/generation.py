"""What the language models share: sampling one token after another, and AdamW
grouped as nanoGPT groups it.

:func:`generate` asks a model only for the next token's logits given the tokens
so far: the GPT reads a sliding window of its context
(:func:`windowed_next_logits`); the LSTM carries its state from call to call
(``CharLSTM.next_logits``).
"""
from __future__ import annotations

import math

from .. import ops, optim
from ..autograd import no_grad
from ..nn import functional as F

__all__ = ["generate", "windowed_next_logits", "configure_adamw"]


@no_grad()
def generate(next_logits, idx, max_new_tokens: int, temperature: float = 1.0, top_k=None,
             generator=None):
    """Append ``max_new_tokens`` tokens to ``idx`` (B, T), each drawn from
    softmax(logits / ``temperature``), restricted to the ``top_k`` most likely if
    given; a seeded ``tinynet.Generator`` repeats the same text.

    ``next_logits(idx)`` returns the scores (B, vocab) of the token after ``idx``;
    it is called once per new token with the whole sequence so far.
    """
    if temperature <= 0:
        raise ValueError(f"generate: temperature must be positive, got {temperature}")
    for _ in range(max_new_tokens):
        logits = next_logits(idx) / temperature
        if top_k is not None:
            kth = ops.topk(logits, min(int(top_k), logits.shape[-1])).values[:, -1:]
            logits = logits.masked_fill(logits < kth, -math.inf)
        probs = F.softmax(logits, dim=-1)
        idx = ops.cat([idx, ops.multinomial(probs, 1, generator=generator)], dim=1)
    return idx


def windowed_next_logits(model, block_size: int):
    """``next_logits`` for a model of bounded context (the GPT): run it on the last
    ``block_size`` tokens and keep the last position's scores."""
    def next_logits(idx):
        context = idx if idx.shape[1] <= block_size else idx[:, -block_size:]
        return model(context)[0][:, -1, :]
    return next_logits


def configure_adamw(module, weight_decay: float, learning_rate: float, betas=(0.9, 0.95)):
    """AdamW with weight decay on the matrices (ndim ≥ 2: Linear, embedding and LSTM
    weights) and none on the vectors (biases, norm gains), as nanoGPT groups them."""
    params = [p for p in module.parameters() if p.requires_grad]
    groups = [{"params": [p for p in params if p.ndim >= 2], "weight_decay": weight_decay},
              {"params": [p for p in params if p.ndim < 2], "weight_decay": 0.0}]
    groups = [g for g in groups if g["params"]]
    return optim.AdamW(groups, lr=learning_rate, betas=betas)
