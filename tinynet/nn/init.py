"""Parameter initialization, drawing from tinynet's seeded generator."""
from __future__ import annotations

import math

from ..backend import get_backend
from ..lacking import lacking

__all__ = ["uniform_", "normal_", "zeros_", "ones_", "constant_"]


def uniform_(tensor, low: float = 0.0, high: float = 1.0):
    """Fill ``tensor`` in place with U(low, high) samples; return it."""
    backend = get_backend(tensor.device)
    tensor.array[...] = backend.rng.uniform(low, high, tensor.shape).astype(tensor.dtype)
    return tensor


def normal_(tensor, mean: float = 0.0, std: float = 1.0):
    """Fill ``tensor`` in place with N(mean, std²) samples; return it (GPT-2 and
    nanoGPT initialise their weights with ``normal_(w, 0.0, 0.02)``)."""
    if not std >= 0:
        raise ValueError(f"normal_: std must be non-negative, got {std}")
    backend = get_backend(tensor.device)
    tensor.array[...] = backend.rng.normal(mean, std, tensor.shape).astype(tensor.dtype)
    return tensor


def constant_(tensor, value: float):
    """Fill ``tensor`` in place with ``value``; return it."""
    tensor.array[...] = value
    return tensor


def zeros_(tensor):
    """Fill ``tensor`` in place with zeros; return it (PyTorch's init of biases and of
    LayerNorm's bias).
    """
    return constant_(tensor, 0.0)


def ones_(tensor):
    """Fill ``tensor`` in place with ones; return it (the init of LayerNorm's gain)."""
    return constant_(tensor, 1.0)


def fan_in_bound(fan_in: int) -> float:
    """1/sqrt(fan_in): PyTorch's bound for Linear (kaiming_uniform with a=sqrt(5)
    gives the same for the weight) and for the LSTM's U(-1/sqrt(H), 1/sqrt(H))."""
    return 1.0 / math.sqrt(fan_in) if fan_in > 0 else 0.0

__getattr__ = lacking("torch.nn.init")
