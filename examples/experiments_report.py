"""The tables and figures of docs/experiments.md, from the results of its runs.

    python examples/experiments_report.py --runs runs --section sweep lstm adding convnet

One block per section of the page (``--section``, all four by default), each
from the results its command saved:

* ``sweep``, the batch-size sweep (``batch_size_sweep.py --preset paper --out
  RUNS/paper``): from ``RUNS/paper/results.jsonl``, the table of test errors by
  batch size and norm (mean over seeds, each seed's at the smallest and largest
  batch), the test NLL at those two batch sizes, the figure
  ``FIGURES/figure6.png`` and the summary ``FIGURES/sweep_paper.csv``;
* ``lstm``, sequential MNIST (``ln_lstm.py --norm all --out RUNS/lstm``): from
  ``RUNS/lstm/{none,layer,batch}/result.json``, the test accuracy of each cell
  along training and at the end, its step time, the figure ``FIGURES/lstm_mnist.png``;
* ``convnet``, the convnet sweep (``batch_size_sweep.py --preset convnet --out
  RUNS/convnet``): from ``RUNS/convnet/results.jsonl``, the sweep's table for the
  five norms, the figure ``FIGURES/convnet.png`` and ``FIGURES/sweep_convnet.csv``;
* ``adding``, the adding problem (``ln_lstm.py --task adding --norm all --out
  RUNS/adding``): from ``RUNS/adding/*/result.json``, the steps each cell took
  to an MSE below 0.01 and its MSE at T, 2T and 4T, the figure
  ``FIGURES/lstm_adding.png``.

The page holds each block between ``<!-- experiments_report: SECTION -->`` and
``<!-- /experiments_report: SECTION -->`` (examples/page_blocks.py): the text
between is replaced, the prose around it is left as it is. A section without
results keeps its block and says so; partial results (a sweep in flight, a
missing cell) are written with a note saying what is missing. Nothing here is
an error but a missing page or malformed markers. Every file is written
atomically. ``make experiments-SECTION`` reruns a section and then this.
"""
from __future__ import annotations

import argparse
import glob
import json
import math
import os
import statistics
import sys
import textwrap

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import page_blocks  # noqa: E402
import sweep  # noqa: E402

import batch_size_sweep  # noqa: E402  (examples/)

TAG = "experiments_report"
PAGE = "docs/experiments.md"
SECTIONS = ("sweep", "lstm", "adding", "convnet")
NORM_NAMES = {"none": "no norm", "batch": "batch norm", "layer": "layer norm",
              "group": "group norm", "instance": "instance norm"}
SHORT_NAMES = {"none": "none", "batch": "BN", "layer": "LN", "group": "GN", "instance": "IN"}
# The two sweeps of batch_size_sweep.py: where each keeps its results (RUNS/directory), its
# preset, its figure and CSV (in FIGURES), and whether its table shows LN's examples/s.
SWEEPS = {"sweep": dict(directory="paper", preset="paper", figure="figure6.png",
                        alt="Figure 6", csv="sweep_paper.csv", speed=True),
          "convnet": dict(directory="convnet", preset="convnet", figure="convnet.png",
                          alt="convnet test error", csv="sweep_convnet.csv", speed=False)}
CELLS = {"none": "LSTM", "layer": "LN-LSTM", "batch": "BN-LSTM"}     # in the tables' order
PLOT_ORDER = ("none", "batch", "layer")        # tinynet.models.NORMS: the figures' colours
SHOWN_STEPS = (100, 300, 500, 1000, 1500, 2000)  # the evaluations the MNIST table shows
MAX_SHOWN = 6                                  # without those: at most this many, evenly
SOLVED = 0.01                                  # the adding problem counts as learned below
BASELINE = 1 / 6                               # MSE of always answering 1, the mean


def _paragraphs(notes: list[str]) -> str:
    """The notes under a table, each a paragraph wrapped as the page's prose is."""
    return "".join("\n\n" + textwrap.fill(n, 92, break_long_words=False,
                                           break_on_hyphens=False) for n in notes)


def _bold_best(cells: list[str], values: list[float | None], best=min) -> list[str]:
    """``cells`` with those whose value is the best of ``values`` in bold (when there
    are at least two values to compare)."""
    known = [v for v in values if v is not None and math.isfinite(v)]
    if len(known) < 2:
        return cells
    top = best(known)
    return [f"**{c}**" if v == top else c for c, v in zip(cells, values, strict=True)]


