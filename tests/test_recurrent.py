"""LSTM variants: long unrolls, the zero-state pitfall, per-step BN statistics."""
import numpy as np
import pytest

import tinynet
from tinynet import nn


def _grad_norm(module):
    return np.sqrt(sum(float((p.grad.numpy().astype(np.float64) ** 2).sum())
                       for p in module.parameters() if p.grad is not None))


def _loss_after_leading_zeros(lstm, zero_steps=10, steps=20):
    x = tinynet.randn(steps, 4, 3)
    x.data[:zero_steps] = 0
    out, _ = lstm(x)
    loss = (out[-1] * out[-1]).sum()
    loss.backward()
    return _grad_norm(lstm)


def test_ln_lstm_with_leading_zero_inputs_has_ordinary_gradients():
    lstm = nn.LSTM(3, 16, norm="layer")
    zero_led = _loss_after_leading_zeros(lstm)
    lstm.zero_grad()
    ordinary = _loss_after_leading_zeros(lstm, zero_steps=0)
    assert np.isfinite(zero_led) and zero_led < 100 * ordinary


def test_the_zero_state_pitfall_is_real_with_zero_biases():
    """With zero biases the state stays exactly zero through the blank steps, every LN
    sees a constant row, and each step multiplies the gradient by about 1/sqrt(eps)."""
    lstm = nn.LSTM(3, 16, norm="layer", dtype=tinynet.float64)
    for name, p in lstm.named_parameters():
        if name.startswith("bias"):
            p.data[...] = 0
    with np.errstate(over="ignore", invalid="ignore"):
        zero_led = _loss_after_leading_zeros(lstm)
    assert not np.isfinite(zero_led) or zero_led > 1e10


@pytest.mark.parametrize("norm", [None, "layer"])
def test_784_step_unroll_backprops(norm):
    lstm = nn.LSTM(1, 8, norm=norm)
    x = tinynet.rand(784, 2, 1)
    out, (h, c) = lstm(x)
    h.sum().backward()
    assert out.shape == (784, 2, 8)
    assert all(np.all(np.isfinite(p.grad.numpy())) for p in lstm.parameters())


def test_stepwise_batch_norm_keeps_statistics_per_step_and_reuses_the_last():
    norm = nn.StepwiseBatchNorm(3, max_steps=2, affine=False, momentum=1.0)
    rng = np.random.default_rng(0)
    batches = [rng.standard_normal((8, 3)) + 5 * t for t in range(3)]
    for t, b in enumerate(batches):
        norm(tinynet.tensor(b.astype(np.float32)), step=t)
    # step 0 has its own statistics; steps 1 and 2 share row 1 (the last one wins)
    np.testing.assert_allclose(norm.running_mean.numpy()[0], batches[0].mean(0), rtol=1e-5)
    np.testing.assert_allclose(norm.running_mean.numpy()[1], batches[2].mean(0), rtol=1e-5)
    norm.eval()
    x = rng.standard_normal((4, 3)).astype(np.float32)
    late = norm(tinynet.tensor(x), step=50).numpy()
    expected = (x - batches[2].mean(0)) / np.sqrt(batches[2].var(0, ddof=1) + 1e-5)
    np.testing.assert_allclose(late, expected, rtol=1e-4, atol=1e-5)


def test_bn_lstm_statistics_differ_per_step_and_train_runs():
    lstm = nn.LSTM(2, 4, norm="batch", max_steps=5)
    scales = tinynet.arange(1, 6, dtype=tinynet.float32).reshape(5, 1, 1)
    out, _ = lstm(tinynet.randn(5, 6, 2) * scales)
    out.sum().backward()
    running = lstm.norms_l0.ih.running_var.numpy()
    assert not np.allclose(running[0], running[4])
    assert all(p.grad is not None for p in lstm.parameters())
    lstm.eval()
    out_eval, _ = lstm(tinynet.randn(9, 1, 2))        # longer than max_steps, batch of 1
    assert out_eval.shape == (9, 1, 4)


