"""The Numba CUDA kernels held in registers (tinynet.kernels.ladder.cuda_3_held, rung 3, and
tinynet.kernels.ladder.cuda_4_vectors, rung 4: the same kernels with vector access)
against the NumPy reference.

On a machine with CuPy and a GPU these run on the GPU, with CuPy arrays and
every awkward H. Elsewhere they run under Numba's CUDA simulator (switched on
by conftest.py), on small shapes, since the simulator runs each CUDA thread
as a Python thread; its missing warp shuffles are added by a test-only shim.
The simulator's launches are small enough that both the warp-per-row and the
block-per-row paths, ragged last blocks and several backward blocks all run.
"""
import dataclasses
import os
import re
import subprocess
import sys

import numba
import numpy as np
import pytest
from numba import cuda

import tinynet
from tinynet.kernels.ladder import reference

from test_kernels_cpu import (
    AWKWARD_H,
    EPS,
    RTOL,
    assert_accurate_far_from_zero,
    assert_close,
    layer_norm_inputs,
)

SIMULATED = bool(numba.config.ENABLE_CUDASIM)
ON_GPU = not SIMULATED and tinynet.cuda_is_available()
pytestmark = [
    pytest.mark.skipif(not (SIMULATED or ON_GPU),
                       reason="needs CuPy and a CUDA GPU, or the CUDA simulator"),
    # Small test grids leave a GPU idle, which Numba warns about at every launch.
    # (The message starts with a terminal escape code, hence the leading .*)
    pytest.mark.filterwarnings("ignore:.*Grid size"),
]

if SIMULATED or ON_GPU:
    from tinynet.kernels.ladder import cuda_3_held as kernels
    from tinynet.kernels.ladder._cuda_vectors import address

    LAUNCH = kernels.default_launch()
    # Short rows through the other paths: a block team holding them, and streamed.
    BLOCK_TEAMS = dataclasses.replace(LAUNCH, warp_row_max_h=16, max_block_threads=64)
    STREAMED = dataclasses.replace(BLOCK_TEAMS, forward_held=1, backward_held=1)
    LAUNCHES = {"default": LAUNCH, "block": BLOCK_TEAMS, "streamed": STREAMED,
                # held rows loaded and stored 16 bytes at a time, where aligned
                "vector": dataclasses.replace(LAUNCH, vector_access=True),
                "vector block": dataclasses.replace(BLOCK_TEAMS, vector_access=True)}


def paths_of(launch, H):
    """The paths rows of length H take: {'warp', 'block', 'streamed'} in the
    forward and the backward."""
    return {"streamed" if plan.held == 0 else plan.team
            for plan in (launch.forward_plan(H), launch.backward_plan(H))}


def to_device(a):
    if ON_GPU and a is not None:
        import cupy
        return cupy.asarray(a)
    return a


def to_host(a):
    return tinynet.backend.as_numpy(a) if a is not None else None


def run_kernels(x, gain, bias, dy, launch):
    """Forward and backward through the CUDA kernels; NumPy in, NumPy out."""
    args = [to_device(a) for a in (x, gain, bias, dy)]
    y, mean, rstd = kernels._forward(*args[:3], EPS, launch)
    grads = kernels._backward(args[3], args[0], mean, rstd, args[1], launch)
    return [to_host(a) for a in (y, mean, rstd) + grads]


def assert_matches_reference(x, gain, bias, dy, launch, rtol):
    assert_results_match_reference(run_kernels(x, gain, bias, dy, launch), x, gain, bias, dy,
                                   rtol)


def assert_results_match_reference(results, x, gain, bias, dy, rtol):
    """``results``, (y, mean, rstd, dx, dgain, dbias) on the host, against the reference's."""
    y, mean, rstd, dx, dgain, dbias = results
    ref_y, ref_mean, ref_rstd = reference.layer_norm_forward(x, gain, bias, EPS)
    assert y.dtype == x.dtype and mean.dtype == rstd.dtype == np.float64
    assert_close(y, ref_y, rtol)
    assert_close(mean, ref_mean, rtol, scale=np.max(np.abs(x)))
    assert_close(rstd, ref_rstd, rtol)
    ref_grads = reference.layer_norm_backward(dy, x, ref_mean, ref_rstd, gain)
    for actual, expected in zip((dx, dgain, dbias), ref_grads, strict=True):
        if expected is None:
            assert actual is None
        else:
            assert actual.dtype == expected.dtype
            assert_close(actual, expected, rtol)


