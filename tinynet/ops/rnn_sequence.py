"""An Elman RNN's or a GRU's layer, one direction, over a whole sequence as one node.

The steps are tinynet/nn/rnn.py's (its module docstring has the equations); written
with linear, sigmoid, tanh and the arithmetic ops, a GRU step is a dozen graph nodes,
and at a learner's sizes their bookkeeping is most of a step's cost. Here the forward
runs the recurrence on arrays, and the backward is backpropagation through time
written out. For a GRU step, with g = U h_{t-1} + b_hh = [g_r, g_z, g_n] and
dh the gradient at h_t (from the output and from step t + 1)::

    dn = dh ⊙ (1 − z),   dz = dh ⊙ (h_{t-1} − n),   da_n = dn ⊙ (1 − n²)
    da_r = da_n ⊙ g_n ⊙ r (1 − r),   da_z = dz ⊙ z (1 − z)
    dx_t = [da_r, da_z, da_n],   dg = [da_r, da_z, da_n ⊙ r]
    dh_{t-1} = dh ⊙ z + dg U

(a = the gate's pre-activation, x_t = W_ih x + b_ih its input part). For an Elman
step h_t = act(x_t + U h_{t-1} + b_hh): da = dh ⊙ act'(h_t), dx_t = dg = da,
dh_{t-1} = da U. Both sum the recurrent weight's gradient over the steps in one
product, dU = Σ_t dg_tᵀ h_{t-1}, and the bias's as Σ_t dg_t.
"""
from __future__ import annotations

from ..autograd import Function
from ..backend import get_array_module
from .elementwise import zero_where
from .unary import sigmoid_array

__all__ = ["GRUSequence", "RNNSequence"]


def _order(steps, reverse):
    return range(steps - 1, -1, -1) if reverse else range(steps)


def _recurrent_grads(ctx, d_hidden, states):
    """dU = Σ_t dg_tᵀ h_{t-1} and the bias's Σ_t dg_t, from dg (T, B, G·H) and the
    states each step read (T, B, H), in the same order."""
    steps, batch, width = d_hidden.shape
    grad_weight = d_hidden.reshape(steps * batch, width).T @ states.reshape(steps * batch, -1)
    grad_bias = d_hidden.sum(axis=(0, 1)) if ctx.needs_input_grad(3) else None
    return grad_weight, grad_bias


class GRUSequence(Function):
    """h_1..h_T (T, B, H) of a GRU layer, from the input parts x_parts (T, B, 3H), h_0
    (B, H), U = weight_hh (3H, H) and b_hh (3H,) or None; backwards in time if
    ``reverse`` (the output stays in time order)."""

    @staticmethod
    def forward(ctx, x_parts, h0, weight_hh, bias_hh, reverse):
        xp = get_array_module(x_parts)
        steps, H = x_parts.shape[0], h0.shape[1]
        out = xp.empty(x_parts.shape[:2] + (H,), x_parts.dtype)
        states = xp.empty_like(out)                         # the h_{t-1} each step read
        saved, h = [], h0
        for k, t in enumerate(_order(steps, reverse)):
            states[k] = h
            hidden = h @ weight_hh.T
            if bias_hh is not None:
                hidden += bias_hh
            x = x_parts[t]
            r = sigmoid_array(x[:, :H] + hidden[:, :H])
            z = sigmoid_array(x[:, H:2 * H] + hidden[:, H:2 * H])
            n = xp.tanh(x[:, 2 * H:] + r * hidden[:, 2 * H:])
            out[t] = (1 - z) * n + z * h
            h = out[t]
            saved.append((r, z, n, hidden[:, 2 * H:]))
        ctx.save_for_backward(states, weight_hh)
        ctx.steps, ctx.reverse = saved, reverse
        return out

    @staticmethod
    def backward(ctx, grad):
        states, weight_hh = ctx.saved
        xp = get_array_module(grad)
        steps, batch, H = grad.shape
        d_parts = xp.empty((steps, batch, 3 * H), grad.dtype)
        d_hidden = xp.empty_like(d_parts)                  # dg, in the order of the steps
        dh = xp.zeros((batch, H), grad.dtype)
        order = list(_order(steps, ctx.reverse))
        for k in reversed(range(steps)):
            t = order[k]
            r, z, n, hidden_n = ctx.steps[k]
            dh = dh + grad[t]
            dn = dh * (1 - z)
            da_n = dn * (1 - n * n)
            d_parts[t, :, :H] = da_n * hidden_n * r * (1 - r)
            d_parts[t, :, H:2 * H] = dh * (states[k] - n) * z * (1 - z)
            d_parts[t, :, 2 * H:] = da_n
            d_hidden[k, :, :2 * H] = d_parts[t, :, :2 * H]
            d_hidden[k, :, 2 * H:] = da_n * r
            dh = dh * z + d_hidden[k] @ weight_hh
        return (d_parts, dh, *_recurrent_grads(ctx, d_hidden, states), None)


class RNNSequence(Function):
    """h_1..h_T (T, B, H) of an Elman layer, h_t = act(x_t + U h_{t-1} + b_hh), act
    ``"tanh"`` or ``"relu"``, from x_parts (T, B, H), h_0, U (H, H), b_hh or None."""

    @staticmethod
    def forward(ctx, x_parts, h0, weight_hh, bias_hh, reverse, nonlinearity):
        xp = get_array_module(x_parts)
        out = xp.empty(x_parts.shape[:2] + h0.shape[1:], x_parts.dtype)
        states = xp.empty_like(out)
        h = h0
        for k, t in enumerate(_order(x_parts.shape[0], reverse)):
            states[k] = h
            pre = x_parts[t] + h @ weight_hh.T
            if bias_hh is not None:
                pre += bias_hh
            out[t] = xp.maximum(pre, 0) if nonlinearity == "relu" else xp.tanh(pre)
            h = out[t]
        ctx.save_for_backward(out, states, weight_hh)
        ctx.meta = (reverse, nonlinearity)
        return out

    @staticmethod
    def backward(ctx, grad):
        out, states, weight_hh = ctx.saved
        reverse, nonlinearity = ctx.meta
        xp = get_array_module(grad)
        d_parts = xp.empty_like(grad)
        d_hidden = xp.empty_like(grad)                     # the same, in the steps' order
        dh = xp.zeros(grad.shape[1:], grad.dtype)
        order = list(_order(grad.shape[0], reverse))
        for k in reversed(range(grad.shape[0])):
            t = order[k]
            dh = dh + grad[t]
            if nonlinearity == "relu":                     # 0 where h = 0, as PyTorch
                d_parts[t] = zero_where(out[t] <= 0, dh)
            else:
                d_parts[t] = dh * (1 - out[t] * out[t])
            d_hidden[k] = d_parts[t]
            dh = d_parts[t] @ weight_hh
        return (d_parts, dh, *_recurrent_grads(ctx, d_hidden, states), None, None)