def test_lstm_parameter_names_follow_pytorch():
    names = [n for n, _ in nn.LSTM(2, 3, num_layers=2).named_parameters()]
    assert names == ["weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0",
                     "weight_ih_l1", "weight_hh_l1", "bias_ih_l1", "bias_hh_l1"]
    cell = dict(nn.LSTMCell(2, 3).named_parameters())
    assert cell["weight_ih"].shape == (12, 2) and cell["weight_hh"].shape == (12, 3)
    bound = 1 / np.sqrt(3)
    assert all(np.abs(p.numpy()).max() <= bound for p in cell.values())


def test_unknown_norm_is_refused():
    with pytest.raises(ValueError, match="norm must be one of"):
        nn.LSTM(2, 3, norm="group")


@pytest.mark.parametrize("norm", [None, "layer", "batch"])
def test_fused_lstm_step_matches_the_composite_one(norm):
    from tinynet.nn.recurrent import lstm_cell

    from composite import composite_lstm_cell
    cell = nn.LSTMCell(3, 5, norm=norm, max_steps=3, dtype=tinynet.float64)
    rng = np.random.default_rng(0)
    x, h0, c0 = (rng.standard_normal(s) for s in ((4, 3), (4, 5), (4, 5)))
    results = []
    for fused in (True, False):
        cell.zero_grad()
        inputs = [tinynet.tensor(a, requires_grad=True) for a in (x, h0, c0)]
        if fused:
            h, c = lstm_cell(*inputs, cell.weight_ih, cell.weight_hh,
                             cell.bias_ih + cell.bias_hh, cell.norms, 1)
        else:
            h, c = composite_lstm_cell(*inputs, cell.weight_ih, cell.weight_hh, cell.bias_ih,
                                       cell.bias_hh, cell.norms, 1)
        (h * h + c).sum().backward()
        results.append([h.numpy(), c.numpy()] + [t.grad.numpy() for t in inputs]
                       + [p.grad.numpy() for p in cell.parameters()])
    for fused, composite in zip(*results, strict=True):
        np.testing.assert_allclose(fused, composite, rtol=1e-10, atol=1e-12)


def test_fused_lstm_ops_gradcheck():
    from tinynet.ops.recurrent import LSTMCellUpdate, LSTMOutput
    from tinynet.testing import gradcheck
    rng = np.random.default_rng(1)
    gates = tinynet.tensor(rng.standard_normal((3, 8)), requires_grad=True)
    c = tinynet.tensor(rng.standard_normal((3, 2)), requires_grad=True)
    assert gradcheck(LSTMCellUpdate.apply, [gates, c])
    assert gradcheck(LSTMOutput.apply, [gates, c])


def _stepwise_layer(lstm, x, state):
    """An LSTM layer's steps one node at a time (recurrent_step), as the BN-LSTM runs:
    the form the one-node layers (ops.lstm_layer.LSTMLayer, ops.recurrent.LSTMSequence)
    must reproduce."""
    from tinynet.nn.recurrent import input_gates, recurrent_step
    time_axis = 1 if lstm.batch_first else 0
    h, c = state
    norms = lstm.norms_l0
    steps = input_gates(x, lstm.weight_ih_l0, lstm.bias_ih_l0 + lstm.bias_hh_l0,
                        norms).unbind(time_axis)
    outputs = []
    for t, x_gates in enumerate(steps):
        h, c = recurrent_step(x_gates, h, c, lstm.weight_hh_l0, norms, t)
        outputs.append(h)
    return tinynet.stack(outputs, dim=time_axis), h, c


@pytest.mark.parametrize("norm, batch_first, affine",
                         [(None, False, True), (None, True, True), ("layer", False, True),
                          ("layer", True, True), ("layer", False, False)])
