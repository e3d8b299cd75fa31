"""The GPT tables of docs/transformers.md: tinynet against nanoGPT, and gradient norms.

    python examples/gpt_report.py --runs runs --page docs/transformers.md

Three blocks, between ``<!-- gpt_report: NAME -->`` and ``<!-- /gpt_report: NAME -->``
(examples/page_blocks.py):

``losses``
    For each seed of :data:`SEEDS`, the losses at the last evaluation of
    ``RUNS/gpt-seedS/curves.csv`` (examples/char_lm.py writes it) beside
    nanoGPT's at the same iteration (``FIGURES/nanogpt_curves.csv``, from its
    train.py logs), and the validation loss of the final model on 200 fixed
    batches (benchmarks/char_lm_eval.py): tinynet's computed here from
    ``RUNS/gpt-seedS/last.npz`` (needs the full Tiny Shakespeare, ``--data`` or
    as char_lm.py finds it; "-" and a note otherwise), nanoGPT's read from
    ``FIGURES/nanogpt_fixed_batches.csv`` (``char_lm_eval.py --nanogpt``, run
    where nanoGPT and PyTorch are). The last row is the mean (sample standard
    deviation) over seeds. It also rewrites ``FIGURES/gpt_curves.png`` from the
    runs (docs/figures/gpt_curves.py).

``grad-norms``
    Computed here in seconds, as tests/test_grad_norms.py measures it: one
    backward of the loss of a 6-layer GPT (64 channels, 4 heads, context 32,
    65 characters, float64) on a random batch of 8, seeds 0-4 (model and
    batch); the ratio of the mean gradient norm of blocks 4-5 to that of blocks
    0-1, for ``mlp.c_fc.weight`` and for all the block's matrices, with GPT-2's
    initialisation and with Xavier on the block matrices; and with Xavier, the
    last block's ``c_fc`` gradient at 8 layers over that at 2 (Xiong et al.'s
    Theorem 1), in a block of its own, ``grad-depth``. Each cell is the range over the
    seeds. ``FIGURES/grad_norms.png`` draws each block's gradient norm at 6 and 12
    layers, both placements and both initialisations.

A block without its markers on the page is printed instead; a missing run is
reported and its block left as it is. ``make experiments-gpt`` trains the three
seeds and then runs this.
"""
from __future__ import annotations

import argparse
import csv
import functools
import math
import os
import statistics
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import page_blocks  # noqa: E402  (examples/)

TAG = "gpt_report"
PAGE = "docs/transformers.md"
SEEDS = (1337, 1338, 1339)
GRAD_SEEDS = tuple(range(5))
LAYERS = 6
LOSS_HEADER = ["seed", "tinynet val", "nanoGPT val", "tinynet train", "nanoGPT train",
               "tinynet, 200 fixed batches", "nanoGPT, same batches"]


