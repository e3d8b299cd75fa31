"""PReLU (``F.prelu`` and ``nn.PReLU``): float64 gradcheck, and the values and both
gradients, the input's and the slopes', against PyTorch; the errors."""
import re

import numpy as np
import pytest

import tinynet
from tinynet import nn
from tinynet.nn import functional as F
from tinynet.testing import gradcheck

torch = pytest.importorskip("torch")

SHAPES = [                  # (input, weight)
    ((7,), (1,)),           # 1-D: one channel, so one slope
    ((), ()),               # a 0-D input and a 0-D weight
    ((4, 3), (3,)),         # a slope per feature
    ((2, 3, 4, 5), (3,)),   # a slope per channel of images (N, C, H, W)
    ((2, 3, 4, 5), (1,)),   # one slope for all
    ((2, 3, 5), ()),
]


def prelu_and_gradients(lib, x_np, w_np, dy_np):
    """prelu(x, w) and the gradients of Σ prelu(x, w) · dy for x and w, in one framework."""
    x = lib.tensor(x_np, requires_grad=True)
    w = lib.tensor(w_np, requires_grad=True)
    y = lib.nn.functional.prelu(x, w)
    (y * lib.tensor(dy_np)).sum().backward()
    return y.detach().numpy(), x.grad.numpy(), w.grad.numpy()


@pytest.mark.parametrize("x_shape, w_shape", SHAPES)
def test_prelu_matches_torch_and_gradchecks(x_shape, w_shape):
    rng = np.random.default_rng(0)
    x_np, dy_np = rng.standard_normal(x_shape), rng.standard_normal(x_shape)
    w_np = rng.uniform(-0.5, 0.5, w_shape)
    ours = prelu_and_gradients(tinynet, x_np, w_np, dy_np)
    theirs = prelu_and_gradients(torch, x_np, w_np, dy_np)
    for a, b in zip(ours, theirs, strict=True):          # y, then dL/dx, then dL/dw
        assert a.shape == b.shape and a.dtype == b.dtype
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-13)
    x = tinynet.tensor(x_np, requires_grad=True)
    w = tinynet.tensor(w_np, requires_grad=True)
    assert gradcheck(F.prelu, (x, w))


def test_prelu_at_the_edges_matches_torch():
    """0, -0.0, ±inf and NaN take the slope's branch wherever PyTorch's does."""
    x_np = np.array([[-np.inf, -1.0, -0.0, 0.0], [1.0, np.inf, np.nan, -2.0]])
    w_np, dy_np = np.array([0.25, -0.5, 2.0, 0.0]), np.ones_like(x_np)
    ours = prelu_and_gradients(tinynet, x_np, w_np, dy_np)
    theirs = prelu_and_gradients(torch, x_np, w_np, dy_np)
    for a, b in zip(ours, theirs, strict=True):
        np.testing.assert_array_equal(a, b)
        assert np.array_equal(np.signbit(a), np.signbit(b))


@pytest.mark.parametrize("num_parameters, shape", [(1, (5,)), (1, (2, 3, 4, 4)),
                                                   (3, (2, 3, 4, 4)), (3, (4, 3))])
def test_prelu_layer_matches_torch(num_parameters, shape):
    ours = nn.PReLU(num_parameters, init=0.1, dtype=tinynet.float64)
    theirs = torch.nn.PReLU(num_parameters, init=0.1, dtype=torch.float64)
    assert repr(ours) == repr(theirs) == f"PReLU(num_parameters={num_parameters})"
    assert list(ours.state_dict()) == list(theirs.state_dict()) == ["weight"]
    np.testing.assert_array_equal(ours.weight.numpy(), theirs.weight.detach().numpy())
    x_np = np.random.default_rng(1).standard_normal(shape)
    x, x_ref = tinynet.tensor(x_np, requires_grad=True), torch.tensor(x_np, requires_grad=True)
    y, y_ref = ours(x), theirs(x_ref)
    (y * y).sum().backward()
    (y_ref * y_ref).sum().backward()
    np.testing.assert_allclose(y.detach().numpy(), y_ref.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), x_ref.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(ours.weight.grad.numpy(), theirs.weight.grad.numpy(), rtol=1e-12)


def test_prelu_layer_defaults_are_torchs():
    ours, theirs = nn.PReLU(), torch.nn.PReLU()
    assert ours.weight.shape == (1,) and ours.weight.dtype == np.float32
    assert ours.weight.tolist() == theirs.weight.tolist() == [0.25]
    assert ours.num_parameters == theirs.num_parameters and ours.init == theirs.init
    assert [p is ours.weight for p in ours.parameters()] == [True]
    ours.weight.array[...] = 3.0
    ours.reset_parameters()
    assert ours.weight.tolist() == [0.25]


@pytest.mark.parametrize("x_shape, w_shape", [((2, 3), (4,)), ((3,), (3,)), ((), (2,)),
                                              ((2, 3), (1, 3)), ((2, 3, 4, 4), (4,))])
def test_a_weight_of_the_wrong_size_is_refused_naming_the_shapes(x_shape, w_shape):
    message = f"weight of shape {w_shape} does not fit the input of shape {x_shape}"
    with pytest.raises(ValueError, match=re.escape(message)):
        F.prelu(tinynet.randn(*x_shape), tinynet.randn(*w_shape))
    with pytest.raises(RuntimeError):       # PyTorch refuses each of them too
        torch.nn.functional.prelu(torch.randn(x_shape), torch.randn(w_shape))


def test_prelu_errors():
    with pytest.raises(ValueError, match=re.escape("input of shape (2, 4)")):
        nn.PReLU(3)(tinynet.randn(2, 4))
    with pytest.raises(TypeError, match="weight of dtype float32 does not match the input's "
                                        "dtype float64"):
        F.prelu(tinynet.randn(2, 3, dtype=tinynet.float64), tinynet.randn(3))
    with pytest.raises(ValueError, match="num_parameters must be at least 1"):
        nn.PReLU(0)
    with pytest.raises(TypeError, match="PReLU: init must be a real number"):
        nn.PReLU(init="0.25")


def test_prelu_is_at_pytorchs_places():
    assert tinynet.prelu is tinynet.ops.prelu is F.prelu
    assert "prelu" in tinynet.__all__ and "prelu" in F.__all__ and "PReLU" in nn.__all__
