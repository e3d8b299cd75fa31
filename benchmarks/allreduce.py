"""All-reduce time and bandwidth on this machine, and what DDP adds to a training step.

    python benchmarks/allreduce.py [--ranks 2] [--rounds 7]

It starts itself under ``mpiexec -n RANKS`` (the one beside the interpreter,
from the mpich wheel, else the first on PATH), with no thread settings: each
rank gets what ``tinynet.distributed.init_process_group`` gives it.

Table 1: ``MPI_Allreduce`` (sum, float32) against message size: the median
over rounds of the slowest rank's time per call; bandwidth as NCCL counts it
(bus bandwidth = 2 (W − 1) / W × bytes / time, what each rank's link carries),
and against a copy of the same size in one process.

Table 2: one training step (forward, backward, Adam) of the paper's MLP with
LayerNorm at a per-rank batch of 64, on every rank at once: without
communication (each rank alone), and under DistributedDataParallel with its
default buckets (25 MB: the whole model in one message), 1 MB buckets, and one
message per parameter. Ratio: DDP step / the step without communication
(target at 2 ranks: at most 1.15); "communicating": the share of the step
spent in DDP's copies and MPI calls.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from common import print_table  # noqa: E402

SIZES = [2 ** k for k in (10, 14, 18, 20, 22, 24, 26)]      # bytes: 1 KiB .. 64 MiB


def mpiexec() -> str:
    import shutil
    beside = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    found = beside if os.access(beside, os.X_OK) else shutil.which("mpiexec")
    if found is None:
        sys.exit("benchmarks/allreduce.py needs mpiexec: pip install 'tinynet[mpi]'")
    return found


def timed_rounds(fn, comm, rounds: int, calls: int) -> list[float]:
    """Seconds per call of ``fn`` in each round: the slowest rank's, all ranks
    starting each round together (the same number of calls on every rank)."""
    from mpi4py import MPI
    fn()
    times = []
    for _ in range(rounds):
        comm.Barrier()
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        times.append(comm.allreduce((time.perf_counter() - start) / calls, op=MPI.MAX))
    return times


def allreduce_table(comm, rounds):
    import numpy as np
    from mpi4py import MPI
    world = comm.Get_size()
    rows = []
    for size in SIZES:
        array = np.ones(size // 4, np.float32)
        copy = np.empty_like(array)
        calls = max(3, min(1000, 2 ** 25 // size))
        reduce_times = timed_rounds(lambda a=array: comm.Allreduce(MPI.IN_PLACE, a), comm,
                                    rounds, calls)
        copy_times = timed_rounds(lambda a=array, c=copy: np.copyto(c, a), comm, rounds, calls)
        seconds, copy_seconds = statistics.median(reduce_times), statistics.median(copy_times)
        bus = 2 * (world - 1) / world * size / seconds
        rows.append([f"{size / 1024:.0f} KiB" if size < 2 ** 20 else f"{size >> 20} MiB",
                     seconds * 1e6, f"{min(reduce_times) * 1e6:.3g}-{max(reduce_times) * 1e6:.3g}",
                     size / seconds / 1e9, bus / 1e9, (size / seconds) / (size / copy_seconds)])
    return rows


def step_table(comm, rounds):
    import numpy as np

    import tinynet
    import tinynet.distributed as dist
    from tinynet.models import MLP
    from tinynet.nn.parallel import DistributedDataParallel

    rng = np.random.default_rng(comm.Get_rank())
    x = tinynet.tensor(rng.random((64, 784), dtype=np.float32))
    y = tinynet.tensor(rng.integers(0, 10, 64))
    configurations = {"no communication": None, "DDP, 25 MB buckets": 25,
                      "DDP, 1 MB buckets": 1, "DDP, a message per parameter": 1e-6}
    steps, models = {}, {}
    for name, cap in configurations.items():
        tinynet.manual_seed(0)
        model = MLP("layer")
        if cap is not None:
            model = DistributedDataParallel(model, bucket_cap_mb=cap)
        optimizer = tinynet.optim.Adam(model.parameters(), lr=1e-3)

        def step(model=model, optimizer=optimizer):
            optimizer.zero_grad()
            tinynet.nn.functional.cross_entropy(model(x), y).backward()
            optimizer.step()
        steps[name], models[name] = step, model
    calls = 10
    times = {name: [] for name in steps}
    communicating = {name: [] for name in steps}
    for _ in range(rounds):                       # interleaved: a slow spell hits all alike
        for name, step in steps.items():
            dist.traffic.reset()
            (seconds,) = timed_rounds(step, comm, 1, calls)
            times[name].append(seconds)
            spent = dist.traffic.seconds("gradients")
            communicating[name].append(spent / (calls + 1) / seconds)
    base = statistics.median(times["no communication"])
    rows = []
    for name in steps:
        median = statistics.median(times[name])
        model = models[name]
        buckets = len(model._buckets) if hasattr(model, "_buckets") else 0
        rows.append([name, buckets, median * 1e3,
                     f"{min(times[name]) * 1e3:.3g}-{max(times[name]) * 1e3:.3g}",
                     median / base, f"{100 * statistics.median(communicating[name]):.0f}%"])
    return rows


def child(rounds):
    import tinynet
    import tinynet.distributed as dist
    dist.init_process_group("mpi")
    from tinynet import _process_group
    comm = _process_group.require_world("benchmark").comm
    world = dist.get_world_size()
    reduce_rows = allreduce_table(comm, rounds)
    step_rows = step_table(comm, rounds)
    if dist.get_rank() == 0:
        threads = tinynet.get_num_threads()
        print_table(f"MPI_Allreduce, float32 sum, {world} ranks on {os.cpu_count()} cores: "
                    f"median over {rounds} rounds",
                    ["message", "µs", "spread", "GB/s", "bus GB/s", "of copy"], reduce_rows)
        print_table(f"training step, MLP+LN 784-1000-1000-10, batch 64 per rank, {world} "
                    f"ranks, {threads} thread(s) each: median over {rounds} rounds",
                    ["configuration", "buckets", "ms", "spread", "ratio", "communicating"],
                    step_rows)
    dist.destroy_process_group()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args.rounds)
    command = [mpiexec(), "-n", str(args.ranks), sys.executable, os.path.abspath(__file__),
               "--child", "--rounds", str(args.rounds)]
    return subprocess.run(command, check=False).returncode


if __name__ == "__main__":
    sys.exit(main())
