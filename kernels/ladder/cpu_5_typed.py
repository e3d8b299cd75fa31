"""CPU rung 5: typed drivers, which check their arguments themselves.

The idea this rung adds to rung 4 (cpu_4_recycled): less fixed cost per call.
At the rows the paper's models run (a batch of 4 to 128 rows of 1000), a
forward and backward are short, and part of their time goes to checking the
arguments in Python before the compiled code starts (_arguments.forward_ready,
backward_ready) and to allocating the scratch sums of dgain and dbias there.

Here the drivers are compiled for exactly the argument types they take
(C-contiguous float32 or float64 arrays, the statistics float64), so Numba's
dispatcher, which matches the types of the arguments anyway, is the type
check; the drivers check the shapes (and eps) themselves, in compiled code,
and allocate their scratch sums there. Arguments are checked in Python only
when a driver refuses them (_run). The loops are rung 3's and the outputs
rung 4's; there is no RMSNorm of its own (the ladder gives rung 4's). Faster
than rung 4 at (4, 1000), (64, 128) and (64, 512) (benchmarks/kernel_ladder.py).
(Numba's on-disk cache checks only this file for the drivers: after editing
cpu_3_pipelined.py, touch this one.)
"""
from __future__ import annotations

import numba
import numpy as np
from numba import njit, prange, types

from .._common import FLOAT_DTYPES, PARALLEL_MIN_ELEMENTS
from .._compile import compiled_per_dtype
from ._arguments import backward_arguments, forward_arguments
from ._cpu_pipelined_loops import _EXACT
from ._cpu_rung import add_chunks, chunk_count
from ._recycling import empty_like
from .cpu_1_textbook import regrade_overflowed_rows, renormalize_overflowed_rows
from .cpu_3_pipelined import backward_chunk, forward_chunk

__all__ = ["layer_norm_forward", "layer_norm_backward"]


# The drivers' types: inputs are typed read-only, so that read-only arrays are
# taken too (Numba types them apart; a writable array converts). Each dtype is
# compiled when a driver is first called with it (_compile), into Numba's cache.

def _input(dtype, ndim):
    return types.Array(dtype, ndim, "C", readonly=True)


def _output(dtype, ndim):
    return types.Array(dtype, ndim, "C")


def _forward_signature(dtype):
    """boolean(x, gain, bias, eps, y, mean, rstd) for x of ``dtype``."""
    t = numba.from_dtype(dtype)
    return types.boolean(_input(t, 2), _input(t, 1), _input(t, 1), types.float64,
                         _output(t, 2), _output(types.float64, 1), _output(types.float64, 1))


def _backward_signature(dtype):
    """boolean(dy, x, mean, rstd, gain, dx, gain_grads) for x of ``dtype``."""
    t = numba.from_dtype(dtype)
    return types.boolean(_input(t, 2), _input(t, 2), _input(types.float64, 1),
                         _input(types.float64, 1), _input(t, 1), _output(t, 2), _output(t, 2))


def _driver(signature, **options):
    """Decorator: a driver compiled for ``signature(dtype)``, per float dtype."""
    return compiled_per_dtype(signature, FLOAT_DTYPES, "the CPU LayerNorm kernels",
                              **_EXACT, cache=True, **options)


@njit(**_EXACT)
def _forward_arguments_fit(x, gain, bias, eps, y, mean, rstd):
    """Whether the arrays' shapes fit together and eps ≥ 0 (not NaN)."""
    rows, H = x.shape
    return (H > 0 and gain.shape[0] == H and bias.shape[0] == H and y.shape == x.shape
            and mean.shape[0] == rows and rstd.shape[0] == rows and eps >= 0)


@njit(**_EXACT)
def _backward_shapes_fit(dy, x, mean, rstd, gain, dx, gain_grads):
    rows, H = x.shape
    return (H > 0 and dy.shape == x.shape and mean.shape[0] == rows
            and rstd.shape[0] == rows and gain.shape[0] == H and dx.shape == x.shape
            and gain_grads.shape == (2, H))


# The drivers: False, and nothing written, if the arguments don't fit.

@_driver(_forward_signature)
def _forward_serial(x, gain, bias, eps, y, mean, rstd):
    if not _forward_arguments_fit(x, gain, bias, eps, y, mean, rstd):
        return False
    chunks = chunk_count(*x.shape)
    for chunk in range(chunks):
        forward_chunk(chunk, chunks, x, gain, bias, eps, True, y, mean, rstd)
    renormalize_overflowed_rows(x, gain, bias, eps, True, y, mean, rstd)
    return True


@_driver(_forward_signature, parallel=True)
def _forward_parallel(x, gain, bias, eps, y, mean, rstd):
    if not _forward_arguments_fit(x, gain, bias, eps, y, mean, rstd):
        return False
    chunks = chunk_count(*x.shape)
    for chunk in prange(chunks):
        forward_chunk(chunk, chunks, x, gain, bias, eps, True, y, mean, rstd)
    renormalize_overflowed_rows(x, gain, bias, eps, True, y, mean, rstd)
    return True


