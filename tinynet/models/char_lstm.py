"""A character-level LSTM language model (char-rnn's, Karpathy 2015), plain or the
paper's LN-LSTM, with the GPT's calling convention.

    x = embed(idx)                       a vector per character (B, T, E)
    h_1..h_T = LSTM(x)                   ``norm=None`` or ``'layer'`` (Ba et al., Sec. 3.1)
    logits = head(h_t)                   the next character's scores at every position

``model(idx)`` gives the logits at the last position (B, 1, vocab);
``model(idx, targets)`` the logits at every position and the mean
cross-entropy (targets equal to -1 ignored), exactly as :class:`GPT`.

Sampling is the GPT's loop (:mod:`tinynet.models.generation`); the LSTM
carries its state (h, c) from call to call, so each new character costs one
step (:meth:`CharLSTM.next_logits`). :func:`lstm_params` counts the parameters of an
LSTM model in closed form and :func:`match_hidden_size` picks the hidden size
that gives a target count, to compare an LSTM with a GPT of the same size.
"""
from __future__ import annotations

from .. import nn
from ..nn import functional as F
from .generation import configure_adamw, generate

__all__ = ["CharLSTM", "LSTM_NORMS", "lstm_params", "match_hidden_size"]

LSTM_NORMS = (None, "layer")


# ------------------------------------------------------------------ the model

def _check_norm(norm):
    if norm not in LSTM_NORMS:
        raise ValueError(f"CharLSTM: norm must be one of {LSTM_NORMS}, got {norm!r}")


class CharLSTM(nn.Module):
    """Embedding, a ``num_layers`` LSTM (batch first) and a linear output layer.

    ``embedding_dim`` defaults to ``hidden_size``; ``dropout`` acts on the LSTM's
    output before the output layer. Parameters are initialised as PyTorch's
    layers are (the LSTM's U(-1/√H, 1/√H), the embedding's N(0, 1)).
    """

    def __init__(self, vocab_size: int, hidden_size: int, num_layers: int = 1, norm=None,
                 embedding_dim=None, dropout: float = 0.0):
        super().__init__()
        _check_norm(norm)
        embedding_dim = hidden_size if embedding_dim is None else embedding_dim
        self.vocab_size = vocab_size
        self._config = dict(vocab_size=vocab_size, hidden_size=hidden_size,
                            num_layers=num_layers, norm=norm, embedding_dim=embedding_dim,
                            dropout=dropout)
        self.embed = nn.Embedding(vocab_size, embedding_dim)
        self.lstm = nn.LSTM(embedding_dim, hidden_size, num_layers, batch_first=True,
                            norm=norm)
        self.drop = nn.Dropout(dropout)
        self.head = nn.Linear(hidden_size, vocab_size)

    def get_config(self) -> dict:
        """The constructor's arguments: ``CharLSTM(**model.get_config())`` is the same model."""
        return dict(self._config)

    def get_num_params(self, non_embedding: bool = True) -> int:
        """The number of parameters. An LSTM has no position embeddings, the part
        GPT.get_num_params leaves out, so ``non_embedding`` (GPT's signature) removes
        nothing: both give every parameter."""
        return sum(p.numel() for p in self.parameters())

    def features(self, idx, hx=None):
        """The LSTM's output (B, T, H) for token ids (B, T), and its last state."""
        output, hx = self.lstm(self.embed(idx), hx)
        return self.drop(output), hx

    def forward(self, idx, targets=None):
        """``idx`` (B, T) character ids. Without ``targets``: ``(logits, None)``, the logits
        of the next character at the last position, (B, 1, vocab_size). With ``targets``
        (B, T): the logits at every position, (B, T, vocab_size), and the mean
        cross-entropy (-1 ignored), a 0-d tensor.
        """
        if idx.ndim != 2:
            raise ValueError(f"CharLSTM: expected token ids (batch, steps), got shape "
                             f"{tuple(idx.shape)}")
        x, _ = self.features(idx)
        if targets is None:
            return self.head(x[:, -1:, :]), None
        logits = self.head(x)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1),
                               ignore_index=-1)
        return logits, loss

    def configure_optimizers(self, weight_decay: float, learning_rate: float, betas=(0.9, 0.95)):
        """AdamW grouped as GPT.configure_optimizers: decay on the matrices only."""
        return configure_adamw(self, weight_decay, learning_rate, betas)

    def next_logits(self):
        """A ``next_logits`` for :func:`generate` that carries (h, c) between calls:
        the first call reads the whole prompt, each later one only the new tokens."""
        state = {"hx": None, "seen": 0}

        def next_logits(idx):
            x, state["hx"] = self.features(idx[:, state["seen"]:], state["hx"])
            state["seen"] = idx.shape[1]
            return self.head(x[:, -1, :])
        return next_logits

    def generate(self, idx, max_new_tokens: int, temperature: float = 1.0, top_k=None,
                 generator=None):
        """As GPT.generate: ``max_new_tokens`` tokens appended to ``idx`` (B, T), drawn
        at ``temperature`` (from the ``top_k`` most likely, if given). The context is
        unbounded: the state carries everything read so far."""
        return generate(self.next_logits(), idx, max_new_tokens, temperature, top_k, generator)


# -------------------------------------------------------- matching a parameter count

def lstm_params(vocab_size: int, hidden_size: int, num_layers: int = 1, norm=None,
                embedding_dim=None) -> int:
    """The parameters of ``CharLSTM(vocab_size, hidden_size, num_layers, norm,
    embedding_dim)``, in closed form: the embedding V·E; per layer 4H·(input + H)
    weights and two 4H biases, plus for the LN-LSTM two LayerNorms over 4H and one
    over H, each with gain and bias (18H); the output layer H·V + V."""
    _check_norm(norm)
    embedding_dim = hidden_size if embedding_dim is None else embedding_dim
    h = hidden_size
    total = vocab_size * embedding_dim + h * vocab_size + vocab_size
    for layer in range(num_layers):
        inputs = embedding_dim if layer == 0 else h
        total += 4 * h * (inputs + h) + 8 * h + (18 * h if norm == "layer" else 0)
    return total


def match_hidden_size(num_params: int, vocab_size: int, num_layers: int = 1, norm=None,
                      embedding_dim=None, tolerance: float = 0.1) -> int:
    """The hidden size whose CharLSTM has the parameter count closest to
    ``num_params``; a ValueError if even that one is off by more than ``tolerance``
    (a fraction of ``num_params``)."""
    def count(h):
        return lstm_params(vocab_size, h, num_layers, norm, embedding_dim)
    if num_params < 1:
        raise ValueError(f"match_hidden_size: num_params must be positive, got {num_params}")
    hidden = 1
    while count(hidden) < num_params:       # the count grows with the hidden size
        hidden *= 2
    low, high = hidden // 2, hidden         # count(low) < num_params <= count(high), or low 0
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if count(middle) < num_params else (low, middle)
    best = min((h for h in (low, high) if h >= 1), key=lambda h: abs(count(h) - num_params))
    error = abs(count(best) - num_params) / num_params
    if error > tolerance:
        raise ValueError(
            f"match_hidden_size: no hidden size gives {num_params} parameters within "
            f"{tolerance:.0%} (the closest, {best}, gives {count(best)})")
    return best
