"""The Xiong et al. (2020) section of docs/transformers.md, from examples/xiong.py's runs.

    python examples/xiong_report.py --runs runs --page docs/transformers.md

Reads ``RUNS/xiong/{grad,depth,gpt,train}.jsonl`` and rewrites four blocks between
``<!-- xiong_report: NAME -->`` and ``<!-- /xiong_report: NAME -->``
(examples/page_blocks.py):

``figure3``
    Xiong et al.'s Figure 3(a)(b): each layer's FFN W¹ and W² gradient norm at
    initialisation (the mean over the seeds of each seed's mean over batches),
    encoder and decoder, Post-LN and Pre-LN, and the ratio of the last layer's
    to the first's (the range over the seeds). It draws
    ``FIGURES/xiong_grad_norms.png``.
``depth``
    Their Figure 3(c)(d): the last layer's norms at 12 + 12 layers over those
    at 6 + 6, seed by seed (the same seeds draw both).
``gpt``
    The ratio last layer / first for the decoder-only GPT and the
    encoder–decoder's two stacks, by activation and initialisation (the
    encoder–decoder with ReLU is part ``grad``'s).
``warmup``
    The training runs: validation loss and token accuracy at a few steps, mean
    over seeds; it draws ``FIGURES/xiong_warmup.png``.

A part without records leaves its block as it is and says so.
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import page_blocks  # noqa: E402  (examples/)
import xiong  # noqa: E402

TAG = "xiong_report"
PAGE = "docs/transformers.md"
BLOCKS = ("figure3", "depth", "gpt", "warmup")
PLACEMENT = {False: "Post-LN", True: "Pre-LN"}
WEIGHTS = ("W¹", "W²")


def groups(records, *fields) -> dict:
    """The records by the values of ``fields`` (None where a record lacks one), in their
    order of first appearance."""
    out = {}
    for r in records:
        out.setdefault(tuple(r.get(f) for f in fields), []).append(r)
    return out


def profile(records, stack) -> np.ndarray:
    """The (layers, 2) mean over the records (seeds) of a stack's norms."""
    return np.mean([r["norms"][stack] for r in records], axis=0)


def ratios(records, stack) -> np.ndarray:
    """Each record's last-layer over first-layer norm: (seeds, 2) for W¹, W²."""
    norms = np.array([r["norms"][stack] for r in records])
    return norms[:, -1, :] / norms[:, 0, :]


def span(values) -> str:
    """The mean and the range of ``values``: ``1.23 (1.10–1.40)``, or ``1.23`` alone when
    the range is that one value."""
    values = np.asarray(values)
    if f"{values.min():.2f}" == f"{values.max():.2f}":
        return f"{values.mean():.2f}"
    return f"{values.mean():.2f} ({values.min():.2f}–{values.max():.2f})"


def seeds_of(records) -> str:
    seeds = sorted({r["seed"] for r in records})
    return f"{seeds[0]}–{seeds[-1]}" if len(seeds) > 1 else str(seeds[0])


def figure3_block(records) -> str:
    """Per-layer norms (mean over seeds), a row per layer, and the last/first ratios."""
    by = {nf: rs for (nf,), rs in groups(records, "norm_first").items()}
    header = ["stack", "layer"] + [f"{PLACEMENT[nf]} {w}" for nf in by for w in WEIGHTS]
    rows = []
    for stack in ("encoder", "decoder"):
        profiles = [profile(rs, stack) for rs in by.values()]
        for i in range(len(profiles[0])):
            rows.append([stack, str(i + 1)] + [f"{p[i, w]:.3g}" for p in profiles
                                               for w in range(2)])
    table = page_blocks.markdown_table(header, rows)
    ratio_rows = [[PLACEMENT[nf], stack, name, span(ratios(rs, stack)[:, w])]
                  for nf, rs in by.items()
                  for stack in ("encoder", "decoder") for w, name in enumerate(WEIGHTS)]
    ratio_table = page_blocks.markdown_table(
        ["placement", "stack", "weight", f"last layer / first, mean (range), seeds "
         f"{seeds_of(records)}"], ratio_rows)
    return table + "\n\n" + ratio_table


