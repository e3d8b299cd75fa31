"""Pooling over 1, 2 and 3 spatial dims (max, average, adaptive average): float64
gradcheck, values and gradients against PyTorch (skipped without it), ties and
non-finite values for max pooling, float32, the layers, and the argument errors."""
import numpy as np
import pytest

import tinynet
from tinynet.nn import pooling as layers
from tinynet.ops import pooling as P
from tinynet.testing import gradcheck

TOL = dict(rtol=1e-10, atol=1e-10)


@pytest.fixture
def torch():
    return pytest.importorskip("torch")


def normal(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def forward_backward(fn, x_np, lib):
    """fn(x) and d(Σ fn(x)·dy)/dx for fixed random weights dy, in one framework."""
    x = lib.tensor(x_np, requires_grad=True)
    y = fn(x)
    dy = np.random.default_rng(5).standard_normal(tuple(y.shape)).astype(x_np.dtype)
    (y * lib.tensor(dy)).sum().backward()
    return y.detach().numpy(), x.grad.numpy()


def assert_matches_torch(torch, name, x_np, kwargs, **tol):
    ours = forward_backward(lambda x: getattr(P, name)(x, **kwargs), x_np, tinynet)
    theirs = forward_backward(lambda x: getattr(torch.nn.functional, name)(x, **kwargs),
                              x_np, torch)
    for what, a, b in zip(("output", "gradient"), ours, theirs, strict=True):
        assert a.shape == b.shape and a.dtype == b.dtype, f"{name} {kwargs} {what}"
        np.testing.assert_allclose(a, b, err_msg=f"{name} {kwargs} {what}", **(tol or TOL))


def check_grad(name, x_np, kwargs):
    x = tinynet.tensor(x_np, requires_grad=True)
    assert gradcheck(lambda x: getattr(P, name)(x, **kwargs), [x])


# (dims, input shape, arguments): odd sizes, strides != kernel, padding, dilation,
# 1x1 kernels, batch 1, unbatched inputs; each runs with ceil_mode off and on.
MAX_CASES = [
    (1, (2, 3, 9), dict(kernel_size=3)),
    (1, (2, 3, 10), dict(kernel_size=4, stride=3, padding=2)),
    (1, (1, 2, 9), dict(kernel_size=2, dilation=3, padding=1)),
    (1, (3, 8), dict(kernel_size=3, stride=2, padding=1)),
    (1, (2, 2, 7), dict(kernel_size=1, stride=2)),
    (2, (2, 3, 7, 6), dict(kernel_size=3)),
    (2, (2, 3, 7, 6), dict(kernel_size=(3, 2), stride=(2, 1))),
    (2, (1, 2, 7, 7), dict(kernel_size=3, stride=2, padding=1)),
    (2, (2, 2, 8, 7), dict(kernel_size=(2, 3), stride=(3, 2), padding=(1, 0), dilation=(2, 1))),
    (2, (2, 5, 6), dict(kernel_size=2, stride=None)),
    (2, (1, 1, 5, 5), dict(kernel_size=1)),
    (3, (1, 2, 5, 6, 4), dict(kernel_size=2)),
    (3, (1, 1, 5, 6, 5), dict(kernel_size=3, stride=2, padding=1)),
    (3, (2, 5, 6, 7), dict(kernel_size=(1, 2, 3), stride=(2, 1, 2), dilation=(1, 2, 1),
                           padding=(0, 1, 1))),
]
AVG_CASES = [
    (1, (2, 3, 9), dict(kernel_size=3)),
    (1, (2, 3, 10), dict(kernel_size=4, stride=3, padding=2)),
    (1, (3, 8), dict(kernel_size=3, stride=2, padding=1)),
    (1, (1, 2, 7), dict(kernel_size=1, stride=2)),
    (2, (2, 3, 7, 6), dict(kernel_size=(3, 2), stride=(2, 1))),
    (2, (1, 2, 7, 7), dict(kernel_size=3, stride=2, padding=1)),
    (2, (2, 2, 8, 7), dict(kernel_size=(2, 3), stride=(3, 2), padding=(1, 1))),
    (2, (2, 5, 6), dict(kernel_size=2, stride=1, padding=1)),
    (2, (1, 2, 7, 7), dict(kernel_size=3, stride=2, padding=1, divisor_override=4)),
    (3, (1, 2, 5, 6, 4), dict(kernel_size=2)),
    (3, (1, 1, 5, 6, 5), dict(kernel_size=3, stride=2, padding=1)),
    (3, (2, 5, 4, 7), dict(kernel_size=(1, 2, 3), stride=(2, 1, 2), padding=(0, 1, 1),
                           divisor_override=-3)),
]
ADAPTIVE_CASES = [
    (1, (2, 3, 7), 3), (1, (2, 3, 8), 4), (1, (2, 3, 5), 8), (1, (3, 7), 1), (1, (1, 2, 7), 7),
    (2, (2, 3, 7, 9), (3, 4)), (2, (2, 3, 7, 9), (None, 4)), (2, (2, 3, 7, 9), 1),
    (2, (2, 6, 9), (14, 5)), (2, (1, 2, 6, 8), (3, 4)), (2, (1, 2, 6, 8), (3, 5)),
    (3, (1, 2, 5, 6, 7), (2, 3, 4)), (3, (1, 2, 5, 6, 7), (None, 3, None)),
    (3, (2, 4, 6, 8), (2, 3, 4)), (3, (1, 1, 5, 6, 7), 1),
]


def case_id(case):
    dims, shape, kwargs = case[0], case[1], case[2]
    return f"{dims}d-{'x'.join(map(str, shape))}-{kwargs}"


def max_grid():
    return [pytest.param(f"max_pool{d}d", shape, dict(kw, ceil_mode=ceil),
                         id=f"{case_id((d, shape, kw))}-ceil{ceil}")
            for d, shape, kw in MAX_CASES for ceil in (False, True)]


def avg_grid():
    """Each case with ceil_mode off and on, and count_include_pad both ways where
    there is padding to count."""
    return [pytest.param(f"avg_pool{d}d", shape,
                         dict(kw, ceil_mode=ceil, count_include_pad=include),
                         id=f"{case_id((d, shape, kw))}-ceil{ceil}-include{include}")
            for d, shape, kw in AVG_CASES for ceil in (False, True)
            for include in ((True, False) if kw.get("padding") else (True,))]


def adaptive_grid():
    return [pytest.param(f"adaptive_avg_pool{d}d", shape, dict(output_size=size),
                         id=case_id((d, shape, size))) for d, shape, size in ADAPTIVE_CASES]


GRID = max_grid() + avg_grid() + adaptive_grid()


@pytest.mark.parametrize("name, shape, kwargs", GRID)
def test_matches_torch(torch, name, shape, kwargs):
    assert_matches_torch(torch, name, normal(shape), kwargs)


@pytest.mark.parametrize("name, shape, kwargs", GRID)
def test_gradcheck(name, shape, kwargs):
    check_grad(name, normal(shape, seed=1), kwargs)


def test_ceil_mode_grid_has_windows_over_the_end():
    """The grid is meant to exercise windows that hang over the end: make sure
    some ceil_mode cases really have more windows than the floor ones."""
    grown = 0
    for d, shape, kw in MAX_CASES + AVG_CASES:
        fn = getattr(P, f"max_pool{d}d" if "divisor_override" not in kw else f"avg_pool{d}d")
        x = tinynet.tensor(normal(shape))
        grown += fn(x, **kw, ceil_mode=True).shape != fn(x, **kw, ceil_mode=False).shape
    assert grown >= 5


def test_known_values():
    x = tinynet.tensor(np.array([[[1.0, 3.0, 2.0, 5.0, 4.0]]]))
    np.testing.assert_array_equal(P.max_pool1d(x, 2).numpy(), [[[3.0, 5.0]]])
    np.testing.assert_array_equal(P.max_pool1d(x, 2, ceil_mode=True).numpy(), [[[3, 5, 4.0]]])
    np.testing.assert_allclose(P.avg_pool1d(x, 2, padding=1).numpy(), [[[0.5, 2.5, 4.5]]])
    np.testing.assert_allclose(P.avg_pool1d(x, 2, padding=1, count_include_pad=False).numpy(),
                               [[[1.0, 2.5, 4.5]]])
    np.testing.assert_allclose(P.adaptive_avg_pool1d(x, 2).numpy(), [[[2.0, 11 / 3]]])


# ---------------------------------------------------------------- max: ties, NaN, inf
@pytest.mark.parametrize("dims", [1, 2, 3])
def test_max_ties_go_to_the_first_maximum(torch, dims):
    x = np.random.default_rng(dims).integers(0, 3, (2, 2) + (5,) * dims).astype(np.float64)
    for kwargs in (dict(kernel_size=3, stride=1, padding=1), dict(kernel_size=2, stride=1),
                   dict(kernel_size=3, stride=2, ceil_mode=True, dilation=2)):
        assert_matches_torch(torch, f"max_pool{dims}d", x, kwargs)


@pytest.mark.parametrize("dims", [1, 2, 3])
def test_max_with_nan_and_inf(torch, dims):
    rng = np.random.default_rng(dims)
    x = rng.standard_normal((2, 2) + (6,) * dims)
    flat = x.reshape(-1)
    for value in (np.nan, np.inf, -np.inf):
        flat[rng.choice(flat.size, flat.size // 8, replace=False)] = value
    x[0, 0] = -np.inf                      # whole windows of -inf, next to the -inf padding
    x[0, 1, ..., :3] = np.nan              # several NaNs in one window
    for kwargs in (dict(kernel_size=3, stride=1, padding=1), dict(kernel_size=2),
                   dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)):
        assert_matches_torch(torch, f"max_pool{dims}d", x, kwargs)


def test_max_nan_propagates_and_gets_the_gradient():
    x = tinynet.tensor(np.array([[[1.0, np.nan, 7.0, -np.inf, -np.inf]]]), requires_grad=True)
    y = P.max_pool1d(x, 3, stride=2, padding=1)
    assert np.isnan(y.numpy()[0, 0, :2]).all() and y.numpy()[0, 0, 2] == -np.inf
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[[0, 2, 0, 1, 0]]])


