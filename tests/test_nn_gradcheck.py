"""Float64 finite-difference checks of every layer's backward."""
import numpy as np
import pytest

import tinynet
from tinynet import nn
from tinynet.nn import functional as F
from tinynet.testing import gradcheck


def params64(module, seed=0):
    rng = np.random.default_rng(seed)
    module.to(dtype=tinynet.float64)
    for p in module.parameters():
        p.data[...] = rng.uniform(0.5, 1.5, p.shape) * rng.choice([-1, 1], p.shape)
    return list(module.parameters())


def x64(*shape, seed=1, scale=1.0, offset=0.0):
    rng = np.random.default_rng(seed)
    return tinynet.tensor(rng.standard_normal(shape) * scale + offset, requires_grad=True)


@pytest.mark.parametrize("shape, normalized", [((4, 6), 6), ((2, 3, 5), (3, 5)), ((3, 1), 1)])
def test_layer_norm(shape, normalized):
    layer = nn.LayerNorm(normalized)
    weight, bias = params64(layer)
    assert gradcheck(lambda x, w, b: F.layer_norm(x, normalized, w, b), [x64(*shape), weight, bias])


def test_layer_norm_with_offset_rows():
    assert gradcheck(lambda x: F.layer_norm(x, 8), [x64(3, 8, offset=1e3)],
                     eps=1e-4, rtol=1e-3, atol=1e-6)


@pytest.mark.parametrize("shape", [(5, 3), (4, 3, 2)])
@pytest.mark.parametrize("unbiased", [False, True])
def test_batch_norm_training(shape, unbiased):
    bn = nn.BatchNorm1d(3, unbiased_batch_var=unbiased, track_running_stats=False)
    weight, bias = params64(bn)
    assert gradcheck(lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True,
                                                  unbiased_batch_var=unbiased),
                     [x64(*shape), weight, bias])


def test_batch_norm_eval():
    mean = tinynet.tensor(np.array([0.1, -0.2, 0.3]))
    var = tinynet.tensor(np.array([1.5, 0.5, 2.0]))
    w, b = x64(3, seed=3), x64(3, seed=4)
    assert gradcheck(lambda x, w, b: F.batch_norm(x, mean, var, w, b, training=False),
                     [x64(4, 3), w, b])


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_losses(reduction):
    target = np.array([1, 0, 3, 3])
    assert gradcheck(lambda z: F.cross_entropy(z, target, reduction=reduction), [x64(4, 5)])
    assert gradcheck(lambda z: F.nll_loss(z, target, reduction=reduction), [x64(4, 5)])
    assert gradcheck(lambda a, b: F.mse_loss(a, b, reduction=reduction),
                     [x64(4, 5), x64(4, 5, seed=2)])


def test_linear():
    fc = nn.Linear(4, 3)
    w, b = params64(fc)
    assert gradcheck(lambda x, w, b: F.linear(x, w, b), [x64(2, 5, 4), w, b])


@pytest.mark.parametrize("norm", [None, "layer", "batch"])
def test_lstm_cell_over_steps(norm):
    cell = nn.LSTMCell(3, 4, norm=norm, max_steps=2)
    params = params64(cell)
    x = x64(3, 3, 3)

    def run(x, *params):
        h = c = None
        state = None
        for t in range(3):
            h, c = cell(x[t], state, step=t)
            state = (h, c)
        return h

    assert gradcheck(run, [x] + params)
