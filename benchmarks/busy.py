"""Training steps on a busy machine: beside 0, 1 and 2 other CPU-bound processes.

    python benchmarks/busy.py [--rounds 2] [--cases mlp128,lstm] [--busy 0,1,2]

A user's machine is rarely idle. Here other processes (a Python loop each, as
long as the cell runs) keep cores busy while a fresh process trains a model of
benchmarks/train_step.py for ``--seconds`` and reports its median step time over
the last half (the first half lets tinynet look at the machine: its threads
follow the cores that others leave free, tinynet/runtime/load.py). Columns:
tinynet with no settings; the same with that adaptation off
(``TINYNET_ADAPT_THREADS=0``: a thread per core whatever the load); tinynet on one
thread (``OMP_NUM_THREADS=1``), the best pinning beside busy processes on two
cores; PyTorch with no settings and on one thread. Rounds go through the columns
in turn. Target: beside one busy process, tinynet's default within 1.5x of its
best pinning, with the idle machine's time unchanged.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from common import print_table  # noqa: E402
from train_step import THREAD_VARIABLES, training_steps  # noqa: E402

HERE = os.path.abspath(__file__)
CASES = {"mlp128": ("MLP+LN, batch 128", "mlp", (128, 784)),
         "mlp4": ("MLP+LN, batch 4", "mlp", (4, 784)),
         "lstm": ("LN-LSTM, batch 64", "lstm", (64, 28, 28)),
         "cnn": ("ConvNet+BN, batch 128", "cnn-batch", (128, 784))}
ONE = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
       "NUMBA_NUM_THREADS": "1"}
COLUMNS = [("tinynet, no settings", "tinynet", {}),
           ("tinynet, adaptation off", "tinynet", {"TINYNET_ADAPT_THREADS": "0"}),
           ("tinynet, 1 thread", "tinynet", ONE),
           ("PyTorch, no settings", "torch", {}),
           ("PyTorch, 1 thread", "torch", ONE)]


def child(library: str, case: str, seconds: float) -> None:
    """Train ``case`` for ``seconds``; print the median step time of the second half."""
    torch = None
    if library == "torch":
        import torch
    _, kind, shape = CASES[case]
    step = training_steps(kind, shape, torch)[library]
    times, start = [], time.perf_counter()
    while time.perf_counter() - start < seconds:
        before = time.perf_counter()
        step()
        times.append((before - start, time.perf_counter() - before))
    late = [t for at, t in times if at >= seconds / 2] or [times[-1][1]]
    print(json.dumps(statistics.median(late)))


def run_cell(library, variables, case, seconds) -> float:
    env = {k: v for k, v in os.environ.items()
           if k not in THREAD_VARIABLES and not k.startswith(("MALLOC_", "TINYNET_ADAPT"))}
    env.update(variables)
    result = subprocess.run([sys.executable, HERE, "--child", library, case, str(seconds)],
                            env=env, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"{library} {case} with {variables}:\n{result.stderr[-2000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def busy_processes(n: int) -> list:
    loop = "while True: pass"
    return [subprocess.Popen([sys.executable, "-c", loop]) for _ in range(n)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=6.0, help="each cell's training")
    parser.add_argument("--cases", default="mlp128,lstm")
    parser.add_argument("--busy", default="0,1,2", help="other busy processes, per table")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        library, case, seconds = args.child
        return child(library, case, float(seconds))

    try:
        import torch  # noqa: F401
        columns = COLUMNS
    except ImportError:
        columns = [c for c in COLUMNS if c[1] != "torch"]
    cases = args.cases.split(",")
    for busy in (int(b) for b in args.busy.split(",")):
        cells = {(case, label): [] for case in cases for label, _, _ in columns}
        others = busy_processes(busy)
        try:
            for _ in range(args.rounds):
                for case in cases:
                    for label, library, variables in columns:
                        cells[case, label].append(
                            run_cell(library, variables, case, args.seconds))
        finally:
            for process in others:
                process.kill()
        rows, checks = [], []
        for case in cases:
            medians = {label: statistics.median(cells[case, label]) for label, _, _ in columns}
            rows.append([CASES[case][0]] + [
                f"{medians[label] * 1e3:.3g} ({min(cells[case, label]) * 1e3:.3g}-"
                f"{max(cells[case, label]) * 1e3:.3g})" for label, _, _ in columns])
            best = min(medians["tinynet, adaptation off"], medians["tinynet, 1 thread"])
            checks.append([CASES[case][0], medians["tinynet, no settings"] / best])
        print_table(f"{busy} other busy process(es) on {os.cpu_count()} cores: median ms per "
                    f"step (min-max over {args.rounds} processes)",
                    ["model"] + [label for label, _, _ in columns], rows)
        print_table("tinynet no settings / its best pinning (a thread per core, or one)",
                    ["model", "ratio"], checks)


if __name__ == "__main__":
    main()