# ------------------------------------------------------------------------ float32
FLOAT32 = [("max_pool1d", (2, 3, 9), dict(kernel_size=3, stride=2, padding=1)),
           ("max_pool2d", (2, 3, 7, 6), dict(kernel_size=3, stride=2, ceil_mode=True)),
           ("max_pool3d", (1, 2, 5, 6, 4), dict(kernel_size=2, dilation=2)),
           ("avg_pool1d", (2, 3, 9), dict(kernel_size=3, padding=1, count_include_pad=False)),
           ("avg_pool2d", (2, 3, 7, 6), dict(kernel_size=3, stride=2, ceil_mode=True)),
           ("avg_pool3d", (1, 2, 5, 6, 4), dict(kernel_size=2, divisor_override=3)),
           ("adaptive_avg_pool1d", (2, 3, 9), dict(output_size=4)),
           ("adaptive_avg_pool2d", (2, 3, 7, 6), dict(output_size=(3, 3))),
           ("adaptive_avg_pool3d", (1, 2, 5, 6, 4), dict(output_size=(2, None, 3)))]


@pytest.mark.parametrize("name, shape, kwargs", FLOAT32)
def test_float32_keeps_its_dtype(name, shape, kwargs):
    x = tinynet.tensor(normal(shape).astype(np.float32), requires_grad=True)
    y = getattr(P, name)(x, **kwargs)
    y.sum().backward()
    assert y.dtype == np.float32 and x.grad.dtype == np.float32


