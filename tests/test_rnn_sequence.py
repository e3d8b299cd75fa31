"""A GRU's and an Elman RNN's layer as one node (tinynet/ops/rnn_sequence.py): float64
gradcheck of the written-out backpropagation through time, and the same numbers as
the cells' steps chained as a graph (autograd's backward)."""
import numpy as np
import pytest

import tinynet
from tinynet.nn.rnn import gru_step, rnn_step
from tinynet.ops.rnn_sequence import GRUSequence, RNNSequence
from tinynet.testing import gradcheck

T, B, H = 4, 3, 5
KINDS = [("gru", None), ("rnn", "tanh"), ("rnn", "relu")]


def inputs(kind, bias, seed=0):
    rng = np.random.default_rng(seed)
    gates = 3 if kind == "gru" else 1

    def leaf(*shape):
        return tinynet.tensor(rng.standard_normal(shape), dtype=tinynet.float64,
                              requires_grad=True)
    return [leaf(T, B, gates * H), leaf(B, H), leaf(gates * H, H),
            leaf(gates * H) if bias else None]


def fused(kind, act, reverse):
    if kind == "gru":
        return lambda x, h0, U, b=None: GRUSequence.apply(x, h0, U, b, reverse)
    return lambda x, h0, U, b=None: RNNSequence.apply(x, h0, U, b, reverse, act)


def chained(kind, act, reverse):
    """The cells' steps, one graph node per op."""
    def run(x, h0, U, b=None):
        outputs, h = [None] * T, h0
        for t in (reversed(range(T)) if reverse else range(T)):
            h = gru_step(x[t], h, U, b) if kind == "gru" else rnn_step(x[t], h, U, b, act)
            outputs[t] = h
        return tinynet.stack(outputs)
    return run


@pytest.mark.parametrize("kind, act", KINDS)
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("bias", [True, False])
def test_gradcheck(kind, act, reverse, bias):
    args = [a for a in inputs(kind, bias) if a is not None]
    assert gradcheck(fused(kind, act, reverse), args)


@pytest.mark.parametrize("kind, act", KINDS)
@pytest.mark.parametrize("reverse", [False, True])
def test_the_node_computes_the_cells_steps(kind, act, reverse):
    weights = np.random.default_rng(1).standard_normal((T, B, H))
    results = []
    for run in (fused(kind, act, reverse), chained(kind, act, reverse)):
        args = inputs(kind, bias=True)
        out = run(*args)
        (out * tinynet.tensor(weights)).sum().backward()
        results.append([out.numpy()] + [a.grad.numpy() for a in args])
    for ours, theirs in zip(*results, strict=True):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-13)
