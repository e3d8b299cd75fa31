"""The kernel ladder: for each device, the normalization kernels from the spec up.

Every rung is a module with the calling convention of :mod:`reference`::

    layer_norm_forward(x, gain, bias, eps) -> (y, mean, rstd)
    layer_norm_backward(dy, x, mean, rstd, gain) -> (dx, dgain, dbias)
    rms_norm_forward(x, gain, eps) -> (y, rstd)
    rms_norm_backward(dy, x, rstd, gain) -> (dx, dgain)

and is tested against the reference on the same cases. A rung adds one idea to
the rung below it; where it does not implement a kernel, the rung below's is
used. The backends run the DEFAULT rung of their device (the simplest one whose
training step is about as fast as the fastest's: ``benchmarks/kernel_ladder.py``,
``benchmarks/train_step.py``); ``tinynet.use_kernels(name)`` or
``TINYNET_KERNELS=name`` picks another, for study and A/B comparison.

This folder is the ladder: ``reference.py``, the numbered rungs, each of which
``def``-ines its kernels (they check their arguments by ``_arguments.py`` and run
the rung's compiled loops by ``_cpu_rung.py`` or ``_cuda_rung.py``), and the
other helpers the rungs share (the files starting with ``_``).
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass

__all__ = ["Rung", "LADDERS", "DEFAULT", "NORM_KERNELS", "rung_names", "kernel_target",
           "kernel_function"]

NORM_KERNELS = ("layer_norm_forward", "layer_norm_backward", "rms_norm_forward",
                "rms_norm_backward")


@dataclass(frozen=True)
class Rung:
    name: str
    module: str                   # importable name of the module with the kernels
    idea: str                     # what the rung adds to the one below
    kernels: tuple = NORM_KERNELS

    def target(self, kernel: str) -> str:
        return f"{self.module}:{kernel}"


REFERENCE = Rung("reference", "tinynet.kernels.ladder.reference",
                 "the spec: NumPy (or CuPy) array code, next to the paper's equations")

LADDERS = {
    "cpu": (
        REFERENCE,
        Rung("textbook", "tinynet.kernels.ladder.cpu_1_textbook",
             "compiled loops: rows in parallel, three passes per row, float64 sums"),
        Rung("vectorized", "tinynet.kernels.ladder.cpu_2_vectorized",
             "row sums the compiler may reorder, so that it vectorizes them"),
        Rung("pipelined", "tinynet.kernels.ladder.cpu_3_pipelined",
             "fewer passes over a row: the loop that finishes a row starts the next"),
        Rung("recycled", "tinynet.kernels.ladder.cpu_4_recycled",
             "outputs in pooled memory, whose pages are already mapped"),
        Rung("typed", "tinynet.kernels.ladder.cpu_5_typed",
             "drivers typed exactly, checking their arguments in compiled code",
             ("layer_norm_forward", "layer_norm_backward")),
    ),
    "cuda": (
        REFERENCE,
        Rung("block", "tinynet.kernels.ladder.cuda_1_block",
             "a block per row, its threads' sums added by a tree in shared memory"),
        Rung("warp", "tinynet.kernels.ladder.cuda_2_warp",
             "a warp per row, its threads' sums added by warp shuffles"),
        Rung("held", "tinynet.kernels.ladder.cuda_3_held",
             "the row held in registers, loaded at once; a warp or a block per row",
             ("layer_norm_forward", "layer_norm_backward")),
        Rung("vectors", "tinynet.kernels.ladder.cuda_4_vectors",
             "held rows loaded and stored 16 bytes at a time, where the arrays are aligned",
             ("layer_norm_forward", "layer_norm_backward")),
    ),
}

DEFAULT = {"cpu": "vectorized", "cuda": "held"}


def rung_names(device: str) -> list[str]:
    return [rung.name for rung in LADDERS[device]]


def kernel_target(device: str, rung_name: str, kernel: str) -> str:
    """``"module:function"`` of ``kernel`` on rung ``rung_name`` of ``device``: the
    rung's own, else that of the nearest rung below that has it."""
    ladder = LADDERS[device]
    names = rung_names(device)
    if rung_name not in names:
        raise ValueError(f"no kernel rung {rung_name!r} on {device}; its rungs are "
                         f"{', '.join(names)}")
    for rung in reversed(ladder[:names.index(rung_name) + 1]):
        if kernel in rung.kernels:
            return rung.target(kernel)
    raise ValueError(f"no rung of {device} up to {rung_name!r} has a kernel {kernel!r}")


def kernel_function(device: str, rung_name: str, kernel: str):
    """The function :func:`kernel_target` names, imported."""
    module, _, function = kernel_target(device, rung_name, kernel).partition(":")
    return getattr(importlib.import_module(module), function)
