"""How many threads tinynet computes on, and how idle threads wait.

Two libraries compute on the CPU's threads: the BLAS behind NumPy's matrix
products (OpenBLAS, MKL...), and Numba, which runs the fused kernels (im2col
and pooling, the norms above a size threshold, the Adam step). Each starts a
pool of one thread per core, and two pools on the same cores fight: a worker
that waits for work *spins* for a while before it sleeps, so that the next
piece of work starts at once, and while it spins the other pool's threads get
only part of a core. OpenBLAS's workers spin for a while after each product;
a convnet's im2col or pooling kernel, which comes right after one, then runs at
the speed of one core.

The policy, applied at ``import tinynet`` and when the CPU's kernel table is
built (its first tensor):

* **One pool** (:func:`share_pool_with_blas`): where NumPy's BLAS is an
  OpenBLAS that lets its caller run its threads (0.3.27 and later, as NumPy's
  wheels ship), its work runs on Numba's workers (``blas_pool.py``).
  Those workers spin for a while when idle (``GOMP_SPINCOUNT``
  :data:`SPIN_COUNT`, about what OpenBLAS's own did), since nothing else wants
  their core: the next product or kernel starts at once.
* Every **other** OpenMP runtime loaded later in the process (PyTorch's, if it
  is imported after tinynet) makes its idle workers sleep at once
  (``OMP_WAIT_POLICY=PASSIVE``), so that it does not take tinynet's cores.
  Where the pool cannot be shared (another BLAS, an older OpenBLAS, Numba's
  ``workqueue`` layer), Numba's own workers sleep at once too, as before.
* Both libraries keep one thread per core; :func:`set_num_threads` changes both.
  While other processes keep some of the cores busy, fewer (load.py).

The user's own settings win: an ``OMP_WAIT_POLICY`` or ``GOMP_SPINCOUNT``
already in the environment is left as it is, and so are ``OMP_NUM_THREADS``,
``OPENBLAS_NUM_THREADS``, ``MKL_NUM_THREADS`` and ``NUMBA_NUM_THREADS``, which
the libraries themselves read; :func:`get_num_threads` reports them. OpenBLAS
keeps its own threads whenever it would have more than Numba started
(``NUMBA_NUM_THREADS``): the pieces of one product wait for each other, so
each needs a thread. ``TINYNET_SHARE_BLAS_POOL=0`` keeps the two pools apart.
``benchmarks/threads.py`` times a training step under each configuration.
"""
from __future__ import annotations

import functools
import os

__all__ = ["set_num_threads", "get_num_threads", "apply_wait_policy", "share_cores",
           "share_pool_with_blas", "start_numba_pool", "SPIN_COUNT"]

WAIT_POLICY_VARIABLE = "OMP_WAIT_POLICY"
THREAD_COUNT_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                          "NUMBA_NUM_THREADS")

SHARE_POOL_VARIABLE = "TINYNET_SHARE_BLAS_POOL"     # "0": OpenBLAS keeps its own threads
SPIN_COUNT_VARIABLE = "GOMP_SPINCOUNT"
SPIN_COUNT = "3000000"
"""How long the shared pool's idle workers spin before they sleep (GNU OpenMP's
``GOMP_SPINCOUNT``, in rounds of its wait loop)."""

_num_threads = None      # set by set_num_threads; None: the libraries' own defaults
_adapted = None          # fewer threads while other processes take cores (load.py)
_policy_is_ours = False  # whether OMP_WAIT_POLICY=PASSIVE came from apply_wait_policy
_blas_setter = None      # OpenBLAS's callback setter, once the pool is shared
_pool_checked = False


def apply_wait_policy() -> None:
    """Make idle OpenMP workers sleep, unless the user chose a policy."""
    global _policy_is_ours
    if WAIT_POLICY_VARIABLE not in os.environ:
        os.environ[WAIT_POLICY_VARIABLE] = "PASSIVE"
        _policy_is_ours = True


def _launch_numba_pool(spin: bool):
    """Start Numba's workers, if they have not started, with idle workers that
    spin for :data:`SPIN_COUNT` (``spin``, unless the user chose a policy), and
    leave the environment as it was; return Numba's threading layer."""
    import numba
    try:
        return numba.threading_layer()
    except ValueError:                  # not started yet
        pass
    saved = {name: os.environ.get(name) for name in (WAIT_POLICY_VARIABLE,
                                                      SPIN_COUNT_VARIABLE)}
    if spin and _policy_is_ours:
        del os.environ[WAIT_POLICY_VARIABLE]
        os.environ.setdefault(SPIN_COUNT_VARIABLE, SPIN_COUNT)
    try:
        numba.get_num_threads()         # loads the threading layer and starts it
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    return numba.threading_layer()


_SETTER_NAMES = ("openblas_set_threads_callback_function",
                 "scipy_openblas_set_threads_callback_function64_",
                 "scipy_openblas_set_threads_callback_function")


