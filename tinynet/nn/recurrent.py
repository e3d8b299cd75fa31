"""LSTM cells and layers: plain, layer-normalized, and batch-normalized.

One step of an LSTM (gate order i, f, g, o, as PyTorch)::

    i, f, g, o = split(W x_t + b_ih + U h_{t-1} + b_hh)
    c_t = σ(f) ⊙ c_{t-1} + σ(i) ⊙ tanh(g)
    h_t = σ(o) ⊙ tanh(c_t)

``norm='layer'`` is the LN-LSTM of the paper (Ba, Kiros & Hinton, 2016,
Sec. 3.1 and the authors' ``lnlstm_layer``): the two pre-activations are
layer-normalized separately over all 4H units, each with its own gain and
bias, the cell state is carried forward unnormalized, and the output reads a
normalized copy of it::

    gates = LN(W x_t) + LN(U h_{t-1}) + b        h_t = σ(o) ⊙ tanh(LN(c_t))

Statistics are per sample and per time step: nothing is averaged across time
(which would let step t see the future) or across the batch.

``norm='batch'`` is recurrent batch normalization (Cooijmans et al., 2016):
the same three places use batch statistics, with separate running statistics
per time step up to ``max_steps`` (later steps reuse the last ones).

Pitfall (seen with a PyTorch LN-LSTM on sequential MNIST): while the state is
exactly zero (h_0 = 0, and blank leading image rows keep it there when the
biases are zero), every LN sees a constant row, whose backward multiplies the
gradient by 1/sqrt(eps) ≈ 316 per step, and gradients explode within a few
dozen steps. The default uniform initialization of ``bias_ih``/``bias_hh``
(as PyTorch's) makes the gates differ across units from the first step on,
so c_1 and h_1 are not constant rows and the chain is broken.
"""
from __future__ import annotations

import warnings

from .. import creation
from ..hyperparameters import check_count, check_real
from ..ops import stack
from ..ops.lstm_layer import LSTMLayer
from ..ops.recurrent import LSTMCellUpdate, LSTMOutput, LSTMSequence
from . import functional as F
from . import init
from .module import Module, Parameter
from .normalization import LayerNorm, StepwiseBatchNorm

__all__ = ["LSTMCell", "LSTM", "GateNorms", "lstm_cell", "input_gates", "recurrent_step",
           "lstm_sequence", "lstm_layer", "check_dropout"]

NORMS = (None, "layer", "batch")


class GateNorms(Module):
    """The three normalizations of an LN- or BN-LSTM: of W x, of U h, of c."""

    def __init__(self, kind: str, hidden_size: int, eps: float, max_steps: int,
                 dtype=None, device="cpu"):
        super().__init__()
        self.stepwise = kind == "batch"
        gates = 4 * hidden_size
        def make(features):
            if kind == "layer":
                return LayerNorm(features, eps=eps, dtype=dtype, device=device)
            return StepwiseBatchNorm(features, max_steps, eps=eps, dtype=dtype, device=device)

        self.ih, self.hh, self.cell = make(gates), make(gates), make(hidden_size)
        if self.stepwise:   # Cooijmans et al.: small gains keep the gates out of saturation
            init.constant_(self.ih.weight, 0.1)
            init.constant_(self.hh.weight, 0.1)

    def normalize(self, which: str, x, step: int):
        """Normalize ``x`` by the normalization ``which`` (``'ih'``: of W x, ``'hh'``: of
        U h, ``'cell'``: of c); ``step`` picks a stepwise batch norm's statistics (a
        layer norm ignores it).
        """
        module = getattr(self, which)
        return module(x, step) if self.stepwise else module(x)


def input_gates(x, weight_ih, bias=None, norms=None, step=0):
    """The input's part of the gate pre-activations: W x + b, or N(W x) + b.

    ``x`` may hold many time steps at once, (..., I): layer normalization
    still takes its statistics per row, i.e. per sample and per step.
    """
    if norms is None:
        return F.linear(x, weight_ih, bias)
    gates = norms.normalize("ih", F.linear(x, weight_ih), step)
    return gates if bias is None else gates + bias


def recurrent_step(x_gates, h, c, weight_hh, norms=None, step=0):
    """One LSTM step from the input's part of the gates; returns (h_t, c_t).

    The pointwise part runs as two fused nodes (``tinynet.ops.recurrent``).
    """
    h_gates = F.linear(h, weight_hh)
    if norms is not None:
        h_gates = norms.normalize("hh", h_gates, step)
    gates = x_gates + h_gates
    c = LSTMCellUpdate.apply(gates, c)
    c_read = c if norms is None else norms.normalize("cell", c, step)
    return LSTMOutput.apply(gates, c_read), c


def lstm_sequence(x_gates, h, c, weight_hh, norms):
    """Every step of an LN-LSTM layer from the input's part of the gates (T, B, 4H)
    as one node (``tinynet.ops.recurrent.LSTMSequence``); returns (h_1..h_T as
    (T, B, H), c_T). The same steps as :func:`recurrent_step`."""
    return LSTMSequence.apply(x_gates, h, c, weight_hh, norms.hh.weight, norms.hh.bias,
                              norms.cell.weight, norms.cell.bias, (norms.hh.eps, norms.cell.eps))


