"""Convolutions (tinynet/ops/conv.py, tinynet/nn/conv.py) against PyTorch.

F.conv1d/2d/3d and nn.Conv1d/2d/3d: the output and every gradient (input,
weight, bias) to 1e-10 in float64 over a grid of strides, paddings (ints,
tuples, 'same' with odd and even kernels and dilation, 'valid'), dilations,
groups (depthwise included), odd sizes, 1×1 kernels, batch 1 and unbatched
input; every padding_mode; dtype promotion and float32; finite differences;
PyTorch's state_dict and initialisation; a conv inside a larger graph; and the
ValueErrors for bad arguments.
"""
import math
import warnings

import numpy as np
import pytest
from conv_compare import compare_with_torch

import tinynet
from tinynet import nn
from tinynet.nn import functional as F
from tinynet.testing import gradcheck

torch = pytest.importorskip("torch")

TOL64 = dict(rtol=1e-10, atol=1e-10)
TOL32 = dict(rtol=2e-5, atol=2e-5)


def torch_f(dims):
    return getattr(torch.nn.functional, f"conv{dims}d")


def ours_f(dims):
    return getattr(F, f"conv{dims}d")


def compare_functional(dims, x_np, w_np, b_np, dy_seed=1, tol=TOL64, **kwargs):
    """F.conv{dims}d against torch on the same arrays: output and every gradient."""
    return compare_with_torch(torch, ours_f(dims), torch_f(dims), x_np, w_np, b_np, dy_seed,
                              tol, **kwargs)