# (shape, dtype, offset, launch, path). Simulated: warp teams with a ragged
# last block (5 rows in blocks of 2 warps), partial warps (H = 1, 7, 33), one
# row, backward teams of several rows; block teams, held (H = 100, forced) and
# streamed (H = 1100; H = 100, forced) with several backward tiles.
SIMULATED_CASES = [
    ((4, 64), np.float32, 0.0, "default", "warp"),
    ((5, 100), np.float32, 1e3, "default", "warp"),
    ((3, 33), np.float64, 1e3, "default", "warp"),
    ((1, 1), np.float32, 0.0, "default", "warp"),
    ((2, 7), np.float64, 0.0, "default", "warp"),
    ((2, 1100), np.float32, 0.0, "default", "streamed"),
    ((3, 100), np.float64, 1e3, "block", "block"),
    ((3, 100), np.float32, 1e3, "streamed", "streamed"),
]
GPU_CASES = ([((rows, H), dtype, offset, "default", None) for H in AWKWARD_H
              for rows in (1, 3) for dtype in (np.float32, np.float64) for offset in (0.0, 1e3)]
             + [((4096, 1024), np.float32, 1e3, "default", "block"),
                ((1000, 256), np.float64, 0.0, "default", "warp"),
                ((700, 64), np.float32, 1e3, "default", "warp"),
                ((300, 20000), np.float32, 0.0, "default", "streamed"),
                ((5, 100), np.float32, 1e3, "block", "block"),
                ((5, 100), np.float32, 1e3, "streamed", "streamed")])


@pytest.mark.parametrize("shape, dtype, offset, launch_name, path",
                         GPU_CASES if ON_GPU else SIMULATED_CASES,
                         ids=lambda v: str(v) if not isinstance(v, type) else v.__name__)
def test_kernels_match_the_reference(shape, dtype, offset, launch_name, path):
    launch = LAUNCHES[launch_name]
    assert path is None or paths_of(launch, shape[1]) == {path}
    x, gain, bias, dy = layer_norm_inputs(shape, dtype, offset)
    assert_matches_reference(x, gain, bias, dy, launch, RTOL[dtype])


def test_every_path_runs_on_the_gpu_cases():
    """The real-GPU cases, under the default launch, take all three paths."""
    paths = set().union(*(paths_of(kernels.GPU_LAUNCH, shape[1]) for shape, *_ in GPU_CASES))
    assert paths == {"warp", "block", "streamed"}


def test_without_gain_or_bias_and_non_contiguous():
    x, gain, bias, dy = layer_norm_inputs((3, 66), np.float64)
    assert_matches_reference(x[:, ::2], None, None, dy[:, ::2], LAUNCH, RTOL[np.float64])
    assert_matches_reference(x[:, ::2], gain[::2], None, dy[:, ::2], LAUNCH, RTOL[np.float64])


def lanes_of(launch, x, gain, bias):
    """The elements per memory access of the forward's and the backward's held
    kernels for these arrays (the outputs are fresh, hence aligned)."""
    H = x.shape[1]
    return (kernels._lanes(launch, launch.forward_plan(H), x, gain, bias, x),
            kernels._lanes(launch, launch.backward_plan(H), x, gain, x))


# (shape, dtype, offset, launch, lanes): held rows in runs of 4 float32 or 2
# float64 columns, as warps and as blocks; and rows that fall back to one
# element per access: H not a multiple of 4, or fewer than 4 elements per thread.
SIMULATED_VECTOR_CASES = [
    ((5, 100), np.float32, 1e3, "vector", 4),
    ((3, 66), np.float64, 0.0, "vector", 2),
    ((3, 100), np.float32, 1e3, "vector block", 4),
    ((2, 33), np.float32, 0.0, "vector", 1),
    ((2, 64), np.float32, 0.0, "vector", 1),
]
GPU_VECTOR_CASES = ([((3, H), np.float32, 1e3, "vector", None) for H in AWKWARD_H]
                    + [((1000, 256), np.float32, 0.0, "vector", 4),
                       ((4096, 1024), np.float32, 1e3, "vector", 4),
                       ((64, 4096), np.float32, 0.0, "vector", 4),
                       ((1000, 256), np.float64, 1e3, "vector", 2),
                       ((5, 100), np.float32, 1e3, "vector block", 4)])