@_driver(_backward_signature)
def _backward_serial(dy, x, mean, rstd, gain, dx, gain_grads):
    if not _backward_shapes_fit(dy, x, mean, rstd, gain, dx, gain_grads):
        return False
    parts = np.zeros((chunk_count(*x.shape), 2, x.shape[1]))
    for chunk in range(parts.shape[0]):
        backward_chunk(chunk, dy, x, mean, rstd, gain, True, dx, parts)
    regrade_overflowed_rows(dy, x, mean, rstd, gain, True, dx)
    add_chunks(parts, gain_grads)
    return True


@_driver(_backward_signature, parallel=True)
def _backward_parallel(dy, x, mean, rstd, gain, dx, gain_grads):
    if not _backward_shapes_fit(dy, x, mean, rstd, gain, dx, gain_grads):
        return False
    parts = np.zeros((chunk_count(*x.shape), 2, x.shape[1]))
    for chunk in prange(parts.shape[0]):
        backward_chunk(chunk, dy, x, mean, rstd, gain, True, dx, parts)
    regrade_overflowed_rows(dy, x, mean, rstd, gain, True, dx)
    add_chunks(parts, gain_grads)
    return True


def _use_parallel(size: int) -> bool:
    """Whether to run the parallel driver: by size alone, not by thread count.

    The two drivers are compiled separately, and LLVM may vectorize their sums
    differently (they agree to an ulp, not always to the bit). Deciding by size,
    with chunks that depend on the shape alone (chunk_count), makes a result
    the same bits on one thread and on many.
    """
    return size >= PARALLEL_MIN_ELEMENTS


def layer_norm_forward(x, gain, bias, eps):
    """Normalize each row of ``x`` (rows, H); return ``(y, mean, rstd)``.

    ``gain``/``bias`` are (H,) arrays of x's dtype or None; a missing one acts
    as 1 (resp. 0), which is exact. ``mean`` and ``rstd`` are float64.
    """
    outputs = _forward(x, gain, bias, eps)
    if outputs is None:
        # Refused (_run): forward_arguments raises an error that names the
        # problem, or makes the arguments acceptable.
        outputs = _forward(*forward_arguments(x, gain, bias, eps))
        assert outputs is not None, "the forward refused checked arguments"
    return outputs


def layer_norm_backward(dy, x, mean, rstd, gain):
    """Gradients of :func:`layer_norm_forward`: ``(dx, dgain, dbias)``.

    ``dgain`` and ``dbias`` have gain's dtype, and are None when gain is None.
    """
    gradients = _backward(dy, x, mean, rstd, gain)
    if gradients is None:
        dy, x, mean, rstd, checked_gain, affine = backward_arguments(dy, x, mean, rstd, gain)
        gradients = _backward(dy, x, mean, rstd, checked_gain)
        assert gradients is not None, "the backward refused checked arguments"
        if not affine:
            gradients = (gradients[0], None, None)
    return gradients


def _forward(x, gain, bias, eps):
    """``(y, mean, rstd)`` from a driver, or None if it refused the arguments."""
    if not _is_c_matrix(x) or gain is None or bias is None:
        return None
    rows = len(x)
    y, mean, rstd = empty_like(x), np.empty(rows), np.empty(rows)
    driver = _forward_parallel if _use_parallel(x.size) else _forward_serial
    return (y, mean, rstd) if _run(driver, x, gain, bias, eps, y, mean, rstd) else None


def _backward(dy, x, mean, rstd, gain):
    """``(dx, dgain, dbias)`` from a driver, or None if it refused the arguments."""
    if not (_is_c_matrix(dy) and _is_c_matrix(x)) or gain is None:
        return None
    dx, gain_grads = empty_like(x), np.empty((2, x.shape[1]), x.dtype)
    driver = _backward_parallel if _use_parallel(x.size) else _backward_serial
    ran = _run(driver, dy, x, mean, rstd, gain, dx, gain_grads)
    return (dx, gain_grads[0], gain_grads[1]) if ran else None


def _is_c_matrix(a) -> bool:
    return type(a) is np.ndarray and a.ndim == 2 and a.flags.c_contiguous


def _run(driver, *arguments) -> bool:
    """Run a driver on arguments nobody has checked; False if it refused them.

    The drivers take only the types they were compiled for, and only arrays
    whose shapes fit together, with eps ≥ 0: anything else is refused before a
    driver has written anything. But a refusal by Numba's dispatcher costs far
    more than a check (it builds a message that explains one), so _forward and
    _backward look for the likely ones first: a missing gain or bias, and x or
    dy a view that is not C-contiguous.
    """
    try:
        return driver(*arguments)
    except TypeError:
        return False