def arrays(batch, channels, out_channels, size, kernel, groups=1, bias=True, seed=0,
           dtype=np.float64):
    rng = np.random.default_rng(seed)
    x_shape = ((batch,) if batch else ()) + (channels,) + tuple(size)
    x = rng.standard_normal(x_shape).astype(dtype)
    w = rng.standard_normal((out_channels, channels // groups) + tuple(kernel)).astype(dtype)
    b = rng.standard_normal(out_channels).astype(dtype) if bias else None
    return x, w, b


# (dims, batch (0: unbatched), C, O, spatial size, kernel, keyword arguments, bias)
CASES = [
    # 1-D
    (1, 2, 3, 4, (9,), (3,), {}, True),
    (1, 2, 3, 4, (10,), (3,), dict(stride=2, padding=1), True),
    (1, 3, 2, 3, (11,), (4,), dict(stride=3, padding=(2,), dilation=2), True),
    (1, 2, 2, 3, (8,), (4,), dict(padding="same"), True),                 # even kernel
    (1, 2, 2, 3, (9,), (3,), dict(padding="same", dilation=2), True),
    (1, 2, 2, 3, (12,), (4,), dict(padding="same", dilation=3), True),    # even k, odd d
    (1, 2, 2, 3, (7,), (5,), dict(padding="valid"), True),
    (1, 2, 3, 6, (9,), (3,), dict(groups=3, padding=1), True),            # depthwise ×2
    (1, 1, 4, 2, (7,), (1,), dict(stride=3), True),                       # 1×1, batch 1
    (1, 0, 3, 2, (6,), (2,), dict(padding=1), True),                      # unbatched
    (1, 2, 3, 2, (6,), (3,), dict(dilation=2), False),
    # 2-D
    (2, 2, 3, 4, (6, 5), (3, 3), {}, True),
    (2, 2, 3, 4, (7, 8), (3, 2), dict(stride=(2, 3), padding=(1, 2)), True),
    (2, 2, 2, 3, (7, 6), (3, 2), dict(stride=(2, 1), padding=(1, 0), dilation=(1, 2)), True),
    (2, 2, 2, 3, (6, 7), (4, 3), dict(padding="same", dilation=(1, 2)), True),
    (2, 1, 2, 2, (5, 6), (2, 2), dict(padding="same", dilation=2), True),
    (2, 2, 2, 3, (6, 5), (2, 4), dict(padding="same", dilation=(3, 1)), True),
    (2, 2, 2, 3, (5, 7), (2, 3), dict(padding="valid"), True),
    (2, 2, 4, 6, (6, 6), (3, 3), dict(groups=2, padding=1), True),
    (2, 2, 4, 4, (5, 5), (3, 3), dict(groups=4, stride=2, padding=1), True),   # depthwise
    (2, 2, 4, 8, (5, 6), (3, 3), dict(groups=4, padding="same"), True),      # multiplier 2
    (2, 2, 6, 4, (5, 5), (3, 3), dict(groups=2, stride=3, padding=2, dilation=2), False),
    (2, 1, 3, 5, (5, 7), (1, 1), {}, True),                                  # 1×1 kernel
    (2, 1, 3, 2, (7, 5), (3, 3), dict(stride=2, dilation=2, padding=1), True),  # odd sizes
    (2, 0, 3, 2, (5, 6), (3, 2), dict(padding=(1, 1)), True),                 # unbatched
    (2, 2, 2, 3, (3, 4), (5, 6), dict(padding=1), True),                      # one output
    (2, 2, 2, 2, (7, 7), (2, 2), dict(stride=3), True),                       # stride > k
    (2, 3, 2, 3, (4, 5), (2, 3), dict(stride=(1, 2), padding=(0, 2)), False),
    # 3-D
    (3, 2, 2, 3, (4, 5, 3), (2, 2, 2), {}, True),
    (3, 2, 4, 2, (5, 4, 4), (2, 3, 2),
     dict(stride=(1, 2, 1), padding=(1, 0, 1), dilation=(2, 1, 1), groups=2), True),
    (3, 1, 2, 2, (4, 5, 3), (3, 2, 1), dict(padding="same"), True),
    (3, 1, 3, 3, (3, 4, 5), (3, 3, 3), dict(groups=3, padding=1), False),     # depthwise
    (3, 0, 2, 2, (3, 3, 4), (2, 2, 3), dict(padding="valid", stride=(1, 1, 2)), True),
]


def case_id(case):
    dims, batch, c, o, size, kernel, kwargs, bias = case
    parts = [f"{dims}d", f"N{batch}", f"C{c}O{o}", "x".join(map(str, size)),
             "k" + "x".join(map(str, kernel))]
    parts += [f"{k}={v}" for k, v in kwargs.items()]
    return "-".join(parts) + ("" if bias else "-nobias")


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_functional_matches_torch(case):
    dims, batch, channels, out_channels, size, kernel, kwargs, bias = case
    x, w, b = arrays(batch, channels, out_channels, size, kernel, kwargs.get("groups", 1),
                     bias)
    y = compare_functional(dims, x, w, b, **kwargs)
    if kwargs.get("padding") == "same":
        assert tuple(y.shape[-dims:]) == tuple(size)


@pytest.mark.parametrize("dims", [1, 2, 3])
def test_float32_matches_torch_at_float32_tolerance(dims):
    size, kernel = [(9,), (6, 7), (4, 5, 3)][dims - 1], [(3,), (3, 2), (2, 3, 2)][dims - 1]
    x, w, b = arrays(2, 4, 6, size, kernel, groups=2, dtype=np.float32)
    compare_functional(dims, x, w, b, tol=TOL32, padding=1, groups=2, stride=2)


def test_mixed_float32_and_float64_compute_in_float64():
    x, w, b = arrays(2, 3, 4, (6, 5), (3, 3))
    x32 = x.astype(np.float32)
    xt = tinynet.tensor(x32, requires_grad=True)
    wt = tinynet.tensor(w, requires_grad=True)
    bt = tinynet.tensor(b.astype(np.float32), requires_grad=True)
    y = F.conv2d(xt, wt, bt, padding=1)
    assert y.dtype == np.float64
    # the float64 computation on the float32 values, exactly
    ref_x = torch.tensor(x32.astype(np.float64), requires_grad=True)
    ref_w = torch.tensor(w, requires_grad=True)
    ref_b = torch.tensor(b.astype(np.float32).astype(np.float64), requires_grad=True)
    ref = torch.nn.functional.conv2d(ref_x, ref_w, ref_b, padding=1)
    np.testing.assert_allclose(y.numpy(), ref.detach().numpy(), **TOL64)
    dy = np.random.default_rng(3).standard_normal(y.shape)
    (y * tinynet.tensor(dy)).sum().backward()
    ref.backward(torch.tensor(dy))
    assert xt.grad.dtype == np.float32 and wt.grad.dtype == np.float64
    assert bt.grad.dtype == np.float32
    np.testing.assert_allclose(wt.grad.numpy(), ref_w.grad.numpy(), **TOL64)
    np.testing.assert_allclose(xt.grad.numpy(), ref_x.grad.numpy(), **TOL32)
    np.testing.assert_allclose(bt.grad.numpy(), ref_b.grad.numpy(), **TOL32)


def test_a_float32_layer_on_a_float64_input_gives_float64():
    layer = nn.Conv2d(3, 4, 3)
    assert layer.weight.dtype == np.float32
    x = tinynet.tensor(np.random.default_rng(0).standard_normal((1, 3, 5, 5)))
    y = layer(x)
    assert y.dtype == np.float64
    expected = torch.nn.functional.conv2d(
        torch.tensor(x.numpy()), torch.tensor(layer.weight.numpy()).double(),
        torch.tensor(layer.bias.numpy()).double())
    np.testing.assert_allclose(y.numpy(), expected.numpy(), **TOL64)


def test_non_contiguous_input_view():
    """A transposed input (a strided view in the graph) convolves and back-propagates."""
    x, w, b = arrays(2, 3, 4, (6, 5), (3, 2))
    xt = tinynet.tensor(x, requires_grad=True)
    y = F.conv2d(xt.transpose(2, 3), tinynet.tensor(w), tinynet.tensor(b), stride=(2, 1))
    ref_x = torch.tensor(x, requires_grad=True)
    ref = torch.nn.functional.conv2d(ref_x.transpose(2, 3), torch.tensor(w), torch.tensor(b),
                                     stride=(2, 1))
    np.testing.assert_allclose(y.numpy(), ref.detach().numpy(), **TOL64)
    y.sum().backward()
    ref.sum().backward()
    np.testing.assert_allclose(xt.grad.numpy(), ref_x.grad.numpy(), **TOL64)


# ------------------------------------------------------------------------- modules

MODULE_SHAPES = {1: ((2, 3, 9), 3), 2: ((2, 3, 6, 5), (3, 2)), 3: ((1, 2, 4, 5, 4), (2, 3, 2))}


def module_pair(dims, in_channels, out_channels, kernel, **kwargs):
    """torch's Conv{dims}d in float64 and ours, with torch's weights loaded into ours."""
    theirs = getattr(torch.nn, f"Conv{dims}d")(in_channels, out_channels, kernel,
                                               **kwargs).double()
    ours = getattr(nn, f"Conv{dims}d")(in_channels, out_channels, kernel,
                                       dtype=tinynet.float64, **kwargs)
    ours.load_state_dict(theirs.state_dict())
    return ours, theirs


def compare_modules(ours, theirs, x_np, tol=TOL64):
    x, xt = tinynet.tensor(x_np, requires_grad=True), torch.tensor(x_np, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        yt = theirs(xt)
    y = ours(x)
    assert tuple(y.shape) == tuple(yt.shape)
    np.testing.assert_allclose(y.numpy(), yt.detach().numpy(), err_msg="output", **tol)
    dy = np.random.default_rng(2).standard_normal(tuple(yt.shape))
    (y * tinynet.tensor(dy)).sum().backward()
    yt.backward(torch.tensor(dy))
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), err_msg="d input", **tol)
    np.testing.assert_allclose(ours.weight.grad.numpy(), theirs.weight.grad.numpy(),
                               err_msg="d weight", **tol)
    if theirs.bias is not None:
        np.testing.assert_allclose(ours.bias.grad.numpy(), theirs.bias.grad.numpy(),
                                   err_msg="d bias", **tol)
    else:
        assert ours.bias is None
    return y


@pytest.mark.parametrize("dims", [1, 2, 3])
@pytest.mark.parametrize("padding_mode", ["zeros", "reflect", "replicate", "circular"])
@pytest.mark.parametrize("padding", [1, "same", "valid", "tuple"])
def test_module_matches_torch(dims, padding_mode, padding):
    x_shape, kernel = MODULE_SHAPES[dims]
    if padding == "tuple":
        padding = (2, 1, 0)[:dims] if dims > 1 else (2,)
    kwargs = dict(padding=padding, padding_mode=padding_mode)
    if padding == "same":
        kwargs["dilation"] = 2 if dims < 3 else (1, 1, 2)      # even kernels dilated too
    ours, theirs = module_pair(dims, x_shape[1], 4, kernel, bias=dims != 3, **kwargs)
    x = np.random.default_rng(dims).standard_normal(x_shape)
    compare_modules(ours, theirs, x)


@pytest.mark.parametrize("dims", [1, 2, 3])
@pytest.mark.parametrize("padding_mode", ["zeros", "reflect", "replicate", "circular"])
def test_module_unbatched_strided_grouped_matches_torch(dims, padding_mode):
    x_shape, kernel = MODULE_SHAPES[dims]
    channels = 4
    ours, theirs = module_pair(dims, channels, 6, kernel, stride=2, padding=1, groups=2,
                               padding_mode=padding_mode)
    x = np.random.default_rng(5).standard_normal((channels,) + x_shape[2:])
    y = compare_modules(ours, theirs, x)
    assert y.ndim == dims + 1


def test_module_repr_matches_torch():
    for kwargs in (dict(), dict(stride=2, padding=1), dict(padding="same", dilation=2),
                   dict(groups=2, bias=False), dict(padding=(1, 2), padding_mode="reflect")):
        ours = nn.Conv2d(4, 6, (3, 2), **kwargs)
        theirs = torch.nn.Conv2d(4, 6, (3, 2), **kwargs)
        assert repr(ours) == repr(theirs)


def test_state_dict_from_torch_loads_and_gives_the_same_output():
    theirs = torch.nn.Conv2d(3, 5, (3, 2), stride=(2, 1), padding=1, dilation=(1, 2))
    ours = nn.Conv2d(3, 5, (3, 2), stride=(2, 1), padding=1, dilation=(1, 2))
    state = theirs.state_dict()
    assert list(ours.state_dict()) == list(state)
    assert all(tuple(v.shape) == tuple(state[k].shape) for k, v in ours.state_dict().items())
    ours.load_state_dict(state)
    np.testing.assert_array_equal(ours.weight.numpy(), state["weight"].numpy())
    x = np.random.default_rng(4).standard_normal((2, 3, 7, 6)).astype(np.float32)
    with torch.no_grad():
        expected = theirs(torch.tensor(x)).numpy()
    np.testing.assert_allclose(ours(tinynet.tensor(x)).numpy(), expected, **TOL32)
    # and back: our state into a fresh torch layer
    other = torch.nn.Conv2d(3, 5, (3, 2), stride=(2, 1), padding=1, dilation=(1, 2))
    other.load_state_dict({k: torch.tensor(v.numpy()) for k, v in ours.state_dict().items()})
    with torch.no_grad():
        np.testing.assert_array_equal(other(torch.tensor(x)).numpy(), expected)


@pytest.mark.parametrize("cls, args, fan_in", [
    (nn.Conv1d, (5, 40, 7), 5 * 7),
    (nn.Conv2d, (6, 32, (3, 5)), 6 * 15),
    (nn.Conv2d, (6, 32, 3, 1, 0, 1, 2), 3 * 9),          # groups=2 halves the fan-in
    (nn.Conv3d, (2, 24, (2, 3, 2)), 2 * 12),
])
def test_init_is_uniform_within_one_over_sqrt_fan_in(cls, args, fan_in):
    layer = cls(*args)
    bound = 1 / math.sqrt(fan_in)
    w = layer.weight.numpy().ravel()
    assert layer.weight.shape == (args[1], args[0] // (args[6] if len(args) > 6 else 1)) + (
        layer.kernel_size)
    assert np.abs(w).max() <= bound
    assert w.max() > 0.9 * bound and w.min() < -0.9 * bound
    # U(−b, b): mean 0, standard deviation b/√3, a quarter of the values in each quarter
    assert abs(w.mean()) < 0.1 * bound
    np.testing.assert_allclose(w.std(), bound / math.sqrt(3), rtol=0.1)
    counts = np.histogram(w, bins=4, range=(-bound, bound))[0] / w.size
    np.testing.assert_allclose(counts, 0.25, atol=0.06)
    b = layer.bias.numpy()
    assert b.shape == (args[1],) and np.abs(b).max() <= bound and np.ptp(b) > 0.5 * bound
    # torch's bound for the same layer is the same
    theirs = getattr(torch.nn, cls.__name__)(*args)
    assert theirs.weight.abs().max().item() <= bound
    assert theirs.weight.abs().max().item() > 0.9 * bound


def test_two_layers_draw_different_weights_and_seeding_repeats_them():
    tinynet.manual_seed(7)
    a, b = nn.Conv2d(3, 4, 3), nn.Conv2d(3, 4, 3)
    tinynet.manual_seed(7)
    c = nn.Conv2d(3, 4, 3)
    assert not np.array_equal(a.weight.numpy(), b.weight.numpy())
    np.testing.assert_array_equal(a.weight.numpy(), c.weight.numpy())


# --------------------------------------------------------------- gradcheck and graphs

def x64(*shape, seed=0):
    return tinynet.tensor(np.random.default_rng(seed).standard_normal(shape),
                          requires_grad=True)


@pytest.mark.parametrize("dims, x_shape, w_shape, kwargs", [
    (1, (2, 2, 7), (3, 2, 4), dict(padding="same")),
    (2, (1, 4, 5, 6), (4, 2, 3, 2), dict(stride=2, padding=(1, 2), dilation=(2, 1), groups=2)),
    (2, (2, 3, 4, 4), (3, 1, 3, 3), dict(groups=3, padding=1)),
    (3, (1, 2, 3, 4, 3), (2, 2, 2, 2, 2), dict(stride=(1, 2, 1), padding=1)),
])
def test_gradcheck_functional(dims, x_shape, w_shape, kwargs):
    w, b = x64(*w_shape, seed=1), x64(w_shape[0], seed=2)
    assert gradcheck(lambda x, w, b: ours_f(dims)(x, w, b, **kwargs), [x64(*x_shape), w, b])


@pytest.mark.parametrize("padding_mode", ["reflect", "circular"])
def test_gradcheck_module(padding_mode):
    layer = nn.Conv2d(2, 3, (3, 2), padding=(1, 1), padding_mode=padding_mode,
                      dtype=tinynet.float64)
    assert gradcheck(lambda x, w, b: layer(x), [x64(1, 2, 4, 5), layer.weight, layer.bias])


def test_composed_graph_with_fan_out_matches_torch():
    """x → conv1 → relu → conv2 → ..., with the hidden map, conv1's weight and the input
    each used twice: gradients add up over every path."""
    rng = np.random.default_rng(8)
    x_np = rng.standard_normal((2, 3, 7, 6))
    w1, b1 = rng.standard_normal((4, 3, 3, 3)), rng.standard_normal(4)
    w2, b2 = rng.standard_normal((2, 2, 2, 3)), rng.standard_normal(2)
    c_np = rng.standard_normal((2, 4, 4, 3))

    def graph(fn, relu, x, w1, b1, w2, b2, c):
        h = relu(fn.conv2d(x, w1, b1, stride=2, padding=1))            # (2, 4, 4, 3)
        y = fn.conv2d(h, w2, b2, padding="same", groups=2)             # h → conv2
        again = fn.conv2d(x, w1, None, stride=2, padding=1)            # w1 and x again
        return (y * y).sum() + (h * c).sum() + (again * h).sum() + y.sum()

    ours = [tinynet.tensor(a, requires_grad=True) for a in (x_np, w1, b1, w2, b2)]
    theirs = [torch.tensor(a, requires_grad=True) for a in (x_np, w1, b1, w2, b2)]
    loss = graph(F, F.relu, *ours, tinynet.tensor(c_np))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        loss_t = graph(torch.nn.functional, torch.relu, *theirs, torch.tensor(c_np))
    np.testing.assert_allclose(loss.item(), loss_t.item(), rtol=1e-12)
    loss.backward()
    loss_t.backward()
    for name, a, t in zip(("x", "w1", "b1", "w2", "b2"), ours, theirs, strict=True):
        np.testing.assert_allclose(a.grad.numpy(), t.grad.numpy(), err_msg=name, **TOL64)


@pytest.mark.parametrize("wants", [(False, True, True), (False, True, False),
                                   (True, False, False), (False, False, True)])
def test_only_the_inputs_that_want_a_gradient_get_one(wants):
    """A first layer's input needs no gradient; a frozen weight gets none."""
    x_np, w_np, b_np = arrays(2, 3, 4, (6, 5), (3, 3), seed=9)
    ours = [tinynet.tensor(a, requires_grad=r) for a, r in zip((x_np, w_np, b_np), wants,
                                                               strict=True)]
    theirs = [torch.tensor(a, requires_grad=r) for a, r in zip((x_np, w_np, b_np), wants,
                                                               strict=True)]
    y = F.conv2d(*ours, stride=2, padding=1)
    yt = torch.nn.functional.conv2d(*theirs, stride=2, padding=1)
    dy = np.random.default_rng(10).standard_normal(y.shape)
    (y * tinynet.tensor(dy)).sum().backward()
    yt.backward(torch.tensor(dy))
    for a, t, r in zip(ours, theirs, wants, strict=True):
        if r:
            np.testing.assert_allclose(a.grad.numpy(), t.grad.numpy(), **TOL64)
        else:
            assert a.grad is None


def test_first_layer_of_a_model_trains_its_weights():
    model = nn.Sequential(nn.Conv2d(1, 2, 3, padding=1, dtype=tinynet.float64), nn.ReLU(),
                          nn.Conv2d(2, 1, 3, dtype=tinynet.float64))
    x = tinynet.tensor(np.random.default_rng(11).standard_normal((2, 1, 5, 5)))
    model(x).sum().backward()
    assert x.grad is None
    for name, p in model.named_parameters():
        assert p.grad is not None and np.abs(p.grad.numpy()).sum() > 0, name


# ------------------------------------------------------------------------- errors

def t(*shape):
    return tinynet.tensor(np.random.default_rng(0).standard_normal(shape))


@pytest.mark.parametrize("call, message", [
    # channels
    (lambda: F.conv2d(t(2, 3, 5, 5), t(4, 2, 3, 3)),
     r"conv2d: given groups=1, weight of size \[4, 2, 3, 3\], expected input\[2, 3, 5, 5\] "
     r"to have 2 channels, but got 3 channels"),
    (lambda: nn.Conv2d(4, 2, 3)(t(2, 3, 5, 5)), r"to have 4 channels, but got 3"),
    (lambda: F.conv1d(t(2, 4, 5), t(4, 1, 3), groups=2), r"to have 2 channels, but got 4"),
    # groups
    (lambda: nn.Conv2d(3, 6, 3, groups=2), r"Conv2d: in_channels must be divisible by groups"),
    (lambda: nn.Conv2d(4, 6, 3, groups=4), r"Conv2d: out_channels must be divisible by groups"),
    (lambda: F.conv2d(t(1, 4, 5, 5), t(5, 2, 3, 3), groups=2),
     r"expected weight to be divisible by 2 at dimension 0"),
    (lambda: F.conv2d(t(1, 4, 5, 5), t(4, 4, 3, 3), groups=0),
     r"groups must be a positive integer, got 0"),
    # kernel larger than the (padded) input
    (lambda: F.conv2d(t(1, 1, 3, 3), t(1, 1, 5, 5)),
     r"padded input size per channel: \(3 x 3\). Kernel size: \(5 x 5\). "
     r"Kernel size can't be greater than actual input size"),
    (lambda: F.conv2d(t(1, 1, 4, 4), t(1, 1, 3, 3), dilation=2),
     r"Kernel size: \(5 x 5\)"),
    (lambda: nn.Conv1d(1, 1, 6, padding=1)(t(1, 1, 3)), r"\(5\). Kernel size: \(6\)"),
    (lambda: nn.Conv3d(1, 1, (1, 1, 4))(t(1, 1, 2, 2, 3)), r"Kernel size: \(1 x 1 x 4\)"),
    # padding, stride, dilation
    (lambda: F.conv2d(t(1, 1, 5, 5), t(1, 1, 3, 3), padding=-1),
     r"conv2d: negative padding is not supported, got -1"),
    (lambda: nn.Conv2d(1, 1, 3, padding=(1, -1)), r"Conv2d: negative padding"),
    (lambda: F.conv2d(t(1, 1, 5, 5), t(1, 1, 3, 3), stride=0),
     r"conv2d: non-positive stride is not supported, got 0"),
    (lambda: nn.Conv1d(1, 1, 3, stride=(0,)), r"Conv1d: non-positive stride"),
    (lambda: F.conv2d(t(1, 1, 5, 5), t(1, 1, 3, 3), dilation=(1, 0)),
     r"non-positive dilation"),
    (lambda: F.conv2d(t(1, 1, 5, 5), t(1, 1, 3, 3), stride=(1, 2, 1)),
     r"conv2d: stride must be an int or 2 ints, got \(1, 2, 1\)"),
    (lambda: F.conv2d(t(1, 1, 5, 5), t(1, 1, 3, 3), padding="same", stride=2),
     r"padding='same' is not supported for strided convolutions"),
    (lambda: nn.Conv2d(1, 1, 3, stride=(1, 2), padding="same"),
     r"Conv2d: padding='same' is not supported for strided"),
    (lambda: F.conv1d(t(1, 1, 5), t(1, 1, 3), padding="full"),
     r"conv1d: padding must be 'valid', 'same', an int or 1 ints, got 'full'"),
    (lambda: nn.Conv2d(1, 1, 3, padding="SAME"), r"padding must be 'valid', 'same'"),
    (lambda: nn.Conv2d(1, 1, 3, padding_mode="mirror"),
     r"Conv2d: padding_mode must be one of \('zeros', 'reflect', 'replicate', 'circular'\), "
     r"got 'mirror'"),
    (lambda: nn.Conv2d(1, 1, (3, 0)), r"Conv2d: kernel_size must be a positive int"),
    (lambda: nn.Conv3d(1, 1, (3, 3)), r"Conv3d: kernel_size must be a positive int or 3"),
    # input and weight dims
    (lambda: F.conv2d(t(3, 5), t(1, 1, 3, 3)),
     r"conv2d: expected 3-D \(unbatched\) or 4-D \(batched\) input, but got input of size: "
     r"\[3, 5\]"),
    (lambda: nn.Conv1d(3, 2, 3)(t(2, 3, 5, 5)), r"conv1d: expected 2-D \(unbatched\) or 3-D"),
    (lambda: nn.Conv3d(3, 2, 3)(t(3, 5, 5)), r"conv3d: expected 4-D \(unbatched\) or 5-D"),
    (lambda: F.conv2d(t(1, 1, 5, 5), t(1, 3, 3)), r"conv2d: expected a 4-D weight"),
    (lambda: F.conv2d(t(1, 1, 5, 5), t(2, 1, 3, 3), t(3)),
     r"bias of shape \(3,\) does not match the 2 output channels"),
])
def test_bad_arguments_raise_a_clear_value_error(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_bad_counts_are_type_or_value_errors():
    with pytest.raises(ValueError, match="Conv2d: in_channels must be at least 1"):
        nn.Conv2d(0, 2, 3)
    with pytest.raises(TypeError, match="Conv2d: groups must be an integer"):
        nn.Conv2d(2, 2, 3, groups=1.5)