@pytest.mark.parametrize("name, shape, kwargs", FLOAT32)
def test_float32_matches_torch(torch, name, shape, kwargs):
    assert_matches_torch(torch, name, normal(shape).astype(np.float32), kwargs,
                         rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------- one graph node
@pytest.mark.parametrize("call, node", [
    (lambda x: P.max_pool2d(x, 2), P.MaxPool),
    (lambda x: P.avg_pool2d(x, 3, 2, 1), P.AvgPool),
    (lambda x: P.adaptive_avg_pool2d(x, (2, 3)), P.AdaptiveAvgPool)])
@pytest.mark.parametrize("shape", [(2, 3, 5, 7), (3, 5, 7)])
def test_one_graph_node_batched_or_not(call, node, shape):
    x = tinynet.tensor(normal(shape), requires_grad=True)
    y = call(x)
    assert y._node.fn is node and y._node.inputs[0] is x


def test_empty_batch():
    x = tinynet.tensor(np.zeros((0, 2, 4, 4)), requires_grad=True)
    assert P.max_pool2d(x, 2).shape == (0, 2, 2, 2)
    assert P.avg_pool2d(x, 3, 1, 1).shape == (0, 2, 4, 4)
    assert P.adaptive_avg_pool2d(x, 3).shape == (0, 2, 3, 3)


# -------------------------------------------------------------------------- layers
LAYERS = [
    ("MaxPool1d", (2, 3, 9), (3,), dict(stride=2, padding=1)),
    ("MaxPool2d", (2, 3, 7, 6), (2,), {}),
    ("MaxPool2d", (3, 7, 6), ((3, 2),), dict(stride=1, padding=1, dilation=2, ceil_mode=True)),
    ("MaxPool3d", (1, 2, 5, 6, 4), (3, 2, 1), {}),
    ("AvgPool1d", (2, 3, 9), (3,), dict(stride=2, padding=1, count_include_pad=False)),
    ("AvgPool2d", (2, 3, 7, 6), (3,), dict(ceil_mode=True, divisor_override=2)),
    ("AvgPool3d", (1, 2, 5, 6, 4), ((2, 1, 2),), dict(padding=(1, 0, 1))),
    ("AdaptiveAvgPool1d", (2, 3, 9), (4,), {}),
    ("AdaptiveAvgPool2d", (2, 3, 7, 6), ((None, 4),), {}),
    ("AdaptiveAvgPool3d", (1, 2, 5, 6, 4), (2,), {}),
]


@pytest.mark.parametrize("name, shape, args, kwargs", LAYERS)
def test_layer_matches_torch(torch, name, shape, args, kwargs):
    ours, theirs = getattr(layers, name)(*args, **kwargs), getattr(torch.nn, name)(*args, **kwargs)
    assert repr(ours) == repr(theirs)
    x = normal(shape)
    y = ours(tinynet.tensor(x)).numpy()
    np.testing.assert_allclose(y, theirs(torch.tensor(x)).numpy(), **TOL)


@pytest.mark.parametrize("name, shape, args, kwargs", LAYERS)
def test_layer_calls_its_function(name, shape, args, kwargs):
    layer = getattr(layers, name)(*args, **kwargs)
    x = tinynet.tensor(normal(shape), requires_grad=True)
    y = layer(x)
    y.sum().backward()
    assert x.grad.shape == x.shape
    assert y._node.fn in (P.MaxPool, P.AvgPool, P.AdaptiveAvgPool)


# -------------------------------------------------------------------------- errors
X1, X2, X3 = normal((2, 3, 4)), normal((2, 3, 4, 4)), normal((1, 2, 4, 4, 4))
ERRORS = [
    (P.max_pool2d, X1[0], dict(kernel_size=2), ValueError, r"max_pool2d.*3-D.*4-D.*\(3, 4\)"),
    (P.max_pool1d, X2, dict(kernel_size=2), ValueError, r"max_pool1d.*2-D.*3-D"),
    (P.avg_pool3d, X1, dict(kernel_size=2), ValueError, r"avg_pool3d.*4-D.*5-D"),
    (P.adaptive_avg_pool2d, X3, dict(output_size=2), ValueError, r"adaptive_avg_pool2d.*3-D"),
    (P.max_pool2d, X2, dict(kernel_size=0), ValueError, r"max_pool2d: kernel_size.*greater"),
    (P.avg_pool1d, X1, dict(kernel_size=-1), ValueError, r"avg_pool1d: kernel_size.*greater"),
    (P.max_pool3d, X3, dict(kernel_size=2, stride=0), ValueError, r"max_pool3d: stride"),
    (P.avg_pool2d, X2, dict(kernel_size=2, stride=(1, -1)), ValueError, r"avg_pool2d: stride"),
    (P.max_pool2d, X2, dict(kernel_size=2, dilation=0), ValueError, r"max_pool2d: dilation"),
    (P.max_pool1d, X1, dict(kernel_size=2, padding=-1), ValueError,
     r"max_pool1d: padding must be non-negative"),
    (P.max_pool2d, X2, dict(kernel_size=3, padding=2), ValueError,
     r"max_pool2d: pad should be at most half of kernel size.*padding=\(2, 2\)"),
    (P.avg_pool3d, X3, dict(kernel_size=(2, 2, 3), padding=(1, 2, 1)), ValueError,
     r"avg_pool3d: pad should be at most half"),
    (P.max_pool2d, X2, dict(kernel_size=(2, 2, 2)), ValueError,
     r"max_pool2d: kernel_size must be a single int or a tuple of 2 ints"),
    (P.max_pool2d, X2, dict(kernel_size=2.0), TypeError, r"max_pool2d: kernel_size"),
    (P.max_pool2d, X2, dict(kernel_size=5), ValueError,
     r"max_pool2d: Given input size: \(3x4x4\). Calculated output size: \(3x0x0\). "
     r"Output size is too small"),
    (P.max_pool1d, X1, dict(kernel_size=2, dilation=4), ValueError,
     r"max_pool1d: Given input size: \(3x4\).*\(3x0\).*too small"),
    (P.avg_pool2d, X2, dict(kernel_size=(1, 5)), ValueError,
     r"avg_pool2d: Given input size.*\(3x4x0\)"),
    (P.avg_pool1d, X1, dict(kernel_size=5, padding=3), ValueError, r"avg_pool1d: pad should"),
    (P.avg_pool2d, X2, dict(kernel_size=2, divisor_override=0), ValueError,
     r"avg_pool2d: divisor_override must be non-zero"),
    (P.avg_pool3d, X3, dict(kernel_size=2, divisor_override=1.5), TypeError,
     r"avg_pool3d: divisor_override"),
    (P.adaptive_avg_pool2d, X2, dict(output_size=-1), ValueError,
     r"adaptive_avg_pool2d: output_size must be non-negative"),
    (P.adaptive_avg_pool3d, X3, dict(output_size=(1, 2)), ValueError,
     r"adaptive_avg_pool3d: output_size must be a single int or a tuple of 3 ints"),
    (P.max_pool2d, np.zeros((2, 0, 4, 4)), dict(kernel_size=2), ValueError,
     r"max_pool2d: expected non-zero sizes.*\(2, 0, 4, 4\)"),
    (P.adaptive_avg_pool1d, np.zeros((2, 3, 0)), dict(output_size=1), ValueError,
     r"adaptive_avg_pool1d: expected non-zero"),
    (P.avg_pool2d, X2.astype(np.int64), dict(kernel_size=2), TypeError,
     r"avg_pool2d: expected a floating-point input"),
    (P.max_pool2d, X2, dict(kernel_size=2, return_indices=True), NotImplementedError,
     r"max_pool2d: return_indices"),
]


@pytest.mark.parametrize("fn, x, kwargs, error, match", ERRORS,
                         ids=[f"{e[0].__name__}-{i}" for i, e in enumerate(ERRORS)])
def test_errors_name_the_problem(fn, x, kwargs, error, match):
    with pytest.raises(error, match=match) as info:
        fn(tinynet.tensor(x), **kwargs)
    assert info.traceback[-1].path.name == "pooling.py"      # ours, not deep in NumPy


@pytest.mark.parametrize("build, match", [
    (lambda: layers.MaxPool2d(0), r"MaxPool2d: kernel_size must be greater than zero"),
    (lambda: layers.MaxPool1d(3, padding=2), r"MaxPool1d: pad should be at most half"),
    (lambda: layers.AvgPool1d(2, stride=0), r"AvgPool1d: stride"),
    (lambda: layers.AvgPool3d((2, 2)), r"AvgPool3d: kernel_size must be a single int or a"),
    (lambda: layers.AvgPool2d(2, divisor_override=0), r"AvgPool2d: divisor_override")])
def test_layer_arguments_are_checked_when_built(build, match):
    with pytest.raises(ValueError, match=match):
        build()
