"""CUDA rung 3, "held": the row held in registers. The CuPy backend's default.

The idea this rung adds to rung 2 (cuda_2_warp): load a row once, every load
issued at once, and take every pass from registers; and pick the team by the
row's length. LayerNorm only (the ladder gives rung 2's RMSNorm).

**Teams.** A *team* of threads works on one row at a time: a warp when the row
is short (H ≤ 512; a block then holds several teams), a whole block when it is
longer. Each thread keeps float64 sums; a warp adds its 32 sums with shuffles,
a block then adds its warps' sums through shared memory.

**Rows held in registers** (forward: up to 32 elements per thread, H ≤ 8192;
backward: up to 16, H ≤ 4096; see ``_cuda_launch.Launch``).
The forward (one launch) loads the row once into registers, every load issued
at once, and takes the shifted two-pass statistics and y from there. The
backward (two launches): each team takes every teams-th row, holds x̂ and dy,
writes dx, and adds dy·x̂ and dy into its own columns' dgain/dbias sums, kept in
registers across its rows; a second kernel adds the teams' sums column by
column, in team order. No floating-point atomics: the results are deterministic.
The kernels also take runs of ``lanes`` adjacent columns per memory access, for
rung 4 (``cuda_4_vectors``, through ``Launch.vector_access``); here ``lanes`` is 1.

**Longer rows are streamed**: a block per row re-reads it through the caches
for each pass (forward), or takes a tile of rows and walks down its columns
(backward), with the same second kernel.

Arrays: CuPy arrays go into the kernels as they are (``__cuda_array_interface__``,
no host copies) and the outputs are CuPy arrays. Under Numba's CUDA simulator
(``NUMBA_ENABLE_CUDASIM=1``) NumPy arrays go in and come out, and the warp
shuffles the simulator lacks are added to it on import (``_cuda_rung``).
Kernels are compiled at their first launch, so importing this module needs no
GPU. Device functions: ``_cuda_teams``; long rows: ``_cuda_streamed``.
"""
from __future__ import annotations

import functools

import numba
from numba import cuda, float64

from tinynet.backend import get_array_module

from ._arguments import backward_arguments, forward_arguments
from ._cuda_launch import GPU_LAUNCH, MAX_WARPS, SIMULATOR_LAUNCH, Launch
from ._cuda_rung import launch as _launch
from ._cuda_rung import product as _product
from ._cuda_streamed import _streamed_backward, _streamed_forward, _sum_partials
from ._cuda_teams import (
    _input_gradient,
    _load_clamped_run,
    _output,
    _rstd,
    _run_start,
    _statistics,
    _team_layout,
    _team_sum,
    _x_hat,
)
from ._cuda_vectors import load_lanes, store_lanes, vector_lanes

__all__ = ["layer_norm_forward", "layer_norm_backward", "default_launch"]


def default_launch() -> Launch:
    return SIMULATOR_LAUNCH if numba.config.ENABLE_CUDASIM else GPU_LAUNCH


