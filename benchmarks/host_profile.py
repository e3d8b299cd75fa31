"""Where a LayerNorm kernel call spends its time on the host, by package and function.

    python benchmarks/host_profile.py [--device cpu|cuda] [--shape ROWS H] [--calls N] [--top K]

On a GPU, a small batch costs more on the host than on the device: on the H200
a Numba CUDA forward at (32768, 1024) made its caller wait 478 µs for 135 µs
of GPU time, and the backward at (65536, 256) 1063 µs for 131 µs
(benchmarks/layernorm.py). This runs ``layer_norm_forward`` and
``layer_norm_backward`` of ``tinynet.kernels.ladder.cpu_5_typed`` (the top CPU rung)
or ``tinynet.kernels.ladder.cuda_3_held`` (float32, one thread) N times under cProfile and
prints, per call: the time without the profiler, the profiled time by package
(tinynet, numba, cupy, numpy, Python's own built-ins, other) and the functions
with the most time of their own. cProfile adds about a microsecond to each
Python call it records, so the shares say more than the absolute numbers. On a
GPU the calls are queued and the device is synchronized once, after the last:
the time is the host's. (With ``NUMBA_ENABLE_CUDASIM=1``, ``--device cuda``
runs the simulator on NumPy arrays: a way to try this script without a GPU,
nothing more.)
"""
from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
import time

import numba
from numba.core.dispatcher import Dispatcher

sys.path.insert(0, os.path.dirname(__file__))
from common import pin_threads, print_table  # noqa: E402
from layernorm import EPS, layer_norm_inputs  # noqa: E402

PACKAGES = (("tinynet", ("/tinynet/", "/kernels/")), ("numba", ("/numba",)),
            ("cupy", ("/cupy",)), ("numpy", ("/numpy/",)), ("built-ins", ("~",)))


def package_of(filename: str, function: str, kernels) -> str:
    """The package a function belongs to; a Numba-compiled function of the
    kernels module (a CPU driver: dispatch and machine code) counts apart."""
    if isinstance(getattr(kernels, function, None), Dispatcher):
        return "compiled (Numba)"
    for package, markers in PACKAGES:
        if any(marker in filename for marker in markers):
            return package
    return "other"


def kernel_calls(device: str, shape):
    """(forward, backward, synchronize) closures over float32 inputs on
    ``device``, and the kernels module."""
    import numpy as np
    xp, synchronize = np, lambda: None                  # noqa: E731
    if device == "cuda" and numba.config.ENABLE_CUDASIM:
        # NumPy arrays through the simulator: only to try this script without a GPU.
        from tinynet.kernels.ladder import cuda_3_held as kernels
    elif device == "cuda":
        import cupy

        from tinynet.kernels.ladder import cuda_3_held as kernels
        xp, synchronize = cupy, cupy.cuda.get_current_stream().synchronize
    else:
        from tinynet.kernels.ladder import cpu_5_typed as kernels
    x, gain, bias, dy = layer_norm_inputs(xp, shape)
    _, mean, rstd = kernels.layer_norm_forward(x, gain, bias, EPS)    # compiles
    kernels.layer_norm_backward(dy, x, mean, rstd, gain)
    synchronize()
    return (lambda: kernels.layer_norm_forward(x, gain, bias, EPS),
            lambda: kernels.layer_norm_backward(dy, x, mean, rstd, gain), synchronize, kernels)


def seconds_per_call(fn, synchronize, calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    synchronize()
    return (time.perf_counter() - start) / calls


def profile(fn, synchronize, calls: int) -> pstats.Stats:
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(calls):
        fn()
    synchronize()
    profiler.disable()
    return pstats.Stats(profiler)


def report(title: str, fn, synchronize, kernels, calls: int, top: int) -> None:
    plain_us = min(seconds_per_call(fn, synchronize, calls) for _ in range(3)) * 1e6
    stats = profile(fn, synchronize, calls)
    # stats.stats: {(file, line, function): (primitive calls, calls, own time, cumulative, callers)}
    entries = [(key, row[1] / calls, row[2] / calls * 1e6) for key, row in stats.stats.items()]
    profiled_us = sum(own for _, _, own in entries)
    by_package: dict[str, float] = {}
    for (filename, _, function), _, own in entries:
        package = package_of(filename, function, kernels)
        by_package[package] = by_package.get(package, 0.0) + own
    print_table(f"{title}: {plain_us:.1f} µs per call without the profiler, "
                f"{profiled_us:.1f} µs with it", ["package", "µs per call", "share"],
                [[package, us, f"{us / profiled_us:.0%}"]
                 for package, us in sorted(by_package.items(), key=lambda kv: -kv[1])])
    rows = []
    for (filename, line, function), per_call, own in sorted(entries, key=lambda e: -e[2])[:top]:
        where = "built-in" if filename == "~" else f"{_short(filename)}:{line}"
        rows.append([function, where, per_call, own])
    print_table(f"{title}: the {top} functions with the most time of their own",
                ["function", "where", "calls per call", "µs per call"], rows)


def _short(filename: str) -> str:
    """The path from the package folder on (site-packages/numba/... -> numba/...)."""
    parts = filename.replace("\\", "/").split("/")
    for i, part in enumerate(parts):
        if part in ("tinynet", "kernels", "numba", "numba_cuda", "cupy", "numpy"):
            return "/".join(parts[i:])
    return parts[-1]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--shape", type=int, nargs=2, default=(64, 1024),
                        metavar=("ROWS", "H"))
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--top", type=int, default=12)
    args = parser.parse_args()
    pin_threads(1)
    shape = tuple(args.shape)
    forward, backward, synchronize, kernels = kernel_calls(args.device, shape)
    for direction, fn in (("forward", forward), ("backward", backward)):
        report(f"{args.device} {direction} {shape}", fn, synchronize, kernels, args.calls,
               args.top)


if __name__ == "__main__":
    main()
