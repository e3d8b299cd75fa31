"""The tables and figures of docs/transformers.md, from the character-LM sweeps.

    python examples/char_lm_report.py --runs runs --page docs/transformers.md --figures docs/figures

For each grid of examples/char_lm_sweep.py (``placement``, ``norm``,
``time-axis``, ``lstm``) whose ``RUNS/exp-GRID/results.jsonl`` exists, this
writes the figure ``FIGURES/char_lm_GRID.png`` (validation loss against
iteration: one colour per configuration, its seeds thin, their mean thick) and
a Markdown table, one row per configuration: the fields the grid varies, the
seeds, the parameters, the final validation loss (mean over seeds, and its
spread max − min), the final train loss, the milliseconds per iteration
(mean of the runs' medians) and a note ``diverged`` when a run ends with a
loss that is NaN, infinite or above 3.5. The placement grid also shows the
validation loss at iterations 250 and 500, where a post-norm run without
warm-up falls behind or blows up.

The time-axis grid adds the loss of each position scored from its prefix
alone (the model run on ``idx[:, :t+1]`` for position t, as generation runs
it) beside the teacher-forced loss on the same 20 validation windows, and
whether :func:`tinynet.testing.check_causal` passes. They need the weights
each run ended with: a result's ``checkpoint`` field (a path relative to its
``results.jsonl``) naming a file that ``tinynet.save`` wrote with ``model``
(the state dict) and ``config`` (as char_lm.py stores it). Without them those
cells read "-" and a note says so.

The page holds each grid's block between ``<!-- char_lm_report: GRID -->`` and
``<!-- /char_lm_report: GRID -->``; the text between is replaced (an image
link, the table, its notes) and the rest left as it is, so the page can be
regenerated at any time (examples/page_blocks.py, the mechanism every report
script shares). A grid without a marker pair is printed instead. A grid
missing or partial (runs in flight) is reported, not an error. Every file is
written atomically. ``make experiments-transformers`` runs the four sweeps
(resumable: a finished grid is not rerun) and then this.
"""
from __future__ import annotations

import argparse
import math
import os
import statistics
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import char_lm_sweep  # noqa: E402  (examples/)
import page_blocks  # noqa: E402
import sweep  # noqa: E402

TAG = "char_lm_report"                  # the page's markers: <!-- char_lm_report: GRID -->
PAGE = "docs/transformers.md"
GRIDS = ("placement", "norm", "time-axis", "lstm")
DIVERGED = 3.5                          # a final loss above this (or not finite): diverged
EARLY = {"placement": (250, 500)}       # the iterations whose validation loss a grid shows
WINDOWS, WINDOW_SEED = 20, 0            # the validation windows of the prefix-only loss
HEADERS = {"model": "model", "norm": "norm", "placement": "placement",
           "norm_axis": "statistics over", "n_layer": "layers", "warmup_iters": "warm-up"}
NO_CHECKPOINTS = ("prefix-only loss: not computed. It needs the weights each run ended with, "
                  "and these results name none: each result would need a `checkpoint` field, "
                  "the path (relative to results.jsonl) of a file holding the run's final "
                  "`model` state dict and `config`")


def grid_fields(grid: str) -> list[str]:
    """The settings that tell the configurations of ``grid`` apart (those it varies)."""
    runs = char_lm_sweep.PRESETS[grid]["runs"]
    return [k for k in runs[0] if len({run[k] for run in runs}) > 1]


def diverged(record: dict) -> bool:
    losses = (record["final_val_loss"], record["final_train_loss"])
    return not all(math.isfinite(x) and x <= DIVERGED for x in losses)


def loss_at(record: dict, iteration: int) -> float | None:
    """The validation loss evaluated at ``iteration`` (None when the curve has none there)."""
    return next((row[2] for row in record["curve"] if row[0] == iteration), None)


def _mean(values) -> float | None:
    values = list(values)
    return None if None in values else statistics.fmean(values)


