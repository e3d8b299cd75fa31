"""The kernels (installed as ``tinynet.kernels``): the arithmetic under the ops.

Three parts:

* ``ladder/``: LayerNorm's and RMSNorm's kernels as a ladder. ``reference.py`` is
  the spec, plain NumPy/CuPy array code next to the paper's equations; above it,
  for each device, numbered rungs that each add one idea (``ladder/__init__.py``
  names them and each device's default; docs/kernels.md is the lesson):
  ``cpu_1_textbook`` … ``cpu_5_typed``, ``cuda_1_block`` … ``cuda_4_vectors``.
  Every rung exposes ``layer_norm_forward``/``layer_norm_backward`` (and, but for
  the top rungs, ``rms_norm_forward``/``rms_norm_backward``) on 2-D (rows, H)
  arrays; the files starting with ``_`` are the helpers the rungs share.
* ``ops/``: the other ops' compiled CPU kernels, each beside its spec
  (``adam_cpu.py`` and ``adam_spec.py``, ``gelu_cpu.py`` and ``gelu_spec.py``...).
* ``tables.py``: which function runs each kernel on each device, in one place;
  ``which(name)`` answers for one.

Nothing here is imported (or compiled) by ``import tinynet``: the tables are built
when a device is first used.
"""
from .tables import which

__all__ = ["which"]
