"""The pointwise half of an LSTM step as two fused nodes.

From the gate pre-activations z = [z_i, z_f, z_g, z_o] (B, 4H)::

    c_t = σ(z_f) ⊙ c_{t-1} + σ(z_i) ⊙ tanh(z_g)          (LSTMCellUpdate)
    h_t = σ(z_o) ⊙ tanh(c̃_t)                              (LSTMOutput)

where c̃_t is c_t itself, or LN(c_t) in the LN-LSTM. The same step written
with chunk/sigmoid/tanh/mul is ``tests/composite.py: composite_lstm_cell``;
the tests check that both agree. Fusing saves about a dozen graph nodes per
time step, which is most of an LSTM step's cost at small sizes.
"""
from __future__ import annotations

from ..autograd import Function
from ..backend import get_array_module
from .elementwise import sigmoid_array

__all__ = ["LSTMCellUpdate", "LSTMOutput"]


class LSTMCellUpdate(Function):
    @staticmethod
    def forward(ctx, gates, c_prev):
        xp = get_array_module(gates)
        H = c_prev.shape[1]
        i = sigmoid_array(gates[:, :H])
        f = sigmoid_array(gates[:, H:2 * H])
        g = xp.tanh(gates[:, 2 * H:3 * H])
        ctx.save_for_backward(i, f, g, c_prev)
        return f * c_prev + i * g

    @staticmethod
    def backward(ctx, grad):
        i, f, g, c_prev = ctx.saved
        H = c_prev.shape[1]
        d_gates = get_array_module(grad).zeros((grad.shape[0], 4 * H), grad.dtype)
        d_gates[:, :H] = grad * g * i * (1 - i)
        d_gates[:, H:2 * H] = grad * c_prev * f * (1 - f)
        d_gates[:, 2 * H:3 * H] = grad * i * (1 - g * g)
        return d_gates, grad * f


class LSTMOutput(Function):
    @staticmethod
    def forward(ctx, gates, cell):
        xp = get_array_module(gates)
        H = cell.shape[1]
        o = sigmoid_array(gates[:, 3 * H:])
        squashed = xp.tanh(cell)
        ctx.save_for_backward(o, squashed)
        return o * squashed

    @staticmethod
    def backward(ctx, grad):
        o, squashed = ctx.saved
        H = o.shape[1]
        d_gates = get_array_module(grad).zeros((grad.shape[0], 4 * H), grad.dtype)
        d_gates[:, 3 * H:] = grad * squashed * o * (1 - o)
        return d_gates, grad * o * (1 - squashed * squashed)
