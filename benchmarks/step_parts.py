"""Where a training step's time goes, tinynet vs PyTorch: each phase of a step,
and the step's matrix products timed alone.

    python benchmarks/step_parts.py [--rounds 3] [--only mlp|gpt|cnn]

Three models: train_step.py's MLP (784-1000-1000-10 with LayerNorm) at batch 4
and 128, nanoGPT's GPT at its CPU recipe (benchmarks/torch_gpt.py: 4
layers, 4 heads, 128 channels, context 64, batch 12), and train_step.py's MNIST
convnet (tinynet.models.ConvNet: BatchNorm at batch 128, GroupNorm at batch 4). Each library runs in
processes of its own at its default threads, the rounds alternating between
them (as in train_step.py). A process times each phase of 40 steps and takes
their medians: for the MLP forward with the loss, backward and ``Adam.step``;
for the GPT forward with the loss, backward, ``clip_grad_norm_(…, 1.0)`` and
``AdamW.step`` with ``zero_grad``. After each step it times the step's matrix
products alone, at the same shapes and layouts, with the library's own product
(NumPy's ``np.matmul`` for tinynet, ``torch.matmul`` for PyTorch), so that the
steps and the products meet the same spells of a shared machine:

* MLP: x Wᵀ for the three layers, dW = dyᵀ x for the three and dx = dy W for
  the upper two;
* GPT: for each of its 17 Linears (per layer c_attn 128→384, c_proj 128→128,
  c_fc 128→512, mlp c_proj 512→128; and lm_head 128→65), on 768 = 12·64 rows,
  x Wᵀ, dx = dy W and dW = dyᵀ x; and per layer the attention's batched
  products at (12, 4, 64, 32), q, k and v the strided views of c_attn's output
  that the model makes: q kᵀ and P v forward, dO vᵀ, Pᵀ dO, dS k and dSᵀ q
  backward. (PyTorch's fused attention does not run these products; they are
  what the same arithmetic costs in torch.matmul.)
* ConvNet: each convolution as tinynet runs it (tinynet.ops.conv), one product
  over the im2col matrix: W (O, C·9) times cols (C·9, N·H·W) forward,
  dW = dy colsᵀ, and d cols = Wᵀ dy for the second (the first's input needs no
  gradient); the classifier's three products as the MLP's. (PyTorch's oneDNN
  convolutions do not run these products; they are the same arithmetic in
  torch.matmul.)

"rest" is the step less those products: what the framework adds around BLAS.
A cell is the median over the rounds. For tinynet's GPT it also prints
iteration / products alone (target ≤ 1.25): in each process the median over
its steps of the step over the products timed after it, and the median over the
processes. A second GPT table times the same iteration at 8 channels, context
4, batch 1, where there is next to nothing to compute: what each library
costs per iteration around the arithmetic. Nothing here asserts.
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
from torch_gpt import BATCH, RECIPE, GPTRun  # noqa: E402

from common import print_table  # noqa: E402
from train_step import run_clean, torch_models  # noqa: E402

HERE = os.path.abspath(__file__)
BATCHES = (4, 128)
SIZES = (784, 1000, 1000, 10)
MLP_PHASES = ("forward", "backward", "Adam")
CNN_CASES = ((128, "batch"), (4, "group"))          # as train_step.py: (batch, norm)
CNN_LAYERS = ((1, 16, 28), (16, 32, 14))             # (in, out channels, image size)
GPT_PHASES = ("forward", "backward", "clip", "AdamW")
OVERHEAD = dict(n_embd=8, block_size=4, batch=1)    # the GPT with next to nothing to compute


def phase_times(phases: dict, products, before=None, steps: int = 40,
                warmup: int = 5) -> dict:
    """Seconds of each phase of every step, and of the step's products alone
    right after it: ``phases`` maps each name to a function of no arguments,
    called in order, once a step; ``products`` runs the products (see
    :func:`products`); ``before`` (if given) runs untimed at the start of each
    step. The products alternate with the steps, so that a slow spell of a
    shared machine hits both alike and their ratio stays meaningful."""
    timed = {**phases, "products": products}
    times = {name: [] for name in timed}
    for step in range(warmup + steps):
        if before is not None:
            before()
        for name, fn in timed.items():
            start = time.perf_counter()
            fn()
            if step >= warmup:
                times[name].append(time.perf_counter() - start)
    return times


def mlp_phases(lib, model, x, y, products) -> dict:
    opt = lib.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = lib.nn.functional.cross_entropy
    state = {}
    return phase_times({"forward": lambda: state.update(loss=loss_fn(model(x), y)),
                        "backward": lambda: state["loss"].backward(),
                        "Adam": opt.step}, products, before=opt.zero_grad)


def gpt_phases(library, products, **overrides) -> dict:
    """The phases of torch_gpt.GPTRun's iteration (``overrides`` as for GPTRun)."""
    run = GPTRun(library, **overrides)
    state = {}
    return phase_times({"forward": lambda: state.update(loss=run.forward()),
                        "backward": lambda: state["loss"].backward(),
                        "clip": run.clip, "AdamW": run.update}, products)


