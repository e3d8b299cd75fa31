"""What tinynet lacks fails by the name a PyTorch program asked for.

Each public module of tinynet that stands for one of PyTorch's (``tinynet.nn``
for ``torch.nn``...) ends with ``__getattr__ = lacking("torch.nn")``: Python
calls it only for a name the module does not have, and the error names it as
PyTorch's, ``tinynet has no torch.nn.Bilinear``.
"""
from __future__ import annotations

__all__ = ["lacking"]


def lacking(torch_module: str):
    """A module ``__getattr__`` raising AttributeError: tinynet has no TORCH_MODULE.NAME."""
    def __getattr__(name):
        if name.startswith("__"):           # Python's and tools' probes: a plain miss
            raise AttributeError(name)
        raise AttributeError(f"tinynet has no {torch_module}.{name}")
    return __getattr__
