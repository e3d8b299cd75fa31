"""Elman RNNs and GRUs (cells and layers), and the LSTM's dropout, against PyTorch.

Weights are copied across through ``state_dict`` (same keys, same shapes); in
float64 the outputs, final states and every gradient agree to ~1e-10.
"""
import warnings

import numpy as np
import pytest

import tinynet
from tinynet.nn.recurrent import LSTM
from tinynet.nn.rnn import GRU, RNN, GRUCell, RNNCell
from tinynet.testing import gradcheck

T, B, D, H = 5, 3, 4, 6


@pytest.fixture
def torch():
    return pytest.importorskip("torch")


def _layer(kind, **options):
    """The same layer in tinynet (float64) and PyTorch, sharing weights."""
    import torch
    nonlinearity = {"rnn_tanh": "tanh", "rnn_relu": "relu"}.get(kind)
    ours_cls, theirs_cls = {"gru": (GRU, torch.nn.GRU), "lstm": (LSTM, torch.nn.LSTM)}.get(
        kind, (RNN, torch.nn.RNN))
    if nonlinearity:
        options["nonlinearity"] = nonlinearity
    ours = ours_cls(D, H, dtype=tinynet.float64, **options)
    theirs = theirs_cls(D, H, dtype=torch.float64, **options)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    theirs.load_state_dict({k: torch.tensor(v.numpy()) for k, v in ours.state_dict().items()})
    return ours, theirs


def _assert_close(ours, theirs, what):
    theirs = theirs.detach().numpy()
    assert tuple(ours.shape) == theirs.shape, what
    np.testing.assert_allclose(ours.numpy(), theirs, rtol=1e-10, atol=1e-12, err_msg=what)


def _compare_layer(ours, theirs, x_shape, h0_shape=None, lstm=False, seed=0):
    """Run both on the same input (and h_0), backpropagate the same weighted sum of the
    output and h_n, and compare values, the input's, h_0's and every weight's gradient."""
    import torch
    rng = np.random.default_rng(seed)
    x_np = rng.standard_normal(x_shape)
    h0_np = None if h0_shape is None else rng.standard_normal(h0_shape)
    results = []
    for lib, module in ((tinynet, ours), (torch, theirs)):
        x = lib.tensor(x_np, requires_grad=True)
        h0 = None if h0_np is None else lib.tensor(h0_np, requires_grad=True)
        state = (h0, lib.zeros(h0_np.shape, dtype=lib.float64)) if lstm and h0 is not None \
            else h0
        out, h_n = module(x, state)
        if lstm:
            h_n = h_n[0]
        w_out = lib.tensor(np.random.default_rng(seed + 1).standard_normal(out.shape))
        w_h = lib.tensor(np.random.default_rng(seed + 2).standard_normal(h_n.shape))
        ((out * w_out).sum() + (h_n * w_h).sum()).backward()
        results.append((out, h_n, x.grad, None if h0 is None else h0.grad,
                        dict(module.named_parameters())))
    (out, h_n, dx, dh0, params), (out_t, h_n_t, dx_t, dh0_t, params_t) = results
    _assert_close(out, out_t, "output")
    _assert_close(h_n, h_n_t, "h_n")
    _assert_close(dx, dx_t, "input gradient")
    if dh0 is not None:
        _assert_close(dh0, dh0_t, "h_0 gradient")
    assert list(params) == list(params_t)
    for name, p in params.items():
        _assert_close(p.grad, params_t[name].grad, f"gradient of {name}")


LAYER_CASES = [
    dict(),
    dict(num_layers=2),
    dict(batch_first=True),
    dict(num_layers=2, batch_first=True, bias=False),
    dict(bidirectional=True),
    dict(num_layers=2, bidirectional=True, batch_first=True),
    dict(num_layers=3, bidirectional=True, bias=False),
]


@pytest.mark.parametrize("kind", ["rnn_tanh", "rnn_relu", "gru"])
@pytest.mark.parametrize("options", LAYER_CASES, ids=str)
@pytest.mark.parametrize("given_h0", [False, True])
def test_layer_matches_torch(torch, kind, options, given_h0):
    ours, theirs = _layer(kind, **options)
    x_shape = (B, T, D) if options.get("batch_first") else (T, B, D)
    states = options.get("num_layers", 1) * (2 if options.get("bidirectional") else 1)
    _compare_layer(ours, theirs, x_shape, (states, B, H) if given_h0 else None)


@pytest.mark.parametrize("kind", ["rnn_tanh", "rnn_relu", "gru"])
@pytest.mark.parametrize("options", [dict(), dict(num_layers=2, batch_first=True),
                                     dict(num_layers=2, bidirectional=True)], ids=str)
