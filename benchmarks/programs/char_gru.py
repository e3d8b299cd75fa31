"""A GRU character model (nn.GRU) of Tiny Shakespeare:

    python benchmarks/programs/char_gru.py [--steps 30 --warmup 5]

Embedding 64, one GRU layer of 128, a linear head over the 65 characters; sequences of
64 characters, batch 32, Adam lr 2e-3, gradients clipped to norm 1.
"""
import argparse

import torch
import torch.nn as nn
from harness import arguments, shakespeare_characters, train


class CharGRU(nn.Module):
    def __init__(self, vocab_size, n_embd=64, hidden=128):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, n_embd)
        self.gru = nn.GRU(n_embd, hidden, batch_first=True)
        self.head = nn.Linear(hidden, vocab_size)

    def forward(self, idx):
        out, _ = self.gru(self.embed(idx))
        return self.head(out)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--seq-len", type=int, default=64)
    args = arguments(__doc__, parser)
    data, vocab_size = shakespeare_characters("char_gru.py")
    model = CharGRU(vocab_size)
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-3)
    criterion = nn.CrossEntropyLoss()
    offsets = torch.arange(args.seq_len + 1)

    def step():
        starts = torch.randint(len(data) - args.seq_len - 1, (args.batch_size, 1))
        chunk = data[starts + offsets]                     # (batch, seq_len + 1)
        x, y = chunk[:, :-1], chunk[:, 1:]
        logits = model(x)
        loss = criterion(logits.reshape(-1, logits.size(-1)), y.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        return loss

    train(step, args, vocab_size)


if __name__ == "__main__":
    main()
