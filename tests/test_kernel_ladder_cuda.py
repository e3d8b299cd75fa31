"""The CUDA rungs of the kernel ladder (kernels/ladder/) against the reference,
under Numba's CUDA simulator (small shapes: it runs each CUDA thread as a Python
thread) or on a GPU with CuPy arrays (every awkward H); RMSNorm where a rung has
it. The machinery of the kernels held in registers (rungs 3 and 4: every launch
path, vector access) has its own file: tests/test_kernels_cuda.py."""
import importlib

import numba
import numpy as np
import pytest

import tinynet
from tinynet.kernels import ladder
from tinynet.kernels.ladder import reference

from test_kernel_ladder import assert_results_match
from test_kernels_cpu import AWKWARD_H, EPS, RTOL, layer_norm_inputs

SIMULATED = bool(numba.config.ENABLE_CUDASIM)
ON_GPU = not SIMULATED and tinynet.cuda_is_available()
pytestmark = [
    pytest.mark.skipif(not (SIMULATED or ON_GPU),
                       reason="needs CuPy and a CUDA GPU, or the CUDA simulator"),
    pytest.mark.filterwarnings("ignore:.*Grid size"),
]
RUNGS = [rung for rung in ladder.LADDERS["cuda"] if rung.name != "reference"]
RMS_RUNGS = [rung for rung in RUNGS if "rms_norm_forward" in rung.kernels]
# Simulated: partial warps and blocks (H = 1, 7, 40, 100), one row, a ragged
# last block of warps (5 rows, 2 warps a block), rows longer than a warp and a block.
SHAPES = ([(1, 1), (2, 7), (5, 40), (3, 100)] if SIMULATED else
          [(rows, H) for H in AWKWARD_H for rows in (1, 3)] + [(4096, 1024), (700, 64)])


def kernels_of(rung):
    return importlib.import_module(rung.module)


def on_device(*arrays):
    if not ON_GPU:
        return arrays
    import cupy
    return tuple(None if a is None else cupy.asarray(a) for a in arrays)


def on_host(results):
    return [None if a is None else tinynet.backend.as_numpy(a) for a in results]


def layer_norm_results(kernels, x, gain, bias, dy):
    x, gain, bias, dy = on_device(x, gain, bias, dy)
    y, mean, rstd = kernels.layer_norm_forward(x, gain, bias, EPS)
    return on_host((y, mean, rstd) + tuple(kernels.layer_norm_backward(dy, x, mean, rstd, gain)))


def rms_norm_results(kernels, x, gain, dy):
    x, gain, dy = on_device(x, gain, dy)
    y, rstd = kernels.rms_norm_forward(x, gain, EPS)
    return on_host((y, rstd) + tuple(kernels.rms_norm_backward(dy, x, rstd, gain)))


@pytest.mark.parametrize("rung", RUNGS, ids=lambda r: r.name)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("offset", [1e3] if SIMULATED else [0.0, 1e3])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_layer_norm_matches_the_reference(rung, shape, offset, dtype):
    x, gain, bias, dy = layer_norm_inputs(shape, dtype, offset)
    assert_results_match(layer_norm_results(kernels_of(rung), x, gain, bias, dy),
                         layer_norm_results(reference, x, gain, bias, dy), x, RTOL[dtype])


@pytest.mark.parametrize("rung", RMS_RUNGS, ids=lambda r: r.name)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_rms_norm_matches_the_reference(rung, shape, dtype):
    x, gain, _, dy = layer_norm_inputs(shape, dtype, offset=1.0)
    expected = rms_norm_results(reference, x, gain, dy)
    cancelling = np.max(np.abs(dy * gain) * expected[1][:, None])      # rstd·|g|
    assert_results_match(rms_norm_results(kernels_of(rung), x, gain, dy), expected, x,
                         RTOL[dtype], dx_scale=cancelling)


