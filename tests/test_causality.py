"""Causality of every sequence model, checked by tinynet.testing.check_causal: the
output at position t may depend on the inputs at positions 0..t only. The
deliberately wrong norms (LayerNorm over the sequence in a GPT, normalization
over time after an LSTM) must fail the same check."""
import numpy as np
import pytest

import tinynet
from tinynet import nn
from tinynet.models import GPT, GPTConfig
from tinynet.models.gpt import TimeAxisLayerNorm
from tinynet.testing import CausalityReport, assert_causal, check_causal

from composite import normalize_over_time

VOCAB, STEPS = 13, 8


def small_config(**options):
    return GPTConfig(**{**dict(block_size=STEPS, vocab_size=VOCAB, n_layer=2, n_head=2,
                               n_embd=8), **options})


def tokens(batch=2, steps=STEPS, seed=0):
    return tinynet.tensor(np.random.default_rng(seed).integers(0, VOCAB, (batch, steps)))


def floats(*shape, seed=0):
    return tinynet.tensor(np.random.default_rng(seed).standard_normal(shape))


def every_position(gpt):
    """The GPT's logits at every position (it returns them when given targets)."""
    return lambda idx: gpt(idx, targets=idx)[0]


# ---------------------------------------------------------------------------- GPT

@pytest.mark.parametrize("placement", ["pre", "post"])
@pytest.mark.parametrize("norm", ["layer", "rms", "none"])
def test_gpt_is_causal_with_every_norm_and_placement(norm, placement):
    tinynet.manual_seed(0)
    model = GPT(small_config(norm=norm, placement=placement)).eval()
    report = check_causal(every_position(model), tokens(), vocab_size=VOCAB)
    assert report == CausalityReport(True, None, 0.0, None)
    assert report


@pytest.mark.parametrize("options", [dict(), dict(placement="post"), dict(bias=False)], ids=str)
def test_gpt_with_layer_norm_over_time_sees_the_future(options):
    tinynet.manual_seed(0)
    model = GPT(small_config(norm_axis="time", **options)).eval()
    report = check_causal(every_position(model), tokens(), vocab_size=VOCAB)
    assert not report and report.causal is False
    # changing tokens 1.. moves the sequence's statistics, so position 0 already moves
    assert (report.changed_at, report.first_position) == (0, 0)
    assert report.max_change > 1e-4
    with pytest.raises(AssertionError, match=r"position 0 changed by [0-9.e-]+ .*after "
                                             r"position 0"):
        assert_causal(every_position(model), tokens(), vocab_size=VOCAB)


def test_time_axis_layer_norm_is_layer_norm_over_the_whole_sequence():
    norm = TimeAxisLayerNorm(4)
    norm.weight.data[:] = [1.0, 2.0, 3.0, 4.0]
    norm.bias.data[:] = [0.5, 0.0, -0.5, 1.0]
    x = floats(2, 5, 4).float()
    a = x.numpy()
    mean, var = a.mean(axis=(1, 2), keepdims=True), a.var(axis=(1, 2), keepdims=True)
    expected = (a - mean) / np.sqrt(var + 1e-5) * norm.weight.numpy() + norm.bias.numpy()
    np.testing.assert_allclose(norm(x).numpy(), expected, rtol=1e-5, atol=1e-5)


def test_time_axis_norm_keeps_layer_norms_parameter_names():
    right, wrong = GPT(small_config()), GPT(small_config(norm_axis="time"))
    assert list(right.state_dict()) == list(wrong.state_dict())
    wrong.load_state_dict(right.state_dict())
    assert isinstance(wrong.transformer["h"][0].ln_1, TimeAxisLayerNorm)
    assert isinstance(right.transformer["h"][0].ln_1, nn.LayerNorm)


@pytest.mark.parametrize("bad", [dict(norm_axis="time", norm="rms"),
                                 dict(norm_axis="time", norm="none"),
                                 dict(norm_axis="batch")], ids=str)
def test_bad_norm_axis_is_named(bad):
    with pytest.raises(ValueError, match="GPTConfig: norm_axis"):
        small_config(**bad)


def test_gpt_with_dropout_is_causal_in_eval_mode_and_the_mode_is_left_alone():
    tinynet.manual_seed(0)
    model = GPT(small_config(dropout=0.3)).eval()
    assert check_causal(every_position(model), tokens(), vocab_size=VOCAB)
    assert not model.training
    # in training every call draws new masks: every position changes, and the
    # checker reports it rather than switching the model to eval behind the caller
    model.train()
    report = check_causal(every_position(model), tokens(), vocab_size=VOCAB)
    assert not report and report.first_position == 0
    assert model.training


