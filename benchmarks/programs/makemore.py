"""A makemore-like character model of names (after Karpathy's makemore.py), six kinds:

    python benchmarks/programs/makemore.py --type transformer [--steps 30 --warmup 5]

Trains on ``makemore-names/names.txt`` (one name a line; see harness.data_dir), or on a
small built-in list when that file is missing, with makemore's defaults: n_embd 64,
n_embd2 64, 4 layers and 4 heads, block size = longest name + 1, batch 32, AdamW
(lr 5e-4, weight decay 0.01, betas 0.9, 0.99).
"""
import argparse
import math

import torch
import torch.nn as nn
from harness import arguments, data_dir, train
from torch.nn import functional as F

FALLBACK_WORDS = ("emma olivia ava isabella sophia charlotte mia amelia harper evelyn "
                  "abigail emily elizabeth mila ella avery sofia camila aria scarlett "
                  "liam noah william james oliver benjamin elijah lucas mason logan "
                  "alexander ethan jacob michael daniel henry jackson sebastian aiden").split()


class NewGELU(nn.Module):
    def forward(self, x):
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd, n_head, block_size):
        super().__init__()
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.register_buffer("bias", torch.tril(torch.ones(block_size, block_size))
                             .view(1, 1, block_size, block_size))
        self.n_head, self.n_embd = n_head, n_embd

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class Block(nn.Module):
    def __init__(self, n_embd, n_head, block_size):
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embd)
        self.attn = CausalSelfAttention(n_embd, n_head, block_size)
        self.ln_2 = nn.LayerNorm(n_embd)
        self.mlp = nn.ModuleDict(dict(c_fc=nn.Linear(n_embd, 4 * n_embd),
                                      c_proj=nn.Linear(4 * n_embd, n_embd), act=NewGELU()))

    def forward(self, x):
        m = self.mlp
        x = x + self.attn(self.ln_1(x))
        return x + m.c_proj(m.act(m.c_fc(self.ln_2(x))))