def mlp_products(rng, batch) -> list:
    """(a, b) of the MLP step's eight products a @ b, as NumPy arrays."""
    activations = [rng.random((batch, n), dtype="float32") for n in SIZES[:-1]]
    weights = [rng.random((m, n), dtype="float32") for n, m in pairwise(SIZES)]
    grads = [rng.random((batch, m), dtype="float32") for m in SIZES[1:]]
    return ([(a, w.T) for a, w in zip(activations, weights, strict=True)]      # x Wᵀ
            + [(g.T, a) for a, g in zip(activations, grads, strict=True)]      # dW = dyᵀ x
            + [(g, w) for g, w in zip(grads[1:], weights[1:], strict=True)])   # dx = dy W


def gpt_products(rng) -> list:
    """(a, b) of the GPT iteration's products a @ b, as NumPy arrays in the
    model's layouts (see the module docstring)."""
    n_layer, heads, channels = RECIPE["n_layer"], RECIPE["n_head"], RECIPE["n_embd"]
    steps, rows = RECIPE["block_size"], BATCH * RECIPE["block_size"]
    width = channels // heads

    def array(*shape):
        return rng.random(shape, dtype="float32")

    linears = [(channels, 3 * channels), (channels, channels), (channels, 4 * channels),
               (4 * channels, channels)] * n_layer + [(channels, RECIPE["vocab_size"])]
    pairs = []
    for n_in, n_out in linears:
        x, w, dy = array(rows, n_in), array(n_out, n_in), array(rows, n_out)
        pairs += [(x, w.T), (dy, w), (dy.T, x)]                  # x Wᵀ, dx = dy W, dW = dyᵀ x
    for _ in range(n_layer):
        # q, k, v: views of c_attn's output (B, T, 3, heads, width); dO: of (B, T, heads, width)
        q, k, v = array(BATCH, steps, 3, heads, width).transpose(2, 0, 3, 1, 4)
        d_out = array(BATCH, steps, heads, width).transpose(0, 2, 1, 3)
        weights, d_scores = array(BATCH, heads, steps, steps), array(BATCH, heads, steps, steps)
        pairs += [(q, k.mT), (weights, v),                                   # forward
                  (d_out, v.mT), (weights.mT, d_out), (d_scores, k), (d_scores.mT, q)]
    return pairs


def cnn_products(rng, batch) -> list:
    """(a, b) of the convnet step's products in tinynet's im2col layout."""
    def array(*shape):
        return rng.random(shape, dtype="float32")

    pairs = []
    for layer, (c_in, c_out, size) in enumerate(CNN_LAYERS):
        cols, w, dy = array(c_in * 9, batch * size * size), array(c_out, c_in * 9), \
            array(c_out, batch * size * size)
        pairs += [(w, cols), (dy, cols.T)] + ([(w.T, dy)] if layer else [])
    x, w, dy = array(batch, 32 * 7 * 7), array(10, 32 * 7 * 7), array(batch, 10)
    return pairs + [(x, w.T), (dy.T, x), (dy, w)]


def products(matmul, pairs):
    """A function of no arguments that runs ``matmul(a, b)`` for every pair."""
    def run():
        for a, b in pairs:
            matmul(a, b)
    return run


def child(library, model_name, batch):
    import numpy as np
    rng = np.random.default_rng(0)
    pairs = {"gpt": gpt_products, "gpt-overhead": lambda r: [],
             "cnn": lambda r: cnn_products(r, batch),
             "mlp": lambda r: mlp_products(r, batch)}[model_name](rng)
    if library == "torch":
        import torch
        convert, matmul = torch.from_numpy, torch.matmul     # keeps the NumPy strides
    else:
        convert, matmul = (lambda a: a), np.matmul
    pairs = [(convert(a), convert(b)) for a, b in pairs]
    run_products = products(matmul, pairs)
    if model_name == "gpt":
        times = gpt_phases(library, run_products)
    elif model_name == "gpt-overhead":
        times = gpt_phases(library, run_products, **OVERHEAD)
    elif model_name == "cnn":
        norm = dict(CNN_CASES)[batch]
        x = rng.random((batch, SIZES[0]), dtype=np.float32)
        y = rng.integers(0, 10, batch)
        if library == "torch":
            lib, model = torch, torch_models(torch)[f"cnn-{norm}"]()
            x, y = torch.tensor(x), torch.tensor(y)
        else:
            import tinynet
            from tinynet.models import ConvNet
            lib, model, x, y = tinynet, ConvNet(norm), tinynet.tensor(x), tinynet.tensor(y)
        times = mlp_phases(lib, model, x, y, run_products)
    else:
        x = rng.random((batch, SIZES[0]), dtype=np.float32)
        y = rng.integers(0, 10, batch)
        if library == "torch":
            lib, model, x, y = torch, torch_models(torch)["mlp"](), torch.tensor(x), torch.tensor(y)
        else:
            import tinynet
            from tinynet.models import MLP
            lib, model, x, y = tinynet, MLP("layer"), tinynet.tensor(x), tinynet.tensor(y)
        times = mlp_phases(lib, model, x, y, run_products)
    steps = [sum(parts) for parts in zip(*(t for name, t in times.items() if name != "products"),
                                         strict=True)]
    result = {name: statistics.median(t) for name, t in times.items()}
    ratios = [s / p for s, p in zip(steps, times["products"], strict=True)]
    result["ratio"] = statistics.median(ratios) if pairs else None
    print(json.dumps(result))