def _missing(expected: list, present: set) -> str:
    missing = [k for k in expected if k not in present]
    shown = ", ".join(map(str, missing[:4])) + (", ..." if len(missing) > 4 else "")
    return f"missing: {shown}"


# ------------------------------------------------------------------ the sweep

def sweep_groups(records: list[dict]) -> dict[tuple, list[dict]]:
    """The runs of each (norm, batch size), sorted by seed."""
    groups: dict = {}
    for r in records:
        groups.setdefault((r["norm"], r["batch_size"]), []).append(r)
    return {k: sorted(v, key=lambda r: r["seed"]) for k, v in groups.items()}


def _norms(groups: dict) -> list[str]:
    """The norms of the results: none, batch, layer first, then any other."""
    present = {norm for norm, _ in groups}
    return [n for n in NORM_NAMES if n in present] + sorted(present - set(NORM_NAMES))


def sweep_table(records: list[dict], speed: bool = True) -> str:
    """Test error (%) by batch size (rows) and norm (columns): the mean over seeds, each
    seed's in parentheses at the smallest and largest batch size; with ``speed``, the
    LN runs' examples/s."""
    groups = sweep_groups(records)
    norms = _norms(groups)
    batches = sorted({b for _, b in groups})
    ends = {batches[0], batches[-1]}
    names = [NORM_NAMES.get(n, n) for n in norms]
    header = ["batch", f"{names[0]}: test error %", *names[1:]] + (
        ["examples/s (LN)"] if speed else [])
    rows = []
    for batch in batches:
        cells, means, seeds = [], [], []
        for norm in norms:
            runs = groups.get((norm, batch), [])
            errors = [100 * r["test_error"] for r in runs]
            # as batch_size_sweep.summarize (and so the CSV) computes it
            mean = 100 * (sum(r["test_error"] for r in runs) / len(runs)) if runs else None
            cells.append("-" if mean is None else f"{mean:.2f}")
            means.append(None if mean is None else round(mean, 2))
            seeds.append(" (" + ", ".join(f"{e:.2f}" for e in errors) + ")"
                         if batch in ends and len(runs) > 1 else "")
        layer = groups.get(("layer", batch))
        examples_per_second = (f"{statistics.fmean(r['examples_per_second'] for r in layer):,.0f}"
                               if layer else "-")
        cells = [c + s for c, s in zip(_bold_best(cells, means), seeds, strict=True)]
        rows.append([str(batch), *cells] + ([examples_per_second] if speed else []))
    return page_blocks.markdown_table(header, rows)


def sweep_notes(records: list[dict], csv_link: str | None = None,
                preset: str = "paper") -> list[str]:
    """What the table's caption says: the seeds, the NLLs at the two ends, the largest
    seed difference, the runs' training time, and what is missing from the grid."""
    groups = sweep_groups(records)
    batches = sorted({b for _, b in groups})
    seeds = sorted({r["seed"] for r in records})
    norms = _norms(groups)
    notes = []
    legend = f"Mean over seed{'s' if len(seeds) > 1 else ''} {', '.join(map(str, seeds))}"
    if len(seeds) > 1:
        legend += (f" (each seed's in parentheses at batch {batches[0]} and {batches[-1]}, "
                   f"in the order of the seeds)")
    nll = {key: statistics.fmean(r["test_nll"] for r in runs) for key, runs in groups.items()}
    notes.append(legend + "; in bold the lowest error of each row. Test NLL at " + "; at ".join(
        f"batch {b}: " + ", ".join(f"{SHORT_NAMES.get(n, n)} {nll[n, b]:.3f}" for n in norms
                                   if (n, b) in nll)
        for b in dict.fromkeys((batches[0], batches[-1]))) + ".")
    spreads = [(100 * (max(r["test_error"] for r in runs) - min(r["test_error"] for r in runs)),
                key) for key, runs in groups.items() if len(runs) > 1]
    if spreads:
        spread, (norm, batch) = max(spreads)
        notes.append(f"The seeds of one cell differ by up to {spread:.2f} points "
                     f"({NORM_NAMES.get(norm, norm)}, batch {batch}).")
    data = sorted({r.get("data", "?") for r in records})
    seconds = sum(r["train_seconds"] for r in records)
    line = (f"{len(records)} runs on {' and '.join(data)}, {seconds:,.0f} s of training "
            f"summed over them (evaluations excluded)")
    if csv_link:
        line += f"; the rows, with the spreads and NLLs, in [{csv_link}]({csv_link})"
    notes.append(line + ".")
    notes += [f"*{n}*" for n in [sweep_completeness(records, preset)] if n]
    return notes


