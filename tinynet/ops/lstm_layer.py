"""The plain LSTM layer over a whole sequence as one node, each sample a column.

A step is one matrix product and the gates around it::

    z_t = W [x_t; h_{t−1}; 1],    W = [W_ih | W_hh | b_ih + b_hh]      (4H, D + H + 1)
    i, f, o = σ(z_i), σ(z_f), σ(z_o),   g = tanh(z_g)
    c_t = f ⊙ c_{t−1} + i ⊙ g,          h_t = o ⊙ tanh(c_t)

The input's and the state's products are one, and the bias is the weight of an
input that is always 1 (its gradient is then that column of dW). The arrays are
laid out with each sample a column, (features, B): the product W [x_t; h_{t−1}; 1]
then has the 4H gates as its rows, which BLAS shares out over the cores better
than the B rows of the transposed product, and a gate is one block of H·B
values for the step's kernel. The backward sums every step's weight gradient
in one product, dW = Σ_t dz_t [x_t; h_{t−1}; 1]ᵀ, over all T·B columns at once.

The LN-LSTM (:class:`~tinynet.ops.recurrent.LSTMSequence`) normalizes W_ih x and
W_hh h apart, so its products stay two; the same steps written with
chunk/sigmoid/tanh/mul are ``tests/composite.py: composite_lstm_cell``.
"""
from __future__ import annotations

from ..autograd import Function
from ..backend import get_array_module, kernels_for
from .elementwise import no_fp_warnings

__all__ = ["LSTMLayer"]


@no_fp_warnings                     # e^−z overflows to inf for z < −88.7 (float32): σ = 0
class LSTMLayer(Function):
    """One plain LSTM layer: ``x`` (T, B, D), ``h0``, ``c0`` (B, H), ``weight_ih``
    (4H, D), ``weight_hh`` (4H, H) and ``bias_ih``, ``bias_hh`` (4H,) or both None;
    returns (h_1..h_T as (T, B, H), c_T)."""

    @staticmethod
    def forward(ctx, x, h0, c0, weight_ih, weight_hh, bias_ih, bias_hh):
        xp = get_array_module(x)
        kernels = kernels_for(x)
        dtype = xp.result_type(*(a for a in (x, h0, c0, weight_ih, weight_hh, bias_ih, bias_hh)
                                 if a is not None))
        steps, batch, D = x.shape
        H = weight_hh.shape[1]
        bias = xp.zeros(4 * H, dtype) if bias_ih is None else bias_ih + bias_hh
        weight = xp.concatenate([weight_ih, weight_hh, bias[:, None]], axis=1, dtype=dtype)
        inputs = xp.empty((D + H + 1, steps + 1, batch), dtype)   # column t: [x_t; h_{t−1}; 1]
        inputs[:D, :steps] = x.transpose(2, 0, 1)
        inputs[D + H] = 1
        states = inputs[D:D + H]                                   # h_0 .. h_T, (H, T + 1, B)
        states[:, 0] = h0.T
        cs = xp.empty((steps + 1, H, batch), dtype)               # c_0 .. c_T
        cs[0] = c0.T
        acts = xp.empty((steps, 4 * H, batch), dtype)             # i, f, g, o of each step
        squashed = xp.empty((steps, H, batch), dtype)             # tanh c_t
        for t in range(steps):
            gates = weight @ inputs[:, t]
            kernels.lstm_columns_forward(gates, cs[t], acts[t], cs[t + 1], squashed[t],
                                         states, t + 1)
        ctx.save_for_backward(inputs, cs, acts, squashed, weight)
        ctx.has_bias = bias_ih is not None
        return states[:, 1:].transpose(1, 2, 0), cs[steps].T     # (T, B, H), (B, H): views

    @staticmethod
    def backward(ctx, grad_hs, grad_c_last):
        inputs, cs, acts, squashed, weight = ctx.saved
        xp = get_array_module(inputs)
        kernels = kernels_for(inputs)
        steps, H, batch = squashed.shape
        D = inputs.shape[0] - H - 1
        d_gates = xp.empty((4 * H, steps, batch), inputs.dtype)   # dL/dz_t, column t
        weight_hh_t = xp.ascontiguousarray(weight[:, D:D + H].T)
        grad_h = xp.zeros((H, batch), inputs.dtype)
        grad_c = (xp.zeros((H, batch), inputs.dtype) if grad_c_last is None
                  else xp.ascontiguousarray(grad_c_last.T))
        if grad_hs is None:                  # only c_T was used
            grad_hs = xp.zeros((steps, batch, H), inputs.dtype)
        for t in reversed(range(steps)):
            grad_c = kernels.lstm_columns_backward(d_gates, t, grad_h, grad_hs[t], grad_c,
                                                   acts[t], squashed[t], cs[t])
            grad_h = weight_hh_t @ d_gates[:, t]
        flat = d_gates.reshape(4 * H, steps * batch)
        grad_weight = flat @ inputs[:, :steps].reshape(-1, steps * batch).T
        grad_x = None
        if ctx.needs_input_grad(0):
            grad_x = (weight[:, :D].T @ flat).reshape(D, steps, batch).transpose(1, 2, 0)
        grad_bias = grad_weight[:, D + H] if ctx.has_bias else None
        return (grad_x, grad_h.T, grad_c.T, xp.ascontiguousarray(grad_weight[:, :D]),
                xp.ascontiguousarray(grad_weight[:, D:D + H]), grad_bias,
                None if grad_bias is None else grad_bias.copy())   # each bias its own array