@pytest.mark.parametrize("shape, dtype, offset, launch_name, lanes",
                         GPU_VECTOR_CASES if ON_GPU else SIMULATED_VECTOR_CASES,
                         ids=lambda v: str(v) if not isinstance(v, type) else v.__name__)
def test_vector_access_matches_the_reference(shape, dtype, offset, launch_name, lanes):
    launch = LAUNCHES[launch_name]
    x, gain, bias, dy = layer_norm_inputs(shape, dtype, offset)
    if lanes is not None:
        assert lanes_of(launch, *map(to_device, (x, gain, bias))) == (lanes, lanes)
    assert_matches_reference(x, gain, bias, dy, launch, RTOL[dtype])


def misaligned(a):
    """A device copy of the float32 array ``a`` whose first element lies 4 bytes
    past a 16-byte boundary, so that no vector access may touch it."""
    xp = tinynet.backend.get_array_module(to_device(a))
    larger = xp.empty(a.size + 3, np.float32)
    start = next(i for i in range(4) if (address(larger) + 4 * i) % 16 == 4)
    out = larger[start:start + a.size].reshape(a.shape)
    out[...] = to_device(a)
    return out


def test_vector_access_falls_back_to_one_element_for_misaligned_arrays():
    launch = LAUNCHES["vector"]
    x, gain, bias, dy = layer_norm_inputs((3, 100), np.float32, 1e3)
    assert lanes_of(launch, *map(to_device, (x, gain, bias))) == (4, 4)
    # x, gain, bias misaligned in turn; the backward does not read bias
    for i, lanes in enumerate([(1, 1), (1, 1), (1, 4)]):
        arrays = [to_device(a) for a in (x, gain, bias)]
        arrays[i] = misaligned((x, gain, bias)[i])
        assert address(arrays[i]) % 16 == 4
        assert lanes_of(launch, *arrays) == lanes
    y, mean, rstd = kernels._forward(misaligned(x), to_device(gain), to_device(bias), EPS,
                                     launch)
    assert_close(to_host(y), reference.layer_norm_forward(x, gain, bias, EPS)[0], RTOL[np.float32])


def record_lanes(monkeypatch):
    """{"forward": [...], "backward": [...]}: the ``lanes`` of each held-row kernel
    that kernels/ladder/cuda_3_held.py launches from here on."""
    def recording(make_kernel, lanes_of_calls):
        def make_recorded_kernel(held, lanes=1):
            lanes_of_calls.append(lanes)
            return make_kernel(held, lanes)
        return make_recorded_kernel

    seen = {"forward": [], "backward": []}
    for direction, lanes_of_calls in seen.items():
        name = f"_held_{direction}"
        monkeypatch.setattr(kernels, name, recording(getattr(kernels, name), lanes_of_calls))
    return seen


# (shape, dtype, x misaligned, lanes) of rung 4's public functions: runs of 4
# float32 or 2 float64 columns; one element per access where H is not a whole
# number of runs, or x starts 4 bytes past a 16-byte boundary.
SIMULATED_RUNG_4_CASES = [
    ((5, 100), np.float32, False, 4),
    ((3, 66), np.float64, False, 2),
    ((2, 33), np.float32, False, 1),
    ((5, 100), np.float32, True, 1),
]
GPU_RUNG_4_CASES = [((1000, 256), np.float32, False, 4), ((64, 4096), np.float32, False, 4),
                    ((1000, 256), np.float64, False, 2), ((3, 1000), np.float64, False, 2),
                    ((3, 33), np.float32, False, 1), ((1000, 256), np.float32, True, 1)]


@pytest.mark.parametrize("shape, dtype, x_misaligned, lanes",
                         GPU_RUNG_4_CASES if ON_GPU else SIMULATED_RUNG_4_CASES,
                         ids=lambda v: str(v) if not isinstance(v, type) else v.__name__)