def summarize(records: list[dict], grid: str) -> list[dict]:
    """One row per configuration of ``grid``, in the sweep's order; means over seeds."""
    fields = grid_fields(grid)
    order = {tuple(run[f] for f in fields): i
             for i, run in enumerate(char_lm_sweep.PRESETS[grid]["runs"])}
    groups: dict = {}
    for r in records:
        groups.setdefault(tuple(r[f] for f in fields), []).append(r)
    rows = []
    for values in sorted(groups, key=lambda v: order.get(v, len(order))):
        runs = sorted(groups[values], key=lambda r: r["seed"])
        val = [r["final_val_loss"] for r in runs]
        rows.append(dict(zip(fields, values, strict=True), seeds=len(runs),
                         params=runs[0]["params"], val_loss=statistics.fmean(val),
                         val_spread=max(val) - min(val) if all(map(math.isfinite, val))
                         else math.nan,
                         train_loss=statistics.fmean(r["final_train_loss"] for r in runs),
                         ms=statistics.fmean(r["median_iteration_ms"] for r in runs),
                         early={it: _mean(loss_at(r, it) for r in runs)
                                for it in EARLY.get(grid, ())},
                         diverged=sum(map(diverged, runs)), runs=runs))
    return rows


def completeness(grid: str, rows: list[dict]) -> str | None:
    """What is missing from a grid's results (None when every configuration has as many
    seeds as the most complete one)."""
    expected = len(char_lm_sweep.PRESETS[grid]["runs"])
    seeds = [row["seeds"] for row in rows]
    if len(rows) >= expected and min(seeds) == max(seeds):
        return None
    return (f"partial: {len(rows)} of {expected} configurations, {sum(seeds)} runs "
            f"(seeds per configuration: {', '.join(map(str, seeds))})")


# ------------------------------------------------------------- prefix-only loss

def _cross_entropy(logits: np.ndarray, targets: np.ndarray) -> float:
    logits = logits.astype(np.float64)
    top = logits.max(axis=-1, keepdims=True)
    log_z = np.log(np.exp(logits - top).sum(axis=-1)) + top[..., 0]
    picked = np.take_along_axis(logits, targets[..., None], axis=-1)[..., 0]
    return float(np.mean(log_z - picked))


def prefix_scores(model, x: np.ndarray, y: np.ndarray) -> dict:
    """On windows ``x`` (B, T) with next characters ``y``: the teacher-forced loss (every
    position in one pass), the prefix-only loss (position t from ``x[:, :t+1]`` alone)
    and whether ``check_causal`` passes. Equal losses for a causal model."""
    import tinynet
    from tinynet.testing import check_causal
    model.eval()
    with tinynet.no_grad():
        full = model(tinynet.tensor(x), tinynet.tensor(y))[0].numpy()
        prefix = np.concatenate([model(tinynet.tensor(x[:, :t + 1]))[0].numpy()
                                 for t in range(x.shape[1])], axis=1)
    report = check_causal(lambda idx: model(idx, targets=idx)[0], x[:2])
    return dict(teacher_forced=_cross_entropy(full, y), prefix_only=_cross_entropy(prefix, y),
                causal=bool(report))


def add_prefix_scores(rows: list[dict], directory: str, data: str | None) -> str | None:
    """Score every run of ``rows`` whose checkpoint exists; a note on what is missing."""
    import tinynet
    from tinynet.data import load_tinyshakespeare
    from tinynet.models import language_model
    runs = [r for row in rows for r in row["runs"]]
    paths = [os.path.join(directory, r["checkpoint"]) if r.get("checkpoint") else None
             for r in runs]
    if not any(p and os.path.exists(p) for p in paths):
        return NO_CHECKPOINTS
    corpus = load_tinyshakespeare(data, notice=False)
    source = "bundled excerpt" if corpus.is_sample else "Tiny Shakespeare"
    for r, path in zip(runs, paths, strict=True):
        if path and os.path.exists(path) and r["data"] == source:
            state = tinynet.load(path)
            model = language_model(state["config"])
            model.load_state_dict(state["model"])
            length = min(64, state["config"].get("block_size", 64))
            x, y = corpus.get_batch("val", WINDOWS, length, np.random.default_rng(WINDOW_SEED),
                                    as_numpy=True)
            r.update(prefix_scores(model, x, y))
    if not all("prefix_only" in r for r in runs):
        return (f"prefix-only loss: scored {sum('prefix_only' in r for r in runs)} of "
                f"{len(runs)} runs (the others lack a checkpoint or trained on another corpus)")
    return None


# ---------------------------------------------------------------------- output

def _loss(x: float | None) -> str:
    return "-" if x is None else f"{x:.4f}"


