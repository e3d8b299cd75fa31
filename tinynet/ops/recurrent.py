"""The pointwise half of an LSTM step as fused nodes, and a whole layer as one node.

From the gate pre-activations z = [z_i, z_f, z_g, z_o] (B, 4H)::

    c_t = σ(z_f) ⊙ c_{t-1} + σ(z_i) ⊙ tanh(z_g)          (LSTMCellUpdate)
    h_t = σ(z_o) ⊙ tanh(c̃_t)                              (LSTMOutput)

where c̃_t is c_t itself, or LN(c_t) in the LN-LSTM. The same step written
with chunk/sigmoid/tanh/mul is ``tests/composite.py: composite_lstm_cell``;
the tests check that both agree. Fusing saves about a dozen graph nodes per
time step, which is most of an LSTM step's cost at small sizes.

:class:`LSTMSequence` goes further for the LN-LSTM: every step of a layer in
one node, the recurrent product and both of its per-step LayerNorms included,
with backpropagation through time written out. Its backward sums the recurrent
weight's gradient over all steps in one product, dU = Σ_t da_tᵀ h_{t-1} for
a_t = U h_{t-1}, instead of one small product per step. A step's arithmetic
between its products, exponentials and tanh is the device's ``lstm_*`` kernels
(kernels/ops/lstm_spec.py), one compiled loop each on the CPU. The plain LSTM's
layer is one node of its own, with one product a step (tinynet/ops/lstm_layer.py).
"""
from __future__ import annotations

from ..autograd import Function
from ..backend import get_array_module, kernels_for
from .elementwise import no_fp_warnings
from .unary import sigmoid_array

__all__ = ["LSTMCellUpdate", "LSTMOutput", "LSTMSequence"]


class LSTMCellUpdate(Function):
    @staticmethod
    def forward(ctx, gates, c_prev):
        H = c_prev.shape[1]
        acts = get_array_module(gates).empty_like(gates)       # i, f, g (o unused)
        acts[:, :2 * H] = sigmoid_array(gates[:, :2 * H])
        acts[:, 2 * H:3 * H] = get_array_module(gates).tanh(gates[:, 2 * H:3 * H])
        ctx.save_for_backward(acts, c_prev)
        return acts[:, H:2 * H] * c_prev + acts[:, :H] * acts[:, 2 * H:3 * H]

    @staticmethod
    def backward(ctx, grad):
        acts, c_prev = ctx.saved
        d_gates = get_array_module(grad).zeros(acts.shape, grad.dtype)
        return d_gates, kernels_for(grad).lstm_cell_backward(d_gates, grad, acts, c_prev)


class LSTMOutput(Function):
    @staticmethod
    def forward(ctx, gates, cell):
        H = cell.shape[1]
        acts = get_array_module(gates).empty_like(gates)       # o (i, f, g unused)
        acts[:, 3 * H:] = sigmoid_array(gates[:, 3 * H:])
        squashed = get_array_module(gates).tanh(cell)
        ctx.save_for_backward(acts, squashed)
        return acts[:, 3 * H:] * squashed

    @staticmethod
    def backward(ctx, grad):
        acts, squashed = ctx.saved
        d_gates = get_array_module(grad).zeros(acts.shape, grad.dtype)
        return d_gates, kernels_for(grad).lstm_output_backward(d_gates, grad, acts, squashed)


