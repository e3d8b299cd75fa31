"""Transposed convolutions (tinynet/ops/conv_transpose.py, nn.ConvTranspose1d/2d/3d)
against PyTorch.

F.conv_transpose1d/2d/3d: the output and every gradient (input, weight, bias)
to 1e-10 in float64 over a grid of strides, paddings, output paddings (below
the stride, and below the dilation at stride 1), dilations, groups (depthwise
included), odd sizes, 1×1 kernels, batch 1, unbatched input and no bias;
float32; finite differences; the adjoint identity with conv; the modules with
torch's state_dict, output_size, repr and initialisation; and the ValueErrors
for bad arguments.
"""
import math

import numpy as np
import pytest
from conv_compare import compare_with_torch

import tinynet
from tinynet import nn
from tinynet.nn import functional as F
from tinynet.ops.conv_transpose import ConvTransposeFunction
from tinynet.testing import gradcheck

torch = pytest.importorskip("torch")

TOL64 = dict(rtol=1e-10, atol=1e-10)
TOL32 = dict(rtol=2e-5, atol=2e-5)


def torch_f(dims):
    return getattr(torch.nn.functional, f"conv_transpose{dims}d")


def ours_f(dims):
    return getattr(F, f"conv_transpose{dims}d")


def compare_functional(dims, x_np, w_np, b_np, dy_seed=1, tol=TOL64, **kwargs):
    """F.conv_transpose{dims}d against torch on the same arrays: output and gradients."""
    return compare_with_torch(torch, ours_f(dims), torch_f(dims), x_np, w_np, b_np, dy_seed,
                              tol, **kwargs)


