"""The paper's MNIST net: an MLP whose hidden layers are normalized (or not)."""
from __future__ import annotations

from .. import nn

__all__ = ["MLP", "NORMS", "norm_layer"]

NORMS = ("none", "batch", "layer")
"""The names :func:`norm_layer` (and the MLP's ``norm``) accept."""


def norm_layer(norm: str, features: int, **options):
    """The layer of a norm name for ``features`` units (None for 'none')."""
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
            normalization = norm_layer(norm, fan_out, **norm_options)
            if normalization is not None:
                layers.append(normalization)
            layers.append(nn.ReLU())
        layers.append(nn.Linear(sizes[-2], sizes[-1]))
        super().__init__(*layers)
        self.norm = norm
