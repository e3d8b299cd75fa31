"""The table and figure of docs/distributed.md, from the runs of examples/data_parallel.py.

    python examples/data_parallel_report.py runs/dp [--plot docs/figures/data_parallel.png]

Reads every ``result.json`` under the directory (one per run), averages the
test error over seeds, and prints two Markdown tables: the MLP's test error by
norm and per-rank batch (rows) and number of ranks (columns); and one row per
(model, norm, per-worker batch, ranks) with test error, global batch,
all-reduces and bytes sent per step and rank, milliseconds per step and the
share of it spent communicating. The figure: test error against the number of
ranks, one line per norm and batch.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import statistics
import sys


def read_runs(directory: str) -> list[dict]:
    runs = []
    for path in sorted(glob.glob(os.path.join(directory, "**", "result.json"), recursive=True)):
        with open(path) as f:
            runs.append(json.load(f))
    if not runs:
        raise SystemExit(f"no result.json under {directory}: run examples/data_parallel.py "
                         "with --out there first")
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


def print_table(rows: list[dict]) -> None:
    print("| model | norm | B per rank | ranks W | global batch | test error % | seeds | "
          "gradient all-reduces / step | BN messages / step | bytes / step / rank | "
          "ms / step | communicating |")
    print("|" + "---|" * 12)
    for r in rows:
        print(f"| {r['model']} | {r['norm']} | {r['per_worker_batch']} | {r['world_size']} | "
              f"{r['global_batch']} | {100 * r['test_error']:.2f} | {r['seeds']} | "
              f"{r['gradient_all_reduces']:.0f} | {r['bn_messages']:.0f} | "
              f"{r['bytes'] / 1e6:.2f} MB | {r['ms_per_step']:.1f} | "
              f"{100 * r['communicating']:.0f}% |")


def print_errors(rows: list[dict]) -> None:
    """Test error (%) of the MLP, one row per (norm, per-rank batch), one column per
    number of ranks W; in parentheses the global batch W·B."""
    worlds = sorted({r["world_size"] for r in rows if r["model"] == "mlp"})
    cells = {(r["norm"], r["per_worker_batch"], r["world_size"]): r for r in rows
             if r["model"] == "mlp"}
    print("| norm | B per rank | " + " | ".join(f"W = {w}" for w in worlds) + " |")
    print("|" + "---|" * (2 + len(worlds)))
    for norm, batch in sorted({(n, b) for n, b, _ in cells}):
        errors = [cells.get((norm, batch, w)) for w in worlds]
        print(f"| {norm} | {batch} | " + " | ".join(
            "-" if r is None else f"{100 * r['test_error']:.2f} ({r['global_batch']})"
            for r in errors) + " |")


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


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory")
    parser.add_argument("--plot", help="write the figure here (PNG; needs matplotlib)")
    args = parser.parse_args(argv)
    rows = summarize(read_runs(args.directory))
    print_errors(rows)
    print()
    print_table(rows)
    if args.plot:
        plot(rows, args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
