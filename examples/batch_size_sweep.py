"""The paper's Figure 6: test error of an MNIST MLP vs batch size, for LN, BN and no norm.

    python examples/batch_size_sweep.py --preset quick --out runs/quick
    python examples/batch_size_sweep.py --preset paper --out runs/paper

Every configuration (norm × batch size × seed) trains on the same budget of
examples seen and is evaluated on the 10,000 test images. Configurations run
in parallel worker processes (one per core by default, each pinned to one
thread). Each finished run is appended to ``OUT/results.jsonl`` at once
(atomically), and a re-run skips what is already there: an interrupted sweep
loses only the runs in flight. At the end it prints a table and writes
``OUT/sweep.csv`` and, with matplotlib, ``OUT/figure6.png``.
"""
from __future__ import annotations

import argparse
import contextlib
import csv
import io
import json
import multiprocessing
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

PRESETS = {
    # what `make demo` runs: one epoch's budget (55,000 examples), about 3 minutes on 2 cores
    "quick": dict(norms=["none", "batch", "layer"], batch_sizes=[4, 128], seeds=[0],
                  examples=55_000, curve_points=4),
    # the paper's grid: one epoch of the 55,000 training images, two seeds
    "paper": dict(norms=["none", "batch", "layer"], batch_sizes=[4, 8, 16, 32, 64, 128],
                  seeds=[0, 1], examples=55_000, curve_points=8),
}
KEY_FIELDS = ("norm", "batch_size", "seed", "budget", "data")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", choices=sorted(PRESETS), default="quick")
    parser.add_argument("--norms", nargs="+", choices=["none", "batch", "layer"])
    parser.add_argument("--batch-sizes", nargs="+", type=int)
    parser.add_argument("--seeds", nargs="+", type=int)
    parser.add_argument("--examples", type=int, help="examples seen per run")
    parser.add_argument("--data", help="MNIST directory (default: as the MNIST loader)")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--out", default="runs/sweep")
    return parser


def plan(args) -> list[dict]:
    preset = PRESETS[args.preset]
    pick = lambda name: getattr(args, name) or preset[name]  # noqa: E731
    return [dict(norm=n, batch_size=b, seed=s, budget=pick("examples"),
                 curve_points=preset["curve_points"])
            for b in pick("batch_sizes") for n in pick("norms") for s in pick("seeds")]


def run_one(job: dict) -> dict:
    """Train one configuration (in a worker process)."""
    import mnist_mlp
    argv = ["--norm", job["norm"], "--batch-size", str(job["batch_size"]),
            "--seed", str(job["seed"]), "--examples", str(job["budget"]),
            "--curve-points", str(job["curve_points"])]
    if job.get("data"):
        argv += ["--data", job["data"]]
    args = mnist_mlp.build_parser().parse_args(argv)
    return mnist_mlp.train(args, progress=False)


def read_results(path) -> list[dict]:
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def append_result(path, result: dict) -> None:
    """Append one JSON line by rewriting the file atomically (temp file + rename)."""
    from tinynet.serialization import atomic_write
    existing = open(path).read() if os.path.exists(path) else ""
    with atomic_write(path, "w") as f:
        f.write(existing + json.dumps(result) + "\n")


def _key(record) -> tuple:
    return tuple(record[k] for k in KEY_FIELDS)


@contextlib.contextmanager
def _one_thread_per_worker():
    """Workers started inside inherit these variables; this process keeps its own."""
    names = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS")
    saved = {name: os.environ.get(name) for name in names}
    os.environ.update({name: "1" for name in names})
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def run_sweep(args) -> list[dict]:
    from tinynet.data import load_mnist
    source = "bundled sample" if load_mnist(args.data, train=False).is_sample else "full MNIST"
    os.makedirs(args.out, exist_ok=True)
    results_path = os.path.join(args.out, "results.jsonl")
    jobs = [dict(job, data=args.data) for job in plan(args)]
    done = {_key(r) for r in read_results(results_path)}
    todo = [job for job in jobs if _key(dict(job, data=source)) not in done]
    print(f"{len(jobs)} configurations on {source}: {len(jobs) - len(todo)} already done, "
          f"{len(todo)} to run with {args.workers} worker(s)", flush=True)
    started = time.perf_counter()
    context = multiprocessing.get_context("spawn")
    with _one_thread_per_worker():
        pool = context.Pool(max(1, min(args.workers, len(todo) or 1)))
    try:
        for result in pool.imap_unordered(run_one, todo):
            append_result(results_path, result)
            print(f"  done: {result['norm']:>5} norm, batch {result['batch_size']:>3}, seed "
                  f"{result['seed']}: test error {100 * result['test_error']:.2f}% "
                  f"({time.perf_counter() - started:.0f} s)", flush=True)
        pool.close()
    except BaseException:
        pool.terminate()                    # an interrupted sweep stops its runs in flight
        raise
    finally:
        pool.join()
    keys = {_key(dict(job, data=source)) for job in jobs}
    return [r for r in read_results(results_path) if _key(r) in keys]


