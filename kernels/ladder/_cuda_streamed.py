"""The CUDA top rung's kernels for rows too long to hold in registers (cuda_3_held.py),
and the kernel that adds the teams' partial sums of dgain and dbias.
"""
from __future__ import annotations

from numba import cuda, float64

from ._cuda_launch import MAX_TILE_ROWS, MAX_WARPS
from ._cuda_rung import product as _product
from ._cuda_teams import (
    _input_gradient,
    _output,
    _rstd,
    _statistics,
    _team_layout,
    _team_sum,
    _x_hat,
)

__all__ = ["_streamed_forward", "_streamed_backward", "_sum_partials"]


@cuda.jit
def _streamed_forward(x, gain, bias, eps, y, mean, rstd):
    """Block b normalizes row b, as ``_held_forward`` but re-reading the row
    for each pass (through L1/L2) instead of holding it."""
    warp_sums = cuda.shared.array(MAX_WARPS, float64)
    row, first, stride = cuda.blockIdx.x, cuda.threadIdx.x, cuda.blockDim.x
    H = x.shape[1]
    shift = x[row, 0]
    total = float64(0.0)
    for j in range(first, H, stride):
        total += x[row, j] - shift
    shifted_mean = _statistics(total, H, True, warp_sums)
    squares = float64(0.0)
    for j in range(first, H, stride):
        centered = (x[row, j] - shift) - shifted_mean
        squares += centered * centered
    row_rstd = _rstd(squares, H, eps, True, warp_sums)
    offset, scale = x.dtype.type(shifted_mean), x.dtype.type(row_rstd)
    for j in range(first, H, stride):
        y[row, j] = _output(x[row, j] - shift, offset, scale, gain[j], bias[j])
    if first == 0:
        mean[row] = shift + shifted_mean
        rstd[row] = row_rstd


@cuda.jit
def _streamed_backward(dy, x, mean, rstd, gain, tile_rows, whole_block, dx, partial_sums):
    """dx for a tile of rows, and the tile's Σ dy·x̂ and Σ dy per column.

    Phase 1, per row, by teams (warps, or with ``whole_block`` the block):
    mean(g) and mean(g·x̂) with g = dy·gain, kept in shared memory with the
    row's x₀, μ − x₀ and 1/σ. Phase 2, per column (thread t owns columns t,
    t + blockDim, ...): down the tile's rows, dx = (g − mean(g) − x̂·mean(g·x̂))/σ,
    and the column's sums, stored as partial_sums[block, column] and
    [block, H + column].
    """
    rows, H = x.shape
    tile_start = cuda.blockIdx.x * tile_rows
    tile_length = min(tile_rows, rows - tile_start)
    warp_sums = cuda.shared.array(MAX_WARPS, float64)
    # Per row of the tile: x₀, μ − x₀, 1/σ, mean(g), mean(g·x̂).
    row_terms = cuda.shared.array((5, MAX_TILE_ROWS), float64)
    as_dtype = x.dtype.type
    team, teams_per_block, first, stride = _team_layout(whole_block)
    for i in range(team, tile_length, teams_per_block):
        row = tile_start + i
        shift = x[row, 0]
        offset, scale = as_dtype(mean[row] - shift), as_dtype(rstd[row])
        sum_g = float64(0.0)
        sum_g_xhat = float64(0.0)
        for j in range(first, H, stride):
            g = _product(dy[row, j], gain[j])
            sum_g += g
            sum_g_xhat += g * _x_hat(x[row, j] - shift, offset, scale)
        sum_g = _team_sum(sum_g, whole_block, warp_sums)
        sum_g_xhat = _team_sum(sum_g_xhat, whole_block, warp_sums)
        if first == 0:
            row_terms[0, i] = shift
            row_terms[1, i] = mean[row] - shift
            row_terms[2, i] = rstd[row]
            row_terms[3, i] = sum_g / H
            row_terms[4, i] = sum_g_xhat / H
    cuda.syncthreads()

    for j in range(cuda.threadIdx.x, H, cuda.blockDim.x):
        dgain_sum = float64(0.0)
        dbias_sum = float64(0.0)
        for i in range(tile_length):
            row = tile_start + i
            shift, offset = as_dtype(row_terms[0, i]), as_dtype(row_terms[1, i])
            scale = as_dtype(row_terms[2, i])
            mean_g, mean_g_xhat = as_dtype(row_terms[3, i]), as_dtype(row_terms[4, i])
            x_hat = _x_hat(x[row, j] - shift, offset, scale)
            g = _product(dy[row, j], gain[j])
            dx[row, j] = _input_gradient(g, x_hat, scale, mean_g, mean_g_xhat)
            dgain_sum += dy[row, j] * x_hat
            dbias_sum += dy[row, j]
        partial_sums[cuda.blockIdx.x, j] = dgain_sum
        partial_sums[cuda.blockIdx.x, H + j] = dbias_sum


@cuda.jit
def _sum_partials(partial_sums, dgain, dbias):
    """dgain, dbias = the column sums of partial_sums (blocks, 2H), in block order.

    A block takes blockDim.x columns at a time. Thread (c, l) adds rows l,
    l + blockDim.y, ... of column c; thread (c, 0) then adds the blockDim.y
    results in order: the same order, hence the same bits, every time.
    """
    lane_sums = cuda.shared.array((32, 32), float64)
    H = dgain.shape[0]
    column_tiles = -(-2 * H // cuda.blockDim.x)
    for tile in range(cuda.blockIdx.x, column_tiles, cuda.gridDim.x):
        column = tile * cuda.blockDim.x + cuda.threadIdx.x
        total = float64(0.0)
        if column < 2 * H:
            for block in range(cuda.threadIdx.y, partial_sums.shape[0], cuda.blockDim.y):
                total += partial_sums[block, column]
        lane_sums[cuda.threadIdx.y, cuda.threadIdx.x] = total
        cuda.syncthreads()
        if cuda.threadIdx.y == 0 and column < 2 * H:
            total = float64(0.0)
            for lane in range(cuda.blockDim.y):
                total += lane_sums[lane, cuda.threadIdx.x]
            if column < H:
                dgain[column] = total
            else:
                dbias[column - H] = total
        cuda.syncthreads()             # lane_sums is reused by the next tile

