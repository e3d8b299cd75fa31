"""The convnet's compiled CPU kernels against their NumPy references, the spec:
max pooling (kernels/ops/pooling_cpu.py), batch normalization (batch_norm_cpu.py),
im2col, col2im and the output's swap (conv_cpu.py). float64 to 1e-12 (or bit for bit where the
kernel does the reference's arithmetic in its order), float32 close; awkward
sizes, padding, ceil_mode, strides and dilations, ties, NaN and −inf, batch 1,
inputs large enough for the parallel drivers; the fallbacks; and a ConvNet
training step with the kernels against one with the references."""
import numpy as np
import pytest

import tinynet
from tinynet.kernels._common import PARALLEL_MIN_ELEMENTS
from tinynet.kernels.ops import (
    batch_norm_cpu,
    batch_norm_spec,
    conv_cpu,
    conv_spec,
    pooling_cpu,
    pooling_spec,
)
from tinynet.models import ConvNet
from tinynet.ops.pooling import _output_length

RTOL = {np.float32: 1e-5, np.float64: 1e-12}
DTYPES = (np.float64, np.float32)


class _Forbidden:
    """Stands in for a spec module: a call means the kernel fell back."""

    def __getattr__(self, name):
        raise AssertionError(f"the compiled kernel fell back to the reference ({name})")


@pytest.fixture
def compiled_only(monkeypatch):
    for module in (pooling_cpu, batch_norm_cpu, conv_cpu):
        name = next(n for n in vars(module) if n.endswith("_spec"))
        monkeypatch.setattr(module, name, _Forbidden())


def assert_close(actual, expected, dtype):
    scale = np.max(np.abs(expected)) if expected.size else 0.0
    np.testing.assert_allclose(actual, expected, rtol=RTOL[dtype], atol=RTOL[dtype] * scale)


# ---------------------------------------------------------------- max pooling
# (input shape, kernel, stride, padding, dilation): odd sizes, 1-D, stride !=
# kernel (overlapping windows), padding, dilation, 1x1, batch 1, unbatched, the
# 2x2 fast path on even and odd sizes, and sizes for the parallel driver.
POOL_CASES = [
    ((2, 3, 9), (3,), (2,), (1,), (1,)),
    ((1, 2, 10), (2,), (1,), (0,), (3,)),
    ((2, 3, 7, 6), (3, 2), (2, 1), (1, 0), (1, 1)),
    ((2, 2, 8, 7), (2, 3), (3, 2), (1, 0), (2, 1)),
    ((1, 1, 5, 5), (1, 1), (1, 1), (0, 0), (1, 1)),
    ((3, 5, 6), (2, 2), (2, 2), (0, 0), (1, 1)),
    ((2, 3, 8, 8), (2, 2), (2, 2), (0, 0), (1, 1)),
    ((2, 3, 7, 9), (2, 2), (2, 2), (0, 0), (1, 1)),
    ((2, 3, 7, 9), (2, 2), (2, 2), (1, 1), (1, 1)),
    ((2, 3, 7, 7), (3, 3), (2, 2), (1, 1), (1, 1)),
    ((64, 16, 28, 28), (2, 2), (2, 2), (0, 0), (1, 1)),
    ((32, 16, 23, 25), (3, 3), (2, 2), (1, 1), (1, 1)),
]


def pool_out(shape, kernel, stride, padding, dilation, ceil_mode):
    return tuple(_output_length(*args, ceil_mode) for args in
                 zip(shape[-len(kernel):], kernel, stride, padding, dilation, strict=True))


def check_max_pool(x, geometry, ceil_mode=False):
    """The kernel's (best, arg) and gradient against the reference's."""
    kernel, stride, padding, dilation = geometry
    out = pool_out(x.shape, *geometry, ceil_mode)
    best, arg = pooling_cpu.max_pool_forward(x, kernel, stride, padding, dilation, out)
    expected_best, expected_arg = pooling_spec.max_pool_forward(x, kernel, stride, padding,
                                                                     dilation, out)
    assert best.dtype == x.dtype and best.shape == expected_best.shape
    np.testing.assert_array_equal(best, expected_best)
    np.testing.assert_array_equal(arg, expected_arg)
    dy = np.random.default_rng(1).standard_normal(best.shape).astype(x.dtype)
    args = (x.shape, kernel, stride, padding, dilation, out)
    dx = pooling_cpu.max_pool_backward(dy, arg, *args)
    assert dx.shape == x.shape and dx.dtype == x.dtype
    assert_close(dx, pooling_spec.max_pool_backward(dy, expected_arg, *args), x.dtype.type)


