"""Elman RNNs and GRUs, cells and multi-layer layers, as PyTorch's.

The Elman network (Elman, 1990, "Finding Structure in Time"): one step is ::

    h_t = tanh(W_ih x_t + b_ih + W_hh h_{t-1} + b_hh)          (or ReLU)

The gated recurrent unit (Cho et al., 2014, "Learning Phrase Representations
using RNN Encoder–Decoder"), with PyTorch's gate order r, z, n (the rows of
``weight_ih`` and ``weight_hh`` are [W_r; W_z; W_n]) ::

    r_t = σ(W_ir x_t + b_ir + W_hr h_{t-1} + b_hr)             reset gate
    z_t = σ(W_iz x_t + b_iz + W_hz h_{t-1} + b_hz)             update gate
    n_t = tanh(W_in x_t + b_in + r_t ⊙ (W_hn h_{t-1} + b_hn))   candidate
    h_t = (1 − z_t) ⊙ n_t + z_t ⊙ h_{t-1}

Cho et al. reset the state before the product, W_hn (r_t ⊙ h_{t-1}); PyTorch
(as cuDNN) resets the product, r_t ⊙ (W_hn h_{t-1} + b_hn), so that one
product U h serves all three gates. We follow PyTorch, so that weights copy
across; b_in and b_hn are then not interchangeable.

A cell's step is built from differentiable ops (linear, sigmoid, tanh, relu):
autograd derives its backward. A layer computes the input's products W_ih x_t +
b_ih of all steps at once, then runs the recurrence as one node with
backpropagation through time written out (tinynet/ops/rnn_sequence.py), the
same steps as the cell's (tests/test_rnn_gru.py checks both against PyTorch).
Init as PyTorch's: every weight and bias ~ U(−1/√H, 1/√H).
"""
from __future__ import annotations

from .. import creation
from ..hyperparameters import check_count
from ..ops import cat, stack
from ..ops.rnn_sequence import GRUSequence, RNNSequence
from ..tensor import Tensor
from . import functional as F
from . import init
from .module import Module, Parameter
from .recurrent import check_dropout

__all__ = ["RNNCell", "GRUCell", "RNN", "GRU", "rnn_step", "gru_step"]

NONLINEARITIES = ("tanh", "relu")


def rnn_step(x_part, h, weight_hh, bias_hh=None, nonlinearity="tanh"):
    """One Elman step from the input's part ``x_part`` = W_ih x_t + b_ih (B, H):
    h_t = act(x_part + W_hh h_{t-1} + b_hh), act tanh or relu."""
    pre = x_part + F.linear(h, weight_hh, bias_hh)
    return F.relu(pre) if nonlinearity == "relu" else F.tanh(pre)


def gru_step(x_part, h, weight_hh, bias_hh=None):
    """One GRU step from the input's part ``x_part`` = W_ih x_t + b_ih (B, 3H), the
    module docstring's equations."""
    x_r, x_z, x_n = x_part.chunk(3, dim=-1)
    h_r, h_z, h_n = F.linear(h, weight_hh, bias_hh).chunk(3, dim=-1)
    r = F.sigmoid(x_r + h_r)
    z = F.sigmoid(x_z + h_z)
    n = F.tanh(x_n + r * h_n)
    return (1 - z) * n + z * h


def _check_nonlinearity(where, nonlinearity):
    if nonlinearity not in NONLINEARITIES:
        raise ValueError(f"{where}: unknown nonlinearity {nonlinearity!r}, expected 'tanh' "
                         "or 'relu'")
    return nonlinearity


def _check_flag(where, name, value):
    if not isinstance(value, bool):
        raise TypeError(f"{where}: {name} must be a bool, got {type(value).__name__} {value!r}")
    return value


