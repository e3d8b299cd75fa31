"""A character-level GPT written as a PyTorch program: it imports torch, not tinynet.

    python -m tinynet.as_torch examples/torch_char_gpt.py     # on tinynet
    python examples/torch_char_gpt.py                          # on PyTorch, where installed

The model is the decoder-only Transformer of a first GPT lesson, written out of small
operations as learners write it: attention from ``masked_fill``, ``softmax`` and
products, per head; GELU from ``tanh`` and ``pow``; pre-LN blocks. It trains on Tiny
Shakespeare (``--data``, else ``$TINYNET_DATA/tinyshakespeare/input.txt``, else the
excerpt bundled with tinynet) and prints the loss and the median step time;
``--device cuda`` trains on the GPU where ``torch.cuda.is_available()`` says there is
one.
"""
import argparse
import math
import os
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


def read_text(path):
    if path is None:
        shared = os.path.join(os.environ.get("TINYNET_DATA", ""), "tinyshakespeare",
                              "input.txt")
        if os.path.isfile(shared):
            path = shared
        else:                       # the excerpt that comes with tinynet
            from tinynet.data.text import SAMPLE_PATH
            path = SAMPLE_PATH
    with open(path, encoding="utf-8") as file:
        return file.read()


class Head(nn.Module):
    """One head of causal self-attention, written out."""

    def __init__(self, n_embd, head_size, block_size):
        super().__init__()
        self.key = nn.Linear(n_embd, head_size, bias=False)
        self.query = nn.Linear(n_embd, head_size, bias=False)
        self.value = nn.Linear(n_embd, head_size, bias=False)
        self.register_buffer("tril", torch.tril(torch.ones(block_size, block_size)))

    def forward(self, x):
        T = x.shape[1]
        k, q, v = self.key(x), self.query(x), self.value(x)
        weights = q @ k.transpose(-2, -1) * k.shape[-1] ** -0.5
        weights = weights.masked_fill(self.tril[:T, :T] == 0, float("-inf"))
        return F.softmax(weights, dim=-1) @ v


def gelu(x):
    """GELU, the tanh approximation (Hendrycks & Gimpel, 2016)."""
    inner = math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))
    return 0.5 * x * (1.0 + torch.tanh(inner))


class Block(nn.Module):
    def __init__(self, n_embd, n_head, block_size):
        super().__init__()
        self.heads = nn.ModuleList(Head(n_embd, n_embd // n_head, block_size)
                                   for _ in range(n_head))
        self.proj = nn.Linear(n_embd, n_embd)
        self.ln1, self.ln2 = nn.LayerNorm(n_embd), nn.LayerNorm(n_embd)
        self.fc, self.fc_out = nn.Linear(n_embd, 4 * n_embd), nn.Linear(4 * n_embd, n_embd)

    def forward(self, x):
        h = self.ln1(x)
        x = x + self.proj(torch.cat([head(h) for head in self.heads], dim=-1))
        return x + self.fc_out(gelu(self.fc(self.ln2(x))))


class GPT(nn.Module):
    def __init__(self, vocab_size, n_embd, n_head, n_layer, block_size):
        super().__init__()
        self.token = nn.Embedding(vocab_size, n_embd)
        self.position = nn.Embedding(block_size, n_embd)
        self.blocks = nn.Sequential(*[Block(n_embd, n_head, block_size) for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(n_embd)
        self.head = nn.Linear(n_embd, vocab_size)

    def forward(self, idx, targets):
        T = idx.shape[1]
        x = self.token(idx) + self.position(torch.arange(T, device=idx.device))
        logits = self.head(self.ln_f(self.blocks(x)))
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", help="a text file (default: Tiny Shakespeare)")
    parser.add_argument("--device", default="cpu", help="cpu or cuda")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--block-size", type=int, default=32)
    parser.add_argument("--n-embd", type=int, default=64)
    parser.add_argument("--n-head", type=int, default=4)
    parser.add_argument("--n-layer", type=int, default=4)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--seed", type=int, default=1337)
    args = parser.parse_args()
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        parser.error("--device cuda: torch.cuda.is_available() is False here")
    device = torch.device(args.device)
    torch.manual_seed(args.seed)

    text = read_text(args.data)
    chars = sorted(set(text))
    index = {c: i for i, c in enumerate(chars)}
    data = torch.tensor([index[c] for c in text], dtype=torch.long)

    def batch():
        starts = torch.randint(len(data) - args.block_size, (args.batch_size,))
        x = torch.stack([data[i:i + args.block_size] for i in starts])
        y = torch.stack([data[i + 1:i + args.block_size + 1] for i in starts])
        return x.to(device), y.to(device)

    model = GPT(len(chars), args.n_embd, args.n_head, args.n_layer, args.block_size).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
    times, losses = [], torch.zeros(args.steps)
    for step in range(args.steps):
        start = time.perf_counter()
        x, y = batch()
        loss = model(x, y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        losses[step] = loss.item()
        times.append(time.perf_counter() - start)
    tail = losses[-max(1, args.steps // 10):].mean()
    print(f"{torch.__name__}: loss {losses[0]:.4f} -> {tail:.4f} (mean of the last tenth), "
          f"median step {statistics.median(times[1:] or times) * 1e3:.2f} ms")


if __name__ == "__main__":
    main()
