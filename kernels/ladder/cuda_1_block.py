"""CUDA rung 1: one block per row, sums by a tree in shared memory.

The textbook GPU kernel (the shape of minitorch's ``cuda_ops.py`` reductions).
Rows are independent (Ba, Kiros & Hinton, 2016, Eqs. 3-4), so each row gets a
block of THREADS threads of its own. Thread t takes the columns t, t + THREADS,
t + 2·THREADS, ... (neighbouring threads read neighbouring addresses: whole
memory transactions), and each sum over the row is taken in two steps:

1. every thread adds up its own columns, in float64;
2. the block adds up its threads' sums by a tree in shared memory: thread t
   adds in the sum of thread t + THREADS/2, then t + THREADS/4, ... with a
   barrier (``syncthreads``) between the levels, until thread 0 holds the total.

The forward takes three such passes over the row (the mean of the row shifted
by x₀, the variance about it, then y), as CPU rung 1 does; the backward two
(Σ g and Σ g·x̂ with g = dy·gain, then dx). dgain and dbias, sums over rows,
come from a second kernel that walks down each column (_cuda_rung). RMSNorm is
the same code with the mean left out (``centered=False``).
"""
from __future__ import annotations

from numba import cuda, float64

from . import _arguments as checked
from ._cuda_rung import (
    SIMULATED,
    Kernels,
    product,
    reciprocal_std,
    run_backward,
    run_forward,
)

__all__ = ["layer_norm_forward", "layer_norm_backward", "rms_norm_forward",
           "rms_norm_backward"]

# A power of two. The simulator runs each thread as a Python thread: few of them.
THREADS = 16 if SIMULATED else 256


@cuda.jit(device=True)
def _block_sum(value, shared):
    """The sum of ``value`` over the block's threads, returned to every thread.
    Every thread of the block must call it."""
    t = cuda.threadIdx.x
    shared[t] = value
    cuda.syncthreads()
    step = THREADS // 2
    while step > 0:
        if t < step:
            shared[t] += shared[t + step]
        cuda.syncthreads()
        step //= 2
    total = shared[0]
    cuda.syncthreads()            # everyone has read it before shared is reused
    return total


@cuda.jit
def _forward(x, gain, bias, eps, centered, y, mean, rstd):
    r, t = cuda.blockIdx.x, cuda.threadIdx.x
    H = x.shape[1]
    shared = cuda.shared.array(THREADS, float64)
    shift = float64(x[r, 0]) if centered else 0.0          # x₀
    offset = 0.0                                           # μ − x₀
    if centered:
        total = 0.0
        for j in range(t, H, THREADS):
            total += x[r, j] - shift
        offset = _block_sum(total, shared) / H
    squares = 0.0
    for j in range(t, H, THREADS):
        value = (x[r, j] - shift) - offset
        squares += value * value
    scale = reciprocal_std(_block_sum(squares, shared), H, eps)
    if t == 0:
        mean[r] = shift + offset
        rstd[r] = scale
    for j in range(t, H, THREADS):
        y[r, j] = ((x[r, j] - shift) - offset) * scale * gain[j] + bias[j]


@cuda.jit
def _backward(dy, x, mean, rstd, gain, centered, dx):
    r, t = cuda.blockIdx.x, cuda.threadIdx.x
    H = x.shape[1]
    shared = cuda.shared.array(THREADS, float64)
    mu, scale = mean[r], rstd[r]
    sum_g = sum_g_x_hat = 0.0
    for j in range(t, H, THREADS):
        g = product(float64(dy[r, j]), float64(gain[j]))
        sum_g += g
        sum_g_x_hat += g * ((x[r, j] - mu) * scale)
    mean_g = _block_sum(sum_g, shared) / H if centered else 0.0
    mean_g_x_hat = _block_sum(sum_g_x_hat, shared) / H
    for j in range(t, H, THREADS):
        g = product(float64(dy[r, j]), float64(gain[j]))
        dx[r, j] = scale * (g - mean_g - ((x[r, j] - mu) * scale) * mean_g_x_hat)


def _grid(rows):
    return rows, THREADS


KERNELS = Kernels(_forward, _backward, _grid, _grid)


def layer_norm_forward(x, gain, bias, eps):
    """``(y, mean, rstd)`` of each row of x (rows, H), as reference.layer_norm_forward."""
    return checked.layer_norm_forward(run_forward, KERNELS, x, gain, bias, eps)


def layer_norm_backward(dy, x, mean, rstd, gain):
    """``(dx, dgain, dbias)``, as reference.layer_norm_backward."""
    return checked.layer_norm_backward(run_backward, KERNELS, dy, x, mean, rstd, gain)


def rms_norm_forward(x, gain, eps):
    """``(y, rstd)``, as reference.rms_norm_forward."""
    return checked.rms_norm_forward(run_forward, KERNELS, x, gain, eps)


def rms_norm_backward(dy, x, rstd, gain):
    """``(dx, dgain)``, as reference.rms_norm_backward."""
    return checked.rms_norm_backward(run_backward, KERNELS, dy, x, rstd, gain)