@pytest.mark.parametrize("ceil_mode", [False, True])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", POOL_CASES, ids=str)
def test_max_pool_matches_reference(compiled_only, case, dtype, ceil_mode):
    shape, *geometry = case
    x = np.random.default_rng(0).standard_normal(shape).astype(dtype)
    check_max_pool(x, geometry, ceil_mode)


@pytest.mark.parametrize("geometry", [((2, 2), (2, 2), (0, 0), (1, 1)),
                                      ((3, 3), (1, 1), (1, 1), (1, 1))])
def test_max_pool_ties_nan_and_inf(compiled_only, geometry):
    """Few distinct values (ties: the first maximum wins), NaN (propagates, the
    last NaN wins), −inf windows (their first tap inside wins), +inf."""
    rng = np.random.default_rng(2)
    x = rng.integers(0, 3, (3, 2, 9, 8)).astype(np.float64)
    x[0, 0, rng.integers(0, 9, 8), rng.integers(0, 8, 8)] = np.nan
    x[1, 1] = -np.inf
    x[2, 0, :4] = np.inf
    check_max_pool(x, geometry)
    check_max_pool(x, geometry, ceil_mode=True)
    best, _ = pooling_cpu.max_pool_forward(x, *geometry, pool_out(x.shape, *geometry, False))
    assert np.isnan(best[0, 0]).any() and (best[1, 1] == -np.inf).all()


def test_max_pool_parallel_driver_is_used(compiled_only):
    x = np.random.default_rng(3).standard_normal((64, 16, 28, 28)).astype(np.float32)
    assert x.size >= PARALLEL_MIN_ELEMENTS
    check_max_pool(x, ((2, 2), (2, 2), (0, 0), (1, 1)))


def test_max_pool_falls_back_for_other_inputs():
    """3-D pooling and float16 take the reference, with its results."""
    for x, geometry in [(np.random.default_rng(4).standard_normal((2, 2, 5, 4, 6)),
                         ((2, 2, 2), (2, 1, 2), (1, 0, 1), (1, 1, 1))),
                        (np.random.default_rng(5).standard_normal((2, 3, 6, 6)).astype(
                            np.float16), ((2, 2), (2, 2), (0, 0), (1, 1)))]:
        out = pool_out(x.shape, *geometry, False)
        for ours, theirs in zip(pooling_cpu.max_pool_forward(x, *geometry, out),
                                pooling_spec.max_pool_forward(x, *geometry, out),
                                strict=True):
            np.testing.assert_array_equal(ours, theirs)


# ----------------------------------------------------------------- batch norm
BATCH_NORM_SHAPES = [(1, 3, 5, 5), (3, 5, 7, 1), (2, 4, 9), (2, 3, 2, 3, 4), (7, 1, 13, 11),
                     (64, 16, 28, 28)]


