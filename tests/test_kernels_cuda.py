"""The Numba CUDA kernels (tinynet.kernels.cuda) against the NumPy reference.

On a machine with CuPy and a GPU these run on the GPU, with CuPy arrays and
every awkward H. Elsewhere they run under Numba's CUDA simulator (switched on
by conftest.py), on small shapes, since the simulator runs each CUDA thread
as a Python thread; its missing warp shuffles are added by a test-only shim.
The simulator's launches are small enough that both the warp-per-row and the
block-per-row paths, ragged last blocks and several backward blocks all run.
"""
import dataclasses

import numba
import numpy as np
import pytest
from numba import cuda

import tinynet
from tinynet.kernels import reference

from test_kernels_cpu import (EPS, RTOL, AWKWARD_H, assert_accurate_far_from_zero, assert_close,
                              layer_norm_inputs)

SIMULATED = bool(numba.config.ENABLE_CUDASIM)
ON_GPU = not SIMULATED and tinynet.cuda_is_available()
pytestmark = pytest.mark.skipif(not (SIMULATED or ON_GPU),
                                reason="needs CuPy and a CUDA GPU, or the CUDA simulator")

if SIMULATED:
    from tinynet.kernels import _cuda_sim_shuffle
    _cuda_sim_shuffle.install()
if SIMULATED or ON_GPU:
    from tinynet.kernels import cuda as kernels

    LAUNCH = kernels.default_launch()
    # Short rows through the block-per-row path, with two warps per block.
    BLOCK_PER_ROW = dataclasses.replace(LAUNCH, warp_row_max_h=16, max_block_threads=64)


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
    y, mean, rstd, dx, dgain, dbias = run_kernels(x, gain, bias, dy, launch)
    ref_y, ref_mean, ref_rstd = reference.layer_norm_forward(x, gain, bias, EPS)
    assert y.dtype == x.dtype and mean.dtype == rstd.dtype == np.float64
    assert_close(y, ref_y, rtol)
    assert_close(mean, ref_mean, rtol, scale=np.max(np.abs(x)))
    assert_close(rstd, ref_rstd, rtol)
    ref_grads = reference.layer_norm_backward(dy, x, ref_mean, ref_rstd, gain)
    for actual, expected in zip((dx, dgain, dbias), ref_grads):
        if expected is None:
            assert actual is None
        else:
            assert actual.dtype == expected.dtype
            assert_close(actual, expected, rtol)


# (shape, dtype, offset, path): warp per row with a ragged last block (5 rows
# in blocks of 2 warps), partial warps (H = 1, 7, 33), one row, several
# backward blocks, and block per row both for long rows and for forced short ones.
SIMULATED_CASES = [
    ((4, 64), np.float32, 0.0, "warp"),
    ((5, 100), np.float32, 1e3, "warp"),
    ((3, 33), np.float64, 1e3, "warp"),
    ((1, 1), np.float32, 0.0, "warp"),
    ((2, 7), np.float64, 0.0, "warp"),
    ((2, 1100), np.float32, 0.0, "block"),
    ((3, 100), np.float64, 1e3, "forced block"),
]
GPU_CASES = ([((rows, H), dtype, offset, "default") for H in AWKWARD_H for rows in (1, 3)
              for dtype in (np.float32, np.float64) for offset in (0.0, 1e3)]
             + [((4096, 1024), np.float32, 1e3, "default"), ((1000, 256), np.float64, 0.0,
                                                             "default"),
                ((5, 100), np.float32, 1e3, "forced block")])


@pytest.mark.parametrize("shape, dtype, offset, path", GPU_CASES if ON_GPU else SIMULATED_CASES,
                         ids=lambda v: str(v) if not isinstance(v, type) else v.__name__)
def test_kernels_match_the_reference(shape, dtype, offset, path):
    launch = BLOCK_PER_ROW if path == "forced block" else LAUNCH
    assert launch.warp_per_row(shape[1]) == (path in ("warp", "default") and shape[1] <= 1024)
    x, gain, bias, dy = layer_norm_inputs(shape, dtype, offset)
    assert_matches_reference(x, gain, bias, dy, launch, RTOL[dtype])


def test_without_gain_or_bias_and_non_contiguous():
    x, gain, bias, dy = layer_norm_inputs((3, 66), np.float64)
    assert_matches_reference(x[:, ::2], None, None, dy[:, ::2], LAUNCH, RTOL[np.float64])
    assert_matches_reference(x[:, ::2], gain[::2], None, dy[:, ::2], LAUNCH, RTOL[np.float64])


@pytest.mark.parametrize("launch_name", ["warp", "block"])
def test_constant_row_and_nan(launch_name):
    launch = LAUNCH if launch_name == "warp" else BLOCK_PER_ROW
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
    with pytest.raises(ValueError, match="dy must match x"):
        kernels.layer_norm_backward(to_device(dy[:, :4]), to_device(x), to_device(x[:, 0]),
                                    to_device(x[:, 0]), None)


def test_public_functions_use_the_default_launch():
    x, gain, bias, dy = layer_norm_inputs((3, 20), np.float32)
    y, mean, rstd = kernels.layer_norm_forward(*map(to_device, (x, gain, bias)), EPS)
    dx, dgain, dbias = kernels.layer_norm_backward(to_device(dy), to_device(x), mean, rstd,
                                                   to_device(gain))
    for name, a in zip(("y", "mean", "rstd", "dx", "dgain", "dbias"),
                       (y, mean, rstd, dx, dgain, dbias)):
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
