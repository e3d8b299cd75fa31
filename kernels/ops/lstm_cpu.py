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

The plain LSTM's step, each sample a column (:func:`lstm_columns_forward`,
:func:`lstm_columns_backward`), is one loop each way. Its forward goes further
in float32: the exponentials and tanh are in the loop too, :mod:`pointwise_cpu`'s
vectorized ``sigmoid32`` and ``tanh32``, so everything after the step's product
is one call; its values are within a few ulp of the spec's rather than its bits.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from .._common import FLOAT_DTYPES
from . import lstm_spec
from .pointwise_cpu import all_flagged, sigmoid32, tanh32

__all__ = ["lstm_cell_forward", "lstm_output_backward", "lstm_cell_backward",
           "lstm_columns_forward", "lstm_columns_backward"]

_EXACT = dict(cache=True, error_model="numpy")      # no fastmath: the spec's roundings
_FLOAT32 = dict(cache=True, error_model="numpy", fastmath={"contract"})


def _compiled(*arrays) -> bool:
    """NumPy arrays of one float dtype (the loops are fastest where they are
    C-ordered, as the LSTM layer's are; others work too)."""
    dtype = arrays[0].dtype
    if dtype not in FLOAT_DTYPES:
        return False
    for a in arrays:             # a loop, not all(...): every step asks
        if type(a) is not np.ndarray or a.dtype != dtype:
            return False
    return True


# Each inner loop runs j from 0 and writes one array: the forms the compiler turns
# into SIMD code (a loop from an offset, or one writing two arrays, stays scalar).
# The backward's rows are functions, which the plain LSTM's step shares.

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
def _cell_backward_row(d_i, d_f, d_g, grad_c_prev, grad_c, i, f, g, c_prev):
    """One row of the spec's cell backward: dL/dz_i, dL/dz_f, dL/dz_g and dL/dc_{t−1}."""
    one = i.dtype.type(1)
    for j in range(i.size):
        d_i[j] = grad_c[j] * g[j] * i[j] * (one - i[j])
    for j in range(i.size):
        d_f[j] = grad_c[j] * c_prev[j] * f[j] * (one - f[j])
    for j in range(i.size):
        d_g[j] = grad_c[j] * i[j] * (one - g[j] * g[j])
    for j in range(i.size):
        grad_c_prev[j] = grad_c[j] * f[j]


@njit(**_EXACT)
def _output_backward_loop(d_gates, grad_h, acts, squashed, grad_cell):
    H = squashed.shape[1]
    for b in range(squashed.shape[0]):
        _output_backward_row(d_gates[b, 3 * H:], grad_cell[b], grad_h[b], acts[b, 3 * H:],
                             squashed[b])


@njit(**_EXACT)
def _cell_backward_loop(d_gates, grad_c, acts, c_prev, grad_c_prev):
    H = c_prev.shape[1]
    for b in range(c_prev.shape[0]):
        d, a = d_gates[b], acts[b]
        _cell_backward_row(d[:H], d[H:2 * H], d[2 * H:3 * H], grad_c_prev[b], grad_c[b],
                           a[:H], a[H:2 * H], a[2 * H:3 * H], c_prev[b])


# The plain LSTM's step, each sample a column: a gate is H rows of B. The rows
# are independent, so each loop runs over them with ``prange``, compiled twice:
# serial, and with the rows shared out over the threads (the same values either way).

def _columns_forward32(z, c_prev, acts, c, squashed, states, t):
    H, batch = c.shape
    for j in prange(H):
        for b in range(batch):                                  # i, f
            acts[j, b] = sigmoid32(z[j, b])
        for b in range(batch):
            acts[H + j, b] = sigmoid32(z[H + j, b])
        for b in range(batch):                                  # g
            acts[2 * H + j, b] = tanh32(z[2 * H + j, b])
        for b in range(batch):                                  # o
            acts[3 * H + j, b] = sigmoid32(z[3 * H + j, b])
        for b in range(batch):
            c[j, b] = acts[H + j, b] * c_prev[j, b] + acts[j, b] * acts[2 * H + j, b]
        for b in range(batch):
            squashed[j, b] = tanh32(c[j, b])
        for b in range(batch):
            states[j, t, b] = acts[3 * H + j, b] * squashed[j, b]


