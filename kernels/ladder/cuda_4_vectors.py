"""CUDA rung 4, "vectors": a row's elements loaded and stored 16 bytes at a time.

The idea this rung adds to rung 3 (``cuda_3_held``, "held"): fewer, wider memory
transactions. A held-row kernel is bound by the bytes it has on their way from
memory at once; a thread that loads 4 bytes per instruction keeps fewer in
flight than one that loads 16 (PyTorch's and llm.c's LayerNorm kernels load
``float4``). Here each thread holds its elements in runs of adjacent columns, 4
float32 or 2 float64, and loads or stores each run in one instruction
(``_cuda_vectors``).

A 16-byte access must start on a 16-byte boundary, so the runs are single
accesses only where every array's rows start on one: each array starts on a
16-byte boundary and H is a whole number of runs. Otherwise, and where a
thread holds fewer elements than a run, the kernels fall back to one element
per access, as in rung 3; rows too long to hold are streamed as there.

The kernels are rung 3's, compiled for ``lanes`` elements per access; only the
launch differs (``Launch.vector_access``). LayerNorm only (the ladder gives
rung 2's RMSNorm). Not the CuPy backend's default: no GPU timing has shown it
faster than rung 3 yet (``benchmarks/kernel_ladder.py``).
"""
from __future__ import annotations

import dataclasses
import functools

from . import cuda_3_held as held
from ._cuda_launch import Launch

__all__ = ["layer_norm_forward", "layer_norm_backward", "default_launch"]


@functools.lru_cache(maxsize=None)
def _with_vector_access(launch: Launch) -> Launch:
    return dataclasses.replace(launch, vector_access=True)


def default_launch() -> Launch:
    """Rung 3's default launch, with 16-byte accesses where the arrays allow them."""
    return _with_vector_access(held.default_launch())


def layer_norm_forward(x, gain, bias, eps):
    """Normalize each row of ``x`` (rows, H); return ``(y, mean, rstd)``, as
    :func:`tinynet.kernels.ladder.cuda_3_held.layer_norm_forward`. One launch."""
    return held._forward(x, gain, bias, eps, default_launch())


def layer_norm_backward(dy, x, mean, rstd, gain):
    """Gradients of :func:`layer_norm_forward`: ``(dx, dgain, dbias)``, as
    :func:`tinynet.kernels.ladder.cuda_3_held.layer_norm_backward`. Two launches."""
    return held._backward(dy, x, mean, rstd, gain, default_launch())
