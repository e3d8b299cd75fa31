"""Training-step time (forward, backward, Adam) of the paper's models, tinynet vs PyTorch.

    python benchmarks/train_step.py [--threads 1]

Rows: the 784-1000-1000-10 MLP with LayerNorm at batch 4 and 128, and the
LN-LSTM (sequential MNIST rows: 28 steps of 28 pixels, hidden 128) at batch 64.
The PyTorch models are the same architectures (LN-LSTM written as the same
per-step loop). Ratio = tinynet / PyTorch. Targets (issue 5): ≤ 1.0 at
batch 4, ≤ 1.3 at batch 128 and for the LN-LSTM.
"""
from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from common import median_times, pin_threads, print_table, try_import_torch  # noqa: E402


def torch_models(torch):
    nn = torch.nn

    def mlp():
        return nn.Sequential(nn.Linear(784, 1000), nn.LayerNorm(1000), nn.ReLU(),
                             nn.Linear(1000, 1000), nn.LayerNorm(1000), nn.ReLU(),
                             nn.Linear(1000, 10))

    class LNLSTM(nn.Module):
        def __init__(self, input_size=28, hidden=128, classes=10):
            super().__init__()
            self.w_ih = nn.Linear(input_size, 4 * hidden, bias=False)
            self.w_hh = nn.Linear(hidden, 4 * hidden, bias=False)
            self.bias = nn.Parameter(torch.zeros(4 * hidden))
            self.ln_ih, self.ln_hh = nn.LayerNorm(4 * hidden), nn.LayerNorm(4 * hidden)
            self.ln_cell = nn.LayerNorm(hidden)
            self.head = nn.Linear(hidden, classes)
            self.hidden = hidden

        def forward(self, x):
            h = c = x.new_zeros(x.shape[0], self.hidden)
            for t in range(x.shape[1]):
                gates = self.ln_ih(self.w_ih(x[:, t])) + self.ln_hh(self.w_hh(h)) + self.bias
                i, f, g, o = gates.chunk(4, 1)
                c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
                h = torch.sigmoid(o) * torch.tanh(self.ln_cell(c))
            return self.head(h)

    return {"mlp": mlp, "lstm": LNLSTM}


def make_step(lib, model, x, y):
    opt = lib.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = lib.nn.functional.cross_entropy

    def step():
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()
    return step


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    pin_threads(args.threads)

    import numpy as np
    import tinynet
    from tinynet.models import MLP, SequenceClassifier
    torch = try_import_torch()

    rng = np.random.default_rng(0)
    cases = [("MLP+LN 784-1000-1000-10, batch 4", "mlp", (4, 784), "1.0"),
             ("MLP+LN 784-1000-1000-10, batch 128", "mlp", (128, 784), "1.3"),
             ("LN-LSTM 28x28 steps, hidden 128, batch 64", "lstm", (64, 28, 28), "1.3")]
    rows = []
    for title, kind, shape, target in cases:
        x = rng.random(shape, dtype=np.float32)
        y = rng.integers(0, 10, shape[0])
        model = MLP("layer") if kind == "mlp" else SequenceClassifier(norm="layer")
        steps = {"tinynet": make_step(tinynet, model, tinynet.tensor(x), y)}
        if torch is not None:
            ref_model = torch_models(torch)[kind]()
            steps["torch"] = make_step(torch, ref_model, torch.tensor(x), torch.tensor(y))
        times = median_times(steps, repeat=7)          # interleaved: noise hits both alike
        ours, ref = times["tinynet"], times.get("torch")
        rows.append([title, ours * 1e3, ref * 1e3 if ref else "-",
                     ours / ref if ref else "-", target])
    print_table(f"training step (forward + backward + Adam), {args.threads} thread(s), median ms",
                ["model", "tinynet ms", "PyTorch ms", "ratio", "target ≤"], rows)


if __name__ == "__main__":
    main()
