"""Numba CUDA kernels for LayerNorm, used by the CuPy backend.

Same calling convention as :mod:`tinynet.kernels.reference` (the spec)::

    layer_norm_forward(x, gain, bias, eps) -> (y, mean, rstd)
    layer_norm_backward(dy, x, mean, rstd, gain) -> (dx, dgain, dbias)

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
With ``Launch.vector_access`` a thread holds its elements in runs of adjacent
columns and loads and stores each run in one 16-byte access (``_cuda_vectors``)
where every array's rows start on a 16-byte boundary; otherwise one element per
access. Off by default until a GPU run shows it faster.

**Longer rows are streamed**: a block per row re-reads it through the caches
for each pass (forward), or takes a tile of rows and walks down its columns
(backward), with the same second kernel.

Arrays: CuPy arrays go into the kernels as they are (``__cuda_array_interface__``,
no host copies) and the outputs are CuPy arrays. Under Numba's CUDA simulator
(``NUMBA_ENABLE_CUDASIM=1``) NumPy arrays go in and come out, and the warp
shuffles the simulator lacks are added to it when this module is imported
(``_cuda_sim_shuffle``). Kernels are
compiled at their first launch, so importing this module needs no GPU.
See docs/kernels.md.
"""
from __future__ import annotations

import functools
import math

import numba
import numpy as np
from numba import cuda, float64

from tinynet.backend import get_array_module

from ._arguments import backward_arguments, forward_arguments
from ._cuda_launch import GPU_LAUNCH, MAX_TILE_ROWS, MAX_WARPS, SIMULATOR_LAUNCH, WARP, Launch
from ._cuda_vectors import load_lanes, store_lanes, vector_lanes

__all__ = ["layer_norm_forward", "layer_norm_backward"]


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

if numba.config.ENABLE_CUDASIM:
    # The simulator has no warp shuffles; the kernels' warp reductions need them.
    from ._cuda_sim_shuffle import install as _install_simulated_shuffles
    _install_simulated_shuffles()

FULL_MASK = 0xFFFFFFFF


def default_launch() -> Launch:
    return SIMULATOR_LAUNCH if numba.config.ENABLE_CUDASIM else GPU_LAUNCH


# ----------------------------------------------------------------------------
# Device functions: a rounded product, sums over a team, the row statistics
# ----------------------------------------------------------------------------

def _product(a, b):
    """a·b rounded to a's dtype, never fused into a following add.

    The backward sums g = dy·gain in one loop and subtracts mean(g) from g in
    another. On a GPU the compiler fuses a multiply and an add into one fma
    wherever it can, which skips the product's rounding: then g − mean(g) is not
    exactly 0 where it should be (H = 1, constant rows). libdevice's
    ``fmul_rn``/``dmul_rn`` are never fused. (The simulator runs this plain
    Python, which never fuses.)
    """
    return a * b


if not numba.config.ENABLE_CUDASIM:
    from numba.cuda import libdevice
    from numba.cuda.extending import overload

    @overload(_product, target="cuda")
    def _product_on_gpu(a, b):
        if a == numba.float32:
            return lambda a, b: libdevice.fmul_rn(a, b)
        return lambda a, b: libdevice.dmul_rn(a, b)


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
    """1/σ from the team's sums of (d − mean(d))² (paper, Eq. 3)."""
    return 1.0 / math.sqrt(_team_sum(squares_sum, whole_block, warp_sums) / H + eps)


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


# ----------------------------------------------------------------------------
# Longer rows, streamed through the caches by a block: three reads of each row
# ----------------------------------------------------------------------------

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
