"""The Layer Normalization paper's claims, each as a test (Ba, Kiros & Hinton, 2016)."""
import numpy as np
import pytest

import tinynet
from tinynet import nn
from tinynet.nn import functional as F

from composite import normalize_over_time

KERNEL_PATHS = pytest.mark.parametrize("reference", [False, True], ids=["default", "reference"])


def ln(a, eps=1e-12):
    return F.layer_norm(tinynet.tensor(a), a.shape[-1], eps=eps).numpy()


def bn(a, eps=1e-12):
    return F.batch_norm(tinynet.tensor(a), None, None, training=True, eps=eps).numpy()


# ---------------------------------------------------------------- batch independence

@KERNEL_PATHS
def test_layer_norm_output_of_a_sample_ignores_the_rest_of_the_batch(reference):
    rng = np.random.default_rng(0)
    batch = rng.standard_normal((8, 300)).astype(np.float32)
    other = batch.copy()
    other[1:] = rng.standard_normal((7, 300)) * 5 + 3
    with tinynet.use_reference_kernels(reference):
        y1 = F.layer_norm(tinynet.tensor(batch), 300).numpy()[0]
        y2 = F.layer_norm(tinynet.tensor(other), 300).numpy()[0]
        alone = F.layer_norm(tinynet.tensor(batch[:1]), 300).numpy()[0]
    assert np.array_equal(y1, y2) and np.array_equal(y1, alone)     # bit-identical


def test_batch_norm_output_of_a_sample_depends_on_the_batch():
    rng = np.random.default_rng(0)
    batch = rng.standard_normal((8, 30))
    other = batch.copy()
    other[1:] = rng.standard_normal((7, 30)) * 5 + 3
    assert np.abs(bn(batch)[0] - bn(other)[0]).max() > 0.1


# -------------------------------------------------------------- Table 1 invariances

def _summed_inputs(x, w):
    return x @ w.T


RNG = np.random.default_rng(1)
X = RNG.standard_normal((6, 5))          # a batch of 6 cases, 5 inputs
W = RNG.standard_normal((4, 5))          # 4 hidden units


def _transforms():
    """(name, transformed x, transformed W) for each column of Table 1."""
    delta = RNG.uniform(0.5, 3.0, size=(4, 1))
    gamma = RNG.standard_normal(5)
    single = np.ones((6, 1))
    single[2] = 7.0
    return {
        "weight matrix re-scaling": (X, 3.5 * W),
        "weight matrix re-centering": (X, W + gamma),            # every row of W shifted by γ
        "weight vector re-scaling": (X, delta * W),              # each unit's weights scaled
        "dataset re-scaling": (4.0 * X, W),
        "dataset re-centering": (X + gamma, W),                  # every case shifted by γ
        "single case re-scaling": (single * X, W),               # one case scaled
    }


TABLE_1 = {  # the paper's Table 1: invariant (True) or not (False)
    "batch": {"weight matrix re-scaling": True, "weight matrix re-centering": False,
              "weight vector re-scaling": True, "dataset re-scaling": True,
              "dataset re-centering": True, "single case re-scaling": False},
    "layer": {"weight matrix re-scaling": True, "weight matrix re-centering": True,
              "weight vector re-scaling": False, "dataset re-scaling": True,
              "dataset re-centering": False, "single case re-scaling": True},
}


@pytest.mark.parametrize("norm", ["batch", "layer"])
@pytest.mark.parametrize("transform", sorted(TABLE_1["layer"]))
def test_table_1_invariances(norm, transform):
    normalize = ln if norm == "layer" else bn
    x2, w2 = _transforms()[transform]
    before = normalize(_summed_inputs(X, W))
    after = normalize(_summed_inputs(x2, w2))
    change = np.abs(after - before).max()
    if TABLE_1[norm][transform]:
        assert change < 1e-9, f"{norm} norm should be invariant to {transform}"
    else:
        assert change > 1e-2, f"{norm} norm should change under {transform}"


# ------------------------------------------------------------- small worked examples

def test_worked_example_two_units():
    def norm(values):
        return F.layer_norm(tinynet.tensor([values], dtype=tinynet.float64), 2).numpy()[0]
    np.testing.assert_allclose(norm([1.0, 3.0]), [-1.0, 1.0], atol=1e-5)
    np.testing.assert_allclose(norm([11.0, 13.0]), [-1.0, 1.0], atol=1e-5)   # same shift: same
    np.testing.assert_allclose(norm([11.0, 3.0]), [1.0, -1.0], atol=1e-5)    # both change


@pytest.mark.parametrize("value", [-1e3, 0.0, 0.5, 42.0])
def test_single_unit_layer_norm_outputs_the_bias(value):
    layer = nn.LayerNorm(1)
    layer.bias.data[...] = 0.25
    layer.weight.data[...] = 3.0
    np.testing.assert_allclose(layer(tinynet.tensor([[value], [1.0]])).numpy(), 0.25)


