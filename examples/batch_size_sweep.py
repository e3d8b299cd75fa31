"""The paper's Figure 6: test error of an MNIST MLP vs batch size, for LN, BN and no norm.

    python examples/batch_size_sweep.py --preset quick --out runs/quick
    python examples/batch_size_sweep.py --preset paper --out runs/paper
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
there: an interrupted sweep loses only the runs in flight. At the end it prints
a table and writes ``OUT/sweep.csv`` and, with matplotlib, ``OUT/figure6.png``.

``--device cuda`` trains every configuration on the GPU (see
examples/mnist_mlp.py); each finished run prints its median step time.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import csv
import io
import itertools
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
KEY_FIELDS = ("norm", "batch_size", "seed", "budget", "data", "device")
MPI_LAUNCH = "mpiexec -n N python -m mpi4py.futures examples/batch_size_sweep.py --executor mpi ..."
MPI_USAGE = (f"On MPI, N ranks: rank 0 runs the sweep, the N-1 others are its workers:\n"
             f"  {MPI_LAUNCH}\n  {MPI_LAUNCH.replace('mpiexec', 'srun')}")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog=MPI_USAGE,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--preset", choices=sorted(PRESETS), default="quick")
    parser.add_argument("--norms", nargs="+", choices=["none", "batch", "layer"])
    parser.add_argument("--batch-sizes", nargs="+", type=int)
    parser.add_argument("--seeds", nargs="+", type=int)
    parser.add_argument("--examples", type=int, help="examples seen per run")
    parser.add_argument("--data", help="MNIST directory (default: as the MNIST loader)")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                        help="where every run trains; cuda needs CuPy (pip install "
                             "'tinynet[cuda12]'). With --executor local all the workers share "
                             "the one GPU, each with a CUDA context of its own; with "
                             "--executor mpi each rank uses GPU 0 of its machine")
    parser.add_argument("--executor", choices=["local", "mpi"], default="local",
                        help="local: processes on this machine; mpi: the ranks of an MPI launch "
                             "of mpi4py.futures (see below)")
    parser.add_argument("--workers", type=int,
                        help="local worker processes (default: one per core); with --executor "
                             "mpi the launcher sets the pool's size")
    parser.add_argument("--out", default="runs/sweep")
    return parser


def plan(args) -> list[dict]:
    preset = PRESETS[args.preset]
    pick = lambda name: getattr(args, name) or preset[name]  # noqa: E731
    return [dict(norm=n, batch_size=b, seed=s, budget=pick("examples"),
                 curve_points=preset["curve_points"], device=args.device)
            for b in pick("batch_sizes") for n in pick("norms") for s in pick("seeds")]


def run_one(job: dict) -> dict:
    """Train one configuration (in a worker process)."""
    import mnist_mlp
    argv = ["--norm", job["norm"], "--batch-size", str(job["batch_size"]),
            "--seed", str(job["seed"]), "--examples", str(job["budget"]),
            "--curve-points", str(job["curve_points"]), "--device", job["device"]]
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
    record = {"device": "cpu", **record}      # results.jsonl lines from before --device: cpu
    return tuple(record[k] for k in KEY_FIELDS)


def one_thread_per_worker() -> None:
    """Each worker's initializer: its BLAS and Numba use one thread, the workers share the cores.

    It runs before the worker's first job imports NumPy, whose libraries read these then."""
    names = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS")
    os.environ.update({name: "1" for name in names})


def _launched_by_mpi4py_futures() -> bool:
    """Whether this is rank 0 of ``python -m mpi4py.futures``, which the other ranks serve.

    Without it, every rank of ``mpiexec`` runs the whole sweep, and a plain ``python``
    spawns its workers, which hangs where the MPI cannot spawn (MPICH's singletons)."""
    return ("-m", "mpi4py.futures") in itertools.pairwise(sys.orig_argv)


def make_executor(args) -> tuple[concurrent.futures.Executor, int]:
    """The pool that runs the configurations (``--executor``), and its number of workers."""
    if args.executor == "local":
        workers = args.workers or os.cpu_count() or 1
        return concurrent.futures.ProcessPoolExecutor(
            workers, mp_context=multiprocessing.get_context("spawn"),
            initializer=one_thread_per_worker), workers
    if args.workers is not None:
        raise SystemExit(f"--workers sizes the local pool only: the MPI launcher sizes the "
                         f"pool of --executor mpi.\n{MPI_USAGE}")
    try:
        from mpi4py import MPI
        from mpi4py.futures import MPIPoolExecutor
    except ImportError as error:
        raise SystemExit(f"--executor mpi needs mpi4py ({error}): "
                         "pip install 'tinynet[mpi]'") from None
    workers = MPI.COMM_WORLD.Get_size() - 1
    if not _launched_by_mpi4py_futures() or workers < 1:
        raise SystemExit(f"--executor mpi found no workers: it runs on N >= 2 ranks launched "
                         f"with python -m mpi4py.futures.\n{MPI_USAGE}")
    return MPIPoolExecutor(initializer=one_thread_per_worker), workers


def run_sweep(args) -> list[dict]:
    import mnist_mlp
    executor, workers = make_executor(args)        # first: a wrong launch fails before any work
    from tinynet.data import load_mnist
    source = "bundled sample" if load_mnist(args.data, train=False).is_sample else "full MNIST"
    os.makedirs(args.out, exist_ok=True)
    results_path = os.path.join(args.out, "results.jsonl")
    jobs = [dict(job, data=args.data) for job in plan(args)]
    done = {_key(r) for r in read_results(results_path)}
    todo = [job for job in jobs if _key(dict(job, data=source)) not in done]
    print(f"{len(jobs)} configurations on {source}: {len(jobs) - len(todo)} already done, "
          f"{len(todo)} to run with {min(workers, len(todo)) or workers} worker(s)", flush=True)
    started = time.perf_counter()
    runs = [executor.submit(run_one, job) for job in todo]
    try:
        for run in concurrent.futures.as_completed(runs):
            result = run.result()
            append_result(results_path, result)           # here in the parent, never in a worker
            print(f"  done: {result['norm']:>5} norm, batch {result['batch_size']:>3}, seed "
                  f"{result['seed']}: test error {100 * result['test_error']:.2f}%, "
                  f"{mnist_mlp.format_step(result['median_step_seconds'])} "
                  f"({time.perf_counter() - started:.0f} s)", flush=True)
    except BaseException:                   # interrupted: start no more runs, stop those in flight
        executor.shutdown(wait=False, cancel_futures=True)
        for worker in multiprocessing.active_children():      # the local pool's processes
            worker.terminate()
        raise
    executor.shutdown()
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
    write_csv(os.path.join(args.out, "sweep.csv"), rows)
    written = [os.path.join(args.out, "results.jsonl"), os.path.join(args.out, "sweep.csv")]
    if plot(os.path.join(args.out, "figure6.png"), rows, results):
        written.append(os.path.join(args.out, "figure6.png"))
    print("\nwrote " + ", ".join(written))
    return 0


if __name__ == "__main__":
    sys.exit(main())
