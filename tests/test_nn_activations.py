"""Activations (Softmax, LogSoftmax, GELU, SiLU, erf), Embedding and one_hot:
float64 gradcheck, and values and gradients against PyTorch."""
import math

import numpy as np
import pytest

import tinynet
from tinynet import nn
from tinynet.nn import functional as F
from tinynet.ops.activation import erf_array
from tinynet.testing import gradcheck

torch = pytest.importorskip("torch")


def forward_backward(fn, x_np, lib):
    """fn(x) and d(Σ fn(x)·dy)/dx for fixed random weights dy, in one framework."""
    x = lib.tensor(x_np, requires_grad=True)
    y = fn(x)
    dy = np.random.default_rng(5).standard_normal(tuple(y.shape))
    (y * lib.tensor(dy)).sum().backward()
    return y.detach().numpy(), x.grad.numpy()


def assert_matches_torch(ours, theirs, x_np, rtol=1e-12, atol=1e-13):
    y, dx = forward_backward(ours, x_np, tinynet)
    y_ref, dx_ref = forward_backward(theirs, x_np, torch)
    assert y.shape == y_ref.shape and y.dtype == y_ref.dtype
    np.testing.assert_allclose(y, y_ref, rtol=rtol, atol=atol)
    np.testing.assert_allclose(dx, dx_ref, rtol=rtol, atol=atol)


def inputs(shape=(4, 5), scale=3.0, seed=0):
    return np.random.default_rng(seed).standard_normal(shape) * scale


# ------------------------------------------------------------------------ erf
def test_erf_is_within_two_ulp_of_math_erf_everywhere():
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.uniform(-7, 7, 20000), np.linspace(-6.5, 6.5, 4001),
                        rng.standard_normal(2000) * 1e-3, 10.0 ** rng.uniform(-310, 1, 2000),
                        np.arange(-200, 201) / 32])          # exactly on the nodes, too
    expected = np.array([math.erf(v) for v in x])
    ulps = np.abs(erf_array(x) - expected) / np.spacing(np.abs(expected))
    assert ulps.max() <= 2


def test_erf_special_values_and_dtypes():
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 30.0, -1e-300])
    out = erf_array(x)
    np.testing.assert_array_equal(out[:4], [0.0, -0.0, 1.0, -1.0])
    assert np.signbit(out[1]) and np.isnan(out[4]) and out[5] == 1.0
    assert out[6] == pytest.approx(-1e-300 * 2 / math.sqrt(math.pi), rel=1e-15)
    x32 = np.linspace(-3, 3, 101, dtype=np.float32)
    out32 = erf_array(x32)
    assert out32.dtype == np.float32
    np.testing.assert_allclose(out32, torch.erf(torch.tensor(x32)).numpy(), rtol=2e-7, atol=1e-7)


def test_erf_op_matches_torch_and_gradchecks():
    x_np = inputs(scale=1.5)
    assert_matches_torch(tinynet.ops.erf, torch.erf, x_np)
    assert gradcheck(tinynet.ops.erf, tinynet.tensor(x_np, requires_grad=True))


# ---------------------------------------------------------------- GELU, SiLU
@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_matches_torch_and_gradchecks(approximate):
    x_np = np.concatenate([inputs((30,)), [-12.0, -6.0, 0.0, 6.0, 12.0]])
    assert_matches_torch(nn.GELU(approximate), torch.nn.GELU(approximate), x_np)
    assert_matches_torch(lambda x: F.gelu(x, approximate=approximate),
                         lambda x: torch.nn.functional.gelu(x, approximate=approximate), x_np)
    assert gradcheck(lambda x: F.gelu(x, approximate), tinynet.tensor(inputs(), requires_grad=True))


def test_gelu_float32_stays_float32_and_close_to_torch():
    x_np = inputs().astype(np.float32)
    y = F.gelu(tinynet.tensor(x_np))
    assert y.dtype == np.float32
    np.testing.assert_allclose(y.numpy(), torch.nn.functional.gelu(torch.tensor(x_np)).numpy(),
                               rtol=1e-6, atol=1e-6)


def test_gelu_rejects_an_unknown_approximation():
    with pytest.raises(ValueError, match="GELU: approximate must be 'none' or 'tanh'"):
        nn.GELU("exact")
    with pytest.raises(ValueError, match="gelu: approximate must be 'none' or 'tanh'"):
        F.gelu(tinynet.randn(3), approximate="fast")
    assert repr(nn.GELU("tanh")) == repr(torch.nn.GELU("tanh")) == "GELU(approximate='tanh')"


