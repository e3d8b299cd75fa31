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

import numba
import numpy as np
from numba import cuda

from tinynet.backend import get_array_module

from ._arguments import public_kernels

__all__ = ["SIMULATED", "launch", "product", "reciprocal_std", "kernel_functions"]

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
    which would turn the row into β (kernels/reference.py)."""
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


def kernel_functions(forward, backward, forward_grid, backward_grid):
    """The four public kernels of a rung: ``layer_norm_forward,
    layer_norm_backward, rms_norm_forward, rms_norm_backward`` (the calling
    convention of kernels/reference.py), around its two kernels."""

    def run_forward(x, gain, bias, eps, centered):
        xp = get_array_module(x)
        rows = x.shape[0]
        y, mean, rstd = xp.empty_like(x), xp.empty(rows), xp.empty(rows)
        if rows:
            launch(forward, *forward_grid(rows), x, gain, bias, eps, centered, y, mean, rstd)
        return y, mean, rstd

    def run_backward(dy, x, mean, rstd, gain, centered):
        xp = get_array_module(x)
        rows, H = x.shape
        dx, dgain, dbias = xp.empty_like(x), xp.zeros(H, x.dtype), xp.zeros(H, x.dtype)
        if rows:
            launch(backward, *backward_grid(rows), dy, x, mean, rstd, gain, centered, dx)
            launch(_column_sums, math.ceil(H / COLUMN_THREADS), COLUMN_THREADS,
                   dy, x, mean, rstd, dgain, dbias)
        return dx, dgain, dbias

    return public_kernels(run_forward, run_backward)
