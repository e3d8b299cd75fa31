"""The paper's models, shared by the examples, the benchmarks and the tests."""
from __future__ import annotations

from . import nn

__all__ = ["MLP", "SequenceClassifier", "NORMS"]

NORMS = ("none", "batch", "layer")


def _norm_layer(norm: str, features: int, **options):
    if norm == "layer":
        return nn.LayerNorm(features)
    if norm == "batch":
        return nn.BatchNorm1d(features, **options)
    if norm == "none":
        return None
    raise ValueError(f"norm must be one of {NORMS}, got {norm!r}")


class MLP(nn.Sequential):
    """The permutation-invariant MNIST net of the paper: 784-1000-1000-10 with
    ReLU, the summed inputs of each *hidden* layer normalized before the
    nonlinearity (never the softmax layer)."""

    def __init__(self, norm: str = "layer", sizes=(784, 1000, 1000, 10), **norm_options):
        layers = []
        for fan_in, fan_out in zip(sizes[:-2], sizes[1:-1], strict=True):
            layers.append(nn.Linear(fan_in, fan_out))
            normalization = _norm_layer(norm, fan_out, **norm_options)
            if normalization is not None:
                layers.append(normalization)
            layers.append(nn.ReLU())
        layers.append(nn.Linear(sizes[-2], sizes[-1]))
        super().__init__(*layers)
        self.norm = norm


class SequenceClassifier(nn.Module):
    """An LSTM over a sequence, classifying from the last hidden state.

    ``norm`` is 'none', 'layer' (the paper's LN-LSTM) or 'batch' (BN-LSTM).
    Input (B, T, input_size), batch first.
    """

    def __init__(self, input_size: int = 28, hidden_size: int = 128, classes: int = 10,
                 norm: str = "layer", max_steps: int = 784):
        super().__init__()
        _norm_layer(norm, 1)                     # validates the name
        self.lstm = nn.LSTM(input_size, hidden_size, batch_first=True,
                            norm=None if norm == "none" else norm, max_steps=max_steps)
        self.head = nn.Linear(hidden_size, classes)

    def forward(self, x):
        _, (h, _) = self.lstm(x)
        return self.head(h[-1])
