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