def sweep_completeness(records: list[dict], name: str = "paper") -> str | None:
    """What the results lack of preset ``name``'s grid (None: nothing)."""
    preset = batch_size_sweep.PRESETS[name]
    expected = [(n, b, s) for b in preset["batch_sizes"] for n in preset["norms"]
                for s in preset["seeds"]]
    present = {(r["norm"], r["batch_size"], r["seed"]) for r in records}
    if all(k in present for k in expected):
        return None
    done = sum(k in present for k in expected)
    return (f"partial: {done} of the {name} preset's {len(expected)} runs "
            f"({_missing(expected, present)}, as (norm, batch, seed))")


def sweep_section(args, section: str = "sweep") -> str | None:
    """The block of one of the ``SWEEPS``."""
    where = SWEEPS[section]
    directory = os.path.join(args.runs, where["directory"])
    records = sweep.read_results(os.path.join(directory, "results.jsonl"))
    if not records:
        page_blocks.no_results(section, f"{directory}/results.jsonl")
        return None
    rows = batch_size_sweep.summarize(records)
    csv_path = os.path.join(args.figures, where["csv"])
    sweep.write_csv(csv_path, rows)
    figure = os.path.join(args.figures, where["figure"])
    block = ""
    if batch_size_sweep.plot(figure, rows, records):
        _close_figures()
        block = f"\n![{where['alt']}]({page_blocks.figure_link(figure, args.page)})\n"
    notes = sweep_notes(records, page_blocks.figure_link(csv_path, args.page),
                        where["preset"])
    print(f"{section}: {len(records)} runs, figure {figure}, rows {csv_path}")
    return (block + "\n" + sweep_table(records, where["speed"]) + _paragraphs(notes)
            + "\n")


# ----------------------------------------------------------- the LSTM sections

def read_cells(directory: str, task: str) -> dict[str, dict]:
    """The result of each cell (norm) of ``ln_lstm.py --task TASK --out DIRECTORY``:
    ``DIRECTORY/NORM/result.json`` (``--norm all``) or ``DIRECTORY/result.json``."""
    results = {}
    paths = sorted(glob.glob(os.path.join(directory, "*", "result.json")))
    paths += [p for p in [os.path.join(directory, "result.json")] if os.path.exists(p)]
    for path in paths:
        with open(path) as f:
            result = json.load(f)
        if result.get("task", "mnist") == task and result.get("norm") in CELLS:
            results[result["norm"]] = result
    return {norm: results[norm] for norm in CELLS if norm in results}


def shown_steps(results: dict[str, dict]) -> list[int]:
    """The evaluations the table shows: those of SHOWN_STEPS every curve has, else at
    most MAX_SHOWN of the common ones, evenly spaced, the last included."""
    common = sorted(set.intersection(*({s for s, _ in r["curve"]} for r in results.values())))
    shown = [s for s in SHOWN_STEPS if s in common]
    if shown or len(common) <= MAX_SHOWN:
        return shown or common
    picks = {round(i * (len(common) - 1) / (MAX_SHOWN - 1)) for i in range(MAX_SHOWN)}
    return [common[i] for i in sorted(picks)]


def _point(result: dict, step: int) -> float:
    return next(v for s, v in result["curve"] if s == step)


def _ms(result: dict) -> str:
    return f"{1000 * result['median_step_seconds']:.1f}"


