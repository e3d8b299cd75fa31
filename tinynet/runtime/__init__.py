"""How tinynet runs on the machine: threads, the shared BLAS pool, the C allocator's
policy, the count of MPI traffic. A reader of the framework can skip this package:
nothing in it computes a value, and every result is the same without it.

``import tinynet`` calls :func:`configure` once, before any OpenMP runtime loads:

* threads.py: how many threads compute, and how idle ones wait (``set_num_threads``);
* blas_pool.py: OpenBLAS's matrix products run on Numba's threads (one pool, not two);
* load.py: fewer threads while other processes keep cores busy (at a backward pass);
* allocator.py: glibc keeps freed arrays' memory for the next step;
* traffic.py: what this rank's collectives sent (``tinynet.distributed.traffic``);
* quiet.py: NumPy's floating-point warnings off for one op, cheaper than ``np.errstate``.
"""
from . import allocator, threads

__all__ = ["configure", "allocator", "threads"]


def configure() -> None:
    """The process-wide policies, applied once at ``import tinynet``."""
    threads.apply_wait_policy()
    allocator.apply_allocator_policy()
