"""Where a training step's time goes, tinynet vs PyTorch: forward, backward, Adam,
and the step's matrix products timed alone.

    python benchmarks/step_parts.py [--rounds 3]

The model is train_step.py's MLP (784-1000-1000-10 with LayerNorm) at batch 4
and 128. Each library runs in processes of its own at its default threads, the
rounds alternating between them (as in train_step.py). A process times each
phase of 40 steps (forward with the loss, backward, ``Adam.step``) and takes
their medians; then, in the same process, it times the eight matrix products
of a step at the same shapes and layouts with the library's own product
(NumPy's for tinynet, torch's for PyTorch): x Wᵀ for the three layers, dW = dyᵀ x
for the three and dx = dy W for the upper two. "rest" is the step less those
products: what the framework adds around BLAS. A cell is the median over the
rounds. Nothing here asserts.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from itertools import pairwise

sys.path.insert(0, os.path.dirname(__file__))
from common import print_table, timing_rounds  # noqa: E402
from train_step import run_clean, torch_models  # noqa: E402

HERE = os.path.abspath(__file__)
BATCHES = (4, 128)
SIZES = (784, 1000, 1000, 10)
PHASES = ("forward", "backward", "Adam")


def step_phases(lib, model, x, y, steps=40):
    """Median seconds of each phase of a training step."""
    opt = lib.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = lib.nn.functional.cross_entropy
    times = {phase: [] for phase in PHASES}
    for step in range(steps + 5):
        opt.zero_grad()
        start = time.perf_counter()
        loss = loss_fn(model(x), y)
        forward = time.perf_counter()
        loss.backward()
        backward = time.perf_counter()
        opt.step()
        done = time.perf_counter()
        if step >= 5:
            for phase, seconds in zip(PHASES, (forward - start, backward - forward,
                                               done - backward), strict=True):
                times[phase].append(seconds)
    return {phase: statistics.median(t) for phase, t in times.items()}


def products(matmul, arrays):
    """The step's eight products on ``arrays`` (inputs, weights, output gradients)."""
    activations, weights, grads = arrays

    def run():
        for a, w in zip(activations, weights, strict=True):
            matmul(a, w.T)                                    # forward: x Wᵀ
        for a, g in zip(activations, grads, strict=True):
            matmul(g.T, a)                                    # dW = dyᵀ x
        for g, w in zip(grads[1:], weights[1:], strict=True):
            matmul(g, w)                                      # dx = dy W (upper layers)
    return run


def child(library, batch):
    import numpy as np
    rng = np.random.default_rng(0)
    x = rng.random((batch, SIZES[0]), dtype=np.float32)
    y = rng.integers(0, 10, batch)
    arrays = ([rng.random((batch, n), dtype=np.float32) for n in SIZES[:-1]],
              [rng.random((m, n), dtype=np.float32) for n, m in pairwise(SIZES)],
              [rng.random((batch, m), dtype=np.float32) for m in SIZES[1:]])
    if library == "torch":
        import torch
        lib, model = torch, torch_models(torch)["mlp"]()
        x, y = torch.tensor(x), torch.tensor(y)
        arrays = tuple([torch.tensor(a) for a in group] for group in arrays)
        matmul = torch.matmul
    else:
        import tinynet
        from tinynet.models import MLP
        lib, model = tinynet, MLP("layer")
        x, y = tinynet.tensor(x), tinynet.tensor(y)
        matmul = np.matmul
    result = step_phases(lib, model, x, y)
    result["products"] = timing_rounds({"p": products(matmul, arrays)}, repeat=7).median("p")
    print(json.dumps(result))


def run_child(library, batch):
    return run_clean([sys.executable, HERE, "--child", library, "--batch", str(batch)], {},
                     f"{library} at batch {batch}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="processes per library and batch")
    parser.add_argument("--child", choices=("tinynet", "torch"), help=argparse.SUPPRESS)
    parser.add_argument("--batch", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args.child, args.batch)
    try:
        import torch  # noqa: F401
        libraries = ("tinynet", "torch")
    except ImportError:
        libraries = ("tinynet",)
    rows = []
    for batch in BATCHES:
        runs = {library: [] for library in libraries}
        for _ in range(args.rounds):
            for library in libraries:
                runs[library].append(run_child(library, batch))
        for library in libraries:
            cell = {key: statistics.median(r[key] for r in runs[library]) * 1e3
                    for key in (*PHASES, "products")}
            step = sum(cell[phase] for phase in PHASES)
            rows.append([f"batch {batch}", library, *(cell[p] for p in PHASES), step,
                         cell["products"], step - cell["products"]])
    print_table(f"MLP+LN 784-1000-1000-10 training step, median ms, default threads "
                f"({os.cpu_count()} cores), {args.rounds} processes each",
                ["case", "library", *PHASES, "step", "products alone", "rest"], rows)


if __name__ == "__main__":
    main()