def depth_block(shallow, deep) -> str:
    """The last layer's norm at 12 + 12 over 6 + 6, seed by seed: mean (range)."""
    rows = []
    for (nf,), deep_rs in groups(deep, "norm_first").items():
        pairs = [(s, d) for d in deep_rs for s in shallow
                 if s["seed"] == d["seed"] and s["norm_first"] == nf]
        for stack in ("encoder", "decoder"):
            for w, name in enumerate(WEIGHTS):
                values = [d["norms"][stack][-1][w] / s["norms"][stack][-1][w] for s, d in pairs]
                rows.append([PLACEMENT[nf], stack, name, span(values)])
    layers = (len(shallow[0]["norms"]["decoder"]), len(deep[0]["norms"]["decoder"]))
    return page_blocks.markdown_table(
        ["placement", "stack", "weight", f"last layer's gradient, {layers[1]} + {layers[1]} "
         f"over {layers[0]} + {layers[0]} layers"], rows)


def gpt_block(records) -> str:
    """Last / first layer ratios of W¹ and W², Post-LN and Pre-LN, per model variant: the
    GPT's one stack, the encoder–decoder's two."""
    rows = []
    for (model, act, init), rs in groups(records, "model", "activation", "init").items():
        stacks = ("decoder",) if model == "gpt" else ("encoder", "decoder")
        for stack in stacks:
            name = "GPT (decoder only)" if model == "gpt" else f"encoder–decoder, its {stack}"
            cells = [span(ratios([r for r in rs if r["norm_first"] == nf], stack)[:, w])
                     for nf in (False, True) for w in range(2)]
            rows.append([name, {"relu": "ReLU", "gelu": "GELU"}[act],
                         "GPT-2's" if init == "gpt2" else "Xavier"] + cells)
    return page_blocks.markdown_table(
        ["model", "activation", "initialisation", "Post-LN W¹", "Post-LN W²", "Pre-LN W¹",
         "Pre-LN W²"], rows)


def run_name(record) -> str:
    warm = f"warm-up {record['warmup']}" if record["warmup"] else "no warm-up"
    return f"{PLACEMENT[record['norm_first']]}, {warm}"


def warmup_block(records, shown=None) -> str:
    """Validation loss (and token accuracy at the end) at some steps, mean over seeds."""
    curve = records[0]["curve"]
    steps = shown or sorted({row[0] for row in curve if row[0] in (50, 100, 200)}
                            | {curve[-1][0]})
    header = (["run", "seeds"] + [f"val loss @ {s}" for s in steps]
              + ["final train loss", "final token accuracy", "minutes per run"])
    rows = []
    for _, rs in groups(records, "norm_first", "warmup").items():
        at = {s: [next(row for row in r["curve"] if row[0] == s) for r in rs] for s in steps}
        rows.append([run_name(rs[0]), seeds_of(rs)]
                     + [span([row[2] for row in at[s]]) for s in steps]
                     + [span([r["final"][1] for r in rs]), span([r["final"][3] for r in rs]),
                        f"{np.mean([r['seconds'] for r in rs]) / 60:.1f}"])
    return page_blocks.markdown_table(header, rows)


# -------------------------------------------------------------------- figures

def _save(figure, path) -> None:
    from tinynet.serialization import atomic_write
    figure.tight_layout()
    with atomic_write(path, "wb") as f:
        figure.savefig(f, format="png", dpi=120)


