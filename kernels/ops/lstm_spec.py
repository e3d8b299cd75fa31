"""An LSTM step's arithmetic around its products: the spec of ``lstm_cpu``.

A step's gate pre-activations z = [z_i, z_f, z_g, z_o] (B, 4H) give::

    i, f, o = σ(z_i), σ(z_f), σ(z_o),   g = tanh(z_g)
    c_t = f ⊙ c_{t−1} + i ⊙ g,          h_t = o ⊙ tanh(c̃_t)

(c̃_t is c_t, or LN(c_t) in the LN-LSTM). The LN-LSTM keeps a step's activations
side by side as ``acts`` (B, 4H) = [i, f, g, o], as the gates are laid out. The
exponentials and tanh are the array library's (NumPy's or CuPy's); its kernels
are the arithmetic between them, forward (:func:`lstm_cell_forward`) and
backward (:func:`lstm_output_backward`, :func:`lstm_cell_backward`): products,
sums and quotients only, so the compiled loops give the same bits.

The plain LSTM (tinynet/ops/lstm_layer.py) keeps each sample as a column
instead, ``acts`` (4H, B), and runs its whole step around the product as one
kernel each way (:func:`lstm_columns_forward`, :func:`lstm_columns_backward`).
"""
from __future__ import annotations

from tinynet.backend import get_array_module

__all__ = ["lstm_cell_forward", "lstm_output_backward", "lstm_cell_backward",
           "lstm_columns_forward", "lstm_columns_backward"]


def lstm_cell_forward(acts, exp_neg, c_prev, c):
    """Write σ = 1 / (1 + e^−z) of the input, forget and output gates into ``acts``
    (B, 4H) from ``exp_neg`` = e^−z (B, 4H), and c_t = f ⊙ c_{t−1} + i ⊙ g into
    ``c``; ``acts[:, 2H:3H]`` holds g = tanh z_g already."""
    H = c.shape[1]
    acts[:, :2 * H] = 1 / (1 + exp_neg[:, :2 * H])
    acts[:, 3 * H:] = 1 / (1 + exp_neg[:, 3 * H:])
    i, f, g = acts[:, :H], acts[:, H:2 * H], acts[:, 2 * H:3 * H]
    get_array_module(c).add(f * c_prev, i * g, out=c)


def lstm_output_backward(d_gates, grad_h, acts, squashed):
    """Write dL/dz_o = g_h ⊙ tanh c̃ ⊙ o (1 − o) into ``d_gates[:, 3H:]`` from
    g_h = dL/dh_t, o being ``acts[:, 3H:]``; return dL/dc̃_t = g_h ⊙ o ⊙ (1 − tanh² c̃)."""
    H = squashed.shape[1]
    o = acts[:, 3 * H:]
    d_gates[:, 3 * H:] = grad_h * squashed * o * (1 - o)
    return grad_h * o * (1 - squashed * squashed)


def lstm_cell_backward(d_gates, grad_c, acts, c_prev):
    """Write dL/dz_i, dL/dz_f, dL/dz_g into ``d_gates[:, :3H]`` from g_c = dL/dc_t and
    the step's i, f, g (``acts[:, :3H]``); return dL/dc_{t−1} = g_c ⊙ f."""
    H = c_prev.shape[1]
    i, f, g = acts[:, :H], acts[:, H:2 * H], acts[:, 2 * H:3 * H]
    d_gates[:, :H] = grad_c * g * i * (1 - i)
    d_gates[:, H:2 * H] = grad_c * c_prev * f * (1 - f)
    d_gates[:, 2 * H:3 * H] = grad_c * i * (1 - g * g)
    return grad_c * f


def lstm_columns_forward(z, c_prev, acts, c, squashed, states, t):
    """A plain LSTM's step with each sample a column: from the gate pre-activations
    ``z`` (4H, B), i, f, g, o into ``acts`` (4H, B), c_t into ``c`` and tanh c_t into
    ``squashed`` (H, B), and h_t = o ⊙ tanh c_t into ``states[:, t]`` (``states``:
    (H, T + 1, B))."""
    xp = get_array_module(z)
    H = c.shape[0]
    acts[:2 * H] = 1 / (1 + xp.exp(-z[:2 * H]))
    acts[2 * H:3 * H] = xp.tanh(z[2 * H:3 * H])
    acts[3 * H:] = 1 / (1 + xp.exp(-z[3 * H:]))
    i, f, g, o = acts[:H], acts[H:2 * H], acts[2 * H:3 * H], acts[3 * H:]
    xp.add(f * c_prev, i * g, out=c)
    xp.tanh(c, out=squashed)
    states[:, t] = o * squashed


def lstm_columns_backward(d_gates, t, grad_h, grad_out, grad_c, acts, squashed, c_prev):
    """That step's backward: dL/dz into ``d_gates[:, t]`` (``d_gates``: (4H, T, B))
    from the gradients that reach h_t, ``grad_h`` (H, B) from step t + 1 and
    ``grad_out`` (B, H) from the layer's output, and c_t, ``grad_c`` (H, B); return
    dL/dc_{t−1} (H, B). The formulas of :func:`lstm_output_backward` and
    :func:`lstm_cell_backward`, in their order."""
    H = c_prev.shape[0]
    i, f, g, o = acts[:H], acts[H:2 * H], acts[2 * H:3 * H], acts[3 * H:]
    grad_h = grad_h + grad_out.T
    d_gates[3 * H:, t] = grad_h * squashed * o * (1 - o)
    grad_c = grad_c + grad_h * o * (1 - squashed * squashed)
    d_gates[:H, t] = grad_c * g * i * (1 - i)
    d_gates[H:2 * H, t] = grad_c * c_prev * f * (1 - f)
    d_gates[2 * H:3 * H, t] = grad_c * i * (1 - g * g)
    return grad_c * f