def lstm_table(results: dict[str, dict]) -> str:
    """Sequential MNIST: test accuracy (%) of each cell along training and at the end."""
    steps = shown_steps(results)
    header = (["cell"] + [f"{s:,} steps" if i == 0 else f"{s:,}" for i, s in enumerate(steps)]
              + ["final, 10,000 images", "ms / step"])
    columns = [[100 * _point(r, s) for r in results.values()] for s in steps]
    columns.append([100 * r["test_accuracy"] for r in results.values()])
    cells = [[f"{v:.1f}" for v in column] for column in columns[:-1]]
    cells.append([f"{v:.2f}" for v in columns[-1]])
    cells = [_bold_best(c, [round(v, 2) for v in column], best=max)
             for c, column in zip(cells, columns, strict=True)]
    rows = [[CELLS[norm], *(column[i] for column in cells), _ms(r)]
            for i, (norm, r) in enumerate(results.items())]
    return page_blocks.markdown_table(header, rows)


def _wall_times(results: dict[str, dict]) -> str | None:
    if not all("wall_seconds" in r for r in results.values()):
        return None
    total = sum(r["wall_seconds"] for r in results.values())
    return ("Wall time of each cell, training and evaluations: "
            + ", ".join(f"{CELLS[n]} {r['wall_seconds']:.0f} s" for n, r in results.items())
            + f"; {total / 60:.1f} minutes in all.")


def _cells_completeness(results: dict[str, dict]) -> str | None:
    if len(results) == len(CELLS):
        return None
    return (f"*partial: {len(results)} of {len(CELLS)} cells (no result for "
            + ", ".join(CELLS[n] for n in CELLS if n not in results) + ")*")


def _data_note(results: dict[str, dict]) -> str | None:
    data = sorted({r.get("data", "?") for r in results.values()})
    if data == ["full MNIST"] or data == ["random sequences"] or data == ["?"]:
        return None
    return f"*trained on {' and '.join(data)}*"


def lstm_notes(results: dict[str, dict]) -> list[str]:
    first = next(iter(results.values()))
    images = first.get("eval_images", 2000)
    notes = [f"Test accuracy in % after that many training steps, on the first {images:,} "
             f"test images (every {first.get('eval_every', 100)} steps); final: on all 10,000 "
             "after the last step; in bold the best of each column; median time of a "
             "training step (forward, backward, Adam)."]
    if "none" in results and "layer" in results:
        ln, plain = ({s: v for s, v in results[n]["curve"]} for n in ("layer", "none"))
        common = sorted(set(ln) & set(plain))
        ahead = sum(ln[s] > plain[s] for s in common)
        ties = sum(ln[s] == plain[s] for s in common)
        notes.append(f"The LN-LSTM is ahead of the LSTM at {ahead} of the {len(common)} "
                     f"evaluations" + (f" (level at {ties})" if ties else "") + ".")
    batch = results.get("batch", {})
    if "test_accuracy_batch_statistics" in batch:
        notes.append(f"The BN-LSTM's final weights with the statistics of each batch of 1,000 "
                     f"test images (train mode) instead of its running averages: "
                     f"{100 * batch['test_accuracy_batch_statistics']:.2f} % against "
                     f"{100 * batch['test_accuracy']:.2f} % with them (eval mode).")
    notes += [n for n in (_wall_times(results), _data_note(results),
                          _cells_completeness(results)) if n]
    return notes


def first_solved(curve: list) -> str:
    """The step of the first evaluation below SOLVED, with the range of the later ones
    when some of them are not; ``not reached`` with the best MSE otherwise."""
    for i, (step, mse) in enumerate(curve):
        if mse < SOLVED:
            later = [v for _, v in curve[i + 1:]]
            if any(v >= SOLVED for v in later):
                return f"{step:,}, then {min(later):.3f}–{max(later):.3f}"
            return f"{step:,}"
    return f"not reached (best {min(v for _, v in curve):.4f})"


def adding_table(results: dict[str, dict]) -> str:
    first = next(iter(results.values()))
    length = first.get("length")
    at = (lambda k: f"{k}T = {k * length}") if length else (lambda k: f"{k}T")   # noqa: E731
    header = ["cell", f"steps to MSE < {SOLVED} (at T)",
              f"MSE at T{f' = {length}' if length else ''}", f"at {at(2)}", f"at {at(4)}",
              "ms / step"]
    keys = ("mse_at_T", "mse_at_2T", "mse_at_4T")
    columns = [_bold_best([f"{r[k]:.4f}" for r in results.values()],
                          [round(r[k], 4) for r in results.values()]) for k in keys]
    rows = [[CELLS[norm], first_solved(r["curve"]), *(c[i] for c in columns), _ms(r)]
            for i, (norm, r) in enumerate(results.items())]
    return page_blocks.markdown_table(header, rows)


