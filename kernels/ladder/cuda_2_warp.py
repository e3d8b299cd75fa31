"""CUDA rung 2: one warp per row, sums by warp shuffles.

The idea this rung adds to rung 1: the 32 threads of a *warp* run in lockstep
and can read each other's registers (``shfl_xor_sync``), so a warp can add up
its threads' sums without shared memory and without a barrier. Rung 1's tree
takes log2(THREADS) rounds, each a write to shared memory, a barrier and a read;
here the butterfly below takes 5 rounds of one instruction each. A block holds
several warps, each on a row of its own: no thread waits for another warp.

For the short rows of the paper's models (H ≤ 1000) 32 threads are plenty;
a long row (H = 8192) has only 32 threads to read it, where rung 1 has a
block (benchmarks/kernel_ladder.py). Everything else is rung 1's.
"""
from __future__ import annotations

import math

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

WARP = 32
WARPS_PER_BLOCK = 2 if SIMULATED else 8      # rows per block
FULL_MASK = 0xFFFFFFFF


@cuda.jit(device=True)
def _warp_sum(value):
    """The sum of ``value`` over the warp's 32 lanes, returned to every lane.

    A butterfly: after the exchange with the lane ``offset`` away (16, 8, 4, 2,
    1), each lane holds the sum over a group twice as large. Partners add the
    same two numbers, so all lanes end with the same bits.
    """
    offset = WARP // 2
    while offset > 0:
        value += cuda.shfl_xor_sync(FULL_MASK, value, offset)
        offset //= 2
    return value


@cuda.jit
def _forward(x, gain, bias, eps, centered, y, mean, rstd):
    lane = cuda.threadIdx.x % WARP
    r = cuda.blockIdx.x * WARPS_PER_BLOCK + cuda.threadIdx.x // WARP
    if r >= x.shape[0]:
        return                                   # the whole warp: no shuffle is left waiting
    H = x.shape[1]
    shift = float64(x[r, 0]) if centered else 0.0
    offset = 0.0
    if centered:
        total = 0.0
        for j in range(lane, H, WARP):
            total += x[r, j] - shift
        offset = _warp_sum(total) / H
    squares = 0.0
    for j in range(lane, H, WARP):
        value = (x[r, j] - shift) - offset
        squares += value * value
    scale = reciprocal_std(_warp_sum(squares), H, eps)
    if lane == 0:
        mean[r] = shift + offset
        rstd[r] = scale
    for j in range(lane, H, WARP):
        y[r, j] = ((x[r, j] - shift) - offset) * scale * gain[j] + bias[j]


@cuda.jit
def _backward(dy, x, mean, rstd, gain, centered, dx):
    lane = cuda.threadIdx.x % WARP
    r = cuda.blockIdx.x * WARPS_PER_BLOCK + cuda.threadIdx.x // WARP
    if r >= x.shape[0]:
        return
    H = x.shape[1]
    mu, scale = mean[r], rstd[r]
    sum_g = sum_g_x_hat = 0.0
    for j in range(lane, H, WARP):
        g = product(float64(dy[r, j]), float64(gain[j]))
        sum_g += g
        sum_g_x_hat += g * ((x[r, j] - mu) * scale)
    mean_g = _warp_sum(sum_g) / H if centered else 0.0
    mean_g_x_hat = _warp_sum(sum_g_x_hat) / H
    for j in range(lane, H, WARP):
        g = product(float64(dy[r, j]), float64(gain[j]))
        dx[r, j] = scale * (g - mean_g - ((x[r, j] - mu) * scale) * mean_g_x_hat)


def _grid(rows):
    return math.ceil(rows / WARPS_PER_BLOCK), WARPS_PER_BLOCK * WARP


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
