"""Hyper-parameters of the wrong kind are refused where they come in, by name."""
import math

import numpy as np
import pytest

import tinynet
from tinynet import nn, optim
from tinynet.hyperparameters import check_real
from tinynet.nn import functional as F


def test_check_real_takes_every_kind_of_real_number_in_range():
    for value in (0, 1, 0.5, np.float32(0.25), np.int64(1), math.inf):
        assert check_real("f", "a", value, low=0) == float(value)
    assert isinstance(check_real("f", "a", np.float32(0.25)), float)
    assert check_real("f", "a", 0.0, 0, 1, high_included=False) == 0.0


@pytest.mark.parametrize("value, kwargs, error, message", [
    ("0.1", {}, TypeError, r"f: a must be a real number, got str '0.1'"),
    (None, {}, TypeError, r"got NoneType None"),
    (True, {}, TypeError, r"got bool True"),
    (np.ones(1), {}, TypeError, r"got ndarray"),
    (1 + 2j, {}, TypeError, r"got complex"),
    (math.nan, {}, ValueError, r"f: a is NaN"),
    (-1, dict(low=0), ValueError, r"a must be >= 0, got -1"),
    (1.5, dict(low=0, high=1), ValueError, r"a must be in \[0, 1\], got 1.5"),
    (1, dict(low=0, high=1, high_included=False), ValueError, r"a must be in \[0, 1\), got 1"),
])
def test_check_real_names_what_is_wrong(value, kwargs, error, message):
    with pytest.raises(error, match=message):
        check_real("f", "a", value, **kwargs)


def parameters():
    return [nn.Parameter(tinynet.ones(2))]


@pytest.mark.parametrize("call, error, message", [
    (lambda: nn.LayerNorm(4, eps="1e-5")(tinynet.randn(2, 4)), TypeError,
     "layer_norm: eps must be a real number, got str"),
    (lambda: F.layer_norm(tinynet.randn(2, 4), 4, eps=-1e-5), ValueError,
     "layer_norm: eps must be >= 0"),
    (lambda: nn.BatchNorm1d(4, eps="x")(tinynet.randn(2, 4)), TypeError,
     "batch_norm: eps must be a real number"),
    (lambda: nn.BatchNorm1d(4, momentum=None)(tinynet.randn(2, 4)), TypeError,
     "batch_norm: momentum must be a real number, got NoneType"),
    (lambda: nn.BatchNorm1d(4, momentum=1.5)(tinynet.randn(2, 4)), ValueError,
     r"batch_norm: momentum must be in \[0, 1\]"),
    (lambda: nn.LSTM(3, 4, norm="layer", eps=math.nan)(tinynet.randn(5, 2, 3)), ValueError,
     "layer_norm: eps is NaN"),
    (lambda: nn.Dropout("0.5"), TypeError, "Dropout: p must be a real number"),
    (lambda: nn.Dropout(1.5), ValueError, r"Dropout: p must be in \[0, 1\], got 1.5"),
    (lambda: F.dropout(tinynet.randn(3), math.nan), ValueError, "dropout: p is NaN"),
    (lambda: optim.Adam(parameters(), lr=math.nan), ValueError, "Adam: lr is NaN"),
    (lambda: optim.Adam(parameters(), lr="0.1"), TypeError, "Adam: lr must be a real number"),
    (lambda: optim.Adam(parameters(), eps=-1e-8), ValueError, "Adam: eps must be >= 0"),
    (lambda: optim.Adam(parameters(), betas=(0.9, 1.0)), ValueError,
     r"Adam: betas\[1\] must be in \[0, 1\), got 1.0"),
    (lambda: optim.Adam(parameters(), betas=0.9), TypeError, "Adam: betas must be a pair"),
    (lambda: optim.SGD(parameters(), lr=None), TypeError, "SGD: lr must be a real number"),
    (lambda: optim.SGD(parameters(), lr=0.1, weight_decay=-1), ValueError,
     "SGD: weight_decay must be >= 0"),
    (lambda: optim.SGD(parameters(), lr=0.1, nesterov=True), ValueError,
     "SGD: nesterov momentum needs momentum > 0"),
    (lambda: optim.SGD([{"params": parameters(), "lr": "1"}], lr=0.1), TypeError,
     "SGD: lr must be a real number, got str"),
])
def test_bad_hyperparameters_are_named(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_the_same_layers_and_optimizers_take_good_hyperparameters():
    """The other side of the test above: it fails where a check refuses too much."""
    x = tinynet.randn(2, 4)
    nn.LayerNorm(4, eps=np.float32(1e-5))(x)
    nn.BatchNorm1d(4, eps=0, momentum=1)(x)
    nn.LSTM(3, 4, norm="layer", eps=1e-3)(tinynet.randn(5, 2, 3))
    nn.Dropout(1)(x)
    F.dropout(x, np.float64(0.5))
    optim.Adam(parameters(), lr=np.float32(0.01), betas=[0.0, 0.5], eps=0)
    optim.SGD([{"params": parameters(), "lr": 1}], lr=0.1, momentum=0.9, nesterov=True)


def test_a_state_dict_with_a_bad_hyperparameter_changes_nothing():
    opt = optim.Adam(parameters() + parameters(), lr=0.01)
    saved = opt.state_dict()
    saved["param_groups"][0]["lr"] = -0.5
    with pytest.raises(ValueError, match="Adam: lr must be >= 0, got -0.5"):
        opt.load_state_dict(saved)
    assert opt.param_groups[0]["lr"] == 0.01
    saved["param_groups"][0]["lr"] = 0.5
    opt.load_state_dict(saved)
    assert opt.param_groups[0]["lr"] == 0.5