def test_silu_matches_torch_and_gradchecks():
    x_np = np.concatenate([inputs((30,)), [-40.0, 0.0, 40.0]])
    assert_matches_torch(nn.SiLU(), torch.nn.SiLU(), x_np)
    assert_matches_torch(F.silu, torch.nn.functional.silu, x_np)
    assert gradcheck(F.silu, tinynet.tensor(inputs(), requires_grad=True))


@pytest.mark.parametrize("name", ["ReLU", "Tanh", "Sigmoid", "Identity", "Flatten"])
def test_the_basic_layers_match_torch(name):
    x_np = inputs((3, 2, 4))
    assert_matches_torch(getattr(nn, name)(), getattr(torch.nn, name)(), x_np)


# ------------------------------------------------------- Softmax, LogSoftmax
@pytest.mark.parametrize("name", ["Softmax", "LogSoftmax"])
@pytest.mark.parametrize("dim", [0, 1, -1, 2])
def test_softmax_layers_match_torch_and_gradcheck(name, dim):
    x_np = inputs((3, 4, 5))
    assert_matches_torch(getattr(nn, name)(dim), getattr(torch.nn, name)(dim), x_np)
    assert gradcheck(getattr(nn, name)(dim), tinynet.tensor(inputs((2, 3, 2)),
                                                            requires_grad=True))
    assert repr(getattr(nn, name)(dim)) == repr(getattr(torch.nn, name)(dim))


@pytest.mark.parametrize("name", ["Softmax", "LogSoftmax"])
@pytest.mark.parametrize("shape", [(), (5,), (3, 4), (2, 3, 4), (2, 3, 4, 2)])
def test_softmax_without_dim_follows_torchs_implicit_choice_with_a_warning(name, shape):
    x_np = np.asarray(inputs(shape))
    with pytest.warns(UserWarning, match="implicit dimension choice"):
        ours = getattr(nn, name)()(tinynet.tensor(x_np)).numpy()
    with pytest.warns(UserWarning):
        ref = getattr(torch.nn, name)()(torch.tensor(x_np)).numpy()
    np.testing.assert_allclose(ours, ref, rtol=1e-12, atol=1e-13)


def test_softmax_dim_errors():
    with pytest.raises(IndexError, match="dimension 2 is out of range"):
        nn.Softmax(2)(tinynet.randn(3, 4))
    with pytest.raises(TypeError, match="Softmax: dim must be an integer or None"):
        nn.Softmax(1.0)


# ------------------------------------------------------------------ Embedding
def embedding_pair(num, dim, padding_idx=None, seed=0):
    ours = nn.Embedding(num, dim, padding_idx, dtype=tinynet.float64)
    ours.weight.array[...] = np.random.default_rng(seed).standard_normal((num, dim))
    if ours.padding_idx is not None:
        ours.weight.array[ours.padding_idx] = 0
    ref = torch.nn.Embedding(num, dim, padding_idx, dtype=torch.float64)
    with torch.no_grad():
        ref.weight.copy_(torch.tensor(ours.weight.numpy()))
    return ours, ref


@pytest.mark.parametrize("padding_idx", [None, 0, 2, -1, -6])
@pytest.mark.parametrize("dtype", [np.int64, np.int32])
def test_embedding_matches_torch_including_the_padding_row(padding_idx, dtype):
    ours, ref = embedding_pair(6, 3, padding_idx)
    index = np.array([[0, 2, 5, 2], [1, 2, 0, 5], [5, 5, 3, 4]], dtype=dtype)
    dy = np.random.default_rng(1).standard_normal(index.shape + (3,))
    y = ours(tinynet.tensor(index))
    y_ref = ref(torch.tensor(index))
    (y * tinynet.tensor(dy)).sum().backward()
    (y_ref * torch.tensor(dy)).sum().backward()
    assert y.shape == (3, 4, 3) and ours.padding_idx == ref.padding_idx
    np.testing.assert_array_equal(y.numpy(), y_ref.detach().numpy())
    np.testing.assert_allclose(ours.weight.grad.numpy(), ref.weight.grad.numpy(), rtol=1e-14)
    if padding_idx is not None:
        assert not ours.weight.grad.numpy()[ours.padding_idx].any()
    assert repr(ours) == repr(ref)


def test_embedding_gradcheck_and_index_shapes():
    weight = tinynet.tensor(inputs((5, 2)), requires_grad=True)
    index = np.array([[4, 0], [4, 4], [2, 1]])
    assert gradcheck(lambda w: F.embedding(index, w), weight)
    assert F.embedding(np.array(3), weight).shape == (2,)
    assert F.embedding(np.zeros((0, 4), np.int64), weight).shape == (0, 4, 2)
    np.testing.assert_array_equal(F.embedding(np.array([3]), weight).numpy(),
                                  weight.numpy()[[3]])


