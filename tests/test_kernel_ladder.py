"""Every CPU rung of the kernel ladder (kernels/ladder/) against the reference,
on the same cases: awkward shapes, both dtypes, offset and constant rows, NaN
rows, non-contiguous inputs, any thread count; RMSNorm where a rung has it."""
import importlib

import numba
import numpy as np
import pytest

from tinynet.kernels import ladder
from tinynet.kernels.ladder import reference

from test_kernels_cpu import (
    EPS,
    RTOL,
    SHAPES,
    assert_accurate_far_from_zero,
    assert_close,
    layer_norm_inputs,
)

RUNGS = [rung for rung in ladder.LADDERS["cpu"] if rung.name != "reference"]
RMS_RUNGS = [rung for rung in RUNGS if "rms_norm_forward" in rung.kernels]


def kernels_of(rung):
    return importlib.import_module(rung.module)


def layer_norm_results(kernels, x, gain, bias, dy):
    y, mean, rstd = kernels.layer_norm_forward(x, gain, bias, EPS)
    return (y, mean, rstd) + tuple(kernels.layer_norm_backward(dy, x, mean, rstd, gain))


def rms_norm_results(kernels, x, gain, dy):
    y, rstd = kernels.rms_norm_forward(x, gain, EPS)
    return (y, rstd) + tuple(kernels.rms_norm_backward(dy, x, rstd, gain))


def assert_results_match(actual, expected, x, rtol, dx_scale=None):
    """Each result to ``rtol`` of the largest expected magnitude; μ to that of x, and
    dx to ``dx_scale`` if given: the size of the terms that cancel in it, rstd·|g|."""
    layer_norm = len(actual) == 6
    for i, (a, e) in enumerate(zip(actual, expected, strict=True)):
        if e is None:
            assert a is None, i
            continue
        assert a.shape == e.shape and a.dtype == e.dtype, i
        scale = {1: np.max(np.abs(x)) if layer_norm else None,
                 3 if layer_norm else 2: dx_scale}.get(i)
        assert_close(a, e, rtol, scale)


@pytest.mark.parametrize("rung", RUNGS, ids=lambda r: r.name)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("offset", [0.0, 1e3], ids=["centered", "offset"])
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
def test_missing_parameters_and_views(rung):
    kernels = kernels_of(rung)
    x, gain, bias, dy = layer_norm_inputs((6, 40), np.float64, offset=2.0)
    for g, b in ((None, None), (gain, None), (None, bias)):
        assert_results_match(layer_norm_results(kernels, x, g, b, dy),
                             layer_norm_results(reference, x, g, b, dy), x, 1e-12)
    for views in ((x[::2, ::2], gain[::2], bias[::2], dy[::2, ::2]),
                  (x.T.copy().T, gain, bias, np.asfortranarray(dy))):
        assert_results_match(layer_norm_results(kernels, *views),
                             layer_norm_results(reference, *views), x, 1e-12)
    if rung in RMS_RUNGS:
        assert_results_match(rms_norm_results(kernels, np.asfortranarray(x), None, dy),
                             rms_norm_results(reference, x, None, dy), x, 1e-12)


@pytest.mark.parametrize("rung", RUNGS, ids=lambda r: r.name)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_constant_row_gives_the_bias_and_finite_gradients(rung, dtype):
    kernels = kernels_of(rung)
    x, gain, bias, dy = layer_norm_inputs((3, 50), dtype)
    x[1] = 7.0
    y, mean, rstd, *grads = layer_norm_results(kernels, x, gain, bias, dy)
    np.testing.assert_array_equal(y[1], bias)
    assert mean[1] == 7.0 and rstd[1] == pytest.approx(1 / np.sqrt(EPS))
    assert all(np.all(np.isfinite(g)) for g in grads)


@pytest.mark.parametrize("rung", RUNGS, ids=lambda r: r.name)
@pytest.mark.parametrize("shape", [(4, 1000), (600, 1024)], ids=str)
def test_nan_reaches_its_row_and_stays_there(rung, shape):
    kernels = kernels_of(rung)
    x, gain, bias, dy = layer_norm_inputs(shape, np.float32)
    x[1, 3] = np.nan
    y, mean, rstd = kernels.layer_norm_forward(x, gain, bias, EPS)
    assert np.all(np.isnan(y[1])) and np.isnan(mean[1]) and np.isnan(rstd[1])
    assert np.all(np.isfinite(np.delete(y, 1, axis=0)))
    x[1, 3] = 0.0
    dy[2, 5] = np.nan
    _, _, _, dx, dgain, dbias = layer_norm_results(kernels, x, gain, bias, dy)
    assert np.all(np.isnan(dx[2])) and np.all(np.isfinite(np.delete(dx, 2, axis=0)))
    assert np.isnan(dgain[5]) and np.isnan(dbias[5])
    assert np.all(np.isfinite(np.delete(dgain, 5))) and np.all(np.isfinite(np.delete(dbias, 5)))