def adding_notes(results: dict[str, dict]) -> list[str]:
    first = next(iter(results.values()))
    notes = [f"Mean squared error on 1,000 fresh sequences of each length; the steps to "
             f"MSE < {SOLVED} from the evaluations at T during training (every "
             f"{first.get('eval_every', 100)} steps), with the range of the later ones when "
             f"it rose again; in bold the lowest error of each column. Always answering 1 "
             f"scores 1/6 ≈ {BASELINE:.3f}."]
    worse = [f"{CELLS[n]} at {at} ({r[key]:.4f})" for n, r in results.items()
             for at, key in (("T", "mse_at_T"), ("2T", "mse_at_2T"), ("4T", "mse_at_4T"))
             if r[key] > BASELINE]
    notes.append("Worse than always answering 1: " + ", ".join(worse) + "." if worse
                 else "Every cell beats always answering 1 at every length.")
    notes += [n for n in (_wall_times(results), _cells_completeness(results)) if n]
    return notes


def plot_curves(path: str, results: list[dict], task: str) -> bool:
    """The cells' curves, as ``ln_lstm.py --norm all`` draws them in its curves.png
    (False without matplotlib)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no figure (pip install 'tinynet[plot]')")
        return False
    from tinynet.serialization import atomic_write
    figure, axis = plt.subplots(figsize=(6, 4))
    for r in results:
        axis.plot(*zip(*r["curve"], strict=True), marker=".", label=f"{r['norm']}-LSTM")
    axis.set(xlabel="training steps",
             ylabel="test accuracy" if task == "mnist" else "MSE at training length",
             title="sequential MNIST" if task == "mnist" else "adding problem")
    axis.legend()
    figure.tight_layout()
    with atomic_write(path, "wb") as f:
        figure.savefig(f, format="png", dpi=100)
    plt.close(figure)
    return True


def _close_figures() -> None:
    import matplotlib.pyplot as plt
    plt.close("all")


def lstm_section(args, task: str) -> str | None:
    name, run = ("lstm", "lstm") if task == "mnist" else ("adding", "adding")
    directory = os.path.join(args.runs, run)
    results = read_cells(directory, task)
    if not results:
        page_blocks.no_results(name, f"{directory}/*/result.json")
        return None
    figure = os.path.join(args.figures, f"lstm_{'mnist' if task == 'mnist' else 'adding'}.png")
    plotted = plot_curves(figure, [results[n] for n in PLOT_ORDER if n in results], task)
    block = ""
    if plotted:
        alt = "sequential MNIST" if task == "mnist" else "adding problem"
        block = f"\n![{alt}]({page_blocks.figure_link(figure, args.page)})\n"
    table, notes = ((lstm_table(results), lstm_notes(results)) if task == "mnist"
                    else (adding_table(results), adding_notes(results)))
    print(f"{name}: {len(results)} cells from {directory}, figure {figure}")
    return block + "\n" + table + _paragraphs(notes) + "\n"


BUILDERS = {"sweep": sweep_section, "lstm": lambda args: lstm_section(args, "mnist"),
            "adding": lambda args: lstm_section(args, "adding"),
            "convnet": lambda args: sweep_section(args, "convnet")}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", default="runs",
                        help="the directory of paper/, lstm/ and adding/ (default runs)")
    parser.add_argument("--page", default=PAGE, help=f"the page to update (default {PAGE})")
    parser.add_argument("--figures", default="docs/figures", help="where the figures go")
    parser.add_argument("--section", nargs="+", choices=SECTIONS, default=list(SECTIONS),
                        help="the sections to regenerate (default: all)")
    args = parser.parse_args(argv)
    if not os.path.isfile(args.page):
        parser.error(f"--page {args.page}: no such file")
    blocks = {}
    for section in dict.fromkeys(args.section):
        block = BUILDERS[section](args)
        if block is not None:
            blocks[section] = block
    for section in page_blocks.rewrite_page(args.page, TAG, blocks):
        print(f"{section}: its block in {args.page} rewritten")
    return 0


if __name__ == "__main__":
    sys.exit(main())