class Transformer(nn.Module):
    def __init__(self, vocab_size, block_size, n_embd=64, n_layer=4, n_head=4, **_):
        super().__init__()
        self.wte = nn.Embedding(vocab_size, n_embd)
        self.wpe = nn.Embedding(block_size, n_embd)
        self.h = nn.ModuleList([Block(n_embd, n_head, block_size) for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(n_embd)
        self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)

    def forward(self, idx):
        pos = torch.arange(0, idx.size(1), dtype=torch.long).unsqueeze(0)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.h:
            x = block(x)
        return self.lm_head(self.ln_f(x))


class CausalBoW(nn.Module):
    """Each position averages the ones up to it."""

    def __init__(self, block_size):
        super().__init__()
        self.register_buffer("bias", torch.tril(torch.ones(block_size, block_size))
                             .view(1, block_size, block_size))

    def forward(self, x):
        B, T, C = x.size()
        att = torch.zeros((B, T, T))
        att = att.masked_fill(self.bias[:, :T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        return att @ x


class BoW(nn.Module):
    def __init__(self, vocab_size, block_size, n_embd=64, n_embd2=64, **_):
        super().__init__()
        self.wte = nn.Embedding(vocab_size, n_embd)
        self.wpe = nn.Embedding(block_size, n_embd)
        self.cbow = CausalBoW(block_size)
        self.c_fc = nn.Linear(n_embd, n_embd2)
        self.c_proj = nn.Linear(n_embd2, n_embd)
        self.lm_head = nn.Linear(n_embd, vocab_size)

    def forward(self, idx):
        pos = torch.arange(0, idx.size(1), dtype=torch.long).unsqueeze(0)
        x = self.wte(idx) + self.wpe(pos)
        x = x + self.cbow(x)
        x = x + self.c_proj(torch.tanh(self.c_fc(x)))
        return self.lm_head(x)


class RNNCell(nn.Module):
    def __init__(self, n_embd, n_embd2):
        super().__init__()
        self.xh_to_h = nn.Linear(n_embd + n_embd2, n_embd2)

    def forward(self, xt, hprev):
        return torch.tanh(self.xh_to_h(torch.cat([xt, hprev], dim=1)))


class GRUCell(nn.Module):
    def __init__(self, n_embd, n_embd2):
        super().__init__()
        self.xh_to_z = nn.Linear(n_embd + n_embd2, n_embd2)
        self.xh_to_r = nn.Linear(n_embd + n_embd2, n_embd2)
        self.xh_to_hbar = nn.Linear(n_embd + n_embd2, n_embd2)

    def forward(self, xt, hprev):
        xh = torch.cat([xt, hprev], dim=1)
        r = torch.sigmoid(self.xh_to_r(xh))
        hbar = torch.tanh(self.xh_to_hbar(torch.cat([xt, r * hprev], dim=1)))
        z = torch.sigmoid(self.xh_to_z(xh))
        return (1 - z) * hprev + z * hbar


class RNN(nn.Module):
    def __init__(self, vocab_size, block_size, n_embd=64, n_embd2=64, cell_type="rnn", **_):
        super().__init__()
        self.start = nn.Parameter(torch.zeros(1, n_embd2))
        self.wte = nn.Embedding(vocab_size, n_embd)
        self.cell = (RNNCell if cell_type == "rnn" else GRUCell)(n_embd, n_embd2)
        self.lm_head = nn.Linear(n_embd2, vocab_size)

    def forward(self, idx):
        emb = self.wte(idx)
        hprev = self.start.expand((idx.size(0), -1))
        hiddens = []
        for i in range(idx.size(1)):
            hprev = self.cell(emb[:, i, :], hprev)
            hiddens.append(hprev)
        return self.lm_head(torch.stack(hiddens, 1))


class MLP(nn.Module):
    """Bengio et al. 2003: the embeddings of the previous block_size characters."""

    def __init__(self, vocab_size, block_size, n_embd=64, n_embd2=64, **_):
        super().__init__()
        self.block_size, self.vocab_size = block_size, vocab_size
        self.wte = nn.Embedding(vocab_size + 1, n_embd)     # + a token for "before the start"
        self.mlp = nn.Sequential(nn.Linear(block_size * n_embd, n_embd2), nn.Tanh(),
                                 nn.Linear(n_embd2, vocab_size))

    def forward(self, idx):
        embs = []
        for _ in range(self.block_size):
            embs.append(self.wte(idx))
            idx = torch.roll(idx, 1, 1)
            idx[:, 0] = self.vocab_size
        return self.mlp(torch.cat(embs, -1))


class Bigram(nn.Module):
    def __init__(self, vocab_size, **_):
        super().__init__()
        self.logits = nn.Parameter(torch.zeros((vocab_size, vocab_size)))

    def forward(self, idx):
        return self.logits[idx]


MODELS = {"bigram": Bigram, "mlp": MLP, "rnn": RNN, "gru": RNN, "bow": BoW,
          "transformer": Transformer}


def load_words():
    path = data_dir("makemore-names") / "names.txt"
    if not path.is_file():
        return FALLBACK_WORDS
    return [w.strip() for w in path.read_text().splitlines() if w.strip()]


def encode_words(words):
    """(inputs, targets), one row a word: 0 then its characters; its characters then 0;
    -1 (no loss) after the end."""
    chars = sorted(set("".join(words)))
    stoi = {ch: i + 1 for i, ch in enumerate(chars)}       # 0 starts and ends a word
    length = max(len(w) for w in words) + 1
    x = torch.zeros(len(words), length, dtype=torch.long)
    y = torch.full((len(words), length), -1, dtype=torch.long)
    for row, word in enumerate(words):
        ix = torch.tensor([stoi[ch] for ch in word], dtype=torch.long)
        x[row, 1:1 + len(ix)] = ix
        y[row, :len(ix)] = ix
        y[row, len(ix)] = 0
    return x, y, len(chars) + 1


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--type", choices=MODELS, default="transformer")
    parser.add_argument("--batch-size", type=int, default=32)
    args = arguments(__doc__, parser)
    inputs, targets, vocab_size = encode_words(load_words())
    block_size = inputs.size(1)
    model = MODELS[args.type](vocab_size=vocab_size, block_size=block_size, cell_type=args.type)
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-4, weight_decay=0.01,
                                  betas=(0.9, 0.99), eps=1e-8)

    def step():
        ix = torch.randint(0, inputs.size(0), (args.batch_size,))
        x, y = inputs[ix], targets[ix]
        logits = model(x)
        loss = F.cross_entropy(logits.view(-1, logits.size(-1)), y.view(-1), ignore_index=-1)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        return loss

    train(step, args, vocab_size)


if __name__ == "__main__":
    main()
