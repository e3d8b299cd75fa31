"""nanoGPT's GPT in PyTorch (the reference of the GPT benchmarks), and both libraries'
training iteration of nanoGPT's CPU recipe: forward with the loss, backward,
clipping at 1.0, AdamW (weight decay on the matrices only).

The PyTorch model is nanoGPT's ``model.py`` at the same shapes and names, its
attention PyTorch's fused ``scaled_dot_product_attention``, as nanoGPT runs it.
"""
from __future__ import annotations

import math

# nanoGPT's CPU recipe (its README): 4 layers, 4 heads, 128 channels, context 64, batch 12.
RECIPE = dict(n_layer=4, n_head=4, n_embd=128, block_size=64, vocab_size=65, bias=False)
BATCH = 12


def torch_gpt(torch, n_layer, n_head, n_embd, block_size, vocab_size, bias):
    nn, F = torch.nn, torch.nn.functional

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1 = nn.LayerNorm(n_embd, bias=bias)
            self.attn = nn.Module()
            self.attn.c_attn = nn.Linear(n_embd, 3 * n_embd, bias=bias)
            self.attn.c_proj = nn.Linear(n_embd, n_embd, bias=bias)
            self.ln_2 = nn.LayerNorm(n_embd, bias=bias)
            self.mlp = nn.Module()
            self.mlp.c_fc = nn.Linear(n_embd, 4 * n_embd, bias=bias)
            self.mlp.c_proj = nn.Linear(4 * n_embd, n_embd, bias=bias)

        def forward(self, x):
            b, t, c = x.shape
            q, k, v = self.attn.c_attn(self.ln_1(x)).split(n_embd, dim=2)
            q, k, v = (z.view(b, t, n_head, c // n_head).transpose(1, 2) for z in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.attn.c_proj(y.transpose(1, 2).contiguous().view(b, t, c))
            return x + self.mlp.c_proj(F.gelu(self.mlp.c_fc(self.ln_2(x))))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.transformer = nn.ModuleDict(dict(
                wte=nn.Embedding(vocab_size, n_embd), wpe=nn.Embedding(block_size, n_embd),
                h=nn.ModuleList([Block() for _ in range(n_layer)]),
                ln_f=nn.LayerNorm(n_embd, bias=bias)))
            self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)
            self.transformer.wte.weight = self.lm_head.weight
            for name, p in self.named_parameters():
                if p.dim() >= 2:
                    std = 0.02 / math.sqrt(2 * n_layer) if name.endswith("c_proj.weight") \
                        else 0.02
                    nn.init.normal_(p, 0.0, std)

        def forward(self, idx, targets):
            t = self.transformer
            x = t.wte(idx) + t.wpe(torch.arange(idx.shape[1]))
            for block in t.h:
                x = block(x)
            logits = self.lm_head(t.ln_f(x))
            return logits, F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1),
                                           ignore_index=-1)

    return GPT()


class GPTRun:
    """The recipe's GPT, its AdamW and a batch generator, in ``library`` ('tinynet' or
    'torch'); ``batch`` and any of the recipe's keys (``block_size``, ``n_embd``...)
    override the recipe."""

    def __init__(self, library: str, seed: int = 0, batch: int = BATCH, **overrides):
        import numpy as np
        unknown = set(overrides) - set(RECIPE)
        if unknown:
            raise TypeError(f"GPTRun: not keys of the recipe: {sorted(unknown)}")
        self.recipe = dict(RECIPE, **overrides)
        self.batch_size = batch
        self.rng = np.random.default_rng(seed)
        if library == "torch":
            import torch
            self.model = torch_gpt(torch, **self.recipe)
            decay = [p for p in self.model.parameters() if p.dim() >= 2]
            no_decay = [p for p in self.model.parameters() if p.dim() < 2]
            self.optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                                                {"params": no_decay, "weight_decay": 0.0}],
                                               lr=1e-3, betas=(0.9, 0.99))
            self.tensor, self.clip_grad_norm_ = torch.tensor, torch.nn.utils.clip_grad_norm_
        else:
            import tinynet
            from tinynet.models import GPT, GPTConfig
            self.model = GPT(GPTConfig(**self.recipe))
            self.optimizer = self.model.configure_optimizers(0.1, 1e-3, (0.9, 0.99))
            self.tensor, self.clip_grad_norm_ = tinynet.tensor, tinynet.nn.utils.clip_grad_norm_

    def batch(self):
        """A new (idx, targets) pair of random tokens, (batch, block_size)."""
        shape = (self.batch_size, self.recipe["block_size"])
        vocabulary = self.recipe["vocab_size"]
        return (self.tensor(self.rng.integers(0, vocabulary, shape)),
                self.tensor(self.rng.integers(0, vocabulary, shape)))

    def forward(self):
        return self.model(*self.batch())[1]

    def clip(self):
        return self.clip_grad_norm_(self.model.parameters(), 1.0)

    def update(self):
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)

    def iteration(self):
        """Forward with the loss, backward, clipping, AdamW."""
        self.forward().backward()
        self.clip()
        self.update()


def gpt_iteration(library: str, seed: int = 0, **overrides):
    """One training iteration of the recipe's GPT with ``library``, as a function of
    no arguments; each call draws a new batch. ``overrides`` as for GPTRun."""
    return GPTRun(library, seed, **overrides).iteration