@no_fp_warnings                     # e^−z overflows to inf for z < −88.7 (float32): σ = 0
class LSTMSequence(Function):
    """One LN-LSTM layer over a whole sequence: returns (h_1..h_T, c_T).

    Inputs: ``x_gates`` (T, B, 4H), the input's part of every step's gates
    (LN(W x_t) + b); the initial state ``h0``, ``c0`` (B, H); the recurrent
    weight U (4H, H); the gain and bias (or None) of LN(U h) and of LN(c), with
    their ``eps`` as a pair. Each step is
    :func:`tinynet.nn.recurrent.recurrent_step`'s::

        z_t = x_gates_t + LN(U h_{t-1}),   c_t, h_t from z_t as above

    (paper, Sec. 3.1). The LayerNorms run through the device's kernel table, as
    :class:`~tinynet.ops.normalization.LayerNormFunction`. The plain LSTM's layer
    is :class:`~tinynet.ops.lstm_layer.LSTMLayer`.
    """

    @staticmethod
    def forward(ctx, x_gates, h0, c0, weight_hh, hh_gain, hh_bias, cell_gain, cell_bias,
                eps):
        xp = get_array_module(x_gates)
        kernels = kernels_for(x_gates)
        dtype = xp.result_type(*(a for a in (x_gates, h0, c0, weight_hh, hh_gain, hh_bias,
                                             cell_gain, cell_bias) if a is not None))
        x_gates, weight_hh, hh_gain, hh_bias, cell_gain, cell_bias = (
            None if a is None else a.astype(dtype, copy=False)
            for a in (x_gates, weight_hh, hh_gain, hh_bias, cell_gain, cell_bias))
        steps, (batch, H) = x_gates.shape[0], h0.shape
        hs = xp.empty((steps + 1, batch, H), x_gates.dtype)     # h_0 .. h_T
        cs = xp.empty((steps + 1, batch, H), x_gates.dtype)     # c_0 .. c_T
        acts = xp.empty((steps, batch, 4 * H), x_gates.dtype)   # i, f, g, o of each step
        squashed = xp.empty((steps, batch, H), x_gates.dtype)   # tanh c̃_t
        gates = xp.empty((batch, 4 * H), x_gates.dtype)         # z_t
        exp_neg = xp.empty_like(gates)                          # e^−z_t, for σ
        hs[0], cs[0] = h0, c0
        norm_stats = []                      # per step, for the backward
        # Uᵀ (H, 4H) copied once: BLAS runs h Uᵀ faster from it, with the same sums
        weight_t = xp.ascontiguousarray(weight_hh.T)
        for t in range(steps):
            recurrent = hs[t] @ weight_t
            normalized, *hh_stats = kernels.layer_norm_forward(recurrent, hh_gain, hh_bias,
                                                               eps[0])
            xp.add(x_gates[t], normalized, out=gates)
            xp.exp(xp.negative(gates, out=exp_neg), out=exp_neg)
            xp.tanh(gates[:, 2 * H:3 * H], out=acts[t, :, 2 * H:3 * H])
            kernels.lstm_cell_forward(acts[t], exp_neg, cs[t], cs[t + 1])
            cell, *cell_stats = kernels.layer_norm_forward(cs[t + 1], cell_gain, cell_bias,
                                                           eps[1])
            norm_stats.append((recurrent, hh_stats, cell_stats))
            xp.tanh(cell, out=squashed[t])
            xp.multiply(acts[t, :, 3 * H:], squashed[t], out=hs[t + 1])
        ctx.save_for_backward(hs, cs, acts, squashed, weight_hh, hh_gain, cell_gain)
        ctx.norm_stats = norm_stats
        return hs[1:], cs[steps]

    @staticmethod
    def backward(ctx, grad_hs, grad_c_last):
        hs, cs, acts, squashed, weight_hh, hh_gain, cell_gain = ctx.saved
        xp = get_array_module(hs)
        kernels = kernels_for(hs)
        steps, batch, H = squashed.shape
        d_gates = xp.empty((steps, batch, 4 * H), hs.dtype)     # dL/dz_t
        d_recurrent = xp.empty_like(d_gates)                    # dL/d(U h_{t-1})
        grad_h = xp.zeros((batch, H), hs.dtype)
        grad_c = xp.zeros((batch, H), hs.dtype) if grad_c_last is None else grad_c_last
        norm_grads = [None, None, None, None]   # d hh_gain, d hh_bias, d cell_gain, d cell_bias
        if grad_hs is None:                  # only c_T was used
            grad_hs = xp.zeros_like(squashed)
        for t in reversed(range(steps)):
            grad_cell = kernels.lstm_output_backward(d_gates[t], grad_h + grad_hs[t], acts[t],
                                                     squashed[t])
            recurrent, hh_stats, cell_stats = ctx.norm_stats[t]
            grad_cell, *cell_grads = kernels.layer_norm_backward(grad_cell, cs[t + 1],
                                                                 *cell_stats, cell_gain)
            _accumulate(norm_grads, 2, cell_grads)
            grad_c = kernels.lstm_cell_backward(d_gates[t], grad_c + grad_cell, acts[t], cs[t])
            d_recurrent[t], *hh_grads = kernels.layer_norm_backward(d_gates[t], recurrent,
                                                                    *hh_stats, hh_gain)
            _accumulate(norm_grads, 0, hh_grads)
            grad_h = d_recurrent[t] @ weight_hh
        flat = d_recurrent.reshape(steps * batch, 4 * H)
        grad_weight = flat.T @ hs[:-1].reshape(steps * batch, H)
        return (d_gates, grad_h, grad_c, grad_weight, *norm_grads, None)


def _accumulate(sums, first, grads):
    """Add a step's (dgain, dbias) into ``sums[first:first + 2]``."""
    for k, grad in enumerate(grads):
        if grad is not None:
            sums[first + k] = grad if sums[first + k] is None else sums[first + k] + grad
