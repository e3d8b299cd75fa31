"""A rank that fails: the whole job must stop, with the failing rank's message.

``python worker_faults.py boom``: rank 1 raises at step 3 of a loop of
all_reduces while the others wait in step 3's. ``python worker_faults.py
mismatch``: the ranks call all_reduce with different shapes and none catches
the error. Run by tests/test_distributed.py under ``mpiexec -n 2``.
"""
import sys

import tinynet
import tinynet.distributed as dist


def boom(rank):
    total = tinynet.zeros(4)
    for step in range(10):
        if rank == 1 and step == 3:
            raise RuntimeError("boom at step 3")
        dist.all_reduce(total)


def mismatch(rank):
    dist.all_reduce(tinynet.zeros(2 + rank))


if __name__ == "__main__":
    dist.init_process_group("mpi")
    {"boom": boom, "mismatch": mismatch}[sys.argv[1]](dist.get_rank())
    dist.destroy_process_group()
    print("the job was expected to fail", flush=True)
