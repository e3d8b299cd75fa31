"""The paper's Figure 6: test error of an MNIST MLP vs batch size, for LN, BN and no norm.

    python examples/batch_size_sweep.py --preset quick --out runs/quick
    python examples/batch_size_sweep.py --preset paper --out runs/paper
    python examples/batch_size_sweep.py --preset convnet --out runs/convnet
    mpiexec -n N python -m mpi4py.futures examples/batch_size_sweep.py --executor mpi ...
    srun -n N python -m mpi4py.futures examples/batch_size_sweep.py --executor mpi ...

Every configuration (norm × batch size × seed) trains on the same budget of
examples seen and is evaluated on the 10,000 test images. Configurations run
in parallel worker processes, each computing on one thread: local processes
(``--workers``, one per core by default), or with ``--executor mpi`` the ranks
of an MPI launch of ``mpi4py.futures``: rank 0 runs this script, the other N-1
ranks are its workers (any MPI launcher: ``mpiexec``, ``srun``...). Only the
parent process writes results: each finished run is appended to
``OUT/results.jsonl`` at once (atomically), and a re-run skips what is already
there: an interrupted sweep loses only the runs in flight (the machinery is
examples/sweep.py). At the end it prints a table and writes ``OUT/sweep.csv``
and, with matplotlib, ``OUT/figure6.png``.

``--model cnn`` (the ``convnet`` preset) sweeps examples/mnist_cnn.py's convnet
instead of the MLP, with its five norms (batch, layer, group, instance, none):
the paper's §6.7 question.

``--device cuda`` trains every configuration on the GPU (see
examples/mnist_mlp.py); each finished run prints its median step time.
"""
from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import sweep  # noqa: E402  (examples/)

PRESETS = {
    # what `make demo` runs: one epoch's budget (55,000 examples), about 3 minutes on 2 cores
    "quick": dict(norms=["none", "batch", "layer"], batch_sizes=[4, 128], seeds=[0],
                  examples=55_000, curve_points=4),
    # the paper's grid: one epoch of the 55,000 training images, two seeds
    "paper": dict(norms=["none", "batch", "layer"], batch_sizes=[4, 8, 16, 32, 64, 128],
                  seeds=[0, 1], examples=55_000, curve_points=8),
    # the convnet of examples/mnist_cnn.py, every norm, the two ends, three seeds
    "convnet": dict(model="cnn", norms=["none", "batch", "layer", "group", "instance"],
                    batch_sizes=[4, 128], seeds=[0, 1, 2], examples=55_000,
                    curve_points=4),
}
KEY_FIELDS = ("model", "norm", "batch_size", "seed", "budget", "data", "device")
NORMS = ("none", "batch", "layer", "group", "instance")     # group, instance: the convnet's
MPI_USAGE = sweep.mpi_usage("examples/batch_size_sweep.py")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog=MPI_USAGE,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--preset", choices=sorted(PRESETS), default="quick")
    parser.add_argument("--model", choices=("mlp", "cnn"),
                        help="the MLP (default) or the convnet (the convnet preset's)")
    parser.add_argument("--norms", nargs="+", choices=NORMS)
    parser.add_argument("--batch-sizes", nargs="+", type=int)
    parser.add_argument("--seeds", nargs="+", type=int)
    parser.add_argument("--examples", type=int, help="examples seen per run")
    parser.add_argument("--data", help="MNIST directory (default: as the MNIST loader)")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                        help="where every run trains; cuda needs CuPy (pip install "
                             "'tinynet[cuda12]'). With --executor local all the workers share "
                             "the one GPU, each with a CUDA context of its own; with "
                             "--executor mpi each rank uses GPU 0 of its machine")
    sweep.add_executor_arguments(parser, out="runs/sweep")
    return parser


def plan(args) -> list[dict]:
    preset = PRESETS[args.preset]
    pick = lambda name: getattr(args, name) or preset[name]  # noqa: E731
    model = args.model or preset.get("model", "mlp")
    norms = pick("norms")
    allowed = mnist_models()[model][1]
    if any(n not in allowed for n in norms):
        raise SystemExit(f"--norms: the {model} takes {', '.join(allowed)}, not "
                         f"{', '.join(n for n in norms if n not in allowed)}")
    return [dict(model=model, norm=n, batch_size=b, seed=s, budget=pick("examples"),
                 curve_points=preset["curve_points"], device=args.device)
            for b in pick("batch_sizes") for n in norms for s in pick("seeds")]


def mnist_models() -> dict:
    """mnist_mlp.py's models: {name: (class, its norms)}."""
    import mnist_mlp
    return mnist_mlp.MODELS


def run_one(job: dict) -> dict:
    """Train one configuration (in a worker process)."""
    import mnist_mlp
    model = job.get("model", "mlp")
    argv = ["--norm", job["norm"], "--batch-size", str(job["batch_size"]),
            "--seed", str(job["seed"]), "--examples", str(job["budget"]),
            "--curve-points", str(job["curve_points"]), "--device", job["device"]]
    if job.get("data_dir"):
        argv += ["--data", job["data_dir"]]
    args = mnist_mlp.build_parser(model).parse_args(argv)
    return mnist_mlp.train(args, progress=False)


def _key(record) -> tuple:
    # results.jsonl lines from before --device and --model: cpu, the MLP
    record = {"device": "cpu", "model": "mlp", **record}
    return tuple(record[k] for k in KEY_FIELDS)


def make_executor(args):
    """The pool that runs the configurations (``--executor``), and its number of workers."""
    return sweep.make_executor(args, MPI_USAGE)


def run_sweep(args) -> list[dict]:
    import mnist_mlp
    executor, workers = make_executor(args)        # first: a wrong launch fails before any work
    from tinynet.data import load_mnist
    source = "bundled sample" if load_mnist(args.data, train=False).is_sample else "full MNIST"
    jobs = [dict(job, data=source, data_dir=args.data) for job in plan(args)]

    def describe(r):
        return (f"{r.get('model', 'mlp')}, {r['norm']:>8} norm, batch {r['batch_size']:>3}, "
                f"seed {r['seed']}: test error "
                f"{100 * r['test_error']:.2f}%, {mnist_mlp.format_step(r['median_step_seconds'])}")

    return sweep.run_plan(jobs, _key, run_one, args.out, executor, workers, describe,
                          what=f"configurations on {source}")


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
    colors = {"none": "tab:blue", "batch": "tab:orange", "layer": "tab:green",
              "group": "tab:red", "instance": "tab:purple"}
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
    parser = build_parser()
    args = parser.parse_args(argv)
    import mnist_mlp
    mnist_mlp.check_device(parser, args.device)    # before any worker starts
    results = run_sweep(args)
    if not results:
        print("no results")
        return 1
    rows = summarize(results)
    print_table(rows)
    sweep.write_csv(os.path.join(args.out, "sweep.csv"), rows)
    written = [os.path.join(args.out, "results.jsonl"), os.path.join(args.out, "sweep.csv")]
    figure = os.path.join(args.out, "figure6.png" if results[0].get("model", "mlp") == "mlp"
                          else "convnet.png")
    if plot(figure, rows, results):
        written.append(figure)
    print("\nwrote " + ", ".join(written))
    return 0


if __name__ == "__main__":
    sys.exit(main())