def _make_weights(module, suffix, gates, input_size, hidden_size, bias, device, dtype):
    """Register weight_ih, weight_hh (and bias_ih, bias_hh) + ``suffix``, each with
    ``gates * hidden_size`` rows, initialized U(−1/√H, 1/√H)."""
    bound = init.fan_in_bound(hidden_size)
    rows = gates * hidden_size
    shapes = {"weight_ih": (rows, input_size), "weight_hh": (rows, hidden_size)}
    if bias:
        shapes.update(bias_ih=(rows,), bias_hh=(rows,))
    for name, shape in shapes.items():
        tensor = creation.empty(shape, dtype=dtype, device=device)
        setattr(module, name + suffix, Parameter(init.uniform_(tensor, -bound, bound)))
    if not bias:
        module.register_parameter("bias_ih" + suffix, None)
        module.register_parameter("bias_hh" + suffix, None)


def _check_tensor(where, x, what):
    if not isinstance(x, Tensor):
        raise TypeError(f"{where}: {what} must be a Tensor, got {type(x).__name__}")
    if x.dtype.kind != "f":
        raise TypeError(f"{where}: {what} must be floating point, got {x.dtype}")


class _CellBase(Module):
    gates = 1

    def __init__(self, input_size, hidden_size, bias, device, dtype):
        super().__init__()
        where = type(self).__name__
        self.input_size = check_count(where, "input_size", input_size)
        self.hidden_size = check_count(where, "hidden_size", hidden_size)
        self.bias = _check_flag(where, "bias", bias)
        _make_weights(self, "", self.gates, input_size, hidden_size, bias, device, dtype)

    def forward(self, input, hx=None):
        """``input`` (B, input_size) or unbatched (input_size,) and ``hx`` of the same
        rank with hidden_size features (zeros when None) give the next hidden state
        (B, hidden_size) or (hidden_size,)."""
        where = type(self).__name__
        _check_tensor(where, input, "input")
        if input.ndim not in (1, 2) or input.shape[-1] != self.input_size:
            raise ValueError(f"{where}: expected input (batch, {self.input_size}) or "
                             f"({self.input_size},), got shape {tuple(input.shape)}")
        batched = input.ndim == 2
        x = input if batched else input.unsqueeze(0)
        if hx is None:
            h = creation.zeros(x.shape[0], self.hidden_size, dtype=x.dtype, device=x.device)
        else:
            _check_tensor(where, hx, "hx")
            expected = (x.shape[0], self.hidden_size) if batched else (self.hidden_size,)
            if tuple(hx.shape) != expected:
                raise ValueError(f"{where}: hidden state hx has shape {tuple(hx.shape)}, "
                                 f"expected {expected}")
            h = hx if batched else hx.unsqueeze(0)
        h = self._step(F.linear(x, self.weight_ih, self.bias_ih), h)
        return h if batched else h.squeeze(0)

    def extra_repr(self):
        bias = "" if self.bias else ", bias=False"
        return f"{self.input_size}, {self.hidden_size}{bias}"


