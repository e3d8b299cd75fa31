"""Device functions of the CUDA top rung (cuda_3_held.py): sums over a team, the row
statistics, the per-element formulas, and the loads of a held row.

A *team* is the warp or the whole block that works on one row (_cuda_launch).
"""
from __future__ import annotations

from numba import cuda, float64

from ._cuda_launch import WARP
from ._cuda_rung import reciprocal_std
from ._cuda_vectors import load_lanes
from .cuda_2_warp import _warp_sum

__all__ = []


@cuda.jit(device=True)
def _team_sum(value, whole_block, warp_sums):
    """Sum over the team: the warp, or with ``whole_block`` the whole block.

    A block adds its warps' sums, in warp order, through the shared array
    ``warp_sums``. Every thread of the block must call this (no early return).
    """
    value = _warp_sum(value)
    if whole_block:
        if cuda.threadIdx.x % WARP == 0:
            warp_sums[cuda.threadIdx.x // WARP] = value
        cuda.syncthreads()
        value = float64(0.0)
        for warp in range(cuda.blockDim.x // WARP):
            value += warp_sums[warp]
        cuda.syncthreads()             # warp_sums is reused by the next sum
    return value


@cuda.jit(device=True)
def _team_layout(whole_block):
    """This thread's (team in its block, teams per block, first column, stride)."""
    if whole_block:
        return 0, 1, cuda.threadIdx.x, cuda.blockDim.x
    return cuda.threadIdx.x // WARP, cuda.blockDim.x // WARP, cuda.threadIdx.x % WARP, WARP


@cuda.jit(device=True)
def _statistics(shifted_sum, H, whole_block, warp_sums):
    """μ − x₀ from the team's sums of d = x − x₀ (paper, Eq. 3)."""
    return _team_sum(shifted_sum, whole_block, warp_sums) / H


@cuda.jit(device=True)
def _rstd(squares_sum, H, eps, whole_block, warp_sums):
    """1/σ from the team's sums of (d − mean(d))² (paper, Eq. 3); NaN where they
    overflowed (_cuda_rung.reciprocal_std)."""
    return reciprocal_std(_team_sum(squares_sum, whole_block, warp_sums), H, eps)


# The per-element formulas, in x's dtype, with d = x − x₀ (x₀: the row's first
# element), offset = μ − x₀ and scale = 1/σ: (d − offset) is x − μ without
# rounding μ to x's dtype.

@cuda.jit(device=True)
def _x_hat(d, offset, scale):
    """x̂ = (x − μ)/σ."""
    return (d - offset) * scale


@cuda.jit(device=True)
def _output(d, offset, scale, gain, bias):
    """y = gain · x̂ + bias (paper, Eq. 4)."""
    return _x_hat(d, offset, scale) * gain + bias


@cuda.jit(device=True)
def _input_gradient(g, x_hat, scale, mean_g, mean_g_xhat):
    """dx = (g − mean(g) − x̂ · mean(g·x̂))/σ, with g = dy·gain."""
    return scale * (g - mean_g - x_hat * mean_g_xhat)


# ----------------------------------------------------------------------------
# Rows held in registers (H up to held · threads): one read of each input
# ----------------------------------------------------------------------------

@cuda.jit(device=True)
def _run_start(first, k, stride, lanes):
    """The first column of the run of ``lanes`` held elements that starts at
    held element k of the thread whose first column is ``first``.

    A thread holds its ``held`` elements in runs of ``lanes`` adjacent columns,
    one memory access per run (_cuda_vectors); the team's threads take turns
    run by run: with lanes = 1, the thread holds columns first + k·stride.
    """
    return (first + (k // lanes) * stride) * lanes


@cuda.jit(device=True)
def _load_clamped_run(a, row, j, into, k, lanes):
    """into[k:k + lanes] = the run of row ``row`` of ``a`` (row 0 of a 1-D
    array) from column j, or for a run past the end of the row its last run.

    Held rows are loaded through this, unconditionally, and the elements past
    the end are then zeroed or left out of the sums by a select. A load
    inside an ``if`` would sit behind a branch; loads without one are issued
    back to back, so that their latencies overlap.
    """
    H = a.shape[a.ndim - 1]
    load_lanes(a, row * H + min(j, H - lanes), into, k, lanes)

