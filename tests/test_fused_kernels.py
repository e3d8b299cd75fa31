"""The CPU's GELU and attention-softmax kernels against their specs in kernels/ops/,
and the float32 erf they use against the C library's."""
import math

import numpy as np
import pytest

import tinynet
from tinynet.kernels.ops import attention_softmax_cpu, attention_softmax_spec, gelu_cpu, gelu_spec

SHAPES = [(1,), (7,), (3, 33), (2, 5, 64), (4, 1, 1)]


def draw(shape, dtype, seed=0, scale=3.0):
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(dtype)


@pytest.mark.parametrize("shape", SHAPES)
def test_gelu_float64_matches_the_reference(shape):
    x, grad = draw(shape, np.float64), draw(shape, np.float64, seed=1)
    y, cdf = gelu_cpu.gelu_forward(x)
    ref_y, ref_cdf = gelu_spec.gelu_forward(x)
    np.testing.assert_allclose(y, ref_y, rtol=1e-15, atol=1e-16)
    np.testing.assert_allclose(cdf, ref_cdf, rtol=1e-15, atol=1e-16)
    np.testing.assert_allclose(gelu_cpu.gelu_backward(grad, x, cdf),
                               gelu_spec.gelu_backward(grad, x, ref_cdf), rtol=1e-14, atol=1e-15)


@pytest.mark.parametrize("shape", SHAPES)
def test_gelu_float32_is_within_float32_accuracy_of_the_float64_reference(shape):
    x, grad = draw(shape, np.float32), draw(shape, np.float32, seed=1)
    y, cdf = gelu_cpu.gelu_forward(x)
    assert y.dtype == cdf.dtype == np.float32 and y.shape == x.shape
    ref_y, ref_cdf = gelu_spec.gelu_forward(x.astype(np.float64))
    # For x < -4, Φ(x) = (1 + erf)/2 with erf near -1 has float32's absolute accuracy
    # only, as in PyTorch's float32 GELU.
    np.testing.assert_allclose(y, ref_y, rtol=4e-7, atol=1e-6)
    dx = gelu_cpu.gelu_backward(grad, x, cdf)
    assert dx.dtype == np.float32
    ref_dx = gelu_spec.gelu_backward(grad.astype(np.float64), x.astype(np.float64), ref_cdf)
    np.testing.assert_allclose(dx, ref_dx, rtol=1e-6, atol=1e-6)


def test_gelu_float32_is_no_less_accurate_than_torchs():
    torch = pytest.importorskip("torch")
    x = np.linspace(-8, 8, 400001, dtype=np.float32)
    exact = gelu_spec.gelu_forward(x.astype(np.float64))[0]
    ours = np.abs(gelu_cpu.gelu_forward(x)[0] - exact).max()
    theirs = np.abs(torch.nn.functional.gelu(torch.from_numpy(x)).numpy() - exact).max()
    assert ours <= theirs and ours < 1e-6


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gelu_shared_out_over_threads_gives_the_bits_of_one_thread(dtype):
    from tinynet.kernels._common import PARALLEL_MIN_ELEMENTS
    size = 2 * PARALLEL_MIN_ELEMENTS + 3          # shared out; its pieces below are not
    x, grad = draw(size, dtype), draw(size, dtype, seed=1)
    y, cdf = gelu_cpu.gelu_forward(x)
    dx = gelu_cpu.gelu_backward(grad, x, cdf)
    pieces = [slice(start, start + PARALLEL_MIN_ELEMENTS - 1)
              for start in range(0, size, PARALLEL_MIN_ELEMENTS - 1)]
    one_thread = [gelu_cpu.gelu_forward(x[p]) for p in pieces]
    np.testing.assert_array_equal(y, np.concatenate([y_p for y_p, _ in one_thread]))
    np.testing.assert_array_equal(cdf, np.concatenate([c for _, c in one_thread]))
    np.testing.assert_array_equal(dx, np.concatenate(
        [gelu_cpu.gelu_backward(grad[p], x[p], cdf[p]) for p in pieces]))


def test_gelu_kernels_take_strided_inputs():
    x = draw((6, 8), np.float32)[:, ::2]
    y, cdf = gelu_cpu.gelu_forward(x)
    np.testing.assert_array_equal(y, gelu_cpu.gelu_forward(np.ascontiguousarray(x))[0])
    np.testing.assert_array_equal(gelu_cpu.gelu_backward(x, x, cdf),
                                  gelu_cpu.gelu_backward(*(np.ascontiguousarray(a)
                                                           for a in (x, x, cdf))))