def lstm_layer(x, h, c, weight_ih, weight_hh, bias_ih=None, bias_hh=None):
    """Every step of a plain LSTM layer over ``x`` (T, B, D) as one node
    (``tinynet.ops.lstm_layer.LSTMLayer``); returns (h_1..h_T as (T, B, H), c_T).
    The same steps as :func:`lstm_cell`."""
    return LSTMLayer.apply(x, h, c, weight_ih, weight_hh, bias_ih, bias_hh)


def lstm_cell(x, h, c, weight_ih, weight_hh, bias=None, norms=None, step=0):
    """One LSTM step; returns (h_t, c_t). ``bias`` is b_ih + b_hh (or None),
    ``norms`` a GateNorms (or None for the plain LSTM)."""
    return recurrent_step(input_gates(x, weight_ih, bias, norms, step), h, c, weight_hh,
                          norms, step)


def _combined_bias(bias_ih, bias_hh):
    return None if bias_ih is None else bias_ih + bias_hh


def _check_norm(norm):
    if norm not in NORMS:
        raise ValueError(f"norm must be one of {NORMS}, got {norm!r}")


def check_dropout(where: str, dropout, num_layers: int, stacklevel: int = 3) -> float:
    """The ``dropout`` of a multi-layer recurrent layer, a probability in [0, 1]. As
    PyTorch, warn when it is non-zero with one layer: it acts between layers only.
    ``stacklevel`` points the warning at the line that built the layer."""
    dropout = check_real(where, "dropout", dropout, 0, 1)
    if dropout > 0 and num_layers == 1:
        warnings.warn("dropout option adds dropout after all but last recurrent layer, so "
                      "non-zero dropout expects num_layers greater than 1, but got "
                      f"dropout={dropout} and num_layers={num_layers}", stacklevel=stacklevel)
    return dropout


def _make_weights(module, suffix, input_size, hidden_size, bias, dtype, device):
    """Register weight_ih/hh and bias_ih/hh (+ suffix) with U(-1/√H, 1/√H) init."""
    check_count(type(module).__name__, "input_size", input_size, low=0)
    check_count(type(module).__name__, "hidden_size", hidden_size)
    bound = init.fan_in_bound(hidden_size)
    shapes = {"weight_ih": (4 * hidden_size, input_size),
              "weight_hh": (4 * hidden_size, hidden_size)}
    if bias:
        shapes.update(bias_ih=(4 * hidden_size,), bias_hh=(4 * hidden_size,))
    for name, shape in shapes.items():
        tensor = init.uniform_(creation.empty(shape, dtype=dtype, device=device), -bound, bound)
        setattr(module, name + suffix, Parameter(tensor))
    if not bias:
        module.register_parameter("bias_ih" + suffix, None)
        module.register_parameter("bias_hh" + suffix, None)


def _zeros_state(batch, hidden_size, like):
    return creation.zeros(batch, hidden_size, dtype=like.dtype, device=like.device)


