"""``torch.utils``'s names that tinynet has: ``torch.utils.data`` is :mod:`tinynet.data`."""
from __future__ import annotations

from . import data
from .lacking import lacking

__all__ = ["data"]

__getattr__ = lacking("torch.utils")