def test_erf32_is_within_float32_accuracy_of_the_c_library():
    x = np.concatenate([np.linspace(-6, 6, 20001), [0.0, -0.0, 1e-30, 3.99, 4.0, 4.01, 30.0]])
    ours = np.array([gelu_cpu.erf32(np.float32(v)) for v in x], dtype=np.float64)
    exact = np.array([math.erf(np.float32(v)) for v in x])
    error = np.abs(ours - exact)
    assert error.max() < 4.2e-7
    assert (error <= 4.2e-7 * np.abs(exact)).all()      # relative, too: exact near 0
    ulp = np.spacing(np.abs(exact).astype(np.float32)).astype(np.float64)
    assert (error <= 7.1 * ulp).all()
    assert ours[x >= 4].tolist() == [1.0] * int((x >= 4).sum())


def masks(shape):
    *lead, queries, keys = shape
    rng = np.random.default_rng(2)
    causal = np.where(np.triu(np.ones((queries, keys), bool), 1), -np.inf, 0.0)
    per_batch = np.where(rng.random((lead[0], 1, queries, keys)) < 0.3, -np.inf, 0.0)
    return {"none": None, "causal": causal, "4-D causal": causal[None, None],
            "per batch": per_batch, "additive": rng.standard_normal((queries, keys)),
            "keys only": rng.standard_normal((keys,))}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(2, 3, 4, 4), (2, 1, 5, 7), (3, 2, 1, 33)])
@pytest.mark.parametrize("mask", ["none", "causal", "4-D causal", "per batch", "additive",
                                  "keys only"])
def test_attention_softmax_matches_the_reference(dtype, shape, mask):
    bias = masks(shape)[mask]
    bias = None if bias is None else bias.astype(dtype)
    scores = draw(shape, dtype)
    tol = dict(rtol=1e-6, atol=1e-7) if dtype == np.float32 else dict(rtol=1e-13, atol=1e-15)
    weights = attention_softmax_cpu.attention_softmax_forward(scores.copy(), bias, 0.3)
    expected = attention_softmax_spec.attention_softmax_forward(scores.copy(), bias, 0.3)
    np.testing.assert_allclose(weights, expected, **tol)
    grad = draw(shape, dtype, seed=3)
    np.testing.assert_allclose(
        attention_softmax_cpu.attention_softmax_backward(grad.copy(), weights, 0.3),
        attention_softmax_spec.attention_softmax_backward(grad.copy(), expected, 0.3), **tol)


def test_attention_softmax_of_a_fully_masked_row_is_zero_with_no_warning():
    scores = draw((1, 2, 3, 4), np.float64)
    bias = np.zeros((3, 4))
    bias[1] = -np.inf
    with np.errstate(all="raise"):
        weights = attention_softmax_cpu.attention_softmax_forward(scores, bias, 1.0)
    assert (weights[:, :, 1] == 0).all()
    np.testing.assert_allclose(weights[:, :, [0, 2]].sum(axis=-1), 1.0)


def test_attention_softmax_takes_arrays_that_are_not_c_ordered():
    scores = draw((2, 4, 3, 5), np.float64).transpose(0, 2, 1, 3)
    expected = attention_softmax_spec.attention_softmax_forward(scores.copy(), None, 0.5)
    np.testing.assert_allclose(attention_softmax_cpu.attention_softmax_forward(scores, None, 0.5),
                               expected, rtol=1e-14)
    grad = draw((2, 4, 3, 5), np.float64, seed=1).transpose(0, 2, 1, 3)
    np.testing.assert_allclose(
        attention_softmax_cpu.attention_softmax_backward(grad, expected, 0.5),
        attention_softmax_spec.attention_softmax_backward(grad.copy(), expected, 0.5),
        rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("name", ["gelu_forward", "gelu_backward", "attention_softmax_forward",
                                  "attention_softmax_backward"])
def test_the_cpu_table_runs_these_kernels_and_the_reference_rung_the_spec(name):
    table = tinynet.backend.get_backend("cpu").kernels
    module, spec = ((gelu_cpu, gelu_spec) if name.startswith("gelu")
                    else (attention_softmax_cpu, attention_softmax_spec))
    assert getattr(table, name) is getattr(module, name)
    with tinynet.use_kernels("reference"):
        assert getattr(table, name) is getattr(spec, name)