@pytest.mark.parametrize("rung", RUNGS, ids=lambda r: r.name)
def test_missing_parameters_constant_and_nan_rows(rung):
    kernels = kernels_of(rung)
    x, gain, bias, dy = layer_norm_inputs((3, 40), np.float32, offset=2.0)
    assert_results_match(layer_norm_results(kernels, x, None, None, dy),
                         layer_norm_results(reference, x, None, None, dy), x, 1e-5)
    x[1] = 7.0
    x[2, 3] = np.nan
    y, mean, rstd, dx, dgain, dbias = layer_norm_results(kernels, x, gain, bias, dy)
    np.testing.assert_array_equal(y[1], bias)
    assert mean[1] == 7.0 and np.all(np.isfinite(dx[1]))
    assert np.all(np.isnan(y[2])) and np.all(np.isfinite(y[:2]))


@pytest.mark.parametrize("rung", RUNGS, ids=lambda r: r.name)
def test_the_same_bits_on_every_run(rung):
    """dgain and dbias are summed without atomics, in a fixed order."""
    x, gain, bias, dy = layer_norm_inputs((3, 33), np.float32, offset=1.0)
    first = layer_norm_results(kernels_of(rung), x, gain, bias, dy)
    second = layer_norm_results(kernels_of(rung), x, gain, bias, dy)
    for a, b in zip(first, second, strict=True):
        np.testing.assert_array_equal(a, b)


def test_a_rung_is_chosen_by_name_on_its_device_only():
    """use_kernels("vectors") runs rung 4's LayerNorm on cuda and rung 2's RMSNorm
    (the nearest rung below that has one); the CPU has no such rung."""
    from tinynet.backend import KernelTable
    from tinynet.kernels.ladder import cuda_2_warp, cuda_4_vectors
    on_cuda, on_cpu = KernelTable("cuda"), KernelTable("cpu")
    with tinynet.use_kernels("vectors"):
        assert on_cuda.layer_norm_forward is cuda_4_vectors.layer_norm_forward
        assert on_cuda.layer_norm_backward is cuda_4_vectors.layer_norm_backward
        assert on_cuda.rms_norm_forward is cuda_2_warp.rms_norm_forward
        with pytest.raises(ValueError, match="no kernel rung 'vectors' on cpu; its rungs are "
                                             "reference, textbook"):
            on_cpu.layer_norm_forward
    default = next(r for r in RUNGS if r.name == ladder.DEFAULT["cuda"])
    assert on_cuda.layer_norm_forward is kernels_of(default).layer_norm_forward


def test_the_environment_variable_chooses_a_rung_for_the_process():
    import os
    import subprocess
    import sys
    code = ("from tinynet.backend import KernelTable\n"
            "print(KernelTable('cuda').layer_norm_forward.__module__)\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env=dict(os.environ, TINYNET_KERNELS="vectors"), timeout=120)
    assert result.stdout.strip() == "tinynet.kernels.ladder.cuda_4_vectors", result.stderr[-2000:]


@pytest.mark.parametrize("rung", RUNGS, ids=lambda r: r.name)
def test_rows_whose_squares_overflow(rung):
    """float32 squares past float32's range are summed in float64: exact, as the
    float64 reference; a float64 row whose squares overflow float64 gets NaN, the
    other rows as ordinary."""
    kernels = kernels_of(rung)
    x, gain, bias, dy = layer_norm_inputs((4, 40), np.float32)
    x[1, 5], x[2] = 1e20, x[2] * 1e25
    y, _, rstd, dx, _, _ = layer_norm_results(kernels, x, gain, bias, dy)
    exact = layer_norm_results(reference, *(a.astype(np.float64) for a in (x, gain, bias, dy)))
    np.testing.assert_allclose(y, exact[0], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(rstd, exact[2], rtol=1e-6)
    x, gain, bias, dy = layer_norm_inputs((4, 40), np.float64)
    x[1, 5], x[2] = 1e160, x[2] * 1e160
    with np.errstate(over="ignore"):          # the simulator's NumPy says so
        y, _, rstd, dx, _, _ = layer_norm_results(kernels, x, gain, bias, dy)
    assert np.all(np.isnan(y[1:3])) and np.all(np.isnan(dx[1:3])) and np.all(np.isnan(rstd[1:3]))
    assert np.all(np.isfinite(y[[0, 3]])) and np.all(np.isfinite(dx[[0, 3]]))
