"""The CPU's LSTM step kernels (kernels/ops/lstm_cpu.py) against their spec
(lstm_spec.py): the same bits, float32 and float64, on the layers' own layouts (a
step's slice of the (T, B, 4H) arrays, or of the plain layer's column arrays) and
on others, the plain step's float32 forward within a few ulp, and other inputs
handed to the spec."""
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



def _column_step(rng, dtype, batch=B, hidden=H, steps=T):
    """A plain step's arrays, each sample a column: z (4H, B), c_{t−1} (H, B), and the
    layer's state array (H, T + 1, B) that h_t is written into."""
    z = (3 * rng.standard_normal((4 * hidden, batch))).astype(dtype)
    c_prev = rng.standard_normal((hidden, batch)).astype(dtype)
    return z, c_prev, np.full((hidden, steps + 1, batch), np.nan, dtype)


def _run_columns(kernel, z, c_prev, states, t=2):
    acts = np.full(z.shape, np.nan, z.dtype)
    c, squashed = np.full_like(c_prev, np.nan), np.full_like(c_prev, np.nan)
    states = states.copy()
    kernel(z, c_prev, acts, c, squashed, states, t)
    return acts, c, squashed, states


def test_the_plain_step_in_float64_is_the_specs_bit_for_bit():
    args = _column_step(np.random.default_rng(3), np.float64)
    for ours, theirs in zip(_run_columns(lstm_cpu.lstm_columns_forward, *args),
                            _run_columns(lstm_spec.lstm_columns_forward, *args), strict=True):
        assert np.array_equal(ours, theirs, equal_nan=True)


@pytest.mark.parametrize("hidden", [H, 128])
def test_the_plain_step_in_float32_is_within_a_few_ulp_of_the_spec(hidden):
    z, c_prev, states = _column_step(np.random.default_rng(4), np.float32, 64, hidden)
    z[:4, 0] = [-200, 200, np.inf, -np.inf]                  # σ and tanh at their limits
    z[2 * hidden:2 * hidden + 2, 0] = [100, -np.inf]
    ours = _run_columns(lstm_cpu.lstm_columns_forward, z, c_prev, states)
    with np.errstate(over="ignore"):                          # e^200: σ = 0, as the layer's
        exact = _run_columns(lstm_spec.lstm_columns_forward, z.astype(np.float64),
                             c_prev.astype(np.float64), states.astype(np.float64))
    for got, want in zip(ours, exact, strict=True):           # acts, c, tanh c, states
        np.testing.assert_allclose(got, want, rtol=3e-7, atol=3e-7)
    acts, c, squashed, states = ours
    assert not np.isnan(acts).any() and not np.isnan(c).any()
    assert np.isnan(np.delete(states, 2, axis=1)).all()       # h_t in column block t only
    i, f, g, o = np.split(acts, 4)
    np.testing.assert_allclose(c, f * c_prev + i * g, rtol=2e-7, atol=1e-7)
    np.testing.assert_allclose(states[:, 2], o * squashed, rtol=2e-7, atol=1e-7)
    assert acts[:4, 0].tolist() == [0, 1, 1, 0]
    assert acts[2 * hidden:2 * hidden + 2, 0].tolist() == [1, -1]       # g = tanh z_g


def test_the_plain_step_hands_other_arrays_to_the_spec(monkeypatch):
    z, c_prev, states = _column_step(np.random.default_rng(5), np.float32)
    calls = []
    monkeypatch.setattr(lstm_spec, "lstm_columns_forward", lambda *args: calls.append(args))
    _run_columns(lstm_cpu.lstm_columns_forward, z, c_prev.astype(np.float64), states)
    _run_columns(lstm_cpu.lstm_columns_forward, z, np.asfortranarray(c_prev), states)
    assert len(calls) == 2


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("layout", ["a step of batch-first outputs", "C"])
def test_the_plain_step_backward_is_the_specs_bit_for_bit(dtype, layout):
    rng = np.random.default_rng(6)
    acts = rng.random((4 * H, B)).astype(dtype)
    grad_h, grad_c, squashed, c_prev = (rng.standard_normal((H, B)).astype(dtype)
                                        for _ in range(4))
    grad_out = rng.standard_normal((B, T, H)).astype(dtype)[:, 1]       # strided rows
    if layout == "C":
        grad_out = np.ascontiguousarray(grad_out)
    d_ours, d_theirs = np.full((2, 4 * H, T, B), np.nan, dtype)
    ours = lstm_cpu.lstm_columns_backward(d_ours, 1, grad_h, grad_out, grad_c, acts,
                                          squashed, c_prev)
    theirs = lstm_spec.lstm_columns_backward(d_theirs, 1, grad_h, grad_out, grad_c, acts,
                                             squashed, c_prev)
    assert np.array_equal(ours, theirs)
    assert np.array_equal(d_ours, d_theirs, equal_nan=True)
    assert not np.isnan(d_ours[:, 1]).any() and np.isnan(np.delete(d_ours, 1, axis=1)).all()
    # the formulas of the LN-LSTM's two kernels, on the transposed step
    d_rows = np.empty((B, 4 * H), dtype)
    cell = lstm_spec.lstm_output_backward(d_rows, grad_h.T + grad_out, acts.T, squashed.T)
    c_rows = lstm_spec.lstm_cell_backward(d_rows, grad_c.T + cell, acts.T, c_prev.T)
    assert np.array_equal(c_rows, ours.T) and np.array_equal(d_rows, d_ours[:, 1].T)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_plain_steps_shared_loops_give_the_serial_ones_bits(dtype):
    rng = np.random.default_rng(7)
    hidden, batch = 32, 48
    assert 4 * hidden * batch >= lstm_cpu.SHARED_MIN_VALUES
    acts = rng.random((4 * hidden, batch)).astype(dtype)
    grad_h, grad_c, squashed, c_prev = (rng.standard_normal((hidden, batch)).astype(dtype)
                                        for _ in range(4))
    grad_out = rng.standard_normal((batch, T, hidden)).astype(dtype)[:, 1]
    results = []
    for loop in (lstm_cpu._columns_backward_loop, lstm_cpu._columns_backward_shared):
        d_gates, grad_c_prev = np.zeros((4 * hidden, T, batch), dtype), np.empty_like(c_prev)
        loop(d_gates, 1, grad_h, grad_out, grad_c, acts, squashed, c_prev, grad_c_prev)
        results.append((d_gates, grad_c_prev))
    if dtype == np.float32:
        z, c_prev, states = _column_step(rng, dtype, batch, hidden)
        for loop in (lstm_cpu._columns_forward_loop32, lstm_cpu._columns_forward_shared32):
            results.append(_run_columns(loop, z, c_prev, states))
    for ours, theirs in zip(results[0::2], results[1::2], strict=True):
        for a, b in zip(ours, theirs, strict=True):
            assert np.array_equal(a, b, equal_nan=True)
