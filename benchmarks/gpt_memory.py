"""Peak resident memory of a GPT training iteration, tinynet vs PyTorch, and how
attention's share grows with the context.

    python benchmarks/gpt_memory.py [--iterations 3]

The model is nanoGPT's CPU recipe (benchmarks/torch_gpt.py: 4 layers, 4 heads,
128 channels, batch 12), its iteration torch_gpt.gpt_iteration's: forward with
the loss, backward, clipping, AdamW. Each library and context (block_size 64,
the recipe's, then 128 and 256, the model otherwise the same) runs in a fresh
process with a clean environment (train_step.run_clean: no thread or MALLOC_*
settings, default threads). The process reads, from /proc/self/status:

* base: VmRSS right after the imports and building the model and optimizer;
* warm: VmRSS after the first iteration, which also allocates the gradients and
  AdamW's moments, and loads what a library loads on first use (tinynet imports
  Numba and loads its GELU kernels then: about 100 MiB);
* peak: VmHWM (the peak RSS) over the later iterations. The high-water mark is
  reset to the current RSS after the first iteration (``5`` into
  /proc/self/clear_refs); where the kernel refuses the reset, peak is the
  process's whole-life VmHWM (= getrusage's ru_maxrss) and the table says so.

"iteration" in the tables is peak − base (the first iteration's loading
included); peak − warm is what an iteration adds on top of what the process
holds between iterations. RSS counts what the allocators hold, not only live
arrays: glibc keeps freed heap memory (part of the iterations' working memory
stays in warm), and PyTorch's and OpenBLAS's buffers count too. The analytic
column is the attention matrices kept for backward: tinynet's attention node
saves its weights P (the scores become P in place), B·heads·T·T·4 bytes per
layer, × layers; its backward adds two more T×T arrays for the layer at hand
(dP, dS). PyTorch's fused attention keeps only a row statistic (B·heads·T), no
T×T matrix, so "tinynet − PyTorch" holds tinynet's T² term (the activations
that grow as T are in both). Nothing here asserts.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from torch_gpt import BATCH, RECIPE, gpt_iteration  # noqa: E402

from common import print_table  # noqa: E402
from train_step import run_clean  # noqa: E402

HERE = os.path.abspath(__file__)
CONTEXTS = (64, 128, 256)
MIB = 2 ** 20


def status_bytes(field: str) -> int:
    """A field of /proc/self/status (VmRSS, VmHWM) in bytes."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise KeyError(field)


def reset_peak() -> bool:
    """Set VmHWM to the current RSS; False where the kernel does not allow it."""
    try:
        with open("/proc/self/clear_refs", "w") as clear_refs:
            clear_refs.write("5")
    except OSError:
        return False
    return status_bytes("VmHWM") <= status_bytes("VmRSS") + 64 * 1024


def child(library: str, block_size: int, iterations: int) -> None:
    iteration = gpt_iteration(library, block_size=block_size)
    base = status_bytes("VmRSS")
    iteration()
    warm = status_bytes("VmRSS")
    reset = reset_peak()
    for _ in range(iterations - 1):
        iteration()
    print(json.dumps({"base": base, "warm": warm, "peak": status_bytes("VmHWM"),
                      "reset": reset}))


def attention_bytes(block_size: int) -> int:
    """The T×T attention weights saved for backward, all layers."""
    return BATCH * RECIPE["n_head"] * block_size ** 2 * 4 * RECIPE["n_layer"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=3, help="iterations per process")
    parser.add_argument("--child", choices=("tinynet", "torch"), help=argparse.SUPPRESS)
    parser.add_argument("--block-size", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args.child, args.block_size, args.iterations)
    try:
        import torch  # noqa: F401
        libraries = ("tinynet", "torch")
    except ImportError:
        libraries = ("tinynet",)
    runs = {(library, block_size): run_clean(
                [sys.executable, HERE, "--child", library, "--block-size", str(block_size),
                 "--iterations", str(args.iterations)], {}, f"{library} at context {block_size}")
            for block_size in CONTEXTS for library in libraries}
    reset = all(run["reset"] for run in runs.values())
    peak_note = "" if reset else " (peak: whole-process VmHWM, the reset was refused)"

    def mib(run, key, minus=None):
        return (run[key] - (run[minus] if minus else 0)) / MIB

    print_table(f"GPT {RECIPE['n_layer']}x{RECIPE['n_embd']}, context {CONTEXTS[0]}, batch "
                f"{BATCH}: resident memory, MiB, {args.iterations} iterations{peak_note}",
                ["library", "base (imports, model, optimizer)", "warm (after the first)",
                 "peak (later iterations)", "iteration (peak - base)", "peak - warm"],
                [[library, mib(run, "base"), mib(run, "warm"), mib(run, "peak"),
                  mib(run, "peak", "base"), mib(run, "peak", "warm")]
                 for library in libraries for run in [runs[library, CONTEXTS[0]]]])
    headers = ["block_size", "attention saved (analytic)"]
    for library in libraries:
        headers += [f"{library} iteration", f"{library} peak - warm", f"{library} peak"]
    if "torch" in libraries:
        headers.append("tinynet - PyTorch (iteration)")
    rows = []
    for block_size in CONTEXTS:
        row = [block_size, attention_bytes(block_size) / MIB]
        for library in libraries:
            run = runs[library, block_size]
            row += [mib(run, "peak", "base"), mib(run, "peak", "warm"), mib(run, "peak")]
        if "torch" in libraries:
            row.append(mib(runs["tinynet", block_size], "peak", "base")
                       - mib(runs["torch", block_size], "peak", "base"))
        rows.append(row)
    print_table(f"the same with a longer context (batch {BATCH}), MiB; iteration = peak - "
                f"base; the saved attention weights grow as T² (B·heads·T²·4 bytes × "
                f"{RECIPE['n_layer']} layers)", headers, rows)


if __name__ == "__main__":
    main()