# --------------------------------------------------------- LSTMs and the encoder

@pytest.mark.parametrize("norm", [None, "layer"], ids=["plain", "layer"])
def test_lstm_is_causal(norm):
    tinynet.manual_seed(0)
    lstm = nn.LSTM(3, 8, num_layers=2, batch_first=True, norm=norm)
    assert_causal(lstm, floats(2, 10, 3))          # output, (h_n, c_n): output counts


def test_bn_lstm_is_causal_in_eval_mode_and_mixes_samples_not_positions_in_training():
    tinynet.manual_seed(0)
    lstm = nn.LSTM(3, 8, batch_first=True, norm="batch", max_steps=10)
    x = floats(4, 10, 3)
    for seed in range(3):                            # running statistics away from 0 and 1
        lstm(floats(4, 10, 3, seed=seed + 1) * 2 + 1)
    lstm.eval()
    assert_causal(lstm, x)
    # training: statistics per time step over the batch, so still causal in time,
    # but each call updates the running statistics
    lstm.train()
    before = lstm.norms_l0.ih.running_mean.numpy().copy()
    assert_causal(lstm, x)
    assert lstm.training
    assert not np.array_equal(before, lstm.norms_l0.ih.running_mean.numpy())


def test_lstm_normalized_over_time_sees_the_future():
    tinynet.manual_seed(0)
    lstm = nn.LSTM(3, 8)                                            # time-major (T, B, I)

    def model(x):                                                   # (B, T, I) -> (B, T, H)
        return normalize_over_time(lstm(x.transpose(0, 1))[0]).transpose(0, 1)

    report = check_causal(model, floats(2, 10, 3))
    assert not report
    assert (report.changed_at, report.first_position) == (0, 0)
    assert report.max_change > 1e-4
    assert check_causal(lambda x: lstm(x.transpose(0, 1))[0].transpose(0, 1), floats(2, 10, 3))


def test_transformer_encoder_is_causal_with_the_causal_mask_only():
    tinynet.manual_seed(0)
    layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, batch_first=True)
    encoder = nn.TransformerEncoder(layer, 2).eval()
    x = floats(2, 6, 8)
    mask = tinynet.tril(tinynet.ones(6, 6)) == 0                    # True: may not attend
    assert check_causal(lambda src: encoder(src, mask=mask, is_causal=True), x)
    report = check_causal(encoder, x)
    assert not report and report.first_position == 0


# ----------------------------------------------------------- the report's fields

class Recorder:
    """A hand-made model: ``rule`` maps the input array (B, T, F) to the outputs;
    every input it is called with is kept."""

    def __init__(self, rule):
        self.rule, self.seen = rule, []

    def __call__(self, x):
        self.seen.append(x.numpy().copy())
        return tinynet.tensor(self.rule(x.numpy()))


def shifted(a):
    """Output t is input t + 1 (the last output is 0): position 0 already leaks."""
    out = np.zeros_like(a)
    out[:, :-1] = a[:, 1:]
    return out


def test_report_of_an_output_that_reads_the_next_input():
    x = floats(2, 6, 3)
    fn = Recorder(shifted)
    report = check_causal(fn, x)
    # the first check changes inputs 1..5; output 0 reads input 1, so it changes
    assert len(fn.seen) == 2                      # the original input, then t = 0: it stops
    original, changed = fn.seen
    np.testing.assert_array_equal(original, x.numpy())
    np.testing.assert_array_equal(changed[:, :1], original[:, :1])
    assert (changed[:, 1:] != original[:, 1:]).all()
    assert report.causal is False and not report
    assert (report.changed_at, report.first_position) == (0, 0)
    assert report.max_change == np.abs(changed[:, 1] - original[:, 1]).max()


def test_report_of_a_late_leak_and_of_given_positions():
    def reads_the_last_input_from_position_3(a):
        out = a.copy()
        out[:, 3:] += a[:, -1:]
        return out

    fn = Recorder(reads_the_last_input_from_position_3)
    report = check_causal(fn, floats(2, 7, 3))
    assert len(fn.seen) == 1 + 4                  # t = 0, 1, 2 pass, t = 3 leaks
    assert (report.changed_at, report.first_position) == (3, 3)
    original, changed = fn.seen[0], fn.seen[-1]
    assert report.max_change == np.abs(changed[:, -1] - original[:, -1]).max()

    def reads_the_last_input(a):
        return a + a[:, -1:]

    fn = Recorder(reads_the_last_input)
    report = check_causal(fn, floats(2, 7, 3), positions=[4, 2])
    # checked in order: t = 2 first, and every output 0..2 moved with input 6
    assert (report.changed_at, report.first_position) == (2, 0)
    assert report == check_causal(reads_the_last_input, floats(2, 7, 3), positions=[2])