def test_rung_4_accesses_runs_where_aligned_and_single_elements_elsewhere(
        monkeypatch, shape, dtype, x_misaligned, lanes):
    from tinynet.kernels.ladder import cuda_4_vectors
    assert cuda_4_vectors.default_launch() == dataclasses.replace(LAUNCH, vector_access=True)
    x, gain, bias, dy = layer_norm_inputs(shape, dtype, 1e3)
    on_device = misaligned(x) if x_misaligned else to_device(x)
    assert (address(on_device) % 16 == 4) == x_misaligned
    gain_on_device = to_device(gain)
    seen = record_lanes(monkeypatch)
    y, mean, rstd = cuda_4_vectors.layer_norm_forward(on_device, gain_on_device,
                                                      to_device(bias), EPS)
    grads = cuda_4_vectors.layer_norm_backward(to_device(dy), on_device, mean, rstd,
                                               gain_on_device)
    assert seen == {"forward": [lanes], "backward": [lanes]}
    assert_results_match_reference([to_host(a) for a in (y, mean, rstd) + grads],
                                   x, gain, bias, dy, RTOL[dtype])


@pytest.mark.skipif(not SIMULATED, reason="tests the simulator's stand-ins for the intrinsics")
def test_simulated_vector_access_refuses_a_misaligned_start():
    from tinynet.kernels.ladder._cuda_vectors import load_lanes, store_lanes
    a, run = np.arange(12.0).reshape(2, 6), np.zeros(2)
    load_lanes(a, 6, run, 0, 2)                    # row 1, columns 0 and 1
    np.testing.assert_array_equal(run, [6.0, 7.0])
    store_lanes(a, 4, run, 0, 2)                   # row 0, columns 4 and 5
    np.testing.assert_array_equal(a[0, 4:], [6.0, 7.0])
    with pytest.raises(ValueError, match="must start at a multiple of 2; got element 3"):
        load_lanes(a, 3, run, 0, 2)
    with pytest.raises(ValueError, match="must start at a multiple of 2"):
        store_lanes(a, 5, run, 0, 2)


@pytest.mark.parametrize("launch_name", ["default", "block", "streamed", "vector"])
def test_constant_row_and_nan(launch_name):
    launch = LAUNCHES[launch_name]
    x, gain, bias, dy = layer_norm_inputs((3, 40), np.float32)
    x[0] = 7.0
    x[2, 5] = np.nan
    y, mean, rstd, dx, dgain, dbias = run_kernels(x, gain, bias, dy, launch)
    np.testing.assert_allclose(y[0], bias, rtol=0, atol=1e-6)
    assert np.all(np.isfinite(y[:2])) and np.all(np.isfinite(dx[:2]))
    assert np.all(np.isnan(y[2])) and np.isnan(mean[2]) and np.all(np.isnan(dx[2]))
    assert np.all(np.isnan(dgain)) and np.all(np.isfinite(dbias))


def test_float32_rows_far_from_zero_match_float64():
    def run(x, dy):
        y, _, _, dx, _, _ = run_kernels(x, None, None, dy, LAUNCH)
        return y, dx
    assert_accurate_far_from_zero(run, rows=2 if SIMULATED else 64)


def test_bad_input_is_refused_before_any_launch():
    x, gain, _, dy = layer_norm_inputs((3, 5), np.float32)
    with pytest.raises(ValueError, match=r"gain must have shape \(5,\)"):
        kernels.layer_norm_forward(to_device(x), to_device(gain[:4]), None, EPS)
    with pytest.raises(ValueError, match="2-D"):
        kernels.layer_norm_forward(to_device(x[0]), None, None, EPS)
    with pytest.raises(ValueError, match="eps must be >= 0"):
        kernels.layer_norm_forward(to_device(x), None, None, -EPS)
    with pytest.raises(TypeError, match="eps must be a real number"):
        kernels.layer_norm_forward(to_device(x), None, None, "1e-5")
    with pytest.raises(ValueError, match="dy must match x"):
        kernels.layer_norm_backward(to_device(dy[:, :4]), to_device(x), to_device(x[:, 0]),
                                    to_device(x[:, 0]), None)