class RNNCell(_CellBase):
    """One Elman step (Elman, 1990), as ``torch.nn.RNNCell``:
    h' = tanh(W_ih x + b_ih + W_hh h + b_hh), or ReLU with ``nonlinearity='relu'``.
    ``weight_ih`` (H, I), ``weight_hh`` (H, H), ``bias_ih``, ``bias_hh`` (H,)."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 nonlinearity: str = "tanh", device=None, dtype=None):
        nonlinearity = _check_nonlinearity("RNNCell", nonlinearity)
        super().__init__(input_size, hidden_size, bias, device, dtype)
        self.nonlinearity = nonlinearity

    def _step(self, x_part, h):
        return rnn_step(x_part, h, self.weight_hh, self.bias_hh, self.nonlinearity)

    def extra_repr(self):
        act = "" if self.nonlinearity == "tanh" else f", nonlinearity={self.nonlinearity}"
        return super().extra_repr() + act


class GRUCell(_CellBase):
    """One GRU step (Cho et al., 2014), as ``torch.nn.GRUCell``, gate order r, z, n:
    r = σ(W_ir x + b_ir + W_hr h + b_hr), z = σ(W_iz x + b_iz + W_hz h + b_hz),
    n = tanh(W_in x + b_in + r ⊙ (W_hn h + b_hn)), h' = (1 − z) ⊙ n + z ⊙ h.
    ``weight_ih`` (3H, I), ``weight_hh`` (3H, H), ``bias_ih``, ``bias_hh`` (3H,)."""

    gates = 3

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None,
                 dtype=None):
        super().__init__(input_size, hidden_size, bias, device, dtype)

    def _step(self, x_part, h):
        return gru_step(x_part, h, self.weight_hh, self.bias_hh)


class _RNNBase(Module):
    gates = 1

    def __init__(self, input_size, hidden_size, num_layers, bias, batch_first, dropout,
                 bidirectional, device, dtype):
        super().__init__()
        where = type(self).__name__
        self.input_size = check_count(where, "input_size", input_size)
        self.hidden_size = check_count(where, "hidden_size", hidden_size)
        self.num_layers = check_count(where, "num_layers", num_layers)
        self.bias = _check_flag(where, "bias", bias)
        self.batch_first = _check_flag(where, "batch_first", batch_first)
        self.bidirectional = _check_flag(where, "bidirectional", bidirectional)
        self.dropout = check_dropout(where, dropout, num_layers, stacklevel=4)
        directions = 2 if bidirectional else 1
        for layer in range(num_layers):     # PyTorch's order: l0, l0_reverse, l1, ...
            layer_input = input_size if layer == 0 else directions * hidden_size
            for suffix in ("", "_reverse")[:directions]:
                _make_weights(self, f"_l{layer}{suffix}", self.gates, layer_input,
                              hidden_size, bias, device, dtype)

    def _check_input(self, input, hx):
        """The input as (T, B, I), h_0 as (layers × directions, B, H) or None, and
        whether the input was batched."""
        where = type(self).__name__
        _check_tensor(where, input, "input")
        if input.ndim not in (2, 3) or input.shape[-1] != self.input_size:
            layout = "(batch, seq, input)" if self.batch_first else "(seq, batch, input)"
            raise ValueError(f"{where}: expected input {layout} or unbatched (seq, input) "
                             f"with input size {self.input_size}, got shape "
                             f"{tuple(input.shape)}")
        batched = input.ndim == 3
        x = input if batched else input.unsqueeze(1)
        if batched and self.batch_first:
            x = x.transpose(0, 1)
        if x.shape[0] == 0:
            raise ValueError(f"{where}: expected a sequence of at least one step, got input "
                             f"shape {tuple(input.shape)}")
        states = (2 if self.bidirectional else 1) * self.num_layers
        expected = (states, x.shape[1], self.hidden_size) if batched else (states,
                                                                         self.hidden_size)
        if hx is not None:
            _check_tensor(where, hx, "h_0")
            if tuple(hx.shape) != expected:
                raise ValueError(f"{where}: initial state h_0 has shape {tuple(hx.shape)}, "
                                 f"expected {expected} for input of shape "
                                 f"{tuple(input.shape)}")
            if not batched:
                hx = hx.unsqueeze(1)
        return x, hx, batched

    def forward(self, input, hx=None):
        """``input`` (T, B, input_size), (B, T, input_size) with ``batch_first``, or
        unbatched (T, input_size), and the optional ``h_0`` (num_layers × D, B,
        hidden_size) ((num_layers × D, hidden_size) unbatched; zeros when None), D = 2
        if bidirectional else 1. Returns ``output, h_n``: the last layer's states at
        every step (T, B, D × hidden_size), the two directions concatenated (or batch
        first, or unbatched), and each layer's and direction's final state.
        """
        x, hx, batched = self._check_input(input, hx)
        sequence, finals = x, []
        for layer in range(self.num_layers):
            if layer > 0:                  # between layers, in training mode only
                sequence = F.dropout(sequence, self.dropout, self.training)
            outputs = []
            for direction, suffix in enumerate(("", "_reverse")[:1 + self.bidirectional]):
                weight_ih, weight_hh, bias_ih, bias_hh = (
                    getattr(self, f"{name}_l{layer}{suffix}")
                    for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"))
                index = layer * (1 + self.bidirectional) + direction
                h = (creation.zeros(x.shape[1], self.hidden_size, dtype=x.dtype,
                                    device=x.device) if hx is None else hx[index])
                x_parts = F.linear(sequence, weight_ih, bias_ih)     # W_ih x_t + b_ih, all t
                out = self._sequence(x_parts, h, weight_hh, bias_hh, direction == 1)
                outputs.append(out)
                finals.append(out[0] if direction == 1 else out[-1])
            sequence = cat(outputs, dim=2) if self.bidirectional else outputs[0]
        h_n = stack(finals)
        if not batched:
            return sequence.squeeze(1), h_n.squeeze(1)
        return (sequence.transpose(0, 1) if self.batch_first else sequence), h_n

    def flatten_parameters(self):
        """Nothing to do: PyTorch packs the weights into one buffer for cuDNN here;
        tinynet's weights are separate arrays. Kept so PyTorch code runs unchanged."""

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        for name, default in (("num_layers", 1), ("bias", True), ("batch_first", False),
                              ("dropout", 0.0), ("bidirectional", False)):
            if getattr(self, name) != default:
                s += f", {name}={getattr(self, name)}"
        return s