@pytest.mark.parametrize("rung", RUNGS, ids=lambda r: r.name)
@pytest.mark.parametrize("shape", [(2000, 33), (300, 256), (7, 1024), (3, 4097), (600, 1000),
                                   (9000, 64)], ids=str)
def test_the_number_of_threads_does_not_change_a_bit(rung, shape):
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("needs 2 Numba threads")
    kernels = kernels_of(rung)
    x, gain, bias, dy = layer_norm_inputs(shape, np.float32, offset=3.0)
    before = numba.get_num_threads()
    results = []
    try:
        for threads in (1, 2):
            numba.set_num_threads(threads)
            results.append(layer_norm_results(kernels, x, gain, bias, dy))
    finally:
        numba.set_num_threads(before)
    for one, two in zip(*results, strict=True):
        np.testing.assert_array_equal(one, two)


@pytest.mark.parametrize("rung", RUNGS, ids=lambda r: r.name)
def test_float32_rows_far_from_zero_match_float64(rung):
    kernels = kernels_of(rung)

    def run(x, dy):
        y, mean, rstd = kernels.layer_norm_forward(x, None, None, EPS)
        return y, kernels.layer_norm_backward(dy, x, mean, rstd, None)[0]
    assert_accurate_far_from_zero(run)


@pytest.mark.parametrize("rung", RUNGS, ids=lambda r: r.name)
def test_bad_arguments_are_named(rung):
    kernels = kernels_of(rung)
    x, gain, bias, _ = layer_norm_inputs((4, 8), np.float32)
    with pytest.raises(ValueError, match="gain must have shape"):
        kernels.layer_norm_forward(x, gain[:-1], bias, EPS)
    with pytest.raises(ValueError, match="eps must be"):
        kernels.layer_norm_forward(x, gain, bias, -1.0)
    with pytest.raises(ValueError, match="2-D"):
        kernels.layer_norm_forward(x[0], gain, bias, EPS)


def test_the_first_compile_says_so_once_and_later_runs_load_the_cache(tmp_path):
    """On a fresh Numba cache the first LayerNorm (on the default rung) says on
    stderr what it compiles (once, however many kernels); a later process loads
    them from the cache."""
    import os
    import subprocess
    import sys
    code = ("import tinynet, tinynet.kernels._compile as compile\n"
            "compile.NOTICE_AFTER_S = 0.0     # whatever this machine's compile takes\n"
            "x = tinynet.randn(4, 16, requires_grad=True)\n"
            "tinynet.nn.LayerNorm(16)(x).sum().backward()\n"
            "tinynet.nn.LayerNorm(16).double()(x.double()).sum().backward()\n"
            "import importlib\n"
            "from tinynet.kernels import ladder\n"
            "rung = importlib.import_module(next(r.module for r in ladder.LADDERS['cpu']\n"
            "                                    if r.name == ladder.DEFAULT['cpu']))\n"
            "stats = [k.dispatcher.stats for k in (rung._forward_serial, rung._backward_serial)]\n"
            "print(*(sum(sum(getattr(s, k).values()) for s in stats)\n"
            "        for k in ('cache_hits', 'cache_misses')))\n")
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path))

    def run():
        result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                                text=True, timeout=300, check=True)
        hits, misses = map(int, result.stdout.split())
        return result.stderr, hits, misses

    stderr, hits, misses = run()
    assert stderr.count("tinynet: compiling the CPU LayerNorm kernels") == 1, stderr
    assert "this happens once" in stderr
    assert (hits, misses) == (0, 4)                 # two kernels, two dtypes
    _, hits, misses = run()
    assert (hits, misses) == (4, 0)