def test_public_functions_use_the_default_launch():
    x, gain, bias, dy = layer_norm_inputs((3, 20), np.float32)
    y, mean, rstd = kernels.layer_norm_forward(*map(to_device, (x, gain, bias)), EPS)
    dx, dgain, dbias = kernels.layer_norm_backward(to_device(dy), to_device(x), mean, rstd,
                                                   to_device(gain))
    for name, a in zip(("y", "mean", "rstd", "dx", "dgain", "dbias"),
                       (y, mean, rstd, dx, dgain, dbias), strict=True):
        assert type(a) is type(to_device(x)), name       # CuPy on a GPU, NumPy simulated
    assert_close(to_host(y), reference.layer_norm_forward(x, gain, bias, EPS)[0], 1e-5)


@cuda.jit
def _shuffle_each_way(out):
    lane = cuda.threadIdx.x % 32
    out[0, cuda.threadIdx.x] = cuda.shfl_down_sync(0xFFFFFFFF, lane * 10, 3)
    out[1, cuda.threadIdx.x] = cuda.shfl_xor_sync(0xFFFFFFFF, lane * 10, 5)
    out[2, cuda.threadIdx.x] = cuda.shfl_up_sync(0xFFFFFFFF, lane * 10, 2)
    out[3, cuda.threadIdx.x] = cuda.shfl_sync(0xFFFFFFFF, lane * 10, 7)


@pytest.mark.skipif(not SIMULATED, reason="tests the simulator's shuffle shim")
def test_the_shuffle_shim_moves_values_within_each_warp():
    out = np.zeros((4, 64), np.int64)
    _shuffle_each_way[1, 64](out)
    lane = np.arange(64) % 32
    np.testing.assert_array_equal(out[0], np.where(lane + 3 < 32, lane + 3, lane) * 10)
    np.testing.assert_array_equal(out[1], (lane ^ 5) * 10)
    np.testing.assert_array_equal(out[2], np.where(lane >= 2, lane - 2, lane) * 10)
    np.testing.assert_array_equal(out[3], np.full(64, 70))


def _layer_norm_lstm_run(device, x_np, seed=3):
    """One LayerNorm layer and two LN-LSTM steps on ``device``: outputs and gradients."""
    from tinynet import nn
    rng = np.random.default_rng(seed)
    norm = nn.LayerNorm(x_np.shape[-1], dtype=tinynet.float64)
    cell = nn.LSTMCell(x_np.shape[-1], 6, norm="layer", dtype=tinynet.float64)
    for p in list(norm.parameters()) + list(cell.parameters()):
        p.data[...] = rng.standard_normal(p.shape)
    norm.to(device)
    cell.to(device)
    x = tinynet.tensor(x_np, requires_grad=True, device=device)
    h = c = tinynet.zeros(x_np.shape[0], 6, dtype=tinynet.float64).to(device)
    for step in range(2):
        h, c = cell(norm(x), (h, c), step=step)
    (h.sum() + (c * c).sum()).backward()
    grads = [x.grad] + [p.grad for p in list(norm.parameters()) + list(cell.parameters())]
    return [t.cpu().numpy() for t in [h, c] + grads]


@pytest.mark.gpu
@pytest.mark.skipif(not ON_GPU, reason="needs CuPy and a CUDA GPU")
def test_layer_norm_and_ln_lstm_on_the_gpu_match_the_cpu_and_the_reference():
    """End to end: the modules pick the CUDA kernels on 'cuda' tensors, and their
    values and gradients match the CPU kernels and the reference switch."""
    x_np = np.random.default_rng(0).standard_normal((5, 40)) * 3 + 1e3
    on_cpu = _layer_norm_lstm_run("cpu", x_np)
    on_gpu = _layer_norm_lstm_run("cuda", x_np)
    with tinynet.use_reference_kernels():
        on_gpu_reference = _layer_norm_lstm_run("cuda", x_np)
    for ours, cpu, reference_path in zip(on_gpu, on_cpu, on_gpu_reference, strict=True):
        np.testing.assert_allclose(ours, cpu, rtol=1e-9, atol=1e-11)
        np.testing.assert_allclose(ours, reference_path, rtol=1e-9, atol=1e-11)


