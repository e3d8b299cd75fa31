"""The paper's recurrent classifier: an LSTM (plain, LN or BN) read by a linear layer."""
from __future__ import annotations

from .. import nn
from .mlp import norm_layer

__all__ = ["SequenceClassifier"]


class SequenceClassifier(nn.Module):
    """An LSTM over a sequence, classifying from the last hidden state.

    ``norm`` is 'none', 'layer' (the paper's LN-LSTM) or 'batch' (BN-LSTM).
    Input (B, T, input_size), batch first.
    """

    def __init__(self, input_size: int = 28, hidden_size: int = 128, classes: int = 10,
                 norm: str = "layer", max_steps: int = 784):
        super().__init__()
        norm_layer(norm, 1)                     # validates the name
        self.lstm = nn.LSTM(input_size, hidden_size, batch_first=True,
                            norm=None if norm == "none" else norm, max_steps=max_steps)
        self.head = nn.Linear(hidden_size, classes)

    def forward(self, x):
        """Logits (B, classes) from the last layer's final hidden state, for ``x``
        (B, T, input_size).
        """
        _, (h, _) = self.lstm(x)
        return self.head(h[-1])