def test_a_causal_model_reports_the_largest_change_below_atol():
    def leaks_a_little(a):
        return a + 1e-9 * a[:, -1:]

    x = floats(2, 5, 3)
    assert not check_causal(lambda t: tinynet.tensor(leaks_a_little(t.numpy())), x)
    report = check_causal(lambda t: tinynet.tensor(leaks_a_little(t.numpy())), x, atol=1e-6)
    assert report.causal and report.first_position is None and report.changed_at is None
    assert 0 < report.max_change <= 1e-6
    cumulative = check_causal(lambda t: tinynet.tensor(t.numpy().cumsum(axis=1)), x)
    assert cumulative == CausalityReport(True, None, 0.0, None)


def test_token_inputs_get_different_ids_from_the_vocabulary_after_t_only():
    fn = Recorder(lambda a: np.eye(5)[a])                           # one-hot, causal
    idx = np.random.default_rng(1).integers(0, 5, (3, 6))
    assert check_causal(fn, idx, vocab_size=5, seed=2)
    original, *changed = fn.seen
    assert len(changed) == 5                                        # t = 0..4; 5 has no future
    for t, c in enumerate(changed):
        assert c.dtype == original.dtype
        np.testing.assert_array_equal(c[:, :t + 1], original[:, :t + 1])
        assert (c[:, t + 1:] != original[:, t + 1:]).all()
        assert c.min() >= 0 and c.max() < 5
    again = Recorder(fn.rule)
    check_causal(again, idx, vocab_size=5, seed=2)
    np.testing.assert_array_equal(np.stack(again.seen), np.stack(fn.seen))    # seeded


def test_nan_outputs_compare_as_values():
    x = floats(2, 5, 3)
    with np.errstate(invalid="ignore"):                                 # the same NaNs
        assert check_causal(lambda t: tinynet.tensor(np.log(t.numpy())), x)

    def nan_at_0_once_the_future_changes(a):
        out = a.copy()
        if not np.array_equal(a, x.numpy()):
            out[:, 0] = np.nan
        return out

    report = check_causal(lambda t: tinynet.tensor(nan_at_0_once_the_future_changes(
        t.numpy())), x)
    assert not report and report.first_position == 0 and report.max_change == np.inf


def test_the_check_runs_without_recording_a_graph():
    enabled = []
    check_causal(lambda t: enabled.append(tinynet.is_grad_enabled()) or t, floats(1, 3, 2))
    assert enabled and not any(enabled)


# ------------------------------------------------------------------------- errors

@pytest.mark.parametrize("idx, message", [
    (np.zeros(6, dtype=np.int64), r"\(B, T\).*got shape \(6,\)"),
    (np.zeros((2, 1), dtype=np.int64), r"T ≥ 2.*got shape \(2, 1\)"),
    (np.zeros((0, 4, 3)), r"B ≥ 1"),
], ids=["1-D", "one position", "empty batch"])
def test_bad_idx_shape_is_a_clear_error(idx, message):
    with pytest.raises(ValueError, match=message):
        check_causal(lambda t: t, idx, vocab_size=VOCAB)


def test_a_gpt_returning_only_the_last_position_is_a_clear_error():
    model = GPT(small_config())
    with pytest.raises(ValueError, match=r"got shape \(2, 1, 13\).*targets=idx"):
        check_causal(model, tokens(), vocab_size=VOCAB)


@pytest.mark.parametrize("options, error, message", [
    (dict(positions=[8]), ValueError, r"positions must be integers in \[0, 8\)"),
    (dict(positions=[1.5]), ValueError, "positions"),
    (dict(atol=-1.0), ValueError, "atol"),
    (dict(vocab_size=1), ValueError, "vocab_size"),
    (dict(vocab_size=5), ValueError, r"ids in \[0, 12\]"),
], ids=["position past the end", "float position", "negative atol", "vocab of one",
        "ids outside the vocabulary"])
def test_bad_options_are_clear_errors(options, error, message):
    idx = tokens().numpy()
    idx[0, 0] = VOCAB - 1
    with pytest.raises(error, match=message):
        check_causal(lambda t: t, idx, **options)


def test_other_bad_arguments_are_clear_errors():
    with pytest.raises(TypeError, match="callable"):
        check_causal("model", tokens())
    with pytest.raises(TypeError, match="dtype bool"):
        check_causal(lambda t: t, np.zeros((2, 4), dtype=bool))
    with pytest.raises(ValueError, match="vocab_size"):                  # ids all 0
        check_causal(lambda t: t, np.zeros((2, 4), dtype=np.int64))