def summarize(results) -> list[dict]:
    """Mean over seeds of each (norm, batch size)."""
    groups: dict = {}
    for r in results:
        groups.setdefault((r["norm"], r["batch_size"]), []).append(r)

    def mean(runs, field):
        return sum(r[field] for r in runs) / len(runs)

    rows = []
    for (norm, batch), runs in sorted(groups.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        rows.append({"norm": norm, "batch_size": batch, "seeds": len(runs),
                     "test_error_pct": 100 * mean(runs, "test_error"),
                     "test_error_spread_pct": 100 * (max(r["test_error"] for r in runs)
                                                     - min(r["test_error"] for r in runs)),
                     "test_nll": mean(runs, "test_nll"),
                     "examples_per_second": mean(runs, "examples_per_second")})
    return rows


def write_csv(path, rows) -> None:
    from tinynet.serialization import atomic_write
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
    with atomic_write(path, "w") as f:
        f.write(buffer.getvalue())


def print_table(rows) -> None:
    print("\n| norm | batch | seeds | test error % | spread % | test NLL | examples/s |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['norm']} | {r['batch_size']} | {r['seeds']} | {r['test_error_pct']:.2f} | "
              f"{r['test_error_spread_pct']:.2f} | {r['test_nll']:.4f} | "
              f"{r['examples_per_second']:.0f} |")


def plot(path, rows, results) -> bool:
    """Figure 6's two panels: error vs batch size; test NLL vs examples at batch 4 and 128."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plot (pip install 'tinynet[plot]')")
        return False
    from tinynet.serialization import atomic_write
    colors = {"none": "tab:blue", "batch": "tab:orange", "layer": "tab:green"}
    batches = sorted({r["batch_size"] for r in rows})
    curve_batches = [min(batches), max(batches)]
    fig, axes = plt.subplots(1, 1 + len(curve_batches), figsize=(5 * (1 + len(curve_batches)), 4))
    for norm, color in colors.items():
        points = [(r["batch_size"], r["test_error_pct"]) for r in rows if r["norm"] == norm]
        if points:
            axes[0].plot(*zip(*points, strict=True), marker="o", color=color, label=norm)
    axes[0].set(xscale="log", xlabel="batch size", ylabel="test error (%)",
                title="test error vs batch size (mean over seeds)")
    axes[0].set_xticks(batches, [str(b) for b in batches])
    seeds = sorted({r["seed"] for r in results})
    for ax, batch in zip(axes[1:], curve_batches, strict=True):
        for r in sorted(results, key=lambda r: (r["norm"], r["seed"])):
            if r["batch_size"] == batch and r["curve"]:
                style = ("-", "--", ":", "-.")[seeds.index(r["seed"]) % 4]
                ax.plot(*zip(*r["curve"], strict=True), style, marker=".", color=colors[r["norm"]],
                        label=f"{r['norm']}, seed {r['seed']}")
        ax.set(xlabel="examples seen", ylabel="test NLL", title=f"batch size {batch}")
        ax.legend(fontsize=8)
    axes[0].legend()
    fig.tight_layout()
    with atomic_write(path, "wb") as f:
        fig.savefig(f, format="png", dpi=100)
    return True


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    results = run_sweep(args)
    if not results:
        print("no results")
        return 1
    rows = summarize(results)
    print_table(rows)
    write_csv(os.path.join(args.out, "sweep.csv"), rows)
    written = [os.path.join(args.out, "results.jsonl"), os.path.join(args.out, "sweep.csv")]
    if plot(os.path.join(args.out, "figure6.png"), rows, results):
        written.append(os.path.join(args.out, "figure6.png"))
    print("\nwrote " + ", ".join(written))
    return 0


if __name__ == "__main__":
    sys.exit(main())
