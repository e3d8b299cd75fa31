"""The tables and figure of docs/distributed.md, from the runs of examples/data_parallel.py.

    python examples/data_parallel_report.py runs/dp [--plot docs/figures/data_parallel.png]
        [--page docs/distributed.md]

Reads every ``result.json`` under the directory (one per run, as
examples/data_parallel_sweep.py lays them out), averages the test error over
seeds, and makes two Markdown tables: the MLP's test error by norm and per-rank
batch (rows) and number of ranks (columns); and one row per (model, norm,
per-worker batch, ranks) with test error, global batch, all-reduces and bytes
sent per step and rank, milliseconds per step and the share of it spent
communicating. The figure: test error against the number of ranks, one line per
norm and batch.

Without ``--page`` the tables are printed, every row of the second one. With
it, the page's blocks between ``<!-- data_parallel_report: errors -->`` and
``<!-- /data_parallel_report: errors -->`` (the first table, the figure and,
for a partial grid, what is missing) and between the ``traffic`` markers (the
second table, for the runs :func:`traffic_rows` selects) are rewritten, and the
rest of the page left as it is (examples/page_blocks.py). No results are
reported, and the blocks left as they are.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import data_parallel_sweep  # noqa: E402  (examples/)
import page_blocks  # noqa: E402

TAG = "data_parallel_report"
PAGE = "docs/distributed.md"


def read_runs(directory: str) -> list[dict]:
    """Every run's result under ``directory`` ([] when there is none)."""
    runs = []
    for path in sorted(glob.glob(os.path.join(directory, "**", "result.json"), recursive=True)):
        with open(path) as f:
            runs.append(json.load(f))
    return runs


def summarize(runs: list[dict]) -> list[dict]:
    """One row per configuration, the means over its seeds."""
    groups = {}
    for run in runs:
        key = (run["model"], run["norm"], run["per_worker_batch"], run["world_size"])
        groups.setdefault(key, []).append(run)
    rows = []
    for (model, norm, batch, world), group in sorted(groups.items()):
        traffic = group[0]["traffic"]
        rows.append({
            "model": model, "norm": norm, "per_worker_batch": batch, "world_size": world,
            "global_batch": world * batch, "seeds": len(group),
            "test_error": statistics.mean(r["test_error"] for r in group),
            "gradient_all_reduces": traffic.get("gradients", {}).get("all_reduces_per_step", 0),
            "bn_messages": traffic.get("batch statistics", {}).get("all_reduces_per_step", 0),
            "bytes": sum(t["bytes_per_step"] for label, t in traffic.items()
                         if label in ("gradients", "batch statistics")),
            "ms_per_step": 1e3 * statistics.median(r["seconds_per_step"] for r in group),
            "communicating": statistics.median(r["communicating"] for r in group)})
    return rows


TRAFFIC_HEADER = ["model", "norm", "B per rank", "ranks W", "global batch", "test error %",
                  "seeds", "gradient all-reduces / step", "BN messages / step",
                  "bytes / step / rank", "ms / step", "communicating"]


def traffic_table(rows: list[dict]) -> str:
    """One row per configuration: its test error, traffic and step time."""
    return page_blocks.markdown_table(TRAFFIC_HEADER, [
        [r["model"], r["norm"], str(r["per_worker_batch"]), str(r["world_size"]),
         str(r["global_batch"]), f"{100 * r['test_error']:.2f}", str(r["seeds"]),
         f"{r['gradient_all_reduces']:.0f}", f"{r['bn_messages']:.0f}",
         f"{r['bytes'] / 1e6:.2f} MB", f"{r['ms_per_step']:.1f}",
         f"{100 * r['communicating']:.0f}%"] for r in rows])


def traffic_rows(rows: list[dict]) -> list[dict]:
    """The rows the page shows: the MLP on 2 ranks of 4 images (what each norm sends
    does not depend on B or W > 1), and every LSTM run."""
    return [r for r in rows if r["model"] != "mlp"
            or (r["world_size"] == 2 and r["per_worker_batch"] == 4)]


