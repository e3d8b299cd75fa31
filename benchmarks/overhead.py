"""Per-op overhead and a plain MLP forward+backward, tinynet vs PyTorch.

    python benchmarks/overhead.py [--threads 1]

Per-op overhead: a chain of small elementwise ops on a (4, 1000) array, forward
and backward, divided by the number of ops. MLP: 784-1000-1000-10 with ReLU,
log-softmax loss, forward + backward at batch 4 and 128. Each row is the
median time and the ratio tinynet / PyTorch (< 1 means tinynet is faster).
Targets (issue 2): per-op within 2x, MLP at batch 128 within 1.3x.
"""
from __future__ import annotations

import argparse
import functools
import os
import sys
from itertools import pairwise

sys.path.insert(0, os.path.dirname(__file__))
from common import median_times, pin_threads, print_table, try_import_torch  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--chain", type=int, default=100, help="ops in the chain")
    args = parser.parse_args()
    pin_threads(args.threads)

    import numpy as np

    import tinynet
    from tinynet.ops import linear
    torch = try_import_torch()

    rng = np.random.default_rng(0)

    def chain(lib, x):
        y = x
        for _ in range(args.chain // 4):
            y = (y * 0.5 + 0.25).tanh() - y
        return y

    def per_op_step(lib, make):
        x = make(rng.standard_normal((4, 1000)).astype(np.float32))
        def step():
            x.grad = None
            chain(lib, x).sum().backward()
        return step

    def mlp_step(lib, make, batch):
        functional = linear if lib is tinynet else torch.nn.functional.linear
        sizes = [784, 1000, 1000, 10]
        weights = [make(rng.standard_normal((o, i)).astype(np.float32) * 0.03)
                   for i, o in pairwise(sizes)]
        biases = [make(np.zeros(o, np.float32)) for o in sizes[1:]]
        x = make(rng.random((batch, 784)).astype(np.float32), grad=False)
        target = rng.integers(0, 10, batch)
        rows = np.arange(batch)
        def step():
            for p in weights + biases:
                p.grad = None
            h = x
            for k, (w, b) in enumerate(zip(weights, biases, strict=True)):
                h = functional(h, w, b)
                if k < 2:
                    h = h.relu()
            loss = -h.log_softmax(dim=1)[rows, target].mean()
            loss.backward()
        return step

    makers = {"tinynet": (tinynet, lambda a, grad=True: tinynet.tensor(a, requires_grad=grad))}
    if torch is not None:
        makers["torch"] = (torch, lambda a, grad=True: torch.tensor(a, requires_grad=grad))

    def compare(title, build, per, target):
        """One row: both frameworks timed in interleaved rounds (µs per ``per``)."""
        times = median_times({name: build(lib, make) for name, (lib, make) in makers.items()})
        ours, ref = times["tinynet"] / per, times.get("torch")
        return [title, ours * 1e6, ref / per * 1e6 if ref else "-",
                ours / (ref / per) if ref else "-", target]

    rows = [compare(f"per-op fwd+bwd, (4, 1000), chain of {args.chain}", per_op_step,
                    args.chain, "2.0")]
    for batch, target in [(4, "-"), (128, "1.3")]:
        rows.append(compare(f"MLP 784-1000-1000-10 fwd+bwd, batch {batch}",
                            functools.partial(mlp_step, batch=batch), 1, target))
    print_table(f"tinynet vs PyTorch, {args.threads} thread(s), median µs",
                ["case", "tinynet µs", "PyTorch µs", "ratio", "target ≤"], rows)


if __name__ == "__main__":
    main()