@functools.cache
def _openblas_setter():
    """The ``set_threads_callback_function`` of the OpenBLAS NumPy uses, or None
    (another BLAS, an OpenBLAS older than 0.3.27, or ``TINYNET_SHARE_BLAS_POOL=0``)."""
    import ctypes

    from threadpoolctl import threadpool_info
    if os.environ.get(SHARE_POOL_VARIABLE) == "0":
        return None
    for library in threadpool_info():
        if library.get("internal_api") != "openblas":
            continue
        try:
            loaded = ctypes.CDLL(library["filepath"])
        except OSError:
            return None
        for name in _SETTER_NAMES:
            setter = getattr(loaded, name, None)
            if setter is not None:
                setter.argtypes, setter.restype = [ctypes.c_void_p], None
                return setter
    return None


def _blas_fits_numba() -> bool:
    import numba
    from threadpoolctl import threadpool_info
    counts = [library["num_threads"] for library in threadpool_info()
              if library.get("internal_api") == "openblas"]
    return bool(counts) and max(counts) <= numba.config.NUMBA_NUM_THREADS


def start_numba_pool() -> str:
    """Start Numba's workers, if they have not started, spinning when idle where
    OpenBLAS will share them (see the module docstring); return Numba's
    threading layer."""
    return _launch_numba_pool(spin=_openblas_setter() is not None and _blas_fits_numba())


def share_pool_with_blas() -> bool:
    """Run OpenBLAS's threads' work on Numba's pool (see the module docstring):
    once per process, when the CPU's kernel table is built. Return
    whether the pool is shared."""
    global _blas_setter, _pool_checked
    if _pool_checked:
        return _blas_setter is not None
    _pool_checked = True
    setter = _openblas_setter()
    layer = start_numba_pool()
    if setter is None or layer not in ("omp", "tbb"):    # workqueue: one launch at a time
        return False
    _blas_setter = setter
    os.register_at_fork(after_in_child=_forget_pool)
    _rejoin()
    return True


def _forget_pool() -> None:
    """In a forked child: Numba's workers did not come along, OpenBLAS's own restart."""
    global _blas_setter
    from . import blas_pool
    _blas_setter = None
    blas_pool.leave()


def _rejoin() -> None:
    """Share the pool if OpenBLAS's thread count fits in Numba's, else leave it."""
    from . import blas_pool
    if _blas_setter is not None and _blas_fits_numba():
        blas_pool.join(_blas_setter)
    else:
        blas_pool.leave()


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


def chosen_count():
    """The thread count the user chose (:func:`set_num_threads`, or the environment),
    else None."""
    return _num_threads if _num_threads is not None else _count_from_environment()


def get_num_threads() -> int:
    """The number of threads tinynet's computations use (as ``torch.get_num_threads``):
    the last :func:`set_num_threads`, else the user's environment, else one per core
    (fewer while other processes keep cores busy: load.py)."""
    return chosen_count() or _adapted or _cores()


def adapt_thread_count(n: int) -> None:
    """Use ``n`` threads, one per core that other processes leave free (load.py);
    all of them again once ``n`` is every core."""
    global _adapted
    n = min(n, _cores())
    if n == (_adapted or _cores()):
        return
    _use_threads(n)
    _adapted = None if n == _cores() else n


def set_num_threads(n: int) -> None:
    """Use ``n`` threads for the BLAS library (through threadpoolctl) and for
    Numba's kernels, as ``torch.set_num_threads``.

    Numba cannot use more threads than it started with (``NUMBA_NUM_THREADS``,
    one per core by default): a larger ``n`` gives BLAS ``n`` threads and
    Numba all of its own. Numba's setting holds for the calling Python thread.
    """
    from ..hyperparameters import check_count
    global _num_threads
    n = check_count("set_num_threads", "n", n)
    _use_threads(n)
    _num_threads = n


def _use_threads(n: int) -> None:
    """``n`` threads for the BLAS and for Numba's kernels (see set_num_threads)."""
    import numba
    from threadpoolctl import threadpool_limits

    if _blas_setter is not None and n > numba.config.NUMBA_NUM_THREADS:
        from . import blas_pool
        blas_pool.leave()           # before OpenBLAS has more threads than Numba
    threadpool_limits(limits=n, user_api="blas")
    numba.set_num_threads(min(n, numba.config.NUMBA_NUM_THREADS))
    if _blas_setter is not None:
        _rejoin()


def share_cores(processes: int) -> None:
    """Give each of ``processes`` processes on this machine its share of the cores
    (at least one thread), unless the user chose a count (environment or
    :func:`set_num_threads`). MPI ranks on one machine call it: each rank with a
    thread per core would run ``processes`` times as many threads as cores.
    ``torchrun`` likewise starts its workers with one thread each."""
    if _num_threads is None and _count_from_environment() is None and processes > 1:
        set_num_threads(max(1, _cores() // processes))
