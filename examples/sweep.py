"""Run a plan of training configurations in parallel worker processes, resumably.

The model-independent half of the sweeps (``batch_size_sweep.py``,
``char_lm_sweep.py``). A sweep is a list of configurations (dicts), a key
function naming the fields that identify a run, and a picklable
``run(config) -> result`` that trains one configuration in a worker and returns
a JSON-serializable dict. :func:`run_plan` then

* reads ``OUT/results.jsonl`` and skips every configuration whose key is there;
* runs the others on an executor (:func:`make_executor`): local processes
  (``--executor local``, ``--workers``, one per core by default) or the ranks of
  an MPI launch of ``mpi4py.futures`` (``--executor mpi``); each worker computes
  on one thread, so that the workers share the cores;
* appends each finished result to ``OUT/results.jsonl`` at once, atomically and
  in the parent process only, so that a sweep stopped at any moment (even by
  SIGKILL) loses only the runs in flight, and a re-run completes the rest.

``key(config)`` must equal ``key(result)`` for a configuration and its result.
Local workers stop by themselves when the parent dies.
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
import threading
import time
from typing import Callable, Iterable


def mpi_usage(script: str) -> str:
    """The lines that show how to launch ``script`` with ``--executor mpi``."""
    launch = f"mpiexec -n N python -m mpi4py.futures {script} --executor mpi ..."
    return (f"On MPI, N ranks: rank 0 runs the sweep, the N-1 others are its workers:\n"
            f"  {launch}\n  {launch.replace('mpiexec', 'srun')}")


def add_executor_arguments(parser: argparse.ArgumentParser, out: str | None,
                           out_help: str | None = None) -> None:
    """``--executor``, ``--workers`` and ``--out`` (default ``out``; ``out_help`` says
    what a default of None means)."""
    parser.add_argument("--executor", choices=["local", "mpi"], default="local",
                        help="local: processes on this machine; mpi: the ranks of an MPI launch "
                             "of mpi4py.futures (see below)")
    parser.add_argument("--workers", type=int,
                        help="local worker processes (default: one per core); with --executor "
                             "mpi the launcher sets the pool's size")
    parser.add_argument("--out", default=out,
                        help=f"directory of results.jsonl and the summaries "
                             f"(default: {out_help or out})")


def one_thread_per_worker() -> None:
    """Each worker's initializer: its BLAS and Numba use one thread, the workers share the cores.

    It runs before the worker's first job imports NumPy, whose libraries read these then."""
    names = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS")
    os.environ.update({name: "1" for name in names})


def _local_worker(parent: int) -> None:
    """A local worker's initializer: one thread, and an exit when ``parent`` is gone
    (a parent killed by SIGKILL cannot stop its pool)."""
    one_thread_per_worker()

    def watch():
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, daemon=True).start()


def _launched_by_mpi4py_futures() -> bool:
    """Whether this is rank 0 of ``python -m mpi4py.futures``, which the other ranks serve.

    Without it, every rank of ``mpiexec`` runs the whole sweep, and a plain ``python``
    spawns its workers, which hangs where the MPI cannot spawn (MPICH's singletons)."""
    return ("-m", "mpi4py.futures") in itertools.pairwise(sys.orig_argv)


def make_executor(args, usage: str) -> tuple[concurrent.futures.Executor, int]:
    """The pool of ``args.executor`` and its number of workers; ``usage`` (see
    :func:`mpi_usage`) ends the message of a wrong MPI launch."""
    if args.executor == "local":
        workers = (os.cpu_count() or 1) if args.workers is None else args.workers
        if workers < 1:
            raise SystemExit(f"--workers {args.workers}: a pool needs at least one worker")
        return concurrent.futures.ProcessPoolExecutor(
            workers, mp_context=multiprocessing.get_context("spawn"),
            initializer=_local_worker, initargs=(os.getpid(),)), workers
    if args.workers is not None:
        raise SystemExit(f"--workers sizes the local pool only: the MPI launcher sizes the "
                         f"pool of --executor mpi.\n{usage}")
    try:
        from mpi4py import MPI
        from mpi4py.futures import MPIPoolExecutor
    except ImportError as error:
        raise SystemExit(f"--executor mpi needs mpi4py ({error}): "
                         "pip install 'tinynet[mpi]'") from None
    workers = MPI.COMM_WORLD.Get_size() - 1
    if not _launched_by_mpi4py_futures() or workers < 1:
        raise SystemExit(f"--executor mpi found no workers: it runs on N >= 2 ranks launched "
                         f"with python -m mpi4py.futures.\n{usage}")
    return MPIPoolExecutor(initializer=one_thread_per_worker), workers


def read_results(path) -> list[dict]:
    """The results of ``results.jsonl``, in the order they finished ([] without the file)."""
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


def write_csv(path, rows: list[dict]) -> None:
    """``rows`` (dicts with the same keys) as a CSV file with a header, written atomically."""
    from tinynet.serialization import atomic_write
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
    with atomic_write(path, "w") as f:
        f.write(buffer.getvalue())


def run_plan(configs: Iterable[dict], key: Callable[[dict], tuple],
             run: Callable[[dict], dict], out: str, executor: concurrent.futures.Executor,
             workers: int, describe: Callable[[dict], str] = str,
             what: str = "configurations") -> list[dict]:
    """Run on ``executor`` the ``configs`` whose key is not yet in ``OUT/results.jsonl``,
    appending each result as it finishes (``describe(result)`` prints it), then shut
    the executor down. Returns the results of ``configs``, in the order they finished.

    Prints ``"<n> <what>: <d> already done, <t> to run with <w> worker(s)"`` first.
    An exception (a failed run, Ctrl-C) cancels the runs not started, stops the local
    workers and propagates; the results already appended stay."""
    configs = list(configs)
    os.makedirs(out, exist_ok=True)
    results_path = os.path.join(out, "results.jsonl")
    done = {key(r) for r in read_results(results_path)}
    todo = [config for config in configs if key(config) not in done]
    print(f"{len(configs)} {what}: {len(configs) - len(todo)} already done, {len(todo)} to run "
          f"with {min(workers, len(todo)) or workers} worker(s)", flush=True)
    started = time.perf_counter()
    futures = [executor.submit(run, config) for config in todo]
    try:
        for future in concurrent.futures.as_completed(futures):
            result = future.result()
            append_result(results_path, result)           # here in the parent, never in a worker
            print(f"  done: {describe(result)} ({time.perf_counter() - started:.0f} s)",
                  flush=True)
    except BaseException:                   # interrupted: start no more runs, stop those in flight
        executor.shutdown(wait=False, cancel_futures=True)
        for worker in multiprocessing.active_children():      # the local pool's processes
            worker.terminate()
        raise
    executor.shutdown()
    keys = {key(config) for config in configs}
    return [r for r in read_results(results_path) if key(r) in keys]