@functools.lru_cache(maxsize=None)
def _held_forward(held, lanes=1):
    """The forward kernel for teams whose threads hold ``held`` elements of a
    row, in runs of ``lanes`` adjacent columns (_run_start).

    Shifted two-pass, as the reference, over the row held in registers: d =
    x − x₀ in x's dtype, float64 sums, μ − x₀ = mean(d), σ² = mean((d −
    mean(d))²) + eps; then y = gain · (d − (μ − x₀))/σ + bias (paper, Eq. 4).
    ``held`` and ``lanes`` are compile-time constants, so the loops over them
    unroll and the held elements live in registers: every load of the row is
    issued at once.
    """
    @cuda.jit
    def forward(x, gain, bias, eps, whole_block, y, mean, rstd):
        warp_sums = cuda.shared.array(MAX_WARPS, float64)
        team, teams_per_block, first, stride = _team_layout(whole_block)
        row = cuda.blockIdx.x * teams_per_block + team
        rows, H = x.shape
        if row < rows:                 # a whole warp team skips: its shuffles stay in step
            d = cuda.local.array(held, x.dtype)
            shift = x[row, 0]
            zero = x.dtype.type(0)
            total = float64(0.0)
            for k in range(0, held, lanes):
                j = _run_start(first, k, stride, lanes)
                _load_clamped_run(x, row, j, d, k, lanes)
                for v in range(lanes):
                    d[k + v] = d[k + v] - shift if j < H else zero
                    total += d[k + v]
            shifted_mean = _statistics(total, H, whole_block, warp_sums)
            squares = float64(0.0)
            for k in range(0, held, lanes):
                inside = _run_start(first, k, stride, lanes) < H
                for v in range(lanes):
                    centered = d[k + v] - shifted_mean
                    squares += centered * centered if inside else 0.0
            row_rstd = _rstd(squares, H, eps, whole_block, warp_sums)
            offset, scale = x.dtype.type(shifted_mean), x.dtype.type(row_rstd)
            gains = cuda.local.array(lanes, x.dtype)
            biases = cuda.local.array(lanes, x.dtype)
            for k in range(0, held, lanes):
                j = _run_start(first, k, stride, lanes)
                if j < H:
                    load_lanes(gain, j, gains, 0, lanes)
                    load_lanes(bias, j, biases, 0, lanes)
                    for v in range(lanes):
                        d[k + v] = _output(d[k + v], offset, scale, gains[v], biases[v])
                    store_lanes(y, row * H + j, d, k, lanes)
            if first == 0:
                mean[row] = shift + shifted_mean
                rstd[row] = row_rstd
    return forward


@functools.lru_cache(maxsize=None)
def _held_backward(held, lanes=1):
    """The backward kernel for teams whose threads hold ``held`` elements of a
    row, in runs of ``lanes`` adjacent columns (_run_start).

    Team t takes rows t, t + teams, ... For each it holds x̂ and dy, sums
    g = dy·gain and g·x̂ over the row, writes dx = (g − mean(g) − x̂·mean(g·x̂))/σ
    and adds dy·x̂ and dy into its own columns' dgain and dbias sums, kept in
    registers across its rows. Those go to row t of partial_sums (teams, 2H),
    which ``_sum_partials`` adds up in team order.
    """
    @cuda.jit
    def backward(dy, x, mean, rstd, gain, whole_block, dx, partial_sums):
        warp_sums = cuda.shared.array(MAX_WARPS, float64)
        team, teams_per_block, first, stride = _team_layout(whole_block)
        my_team = cuda.blockIdx.x * teams_per_block + team
        teams = cuda.gridDim.x * teams_per_block
        rows, H = x.shape
        as_dtype = x.dtype.type
        gains = cuda.local.array(held, x.dtype)
        x_hat = cuda.local.array(held, x.dtype)
        dys = cuda.local.array(held, x.dtype)
        dgain_sums = cuda.local.array(held, x.dtype)
        dbias_sums = cuda.local.array(held, x.dtype)
        dxs = cuda.local.array(lanes, x.dtype)
        zero = as_dtype(0)
        for k in range(0, held, lanes):
            j = _run_start(first, k, stride, lanes)
            _load_clamped_run(gain, 0, j, gains, k, lanes)
            for v in range(lanes):
                gains[k + v] = gains[k + v] if j < H else zero
                dgain_sums[k + v] = zero
                dbias_sums[k + v] = zero
        for row in range(my_team, rows, teams):    # the same rows for the whole team
            shift = x[row, 0]
            offset, scale = as_dtype(mean[row] - shift), as_dtype(rstd[row])
            sum_g = float64(0.0)
            sum_g_xhat = float64(0.0)
            for k in range(0, held, lanes):   # past the end: dy = gain = 0, so g = 0
                j = _run_start(first, k, stride, lanes)
                _load_clamped_run(dy, row, j, dys, k, lanes)
                _load_clamped_run(x, row, j, x_hat, k, lanes)
                for v in range(lanes):
                    dys[k + v] = dys[k + v] if j < H else zero
                    x_hat[k + v] = _x_hat(x_hat[k + v] - shift, offset, scale)
                    g = _product(dys[k + v], gains[k + v])
                    sum_g += g
                    sum_g_xhat += g * x_hat[k + v]
            mean_g = as_dtype(_team_sum(sum_g, whole_block, warp_sums) / H)
            mean_g_xhat = as_dtype(_team_sum(sum_g_xhat, whole_block, warp_sums) / H)
            for k in range(0, held, lanes):
                for v in range(lanes):
                    g = _product(dys[k + v], gains[k + v])
                    dxs[v] = _input_gradient(g, x_hat[k + v], scale, mean_g, mean_g_xhat)
                    dgain_sums[k + v] += dys[k + v] * x_hat[k + v]
                    dbias_sums[k + v] += dys[k + v]
                j = _run_start(first, k, stride, lanes)
                if j < H:
                    store_lanes(dx, row * H + j, dxs, 0, lanes)
        for k in range(0, held, lanes):    # a team without rows writes zeros
            j = _run_start(first, k, stride, lanes)
            if j < H:
                store_lanes(partial_sums, my_team * 2 * H + j, dgain_sums, k, lanes)
                store_lanes(partial_sums, my_team * 2 * H + H + j, dbias_sums, k, lanes)
    return backward


