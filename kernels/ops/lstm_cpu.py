"""An LSTM step's arithmetic on the CPU: :mod:`~tinynet.kernels.ops.lstm_spec`'s
kernels as one compiled loop each.

The spec is NumPy's passes over (B, H) slices: five forward, fifteen in the
backward, each a call and most a temporary. At a small LSTM's sizes (batch 64,
hidden 128: 32 KB a slice) the calls, not the memory, are the time, and there
are 28 steps or more each way. One loop per kernel does a step's arithmetic in
one call. The cell and backward loops evaluate the spec's expressions in its
order, without contracting a product and a sum into one rounding, so they give
its bits in float32 and float64 (the LN-LSTM's); other dtypes and CuPy's arrays
run the spec.

The plain LSTM's step (:func:`lstm_step_forward`) goes further in float32: its
exponentials and tanh are in the loop too, :mod:`pointwise_cpu`'s vectorized
``sigmoid32`` and ``tanh32``, so everything after the step's product is one
call; its values are within a few ulp of the spec's rather than its bits.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .._common import FLOAT_DTYPES
from . import lstm_spec
from .pointwise_cpu import sigmoid32, tanh32

__all__ = ["lstm_cell_forward", "lstm_output_backward", "lstm_cell_backward",
           "lstm_step_forward", "lstm_step_backward"]

_EXACT = dict(cache=True, error_model="numpy")      # no fastmath: the spec's roundings
_FLOAT32 = dict(cache=True, error_model="numpy", fastmath={"contract"})


def _compiled(*arrays) -> bool:
    """NumPy arrays of one float dtype (the loops are fastest where they are
    C-ordered, as the LSTM layer's are; others work too)."""
    first = arrays[0]
    return first.dtype in FLOAT_DTYPES and all(
        type(a) is np.ndarray and a.dtype == first.dtype for a in arrays)


# Each inner loop runs j from 0 and writes one array: the forms the compiler turns
# into SIMD code (a loop from an offset, or one writing two arrays, stays scalar).
# The backward's rows are functions, so that the plain LSTM's whole step shares them.

@njit(**_EXACT)
def _cell_forward_loop(acts, exp_neg, c_prev, c):
    batch, H = c.shape
    one = acts.dtype.type(1)
    for b in range(batch):
        for j in range(2 * H):                                  # i, f
            acts[b, j] = one / (one + exp_neg[b, j])
        for j in range(H):                                      # o
            acts[b, 3 * H + j] = one / (one + exp_neg[b, 3 * H + j])
        for j in range(H):
            c[b, j] = acts[b, H + j] * c_prev[b, j] + acts[b, j] * acts[b, 2 * H + j]


@njit(inline="always", **_EXACT)
def _output_backward_row(d_o, grad_cell, grad_h, o, squashed):
    """One row of the spec's output-gate backward: dL/dz_o and dL/dc̃."""
    one = o.dtype.type(1)
    for j in range(o.size):
        d_o[j] = grad_h[j] * squashed[j] * o[j] * (one - o[j])
    for j in range(o.size):
        grad_cell[j] = grad_h[j] * o[j] * (one - squashed[j] * squashed[j])


@njit(inline="always", **_EXACT)
def _cell_backward_row(d_gates, grad_c_prev, grad_c, acts, c_prev):
    """One row of the spec's cell backward: dL/dz_i, dL/dz_f, dL/dz_g into the first
    3H of ``d_gates`` and dL/dc_{t−1}."""
    one = acts.dtype.type(1)
    H = c_prev.size
    i, f, g = acts[:H], acts[H:2 * H], acts[2 * H:3 * H]
    d_i, d_f, d_g = d_gates[:H], d_gates[H:2 * H], d_gates[2 * H:3 * H]
    for j in range(H):
        d_i[j] = grad_c[j] * g[j] * i[j] * (one - i[j])
    for j in range(H):
        d_f[j] = grad_c[j] * c_prev[j] * f[j] * (one - f[j])
    for j in range(H):
        d_g[j] = grad_c[j] * i[j] * (one - g[j] * g[j])
    for j in range(H):
        grad_c_prev[j] = grad_c[j] * f[j]


@njit(**_EXACT)
def _output_backward_loop(d_gates, grad_h, acts, squashed, grad_cell):
    H = squashed.shape[1]
    for b in range(squashed.shape[0]):
        _output_backward_row(d_gates[b, 3 * H:], grad_cell[b], grad_h[b], acts[b, 3 * H:],
                             squashed[b])


@njit(**_EXACT)
def _cell_backward_loop(d_gates, grad_c, acts, c_prev, grad_c_prev):
    for b in range(c_prev.shape[0]):
        _cell_backward_row(d_gates[b], grad_c_prev[b], grad_c[b], acts[b], c_prev[b])


@njit(**_EXACT)
def _step_backward_loop(d_gates, grad_h, grad_out, grad_c, acts, squashed, c_prev,
                        grad_c_prev):
    batch, H = c_prev.shape
    grad_h_total, grad_c_total = np.empty(H, acts.dtype), np.empty(H, acts.dtype)
    for b in range(batch):
        out = np.ascontiguousarray(grad_out[b])  # a row of (T, B, H) transposed: one block
        for j in range(H):
            grad_h_total[j] = grad_h[b, j] + out[j]
        _output_backward_row(d_gates[b, 3 * H:], grad_c_total, grad_h_total,
                             acts[b, 3 * H:], squashed[b])
        for j in range(H):                       # dL/dc_t: from step t + 1 and from h_t
            grad_c_total[j] = grad_c[b, j] + grad_c_total[j]
        _cell_backward_row(d_gates[b], grad_c_prev[b], grad_c_total, acts[b], c_prev[b])


@njit(**_FLOAT32)
def _step_forward_loop32(x_gates, recurrent, c_prev, acts, c, squashed, h):
    batch, H = c.shape
    for b in range(batch):
        x = np.ascontiguousarray(x_gates[b])     # a row of (T, B, 4H) transposed: one block
        z = recurrent[b]
        for j in range(2 * H):                                  # i, f
            acts[b, j] = sigmoid32(x[j] + z[j])
        for j in range(H):                                      # g
            acts[b, 2 * H + j] = tanh32(x[2 * H + j] + z[2 * H + j])
        for j in range(H):                                      # o
            acts[b, 3 * H + j] = sigmoid32(x[3 * H + j] + z[3 * H + j])
        for j in range(H):
            c[b, j] = acts[b, H + j] * c_prev[b, j] + acts[b, j] * acts[b, 2 * H + j]
        for j in range(H):
            squashed[b, j] = tanh32(c[b, j])
        for j in range(H):
            h[b, j] = acts[b, 3 * H + j] * squashed[b, j]


def lstm_step_forward(x_gates, recurrent, c_prev, acts, c, squashed, h):
    """The spec's plain-LSTM step, in float32 (C-ordered, but for ``x_gates``) as one
    loop whose σ and tanh are :mod:`pointwise_cpu`'s vectorized ones (within 2 ulp of
    NumPy's, as ``torch.sigmoid`` on tinynet's float32 is); other dtypes run the spec,
    whose float64 bits the comparisons with PyTorch rely on."""
    arrays = (recurrent, c_prev, acts, c, squashed, h)
    if not (_compiled(x_gates, *arrays) and acts.dtype == np.float32
            and all(a.flags.c_contiguous for a in arrays)):
        return lstm_spec.lstm_step_forward(x_gates, recurrent, c_prev, acts, c, squashed, h)
    _step_forward_loop32(x_gates, recurrent, c_prev, acts, c, squashed, h)


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


def lstm_step_backward(d_gates, grad_h, grad_out, grad_c, acts, squashed, c_prev):
    """The spec's plain-LSTM step backward, in one compiled loop (its bits)."""
    if not _compiled(d_gates, grad_h, grad_out, grad_c, acts, squashed, c_prev):
        return lstm_spec.lstm_step_backward(d_gates, grad_h, grad_out, grad_c, acts,
                                            squashed, c_prev)
    grad_c_prev = np.empty(c_prev.shape, c_prev.dtype)
    _step_backward_loop(d_gates, grad_h, grad_out, grad_c, acts, squashed, c_prev, grad_c_prev)
    return grad_c_prev


def _backward(loop, spec, d_gates, grad, acts, state):
    """Run a backward ``loop`` (the ``spec`` where it does not take the arrays): it
    writes into ``d_gates`` and returns the gradient of ``state``'s shape."""
    if not _compiled(d_gates, grad, acts, state):
        return spec(d_gates, grad, acts, state)
    out = np.empty(state.shape, state.dtype)
    loop(d_gates, grad, acts, state, out)
    return out
