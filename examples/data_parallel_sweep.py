"""The runs of docs/distributed.md's experiment: examples/data_parallel.py on its grid.

    python examples/data_parallel_sweep.py --out runs/dp
    python examples/data_parallel_sweep.py --out runs/dp --dry-run      # the commands only

The grid (:data:`GRID`): the MNIST MLP with each norm (layer, batch, syncbatch,
none) at B = 4 and 32 images per rank on W = 1, 2 and 4 ranks, and the LN-LSTM
on sequential MNIST at a global batch of 64 (B = 64 on one rank, B = 32 on
two); seeds 0 and 1: 52 runs. Each is one ``mpiexec -n W python
examples/data_parallel.py ... --out OUT/NAME`` (``NAME`` as
``mlp-layer-B4-W2-s0``), run one after the other, each with the machine's
cores to its W ranks. A run whose ``OUT/NAME/result.json`` exists is skipped,
so an interrupted sweep reruns only the runs that had not finished. Then
``python examples/data_parallel_report.py OUT --page docs/distributed.md``
rewrites the page's tables and figure (``make experiments-distributed`` does both).
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
MLP_NORMS = ("layer", "batch", "syncbatch", "none")
SEEDS = (0, 1)


def _grid() -> list[dict]:
    runs = [dict(model="mlp", norm=norm, per_worker_batch=batch, world_size=world, seed=seed)
            for seed in SEEDS for batch in (4, 32) for world in (1, 2, 4) for norm in MLP_NORMS]
    runs += [dict(model="lstm", norm="layer", per_worker_batch=batch, world_size=world,
                  seed=seed) for seed in SEEDS for batch, world in ((64, 1), (32, 2))]
    return runs


GRID = _grid()


def name(run: dict) -> str:
    """The run's directory under ``--out``."""
    return (f"{run['model']}-{run['norm']}-B{run['per_worker_batch']}-W{run['world_size']}"
            f"-s{run['seed']}")


def mpiexec() -> str:
    """The mpiexec beside this Python (the mpich wheel's), else the one on PATH."""
    beside = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    return beside if os.path.exists(beside) else (shutil.which("mpiexec") or "mpiexec")


def command(run: dict, out: str, data: str | None = None) -> list[str]:
    argv = [mpiexec(), "-n", str(run["world_size"]), sys.executable,
            os.path.join(HERE, "data_parallel.py"), "--model", run["model"], "--norm", run["norm"],
            "--per-worker-batch", str(run["per_worker_batch"]), "--seed", str(run["seed"]),
            "--out", os.path.join(out, name(run))]
    return argv + (["--data", data] if data else [])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="runs/dp", help="the runs' directory (default runs/dp)")
    parser.add_argument("--data", help="MNIST directory (default: as the MNIST loader)")
    parser.add_argument("--dry-run", action="store_true", help="print the commands to run")
    args = parser.parse_args(argv)
    todo = [run for run in GRID
            if not os.path.exists(os.path.join(args.out, name(run), "result.json"))]
    print(f"{len(GRID)} runs: {len(GRID) - len(todo)} already done, {len(todo)} to run",
          flush=True)
    started = time.perf_counter()
    for i, run in enumerate(todo, 1):
        argv = command(run, args.out, args.data)
        if args.dry_run:
            print(" ".join(argv))
            continue
        print(f"[{i}/{len(todo)}] {name(run)}", flush=True)
        completed = subprocess.run(argv)
        if completed.returncode:
            print(f"{name(run)} failed (exit status {completed.returncode}); the runs done "
                  f"so far are kept", file=sys.stderr)
            return completed.returncode
        print(f"  ({time.perf_counter() - started:.0f} s)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