def _lanes(launch: Launch, plan, *arrays) -> int:
    """Elements per memory access in a held-row kernel: a vector's worth
    (_cuda_vectors) where ``launch.vector_access`` asks for it, each thread
    holds at least that many, and the arrays allow it; else 1."""
    lanes = vector_lanes(*arrays) if launch.vector_access else 1
    return lanes if plan.held >= lanes else 1


def _forward(x, gain, bias, eps, launch: Launch):
    x, gain, bias, eps = forward_arguments(x, gain, bias, eps)
    xp = get_array_module(x)
    rows, H = x.shape
    y = xp.empty_like(x)
    mean, rstd = xp.empty(rows, xp.float64), xp.empty(rows, xp.float64)
    if rows == 0:
        return y, mean, rstd
    plan = launch.forward_plan(H)
    blocks, threads = launch.forward_grid(rows, H)
    if plan.held == 0:
        _launch(_streamed_forward, blocks, threads, x, gain, bias, eps, y, mean, rstd)
    else:
        lanes = _lanes(launch, plan, x, gain, bias, y)
        _launch(_held_forward(plan.held, lanes), blocks, threads, x, gain, bias, eps,
                plan.team == "block", y, mean, rstd)
    return y, mean, rstd


def _backward(dy, x, mean, rstd, gain, launch: Launch):
    dy, x, mean, rstd, gain, affine = backward_arguments(dy, x, mean, rstd, gain)
    xp = get_array_module(x)
    rows, H = x.shape
    dx, dgain, dbias = xp.empty_like(x), xp.zeros(H, x.dtype), xp.zeros(H, x.dtype)
    if rows > 0:
        plan = launch.backward_plan(H)
        blocks, threads, partial_rows = launch.backward_grid(rows, H)
        partial_sums = xp.empty((partial_rows, 2 * H), x.dtype)
        if plan.held == 0:
            _launch(_streamed_backward, blocks, threads, dy, x, mean, rstd, gain,
                    launch.tile_rows(H), H <= launch.tile_warp_max_h, dx, partial_sums)
        else:
            lanes = _lanes(launch, plan, dy, x, gain, dx, partial_sums)
            _launch(_held_backward(plan.held, lanes), blocks, threads, dy, x, mean, rstd, gain,
                    plan.team == "block", dx, partial_sums)
        _launch(_sum_partials, launch.sum_blocks(H), (launch.sum_columns, launch.sum_lanes),
                partial_sums, dgain, dbias)
    return (dx, dgain, dbias) if affine else (dx, None, None)


def layer_norm_forward(x, gain, bias, eps):
    """Normalize each row of ``x`` (rows, H); return ``(y, mean, rstd)``.

    ``gain``/``bias`` are (H,) arrays of x's dtype or None (acting as 1 and 0).
    ``y`` has x's dtype; ``mean`` and ``rstd`` are float64. One launch.
    """
    return _forward(x, gain, bias, eps, default_launch())


def layer_norm_backward(dy, x, mean, rstd, gain):
    """Gradients of :func:`layer_norm_forward`: ``(dx, dgain, dbias)``. Two launches.

    ``dgain`` and ``dbias`` have gain's dtype, and are None when gain is None.
    """
    return _backward(dy, x, mean, rstd, gain, default_launch())

