"""``torch.accelerator``: the one accelerator a program may use, here CUDA through CuPy.
"""
from __future__ import annotations

from . import cuda as _cuda
from .devices import device
from .lacking import lacking

__all__ = ["is_available", "current_accelerator", "device_count", "synchronize"]


def is_available() -> bool:
    """Whether there is an accelerator tinynet can compute on (a CUDA GPU)."""
    return _cuda.is_available()


def current_accelerator(check_available: bool = False):
    """``device("cuda")`` where tinynet has a GPU, else None."""
    return device("cuda") if is_available() else None


def device_count() -> int:
    """The number of accelerators tinynet can use (0 or 1)."""
    return _cuda.device_count()


def synchronize(device=None) -> None:
    """Wait for the accelerator's queued work."""
    _cuda.synchronize()

__getattr__ = lacking("torch.accelerator")