def table(rows: list[dict], grid: str) -> str:
    fields = grid_fields(grid)
    early = EARLY.get(grid, ())
    extra = ("prefix-only loss", "teacher-forced loss", "causal") if grid == "time-axis" else ()
    header = ([HEADERS.get(f, f) for f in fields] + ["seeds", "params"]
              + [f"val @ {it}" for it in early]
              + ["val loss", "spread", "train loss", "ms/iter", *extra, "note"])
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in rows:
        cells = [str(row[f]) for f in fields] + [str(row["seeds"]), f"{row['params']:,}"]
        cells += [_loss(row["early"][it]) for it in early]
        cells += [_loss(row["val_loss"]), _loss(row["val_spread"]), _loss(row["train_loss"]),
                  f"{row['ms']:.1f}"]
        if extra:
            scored = [r for r in row["runs"] if "prefix_only" in r]
            if scored:
                cells += [_loss(statistics.fmean(r[k] for r in scored))
                          for k in ("prefix_only", "teacher_forced")]
                cells.append("yes" if all(r["causal"] for r in scored) else "no")
            else:
                cells += ["-"] * 3
        n = row["diverged"]
        cells.append("" if not n else "diverged" if n == row["seeds"]
                     else f"diverged ({n} of {row['seeds']} seeds)")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def plot(rows: list[dict], grid: str, path: str) -> None:
    """Validation loss against iteration: each seed thin, the mean over seeds thick."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from tinynet.serialization import atomic_write
    figure, axis = plt.subplots(figsize=(6.4, 4.2))
    fields, highest = grid_fields(grid), 0.0
    for i, row in enumerate(rows):
        colour = f"C{i % 10}"
        curves = [{it: val if math.isfinite(val) else math.nan for it, _, val, _ in r["curve"]}
                  for r in row["runs"]]
        for curve in curves:
            axis.plot(list(curve), list(curve.values()), color=colour, lw=0.6, alpha=0.45)
        its = sorted(set.intersection(*(set(c) for c in curves)))
        mean = np.mean([[c[it] for it in its] for c in curves], axis=0)
        label = ", ".join(f"{HEADERS.get(f, f)} {row[f]}" for f in fields)
        axis.plot(its, mean, color=colour, lw=1.8, label=label)
        highest = max([highest, *(v for c in curves for v in c.values() if math.isfinite(v))])
    axis.set_ylim(top=min(highest, DIVERGED + 1.0) + 0.05)
    axis.set(xlabel="iteration", ylabel="validation loss (nats per character)",
             title=f"Character LM, {grid} grid (thin: seeds, thick: mean)")
    axis.legend(fontsize=7)
    figure.tight_layout()
    with atomic_write(path, "wb") as f:
        figure.savefig(f, format="png", dpi=120)
    plt.close(figure)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", default="runs", help="the directory of exp-GRID/ (default runs)")
    parser.add_argument("--page", default=PAGE, help=f"the page to update (default {PAGE})")
    parser.add_argument("--figures", default="docs/figures", help="where the figures go")
    parser.add_argument("--data", help="Tiny Shakespeare, as char_lm.py --data (for the "
                        "prefix-only loss)")
    args = parser.parse_args(argv)
    if not os.path.isfile(args.page):
        parser.error(f"--page {args.page}: no such file")
    blocks, described = {}, {}
    for grid in GRIDS:
        directory = os.path.join(args.runs, f"exp-{grid}")
        records = sweep.read_results(os.path.join(directory, "results.jsonl"))
        if not records:
            page_blocks.no_results(grid, f"{directory}/results.jsonl")
            continue
        rows = summarize(records, grid)
        notes = [n for n in [completeness(grid, rows)] if n]
        if grid == "time-axis":
            notes += [n for n in [add_prefix_scores(rows, directory, args.data)] if n]
        figure = os.path.join(args.figures, f"char_lm_{grid}.png")
        plot(rows, grid, figure)
        link = page_blocks.figure_link(figure, args.page)
        blocks[grid] = (f"\n![Validation loss of the {grid} grid]({link})\n\n"
                        + table(rows, grid) + "".join(f"\n\n*{n}*" for n in notes) + "\n")
        for note in notes:
            print(f"{grid}: {note}")
        described[grid] = f"{grid}: {len(records)} runs, table in {args.page}, figure {figure}"
    for grid in page_blocks.rewrite_page(args.page, TAG, blocks):
        print(described[grid])
    return 0


if __name__ == "__main__":
    sys.exit(main())
