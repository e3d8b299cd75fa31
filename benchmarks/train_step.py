"""Training-step time (forward, backward, Adam) of the paper's models, tinynet vs PyTorch.

    python benchmarks/train_step.py [--repeat 7] [--reference-kernels]

The headline table is what a user gets: no thread settings, every core, each
library at its defaults. The second table runs both on one thread
(``tinynet.set_num_threads(1)``, ``torch.set_num_threads(1)``) in the same
process. Rows: the 784-1000-1000-10 MLP with LayerNorm at batch 4 and 128,
and the LN-LSTM (sequential MNIST rows: 28 steps of 28 pixels, hidden 128) at
batch 64; the PyTorch models are the same architectures (the LN-LSTM written
as the same per-step loop). Ratio = tinynet / PyTorch, medians of interleaved
rounds, with the spread (min-max over rounds) of tinynet's times. Target at
the defaults: ratio ≤ 0.8.
"""
from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from common import print_table, timing_rounds, try_import_torch  # noqa: E402

CASES = [("MLP+LN 784-1000-1000-10, batch 4", "mlp", (4, 784)),
         ("MLP+LN 784-1000-1000-10, batch 128", "mlp", (128, 784)),
         ("LN-LSTM 28x28 steps, hidden 128, batch 64", "lstm", (64, 28, 28))]


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


def training_steps(kind, shape, torch=None, seed=0):
    """{'tinynet': step, 'torch': step} for one case (torch's only if given)."""
    import numpy as np

    import tinynet
    from tinynet.models import MLP, SequenceClassifier

    rng = np.random.default_rng(seed)
    x = rng.random(shape, dtype=np.float32)
    y = rng.integers(0, 10, shape[0])
    model = MLP("layer") if kind == "mlp" else SequenceClassifier(norm="layer")
    steps = {"tinynet": make_step(tinynet, model, tinynet.tensor(x), tinynet.tensor(y))}
    if torch is not None:
        steps["torch"] = make_step(torch, torch_models(torch)[kind](), torch.tensor(x),
                                   torch.tensor(y))
    return steps


def step_table(title, torch, repeat):
    rows = []
    for name, kind, shape in CASES:
        rounds = timing_rounds(training_steps(kind, shape, torch), repeat=repeat)
        ours = rounds.median("tinynet")
        ref = rounds.median("torch") if torch is not None else None
        rows.append([name, ours * 1e3, rounds.spread("tinynet"), ref * 1e3 if ref else "-",
                     ours / ref if ref else "-"])
    print_table(title, ["model", "tinynet ms", "spread", "PyTorch ms", "ratio"], rows)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7, help="interleaved rounds")
    parser.add_argument("--reference-kernels", action="store_true",
                        help="run tinynet on the NumPy reference kernels")
    args = parser.parse_args()
    # PyTorch first, so that its OpenMP runtime starts with its own defaults
    # rather than with the wait policy that tinynet sets (tinynet/threads.py).
    torch = try_import_torch()
    import tinynet

    if args.reference_kernels:
        tinynet.use_reference_kernels().__enter__()
    cores = tinynet.get_num_threads()
    torch_threads = torch.get_num_threads() if torch is not None else "-"
    step_table(f"training step (forward + backward + Adam), default threads (tinynet "
               f"{cores}, PyTorch {torch_threads}), median ms", torch, args.repeat)
    tinynet.set_num_threads(1)
    if torch is not None:
        torch.set_num_threads(1)
    step_table("training step, 1 thread each, median ms", torch, args.repeat)


if __name__ == "__main__":
    main()
