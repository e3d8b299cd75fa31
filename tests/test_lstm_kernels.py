"""The CPU's LSTM step kernels (kernels/ops/lstm_cpu.py) against their spec
(lstm_spec.py): the same bits, float32 and float64, on the layer's own layout (a
step's slice of the (T, B, 4H) arrays) and on others, and CuPy-like inputs handed
to the spec."""
import numpy as np
import pytest

from tinynet.kernels.ops import lstm_cpu, lstm_spec

B, H, T = 5, 7, 3


def _step(rng, dtype):
    acts = rng.random((T, B, 4 * H)).astype(dtype)       # in (0, 1), as σ and tanh are
    exp_neg = np.exp(-rng.standard_normal((B, 4 * H))).astype(dtype)
    c_prev, grad_h, grad_c, squashed = (rng.standard_normal((B, H)).astype(dtype)
                                        for _ in range(4))
    return acts, exp_neg, c_prev, grad_h, grad_c, squashed


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_forward_is_the_specs_bit_for_bit(dtype):
    acts, exp_neg, c_prev, *_ = _step(np.random.default_rng(0), dtype)
    ours, theirs = acts[1].copy(), acts[1].copy()
    c_ours, c_theirs = np.empty_like(c_prev), np.empty_like(c_prev)
    lstm_cpu.lstm_cell_forward(ours, exp_neg, c_prev, c_ours)
    lstm_spec.lstm_cell_forward(theirs, exp_neg, c_prev, c_theirs)
    assert np.array_equal(ours, theirs) and np.array_equal(c_ours, c_theirs)
    assert np.array_equal(ours[:, 2 * H:3 * H], acts[1, :, 2 * H:3 * H])   # g untouched


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("layout", ["a step of the layer", "transposed", "strided"])
def test_the_backward_is_the_specs_bit_for_bit(dtype, layout):
    acts, _, c_prev, grad_h, grad_c, squashed = _step(np.random.default_rng(1), dtype)
    acts_t = acts[2]
    if layout == "transposed":
        acts_t, c_prev = np.asfortranarray(acts_t), np.asfortranarray(c_prev)
    elif layout == "strided":
        acts_t = np.repeat(acts_t, 2, axis=1)[:, ::2]
    d_ours = np.full((B, 4 * H), np.nan, dtype)
    d_theirs = d_ours.copy()
    cell_ours = lstm_cpu.lstm_output_backward(d_ours, grad_h, acts_t, squashed)
    cell_theirs = lstm_spec.lstm_output_backward(d_theirs, grad_h, acts_t, squashed)
    assert np.array_equal(cell_ours, cell_theirs)
    c_ours = lstm_cpu.lstm_cell_backward(d_ours, grad_c + cell_ours, acts_t, c_prev)
    c_theirs = lstm_spec.lstm_cell_backward(d_theirs, grad_c + cell_theirs, acts_t, c_prev)
    assert np.array_equal(c_ours, c_theirs)
    assert np.array_equal(d_ours, d_theirs)                  # every gate written, no NaN left
    assert not np.isnan(d_ours).any()


def test_mixed_dtypes_run_the_spec(monkeypatch):
    acts, _, c_prev, grad_h, _, squashed = _step(np.random.default_rng(2), np.float32)
    calls = []
    monkeypatch.setattr(lstm_spec, "lstm_output_backward",
                        lambda *args: calls.append(args) or "spec")
    d_gates = np.zeros((B, 4 * H), np.float64)
    assert lstm_cpu.lstm_output_backward(d_gates, grad_h, acts[0], squashed) == "spec"
    assert len(calls) == 1


def _plain_step(rng, dtype, batch=B, hidden=H):
    x_gates = rng.standard_normal((batch, 3, 4 * hidden)).astype(dtype)[:, 1]   # strided rows
    recurrent = (3 * rng.standard_normal((batch, 4 * hidden))).astype(dtype)
    c_prev = rng.standard_normal((batch, hidden)).astype(dtype)
    return x_gates, recurrent, c_prev


def _run_step(kernel, x_gates, recurrent, c_prev):
    batch, hidden = c_prev.shape
    recurrent = recurrent.copy()
    acts = np.full((batch, 4 * hidden), np.nan, recurrent.dtype)
    c, squashed, h = (np.full_like(c_prev, np.nan) for _ in range(3))
    kernel(x_gates, recurrent, c_prev, acts, c, squashed, h)
    return recurrent, acts, c, squashed, h


