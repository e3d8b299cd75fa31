"""Numba CUDA kernels for LayerNorm, used by the CuPy backend.

Same calling convention as :mod:`tinynet.kernels.reference` (the spec)::

    layer_norm_forward(x, gain, bias, eps) -> (y, mean, rstd)
    layer_norm_backward(dy, x, mean, rstd, gain) -> (dx, dgain, dbias)

**Forward, one launch.** A *team* of threads normalizes one row (paper, Eqs. 3
and 4): a warp when the row is short (H ≤ 1024; a block then holds several
rows), the whole block when it is long. The team strides over the row three
times: (1) sum d = x − x₀ (x₀ the row's first element), (2) sum the squared
deviations from mean(d), (3) write y. Each thread keeps float64 sums; a warp
adds its 32 sums with shuffles, a block then adds its warps' sums through
shared memory. Passes 2 and 3 re-read the row, which the first pass has just
brought into the L1/L2 cache.

**Backward, two launches.** (1) Each block takes a tile of rows. Its teams
sum g = dy·gain and g·x̂ over each row, as in the forward; then every thread
walks down the tile in its own columns, writing dx and summing dy·x̂ and dy,
and stores those sums as the block's row of a (blocks, 2H) scratch array.
(2) A second kernel adds the scratch's rows, column by column, in block
order. There are no floating-point atomics: results are deterministic.

Arrays: CuPy arrays go into the kernels as they are (``__cuda_array_interface__``,
no host copies) and the outputs are CuPy arrays. Under Numba's CUDA simulator
(``NUMBA_ENABLE_CUDASIM=1``) NumPy arrays go in and come out. Kernels are
compiled at their first launch, so importing this module needs no GPU.
See docs/kernels.md.
"""
from __future__ import annotations

import dataclasses
import math

import numba
from numba import cuda, float64

from tinynet.backend import get_array_module

from ._arguments import backward_arguments, forward_arguments

__all__ = ["layer_norm_forward", "layer_norm_backward"]

WARP = 32
FULL_MASK = 0xFFFFFFFF
MAX_WARPS = 32                 # 1024 threads per block at most
MAX_TILE_ROWS = 64             # rows per block in the backward, at most