def arrays(batch, channels, out_channels, size, kernel, groups=1, bias=True, seed=0,
           dtype=np.float64):
    """Input (N, C_in, *size) (no N when batch is 0), weight (C_in, C_out/groups, *kernel)."""
    rng = np.random.default_rng(seed)
    x_shape = ((batch,) if batch else ()) + (channels,) + tuple(size)
    x = rng.standard_normal(x_shape).astype(dtype)
    w = rng.standard_normal((channels, out_channels // groups) + tuple(kernel)).astype(dtype)
    b = rng.standard_normal(out_channels).astype(dtype) if bias else None
    return x, w, b


# (dims, batch (0: unbatched), C_in, C_out, spatial size, kernel, keyword arguments, bias)
CASES = [
    # 1-D
    (1, 2, 3, 4, (5,), (3,), {}, True),
    (1, 2, 3, 4, (6,), (3,), dict(stride=2), True),
    (1, 2, 3, 2, (5,), (4,), dict(stride=2, padding=1, output_padding=1), True),
    (1, 2, 2, 3, (4,), (3,), dict(stride=3, padding=2, output_padding=2), True),
    (1, 1, 2, 2, (4,), (3,), dict(dilation=3, output_padding=2), True),    # op < dilation
    (1, 2, 3, 3, (7,), (2,), dict(stride=2, dilation=2, padding=1), True),
    (1, 2, 4, 6, (5,), (3,), dict(groups=2, padding=1), True),
    (1, 2, 4, 4, (5,), (3,), dict(groups=4, stride=2), True),             # depthwise
    (1, 1, 3, 2, (5,), (1,), dict(stride=3), True),                       # 1×1, batch 1
    (1, 0, 3, 2, (6,), (2,), dict(padding=1), True),                      # unbatched
    (1, 2, 3, 2, (6,), (3,), dict(stride=2, output_padding=1), False),
    # 2-D
    (2, 2, 3, 4, (4, 5), (3, 3), {}, True),
    (2, 2, 3, 4, (4, 5), (3, 2), dict(stride=2, padding=1, output_padding=1), True),
    (2, 2, 3, 2, (3, 4), (3, 2), dict(stride=(2, 3), padding=(1, 2),
                                      output_padding=(1, 2)), True),
    (2, 2, 2, 3, (4, 3), (3, 2), dict(stride=(2, 1), dilation=(1, 2), padding=(0, 1),
                                      output_padding=(1, 1)), True),        # op < d only
    (2, 1, 2, 2, (5, 4), (2, 3), dict(dilation=2, padding=1), True),
    (2, 2, 4, 6, (3, 4), (3, 3), dict(groups=2, stride=2, padding=1), True),
    (2, 2, 4, 4, (4, 4), (3, 3), dict(groups=4, stride=2, padding=1,
                                      output_padding=1), True),             # depthwise
    (2, 2, 4, 8, (3, 3), (2, 2), dict(groups=4), True),                     # multiplier 2
    (2, 2, 6, 4, (3, 4), (3, 3), dict(groups=2, stride=3, padding=2, dilation=2,
                                      output_padding=1), False),
    (2, 1, 3, 5, (5, 7), (1, 1), {}, True),                                 # 1×1 kernel
    (2, 1, 3, 2, (5, 3), (3, 3), dict(stride=2, dilation=2, padding=1), True),  # odd sizes
    (2, 0, 3, 2, (3, 4), (3, 2), dict(padding=(1, 0), stride=2), True),     # unbatched
    (2, 2, 2, 3, (1, 1), (3, 4), {}, True),                                 # one input pixel
    (2, 2, 2, 2, (3, 3), (2, 2), dict(stride=3), True),                     # stride > k: gaps
    (2, 2, 2, 3, (4, 3), (4, 4), dict(padding=2), True),                    # padding = k/2
    (2, 3, 2, 3, (3, 4), (2, 3), dict(stride=(1, 2), padding=(0, 2)), False),
    # 3-D
    (3, 2, 2, 3, (3, 2, 3), (2, 2, 2), {}, True),
    (3, 1, 4, 2, (2, 3, 2), (2, 3, 2), dict(stride=(1, 2, 2), padding=(1, 0, 1),
                                            output_padding=(0, 1, 1), dilation=(2, 1, 1),
                                            groups=2), True),
    (3, 0, 2, 2, (2, 2, 3), (2, 2, 3), dict(stride=2), False),
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
    # PyTorch's output size formula
    expected = [(n - 1) * s - 2 * p + d * (k - 1) + op + 1 for n, k, s, p, op, d in zip(
        size, kernel, *(_per_dim(kwargs.get(name, default), dims) for name, default in (
            ("stride", 1), ("padding", 0), ("output_padding", 0), ("dilation", 1))),
        strict=True)]
    assert list(y.shape[-dims:]) == expected
    assert y.shape[-dims - 1] == out_channels


def _per_dim(value, dims):
    return (value,) * dims if isinstance(value, int) else tuple(value)


@pytest.mark.parametrize("dims", [1, 2, 3])
def test_float32_matches_torch_at_float32_tolerance(dims):
    size, kernel = [(7,), (4, 5), (3, 2, 3)][dims - 1], [(3,), (3, 2), (2, 3, 2)][dims - 1]
    x, w, b = arrays(2, 4, 6, size, kernel, groups=2, dtype=np.float32)
    compare_functional(dims, x, w, b, tol=TOL32, padding=1, groups=2, stride=2,
                       output_padding=1)


def test_mixed_float32_and_float64_compute_in_float64():
    x, w, b = arrays(2, 3, 4, (4, 5), (3, 3))
    x32 = x.astype(np.float32)
    xt = tinynet.tensor(x32, requires_grad=True)
    wt = tinynet.tensor(w, requires_grad=True)
    y = F.conv_transpose2d(xt, wt, tinynet.tensor(b), stride=2)
    assert y.dtype == np.float64
    ref_x = torch.tensor(x32.astype(np.float64), requires_grad=True)
    ref_w = torch.tensor(w, requires_grad=True)
    ref = torch.nn.functional.conv_transpose2d(ref_x, ref_w, torch.tensor(b), stride=2)
    np.testing.assert_allclose(y.numpy(), ref.detach().numpy(), **TOL64)
    dy = np.random.default_rng(3).standard_normal(y.shape)
    (y * tinynet.tensor(dy)).sum().backward()
    ref.backward(torch.tensor(dy))
    assert xt.grad.dtype == np.float32 and wt.grad.dtype == np.float64
    np.testing.assert_allclose(wt.grad.numpy(), ref_w.grad.numpy(), **TOL64)
    np.testing.assert_allclose(xt.grad.numpy(), ref_x.grad.numpy(), **TOL32)


def test_non_contiguous_input_view():
    x, w, b = arrays(2, 3, 4, (4, 5), (3, 2))
    xt = tinynet.tensor(x, requires_grad=True)
    y = F.conv_transpose2d(xt.transpose(2, 3), tinynet.tensor(w), tinynet.tensor(b),
                           stride=(2, 1))
    ref_x = torch.tensor(x, requires_grad=True)
    ref = torch.nn.functional.conv_transpose2d(ref_x.transpose(2, 3), torch.tensor(w),
                                               torch.tensor(b), stride=(2, 1))
    np.testing.assert_allclose(y.numpy(), ref.detach().numpy(), **TOL64)
    y.sum().backward()
    ref.sum().backward()
    np.testing.assert_allclose(xt.grad.numpy(), ref_x.grad.numpy(), **TOL64)


@pytest.mark.parametrize("dims, x_size, kernel, kwargs", [
    (1, (11,), (3,), dict(stride=2, padding=1)),
    (2, (7, 8), (3, 2), dict(stride=(2, 3), padding=(1, 0), dilation=(1, 2), groups=2)),
    (3, (4, 5, 4), (2, 2, 3), dict(stride=(1, 2, 1), padding=1)),
])
def test_the_adjoint_of_conv(dims, x_size, kernel, kwargs):
    """<conv(x), z> = <x, conv_transpose(z)> with the same weight and arguments: the
    transposed convolution is the convolution's adjoint (its input-gradient map)."""
    rng = np.random.default_rng(6)
    groups = kwargs.get("groups", 1)
    x = tinynet.tensor(rng.standard_normal((2, 4) + x_size))
    w = tinynet.tensor(rng.standard_normal((6, 4 // groups) + kernel))
    y = getattr(F, f"conv{dims}d")(x, w, **kwargs)
    z = tinynet.tensor(rng.standard_normal(y.shape))
    # the input sizes a strided conv maps to y's size differ in the last positions:
    # output_padding says which one x had
    shortest = ours_f(dims)(z, w, **kwargs).shape[2:]
    extra = tuple(n - m for n, m in zip(x_size, shortest, strict=True))
    back = ours_f(dims)(z, w, output_padding=extra, **kwargs)
    assert back.shape == x.shape
    np.testing.assert_allclose((y * z).sum().item(), (x * back).sum().item(), rtol=1e-12)


# ------------------------------------------------------------------------- modules

MODULE_SHAPES = {1: ((2, 4, 6), 3), 2: ((2, 4, 4, 5), (3, 2)), 3: ((1, 4, 3, 4, 3), (2, 3, 2))}


def module_pair(dims, in_channels, out_channels, kernel, **kwargs):
    """torch's ConvTranspose{dims}d in float64 and ours, with torch's weights loaded."""
    theirs = getattr(torch.nn, f"ConvTranspose{dims}d")(in_channels, out_channels, kernel,
                                                        **kwargs).double()
    ours = getattr(nn, f"ConvTranspose{dims}d")(in_channels, out_channels, kernel,
                                                dtype=tinynet.float64, **kwargs)
    state = theirs.state_dict()
    assert list(ours.state_dict()) == list(state)
    ours.load_state_dict(state)
    return ours, theirs


def compare_modules(ours, theirs, x_np, tol=TOL64, **call):
    x, xt = tinynet.tensor(x_np, requires_grad=True), torch.tensor(x_np, requires_grad=True)
    yt = theirs(xt, **call)
    y = ours(x, **call)
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
@pytest.mark.parametrize("kwargs", [
    dict(),
    dict(stride=2, padding=1, output_padding=1),
    dict(stride=2, groups=2, bias=False),
    dict(dilation=2, output_padding=1, padding=1),
    dict(stride=3, padding=2, output_padding=2, groups=4),
], ids=lambda kw: ",".join(f"{k}={v}" for k, v in kw.items()) or "defaults")
def test_module_matches_torch(dims, kwargs):
    x_shape, kernel = MODULE_SHAPES[dims]
    ours, theirs = module_pair(dims, x_shape[1], 8, kernel, **kwargs)
    x = np.random.default_rng(dims).standard_normal(x_shape)
    compare_modules(ours, theirs, x)


@pytest.mark.parametrize("dims", [1, 2])
def test_module_unbatched_matches_torch(dims):
    x_shape, kernel = MODULE_SHAPES[dims]
    ours, theirs = module_pair(dims, 4, 6, kernel, stride=2, padding=1, groups=2)
    x = np.random.default_rng(5).standard_normal(x_shape[1:])
    y = compare_modules(ours, theirs, x)
    assert y.ndim == dims + 1


@pytest.mark.parametrize("output_size", [(7, 8), (8, 9), [2, 6, 8, 8], (7, 9)])
def test_module_output_size_picks_the_output_padding_as_torch(output_size):
    """The sizes a stride-2 convolution maps to the same output: output_size chooses."""
    ours, theirs = module_pair(2, 4, 6, (3, 2), stride=2, padding=1, output_padding=1)
    x = np.random.default_rng(7).standard_normal((2, 4, 4, 5))
    y = compare_modules(ours, theirs, x, output_size=output_size)
    assert list(y.shape[2:]) == list(output_size)[-2:]


def test_module_repr_matches_torch():
    for kwargs in (dict(), dict(stride=2, padding=1), dict(stride=2, output_padding=1),
                   dict(dilation=2, groups=2, bias=False),
                   dict(stride=(2, 1), padding=(1, 2), output_padding=(1, 0))):
        ours = nn.ConvTranspose2d(4, 6, (3, 2), **kwargs)
        theirs = torch.nn.ConvTranspose2d(4, 6, (3, 2), **kwargs)
        assert repr(ours) == repr(theirs)
    assert repr(nn.ConvTranspose1d(4, 6, 3)) == repr(torch.nn.ConvTranspose1d(4, 6, 3))


def test_state_dict_round_trip_with_torch():
    theirs = torch.nn.ConvTranspose2d(3, 5, (3, 2), stride=2, padding=1, output_padding=1)
    ours = nn.ConvTranspose2d(3, 5, (3, 2), stride=2, padding=1, output_padding=1)
    assert ours.weight.shape == (3, 5, 3, 2) == tuple(theirs.weight.shape)
    ours.load_state_dict(theirs.state_dict())
    x = np.random.default_rng(4).standard_normal((2, 3, 4, 5)).astype(np.float32)
    with torch.no_grad():
        expected = theirs(torch.tensor(x)).numpy()
    np.testing.assert_allclose(ours(tinynet.tensor(x)).numpy(), expected, **TOL32)
    other = torch.nn.ConvTranspose2d(3, 5, (3, 2), stride=2, padding=1, output_padding=1)
    other.load_state_dict({k: torch.tensor(v.numpy()) for k, v in ours.state_dict().items()})
    with torch.no_grad():
        np.testing.assert_array_equal(other(torch.tensor(x)).numpy(), expected)


@pytest.mark.parametrize("cls, args, fan_in", [
    (nn.ConvTranspose1d, (40, 5, 7), 5 * 7),             # fan_in from weight.size(1) = 5
    (nn.ConvTranspose2d, (32, 6, (3, 5)), 6 * 15),
    (nn.ConvTranspose2d, (32, 6, 3, 1, 0, 0, 2), 3 * 9),  # groups=2 halves weight.size(1)
    (nn.ConvTranspose3d, (24, 2, (2, 3, 2)), 2 * 12),
])
def test_init_is_uniform_within_one_over_sqrt_fan_in(cls, args, fan_in):
    """PyTorch's init: the bound is 1/√(weight.size(1)·prod(kernel)), out_channels/groups
    times the kernel, not in_channels as for a convolution."""
    layer = cls(*args)
    groups = args[6] if len(args) > 6 else 1
    assert layer.weight.shape == (args[0], args[1] // groups) + layer.kernel_size
    bound = 1 / math.sqrt(fan_in)
    w = layer.weight.numpy().ravel()
    assert np.abs(w).max() <= bound
    assert w.max() > 0.9 * bound and w.min() < -0.9 * bound
    np.testing.assert_allclose(w.std(), bound / math.sqrt(3), rtol=0.1)
    counts = np.histogram(w, bins=4, range=(-bound, bound))[0] / w.size
    np.testing.assert_allclose(counts, 0.25, atol=0.06)
    b = layer.bias.numpy()
    assert b.shape == (args[1],) and np.abs(b).max() <= bound and np.ptp(b) > 0.5 * bound
    theirs = getattr(torch.nn, cls.__name__)(*args)
    assert bound * 0.9 < theirs.weight.abs().max().item() <= bound


# --------------------------------------------------------------- gradcheck and graphs

def x64(*shape, seed=0):
    return tinynet.tensor(np.random.default_rng(seed).standard_normal(shape),
                          requires_grad=True)


@pytest.mark.parametrize("dims, x_shape, w_shape, kwargs", [
    (1, (2, 2, 4), (2, 3, 3), dict(stride=2, padding=1, output_padding=1)),
    (2, (1, 4, 3, 3), (4, 2, 3, 2), dict(stride=2, padding=(1, 0), dilation=(1, 2),
                                         groups=2, output_padding=(1, 1))),
    (2, (2, 3, 2, 3), (3, 1, 2, 2), dict(groups=3, stride=3)),
    (3, (1, 2, 2, 3, 2), (2, 2, 2, 2, 2), dict(stride=(1, 2, 1), padding=1)),
])
def test_gradcheck_functional(dims, x_shape, w_shape, kwargs):
    w, b = x64(*w_shape, seed=1), x64(w_shape[1] * kwargs.get("groups", 1), seed=2)
    assert gradcheck(lambda x, w, b: ours_f(dims)(x, w, b, **kwargs), [x64(*x_shape), w, b])


def test_an_autoencoder_graph_matches_torch():
    """conv (stride 2) → relu → conv_transpose back to the input's size, the input
    and the encoder's output each used twice."""
    rng = np.random.default_rng(8)
    x_np = rng.standard_normal((2, 3, 7, 6))
    w1, b1 = rng.standard_normal((4, 3, 3, 3)), rng.standard_normal(4)
    w2, b2 = rng.standard_normal((4, 3, 3, 3)), rng.standard_normal(3)

    def graph(fn, relu, x, w1, b1, w2, b2):
        h = relu(fn.conv2d(x, w1, b1, stride=2, padding=1))               # (2, 4, 4, 3)
        y = fn.conv_transpose2d(h, w2, b2, stride=2, padding=1, output_padding=(0, 1))
        return ((y - x) ** 2).sum() + (h * h).sum() + (y * x).sum()

    ours = [tinynet.tensor(a, requires_grad=True) for a in (x_np, w1, b1, w2, b2)]
    theirs = [torch.tensor(a, requires_grad=True) for a in (x_np, w1, b1, w2, b2)]
    loss = graph(F, F.relu, *ours)
    loss_t = graph(torch.nn.functional, torch.relu, *theirs)
    np.testing.assert_allclose(loss.item(), loss_t.item(), rtol=1e-12)
    loss.backward()
    loss_t.backward()
    for name, a, t in zip(("x", "w1", "b1", "w2", "b2"), ours, theirs, strict=True):
        np.testing.assert_allclose(a.grad.numpy(), t.grad.numpy(), err_msg=name, **TOL64)


@pytest.mark.parametrize("wants", [(False, True, True), (True, False, False),
                                   (False, False, True)])
def test_only_the_inputs_that_want_a_gradient_get_one(wants):
    x_np, w_np, b_np = arrays(2, 3, 4, (4, 5), (3, 3), seed=9)
    ours = [tinynet.tensor(a, requires_grad=r) for a, r in zip((x_np, w_np, b_np), wants,
                                                               strict=True)]
    theirs = [torch.tensor(a, requires_grad=r) for a, r in zip((x_np, w_np, b_np), wants,
                                                               strict=True)]
    y = F.conv_transpose2d(*ours, stride=2, padding=1)
    yt = torch.nn.functional.conv_transpose2d(*theirs, stride=2, padding=1)
    dy = np.random.default_rng(10).standard_normal(y.shape)
    (y * tinynet.tensor(dy)).sum().backward()
    yt.backward(torch.tensor(dy))
    for a, t, r in zip(ours, theirs, wants, strict=True):
        if r:
            np.testing.assert_allclose(a.grad.numpy(), t.grad.numpy(), **TOL64)
        else:
            assert a.grad is None


def test_one_graph_node():
    x, w, b = (tinynet.tensor(a, requires_grad=True) for a in arrays(1, 2, 2, (3, 3), (2, 2)))
    y = F.conv_transpose2d(x, w, b, stride=2)
    assert y._node.fn is ConvTransposeFunction and y._node.inputs[:3] == (x, w, b)


def test_a_wrong_gradient_is_caught(monkeypatch):
    """The comparison is tight enough to catch a gradient off by one part in 10⁸."""
    backward = ConvTransposeFunction.backward

    def off(ctx, grad):
        grads = list(backward(ctx, grad))
        grads[1] = grads[1] * (1 + 1e-8)
        return tuple(grads)

    monkeypatch.setattr(ConvTransposeFunction, "backward", staticmethod(off))
    x, w, b = arrays(2, 3, 4, (4, 5), (3, 3))
    with pytest.raises(AssertionError, match="d weight"):
        compare_functional(2, x, w, b, stride=2)


# ------------------------------------------------------------------------- errors

def t(*shape):
    return tinynet.tensor(np.random.default_rng(0).standard_normal(shape))


@pytest.mark.parametrize("call, message", [
    # channels
    (lambda: F.conv_transpose2d(t(2, 3, 5, 5), t(4, 2, 3, 3)),
     r"conv_transpose2d: given transposed=1, weight of size \[4, 2, 3, 3\], expected "
     r"input\[2, 3, 5, 5\] to have 4 channels, but got 3 channels instead"),
    (lambda: nn.ConvTranspose2d(4, 2, 3)(t(2, 3, 5, 5)), r"to have 4 channels, but got 3"),
    # groups
    (lambda: F.conv_transpose2d(t(2, 4, 5, 5), t(4, 2, 3, 3), groups=3),
     r"given groups=3, expected weight to be divisible by 3 at dimension 0"),
    (lambda: F.conv_transpose1d(t(2, 4, 5), t(4, 2, 3), groups=0),
     r"conv_transpose1d: groups must be a positive integer, got 0"),
    (lambda: nn.ConvTranspose2d(3, 6, 3, groups=2),
     r"ConvTranspose2d: in_channels must be divisible by groups"),
    (lambda: nn.ConvTranspose2d(4, 6, 3, groups=4),
     r"ConvTranspose2d: out_channels must be divisible by groups"),
    # output padding
    (lambda: F.conv_transpose2d(t(1, 4, 5, 5), t(4, 2, 3, 3), output_padding=1),
     r"conv_transpose2d: output padding must be smaller than either stride or dilation, "
     r"but got output_padding=\(1, 1\), stride=\(1, 1\), dilation=\(1, 1\)"),
    (lambda: F.conv_transpose1d(t(1, 4, 5), t(4, 2, 3), stride=2, output_padding=2),
     r"output padding must be smaller than either stride or dilation"),
    (lambda: F.conv_transpose2d(t(1, 4, 5, 5), t(4, 2, 3, 3), stride=(2, 1),
                                dilation=(1, 2), output_padding=(1, 2)),
     r"output_padding=\(1, 2\), stride=\(2, 1\), dilation=\(1, 2\)"),
    (lambda: nn.ConvTranspose2d(4, 2, 3, output_padding=1)(t(1, 4, 3, 3)),
     r"output padding must be smaller"),
    (lambda: F.conv_transpose2d(t(1, 4, 5, 5), t(4, 2, 3, 3), output_padding=-1),
     r"negative output_padding is not supported"),
    # padding, stride, dilation
    (lambda: F.conv_transpose2d(t(1, 4, 2, 2), t(4, 2, 3, 3), padding=-1),
     r"conv_transpose2d: negative padding is not supported, got -1"),
    (lambda: F.conv_transpose2d(t(1, 4, 2, 2), t(4, 2, 3, 3), padding="same"),
     r"conv_transpose2d: padding must be an int or 2 ints, got 'same'"),
    (lambda: F.conv_transpose2d(t(1, 4, 2, 2), t(4, 2, 3, 3), stride=0),
     r"non-positive stride is not supported, got 0"),
    (lambda: nn.ConvTranspose1d(1, 1, 3, dilation=(0,)), r"ConvTranspose1d: non-positive "
     r"dilation"),
    (lambda: F.conv_transpose2d(t(1, 4, 2, 2), t(4, 2, 3, 3), stride=(1, 2, 1)),
     r"stride must be an int or 2 ints, got \(1, 2, 1\)"),
    # an output with no positions
    (lambda: F.conv_transpose2d(t(1, 4, 1, 1), t(4, 2, 1, 1), padding=1),
     r"given input size per channel: \(1 x 1\). Calculated output size per channel: "
     r"\(-1 x -1\). Output size is too small"),
    (lambda: F.conv_transpose2d(t(1, 4, 2, 2), t(4, 2, 3, 3), padding=2),
     r"Calculated output size per channel: \(0 x 0\)"),
    # input, weight and bias shapes
    (lambda: F.conv_transpose2d(t(4, 2), t(4, 2, 3, 3)),
     r"conv_transpose2d: expected 3-D \(unbatched\) or 4-D \(batched\) input, but got "
     r"input of size: \[4, 2\]"),
    (lambda: F.conv_transpose1d(t(1, 4, 5), t(4, 2, 3, 3)),
     r"conv_transpose1d: expected a 3-D weight \(in_channels, out_channels/groups"),
    (lambda: F.conv_transpose2d(t(1, 4, 2, 2), t(4, 2, 3, 3), t(3)),
     r"bias of shape \(3,\) does not match the 2 output channels"),
    (lambda: F.conv_transpose2d(t(1, 4, 2, 2), t(4, 2, 3, 3), t(3), groups=2),
     r"bias of shape \(3,\) does not match the 4 output channels"),
    # module arguments
    (lambda: nn.ConvTranspose2d(4, 2, 3, padding_mode="reflect"),
     r'ConvTranspose2d: only "zeros" padding mode is supported'),
    (lambda: nn.ConvTranspose2d(4, 2, (3, 0)), r"kernel_size must be a positive int"),
    (lambda: nn.ConvTranspose2d(4, 6, (3, 2), stride=2, padding=1)(t(1, 4, 3, 3),
                                                                    output_size=(7, 7)),
     r"requested an output size of \(7, 7\), but valid sizes range from \[5, 4\] to "
     r"\[6, 5\] \(for an input of \(3, 3\)\)"),
    (lambda: nn.ConvTranspose2d(4, 6, 3)(t(1, 4, 3, 3), output_size=(5,)),
     r"for 4D input, output_size must have 2 or 4 elements \(got 1\)"),
])
def test_bad_arguments_raise_a_clear_value_error(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_torch_rejects_the_same_arguments():
    """A sample of the bad arguments above: torch refuses them too."""
    f = torch.nn.functional.conv_transpose2d
    r = torch.randn
    for call in (lambda: f(r(2, 3, 5, 5), r(4, 2, 3, 3)),
                 lambda: f(r(2, 4, 5, 5), r(4, 2, 3, 3), groups=3),
                 lambda: f(r(1, 4, 5, 5), r(4, 2, 3, 3), output_padding=1),
                 lambda: f(r(1, 4, 1, 1, requires_grad=True), r(4, 2, 1, 1), padding=1),
                 lambda: f(r(1, 4, 2, 2, requires_grad=True), r(4, 2, 3, 3), padding=2),
                 lambda: f(r(1, 4, 2, 2), r(4, 2, 3, 3), r(3))):
        with pytest.raises(RuntimeError):
            call()
