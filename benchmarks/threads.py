"""Training-step time under each thread configuration, on the machine it runs on.

    python benchmarks/threads.py [--rounds 3]

Each cell runs in a fresh process (thread pools are sized when a library
loads), with a clean environment plus the variables its column names; the
rounds go through the columns in turn, so that a slow spell of a shared
machine hits every column. A cell is the median over rounds of each
process's median step time, with the spread over rounds.

Columns: tinynet with no settings (its default policies: tinynet/runtime/threads.py,
tinynet/runtime/allocator.py: OpenBLAS's work runs on Numba's workers, which spin a
while when idle); two thread pools, OpenBLAS's and Numba's
(``TINYNET_SHARE_BLAS_POOL=0``), and the same with OpenBLAS's idle workers
sleeping at once (``OPENBLAS_THREAD_TIMEOUT=4``: they spin for 2^28 cycles by
default); the shared pool's workers spinning for as long as the process lives
(``OMP_WAIT_POLICY=ACTIVE``); glibc's malloc at its defaults (any
``MALLOC_*`` variable of the user's turns tinynet's allocator policy off: here
``MALLOC_ARENA_MAX`` at glibc's own value, 8 per core, the one such variable
that leaves glibc's adaptive thresholds on); BLAS on every core and Numba on one; BLAS on one and
Numba on every core; both on one; PyTorch at its defaults. Targets: no settings within
1.1x of the best manual pinning and at most 0.8x PyTorch's time.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(__file__))
from common import print_table  # noqa: E402
from train_step import CASES, run_child  # noqa: E402

ONE_BLAS = {"OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
ONE_NUMBA = {"NUMBA_NUM_THREADS": "1"}
COLUMNS = [("no settings", "tinynet", {}),
           ("two pools", "tinynet", {"TINYNET_SHARE_BLAS_POOL": "0"}),
           ("two pools, OPENBLAS_THREAD_TIMEOUT=4", "tinynet",
            {"TINYNET_SHARE_BLAS_POOL": "0", "OPENBLAS_THREAD_TIMEOUT": "4"}),
           ("OMP_WAIT_POLICY=ACTIVE", "tinynet", {"OMP_WAIT_POLICY": "ACTIVE"}),
           ("glibc malloc defaults", "tinynet",
            {"MALLOC_ARENA_MAX": str(8 * (os.cpu_count() or 1))}),
           ("BLAS all / Numba 1", "tinynet", ONE_NUMBA),
           ("BLAS 1 / Numba all", "tinynet", ONE_BLAS),
           ("both 1", "tinynet", {**ONE_BLAS, **ONE_NUMBA, "OMP_NUM_THREADS": "1"}),
           ("PyTorch, its defaults", "torch", {})]
MANUAL = ("BLAS all / Numba 1", "BLAS 1 / Numba all", "both 1")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="fresh processes per cell")
    parser.add_argument("--repeat", type=int, default=5, help="timed rounds in each process")
    args = parser.parse_args()

    try:
        import torch  # noqa: F401
        columns = COLUMNS
    except ImportError:
        columns = [c for c in COLUMNS if c[1] != "torch"]
    cells = {label: [] for label, _, _ in columns}
    for _ in range(args.rounds):
        for label, library, variables in columns:
            cells[label].append(run_child(library, variables, args.repeat))

    rows, checks = [], []
    for case, _, _ in CASES:
        medians = {label: statistics.median(r[case] for r in cells[label]) for label in cells}
        row = [case]
        for label in cells:
            times = [r[case] for r in cells[label]]
            row.append(f"{medians[label] * 1e3:.3g} ({min(times) * 1e3:.3g}-"
                       f"{max(times) * 1e3:.3g})")
        rows.append(row)
        best = min(medians[label] for label in MANUAL)
        torch_time = medians.get("PyTorch, its defaults")
        checks.append([case, medians["no settings"] / best,
                       medians["no settings"] / torch_time if torch_time else "-"])
    print_table(f"training step (forward + backward + Adam), median ms (min-max over "
                f"{args.rounds} processes), {os.cpu_count()} cores",
                ["model", *cells], rows)
    print_table("targets: no settings / best manual pinning ≤ 1.1, no settings / PyTorch ≤ 0.8",
                ["model", "/ best pinning", "/ PyTorch"], checks)


if __name__ == "__main__":
    main()