def test_one_node_layer_matches_the_stepwise_one(norm, batch_first, affine):
    rng = np.random.default_rng(7)
    T, B, D, H = 6, 3, 4, 5
    lstm = nn.LSTM(D, H, norm=norm, batch_first=batch_first, dtype=tinynet.float64)
    if norm and not affine:
        for which, size in (("ih", 4 * H), ("hh", 4 * H), ("cell", H)):
            setattr(lstm.norms_l0, which,
                    nn.LayerNorm(size, elementwise_affine=False, dtype=tinynet.float64))
    x_np = rng.standard_normal((B, T, D) if batch_first else (T, B, D))
    state_np = rng.standard_normal((2, B, H))
    w_out, w_c = rng.standard_normal((T, B, H)), rng.standard_normal((B, H))
    if batch_first:
        w_out = w_out.transpose(1, 0, 2)
    results = []
    for one_node in (True, False):
        lstm.zero_grad()
        x = tinynet.tensor(x_np, requires_grad=True)
        h0, c0 = (tinynet.tensor(s, requires_grad=True) for s in state_np)
        if one_node:
            out, (h, c) = lstm(x, (h0[None], c0[None]))
            h, c = h[0], c[0]
        else:
            out, h, c = _stepwise_layer(lstm, x, (h0, c0))
        ((out * tinynet.tensor(w_out)).sum() + (h * h).sum()
         + (c * tinynet.tensor(w_c)).sum()).backward()
        results.append([out.numpy(), h.numpy(), c.numpy(), x.grad.numpy(), h0.grad.numpy(),
                        c0.grad.numpy()] + [p.grad.numpy() for p in lstm.parameters()])
    assert len(results[0]) == 6 + len(list(lstm.parameters()))
    for one_node, stepwise in zip(*results, strict=True):
        np.testing.assert_allclose(one_node, stepwise, rtol=1e-10, atol=1e-12)


def test_one_node_ln_layer_gradcheck():
    from tinynet.nn.recurrent import lstm_sequence
    from tinynet.testing import gradcheck
    rng = np.random.default_rng(8)
    T, B, H = 4, 2, 3
    norms = nn.GateNorms("layer", H, 1e-5, T, dtype=tinynet.float64)
    for p in norms.parameters():
        p.data[...] = rng.standard_normal(p.shape)
    weight = tinynet.tensor(rng.standard_normal((4 * H, H)), requires_grad=True)
    inputs = [tinynet.tensor(rng.standard_normal(s), requires_grad=True)
              for s in ((T, B, 4 * H), (B, H), (B, H))]

    def layer(x_gates, h0, c0, weight, *norm_params):
        outputs, c = lstm_sequence(x_gates, h0, c0, weight, norms)
        return outputs * 1.5 + c.sum()     # both outputs reach the loss

    assert gradcheck(layer, inputs + [weight] + list(norms.parameters()))


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("use_outputs", [True, False])
def test_one_node_plain_layer_gradcheck(bias, use_outputs):
    from tinynet.nn.recurrent import lstm_layer
    from tinynet.testing import gradcheck
    rng = np.random.default_rng(9)
    T, B, D, H = 4, 2, 3, 5
    shapes = [(T, B, D), (B, H), (B, H), (4 * H, D), (4 * H, H)] + [(4 * H,)] * 2 * bias
    inputs = [tinynet.tensor(rng.standard_normal(s), requires_grad=True) for s in shapes]

    def layer(*args):
        outputs, c = lstm_layer(*args)
        return outputs * 1.5 + c.sum() if use_outputs else c * 2   # c_T alone, or both

    assert gradcheck(layer, inputs)


def test_one_node_layer_runs_in_float32_and_mixed_dtypes():
    lstm = nn.LSTM(3, 4, norm="layer")
    x = tinynet.randn(5, 2, 3)
    out, (h, c) = lstm(x)
    assert out.dtype == tinynet.float32 and c.dtype == tinynet.float32
    out.sum().backward()
    assert lstm.weight_hh_l0.grad.dtype == tinynet.float32
    wide, _ = lstm(x.double())         # a float64 input promotes, as every op does
    assert wide.dtype == tinynet.float64
    np.testing.assert_allclose(wide.numpy(), out.numpy(), rtol=1e-4, atol=1e-5)


def test_an_empty_sequence_is_refused():
    with pytest.raises(ValueError, match="sequence of length 0"):
        nn.LSTM(3, 4, norm="layer")(tinynet.zeros(0, 2, 3))
