"""LayerNorm kernel speed: NumPy reference, Numba kernels and PyTorch, as ratios.

    python benchmarks/layernorm.py [--threads 1|2|both] [--cpu-only | --gpu-only]

CPU (float32): forward and forward+backward of the NumPy reference
(``tinynet.kernels.reference``), the Numba kernels (``tinynet.kernels.cpu``)
and ``torch.nn.functional.layer_norm`` (forward, then ``.backward(dy)``) on
(4096, 1024), (32768, 256), (256, 16384) and (64, 128), with 1 thread by
default (``--threads both`` adds a 2-thread table). Bandwidth counts the
minimal traffic: the forward reads x and writes y (2·rows·H·4 bytes), the
backward reads dy and x and writes dx (3·rows·H·4 bytes). It is compared with
this machine's copy (a = b) and triad (a = b + s·c) bandwidth, measured in the
same run with Numba loops over arrays far larger than the caches, on the same
number of threads.

GPU (only with CuPy and a CUDA GPU): the Numba CUDA kernels
(``tinynet.kernels.cuda``), the reference run on CuPy arrays (a composite of
CuPy array ops) and PyTorch on CUDA when it has it, float32, on (32768, 1024),
(8192, 4096) and (65536, 256). Kernel time comes from CUDA events, wall time
from the host clock after a synchronize; bandwidth is compared with a
device-to-device copy.

Targets (issue): Numba forward+backward ≥ 1.2x faster than PyTorch at
(4096, 1024), ≥ 4x at (32768, 256), ≥ 3x at (64, 128); forward ≥ 60 % and
backward ≥ 50 % of copy/triad bandwidth for H ≤ 1024; ≥ 5x faster than the
NumPy reference. The last table says which are met. Nothing here asserts.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from common import (median_time, median_times, pin_threads, print_table,  # noqa: E402
                    try_import_torch)

CPU_SHAPES = [(4096, 1024), (32768, 256), (256, 16384), (64, 128)]
GPU_SHAPES = [(32768, 1024), (8192, 4096), (65536, 256)]
EPS = 1e-5
BANDWIDTH_ELEMENTS = 1 << 26            # 256 MiB per float32 array: beyond the caches


def layer_norm_inputs(xp, shape, seed=0):
    """x, gain, bias and dy, float32, on the array module ``xp``."""
    rng = xp.random.default_rng(seed)
    x = rng.standard_normal(shape, dtype=xp.float32)
    gain = 1 + 0.1 * rng.standard_normal(shape[1], dtype=xp.float32)
    bias = 0.1 * rng.standard_normal(shape[1], dtype=xp.float32)
    dy = rng.standard_normal(shape, dtype=xp.float32)
    return x, gain, bias, dy


def forward_bytes(shape):
    return 2 * shape[0] * shape[1] * 4


def backward_bytes(shape):
    return 3 * shape[0] * shape[1] * 4


# ----------------------------------------------------------------------------
# CPU
# ----------------------------------------------------------------------------

def cpu_bandwidth():
    """(copy, triad) bandwidth in GB/s of Numba loops on the current threads."""
    import numba
    import numpy as np

    @numba.njit(parallel=True)
    def copy(dst, src):
        for i in numba.prange(src.size):
            dst[i] = src[i]

    @numba.njit(parallel=True)
    def triad(a, b, c, s):
        for i in numba.prange(a.size):
            a[i] = b[i] + s * c[i]

    a, b, c = (np.ones(BANDWIDTH_ELEMENTS, np.float32) for _ in range(3))
    nbytes = a.nbytes
    copy_s = median_time(lambda: copy(a, b), repeat=5)
    triad_s = median_time(lambda: triad(a, b, c, np.float32(0.5)), repeat=5)
    return 2 * nbytes / copy_s / 1e9, 3 * nbytes / triad_s / 1e9


def torch_layer_norm(torch, x, gain, bias, dy):
    """(forward, forward+backward) closures of torch.nn.functional.layer_norm."""
    xt, dyt = torch.from_numpy(x).requires_grad_(), torch.from_numpy(dy)
    wt = torch.from_numpy(gain).requires_grad_()
    bt = torch.from_numpy(bias).requires_grad_()
    layer_norm = torch.nn.functional.layer_norm

    def forward():
        with torch.no_grad():
            layer_norm(xt, x.shape[1:], wt, bt, EPS)

    def forward_backward():
        xt.grad = wt.grad = bt.grad = None
        layer_norm(xt, x.shape[1:], wt, bt, EPS).backward(dyt)
    return forward, forward_backward


def measure_cpu_shape(shape, torch):
    """Median seconds per call: {(implementation, 'forward'|'backward'|'both'): s}.

    Also ('fresh y', 'forward'): allocating an array of x's size and writing
    it once, the floor for any function that returns a new array (on Linux,
    an array of 32 MiB or more gets new pages from the kernel every time).
    """
    import numpy as np
    from tinynet.kernels import cpu, reference

    x, gain, bias, dy = layer_norm_inputs(np, shape)
    functions = {("fresh y", "forward"): lambda: np.empty_like(x).fill(0)}
    for name, kernels in (("reference", reference), ("numba", cpu)):
        _, mean, rstd = kernels.layer_norm_forward(x, gain, bias, EPS)

        def both(kernels=kernels):
            _, m, r = kernels.layer_norm_forward(x, gain, bias, EPS)
            kernels.layer_norm_backward(dy, x, m, r, gain)
        functions[name, "forward"] = lambda kernels=kernels: kernels.layer_norm_forward(
            x, gain, bias, EPS)
        functions[name, "backward"] = lambda kernels=kernels, m=mean, r=rstd: (
            kernels.layer_norm_backward(dy, x, m, r, gain))
        functions[name, "both"] = both
    if torch is not None:
        functions["torch", "forward"], functions["torch", "both"] = torch_layer_norm(
            torch, x, gain, bias, dy)
    return median_times(functions)


def cpu_tables(threads, torch):
    import numba
    numba.set_num_threads(threads)
    if torch is not None:
        torch.set_num_threads(threads)
    copy_bw, triad_bw = cpu_bandwidth()
    label = f"{threads} thread{'s' if threads > 1 else ''}"
    print_table(f"Memory bandwidth, {label} (Numba loops over 256 MiB float32 arrays)",
                ["copy GB/s", "triad GB/s"], [[copy_bw, triad_bw]])

    results = {shape: measure_cpu_shape(shape, torch) for shape in CPU_SHAPES}

    print_speed_table(f"CPU forward, float32, {label}", results, "forward",
                      ("fresh y", "forward"), "fresh y ms", "forward", forward_bytes,
                      copy_bw, triad_bw)
    print_speed_table(f"CPU forward+backward, float32, {label} (bandwidth: the backward alone)",
                      results, "both", ("numba", "backward"), "Numba bwd ms", "backward",
                      backward_bytes, copy_bw, triad_bw)
    print_targets(label, results, copy_bw, triad_bw)


def print_speed_table(title, results, timed, extra, extra_name, bandwidth_of, nbytes,
                      copy_bw, triad_bw):
    """One row per shape: the ``timed`` times of NumPy, Numba and torch, one
    ``extra`` time, the Numba GB/s of ``bandwidth_of`` (of copy, of triad) and
    the NumPy/Numba and torch/Numba ratios."""
    def ms(t, key):
        return t[key] * 1e3 if key in t else "n/a"

    def ratio(t, slower):
        return t[slower, timed] / t["numba", timed] if (slower, timed) in t else "n/a"

    rows = []
    for shape, t in results.items():
        gbs = nbytes(shape) / t["numba", bandwidth_of] / 1e9
        rows.append([str(shape), ms(t, ("reference", timed)), ms(t, ("numba", timed)),
                     ms(t, ("torch", timed)), ms(t, extra), gbs, gbs / copy_bw,
                     gbs / triad_bw, ratio(t, "reference"), ratio(t, "torch")])
    gbs_name = "Numba GB/s" if bandwidth_of == timed else "bwd GB/s"
    print_table(title, ["shape", "NumPy ms", "Numba ms", "torch ms", extra_name, gbs_name,
                        "of copy", "of triad", "NumPy/Numba", "torch/Numba"], rows)


def print_targets(label, results, copy_bw, triad_bw):
    """The issue's targets, measured: one line each, 'yes' or 'no'."""
    rows = []

    def target(what, measured, goal):
        rows.append([what, measured, goal, "yes" if measured >= goal else "no"])

    for shape, goal in (((4096, 1024), 1.2), ((32768, 256), 4.0), ((64, 128), 3.0)):
        t = results[shape]
        if ("torch", "both") in t:
            target(f"fwd+bwd torch/Numba {shape}", t["torch", "both"] / t["numba", "both"], goal)
    for shape, t in results.items():
        if shape[1] <= 1024:
            fwd = forward_bytes(shape) / t["numba", "forward"] / 1e9
            bwd = backward_bytes(shape) / t["numba", "backward"] / 1e9
            target(f"forward GB/s / max(copy, triad) {shape}", fwd / max(copy_bw, triad_bw), 0.6)
            target(f"backward GB/s / max(copy, triad) {shape}", bwd / max(copy_bw, triad_bw), 0.5)
    for shape, t in results.items():
        target(f"fwd+bwd NumPy/Numba {shape}", t["reference", "both"] / t["numba", "both"], 5.0)
    print_table(f"Targets, {label}", ["target", "measured", "goal", "met"], rows)


