"""How many threads tinynet computes on, and how idle threads wait.

Two thread pools do tinynet's work on the CPU: the BLAS library behind NumPy's
matrix products (OpenBLAS, MKL...), and Numba's, which runs the fused kernels
(LayerNorm above a size threshold, the Adam step). Both start with one
thread per core. Left alone they fight: Numba's threading layer here is
OpenMP, whose workers *spin* after each parallel region, waiting for the
next one, and so take the cores away from the BLAS threads of the matrix
product that comes next. A training step then runs several times slower than
with either pool on its own (``benchmarks/threads.py`` prints the table).

The policy, applied at ``import tinynet``:

* OpenMP workers wait *passively* (``OMP_WAIT_POLICY=PASSIVE``): they sleep as
  soon as a parallel region ends. It must be in the environment before Numba
  loads its OpenMP runtime, which happens at the first parallel kernel, after
  this module runs. Every OpenMP runtime loaded later in the process reads it
  too (PyTorch's, if it is imported after tinynet).
* Both pools keep one thread per core; :func:`set_num_threads` changes both.

OpenBLAS's own workers are left as they are: after a product they spin for
2^28 cycles (some 0.1 s) before they sleep, so that the next product starts at
once. While they spin, a Numba kernel shared out over the cores gets only part
of the second core, which slows the convnet's step, whose pooling,
normalization and im2col kernels run right after its products. Making them
sleep at once (``OPENBLAS_THREAD_TIMEOUT=4``, read when NumPy loads) speeds
that step up and slows every other model's, whose products come one after
another: ``benchmarks/threads.py`` has the column.

The user's own settings win: an ``OMP_WAIT_POLICY`` already in the
environment is left as it is, and so are ``OMP_NUM_THREADS``,
``OPENBLAS_NUM_THREADS``, ``MKL_NUM_THREADS`` and ``NUMBA_NUM_THREADS``, which
the libraries themselves read; :func:`get_num_threads` reports them.
"""
from __future__ import annotations

import os

__all__ = ["set_num_threads", "get_num_threads", "apply_wait_policy", "share_cores"]

WAIT_POLICY_VARIABLE = "OMP_WAIT_POLICY"
THREAD_COUNT_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                          "NUMBA_NUM_THREADS")

_num_threads = None      # set by set_num_threads; None: the libraries' own defaults


def apply_wait_policy() -> None:
    """Make idle OpenMP workers sleep, unless the user chose a policy."""
    os.environ.setdefault(WAIT_POLICY_VARIABLE, "PASSIVE")


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:                      # macOS, Windows
        return os.cpu_count() or 1


def _count_from_environment():
    """The thread count a user's environment variable sets, if any (the first one set)."""
    for name in THREAD_COUNT_VARIABLES:
        value = os.environ.get(name, "").split(",")[0].strip()
        if value.isdigit() and int(value) > 0:
            return int(value)
    return None


def get_num_threads() -> int:
    """The number of threads tinynet's computations use (as ``torch.get_num_threads``):
    the last :func:`set_num_threads`, else the user's environment, else one per core."""
    if _num_threads is not None:
        return _num_threads
    return _count_from_environment() or _cores()


def set_num_threads(n: int) -> None:
    """Use ``n`` threads for the BLAS library (through threadpoolctl) and for
    Numba's kernels, as ``torch.set_num_threads``.

    Numba cannot use more threads than it started with (``NUMBA_NUM_THREADS``,
    one per core by default): a larger ``n`` gives BLAS ``n`` threads and
    Numba all of its own. Numba's setting holds for the calling Python thread.
    """
    from .hyperparameters import check_count
    n = check_count("set_num_threads", "n", n)
    import numba
    from threadpoolctl import threadpool_limits

    global _num_threads
    threadpool_limits(limits=n, user_api="blas")
    numba.set_num_threads(min(n, numba.config.NUMBA_NUM_THREADS))
    _num_threads = n


def share_cores(processes: int) -> None:
    """Give each of ``processes`` processes on this machine its share of the cores
    (at least one thread), unless the user chose a count (environment or
    :func:`set_num_threads`). MPI ranks on one machine call it: each rank with a
    thread per core would run ``processes`` times as many threads as cores.
    ``torchrun`` likewise starts its workers with one thread each."""
    if _num_threads is None and _count_from_environment() is None and processes > 1:
        set_num_threads(max(1, _cores() // processes))
