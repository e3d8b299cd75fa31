"""One thread pool for the CPU: OpenBLAS's matrix products run on Numba's workers.

Two pools of one thread per core used to share the cores: OpenBLAS's, whose
workers spin for a while after each product so that the next one starts at
once, and Numba's, which runs the compiled kernels (im2col, pooling, the
norms). A kernel that came right after a product found the second core taken
by a spinning BLAS worker and ran at the speed of one. OpenBLAS (0.3.27 and
later) lets its caller run its work instead: given a callback, it hands every
multithreaded call over as ``jobs`` pieces of work, ``dojob(i, jobdata + i ·
size, data)`` for i < jobs, to be run *at the same time* (the pieces of a
matrix product wait for each other's packed panels). :func:`run_blas_jobs` is
that callback: a ``prange`` over the pieces, one per Numba thread. The product
is the same computation, piece for piece, so its bits do not change.

:func:`join` installs it through OpenBLAS's setter; ``threads.py`` says when
(:func:`tinynet.runtime.threads.share_pool_with_blas`). Importing this module compiles
the callback (or loads it from Numba's cache), which needs Numba's threading
layer started first.
"""
from __future__ import annotations

import ctypes

import numpy as np
from llvmlite import ir
from numba import cfunc, njit, prange, types
from numba.core import cgutils
from numba.extending import intrinsic

from .threads import start_numba_pool

__all__ = ["join", "leave", "joined", "run_blas_jobs"]

start_numba_pool()          # the callback, compiled or loaded below, calls into the pool


@intrinsic
def _call_job(typingctx, dojob, position, element, data):
    """``dojob(position, element, data)``: a call through OpenBLAS's function
    pointer ``void dojob(int, void *, int)``, given as integers."""
    signature = types.void(types.int64, types.int32, types.int64, types.int32)

    def codegen(context, builder, signature, arguments):
        dojob, position, element, data = arguments
        int32, pointer = ir.IntType(32), ir.IntType(8).as_pointer()
        job_type = ir.FunctionType(ir.VoidType(), [int32, pointer, int32])
        job = builder.inttoptr(dojob, job_type.as_pointer())
        builder.call(job, [position, builder.inttoptr(element, pointer), data])
        return context.get_dummy_value()
    return signature, codegen


@njit(parallel=True, cache=True)
def _run_in_parallel(dojob, jobs, size, jobdata, data):
    for i in prange(jobs):          # with as many threads as jobs: one job each
        _call_job(dojob, np.int32(i), jobdata + i * size, data)


@intrinsic
def _threads(typingctx):
    """This Python thread's Numba thread count, ``numba.get_num_threads()`` as a
    call into the threading layer (the Python function cannot be cached)."""
    def codegen(context, builder, signature, arguments):
        function = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.IntType(32), []), "get_num_threads")
        return builder.call(function, [])
    return types.int32(), codegen


@intrinsic
def _set_threads(typingctx, count):
    """``numba.set_num_threads(count)``, as :func:`_threads`."""
    def codegen(context, builder, signature, arguments):
        function = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VoidType(), [ir.IntType(32)]),
            "set_num_threads")
        builder.call(function, [arguments[0]])
        return context.get_dummy_value()
    return types.void(types.int32), codegen


@njit(cache=True)
def _run_jobs(dojob, jobs, size, jobdata, data):
    threads = _threads()
    if jobs > threads:                         # the jobs wait for each other: all must run
        _set_threads(np.int32(jobs))
    _run_in_parallel(dojob, jobs, size, jobdata, data)
    _set_threads(threads)


@cfunc(types.void(types.int32, types.int64, types.int32, types.uint64, types.int64,
                  types.int32), cache=True)
def run_blas_jobs(sync, dojob, jobs, size, jobdata, data):
    """OpenBLAS's ``openblas_threads_callback``: run its ``jobs`` pieces at once."""
    _run_jobs(dojob, np.int64(jobs), np.int64(size), jobdata, data)


_installed = None                    # the setter the callback was installed through


def join(setter) -> None:
    """Run OpenBLAS's multithreaded calls on Numba's pool from now on.

    The caller makes sure that OpenBLAS never asks for more threads than
    Numba started (``numba.config.NUMBA_NUM_THREADS``): pieces that wait for
    each other cannot run one after another.
    """
    global _installed
    setter(ctypes.c_void_p(run_blas_jobs.address))
    _installed = setter


def leave() -> None:
    """Give OpenBLAS its own threads back (a forked child, more BLAS threads than Numba's)."""
    global _installed
    if _installed is not None:
        _installed(None)
        _installed = None


def joined() -> bool:
    """Whether OpenBLAS runs its work on Numba's pool now."""
    return _installed is not None