def read_csv(path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


# ------------------------------------------------------------------ the losses

def final_losses(curves: list[dict]) -> tuple[int, float, float]:
    """The (iteration, train, val) loss of a curves.csv's last evaluation."""
    last = max(curves, key=lambda row: int(row["iter"]))
    return int(last["iter"]), float(last["train_loss"]), float(last["val_loss"])


def fixed_batch_loss(paths: list[str], data: str | None) -> list[float | None]:
    """Each checkpoint's validation loss on char_lm_eval.py's 200 fixed batches (None for a
    missing checkpoint); FileNotFoundError without the full Tiny Shakespeare."""
    sys.path.insert(0, os.path.join(HERE, os.pardir, "benchmarks"))
    import char_lm_eval

    from tinynet.data import load_tinyshakespeare
    present = [p for p in paths if os.path.exists(p)]
    if not present:
        return [None] * len(paths)
    corpus = load_tinyshakespeare(data, allow_sample=False)
    batches = char_lm_eval.fixed_batches(corpus, 200, 12, 64)
    return [char_lm_eval.tinynet_loss(p, batches)[0] if p in present else None for p in paths]


def _cell(x: float | None, digits: int = 4) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def _summary(values: list) -> str:
    if None in values or len(values) < 2:
        return "-"
    return f"{statistics.fmean(values):.3f} ({statistics.stdev(values):.3f})"


def losses_block(runs: str, figures: str, data: str | None,
                 seeds=SEEDS) -> tuple[str | None, list[str]]:
    """The losses table (None without any run) and the notes on what is missing."""
    notes, rows, dirs = [], [], []
    theirs = read_csv(os.path.join(figures, "nanogpt_curves.csv"))
    fixed_theirs = {int(r["seed"]): float(r["val_loss"])
                    for r in read_csv(os.path.join(figures, "nanogpt_fixed_batches.csv"))}
    for seed in seeds:
        path = os.path.join(runs, f"gpt-seed{seed}", "curves.csv")
        if not os.path.exists(path):
            notes.append(f"no run of seed {seed} ({path})")
            continue
        dirs.append(os.path.dirname(path))
        iteration, train, val = final_losses(read_csv(path))
        ref = [r for r in theirs if int(r["seed"]) == seed and int(r["iter"]) == iteration]
        ref_train, ref_val = ((float(ref[0]["train_loss"]), float(ref[0]["val_loss"])) if ref
                              else (None, None))
        if not ref:
            notes.append(f"nanoGPT has no evaluation of seed {seed} at iteration {iteration}")
        rows.append(dict(seed=seed, val=val, ref_val=ref_val, train=train, ref_train=ref_train,
                         fixed=None, ref_fixed=fixed_theirs.get(seed)))
    if not rows:
        return None, notes
    try:
        fixed = fixed_batch_loss([os.path.join(d, "last.npz") for d in dirs], data)
    except FileNotFoundError:
        fixed = [None] * len(rows)
        notes.append("tinynet, 200 fixed batches: not computed, it needs the full Tiny "
                     "Shakespeare (--data)")
    else:
        missing = [str(r["seed"]) for r, loss in zip(rows, fixed, strict=True) if loss is None]
        if missing:
            notes.append(f"tinynet, 200 fixed batches: no last.npz for seed {', '.join(missing)}")
    for row, loss in zip(rows, fixed, strict=True):
        row["fixed"] = loss
    keys = ("val", "ref_val", "train", "ref_train", "fixed", "ref_fixed")
    cells = [[str(r["seed"])] + [_cell(r[k]) for k in keys] for r in rows]
    cells.append(["mean (sd)"] + [_summary([r[k] for r in rows]) for k in keys])
    os.makedirs(figures, exist_ok=True)
    sys.path.insert(0, os.path.join(HERE, os.pardir, "docs", "figures"))
    import gpt_curves
    gpt_curves.main(dirs, out=os.path.join(figures, "gpt_curves.png"),
                    reference=os.path.join(figures, "nanogpt_curves.csv"))
    return page_blocks.markdown_table(LOSS_HEADER, cells), notes


# ---------------------------------------------------- gradient norms at initialisation

@functools.cache          # the tables and the figure ask for the same models
def gradient_norms(placement: str, seed: int, n_layer: int = LAYERS, init: str = "gpt2"):
    """Each parameter's gradient norm after one backward of the loss on a random batch."""
    import tinynet
    from tinynet import nn
    from tinynet.models import GPT, GPTConfig
    from tinynet.nn.utils import parameter_grad_norms
    tinynet.manual_seed(seed)
    model = GPT(GPTConfig(block_size=32, vocab_size=65, n_layer=n_layer, n_head=4, n_embd=64,
                          placement=placement)).double()
    if init == "xavier":                # Glorot-uniform the block matrices
        for name, p in model.named_parameters():
            if name.startswith("transformer.h.") and p.ndim == 2:
                bound = math.sqrt(6 / sum(p.shape))
                nn.init.uniform_(p, -bound, bound)
    rng = np.random.default_rng(seed)
    idx, targets = (tinynet.tensor(rng.integers(0, 65, (8, 32))) for _ in range(2))
    model(idx, targets)[1].backward()
    return parameter_grad_norms(model)


def block_norms(norms: dict, n_layer: int = LAYERS) -> list[float]:
    """The gradient norm of each block's matrices together (its norms' weights left out)."""
    return [math.sqrt(sum(v * v for k, v in norms.items()
                          if k.startswith(f"transformer.h.{i}.") and k.endswith(".weight")
                          and ".ln_" not in k)) for i in range(n_layer)]


def depth_ratios(norms: dict, n_layer: int = LAYERS) -> tuple[float, float]:
    """Mean of the last two blocks over the first two: for c_fc, and for all matrices."""
    c_fc = [norms[f"transformer.h.{i}.mlp.c_fc.weight"] for i in range(n_layer)]
    return tuple(float(np.mean(v[-2:]) / np.mean(v[:2]))
                 for v in (c_fc, block_norms(norms, n_layer)))


def plot_block_norms(path: str, seeds=GRAD_SEEDS) -> None:
    """Gradient norm against block, Post-LN and Pre-LN at 6 and 12 layers, mean over
    ``seeds``: a panel for GPT-2's initialisation, one for Xavier's."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from tinynet.serialization import atomic_write
    figure, axes = plt.subplots(1, 2, figsize=(9, 3.6))
    for axis, (init, title) in zip(axes, (("gpt2", "GPT-2's initialisation"),
                                          ("xavier", "Xavier on the block matrices")),
                                   strict=True):
        for colour, placement in (("C3", "post"), ("C0", "pre")):
            for style, n_layer in (("-", 6), ("--", 12)):
                norms = np.mean([block_norms(gradient_norms(placement, s, n_layer, init),
                                             n_layer) for s in seeds], axis=0)
                axis.plot(range(n_layer), norms, style, color=colour, marker=".",
                          label=f"{placement}-LN, {n_layer} layers")
        axis.set(xlabel="block (0: next to the embedding)", ylabel="gradient norm",
                 title=title, yscale="log")
        axis.legend(fontsize=7)
    figure.suptitle(f"Gradient norms at initialisation, mean over seeds {seeds[0]}–{seeds[-1]}",
                    fontsize=10)
    figure.tight_layout()
    with atomic_write(path, "wb") as f:
        figure.savefig(f, format="png", dpi=120)
    plt.close(figure)


def _range(values) -> str:
    return f"{min(values):.3f}–{max(values):.3f}"


def grad_norms_blocks(seeds=GRAD_SEEDS) -> dict[str, str]:
    """The tables of blocks ``grad-norms`` (the depth ratios) and ``grad-depth`` (Theorem 1)."""
    init_names = {"gpt2": "GPT-2's", "xavier": "Xavier on the block matrices"}
    cells = []
    for init in ("gpt2", "xavier"):
        for placement in ("post", "pre"):
            ratios = [depth_ratios(gradient_norms(placement, s, LAYERS, init)) for s in seeds]
            name = "GPT-2's (the model's own)" if (init, placement) == ("gpt2", "post") \
                else init_names[init]
            cells.append([name, placement, _range([r[0] for r in ratios]),
                          _range([r[1] for r in ratios])])
    ratios = page_blocks.markdown_table(
        ["initialisation", "placement", "ratio, `mlp.c_fc.weight`",
         "ratio, all block matrices"], cells)
    depth = []
    for placement in ("post", "pre"):
        last = {n: [gradient_norms(placement, s, n, "xavier")[f"transformer.h.{n - 1}.mlp.c_fc"
                                                               ".weight"] for s in seeds]
                for n in (2, 8)}
        depth.append([placement, _range([b / a for a, b in zip(last[2], last[8], strict=True)])])
    theorem = page_blocks.markdown_table(
        ["placement", "last block's `c_fc` gradient, 8 layers over 2 (Xavier)"], depth)
    return {"grad-norms": ratios, "grad-depth": theorem}


# ---------------------------------------------------------------------- main

def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", default="runs", help="the directory of gpt-seedS/")
    parser.add_argument("--page", default=PAGE, help=f"the page to update (default {PAGE})")
    parser.add_argument("--figures", default="docs/figures",
                        help="nanoGPT's reference CSVs, and where gpt_curves.png goes")
    parser.add_argument("--data", help="Tiny Shakespeare, as char_lm.py --data")
    parser.add_argument("--grad-seeds", type=int, nargs="+", default=list(GRAD_SEEDS))
    args = parser.parse_args(argv)
    if not os.path.isfile(args.page):
        parser.error(f"--page {args.page}: no such file")
    blocks = {}
    table, notes = losses_block(args.runs, args.figures, args.data)
    for note in notes:
        print(f"losses: {note}")
    if table is None:
        page_blocks.no_results("losses", f"{args.runs}/gpt-seed*/curves.csv")
    else:
        blocks["losses"] = "\n" + table + "".join(f"\n\n*{n}*" for n in notes) + "\n"
    for name, text in grad_norms_blocks(args.grad_seeds).items():
        blocks[name] = "\n" + text + "\n"
    plot_block_norms(os.path.join(args.figures, "grad_norms.png"), args.grad_seeds)
    for name in page_blocks.rewrite_page(args.page, TAG, blocks):
        print(f"{name}: table in {args.page}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
