"""What the CUDA rungs 1 and 2 share: the launch, an unfused product, the
column sums of dgain and dbias, and the public functions around a rung's kernels.

A rung has two kernels, launched with ``(blocks, threads)`` from its
``forward_grid(rows)`` / ``backward_grid(rows)``::

    forward(x, gain, bias, eps, centered, y, mean, rstd)
    backward(dy, x, mean, rstd, gain, centered, dx)       # dx only

``centered`` is False for RMSNorm (no shift, μ = 0, no mean(g) term). dgain and
dbias are sums over *rows*: :func:`_column_sums` gives each column to one
thread, which walks down it in row order. No atomics, so the result is the
same bits on every run. Under Numba's CUDA simulator NumPy arrays go in and
come out; on a GPU, CuPy arrays, with no host copies.
"""
from __future__ import annotations

import math
from typing import Callable, NamedTuple

import numba
import numpy as np
from numba import cuda

from tinynet.backend import get_array_module

__all__ = ["SIMULATED", "Kernels", "launch", "product", "reciprocal_std", "run_forward",
           "run_backward"]

SIMULATED = bool(numba.config.ENABLE_CUDASIM)


def _check_numba_cuda_compiles():
    """Raise ImportError, naming the versions, where numba-cuda cannot compile.

    numba-cuda 0.30.4 (the newest at the time of writing) registers an
    overload for ``np.row_stack``, which NumPy 2.5 removed: under NumPy 2.5
    its first kernel compile fails with an AttributeError from deep inside.
    Its first compile imports the module that does this; so do we, up front.
    """
    if numba.config.ENABLE_CUDASIM:
        return
    try:
        from numba.cuda.np import arrayobj  # noqa: F401
    except AttributeError as error:
        from importlib.metadata import version
        raise ImportError(
            f"numba-cuda {version('numba-cuda')} cannot compile CUDA kernels with NumPy "
            f"{np.__version__} ({error}); install numpy<2.5 or a numba-cuda that supports "
            f"this NumPy") from error


_check_numba_cuda_compiles()
if SIMULATED:                      # warp shuffles for the simulator (rung 2 needs them)
    from ._cuda_sim_shuffle import install as _install_simulated_shuffles
    _install_simulated_shuffles()

COLUMN_THREADS = 16 if SIMULATED else 256


def launch(kernel, blocks, threads, *args):
    """Launch ``kernel``; CuPy arrays go in as device views, on CuPy's current
    stream (so that no wait for the host is needed to keep the order)."""
    if not any(hasattr(a, "__cuda_array_interface__") for a in args):
        kernel[blocks, threads](*args)          # NumPy arrays: the simulator
        return
    import cupy
    stream_ptr = cupy.cuda.get_current_stream().ptr
    stream = cuda.external_stream(stream_ptr) if stream_ptr else cuda.default_stream()
    views = [cuda.as_cuda_array(a, sync=False) if hasattr(a, "__cuda_array_interface__")
             else a for a in args]
    kernel[blocks, threads, stream](*views)


def product(a, b):
    """a·b, rounded, never fused into a following add. A GPU compiler fuses a
    multiply and an add into one fma wherever it can, which skips the product's
    rounding: then g − mean(g) is not exactly 0 where it should be (H = 1)."""
    return a * b


if not SIMULATED:
    from numba.cuda import libdevice
    from numba.cuda.extending import overload

    @overload(product, target="cuda")
    def _product_on_gpu(a, b):
        if a == numba.float32:
            return lambda a, b: libdevice.fmul_rn(a, b)
        return lambda a, b: libdevice.dmul_rn(a, b)


@cuda.jit(device=True)
def reciprocal_std(squares, H, eps):
    """1/σ = 1/sqrt(Σ (x − μ)²/H + ε) from a row's float64 sum of squares; NaN where
    that sum overflowed (a float64 row past about 10¹⁵⁴), not the 0 of 1/sqrt(∞),
    which would turn the row into β (reference.py)."""
    if math.isinf(squares):
        return math.nan
    return 1.0 / math.sqrt(squares / H + eps)


@cuda.jit
def _column_sums(dy, x, mean, rstd, dgain, dbias):
    """dgain[j] = Σ_r dy[r, j]·x̂[r, j] and dbias[j] = Σ_r dy[r, j], in float64,
    one thread per column, rows in order (neighbouring threads read neighbouring
    columns: each row is read in whole memory transactions)."""
    j = cuda.grid(1)
    if j >= x.shape[1]:
        return
    gain_sum = bias_sum = 0.0
    for r in range(x.shape[0]):
        gain_sum += dy[r, j] * ((x[r, j] - mean[r]) * rstd[r])
        bias_sum += dy[r, j]
    dgain[j] = gain_sum
    dbias[j] = bias_sum


class Kernels(NamedTuple):
    """A rung's two CUDA kernels and their grids: ``forward_grid(rows)`` and
    ``backward_grid(rows)`` give (blocks, threads per block)."""
    forward: object
    backward: object
    forward_grid: Callable
    backward_grid: Callable


def run_forward(kernels, x, gain, bias, eps, centered):
    """``(y, mean, rstd)`` of checked arguments by a rung's :class:`Kernels`."""
    xp = get_array_module(x)
    rows = x.shape[0]
    y, mean, rstd = xp.empty_like(x), xp.empty(rows), xp.empty(rows)
    if rows:
        launch(kernels.forward, *kernels.forward_grid(rows), x, gain, bias, eps, centered,
               y, mean, rstd)
    return y, mean, rstd


def run_backward(kernels, dy, x, mean, rstd, gain, centered):
    """``(dx, dgain, dbias)`` of checked arguments by a rung's :class:`Kernels`; the
    gain's and bias's gradients by one more kernel, a thread per column."""
    xp = get_array_module(x)
    rows, H = x.shape
    dx, dgain, dbias = xp.empty_like(x), xp.zeros(H, x.dtype), xp.zeros(H, x.dtype)
    if rows:
        launch(kernels.backward, *kernels.backward_grid(rows), dy, x, mean, rstd, gain,
               centered, dx)
        launch(_column_sums, math.ceil(H / COLUMN_THREADS), COLUMN_THREADS,
               dy, x, mean, rstd, dgain, dbias)
    return dx, dgain, dbias