def batch_norm_inputs(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    x = (2 + 3 * rng.standard_normal(shape)).astype(dtype)
    gain = (1 + 0.5 * rng.standard_normal(shape[1])).astype(dtype)
    bias = rng.standard_normal(shape[1]).astype(dtype)
    return x, gain, bias, rng.standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", BATCH_NORM_SHAPES)
def test_batch_norm_statistics(compiled_only, shape, dtype):
    x = batch_norm_inputs(shape, dtype)[0]
    for ours, theirs, kind in zip(batch_norm_cpu.batch_norm_statistics(x),
                                  batch_norm_spec.batch_norm_statistics(x),
                                  (x.dtype, np.float64), strict=True):
        assert ours.dtype == theirs.dtype == kind       # squares summed in float64
        assert_close(ours, theirs, dtype)


@pytest.mark.parametrize("affine", ["both", "gain", "bias", "none"])
@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", BATCH_NORM_SHAPES)
def test_batch_norm_forward_and_backward(compiled_only, shape, dtype, training, affine):
    x, gain, bias, dy = batch_norm_inputs(shape, dtype)
    gain = gain if affine in ("both", "gain") else None
    bias = bias if affine in ("both", "bias") else None
    count = x.size // shape[1]
    mean, squares = batch_norm_spec.batch_norm_statistics(x)
    if training:
        dof, var = count, squares / count
    else:                           # running statistics: constants, not this batch's
        dof, mean, var = None, mean + 0.25, squares / count + 0.5
    y, rstd = batch_norm_cpu.batch_norm_forward(x, gain, bias, mean, var, 1e-5)
    expected_y, expected_rstd = batch_norm_spec.batch_norm_forward(x, gain, bias, mean,
                                                                        var, 1e-5)
    np.testing.assert_array_equal(rstd, expected_rstd)
    np.testing.assert_array_equal(y, expected_y)          # the reference's arithmetic
    args = (dy, x, mean, rstd, gain, bias is not None, dof)
    ours = batch_norm_cpu.batch_norm_backward(*args)
    theirs = batch_norm_spec.batch_norm_backward(*args)
    for name, a, b in zip(("dx", "dgain", "dbias"), ours, theirs, strict=True):
        assert (a is None) == (b is None), name
        if a is not None:
            assert a.dtype == b.dtype and a.shape == b.shape, name
            assert_close(a, b, dtype)


def test_batch_norm_falls_back_for_other_inputs():
    """(N, C) inputs and mixed dtypes take the reference."""
    for x, gain in [(np.random.default_rng(6).standard_normal((5, 3)), np.ones(3)),
                    (np.random.default_rng(7).standard_normal((2, 3, 4)), np.ones(3, np.float32))]:
        mean, var = x.mean(axis=(0, 2) if x.ndim == 3 else 0), np.full(3, 0.5)
        for ours, theirs in zip(batch_norm_cpu.batch_norm_forward(x, gain, None, mean, var, 1e-5),
                                batch_norm_spec.batch_norm_forward(x, gain, None, mean, var,
                                                                        1e-5), strict=True):
            np.testing.assert_array_equal(ours, theirs)


# ------------------------------------------------------------ im2col / col2im
# (input shape, kernel, stride, padding ((before, after) per dim), dilation)
CONV_CASES = [
    ((2, 3, 9, 8), (3, 2), (2, 3), ((1, 2), (0, 1)), (2, 1)),
    ((1, 2, 5, 7), (1, 1), (1, 1), ((0, 0), (0, 0)), (1, 1)),
    ((3, 2, 11, 10), (4, 3), (3, 2), ((2, 1), (1, 2)), (1, 2)),
    ((1, 1, 6, 6), (3, 3), (1, 1), ((0, 0), (0, 0)), (1, 1)),
    ((2, 4, 7, 5), (3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1)),
    ((32, 16, 14, 14), (3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1)),
    # stride 1, rows as long as the input's: im2col's shifted-plane copies
    ((2, 3, 6, 7), (3, 3), (1, 1), ((2, 2), (2, 2)), (2, 2)),
    ((2, 2, 5, 6), (3, 3), (1, 1), ((0, 2), (2, 0)), (1, 1)),
    ((1, 2, 1, 4), (7, 3), (1, 1), ((3, 3), (1, 1)), (1, 1)),
    ((2, 1, 4, 3), (2, 5), (1, 1), ((1, 0), (2, 2)), (1, 1)),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape, kernel, stride, padding, dilation", CONV_CASES)
def test_im2col_and_col2im_are_the_reference_bit_for_bit(compiled_only, shape, kernel, stride,
                                                         padding, dilation, dtype):
    rng = np.random.default_rng(8)
    x = rng.standard_normal(shape).astype(dtype)
    cols, padded_shape, out = conv_cpu.im2col(x, kernel, stride, padding, dilation)
    expected = conv_spec.im2col(x, kernel, stride, padding, dilation)
    assert (padded_shape, out) == expected[1:]
    np.testing.assert_array_equal(cols, expected[0])
    dcols = rng.standard_normal(cols.shape).astype(dtype)
    dx = conv_cpu.col2im(dcols, padded_shape, stride, dilation, padding, shape[2:])
    expected_dx = conv_spec.col2im(dcols, padded_shape, stride, dilation, padding, shape[2:])
    assert dx.dtype == x.dtype
    np.testing.assert_array_equal(dx, expected_dx)     # the same sums in the same order


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape, kernel, stride, padding, dilation",
                         [case for case in CONV_CASES if case[2] == (1, 1)])
def test_col2im_keeps_every_bit_of_the_reference_sums(compiled_only, shape, kernel, stride,
                                                      padding, dilation, dtype):
    """−0.0 and NaN among the columns: at stride 1 the columns read from the padding are
    zeroed and added in one flat loop, which must leave the sums' bits as they are."""
    rng = np.random.default_rng(12)
    x = rng.standard_normal(shape).astype(dtype)
    cols, padded_shape, _ = conv_cpu.im2col(x, kernel, stride, padding, dilation)
    dcols = rng.standard_normal(cols.shape).astype(dtype)
    dcols[rng.random(dcols.shape) < 0.2] = -0.0
    dcols[rng.random(dcols.shape) < 0.02] = np.nan
    expected = conv_spec.col2im(dcols.copy(), padded_shape, stride, dilation, padding,
                                     shape[2:])
    dx = conv_cpu.col2im(dcols, padded_shape, stride, dilation, padding, shape[2:])
    assert dx.tobytes() == expected.tobytes()


def test_im2col_with_given_output_sizes(compiled_only):
    """Fewer windows than fit (as the transposed convolution asks for)."""
    x = np.random.default_rng(9).standard_normal((2, 3, 8, 9))
    args = ((3, 3), (2, 2), ((1, 1), (2, 2)), (1, 1), (3, 2))
    np.testing.assert_array_equal(conv_cpu.im2col(x, *args)[0],
                                  conv_spec.im2col(x, *args)[0])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(3, 2, 5), (1, 1, 1), (4, 3), (16, 128, 784), (2, 3, 4, 5)])
