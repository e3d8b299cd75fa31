"""cumsum, cumprod, cummax, cummin and logcumsumexp against PyTorch.

Values and gradients match PyTorch to 1e-10 (float64): on random inputs, on
inputs with zeros for cumprod (torch's cumprod_backward), with ties and NaN for
cummax/cummin (torch's choice of index), with ±inf for logcumsumexp; the
differentiable ones also pass a float64 gradcheck away from the kinks.
"""
import math

import numpy as np
import pytest

import tinynet
from tinynet.testing import gradcheck

torch = pytest.importorskip("torch")
INF, NAN = math.inf, math.nan
SHAPES_DIMS = [((5,), 0), ((5,), -1), ((3, 4), 0), ((3, 4), 1), ((2, 3, 4), 1), ((2, 3, 4), -1),
               ((), 0), ((3, 1), 1), ((0, 3), 1)]


def random(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def assert_matches_torch(fn, x, weights=None):
    """``fn(lib, leaf)``: same values (NaN in the same places) and the same
    gradient of a weighting of the output as PyTorch."""
    ours, ref = tinynet.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out, out_ref = fn(tinynet, ours), fn(torch, ref)
    assert tuple(out.shape) == tuple(out_ref.shape) and out.dtype == np.float64
    np.testing.assert_allclose(out.detach().numpy(), out_ref.detach().numpy(), rtol=1e-10,
                               atol=1e-12, equal_nan=True)
    if weights is None:
        weights = np.random.default_rng(1).standard_normal(tuple(out_ref.shape))
    out.backward(tinynet.tensor(weights))
    out_ref.backward(torch.tensor(weights))
    np.testing.assert_allclose(ours.grad.numpy(), ref.grad.numpy(), rtol=1e-10, atol=1e-12,
                               equal_nan=True)


# ------------------------------------------------------------ cumsum, cumprod
@pytest.mark.parametrize("name", ["cumsum", "cumprod", "logcumsumexp"])
@pytest.mark.parametrize("shape,dim", SHAPES_DIMS, ids=str)
def test_matches_torch_and_gradcheck(name, shape, dim):
    x = random(*shape)
    assert_matches_torch(lambda lib, t: getattr(lib, name)(t, dim), x)
    assert_matches_torch(lambda lib, t: getattr(t, name)(dim), x)
    if x.size:
        assert gradcheck(lambda t: getattr(tinynet, name)(t, dim),
                         tinynet.tensor(x, requires_grad=True))


CUMPROD_ZEROS = [[2.0, 0.0, 3.0, 0.0, 4.0], [0.0, 2.0, 3.0], [1.5, -2.0, 0.0], [0.0],
                 [0.0, 0.0, 0.0], [3.0, 0.0, 0.5, -1.0], [[1.0, 0.0, 2.0], [3.0, 4.0, 5.0]],
                 [[0.0, 2.0], [1.0, 0.0], [2.0, 3.0]]]


@pytest.mark.parametrize("values", CUMPROD_ZEROS, ids=str)
def test_cumprod_gradient_with_zeros_matches_torch(values):
    x = np.array(values)
    for dim in range(x.ndim):
        assert_matches_torch(lambda lib, t, dim=dim: lib.cumprod(t, dim), x)
        # The derivative is smooth in each element taken alone: check it numerically.
        assert gradcheck(lambda t, dim=dim: tinynet.cumprod(t, dim),
                         tinynet.tensor(x, requires_grad=True))


def test_cumprod_zeros_in_a_batch_beside_slices_without():
    x = random(4, 6)
    x[1, 2] = x[3, 0] = x[3, 4] = 0.0
    for dim in (0, 1):
        assert_matches_torch(lambda lib, t, dim=dim: lib.cumprod(t, dim), x)


@pytest.mark.parametrize("name", ["cumsum", "cumprod"])
@pytest.mark.parametrize("values", [[1, 2, 3], [True, True, False]], ids=str)
def test_integer_inputs_give_int64(name, values):
    ours = getattr(tinynet, name)(tinynet.tensor(values), 0)
    expected = getattr(torch, name)(torch.tensor(values), 0)
    assert ours.dtype == np.int64 and ours.tolist() == expected.tolist()
    small = getattr(tinynet, name)(tinynet.tensor(np.array(values, dtype=np.int32)), 0)
    assert small.dtype == np.int64


@pytest.mark.parametrize("name", ["cumsum", "cumprod"])
def test_dtype_argument_casts_first_and_keeps_the_graph(name):
    x = tinynet.tensor(random(4).astype(np.float32), requires_grad=True)
    out = getattr(tinynet, name)(x, 0, dtype=tinynet.float64)
    assert out.dtype == np.float64
    out.sum().backward()
    assert x.grad.dtype == np.float32 and x.grad.shape == (4,)


@pytest.mark.parametrize("name", ["cumsum", "cumprod", "logcumsumexp", "cummax", "cummin"])
def test_bad_dim(name):
    with pytest.raises(IndexError):
        getattr(tinynet, name)(tinynet.zeros(2, 3), 2)
    with pytest.raises(IndexError):
        getattr(tinynet, name)(tinynet.zeros(2, 3), -3)


# ----------------------------------------------------------- cummax, cummin
EXTREME_VALUES = [[1.0, 3.0, 3.0, NAN, 5.0, NAN, 2.0], [1.0, 0.0, 0.0, NAN, -5.0, NAN, 2.0],
                  [2.0, 2.0, 2.0], [-INF, INF, INF, 1.0], [NAN, 1.0, NAN], [4.0, -1.0, 4.0, -1.0]]


@pytest.mark.parametrize("name", ["cummax", "cummin"])
@pytest.mark.parametrize("values", EXTREME_VALUES, ids=str)
def test_cummax_cummin_ties_and_nan_match_torch(name, values):
    x = np.array(values)
    ours = getattr(tinynet, name)(tinynet.tensor(x), 0)
    ref = getattr(torch, name)(torch.tensor(x), 0)
    assert ours.indices.dtype == np.int64
    assert ours.indices.tolist() == ref.indices.tolist()
    np.testing.assert_array_equal(ours.values.numpy(), ref.values.numpy())
    assert_matches_torch(lambda lib, t: getattr(lib, name)(t, 0).values, x)


@pytest.mark.parametrize("name", ["cummax", "cummin"])
@pytest.mark.parametrize("shape,dim", SHAPES_DIMS, ids=str)
def test_cummax_cummin_match_torch_and_gradcheck(name, shape, dim):
    x = random(*shape)
    assert_matches_torch(lambda lib, t: getattr(lib, name)(t, dim).values, x)
    assert_matches_torch(lambda lib, t: getattr(t, name)(dim)[0], x)
    ours = getattr(tinynet, name)(tinynet.tensor(x), dim)
    assert ours.indices.tolist() == getattr(torch, name)(torch.tensor(x), dim).indices.tolist()
    if x.size:
        assert gradcheck(lambda t: getattr(tinynet, name)(t, dim).values,
                         tinynet.tensor(x, requires_grad=True))


def test_cummax_on_integers_with_ties_and_the_namedtuple():
    x = np.random.default_rng(0).integers(0, 3, (4, 6))
    for dim in (0, 1):
        ours, ref = tinynet.cummax(tinynet.tensor(x), dim), torch.cummax(torch.tensor(x), dim)
        assert ours.values.tolist() == ref.values.tolist()
        assert ours.indices.tolist() == ref.indices.tolist()
        low, low_ref = tinynet.cummin(tinynet.tensor(x), dim), torch.cummin(torch.tensor(x), dim)
        assert low.indices.tolist() == low_ref.indices.tolist()
    result = tinynet.cummax(tinynet.tensor([1.0, 2.0]), 0)
    assert type(result).__name__ == "cummax" and result._fields == ("values", "indices")
    assert type(tinynet.cummin(tinynet.tensor([1.0]), 0)).__name__ == "cummin"


def test_cummax_gradient_of_repeated_picks_adds_up():
    x = tinynet.tensor([3.0, 1.0, 2.0, 0.0], requires_grad=True)
    tinynet.cummax(x, 0).values.sum().backward()
    assert x.grad.tolist() == [4.0, 0.0, 0.0, 0.0]


# --------------------------------------------------------------- logcumsumexp
LOGCUMSUMEXP_EDGES = [[-INF, -INF, 0.0, -INF, 1.0], [-INF, 1.0, INF, 2.0], [INF, INF, -INF],
                      [1000.0, 1000.0, -1000.0], [-1e300, 5.0, -INF], [NAN, 1.0, 2.0],
                      [-INF], [-INF, -INF]]


@pytest.mark.parametrize("values", LOGCUMSUMEXP_EDGES, ids=str)
@pytest.mark.parametrize("weights", ["ones", "mixed"])
def test_logcumsumexp_edges_match_torch(values, weights):
    x = np.array(values)
    w = np.ones(x.shape) if weights == "ones" else np.resize([1.5, -2.0, 0.0, 3.0], x.shape)
    assert_matches_torch(lambda lib, t: lib.logcumsumexp(t, 0), x, w)


def test_logcumsumexp_is_stable_for_large_values():
    x = np.array([[800.0, 800.0, 0.0], [-800.0, -800.0, -799.0]])
    assert_matches_torch(lambda lib, t: lib.logcumsumexp(t, 1), x)
    assert np.isfinite(tinynet.logcumsumexp(tinynet.tensor(x), 1).numpy()).all()


def test_logcumsumexp_needs_floats():
    with pytest.raises(TypeError, match="floating"):
        tinynet.logcumsumexp(tinynet.tensor([1, 2]), 0)


def test_float32_keeps_its_dtype():
    x = tinynet.tensor(random(3, 4).astype(np.float32))
    for name in ["cumsum", "cumprod", "logcumsumexp"]:
        assert getattr(tinynet, name)(x, 1).dtype == np.float32
    assert tinynet.cummax(x, 1).values.dtype == np.float32