def test_a_numba_cuda_that_cannot_compile_under_this_numpy_is_named():
    """numba-cuda 0.30.4 fails to compile under NumPy 2.5 (no np.row_stack):
    importing the kernels then says so, instead of failing at the first launch.
    (A numba-cuda that copes imports fine, which passes too.)"""
    script = ("import numpy\n"
              "if hasattr(numpy, 'row_stack'):\n"
              "    del numpy.row_stack            # as in NumPy 2.5\n"
              "import tinynet.kernels.ladder.cuda_3_held\n"
              "from numba.cuda.np import arrayobj   # what the first kernel compile imports\n")
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="0")
    result = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                            text=True, timeout=120)
    named = re.search(r"ImportError: numba-cuda \S+ cannot compile CUDA kernels with NumPy "
                      r"\S+ \(.*row_stack.*\); install numpy<2.5", result.stderr)
    assert result.returncode == 0 or named, result.stderr


@pytest.mark.parametrize("launch_name", ["gpu", "simulator"])
def test_launch_plans_cover_every_row_within_their_limits(launch_name):
    """For every H: the team's threads times the held elements cover the row,
    held is a power of two within its limit, held rows stay on blocks small
    enough to launch with any register count, and the grids fit the rows."""
    launch = kernels.GPU_LAUNCH if launch_name == "gpu" else kernels.SIMULATOR_LAUNCH
    for H in list(range(1, 1100)) + [4095, 4096, 4097, 8192, 8193, 65536]:
        for plan, most_held in ((launch.forward_plan(H), launch.forward_held),
                                (launch.backward_plan(H), launch.backward_held)):
            assert plan.threads % 32 == 0 and plan.threads <= launch.max_block_threads
            assert (plan.team == "warp") == (H <= launch.warp_row_max_h)
            if plan.held:
                assert plan.held * plan.threads >= H > plan.held * plan.threads // 2 or \
                    plan.held == 1
                assert plan.held & (plan.held - 1) == 0 and plan.held <= most_held
                assert plan.team == "warp" or plan.threads <= launch.max_held_threads
        for rows in (1, 5, 3000):
            blocks, threads = launch.forward_grid(rows, H)
            plan = launch.forward_plan(H)
            teams = blocks * (threads // 32 if plan.team == "warp" and plan.held else 1)
            assert teams >= rows and blocks >= 1
            blocks, threads, partial_rows = launch.backward_grid(rows, H)
            assert blocks >= 1 and 1 <= partial_rows and threads <= 1024


def test_launch_refuses_knobs_that_cannot_launch():
    with pytest.raises(ValueError, match="max_held_threads must be at most 256"):
        kernels.Launch(max_held_threads=512)
    with pytest.raises(ValueError, match="backward_threads must be a multiple of 32"):
        kernels.Launch(backward_threads=100)
    with pytest.raises(ValueError, match="forward_held must be 1 to 32"):
        kernels.Launch(forward_held=64)


PUBLIC_SIMULATOR_USE = """
import numpy as np
from tinynet.kernels.ladder import cuda_3_held, reference
rng = np.random.default_rng(0)
x, gain, bias = rng.standard_normal((3, 40)), rng.standard_normal(40), rng.standard_normal(40)
dy = rng.standard_normal((3, 40))
y, mean, rstd = cuda_3_held.layer_norm_forward(x, gain, bias, 1e-5)
expected = reference.layer_norm_forward(x, gain, bias, 1e-5)
for got, want in zip((y, mean, rstd), expected, strict=True):
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
grads = cuda_3_held.layer_norm_backward(dy, x, mean, rstd, gain)
for got, want in zip(grads, reference.layer_norm_backward(dy, x, mean, rstd, gain), strict=True):
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
print("ok")
"""


@pytest.mark.skipif(not SIMULATED, reason="the simulator's own path")
def test_the_public_module_runs_under_the_simulator_in_a_fresh_process():
    """A user learning CUDA without a GPU calls the module directly, with no test set-up."""
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    result = subprocess.run([sys.executable, "-c", PUBLIC_SIMULATOR_USE], env=env,
                            capture_output=True, text=True, timeout=600, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip() == "ok"
