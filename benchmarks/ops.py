"""The everyday ops, forward and forward + backward, tinynet vs PyTorch.

    python benchmarks/ops.py [--rounds 7] [--only NAME ...] [--threads N]

One row per op and pass, on GPT-sized float32 activations (the character GPT's
batch 12, context 64, width 128, 4 heads; 768 rows of 512 or 65 columns):
the activations (sigmoid, SiLU, tanh, ReLU, exp, GELU exact and tanh), softmax,
log_softmax, cross-entropy, layer_norm, broadcast add and mul, ``cat``,
``sum(dim=-1)``, ``mean``, dropout (p = 0.1, training), an embedding lookup and
causal ``scaled_dot_product_attention``. "fwd" is the forward alone, recording
the graph as training does (the inputs require grad); "fwd+bwd" clears the
inputs' gradients, runs the forward and ``out.backward(g)`` with a fixed random
upstream gradient ``g`` (``backward()`` for the scalar outputs).

Both libraries run in the same process and the four functions of an op are
timed in interleaved rounds (tinynet fwd, PyTorch fwd, tinynet fwd+bwd,
PyTorch fwd+bwd, then again: common.timing_rounds), so that a slow spell of a
shared machine hits them alike. A cell is the median time per call over the
rounds, with the spread (fastest and slowest round against the median); ratio =
tinynet / PyTorch (< 1: tinynet is faster); the last rows are the geometric
means of the ratios. The headline table is at the defaults (no thread
settings, every core); the second runs in a child process with both libraries
on one thread (``tinynet.set_num_threads(1)``, ``torch.set_num_threads(1)``).
PyTorch is imported first, so that its OpenMP runtime starts with its own wait
policy rather than the passive one tinynet's import sets (tinynet/runtime/threads.py).
``--threads N`` prints the one table at N threads; ``--only`` picks ops by name.
"""
from __future__ import annotations

import argparse
import math
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from common import print_table, timing_rounds, try_import_torch  # noqa: E402

HERE = os.path.abspath(__file__)
ROWS, WIDTH, CLASSES = 768, 512, 65           # batch 12 x context 64; GELU/LN width; vocabulary


def cases(rng):
    """{name: (shape label, inputs, op)}: inputs are (array, requires_grad) pairs and
    ``op(lib, F, *tensors)`` is written once for both libraries (lib is ``tinynet``
    or ``torch``, F its ``nn.functional``)."""
    import numpy as np

    def normal(*shape):
        return rng.standard_normal(shape).astype(np.float32), True

    x = normal(ROWS, WIDTH)
    return {
        "sigmoid": ("(768, 512)", [x], lambda lib, F, a: a.sigmoid()),
        "silu": ("(768, 512)", [x], lambda lib, F, a: F.silu(a)),
        "tanh": ("(768, 512)", [x], lambda lib, F, a: a.tanh()),
        "relu": ("(768, 512)", [x], lambda lib, F, a: a.relu()),
        "exp": ("(768, 512)", [x], lambda lib, F, a: a.exp()),
        "gelu": ("(768, 512)", [x], lambda lib, F, a: F.gelu(a)),
        "gelu_tanh": ("(768, 512)", [x], lambda lib, F, a: F.gelu(a, approximate="tanh")),
        "softmax": ("(12, 4, 64, 64)", [normal(12, 4, 64, 64)],
                    lambda lib, F, a: F.softmax(a, dim=-1)),
        "log_softmax": ("(768, 65)", [normal(ROWS, CLASSES)],
                        lambda lib, F, a: F.log_softmax(a, dim=-1)),
        "cross_entropy": ("(768, 65)", [normal(ROWS, CLASSES),
                                        (rng.integers(0, CLASSES, ROWS), False)],
                          lambda lib, F, a, t: F.cross_entropy(a, t)),
        "layer_norm": ("(768, 512)", [x, normal(WIDTH), normal(WIDTH)],
                       lambda lib, F, a, w, b: F.layer_norm(a, (WIDTH,), w, b)),
        "add": ("(768, 512) + (512,)", [x, normal(WIDTH)], lambda lib, F, a, b: a + b),
        "mul": ("(768, 512) * (768, 1)", [x, normal(ROWS, 1)], lambda lib, F, a, b: a * b),
        "cat": ("3 x (768, 128), dim -1", [normal(ROWS, 128) for _ in range(3)],
                lambda lib, F, *parts: lib.cat(parts, dim=-1)),
        "sum": ("(768, 512), dim -1", [x], lambda lib, F, a: a.sum(dim=-1)),
        "mean": ("(768, 512), all", [x], lambda lib, F, a: a.mean()),
        "dropout": ("(768, 512), p 0.1", [x],
                    lambda lib, F, a: F.dropout(a, p=0.1, training=True)),
        "embedding": ("(12, 64) from 65 x 128", [(rng.integers(0, CLASSES, (12, 64)), False),
                                                 normal(CLASSES, 128)],
                      lambda lib, F, i, w: F.embedding(i, w)),
        "sdpa": ("(12, 4, 64, 32), causal", [normal(12, 4, 64, 32) for _ in range(3)],
                 lambda lib, F, q, k, v: F.scaled_dot_product_attention(q, k, v,
                                                                        is_causal=True)),
    }