class LSTMCell(Module):
    """One LSTM step: ``h, c = cell(x, (h, c), step=t)``; parameters as PyTorch's."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, norm=None,
                 eps: float = 1e-5, max_steps: int = 784, dtype=None, device="cpu"):
        super().__init__()
        _check_norm(norm)
        self.input_size, self.hidden_size, self.norm = input_size, hidden_size, norm
        _make_weights(self, "", input_size, hidden_size, bias, dtype, device)
        self.norms = None if norm is None else GateNorms(norm, hidden_size, eps, max_steps,
                                                        dtype, device)

    def forward(self, x, hx=None, step: int = 0):
        """One step: ``x`` (B, input_size) and ``hx = (h, c)``, each (B, hidden_size), zeros
        when None, give the next ``(h, c)``: i, f, g, o = split(W x + b_ih + U h + b_hh),
        c' = σ(f) ⊙ c + σ(i) ⊙ tanh(g), h' = σ(o) ⊙ tanh(c'). With ``norm='layer'``,
        the paper's LN-LSTM: gates = LN(W x) + LN(U h) + b, h' = σ(o) ⊙ tanh(LN(c')).
        ``step`` picks the statistics of ``norm='batch'``.
        """
        if x.ndim != 2 or x.shape[1] != self.input_size:
            raise ValueError(
                f"LSTMCell: expected input (batch, {self.input_size}), got shape {tuple(x.shape)}")
        batch = x.shape[0]
        if hx is None:
            hx = (_zeros_state(batch, self.hidden_size, x),) * 2
        for name, t in zip(("h", "c"), hx, strict=True):
            if tuple(t.shape) != (batch, self.hidden_size):
                raise ValueError(
                    f"LSTMCell: state {name} has shape {tuple(t.shape)}, expected "
                    f"({batch}, {self.hidden_size})")
        return lstm_cell(x, hx[0], hx[1], self.weight_ih, self.weight_hh,
                         _combined_bias(self.bias_ih, self.bias_hh), self.norms, step)

    def extra_repr(self):
        return f"{self.input_size}, {self.hidden_size}, norm={self.norm!r}"


class LSTM(Module):
    """A multi-layer LSTM over a sequence; returns ``output, (h_n, c_n)``.

    Input (T, B, I), or (B, T, I) with ``batch_first``; optional initial state
    ``(h_0, c_0)`` each (num_layers, B, H). Parameters are named as PyTorch's
    (``weight_ih_l0`` ...), so weights can be copied from ``torch.nn.LSTM``.
    ``dropout`` (as PyTorch's) zeroes elements of each layer's output but the
    last before the next layer reads it, in training mode only.
    """

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 norm=None, eps: float = 1e-5, max_steps: int = 784, dtype=None, device="cpu"):
        super().__init__()
        _check_norm(norm)
        check_count("LSTM", "num_layers", num_layers)
        self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, num_layers
        self.batch_first, self.norm = batch_first, norm
        self.dropout = check_dropout("LSTM", dropout, num_layers)
        for layer in range(num_layers):
            layer_input = input_size if layer == 0 else hidden_size
            _make_weights(self, f"_l{layer}", layer_input, hidden_size, bias, dtype, device)
            norms = None if norm is None else GateNorms(norm, hidden_size, eps, max_steps,
                                                       dtype, device)
            setattr(self, f"norms_l{layer}", norms)

    def _check_input(self, x, hx):
        if x.ndim != 3 or x.shape[2] != self.input_size:
            layout = "(batch, seq, input)" if self.batch_first else "(seq, batch, input)"
            raise ValueError(
                f"LSTM: expected input {layout} with input size {self.input_size}, got "
                f"shape {tuple(x.shape)}")
        batch = x.shape[0] if self.batch_first else x.shape[1]
        if x.shape[1 if self.batch_first else 0] == 0:
            raise ValueError("LSTM: expected a sequence of at least one step, got a "
                             f"sequence of length 0 (input shape {tuple(x.shape)})")
        expected = (self.num_layers, batch, self.hidden_size)
        if hx is not None:
            for name, t in zip(("h_0", "c_0"), hx, strict=True):
                if tuple(t.shape) != expected:
                    raise ValueError(
                        f"LSTM: initial state {name} has shape {tuple(t.shape)}, expected "
                        f"{expected}")
        return batch

    def forward(self, x, hx=None):
        """``x`` (T, B, input_size), or (B, T, input_size) with ``batch_first``, and the
        optional ``hx = (h_0, c_0)``, each (num_layers, B, hidden_size), zeros when None.
        Returns ``output, (h_n, c_n)``: the last layer's h at every step, (T, B,
        hidden_size) (or batch first), and each layer's final state, (num_layers, B,
        hidden_size). The step is LSTMCell's.
        """
        batch = self._check_input(x, hx)
        time_axis = 1 if self.batch_first else 0
        sequence = x
        final_h, final_c = [], []
        for layer in range(self.num_layers):
            if layer > 0:
                sequence = F.dropout(sequence, self.dropout, self.training)
            if hx is None:
                h = c = _zeros_state(batch, self.hidden_size, x)
            else:
                h, c = hx[0][layer], hx[1][layer]
            weight_ih, weight_hh, bias_ih, bias_hh = (
                getattr(self, f"{name}_l{layer}")
                for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"))
            norms = getattr(self, f"norms_l{layer}")
            if norms is None:            # one node: a product over [x_t; h_{t-1}; 1] a step
                outputs, c = lstm_layer(sequence.transpose(0, time_axis), h, c, weight_ih,
                                        weight_hh, bias_ih, bias_hh)
                h = outputs[-1]
                sequence = outputs.transpose(0, time_axis)
            elif norms.stepwise:         # per-step batch statistics
                bias = _combined_bias(bias_ih, bias_hh)
                steps = [input_gates(x_t, weight_ih, bias, norms, t)
                         for t, x_t in enumerate(sequence.unbind(time_axis))]
                outputs = []
                for t, x_gates in enumerate(steps):
                    h, c = recurrent_step(x_gates, h, c, weight_hh, norms, t)
                    outputs.append(h)
                sequence = stack(outputs, dim=time_axis)
            else:            # all input products at once, then every step in one node
                x_gates = input_gates(sequence, weight_ih, _combined_bias(bias_ih, bias_hh),
                                      norms)
                outputs, c = lstm_sequence(x_gates.transpose(0, time_axis), h, c, weight_hh,
                                           norms)
                h = outputs[-1]
                sequence = outputs.transpose(0, time_axis)
            final_h.append(h)
            final_c.append(c)
        return sequence, (stack(final_h), stack(final_c))

    def flatten_parameters(self):
        """Nothing to do: PyTorch packs the weights into one buffer for cuDNN here;
        tinynet's weights are separate arrays. Kept so PyTorch code runs unchanged."""

    def extra_repr(self):
        dropout = f", dropout={self.dropout}" if self.dropout else ""
        return (f"{self.input_size}, {self.hidden_size}, num_layers={self.num_layers}, "
                f"batch_first={self.batch_first}{dropout}, norm={self.norm!r}")
