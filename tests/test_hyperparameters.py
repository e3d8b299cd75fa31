"""Hyper-parameters and sizes of the wrong kind are refused where they come in, by name."""
import math

import numpy as np
import pytest

import tinynet
from tinynet import nn, optim
from tinynet.data import DataLoader, TensorDataset
from tinynet.hyperparameters import check_count, check_real
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


def test_check_count_takes_integers_from_low_up():
    assert check_count("f", "n", np.int64(3)) == 3 and type(check_count("f", "n", 3)) is int
    assert check_count("f", "n", 0, low=0) == 0
    for value, error, message in [(0, ValueError, "f: n must be at least 1, got 0"),
                                  (2.0, TypeError, "f: n must be an integer, got float 2.0"),
                                  (True, TypeError, "got bool"), ("2", TypeError, "got str")]:
        with pytest.raises(error, match=message):
            check_count("f", "n", value)


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
    (lambda: nn.Linear("3", 2), TypeError, "Linear: in_features must be an integer, got str"),
    (lambda: nn.Linear(3, -2), ValueError, "Linear: out_features must be at least 0, got -2"),
    (lambda: nn.LSTM(3, 0), ValueError, "LSTM: hidden_size must be at least 1, got 0"),
    (lambda: nn.LSTM(3, 4, num_layers=0), ValueError, "LSTM: num_layers must be at least 1"),
    (lambda: nn.LSTMCell(3.0, 4), TypeError, "LSTMCell: input_size must be an integer"),
    (lambda: nn.LSTM(3, 4, norm="batch", max_steps=0), ValueError,
     "StepwiseBatchNorm: max_steps must be at least 1, got 0"),
    (lambda: DataLoader(TensorDataset(tinynet.randn(4, 2)), batch_size=0), ValueError,
     "DataLoader: batch_size must be at least 1, got 0"),
    (lambda: DataLoader(TensorDataset(tinynet.randn(4, 2)), batch_size="2"), TypeError,
     "DataLoader: batch_size must be an integer, got str"),
    (lambda: nn.Sequential(nn.Linear(2, 2), F.relu), TypeError,
     "Sequential holds Modules; got function"),
    (lambda: nn.ModuleList([nn.Linear(2, 2)]).append(3), TypeError,
     "ModuleList holds Modules; got int 3"),
    (lambda: optim.clip_grad_norm_(parameters(), "1"), TypeError,
     "clip_grad_norm_: max_norm must be a real number"),
    (lambda: optim.clip_grad_norm_(parameters(), 1.0, norm_type=0), ValueError,
     "clip_grad_norm_: norm_type must be above 0"),
])
def test_bad_hyperparameters_are_named(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_the_same_layers_and_optimizers_take_good_hyperparameters():
    """The other side of the test above: it fails where a check refuses too much."""
    x = tinynet.randn(2, 4)
    nn.LayerNorm(4, eps=np.float32(1e-5))(x)
    nn.BatchNorm1d(4, eps=0, momentum=1).eval()(x)      # eps = 0 refused in training only
    nn.LSTM(3, 4, norm="layer", eps=1e-3)(tinynet.randn(5, 2, 3))
    nn.Dropout(1)(x)
    F.dropout(x, np.float64(0.5))
    optim.Adam(parameters(), lr=np.float32(0.01), betas=[0.0, 0.5], eps=0)
    optim.SGD([{"params": parameters(), "lr": 1}], lr=0.1, momentum=0.9, nesterov=True)
    nn.Linear(np.int64(4), 0)
    optim.clip_grad_norm_(parameters(), 0, norm_type=math.inf)
    nn.LSTM(3, 4, num_layers=2, norm="batch", max_steps=1)(tinynet.randn(5, 2, 3))
    assert len(DataLoader(TensorDataset(tinynet.randn(4, 2)), batch_size=np.int32(2))) == 2
    assert len(nn.ModuleList([nn.Linear(2, 2)]).append(nn.ReLU())) == 2


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