def run_child(library, model_name, batch=None):
    command = [sys.executable, HERE, "--child", library, "--model", model_name]
    if batch is not None:
        command += ["--batch", str(batch)]
    return run_clean(command, {}, f"{library} {model_name}" + (f" at batch {batch}" if batch
                                                                 else ""))


def phase_rows(case, libraries, phases, rounds, model_name, batch=None):
    """Table rows of one case, and {library: its processes' step / products
    ratios (each the median over that process's steps)}."""
    runs = {library: [] for library in libraries}
    for _ in range(rounds):
        for library in libraries:
            runs[library].append(run_child(library, model_name, batch))
    rows, totals = [], {}
    for library in libraries:
        cell = {key: statistics.median(r[key] for r in runs[library]) * 1e3
                for key in (*phases, "products")}
        step = sum(cell[phase] for phase in phases)
        rows.append([case, library, *(cell[p] for p in phases), step, cell["products"],
                     step - cell["products"]])
        totals[library] = sorted(r["ratio"] for r in runs[library] if r["ratio"] is not None)
    return rows, totals


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="processes per library and case")
    parser.add_argument("--only", choices=("mlp", "gpt", "cnn"), help="one model's table only")
    parser.add_argument("--child", choices=("tinynet", "torch"), help=argparse.SUPPRESS)
    parser.add_argument("--model", choices=("mlp", "gpt", "gpt-overhead", "cnn"),
                        help=argparse.SUPPRESS)
    parser.add_argument("--batch", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args.child, args.model, args.batch)
    try:
        import torch  # noqa: F401
        libraries = ("tinynet", "torch")
    except ImportError:
        libraries = ("tinynet",)
    where = f"default threads ({os.cpu_count()} cores), {args.rounds} processes each"
    if args.only in (None, "mlp"):
        rows = []
        for batch in BATCHES:
            rows += phase_rows(f"batch {batch}", libraries, MLP_PHASES, args.rounds, "mlp",
                               batch)[0]
        print_table(f"MLP+LN 784-1000-1000-10 training step, median ms, {where}",
                    ["case", "library", *MLP_PHASES, "step", "products alone", "rest"], rows)
    if args.only in (None, "cnn"):
        rows = []
        for batch, norm in CNN_CASES:
            rows += phase_rows(f"{norm} norm, batch {batch}", libraries, MLP_PHASES,
                               args.rounds, "cnn", batch)[0]
        print_table(f"ConvNet (MNIST, 16-32 channels) training step, median ms, {where}",
                    ["case", "library", *MLP_PHASES, "step", "products alone", "rest"], rows)
    if args.only in (None, "gpt"):
        case = (f"{RECIPE['n_layer']}x{RECIPE['n_embd']}, context {RECIPE['block_size']}, "
                f"batch {BATCH}")
        rows, ratios = phase_rows(case, libraries, GPT_PHASES, args.rounds, "gpt")
        print_table(f"GPT (nanoGPT's CPU recipe) training iteration, median ms, {where}",
                    ["case", "library", *GPT_PHASES, "iteration", "products alone", "rest"],
                    rows)
        rows = phase_rows(f"{OVERHEAD['n_embd']} channels, context {OVERHEAD['block_size']}, "
                          f"batch {OVERHEAD['batch']}", libraries, GPT_PHASES, args.rounds,
                          "gpt-overhead")[0]
        print_table(f"The same GPT with next to nothing to compute: what each library adds "
                    f"around the arithmetic, median ms, {where}",
                    ["case", "library", *GPT_PHASES, "iteration"], [r[:-2] for r in rows])
        ratios = ratios["tinynet"]
        print(f"\ntinynet GPT: iteration / products alone = {statistics.median(ratios):.2f} "
              f"(the processes: {', '.join(f'{r:.2f}' for r in ratios)}; target ≤ 1.25)")


if __name__ == "__main__":
    main()