@dataclasses.dataclass(frozen=True)
class Launch:
    """How the kernels are launched: the knobs that the tests turn.

    The simulator runs each CUDA thread as a Python thread, so its launches
    are kept small; a small ``max_block_threads`` together with a small
    ``warp_row_max_h`` sends short rows down the block-per-row path too.
    """
    warp_row_max_h: int = 1024          # rows up to this long get a warp, longer a block
    warps_per_block: int = 4            # rows per block on the warp-per-row path
    max_block_threads: int = 1024       # threads per row on the block-per-row path
    backward_threads: int = 256         # threads per block of the backward's first kernel
    tile_elements: int = 1 << 14        # backward: about this many elements per block,
    min_tile_rows: int = 8              # ... but this many rows at least
    sum_columns: int = 32               # column-sum kernel: columns per block at a time,
    sum_lanes: int = 32                 # threads splitting each column,
    max_sum_blocks: int = 1024          # and blocks at most

    def warp_per_row(self, H: int) -> bool:
        return H <= self.warp_row_max_h

    def block_threads(self, H: int) -> int:
        """Threads for one long row: about 8 elements each, a multiple of 32."""
        threads = WARP
        while threads < self.max_block_threads and threads * 8 < H:
            threads *= 2
        return min(threads, self.max_block_threads)

    def tile_rows(self, H: int) -> int:
        """Rows per block in the backward: fewer mean more partial sums to add."""
        return min(MAX_TILE_ROWS, max(self.min_tile_rows, self.tile_elements // H))


GPU_LAUNCH = Launch()
SIMULATOR_LAUNCH = Launch(warps_per_block=2, max_block_threads=64, backward_threads=64,
                          tile_elements=256, min_tile_rows=1, sum_columns=32, sum_lanes=2,
                          max_sum_blocks=2)


def default_launch() -> Launch:
    return SIMULATOR_LAUNCH if numba.config.ENABLE_CUDASIM else GPU_LAUNCH


# ----------------------------------------------------------------------------
# Device functions: sums over a team, and the row statistics
# ----------------------------------------------------------------------------

@cuda.jit(device=True)
def _warp_sum(value):
    """Sum of ``value`` over the warp's 32 lanes, returned to every lane.

    A butterfly: after the exchange with the lane ``offset`` away (16, 8, 4,
    2, 1), each lane holds the sum over a group twice as large. Partners add
    the same two numbers, so all lanes end with the same bits.
    """
    offset = WARP // 2
    while offset > 0:
        value += cuda.shfl_xor_sync(FULL_MASK, value, offset)
        offset //= 2
    return value


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
def _row_statistics(x, row, first, stride, whole_block, warp_sums, eps):
    """``(μ − x₀, 1/σ)`` of one row, computed by a team (paper, Eq. 3).

    Shifted two-pass, as the reference: d = x − x₀ in x's dtype, float64
    sums, μ − x₀ = mean(d), σ² = mean((d − mean(d))²) + eps under the root.
    Thread ``first`` of the team reads columns first, first + stride, ...
    Sums start at ``float64(0.0)``, not ``0.0``: compiled code would widen
    either way, but the simulator follows NumPy, where 0.0 + float32 is float32.
    """
    H = x.shape[1]
    shift = x[row, 0]
    total = float64(0.0)
    for j in range(first, H, stride):
        total += x[row, j] - shift
    shifted_mean = _team_sum(total, whole_block, warp_sums) / H
    squares = float64(0.0)
    for j in range(first, H, stride):
        centered = (x[row, j] - shift) - shifted_mean
        squares += centered * centered
    variance = _team_sum(squares, whole_block, warp_sums) / H
    return shifted_mean, 1.0 / math.sqrt(variance + eps)


@cuda.jit(device=True)
def _normalize_row(x, gain, bias, eps, y, mean, rstd, row, first, stride, whole_block,
                   warp_sums):
    """y = gain · (x − μ)/σ + bias for one row, by a team (paper, Eq. 4).

    x − μ is taken as (x − x₀) − (μ − x₀): both parts are exact or small, so
    x's dtype suffices even for rows far from zero.
    """
    shifted_mean, row_rstd = _row_statistics(x, row, first, stride, whole_block,
                                             warp_sums, eps)
    as_dtype = x.dtype.type
    shift, offset, scale = x[row, 0], as_dtype(shifted_mean), as_dtype(row_rstd)
    for j in range(first, x.shape[1], stride):
        y[row, j] = ((x[row, j] - shift) - offset) * scale * gain[j] + bias[j]
    if first == 0:
        mean[row] = shift + shifted_mean
        rstd[row] = row_rstd


# ----------------------------------------------------------------------------
# Kernels
# ----------------------------------------------------------------------------

@cuda.jit
def _forward_warp_per_row(x, gain, bias, eps, y, mean, rstd):
    """Short rows: warp w of block b normalizes row b·(warps per block) + w."""
    warp_sums = cuda.shared.array(MAX_WARPS, float64)          # unused by warp teams
    row = cuda.blockIdx.x * (cuda.blockDim.x // WARP) + cuda.threadIdx.x // WARP
    if row < x.shape[0]:               # a whole warp skips: its shuffles stay in step
        _normalize_row(x, gain, bias, eps, y, mean, rstd, row, cuda.threadIdx.x % WARP,
                       WARP, False, warp_sums)


@cuda.jit
def _forward_block_per_row(x, gain, bias, eps, y, mean, rstd):
    """Long rows: block b normalizes row b."""
    warp_sums = cuda.shared.array(MAX_WARPS, float64)
    _normalize_row(x, gain, bias, eps, y, mean, rstd, cuda.blockIdx.x, cuda.threadIdx.x,
                   cuda.blockDim.x, True, warp_sums)


@cuda.jit
def _backward_tile(dy, x, mean, rstd, gain, tile_rows, warp_per_row, dx, partial_sums):
    """dx for a tile of rows, and the tile's Σ dy·x̂ and Σ dy per column.

    Phase 1, per row (teams as in the forward): mean(g) and mean(g·x̂) with
    g = dy·gain, kept in shared memory with the row's x₀, μ − x₀ and 1/σ.
    Phase 2, per column (thread t owns columns t, t + blockDim, ...): down the
    tile's rows, dx = (g − mean(g) − x̂ · mean(g·x̂)) / σ, and the column's
    sums, stored as partial_sums[block, column] and [block, H + column].
    """
    rows, H = x.shape
    tile_start = cuda.blockIdx.x * tile_rows
    tile_length = min(tile_rows, rows - tile_start)
    warp_sums = cuda.shared.array(MAX_WARPS, float64)
    # Per row of the tile: x₀, μ − x₀, 1/σ, mean(g), mean(g·x̂).
    row_terms = cuda.shared.array((5, MAX_TILE_ROWS), float64)
    as_dtype = x.dtype.type
    if warp_per_row:
        team, teams = cuda.threadIdx.x // WARP, cuda.blockDim.x // WARP
        first, stride = cuda.threadIdx.x % WARP, WARP
    else:
        team, teams = 0, 1
        first, stride = cuda.threadIdx.x, cuda.blockDim.x

    for i in range(team, tile_length, teams):
        row = tile_start + i
        shift = x[row, 0]
        offset, scale = as_dtype(mean[row] - shift), as_dtype(rstd[row])
        sum_g = float64(0.0)
        sum_g_xhat = float64(0.0)
        for j in range(first, H, stride):
            g = dy[row, j] * gain[j]
            sum_g += g
            sum_g_xhat += g * (((x[row, j] - shift) - offset) * scale)
        sum_g = _team_sum(sum_g, not warp_per_row, warp_sums)
        sum_g_xhat = _team_sum(sum_g_xhat, not warp_per_row, warp_sums)
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
            x_hat = ((x[row, j] - shift) - offset) * scale
            dx[row, j] = scale * (dy[row, j] * gain[j] - mean_g - x_hat * mean_g_xhat)
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


# ----------------------------------------------------------------------------
# Host side
# ----------------------------------------------------------------------------

def _launch(kernel, blocks, threads, *args):
    """Launch ``kernel``; CuPy arrays go in as device views, on CuPy's current stream.

    Numba would import each CuPy array through ``__cuda_array_interface__``
    and wait for the host to catch up with the GPU first (its default, for
    arrays made on another stream). Running the kernel on the very stream
    CuPy is using keeps the order without that wait.
    """
    if not any(hasattr(a, "__cuda_array_interface__") for a in args):
        kernel[blocks, threads](*args)    # NumPy arrays: simulated (or copied to a GPU and back)
        return
    import cupy
    stream_ptr = cupy.cuda.get_current_stream().ptr
    stream = cuda.external_stream(stream_ptr) if stream_ptr else cuda.default_stream()
    views = [cuda.as_cuda_array(a, sync=False) if hasattr(a, "__cuda_array_interface__")
             else a for a in args]
    kernel[blocks, threads, stream](*views)


def _forward(x, gain, bias, eps, launch: Launch):
    x, gain, bias = forward_arguments(x, gain, bias)
    xp = get_array_module(x)
    rows, H = x.shape
    y = xp.empty_like(x)
    mean, rstd = xp.empty(rows, xp.float64), xp.empty(rows, xp.float64)
    if rows == 0:
        return y, mean, rstd
    if launch.warp_per_row(H):
        threads = WARP * launch.warps_per_block
        blocks = -(-rows // launch.warps_per_block)
        _launch(_forward_warp_per_row, blocks, threads, x, gain, bias, float(eps), y, mean,
                rstd)
    else:
        _launch(_forward_block_per_row, rows, launch.block_threads(H), x, gain, bias,
                float(eps), y, mean, rstd)
    return y, mean, rstd


def _backward(dy, x, mean, rstd, gain, launch: Launch):
    dy, x, mean, rstd, gain, affine = backward_arguments(dy, x, mean, rstd, gain)
    xp = get_array_module(x)
    rows, H = x.shape
    dx, dgain, dbias = xp.empty_like(x), xp.zeros(H, x.dtype), xp.zeros(H, x.dtype)
    if rows > 0:
        warp_per_row = launch.warp_per_row(H)
        threads = launch.backward_threads
        tile_rows = launch.tile_rows(H)
        blocks = -(-rows // tile_rows)
        partial_sums = xp.empty((blocks, 2 * H), x.dtype)
        _launch(_backward_tile, blocks, threads, dy, x, mean, rstd, gain, tile_rows,
                warp_per_row, dx, partial_sums)
        sum_blocks = min(launch.max_sum_blocks, -(-2 * H // launch.sum_columns))
        _launch(_sum_partials, sum_blocks, (launch.sum_columns, launch.sum_lanes),
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
