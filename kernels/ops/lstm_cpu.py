"""An LSTM step's arithmetic on the CPU: :mod:`~tinynet.kernels.ops.lstm_spec`'s
three kernels as one compiled loop each.

The spec is NumPy's passes over (B, H) slices: five forward, fifteen in the
backward, each a call and most a temporary. At a small LSTM's sizes (batch 64,
hidden 128: 32 KB a slice) the calls, not the memory, are the time, and there
are 28 steps or more each way. One loop per kernel does a step's arithmetic in
one call. The loops evaluate the spec's expressions in its order, without
contracting a product and a sum into one rounding, so they give its bits in
float32 and float64; other dtypes and CuPy's arrays run the spec.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .._common import FLOAT_DTYPES
from . import lstm_spec

__all__ = ["lstm_cell_forward", "lstm_output_backward", "lstm_cell_backward"]

_EXACT = dict(cache=True, error_model="numpy")      # no fastmath: the spec's roundings


def _compiled(*arrays) -> bool:
    """NumPy arrays of one float dtype (the loops are fastest where they are
    C-ordered, as the LSTM layer's are; others work too)."""
    first = arrays[0]
    return first.dtype in FLOAT_DTYPES and all(
        type(a) is np.ndarray and a.dtype == first.dtype for a in arrays)


@njit(**_EXACT)
def _cell_forward_loop(acts, exp_neg, c_prev, c):
    batch, H = c.shape
    one = acts.dtype.type(1)
    for b in range(batch):
        for j in range(2 * H):
            acts[b, j] = one / (one + exp_neg[b, j])
        for j in range(3 * H, 4 * H):
            acts[b, j] = one / (one + exp_neg[b, j])
        for j in range(H):
            c[b, j] = acts[b, H + j] * c_prev[b, j] + acts[b, j] * acts[b, 2 * H + j]


@njit(**_EXACT)
def _output_backward_loop(d_gates, grad_h, acts, squashed, grad_cell):
    batch, H = squashed.shape
    one = acts.dtype.type(1)
    for b in range(batch):
        for j in range(H):
            o, s, g_h = acts[b, 3 * H + j], squashed[b, j], grad_h[b, j]
            d_gates[b, 3 * H + j] = g_h * s * o * (one - o)
            grad_cell[b, j] = g_h * o * (one - s * s)


@njit(**_EXACT)
def _cell_backward_loop(d_gates, grad_c, acts, c_prev, grad_c_prev):
    batch, H = c_prev.shape
    one = acts.dtype.type(1)
    for b in range(batch):
        for j in range(H):
            g_c, i, f, g = grad_c[b, j], acts[b, j], acts[b, H + j], acts[b, 2 * H + j]
            d_gates[b, j] = g_c * g * i * (one - i)
            d_gates[b, H + j] = g_c * c_prev[b, j] * f * (one - f)
            d_gates[b, 2 * H + j] = g_c * i * (one - g * g)
            grad_c_prev[b, j] = g_c * f


def lstm_cell_forward(acts, exp_neg, c_prev, c):
    """The spec's forward (σ of three gates, then c_t), in one compiled loop."""
    if not _compiled(acts, exp_neg, c_prev, c):
        return lstm_spec.lstm_cell_forward(acts, exp_neg, c_prev, c)
    _cell_forward_loop(acts, exp_neg, c_prev, c)


def lstm_output_backward(d_gates, grad_h, acts, squashed):
    """The spec's output-gate backward, in one compiled loop."""
    return _backward(_output_backward_loop, lstm_spec.lstm_output_backward,
                     d_gates, grad_h, acts, squashed)


def lstm_cell_backward(d_gates, grad_c, acts, c_prev):
    """The spec's cell backward, in one compiled loop."""
    return _backward(_cell_backward_loop, lstm_spec.lstm_cell_backward,
                     d_gates, grad_c, acts, c_prev)


def _backward(loop, spec, d_gates, grad, acts, state):
    """Run a backward ``loop`` (the ``spec`` where it does not take the arrays): it
    writes into ``d_gates`` and returns the gradient of ``state``'s shape."""
    if not _compiled(d_gates, grad, acts, state):
        return spec(d_gates, grad, acts, state)
    out = np.empty(state.shape, state.dtype)
    loop(d_gates, grad, acts, state, out)
    return out
