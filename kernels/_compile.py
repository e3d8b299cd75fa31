"""Kernels compiled for a dtype when first called with it, saying so if it is slow.

Numba compiles a kernel when it is first called with new argument types, or,
given signatures, all of them when it is defined: for four drivers and both
float dtypes that is a long wait before the first LayerNorm of a fresh
install. A :class:`CompiledPerDtype` entry point compiles only the
signature of the dtype it is called with, when it is first called with it.
Both keep Numba's on-disk cache, so that later processes load them instead
of compiling. A compile that takes longer than NOTICE_AFTER_S says once on
stderr what is being compiled (:func:`notice_if_slow`, :func:`first_calls_noticed`).
"""
from __future__ import annotations

import contextlib
import functools
import sys
import threading

import numba
import numpy as np

__all__ = ["CompiledPerDtype", "compiled_per_dtype", "first_calls_noticed", "notice_if_slow",
           "NOTICE_AFTER_S"]

NOTICE_AFTER_S = 1.5
_noticed = threading.Event()


def _notice(what: str) -> None:
    if not _noticed.is_set():
        _noticed.set()
        print(f"tinynet: compiling {what} with Numba; this happens once, later runs "
              "load them from Numba's cache", file=sys.stderr, flush=True)


@contextlib.contextmanager
def notice_if_slow(what: str):
    """Say once per process on stderr that ``what`` is being compiled, if the
    block takes longer than NOTICE_AFTER_S."""
    timer = threading.Timer(NOTICE_AFTER_S, _notice, (what,))
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()


def first_calls_noticed(what: str):
    """Decorator for a Numba dispatcher that compiles on its first call: that
    call, for each dtype of the first argument, runs under :func:`notice_if_slow`."""
    def decorate(dispatcher):
        seen = set()

        @functools.wraps(dispatcher.py_func)
        def call(first, *arguments):
            if first.dtype in seen:
                return dispatcher(first, *arguments)
            with notice_if_slow(what):
                result = dispatcher(first, *arguments)
            seen.add(first.dtype)
            return result
        call.dispatcher = dispatcher
        return call
    return decorate


class CompiledPerDtype:
    """``py_func`` compiled by ``numba.njit(signature(dtype), **options)`` for the
    dtype of its first argument, on the first call with that dtype.

    A first argument of a dtype with no signature raises the TypeError that
    Numba raises for arguments of the wrong type, so callers handle both alike.
    """

    def __init__(self, py_func, signature, dtypes, what: str, options: dict):
        self.py_func = py_func
        self.__name__ = py_func.__name__
        self.__doc__ = py_func.__doc__
        self._signature = signature
        self._dtypes = {np.dtype(d) for d in dtypes}
        self._what = what
        self._options = options
        self._dispatchers = {}
        self._lock = threading.Lock()

    def dispatcher(self, dtype):
        """The Numba dispatcher for ``dtype``, compiled (or loaded from the cache) now
        if this is its first use."""
        dispatcher = self._dispatchers.get(dtype)
        if dispatcher is None:
            if dtype not in self._dtypes:
                raise TypeError(f"No matching definition for {self.__name__} with a first "
                                f"argument of dtype {dtype}")
            with self._lock:
                dispatcher = self._dispatchers.get(dtype) or self._compile(dtype)
        return dispatcher

    def _compile(self, dtype):
        with notice_if_slow(self._what):
            dispatcher = numba.njit(self._signature(dtype), **self._options)(self.py_func)
        self._dispatchers[dtype] = dispatcher
        return dispatcher

    def __call__(self, first, *arguments):
        return self.dispatcher(first.dtype)(first, *arguments)


def compiled_per_dtype(signature, dtypes, what: str, **options):
    """Decorator: ``@compiled_per_dtype(signature_of_dtype, dtypes, "what", **njit_options)``."""
    def decorate(py_func):
        return CompiledPerDtype(py_func, signature, dtypes, what, options)
    return decorate
