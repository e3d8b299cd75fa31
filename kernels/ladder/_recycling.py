"""Recycled memory for the CPU kernels' large outputs (a tiny caching allocator).

Why: on Linux, malloc serves a large block with pages just mapped from the
operating system and unmaps them on free, so each array of that size pays a
page fault per page, and the operating system's zeroing of it, before the first
write. A LayerNorm of 4096 x 1024 or 32768 x 256 float32 numbers writes outputs
of 16 or 32 MiB: there those faults cost about as much as the normalization
itself (CPU rung 4, ``cpu_4_recycled``, against rung 3 in
``benchmarks/kernel_ladder.py``). PyTorch's CUDA caching allocator and CuPy's
memory pool exist for the same reason on GPUs.

How: :func:`empty` lends the memory of a pooled buffer as a NumPy array whose
``base`` is a :class:`_Loan`. NumPy keeps the base alive for as long as any
array views the memory; when the last one dies, the loan's ``__del__`` puts the
buffer back in the pool. So a buffer is handed out again only once nothing can
see it any more. The pool keeps at most ``MAX_POOLED_BYTES`` of idle buffers;
arrays below ``MIN_BYTES`` come straight from NumPy (malloc reuses those well).
"""
from __future__ import annotations

import math
import sys
import threading

import numpy as np

MIN_BYTES = 1 << 20
MAX_POOLED_BYTES = 1 << 28

_idle: dict[int, list[np.ndarray]] = {}     # nbytes -> idle uint8 buffers
_idle_bytes = 0
# A loan may die on any thread, and also on this one while it holds the lock
# (a garbage collection run by an allocation below): hence re-entrant.
_lock = threading.RLock()


class _Loan:
    """The owner of a lent buffer: exposes it to NumPy, returns it when dropped."""

    __slots__ = ("buffer", "__array_interface__")

    def __init__(self, buffer: np.ndarray, shape: tuple, dtype: np.dtype):
        self.buffer = buffer
        self.__array_interface__ = {"data": (buffer.ctypes.data, False), "shape": shape,
                                    "typestr": dtype.str, "version": 3}

    def __del__(self, _finalizing=sys.is_finalizing):
        # A loan that outlives the interpreter's shutdown (say, an array some
        # cache still held) finds this module already emptied: nothing to give back to.
        if not _finalizing():
            _give_back(self.buffer)


def _take(nbytes: int) -> np.ndarray:
    global _idle_bytes
    with _lock:
        buffers = _idle.get(nbytes)
        if buffers:
            _idle_bytes -= nbytes
            return buffers.pop()
    return np.empty(nbytes, np.uint8)


def _give_back(buffer: np.ndarray) -> None:
    global _idle_bytes
    with _lock:
        if _idle_bytes + buffer.nbytes <= MAX_POOLED_BYTES:
            _idle.setdefault(buffer.nbytes, []).append(buffer)
            _idle_bytes += buffer.nbytes


def empty(shape: tuple, dtype) -> np.ndarray:
    """Like ``np.empty(shape, dtype)`` (C order), from recycled memory when large."""
    dtype = np.dtype(dtype)
    nbytes = math.prod(shape) * dtype.itemsize
    if nbytes < MIN_BYTES:
        return np.empty(shape, dtype)
    return np.asarray(_Loan(_take(nbytes), tuple(shape), dtype))


def empty_like(a: np.ndarray) -> np.ndarray:
    """An uninitialized C-order array of ``a``'s shape and dtype; like
    :func:`empty`, with a quicker path for small arrays (tiny batches are common)."""
    if a.nbytes < MIN_BYTES:
        return np.empty(a.shape, a.dtype)
    return empty(a.shape, a.dtype)


def idle_bytes() -> int:
    """How many bytes of idle buffers the pool holds (for tests and curiosity)."""
    return _idle_bytes