def _columns_backward(d_gates, t, grad_h, grad_out, grad_c, acts, squashed, c_prev,
                      grad_c_prev):
    H, batch = c_prev.shape
    grad_h_total = np.empty((H, batch), acts.dtype)     # dL/dh_t: from step t + 1 and out
    for b in range(batch):
        out = np.ascontiguousarray(grad_out[b])     # read along its rows, written across
        for j in range(H):
            grad_h_total[j, b] = grad_h[j, b] + out[j]
    for j in prange(H):
        grad_c_total = np.empty(batch, acts.dtype)
        _output_backward_row(d_gates[3 * H + j, t], grad_c_total, grad_h_total[j],
                             acts[3 * H + j], squashed[j])
        for b in range(batch):                  # dL/dc_t: from step t + 1 and from h_t
            grad_c_total[b] = grad_c[j, b] + grad_c_total[b]
        _cell_backward_row(d_gates[j, t], d_gates[H + j, t], d_gates[2 * H + j, t],
                           grad_c_prev[j], grad_c_total, acts[j], acts[H + j],
                           acts[2 * H + j], c_prev[j])


_columns_forward_loop32 = njit(**_FLOAT32)(_columns_forward32)
_columns_forward_shared32 = njit(parallel=True, **_FLOAT32)(_columns_forward32)
_columns_backward_loop = njit(**_EXACT)(_columns_backward)
_columns_backward_shared = njit(parallel=True, **_EXACT)(_columns_backward)

SHARED_MIN_VALUES = 1 << 12
"""A step's 4H·B gate values from which its loops share the rows out over the
threads: the LSTM's step does an exponential or two per value, so a smaller
step than the elementwise kernels' ``PARALLEL_MIN_ELEMENTS`` pays for the hand-off."""


def lstm_columns_forward(z, c_prev, acts, c, squashed, states, t):
    """The spec's plain-LSTM step, in float32 (C-ordered arrays) as one loop (over
    the threads from :data:`SHARED_MIN_VALUES`) whose σ and tanh are
    :mod:`pointwise_cpu`'s vectorized ones (within 2 ulp of NumPy's, as
    ``torch.sigmoid`` on tinynet's float32 is); other dtypes run the spec, whose
    float64 the comparisons with PyTorch rely on."""
    arrays = (z, c_prev, acts, c, squashed, states)
    if not (_compiled(*arrays) and z.dtype == np.float32
            and all_flagged(arrays, "C_CONTIGUOUS")):
        return lstm_spec.lstm_columns_forward(z, c_prev, acts, c, squashed, states, t)
    loop = (_columns_forward_shared32 if z.size >= SHARED_MIN_VALUES
            else _columns_forward_loop32)
    loop(z, c_prev, acts, c, squashed, states, t)


def lstm_columns_backward(d_gates, t, grad_h, grad_out, grad_c, acts, squashed, c_prev):
    """The spec's plain-LSTM step backward, in one compiled loop (its bits; over the
    threads from :data:`SHARED_MIN_VALUES`)."""
    arrays = (d_gates, grad_h, grad_c, acts, squashed, c_prev)
    if not (_compiled(grad_out, *arrays) and all_flagged(arrays, "C_CONTIGUOUS")):
        return lstm_spec.lstm_columns_backward(d_gates, t, grad_h, grad_out, grad_c, acts,
                                               squashed, c_prev)
    grad_c_prev = np.empty(c_prev.shape, c_prev.dtype)
    loop = (_columns_backward_shared if acts.size >= SHARED_MIN_VALUES
            else _columns_backward_loop)
    loop(d_gates, t, grad_h, grad_out, grad_c, acts, squashed, c_prev, grad_c_prev)
    return grad_c_prev


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