def test_embedding_init_is_standard_normal_with_a_zero_padding_row():
    layer = nn.Embedding(2000, 50, padding_idx=3)
    w = layer.weight.numpy()
    assert layer.weight.dtype == np.float32 and w.shape == (2000, 50)
    assert not w[3].any() and w[4].all()
    assert abs(w.mean()) < 0.01 and abs(w.std() - 1) < 0.01


def test_embedding_from_pretrained_shares_and_freezes():
    table = tinynet.tensor(inputs((4, 3)))
    layer = nn.Embedding.from_pretrained(table, padding_idx=1)
    assert layer.weight.array is table.array and not layer.weight.requires_grad
    assert layer.weight.numpy()[1].any()     # the given padding row is kept, as torch
    assert nn.Embedding.from_pretrained(table, freeze=False).weight.requires_grad


@pytest.mark.parametrize("call, error, message", [
    (lambda e: e(tinynet.tensor(np.array([0, 6]))), IndexError,
     r"embedding: index 6 is out of range for 6 embeddings \(expected 0 <= index < 6\)"),
    (lambda e: e(tinynet.tensor(np.array([-1, 2]))), IndexError, "index -1 is out of range"),
    (lambda e: e(tinynet.tensor([0.0, 1.0])), TypeError, "integer indices, got dtype float32"),
    (lambda e: e(np.array([True, False])), TypeError, "integer indices, got dtype bool"),
    (lambda e: nn.Embedding(6, 3, padding_idx=6), ValueError,
     r"padding_idx must be within num_embeddings, i.e. in \[-6, 5\], got 6"),
    (lambda e: nn.Embedding(6, 3, padding_idx=-7), ValueError, "padding_idx must be at least -6"),
    (lambda e: nn.Embedding(6, 3, padding_idx=1.0), TypeError, "padding_idx must be an integer"),
    (lambda e: nn.Embedding(-1, 3), ValueError, "num_embeddings must be at least 0"),
    (lambda e: F.embedding(np.array([0]), tinynet.randn(3)), ValueError, "weight must be a 2-D"),
])
def test_embedding_errors(call, error, message):
    with pytest.raises(error, match=message):
        call(nn.Embedding(6, 3))


# -------------------------------------------------------------------- one_hot
@pytest.mark.parametrize("num_classes", [-1, 7])
@pytest.mark.parametrize("shape", [(5,), (2, 3), ()])
def test_one_hot_matches_torch(num_classes, shape):
    index = np.random.default_rng(0).integers(0, 5, shape)
    ours = F.one_hot(tinynet.tensor(index), num_classes)
    ref = torch.nn.functional.one_hot(torch.tensor(index), num_classes)
    assert ours.dtype == np.int64 and ours.shape == tuple(ref.shape)
    np.testing.assert_array_equal(ours.numpy(), ref.numpy())


def test_one_hot_of_an_empty_tensor_with_num_classes():
    assert F.one_hot(tinynet.tensor(np.zeros(0, np.int64)), 3).shape == (0, 3)


@pytest.mark.parametrize("index, num_classes, error, message", [
    (np.array([0, -1]), -1, ValueError, "class values must be non-negative, got -1"),
    (np.array([0, 3]), 3, ValueError, "smaller than num_classes=3, got 3"),
    (np.zeros(0, np.int64), -1, ValueError, "cannot infer num_classes from an empty tensor"),
    (np.array([0.0, 1.0]), -1, TypeError, "integer indices, got dtype float64"),
    (np.array([0, 1]), -2, ValueError, "num_classes must be at least -1"),
    (np.array([0, 1]), 2.0, TypeError, "num_classes must be an integer"),
])
def test_one_hot_errors(index, num_classes, error, message):
    with pytest.raises(error, match=message):
        F.one_hot(tinynet.tensor(index), num_classes)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sigmoid_keeps_relative_precision_far_into_the_negative_tail(dtype):
    """σ(x) = 1/(1 + e^-x) as torch: σ(-20) = 2.06e-9 is not rounded away, and
    where e^-x overflows (x < -88.7 in float32) the result is 0 with no warning."""
    x_np = np.array([-80.0, -40.0, -20.0, -5.0, -1e-3, 0.0, 1e-3, 5.0, 20.0, 80.0], dtype)
    with np.errstate(all="raise"):
        ours = tinynet.tensor(x_np).sigmoid().numpy()
        assert tinynet.tensor(np.array([-1000.0], dtype)).sigmoid().item() == 0.0
    np.testing.assert_allclose(ours, torch.sigmoid(torch.tensor(x_np)).numpy(),
                               rtol=4 * np.finfo(dtype).eps, atol=0)
