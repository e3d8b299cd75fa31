"""The normalization kernels (installed as ``tinynet.kernels``), as a ladder.

``reference`` is the spec, plain NumPy/CuPy array code. Above it, for each
device, rungs that each add one idea (``ladder`` names them and each device's
default; docs/kernels.md is the lesson):

* CPU: ``cpu_1_textbook``, ``cpu_2_vectorized``, ``cpu_3_pipelined``,
  ``cpu_4_recycled``, ``cpu_5_typed``;
* CUDA: ``cuda_1_block``, ``cuda_2_warp``, ``cuda_3_held`` (rows held in registers),
  ``cuda_4_vectors``.

Every rung exposes ``layer_norm_forward``/``layer_norm_backward`` (and, but for
the top rungs, ``rms_norm_forward``/``rms_norm_backward``) on 2-D (rows, H)
arrays. The other ops' kernels sit beside their specs (``cpu_adam`` and
``reference.adam_step``...). ``tables`` says which function runs each kernel on
each device, in one place; ``which(name)`` answers for one. Nothing here is
imported (or compiled) by ``import tinynet``: the tables are built when a device
is first used.
"""
from .tables import which

__all__ = ["which"]
