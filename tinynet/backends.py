"""``torch.backends``: the flags programs set and the queries they ask.

The flags (``cudnn.benchmark``, ``cuda.matmul.allow_tf32``...) are kept so that
programs can set them; tinynet computes the same way whatever they say (it has
no cuDNN, and computes float32 in float32). The queries answer for tinynet:
there is no MPS (Apple GPU) device, and no cuDNN.
"""
from __future__ import annotations

import types

from .lacking import lacking

__all__ = ["cudnn", "cuda", "mps"]


def _unavailable() -> bool:
    """False: tinynet does not have it."""
    return False


def _built() -> bool:
    """True: tinynet's CUDA support (CuPy) is part of it, used where a GPU is found."""
    return True


def _no_version():
    """None: there is no such library in tinynet."""
    return None


#: Apple's GPUs: tinynet has no MPS device.
mps = types.SimpleNamespace(is_available=_unavailable, is_built=_unavailable)
#: cuDNN's flags, kept and not used: tinynet has no cuDNN.
cudnn = types.SimpleNamespace(enabled=True, benchmark=False, deterministic=False,
                              allow_tf32=True, is_available=_unavailable, version=_no_version)
#: CUDA's flags, kept and not used.
cuda = types.SimpleNamespace(is_built=_built, matmul=types.SimpleNamespace(
    allow_tf32=False, allow_fp16_reduced_precision_reduction=True))

__getattr__ = lacking("torch.backends")