def test_the_plain_step_in_float64_is_the_specs_bit_for_bit():
    args = _plain_step(np.random.default_rng(3), np.float64)
    for ours, theirs in zip(_run_step(lstm_cpu.lstm_step_forward, *args),
                            _run_step(lstm_spec.lstm_step_forward, *args), strict=True):
        assert np.array_equal(ours, theirs)


@pytest.mark.parametrize("hidden", [H, 128])
@pytest.mark.parametrize("layout", ["a step of batch-first gates", "C", "F"])
def test_the_plain_step_in_float32_is_within_a_few_ulp_of_the_spec(hidden, layout):
    x_gates, recurrent, c_prev = _plain_step(np.random.default_rng(4), np.float32, 64, hidden)
    if layout != "a step of batch-first gates":
        x_gates = np.asarray(x_gates, order=layout)
    recurrent[0, :4] = [-200, 200, np.inf, -np.inf]          # σ and tanh at their limits
    recurrent[0, 2 * hidden:2 * hidden + 2] = [100, -np.inf]
    ours = _run_step(lstm_cpu.lstm_step_forward, x_gates, recurrent, c_prev)
    with np.errstate(over="ignore"):                          # e^200: σ = 0, as the layer's
        theirs = _run_step(lstm_spec.lstm_step_forward, x_gates, recurrent, c_prev)
        exact = _run_step(lstm_spec.lstm_step_forward, x_gates.astype(np.float64),
                          recurrent.astype(np.float64), c_prev.astype(np.float64))
    assert np.array_equal(ours[0], recurrent) and np.array_equal(theirs[0], recurrent)
    for got, want in zip(ours[1:], exact[1:], strict=True):   # acts, c, tanh c, h
        assert not np.isnan(got).any()
        np.testing.assert_allclose(got, want, rtol=3e-7, atol=3e-7)
    i, f, g, o = np.split(ours[1], 4, axis=1)
    np.testing.assert_allclose(ours[2], f * c_prev + i * g, rtol=2e-7, atol=1e-7)   # c_t
    assert ours[1][0, :4].tolist() == [0, 1, 1, 0]
    assert ours[1][0, 2 * hidden:2 * hidden + 2].tolist() == [1, -1]       # g = tanh z_g


def test_the_plain_step_hands_other_arrays_to_the_spec(monkeypatch):
    x_gates, recurrent, c_prev = _plain_step(np.random.default_rng(5), np.float32)
    calls = []
    monkeypatch.setattr(lstm_spec, "lstm_step_forward", lambda *args: calls.append(args))
    _run_step(lstm_cpu.lstm_step_forward, x_gates, recurrent, c_prev.astype(np.float64))
    _run_step(lstm_cpu.lstm_step_forward, x_gates, recurrent, np.asfortranarray(c_prev))
    assert len(calls) == 2


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("layout", ["a step of batch-first outputs", "C"])
def test_the_plain_step_backward_is_the_specs_bit_for_bit(dtype, layout):
    rng = np.random.default_rng(6)
    acts, _, c_prev, grad_h, grad_c, squashed = _step(rng, dtype)
    grad_out = rng.standard_normal((B, T, H)).astype(dtype)[:, 1]       # strided rows
    if layout == "C":
        grad_out = np.ascontiguousarray(grad_out)
    d_ours, d_theirs = np.full((2, B, 4 * H), np.nan, dtype)
    ours = lstm_cpu.lstm_step_backward(d_ours, grad_h, grad_out, grad_c, acts[1], squashed,
                                       c_prev)
    theirs = lstm_spec.lstm_step_backward(d_theirs, grad_h, grad_out, grad_c, acts[1],
                                          squashed, c_prev)
    assert np.array_equal(ours, theirs) and np.array_equal(d_ours, d_theirs)
    assert not np.isnan(d_ours).any()
    # the spec is the LN-LSTM's two kernels with nothing between them
    d_parts = np.empty_like(d_ours)
    cell = lstm_spec.lstm_output_backward(d_parts, grad_h + grad_out, acts[1], squashed)
    assert np.array_equal(lstm_spec.lstm_cell_backward(d_parts, grad_c + cell, acts[1], c_prev),
                          ours)
    assert np.array_equal(d_parts, d_ours)
