"""Channel-wise dropout (Dropout1d/2d/3d): one draw per channel, PyTorch's shape rules."""
import warnings

import numpy as np
import pytest

import tinynet
from tinynet.nn.dropout import Dropout1d, Dropout2d, Dropout3d, dropout1d, dropout2d, dropout3d


@pytest.fixture
def torch():
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)        # a draw of 8 channels keeps or drops them all 1 time in 128
    return torch


def _varies(out):
    """For each axis, whether the output changes along it somewhere."""
    out = np.asarray(out)
    return tuple(bool(np.ptp(out, axis=k).max() > 0) if out.shape[k] > 1 else False
                 for k in range(out.ndim))


# (function, input shape, axes the mask varies along, warns)
CASES = [
    (dropout1d, (4, 8, 5), (True, True, False), False),
    (dropout1d, (8, 5), (True, False), False),                         # unbatched (C, L)
    (dropout2d, (4, 8, 3, 5), (True, True, False, False), False),
    (dropout2d, (4, 8, 5), (True, True, False), True),                 # read as (N, C, L)
    (dropout2d, (4, 8), (True, True), True),
    (dropout2d, (4, 8, 3, 2, 2), (True, True, False, False, False), True),
    (dropout3d, (4, 8, 2, 3, 2), (True, True, False, False, False), False),
    (dropout3d, (8, 2, 3, 2), (True, False, False, False), False),      # unbatched
    (dropout3d, (8, 3, 2), (True, False, False), True),                # read as unbatched
]


@pytest.mark.parametrize("function, shape, varies, warns", CASES)
def test_one_draw_per_channel_and_pytorchs_warnings(function, shape, varies, warns):
    x = tinynet.ones(shape, dtype=tinynet.float64)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        y = function(x, 0.5).numpy()
    assert bool(caught) == warns, [str(w.message) for w in caught]
    assert set(np.unique(y)) == {0.0, 2.0}
    assert _varies(y) == varies


@pytest.mark.parametrize("function, shape, varies, warns", CASES)
def test_same_channels_and_warnings_as_torch(torch, function, shape, varies, warns):
    theirs = getattr(torch.nn.functional, function.__name__)
    results = []
    for lib, f in ((tinynet, function), (torch, theirs)):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            y = f(lib.ones(shape, dtype=lib.float64), 0.5)
        results.append((_varies(y.numpy()), [type(w.message) for w in caught]))
    assert results[0] == results[1]


@pytest.mark.parametrize("module, shape", [(Dropout1d, (8, 30, 5)), (Dropout2d, (8, 30, 2, 2)),
                                           (Dropout3d, (8, 30, 2, 1, 2))])
def test_expected_value_kept_and_gradient_is_the_mask(module, shape):
    p = 0.3
    layer = module(p)
    x = tinynet.tensor(np.random.default_rng(0).uniform(1, 2, shape), requires_grad=True)
    y = layer(x)
    mask = y.numpy() / x.numpy()
    assert set(np.round(np.unique(mask), 12)) == {0.0, round(1 / (1 - p), 12)}
    assert abs((mask == 0).mean() - p) < 0.1
    w = np.random.default_rng(1).standard_normal(shape)
    (y * tinynet.tensor(w)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), w * mask, rtol=1e-12)


@pytest.mark.parametrize("module, shape", [(Dropout1d, (2, 3, 4)), (Dropout2d, (2, 3, 4, 4)),
                                           (Dropout3d, (3, 2, 2, 2))])
def test_identity_in_eval_mode_and_at_p_0(module, shape):
    x = tinynet.randn(*shape)
    np.testing.assert_array_equal(module(0.9).eval()(x).numpy(), x.numpy())
    np.testing.assert_array_equal(module(0.0)(x).numpy(), x.numpy())


def test_p_1_zeroes_everything():
    x = tinynet.randn(2, 3, 4, 4)
    assert not dropout2d(x, 1.0).numpy().any()


def test_inplace_writes_into_the_input_under_tinynets_inplace_rules():
    x = tinynet.ones(4, 8, 5)
    y = dropout1d(x, 0.5, inplace=True)
    assert y is x and set(np.unique(x.numpy())) == {0.0, 2.0}
    leaf = tinynet.ones(4, 8, 5, requires_grad=True)
    with pytest.raises(RuntimeError, match="in-place"):
        Dropout1d(inplace=True)(leaf)


def test_reprs_match_torch(torch):
    for ours, theirs in ((Dropout1d(), torch.nn.Dropout1d()),
                         (Dropout3d(0.2, inplace=True), torch.nn.Dropout3d(0.2, inplace=True))):
        assert ours.extra_repr() == theirs.extra_repr()


BAD_CALLS = [
    (lambda: dropout1d(tinynet.randn(2, 3, 4, 5)), ValueError, r"2-D or 3-D.*\(2, 3, 4, 5\)"),
    (lambda: dropout1d(tinynet.randn(4)), ValueError, r"2-D or 3-D.*\(4,\)"),
    (lambda: Dropout2d(1.5), ValueError, "p must be in"),
    (lambda: dropout3d(tinynet.randn(2, 3, 4, 5), p=-0.1), ValueError, "p must be in"),
    (lambda: Dropout3d("0.5"), TypeError, "p must be a real number"),
    (lambda: dropout2d(np.ones((2, 3, 4, 4))), TypeError, "expected a Tensor"),
    (lambda: dropout2d(tinynet.zeros(2, 3, 4, 4, dtype=tinynet.int64)), TypeError,
     "floating point"),
]


@pytest.mark.parametrize("call, error, message", BAD_CALLS)
def test_bad_arguments_are_named(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_a_1d_input_to_dropout2d_warns_then_is_refused():
    with pytest.warns(UserWarning, match="deprecated"):
        with pytest.raises(ValueError, match="channel dimension"):
            dropout2d(tinynet.randn(5))
