"""Bad input to layers raises a ValueError that names the shapes or values."""
import numpy as np
import pytest

import tinynet
from tinynet import nn
from tinynet.nn import functional as F


@pytest.mark.parametrize("call, message", [
    (lambda: nn.LayerNorm(5)(tinynet.randn(3, 4)), r"normalized_shape \(5,\).*\(3, 4\)"),
    (lambda: nn.LayerNorm((2, 4))(tinynet.randn(3, 4)), r"normalized_shape \(2, 4\)"),
    (lambda: F.layer_norm(tinynet.randn(3, 4), 4, tinynet.ones(3)), r"weight of shape \(3,\)"),
    (lambda: nn.BatchNorm1d(5)(tinynet.randn(3, 4)), r"BatchNorm1d\(5\).*\(3, 4\)"),
    (lambda: nn.BatchNorm1d(4)(tinynet.randn(1, 4)), r"more than 1 value per channel.*\(1, 4\)"),
    (lambda: nn.BatchNorm1d(4)(tinynet.randn(2, 4, 3, 3)), r"2-D or 3-D"),
    (lambda: nn.Linear(3, 2)(tinynet.randn(4, 5)), r"Linear\(3, 2\).*\(4, 5\)"),
    (lambda: nn.LSTM(3, 4)(tinynet.randn(5, 2, 6)), r"input size 3.*\(5, 2, 6\)"),
    (lambda: nn.LSTM(3, 4)(tinynet.randn(5, 2, 3),
                           (tinynet.zeros(1, 3, 4), tinynet.zeros(1, 3, 4))),
     r"h_0 has shape \(1, 3, 4\), expected \(1, 2, 4\)"),
    (lambda: nn.LSTMCell(3, 4)(tinynet.randn(2, 5)), r"\(batch, 3\).*\(2, 5\)"),
    (lambda: nn.LSTMCell(3, 4)(tinynet.randn(2, 3), (tinynet.zeros(2, 4), tinynet.zeros(3, 4))),
     r"state c has shape \(3, 4\), expected \(2, 4\)"),
    (lambda: F.cross_entropy(tinynet.randn(3, 4), np.array([0, 4, 1])),
     r"target value 4.*4 classes"),
    (lambda: F.cross_entropy(tinynet.randn(3, 4), np.array([0, -1, 1])), r"target value -1"),
    (lambda: F.cross_entropy(tinynet.randn(3, 4), np.array([0, 1])), r"\(3, 4\).*\(2,\)"),
    (lambda: F.cross_entropy(tinynet.randn(3, 4), tinynet.tensor([0., 1, 2])), r"integer class"),
    (lambda: F.cross_entropy(tinynet.randn(3, 4), np.array([0, 1, 2]), reduction="avg"),
     r"reduction"),
    (lambda: F.mse_loss(tinynet.randn(3), tinynet.randn(4)), r"\(3,\).*\(4,\)"),
])
def test_clear_value_errors(call, message):
    with pytest.raises(ValueError, match=message):
        call()