def passes(lib, inputs, op, rng):
    """(forward, forward + backward) of one op for one library, on its own copies
    of the inputs."""
    import numpy as np
    tensors = [lib.tensor(array, requires_grad=grad) for array, grad in inputs]
    leaves = [t for t in tensors if t.requires_grad]
    F = lib.nn.functional
    out = op(lib, F, *tensors)
    upstream = (None if out.ndim == 0 else
                lib.tensor(rng.standard_normal(tuple(out.shape)).astype(np.float32)))

    def forward():
        op(lib, F, *tensors)

    def forward_backward():
        for t in leaves:
            t.grad = None
        op(lib, F, *tensors).backward(upstream)
    return forward, forward_backward


def table(names, rounds, threads, torch):
    import numpy as np

    import tinynet
    libraries = {"tinynet": tinynet}
    if torch is not None:
        libraries["PyTorch"] = torch
    if threads:
        for lib in libraries.values():
            lib.set_num_threads(threads)
    rng = np.random.default_rng(0)
    all_cases = cases(rng)
    rows, ratios = [], {"fwd": [], "fwd+bwd": []}
    for name in names:
        shape, inputs, op = all_cases[name]
        functions = {}
        built = {label: passes(lib, inputs, op, rng) for label, lib in libraries.items()}
        for k, pass_name in enumerate(ratios):
            for label in libraries:
                functions[(pass_name, label)] = built[label][k]
        timed = timing_rounds(functions, repeat=rounds)
        for pass_name in ratios:
            ours = timed.median((pass_name, "tinynet"))
            row = [name, shape, pass_name, ours * 1e6, timed.spread((pass_name, "tinynet"))]
            if torch is not None:
                ref = timed.median((pass_name, "PyTorch"))
                row += [ref * 1e6, timed.spread((pass_name, "PyTorch")), ours / ref]
                ratios[pass_name].append(ours / ref)
            rows.append(row)
    headers = ["op", "shape", "pass", "tinynet µs", "spread"]
    if torch is not None:
        headers += ["PyTorch µs", "spread", "ratio"]
        for pass_name, values in ratios.items():
            geometric = math.exp(sum(map(math.log, values)) / len(values))
            rows.append(["geometric mean", "", pass_name, "", "", "", "", geometric])
    where = (f"{threads} thread{'s' if threads > 1 else ''} each" if threads else
             f"no thread settings ({os.cpu_count()} cores)")
    print_table(f"everyday ops, tinynet vs PyTorch in one process, {where}, median µs "
                f"over {rounds} interleaved rounds (spread: fastest / slowest round)",
                headers, rows)
    sys.stdout.flush()


def main():
    import numpy as np
    names = list(cases(np.random.default_rng(0)))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7, help="timed rounds per function")
    parser.add_argument("--only", nargs="+", choices=names, metavar="NAME",
                        help=f"ops to time, of: {' '.join(names)}")
    parser.add_argument("--threads", type=int,
                        help="print one table, both libraries at this many threads")
    args = parser.parse_args()
    chosen = args.only or names
    torch = try_import_torch()                  # before tinynet: see the docstring
    table(chosen, args.rounds, args.threads, torch)
    if args.threads is None:
        command = [sys.executable, HERE, "--threads", "1", "--rounds", str(args.rounds),
                   "--only", *chosen]
        subprocess.run(command, check=True)


if __name__ == "__main__":
    main()