# ----------------------------------------------------------------------------
# GPU
# ----------------------------------------------------------------------------

def gpu_time(cupy, fn, repeat=20):
    """(median kernel ms from CUDA events, median wall ms) of ``fn``."""
    fn()
    cupy.cuda.get_current_stream().synchronize()
    start, stop = cupy.cuda.Event(), cupy.cuda.Event()
    kernel, wall = [], []
    for _ in range(repeat):
        t0 = time.perf_counter()
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        wall.append((time.perf_counter() - t0) * 1e3)
        kernel.append(cupy.cuda.get_elapsed_time(start, stop))
    return sorted(kernel)[repeat // 2], sorted(wall)[repeat // 2]


def gpu_tables(torch):
    from tinynet.backend import cuda_is_available
    if not cuda_is_available():
        print("\nGPU: not measured (needs CuPy and a CUDA GPU)")
        return
    import cupy
    from tinynet.kernels import cuda as cuda_kernels
    from tinynet.kernels import reference

    src = cupy.ones(BANDWIDTH_ELEMENTS, cupy.float32)
    dst = cupy.empty_like(src)
    copy_ms, _ = gpu_time(cupy, lambda: dst.__setitem__(Ellipsis, src))
    copy_bw = 2 * src.nbytes / copy_ms / 1e6
    print_table("GPU device-to-device copy", ["GB/s"], [[copy_bw]])
    torch_cuda = torch is not None and torch.cuda.is_available()

    for direction in ("forward", "forward+backward"):
        rows = []
        for shape in GPU_SHAPES:
            x, gain, bias, dy = layer_norm_inputs(cupy, shape)
            nbytes = forward_bytes(shape)
            if direction != "forward":
                nbytes += backward_bytes(shape)
            impls = {"numba": cuda_kernels, "cupy": reference}
            timings = {}
            for name, kernels in impls.items():
                def run(kernels=kernels):
                    y, m, r = kernels.layer_norm_forward(x, gain, bias, EPS)
                    if direction != "forward":
                        kernels.layer_norm_backward(dy, x, m, r, gain)
                timings[name] = gpu_time(cupy, run)
            if torch_cuda:
                xt = torch.as_tensor(x, device="cuda")
                forward, forward_backward = torch_layer_norm_cuda(torch, xt, gain, bias, dy)
                timings["torch"] = gpu_time(cupy, forward if direction == "forward"
                                            else forward_backward)
            row = [str(shape)]
            for name in ("numba", "cupy", "torch"):
                row += list(timings[name]) if name in timings else ["n/a", "n/a"]
            kernel_ms = timings["numba"][0]
            gbs = nbytes / kernel_ms / 1e6
            row += [gbs, gbs / copy_bw]
            row.append(timings["cupy"][0] / kernel_ms)
            row.append(timings["torch"][0] / kernel_ms if "torch" in timings else "n/a")
            rows.append(row)
        print_table(f"GPU {direction}, float32 (kernel ms from CUDA events; wall ms)",
                    ["shape", "Numba kernel", "Numba wall", "CuPy kernel", "CuPy wall",
                     "torch kernel", "torch wall", "Numba GB/s", "of copy",
                     "CuPy/Numba", "torch/Numba"], rows)


def torch_layer_norm_cuda(torch, xt, gain, bias, dy):
    """PyTorch closures on CUDA tensors (sharing the CuPy arrays' memory)."""
    xt = xt.detach().requires_grad_()
    wt = torch.as_tensor(gain, device="cuda").detach().requires_grad_()
    bt = torch.as_tensor(bias, device="cuda").detach().requires_grad_()
    dyt = torch.as_tensor(dy, device="cuda")
    layer_norm = torch.nn.functional.layer_norm

    def forward():
        with torch.no_grad():
            layer_norm(xt, xt.shape[1:], wt, bt, EPS)

    def forward_backward():
        xt.grad = wt.grad = bt.grad = None
        layer_norm(xt, xt.shape[1:], wt, bt, EPS).backward(dyt)
    return forward, forward_backward


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", default="1", choices=["1", "2", "both"],
                        help="CPU threads for Numba and PyTorch (default 1)")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--cpu-only", action="store_true")
    where.add_argument("--gpu-only", action="store_true")
    args = parser.parse_args()
    thread_counts = [1, 2] if args.threads == "both" else [int(args.threads)]
    pin_threads(max(thread_counts))
    torch = try_import_torch()
    if not args.gpu_only:
        for threads in thread_counts:
            cpu_tables(threads, torch)
    if not args.cpu_only:
        gpu_tables(torch)


if __name__ == "__main__":
    main()