@pytest.mark.parametrize("with_bias", [True, False])
def test_swap_leading_axes_is_the_reference_bit_for_bit(compiled_only, shape, dtype, with_bias):
    """The product's (O, N, P) into the output's (N, O, P) with the bias (the largest
    case takes the parallel driver); without one, every value kept, −0.0 included."""
    rng = np.random.default_rng(11)
    a = rng.standard_normal(shape).astype(dtype)
    a.reshape(-1)[::7] = -0.0
    bias = rng.standard_normal(shape[0]).astype(dtype) if with_bias else None
    out = conv_cpu.swap_leading_axes(a, bias)
    expected = conv_spec.swap_leading_axes(a, bias)
    assert out.shape == (shape[1], shape[0]) + shape[2:] and out.dtype == a.dtype
    assert out.flags.c_contiguous
    np.testing.assert_array_equal(out, expected)
    np.testing.assert_array_equal(np.signbit(out), np.signbit(expected))
    if not with_bias:
        np.testing.assert_array_equal(out, a.swapaxes(0, 1))


def test_swap_leading_axes_takes_a_strided_input_and_falls_back_for_others():
    a = np.arange(24.0).reshape(4, 6)[:, ::2].reshape(4, 3)
    np.testing.assert_array_equal(conv_cpu.swap_leading_axes(a), a.T)
    ints = np.arange(6).reshape(2, 3)
    np.testing.assert_array_equal(conv_cpu.swap_leading_axes(ints, np.array([1, 2])),
                                  ints.T + np.array([1, 2]))


# ------------------------------------------------------- a whole training step
@pytest.fixture
def reference_kernels():
    """The CPU backend with the specs in place of the compiled kernels."""
    with tinynet.use_kernels("reference"):
        yield


def convnet_step(norm, x, y):
    tinynet.manual_seed(0)
    model = ConvNet(norm).double()
    loss = tinynet.nn.functional.cross_entropy(model(tinynet.tensor(x)), tinynet.tensor(y))
    loss.backward()
    return [loss.item()] + [p.grad.numpy() for p in model.parameters()]


@pytest.mark.parametrize("norm", ["batch", "group"])
def test_convnet_step_matches_the_references(norm, request):
    rng = np.random.default_rng(10)
    x, y = rng.random((6, 784)), rng.integers(0, 10, 6)
    ours = convnet_step(norm, x, y)
    request.getfixturevalue("reference_kernels")
    theirs = convnet_step(norm, x, y)
    for a, b in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-13)