@pytest.mark.parametrize("given_h0", [False, True])
def test_unbatched_layer_matches_torch(torch, kind, options, given_h0):
    ours, theirs = _layer(kind, **options)
    states = options.get("num_layers", 1) * (2 if options.get("bidirectional") else 1)
    _compare_layer(ours, theirs, (T, D), (states, H) if given_h0 else None)
    out, h_n = ours(tinynet.randn(T, D, dtype=tinynet.float64))
    assert out.shape == (T, H * (2 if options.get("bidirectional") else 1))
    assert h_n.shape == (states, H)


def _cells(kind, bias):
    import torch
    ours_cls, theirs_cls = {"gru": (GRUCell, torch.nn.GRUCell)}.get(
        kind, (RNNCell, torch.nn.RNNCell))
    options = dict(bias=bias)
    if kind != "gru":
        options["nonlinearity"] = kind[4:]
    ours = ours_cls(D, H, dtype=tinynet.float64, **options)
    theirs = theirs_cls(D, H, dtype=torch.float64, **options)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    theirs.load_state_dict({k: torch.tensor(v.numpy()) for k, v in ours.state_dict().items()})
    return ours, theirs


@pytest.mark.parametrize("kind", ["rnn_tanh", "rnn_relu", "gru"])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("batched", [True, False])
@pytest.mark.parametrize("given_h", [False, True])
def test_cell_matches_torch(torch, kind, bias, batched, given_h):
    ours, theirs = _cells(kind, bias)
    rng = np.random.default_rng(3)
    x_np = rng.standard_normal((B, D) if batched else (D,))
    h_np = rng.standard_normal((B, H) if batched else (H,))
    w = rng.standard_normal(h_np.shape)
    results = []
    for lib, cell in ((tinynet, ours), (torch, theirs)):
        x = lib.tensor(x_np, requires_grad=True)
        h = lib.tensor(h_np, requires_grad=True) if given_h else None
        h_next = cell(x, h) if given_h else cell(x)
        (h_next * lib.tensor(w)).sum().backward()
        results.append([h_next, x.grad] + ([h.grad] if given_h else [])
                       + [p.grad for p in cell.parameters()])
    for what, (a, b) in enumerate(zip(*results, strict=True)):
        _assert_close(a, b, f"result {what}")