def plot_figure3(records, path) -> None:
    """Xiong et al.'s Figure 3(a)(b) layout: W¹ and W² gradient norm against layer,
    encoder then decoder along the x axis, Post-LN and Pre-LN, mean over seeds."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    figure, axes = plt.subplots(1, 2, figsize=(9, 3.6), sharey=True)
    for w, axis in enumerate(axes):
        for (nf,), rs in groups(records, "norm_first").items():
            values = np.concatenate([profile(rs, "encoder")[:, w], profile(rs, "decoder")[:, w]])
            colour = "C0" if nf else "C3"
            axis.plot(range(1, len(values) + 1), values, marker="o", color=colour,
                      label=PLACEMENT[nf])
        half = len(records[0]["norms"]["encoder"])
        axis.axvline(half + 0.5, color="0.7", lw=0.8)
        axis.set(xlabel=f"layer (1–{half} encoder, {half + 1}–{2 * half} decoder)",
                 ylabel="gradient norm" if w == 0 else None, title=f"FFN {WEIGHTS[w]}")
        axis.legend(fontsize=8)
    figure.suptitle(f"Gradient norms at initialisation, encoder–decoder, mean over seeds "
                    f"{seeds_of(records)}", fontsize=10)
    _save(figure, path)
    plt.close(figure)


def plot_warmup(records, path) -> None:
    """Validation loss against step, each run thin, the mean over seeds thick."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    figure, axis = plt.subplots(figsize=(6, 3.8))
    runs = groups(records, "norm_first", "warmup").values()
    for colour, rs in zip(("C3", "C1", "C0", "C2", "C4"), runs, strict=False):
        steps = [row[0] for row in rs[0]["curve"]]
        for r in rs:
            axis.plot(steps, [row[2] for row in r["curve"]], color=colour, lw=0.6, alpha=0.5)
        axis.plot(steps, np.mean([[row[2] for row in r["curve"]] for r in rs], axis=0),
                  color=colour, lw=2, label=run_name(rs[0]))
    axis.set(xlabel="step", ylabel="validation loss (nats per token)",
             title="Reversed words, encoder–decoder: warm-up")
    axis.legend(fontsize=8)
    _save(figure, path)
    plt.close(figure)


# ----------------------------------------------------------------------- main

def blocks_from(folder: str, figures: str, page: str, log=print) -> dict:
    """Each block whose records exist, as page text (figures drawn on the way)."""
    parts = {p: xiong.read_records(os.path.join(folder, f"{p}.jsonl")) for p in xiong.PARTS}
    blocks = {}
    if parts["grad"]:
        figure = os.path.join(figures, "xiong_grad_norms.png")
        plot_figure3(parts["grad"], figure)
        blocks["figure3"] = (f"\n![Gradient norms of the FFN weights at initialisation]"
                             f"({page_blocks.figure_link(figure, page)})\n\n"
                             + figure3_block(parts["grad"]) + "\n")
    if parts["grad"] and parts["depth"]:
        blocks["depth"] = "\n" + depth_block(parts["grad"], parts["depth"]) + "\n"
    if parts["gpt"]:
        blocks["gpt"] = "\n" + gpt_block(parts["gpt"] + parts["grad"]) + "\n"
    if parts["train"]:
        figure = os.path.join(figures, "xiong_warmup.png")
        plot_warmup(parts["train"], figure)
        blocks["warmup"] = (f"\n![Validation loss with and without warm-up]"
                            f"({page_blocks.figure_link(figure, page)})\n\n"
                            + warmup_block(parts["train"]) + "\n")
    for name in BLOCKS:
        if name not in blocks:
            page_blocks.no_results(name, folder, log)
    return blocks


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", default="runs", help="the directory of xiong/")
    parser.add_argument("--page", default=PAGE, help=f"the page to update (default {PAGE})")
    parser.add_argument("--figures", default="docs/figures", help="where the figures go")
    args = parser.parse_args(argv)
    if not os.path.isfile(args.page):
        parser.error(f"--page {args.page}: no such file")
    blocks = blocks_from(os.path.join(args.runs, "xiong"), args.figures, args.page)
    for name in page_blocks.rewrite_page(args.page, TAG, blocks):
        print(f"{name}: table in {args.page}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