def errors_table(rows: list[dict]) -> str:
    """Test error (%) of the MLP, one row per (norm, per-rank batch), one column per
    number of ranks W; in parentheses the global batch W·B."""
    worlds = sorted({r["world_size"] for r in rows if r["model"] == "mlp"})
    cells = {(r["norm"], r["per_worker_batch"], r["world_size"]): r for r in rows
             if r["model"] == "mlp"}
    return page_blocks.markdown_table(
        ["norm", "B per rank", *(f"W = {w}" for w in worlds)],
        [[norm, str(batch), *("-" if r is None else
                              f"{100 * r['test_error']:.2f} ({r['global_batch']})"
                              for r in (cells.get((norm, batch, w)) for w in worlds))]
         for norm, batch in sorted({(n, b) for n, b, _ in cells})])


def completeness(runs: list[dict]) -> str | None:
    """What the runs lack of data_parallel_sweep.GRID (None: nothing)."""
    fields = ("model", "norm", "per_worker_batch", "world_size", "seed")
    present = {tuple(r[f] for f in fields) for r in runs}
    missing = [data_parallel_sweep.name(g) for g in data_parallel_sweep.GRID
               if tuple(g[f] for f in fields) not in present]
    if not missing:
        return None
    shown = ", ".join(missing[:4]) + (", ..." if len(missing) > 4 else "")
    return (f"partial: {len(data_parallel_sweep.GRID) - len(missing)} of the "
            f"{len(data_parallel_sweep.GRID)} runs of examples/data_parallel_sweep.py "
            f"(missing: {shown})")


def plot(rows: list[dict], path: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from tinynet.serialization import atomic_write

    figure, axis = plt.subplots(figsize=(6.4, 4.2))
    lines = {}
    for r in rows:
        if r["model"] == "mlp":
            lines.setdefault((r["norm"], r["per_worker_batch"]), []).append(r)
    colours = {"layer": "tab:green", "batch": "tab:blue", "syncbatch": "tab:purple",
               "none": "tab:gray"}
    for (norm, batch), points in sorted(lines.items()):
        points.sort(key=lambda r: r["world_size"])
        axis.plot([r["world_size"] for r in points], [100 * r["test_error"] for r in points],
                  marker="o", color=colours.get(norm),
                  linestyle="-" if batch == min(b for _, b in lines) else "--",
                  label=f"{norm}, B = {batch} per rank")
    axis.set_xlabel("ranks W (global batch W·B)")
    axis.set_ylabel("test error (%)")
    axis.set_xticks(sorted({r["world_size"] for r in rows}))
    axis.set_title("MNIST MLP, one epoch, data-parallel")
    axis.legend(fontsize=8)
    figure.tight_layout()
    with atomic_write(path, "wb") as f:
        figure.savefig(f, format="png", dpi=120)
    plt.close(figure)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory")
    parser.add_argument("--plot", help="write the figure here (PNG; needs matplotlib)")
    parser.add_argument("--page", help=f"rewrite this page's blocks (the project's: {PAGE})")
    args = parser.parse_args(argv)
    if args.page and not os.path.isfile(args.page):
        parser.error(f"--page {args.page}: no such file")
    runs = read_runs(args.directory)
    if not runs:
        where = f"{args.directory} (no result.json: run examples/data_parallel_sweep.py first)"
        for block in ("errors", "traffic"):
            page_blocks.no_results(block, where)
        return 0
    rows = summarize(runs)
    if args.plot:
        plot(rows, args.plot)
    if not args.page:
        print(errors_table(rows) + "\n\n" + traffic_table(rows))
        return 0
    note = completeness(runs)
    if note:
        print(note)
    errors = "\n" + errors_table(rows) + "\n"
    if args.plot:
        link = page_blocks.figure_link(args.plot, args.page)
        errors += f"\n![test error against the number of ranks]({link})\n"
    errors += f"\n*{note}*\n" if note else ""
    blocks = {"errors": errors, "traffic": "\n" + traffic_table(traffic_rows(rows)) + "\n"}
    for block in page_blocks.rewrite_page(args.page, TAG, blocks):
        print(f"{block}: {len(runs)} runs, its block in {args.page} rewritten")
    return 0


if __name__ == "__main__":
    sys.exit(main())