def test_gru_cell_is_the_documented_step():
    """h' = (1 − z) ⊙ n + z ⊙ h with r, z, n from the rows [r; z; n], b_hn inside r ⊙ (.)."""
    cell = GRUCell(D, H, dtype=tinynet.float64)
    rng = np.random.default_rng(4)
    x, h = rng.standard_normal((B, D)), rng.standard_normal((B, H))
    w_ih, w_hh, b_ih, b_hh = (p.numpy() for p in cell.parameters())
    gi, gh = x @ w_ih.T + b_ih, h @ w_hh.T + b_hh
    sigmoid = lambda a: 1 / (1 + np.exp(-a))   # noqa: E731
    r, z = sigmoid(gi[:, :H] + gh[:, :H]), sigmoid(gi[:, H:2 * H] + gh[:, H:2 * H])
    n = np.tanh(gi[:, 2 * H:] + r * gh[:, 2 * H:])
    expected = (1 - z) * n + z * h
    np.testing.assert_allclose(cell(tinynet.tensor(x), tinynet.tensor(h)).numpy(), expected,
                               rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("kind", ["rnn_tanh", "rnn_relu", "gru", "lstm"])
@pytest.mark.parametrize("options", [dict(), dict(num_layers=2, bias=False),
                                     dict(num_layers=2, bidirectional=True)], ids=str)
def test_state_dict_keys_and_shapes_match_torch(torch, kind, options):
    if kind == "lstm" and options.get("bidirectional"):
        pytest.skip("tinynet's LSTM is unidirectional")
    ours, theirs = _layer(kind, **options)
    assert {k: tuple(v.shape) for k, v in ours.state_dict().items()} == {
        k: tuple(v.shape) for k, v in theirs.state_dict().items()}
    if kind != "lstm":                 # tinynet's LSTM also shows its norm
        assert ours.extra_repr() == theirs.extra_repr()


def test_cell_reprs_match_torch(torch):
    for ours, theirs in ((RNNCell(3, 4, bias=False, nonlinearity="relu"),
                          torch.nn.RNNCell(3, 4, bias=False, nonlinearity="relu")),
                         (GRUCell(3, 4), torch.nn.GRUCell(3, 4))):
        assert ours.extra_repr() == theirs.extra_repr()


def test_positional_arguments_follow_pytorch():
    rnn = RNN(3, 4, 2, "relu", False, True, 0.25, True)
    assert (rnn.num_layers, rnn.nonlinearity, rnn.bias, rnn.batch_first, rnn.dropout,
            rnn.bidirectional) == (2, "relu", False, True, 0.25, True)
    gru = GRU(3, 4, 2, False, True, 0.25, True)
    assert (gru.num_layers, gru.bias, gru.batch_first, gru.dropout, gru.bidirectional) == (
        2, False, True, 0.25, True)
    lstm = LSTM(3, 4, 2, False, True, 0.25)
    assert (lstm.bias_ih_l0, lstm.batch_first, lstm.dropout) == (None, True, 0.25)
    assert RNNCell(3, 4, True, "relu").nonlinearity == "relu"


@pytest.mark.parametrize("make", [lambda: GRU(2, 25, num_layers=2, bidirectional=True),
                                  lambda: RNN(2, 25), lambda: GRUCell(2, 25),
                                  lambda: RNNCell(2, 25, bias=False)])
def test_init_is_uniform_in_plus_minus_one_over_sqrt_hidden(make):
    module = make()
    bound = 1 / np.sqrt(25)
    for name, p in module.named_parameters():
        values = np.abs(p.numpy())
        assert values.max() <= bound and values.max() > 0.8 * bound, name


@pytest.mark.parametrize("make", [
    lambda: GRU(2, 3, num_layers=2, bidirectional=True, dtype=tinynet.float64),
    lambda: RNN(2, 3, num_layers=2, batch_first=True, dtype=tinynet.float64)])
def test_layer_gradcheck(make):
    module = make()
    rng = np.random.default_rng(5)
    states = module.num_layers * (2 if module.bidirectional else 1)
    x = tinynet.tensor(rng.standard_normal((2, 3, 2)), requires_grad=True)
    h0 = tinynet.tensor(rng.standard_normal((states, 2 if module.batch_first else 3, 3)),
                        requires_grad=True)

    def run(x, h0, *params):
        return module(x, h0)

    assert gradcheck(run, [x, h0, *module.parameters()])


@pytest.mark.parametrize("cell", [GRUCell(2, 3, dtype=tinynet.float64),
                                  RNNCell(2, 3, dtype=tinynet.float64)])
def test_cell_gradcheck(cell):
    rng = np.random.default_rng(6)
    x = tinynet.tensor(rng.standard_normal((4, 2)), requires_grad=True)
    h = tinynet.tensor(rng.standard_normal((4, 3)), requires_grad=True)
    assert gradcheck(lambda x, h, *params: cell(x, h), [x, h, *cell.parameters()])


@pytest.mark.parametrize("kind", ["rnn_tanh", "gru", "lstm"])
def test_dropout_between_layers_is_the_same_as_torch_at_p_1(torch, kind):
    """With p = 1 the second layer reads zeros in training mode: no randomness left, so
    both libraries must agree exactly; in eval mode both apply no dropout."""
    ours, theirs = _layer(kind, num_layers=2, dropout=1.0)
    h0_shape = (2, B, H)
    _compare_layer(ours, theirs, (T, B, D), h0_shape, lstm=kind == "lstm")
    ours.zero_grad()
    theirs.zero_grad()
    _compare_layer(ours.eval(), theirs.eval(), (T, B, D), h0_shape, lstm=kind == "lstm")


@pytest.mark.parametrize("make", [
    lambda p: GRU(D, H, num_layers=3, dropout=p, dtype=tinynet.float64),
    lambda p: RNN(D, H, num_layers=2, dropout=p, bidirectional=True, dtype=tinynet.float64),
    lambda p: LSTM(D, H, num_layers=2, dropout=p, dtype=tinynet.float64)])
def test_dropout_acts_in_training_only(make):
    with_dropout, without = make(0.5), make(0.0)
    without.load_state_dict(with_dropout.state_dict())
    x = tinynet.randn(T, B, D, dtype=tinynet.float64)
    first, second = with_dropout(x)[0].numpy(), with_dropout(x)[0].numpy()
    assert not np.allclose(first, second)            # a new mask on every call
    assert not np.allclose(first, without(x)[0].numpy())
    with_dropout.eval()
    evaluated = with_dropout(x)[0].numpy()
    np.testing.assert_array_equal(evaluated, with_dropout(x)[0].numpy())
    np.testing.assert_array_equal(evaluated, without(x)[0].numpy())


def test_the_first_layer_input_and_the_last_output_are_not_dropped():
    """Dropout sits between layers: with one layer nothing is dropped (PyTorch warns)."""
    with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1"):
        gru = GRU(D, H, dropout=0.9, dtype=tinynet.float64)
    x = tinynet.randn(T, B, D, dtype=tinynet.float64)
    np.testing.assert_array_equal(gru(x)[0].numpy(), gru(x)[0].numpy())


@pytest.mark.parametrize("make", [lambda: RNN(3, 4, dropout=0.5), lambda: GRU(3, 4, dropout=0.5),
                                  lambda: LSTM(3, 4, dropout=0.5)])
def test_dropout_with_one_layer_warns_at_the_callers_line(make):
    with pytest.warns(UserWarning, match="dropout=0.5 and num_layers=1") as record:
        make()
    assert record[0].filename == __file__


def test_no_warning_for_ordinary_use():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        GRU(3, 4, num_layers=2, dropout=0.3)(tinynet.randn(5, 2, 3))
        RNN(3, 4)(tinynet.randn(5, 3))
        LSTM(3, 4, num_layers=2, dropout=0.3)(tinynet.randn(5, 2, 3))


@pytest.mark.parametrize("module", [GRU(3, 4), RNN(3, 4), LSTM(3, 4)])
def test_flatten_parameters_is_a_no_op(module):
    before = {k: v.numpy().copy() for k, v in module.state_dict().items()}
    assert module.flatten_parameters() is None
    after = module.state_dict()
    assert all(np.array_equal(before[k], after[k].numpy()) for k in before)


def test_float32_by_default_and_a_float64_input_promotes():
    gru = GRU(3, 4, num_layers=2)
    out, h_n = gru(tinynet.randn(5, 2, 3))
    assert out.dtype == tinynet.float32 and h_n.dtype == tinynet.float32
    wide, _ = gru(tinynet.randn(5, 2, 3).double())
    assert wide.dtype == tinynet.float64


BAD_CALLS = [
    (lambda: GRU(3, 4)(tinynet.randn(5, 2, 6)), ValueError, r"input size 3.*\(5, 2, 6\)"),
    (lambda: RNN(3, 4)(tinynet.randn(5, 2, 2, 3)), ValueError, r"\(5, 2, 2, 3\)"),
    (lambda: GRU(3, 4)(tinynet.randn(0, 2, 3)), ValueError, "at least one step"),
    (lambda: GRU(3, 4, num_layers=2)(tinynet.randn(5, 2, 3), tinynet.zeros(1, 2, 4)),
     ValueError, r"h_0 has shape \(1, 2, 4\), expected \(2, 2, 4\)"),
    (lambda: GRU(3, 4, bidirectional=True)(tinynet.randn(5, 2, 3), tinynet.zeros(1, 2, 4)),
     ValueError, r"h_0 has shape \(1, 2, 4\), expected \(2, 2, 4\)"),
    (lambda: RNN(3, 4)(tinynet.randn(5, 3), tinynet.zeros(1, 1, 4)), ValueError,
     r"h_0 has shape \(1, 1, 4\), expected \(1, 4\)"),
    (lambda: GRU(3, 4)(np.zeros((5, 2, 3))), TypeError, "input must be a Tensor"),
    (lambda: GRU(3, 4)(tinynet.zeros(5, 2, 3, dtype=tinynet.int64)), TypeError,
     "floating point"),
    (lambda: GRU(3, 4)(tinynet.randn(5, 2, 3), np.zeros((1, 2, 4))), TypeError,
     "h_0 must be a Tensor"),
    (lambda: RNN(3, 4, nonlinearity="sigmoid"), ValueError, "nonlinearity 'sigmoid'"),
    (lambda: RNNCell(3, 4, nonlinearity="gelu"), ValueError, "nonlinearity 'gelu'"),
    (lambda: GRU(3, 4, num_layers=2, dropout=1.5), ValueError, "dropout must be in"),
    (lambda: LSTM(3, 4, num_layers=2, dropout=-0.1), ValueError, "dropout must be in"),
    (lambda: RNN(3, 4, dropout="0.1"), TypeError, "dropout must be a real number"),
    (lambda: GRU(3, 0), ValueError, "hidden_size must be at least 1"),
    (lambda: GRU(3, 4, num_layers=0), ValueError, "num_layers must be at least 1"),
    (lambda: RNN(3.5, 4), TypeError, "input_size must be an integer"),
    (lambda: GRU(3, 4, bias="yes"), TypeError, "bias must be a bool"),
    (lambda: GRU(3, 4, bidirectional=1), TypeError, "bidirectional must be a bool"),
    (lambda: GRUCell(3, 4)(tinynet.randn(2, 5)), ValueError, r"input \(batch, 3\).*\(2, 5\)"),
    (lambda: GRUCell(3, 4)(tinynet.randn(2, 3), tinynet.zeros(3, 4)), ValueError,
     r"hx has shape \(3, 4\), expected \(2, 4\)"),
    (lambda: RNNCell(3, 4)(tinynet.randn(3), tinynet.zeros(1, 4)), ValueError,
     r"hx has shape \(1, 4\), expected \(4,\)"),
    (lambda: RNNCell(3, 4)(tinynet.randn(2, 3), tinynet.zeros(2, 4, dtype=tinynet.int64)),
     TypeError, "hx must be floating point"),
]


@pytest.mark.parametrize("call, error, message", BAD_CALLS)
def test_bad_arguments_are_named(call, error, message):
    with pytest.raises(error, match=message):
        call()