def test_layer_norm_is_the_same_in_training_and_inference():
    layer = nn.LayerNorm(10)
    x = tinynet.randn(4, 10)
    train_out = layer.train()(x).numpy()
    assert np.array_equal(train_out, layer.eval()(x).numpy())


def test_batch_norm_differs_between_training_and_inference():
    layer = nn.BatchNorm1d(10)
    x = tinynet.randn(4, 10) * 3 + 1
    train_out = layer.train()(x).numpy()
    assert np.abs(train_out - layer.eval()(x).numpy()).max() > 0.1


# ------------------------------------------------------------------------ causality

def test_ln_lstm_output_at_step_t_ignores_later_inputs():
    lstm = nn.LSTM(3, 8, norm="layer")
    x = tinynet.randn(10, 2, 3)
    changed = x.numpy().copy()
    changed[6:] = np.random.default_rng(0).standard_normal(changed[6:].shape) * 10
    out1, _ = lstm(x)
    out2, _ = lstm(tinynet.tensor(changed))
    assert np.array_equal(out1.numpy()[:6], out2.numpy()[:6])
    assert np.abs(out1.numpy()[6:] - out2.numpy()[6:]).max() > 1e-3


def test_normalizing_over_time_leaks_the_future():
    x = tinynet.randn(10, 2, 8)
    changed = x.numpy().copy()
    changed[6:] += 5.0
    early = normalize_over_time(x).numpy()[:6]
    early_changed = normalize_over_time(tinynet.tensor(changed)).numpy()[:6]
    assert np.abs(early - early_changed).max() > 0.1


# -------------------------------------------------------------- gradient identities

@KERNEL_PATHS
def test_gradient_identities_per_row(reference):
    """Exact for ε = 0; with ε, Σ dx·x̂ is scaled by ε/(σ² + ε), hence the tiny ε."""
    rng = np.random.default_rng(2)
    x = tinynet.tensor(rng.standard_normal((5, 64)) * 2 + 1, requires_grad=True)
    dy = tinynet.tensor(rng.standard_normal((5, 64)))
    with tinynet.use_reference_kernels(reference):
        (F.layer_norm(x, 64, eps=1e-14) * dy).sum().backward()
    x_np = x.numpy()
    x_hat = (x_np - x_np.mean(1, keepdims=True)) / x_np.std(1, keepdims=True)
    dx = x.grad.numpy()
    scale = np.abs(dx).sum(1)
    assert np.all(np.abs(dx.sum(1)) < 1e-12 * scale)
    assert np.all(np.abs((dx * x_hat).sum(1)) < 1e-12 * scale)


# ------------------------------------------------------------------------- numerics

@KERNEL_PATHS
def test_offset_rows_in_float32_match_float64(reference):
    rng = np.random.default_rng(3)
    x32 = (1e4 + 0.01 * rng.standard_normal((16, 256))).astype(np.float32)
    dy = rng.standard_normal((16, 256)).astype(np.float32)
    x64 = x32.astype(np.float64)
    mean = x64.mean(1, keepdims=True)
    x_hat = (x64 - mean) / np.sqrt(((x64 - mean) ** 2).mean(1, keepdims=True) + 1e-5)
    rstd = 1 / np.sqrt(((x64 - mean) ** 2).mean(1, keepdims=True) + 1e-5)
    dx64 = rstd * (dy - dy.mean(1, keepdims=True) - x_hat * (dy * x_hat).mean(1, keepdims=True))
    x = tinynet.tensor(x32, requires_grad=True)
    with tinynet.use_reference_kernels(reference):
        y = F.layer_norm(x, 256)
        (y * tinynet.tensor(dy)).sum().backward()
    assert np.abs(y.numpy() - x_hat).max() <= 1e-4 * np.abs(x_hat).max()
    assert np.abs(x.grad.numpy() - dx64).max() <= 1e-4 * np.abs(dx64).max()


@KERNEL_PATHS
def test_constant_row_gives_the_bias_and_finite_gradients(reference):
    layer = nn.LayerNorm(16)
    layer.bias.data[...] = np.linspace(-1, 1, 16)
    x = tinynet.full((3, 16), 7.5, requires_grad=True)
    with tinynet.use_reference_kernels(reference):
        y = layer(x)
        (y * tinynet.randn(3, 16)).sum().backward()
    np.testing.assert_allclose(y.numpy(), np.tile(layer.bias.numpy(), (3, 1)), atol=1e-6)
    for g in (x.grad, layer.weight.grad, layer.bias.grad):
        assert np.all(np.isfinite(g.numpy()))