class RNN(_RNNBase):
    """A multi-layer Elman RNN (Elman, 1990), as ``torch.nn.RNN``; returns
    ``output, h_n``. Each layer computes h_t = tanh(W_ih x_t + b_ih + W_hh h_{t-1} +
    b_hh) (ReLU with ``nonlinearity='relu'``), its input x_t being the previous
    layer's h_t, after dropout with probability ``dropout`` in training mode.
    ``bidirectional`` adds a second pass backwards in time per layer (parameters
    ``weight_ih_l0_reverse`` ...), its states concatenated with the forward ones.
    Parameters as PyTorch's: ``weight_ih_l{k}`` (H, I or D·H), ``weight_hh_l{k}``
    (H, H), ``bias_ih_l{k}``, ``bias_hh_l{k}`` (H,).
    """

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 nonlinearity: str = "tanh", bias: bool = True, batch_first: bool = False,
                 dropout: float = 0.0, bidirectional: bool = False, device=None, dtype=None):
        nonlinearity = _check_nonlinearity("RNN", nonlinearity)
        super().__init__(input_size, hidden_size, num_layers, bias, batch_first, dropout,
                         bidirectional, device, dtype)
        self.nonlinearity = nonlinearity

    def _sequence(self, x_parts, h, weight_hh, bias_hh, reverse):
        return RNNSequence.apply(x_parts, h, weight_hh, bias_hh, reverse, self.nonlinearity)


class GRU(_RNNBase):
    """A multi-layer GRU (Cho et al., 2014), as ``torch.nn.GRU``; returns
    ``output, h_n``. Each layer runs :class:`GRUCell`'s step (gate order r, z, n:
    n_t = tanh(W_in x_t + b_in + r_t ⊙ (W_hn h_{t-1} + b_hn)), h_t = (1 − z_t) ⊙ n_t +
    z_t ⊙ h_{t-1}), its input x_t being the previous layer's h_t, after dropout with
    probability ``dropout`` in training mode. ``bidirectional`` adds a second pass
    backwards in time per layer (parameters ``weight_ih_l0_reverse`` ...).
    Parameters as PyTorch's: ``weight_ih_l{k}`` (3H, I or D·H), ``weight_hh_l{k}``
    (3H, H), ``bias_ih_l{k}``, ``bias_hh_l{k}`` (3H,).
    """

    gates = 3

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, device=None, dtype=None):
        super().__init__(input_size, hidden_size, num_layers, bias, batch_first, dropout,
                         bidirectional, device, dtype)

    def _sequence(self, x_parts, h, weight_hh, bias_hh, reverse):
        return GRUSequence.apply(x_parts, h, weight_hh, bias_hh, reverse)