def overflowing_rows(shape, dtype, seed=1):
    """x, gain, bias, dy of ``shape`` whose rows 1-3 overflow x's dtype in a sum of
    squares (one huge element; every element huge; dy·(x − μ) huge in the backward),
    the other rows ordinary."""
    x, gain, bias, dy = layer_norm_inputs(shape, dtype, seed=seed)
    big = 1e20 if dtype == np.float32 else 1e160
    x[1, shape[1] // 2] = big
    x[2] *= big * 1e5 if dtype == np.float32 else big
    x[3] *= 1e36 if dtype == np.float32 else 1e150
    dy[3] *= 10.0
    return x, gain, bias, dy


@pytest.mark.parametrize("rung", RUNGS, ids=lambda r: r.name)
@pytest.mark.parametrize("shape", [(4, 4), (5, 1000), (4, 4097), (80, 1024)], ids=str)
def test_float32_rows_whose_squares_overflow_float32_match_float64(rung, shape):
    """The float64 reference computes these rows exactly; so must every rung, from
    its float32 arrays (PyTorch's float32 LayerNorm gives NaN)."""
    kernels = kernels_of(rung)
    x, gain, bias, dy = overflowing_rows(shape, np.float32)
    actual = layer_norm_results(kernels, x, gain, bias, dy)
    exact = layer_norm_results(reference, *(a.astype(np.float64) for a in (x, gain, bias, dy)))
    for a in actual:
        assert np.all(np.isfinite(a))
    y, mean, rstd, dx, dgain, dbias = actual
    for r in range(shape[0]):
        assert_close(y[r], exact[0][r], 1e-5)
        assert_close(dx[r], exact[3][r], 1e-4, scale=rstd[r] * np.max(np.abs(dy[r] * gain)))
    np.testing.assert_allclose(rstd, exact[2], rtol=1e-6)
    assert_close(dgain, exact[4], 1e-5)
    assert_close(dbias, exact[5], 1e-5)


@pytest.mark.parametrize("rung", [ladder.REFERENCE] + RUNGS, ids=lambda r: r.name)
@pytest.mark.parametrize("shape", [(4, 4), (5, 1000), (80, 1024)], ids=str)
def test_float64_rows_whose_squares_overflow_float64_give_nan(rung, shape):
    """Rows 1 and 2 overflow float64's sum of squares: NaN in their outputs and
    gradients, never β; the other rows (row 3's squares do not overflow) as
    ordinary."""
    kernels = kernels_of(rung)
    x, gain, bias, dy = overflowing_rows(shape, np.float64)
    with np.errstate(over="ignore"):           # the reference's NumPy says so
        y, mean, rstd, dx, dgain, dbias = layer_norm_results(kernels, x, gain, bias, dy)
    for r in (1, 2):
        assert np.all(np.isnan(y[r])) and np.isnan(rstd[r]) and np.all(np.isnan(dx[r]))
    assert np.all(np.isnan(dgain))             # every column's sum holds the NaN rows
    ordinary = [0, 3] + list(range(4, shape[0]))
    expected = layer_norm_results(reference, x[ordinary], gain, bias, dy[ordinary])
    assert_close(y[ordinary], expected[0], 1e-12)
    assert_close(dx[ordinary], expected[3], 1e-12)
    assert_close(dbias, dy.sum(axis=0), 1e-12)


@pytest.mark.parametrize("rung", [ladder.REFERENCE] + RMS_RUNGS, ids=lambda r: r.name)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_rms_norm_of_rows_that_overflow(rung, dtype):
    """RMSNorm's float32 squares past float32's range: exact, as in float64; a float64
    row whose squares overflow float64: NaN (PyTorch's rms_norm gives 0 there)."""
    kernels = kernels_of(rung)
    x, gain, _, dy = overflowing_rows((5, 1000), dtype)
    with np.errstate(over="ignore"):
        y, rstd, dx, dgain = rms_norm_results(kernels, x, gain, dy)
    if dtype == np.float32:
        exact = rms_norm_results(reference, *(a.astype(np.float64) for a in (x, gain, dy)))
        assert_close(y, exact[0], 1e-5)
        np.testing.assert_allclose(rstd, exact[1], rtol=1e-6)
    else:
        assert np.all(np.isnan(y[1:3])) and np.all(np.isnan(dx[1:3]))
        assert np.all(np.isfinite(y[[0, 3, 4]]))


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_every_rung_defines_its_kernels_with_a_plain_def_in_its_own_file(device):
    """A reader who opens a rung's file finds each of its kernels there, as a ``def``
    (not made by a factory elsewhere), and the rung's folder is the ladder's."""
    import ast
    import inspect
    from pathlib import Path

    folder = Path(ladder.__file__).parent
    for rung in ladder.LADDERS[device]:
        path = folder / (rung.module.rsplit(".", 1)[1] + ".py")
        assert path.exists(), f"{rung.module} is not in {folder}"
        defined = {node.name for node in ast.parse(path.read_text(encoding="utf-8")).body
                   if isinstance(node, ast.FunctionDef)}
        missing = set(rung.kernels) - defined
        assert not missing, f"{rung.module} does not def {sorted(missing)}"
        if device == "cpu":
            module = kernels_of(rung)
            for name in rung.kernels:
                assert inspect.getsourcefile(getattr(module, name)) == str(path)
