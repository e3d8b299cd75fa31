"""LayerNorm kernel speed: NumPy reference, Numba kernels and PyTorch, as ratios.

    python benchmarks/layernorm.py [--threads 1|2|both] [--cpu-only | --gpu-only]
    python benchmarks/layernorm.py --stores [--threads 1|2|both]
    python benchmarks/layernorm.py --prefetch [--threads 1|2|both]

CPU (float32): forward and forward+backward of the NumPy reference
(``tinynet.kernels.reference``), the Numba kernels (``tinynet.kernels.cpu_3_pipelined``)
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
device-to-device copy. A last table times the Numba kernels again with 16-byte
vector loads and stores (``Launch.vector_access``, off by default until a GPU
run shows it faster).

``--stores`` times the Numba CPU kernels with ordinary and with streaming
(non-temporal) stores, whatever the output's size (``cpu.STREAMING_MIN_BYTES``),
on the shapes whose outputs the pool lends aligned (1 MiB or more).
``--prefetch`` times them without and with software prefetch of the inputs
(``cpu.PREFETCH_MIN_BYTES``), on the four shapes and two more that are
prefetched. Where the kernels do not prefetch (the other shapes, and every
shape on two threads) both columns run the same code: the noise of the run.

Targets (issue): Numba forward+backward ≥ 1.2x faster than PyTorch at
(4096, 1024), ≥ 4x at (32768, 256), ≥ 3x at (64, 128); forward ≥ 60 % and
backward ≥ 50 % of copy/triad bandwidth for H ≤ 1024; ≥ 5x faster than the
NumPy reference. The last table says which are met. Nothing here asserts.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from common import (  # noqa: E402
    median_time,
    median_times,
    pin_threads,
    print_table,
    try_import_torch,
)

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


def kernel_closures(kernels, x, gain, bias, dy):
    """{'forward', 'backward', 'both'} closures of a kernel module (reference, cpu, cuda)."""
    _, mean, rstd = kernels.layer_norm_forward(x, gain, bias, EPS)

    def both():
        _, m, r = kernels.layer_norm_forward(x, gain, bias, EPS)
        kernels.layer_norm_backward(dy, x, m, r, gain)
    return {"forward": lambda: kernels.layer_norm_forward(x, gain, bias, EPS),
            "backward": lambda: kernels.layer_norm_backward(dy, x, mean, rstd, gain),
            "both": both}


def torch_closures(torch, device, x, gain, bias, dy):
    """The same closures for ``torch.nn.functional.layer_norm`` on ``device``, with
    tensors sharing the NumPy or CuPy arrays' memory; the backward is ``autograd.grad``."""
    xt, wt, bt = (torch.as_tensor(a, device=device).detach().requires_grad_()
                  for a in (x, gain, bias))
    dyt = torch.as_tensor(dy, device=device)
    layer_norm = torch.nn.functional.layer_norm
    out = layer_norm(xt, xt.shape[1:], wt, bt, EPS)

    def forward():
        with torch.no_grad():
            layer_norm(xt, xt.shape[1:], wt, bt, EPS)

    def both():
        torch.autograd.grad(layer_norm(xt, xt.shape[1:], wt, bt, EPS), (xt, wt, bt), dyt)
    return {"forward": forward,
            "backward": lambda: torch.autograd.grad(out, (xt, wt, bt), dyt, retain_graph=True),
            "both": both}


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


def measure_cpu_shape(shape, torch):
    """Median seconds per call: {(implementation, 'forward'|'backward'|'both'): s}.

    Also ('fresh y', 'forward'): allocating an array of x's size and writing
    it once, the floor for any function that returns a new array (on Linux,
    an array of 32 MiB or more gets new pages from the kernel every time).
    """
    import numpy as np

    from tinynet.kernels import cpu_3_pipelined as cpu
    from tinynet.kernels import reference

    x, gain, bias, dy = layer_norm_inputs(np, shape)
    closures = {"reference": kernel_closures(reference, x, gain, bias, dy),
                "numba": kernel_closures(cpu, x, gain, bias, dy)}
    if torch is not None:
        closures["torch"] = torch_closures(torch, "cpu", x, gain, bias, dy)
    functions = {(name, direction): fn for name, fns in closures.items()
                 for direction, fn in fns.items()}
    functions["fresh y", "forward"] = lambda: np.empty_like(x).fill(0)
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


# Shapes whose inputs the kernels prefetch on one thread (cpu._prefetch_rows),
# besides (32768, 256); at (16384, 512) only the forward's
PREFETCHED_SHAPES = [(65536, 128), (16384, 512)]


def switch_table(threads, what):
    """Numba CPU kernels with one of their memory techniques off and on, timed
    interleaved. ``what``: "stores" (ordinary against streaming stores, for any
    output the pool lends aligned) or "prefetch" (without and with prefetch, as
    the kernels choose it). The switch is the technique's size threshold in
    ``cpu``, set before each call."""
    import numba
    import numpy as np

    from tinynet.kernels import _recycling
    from tinynet.kernels import cpu_3_pipelined as cpu

    numba.set_num_threads(threads)
    name, kinds, shapes = {
        "stores": ("STREAMING_MIN_BYTES", (("ordinary", float("inf")), ("streaming", 0)),
                   [s for s in CPU_SHAPES if s[0] * s[1] * 4 >= _recycling.MIN_BYTES]),
        "prefetch": ("PREFETCH_MIN_BYTES",
                     (("plain", float("inf")), ("prefetch", cpu.PREFETCH_MIN_BYTES)),
                     CPU_SHAPES + PREFETCHED_SHAPES),
    }[what]
    (off, _), (on, _) = kinds
    saved = getattr(cpu, name)

    def with_threshold(fn, threshold):
        def run():
            setattr(cpu, name, threshold)
            fn()
        return run

    rows = []
    try:
        for shape in shapes:
            closures = kernel_closures(cpu, *layer_norm_inputs(np, shape))
            t = median_times({(kind, direction): with_threshold(fn, threshold)
                              for kind, threshold in kinds
                              for direction, fn in closures.items()})
            row = [str(shape)]
            for direction in ("forward", "backward", "both"):
                row += [t[off, direction] * 1e3, t[on, direction] * 1e3,
                        t[off, direction] / t[on, direction]]
            rows.append(row)
    finally:
        setattr(cpu, name, saved)
    headers = ["shape"] + [f"{d} {column}" for d in ("fwd", "bwd", "both")
                           for column in (f"{off} ms", f"{on} ms", "ratio")]
    label = f"{threads} thread{'s' if threads > 1 else ''}"
    print_table(f"Numba CPU kernels, {off} vs {on}, float32, {label}", headers, rows)


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


def target_row(what, measured, goal):
    """A row of a targets table: what, measured, goal, met ('yes' or 'no')."""
    return [what, measured, goal, "yes" if measured >= goal else "no"]


def print_targets(label, results, copy_bw, triad_bw):
    """The issue's targets, measured: one line each, 'yes' or 'no'."""
    rows = []

    def target(what, measured, goal):
        rows.append(target_row(what, measured, goal))

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

def gpu_hold_kernel():
    """A one-thread kernel that sleeps about ``microseconds`` and then sets ``done[0]``."""
    import warnings

    from numba import cuda
    # Numba warns about small grids at every launch; the message starts with a
    # terminal escape code, hence the leading .*
    warnings.filterwarnings("ignore", ".*Grid size")

    @cuda.jit
    def hold(microseconds, done):
        for _ in range(microseconds):
            cuda.nanosleep(1000)
        done[0] = 1
    return hold


def gpu_time(cupy, fn, hold, repeat=20, rounds=3):
    """(kernel ms, wall ms) per call of ``fn``, medians.

    Wall: the host's clock around one call and a synchronize, what a caller
    waits, launch costs included. Kernel: the GPU's time per call alone. CUDA
    events around a single call would also count the time the GPU sits idle
    while the host prepares the launches, so a holding kernel keeps the GPU
    busy until all ``repeat`` calls are queued between the two events. If the
    first event has already passed when the last call is queued, the queue ran
    dry: the round is run again with a longer hold.
    """
    from tinynet.kernels.cuda import _launch
    synchronize = cupy.cuda.get_current_stream().synchronize
    fn()
    synchronize()
    wall = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        synchronize()
        wall.append((time.perf_counter() - t0) * 1e3)
    wall_ms = statistics.median(wall)
    done = cupy.zeros(1, cupy.int32)
    start, stop = cupy.cuda.Event(), cupy.cuda.Event()
    hold_us = int(2e3 * repeat * wall_ms) + 1000
    kernel = []
    while len(kernel) < rounds:
        _launch(hold, 1, 1, hold_us, done)
        start.record()
        for _ in range(repeat):
            fn()
        stop.record()
        queue_ran_dry = start.done
        stop.synchronize()
        if queue_ran_dry:
            hold_us *= 2
            if hold_us > 5e6:
                raise RuntimeError("gpu_time: the host cannot queue the calls ahead of the GPU")
            continue
        kernel.append(cupy.cuda.get_elapsed_time(start, stop) / repeat)
    return statistics.median(kernel), wall_ms


def gpu_copy_bandwidth(cupy, hold):
    """Device-to-device copy bandwidth in GB/s (bytes read + written), kernel time."""
    src = cupy.ones(BANDWIDTH_ELEMENTS, cupy.float32)
    dst = cupy.empty_like(src)
    copy_ms, _ = gpu_time(cupy, lambda: dst.__setitem__(Ellipsis, src), hold)
    return 2 * src.nbytes / copy_ms / 1e6


def gpu_tables(torch):
    from tinynet.backend import cuda_is_available
    if not cuda_is_available():
        print("\nGPU: not measured (needs CuPy and a CUDA GPU)")
        return
    import cupy

    from tinynet.kernels import cuda as cuda_kernels
    from tinynet.kernels import reference

    hold = gpu_hold_kernel()
    copy_bw = gpu_copy_bandwidth(cupy, hold)
    print_table("GPU device-to-device copy (kernel time; bytes read + written)", ["GB/s"],
                [[copy_bw]])
    torch_cuda = torch is not None and torch.cuda.is_available()

    results = {}
    for shape in GPU_SHAPES:
        x, gain, bias, dy = layer_norm_inputs(cupy, shape)
        closures = {"numba": kernel_closures(cuda_kernels, x, gain, bias, dy),
                    "cupy": kernel_closures(reference, x, gain, bias, dy)}
        if torch_cuda:
            closures["torch"] = torch_closures(torch, "cuda", x, gain, bias, dy)
        results[shape] = {(name, direction): gpu_time(cupy, fn, hold)
                          for name, fns in closures.items() for direction, fn in fns.items()}
        del x, gain, bias, dy, closures
        cupy.get_default_memory_pool().free_all_blocks()

    bytes_of = {"forward": forward_bytes, "backward": backward_bytes,
                "both": lambda shape: forward_bytes(shape) + backward_bytes(shape)}
    for direction in ("forward", "backward", "both"):
        rows = []
        for shape, t in results.items():
            row = [str(shape)]
            for name in ("numba", "cupy", "torch"):
                row += [v * 1e3 for v in t[name, direction]] if (name, direction) in t \
                    else ["n/a", "n/a"]
            gbs = bytes_of[direction](shape) / t["numba", direction][0] / 1e6
            row += [gbs, gbs / copy_bw]
            for name in ("cupy", "torch"):
                row.append(t[name, direction][0] / t["numba", direction][0]
                           if (name, direction) in t else "n/a")
            rows.append(row)
        title = {"forward": "forward", "backward": "backward (dx, dgain, dbias)",
                 "both": "forward + backward"}[direction]
        print_table(f"GPU {title}, float32 (µs: kernel time per call from CUDA events "
                    f"with the queue kept full; wall time per call, synchronized)",
                    ["shape", "Numba kernel", "Numba wall", "CuPy kernel", "CuPy wall",
                     "torch kernel", "torch wall", "Numba GB/s", "of copy", "CuPy/Numba",
                     "torch/Numba"], rows)
    print_gpu_targets(results, copy_bw)
    vector_access_table(cupy, cuda_kernels, hold, copy_bw, results)


def vector_access_table(cupy, cuda_kernels, hold, copy_bw, results):
    """The Numba kernels with held rows loaded and stored 16 bytes at a time
    (``Launch.vector_access``) against the default launch's times in ``results``."""
    import dataclasses
    launch = dataclasses.replace(cuda_kernels.GPU_LAUNCH, vector_access=True)
    rows = []
    for shape in GPU_SHAPES:
        rows += vector_access_rows(cupy, cuda_kernels, launch, hold, copy_bw, shape,
                                   results[shape])
        cupy.get_default_memory_pool().free_all_blocks()
    print_table("GPU, vector access (Launch.vector_access: held rows 16 bytes per load "
                "and store) against the default launch (kernel µs)",
                ["shape", "direction", "default", "vector", "vector wall", "default of copy",
                 "vector of copy", "default/vector", "vector meets the copy target"], rows)


def vector_access_rows(cupy, cuda_kernels, launch, hold, copy_bw, shape, default):
    """vector_access_table's forward and backward rows for one shape."""
    x, gain, bias, dy = layer_norm_inputs(cupy, shape)
    _, mean, rstd = cuda_kernels.layer_norm_forward(x, gain, bias, EPS)
    rows = []
    for direction, fn, nbytes, goal in (
            ("forward", lambda: cuda_kernels._forward(x, gain, bias, EPS, launch),
             forward_bytes(shape), 0.70),
            ("backward", lambda: cuda_kernels._backward(dy, x, mean, rstd, gain, launch),
             backward_bytes(shape), 0.55)):
        default_ms = default["numba", direction][0]
        vector_ms, vector_wall_ms = gpu_time(cupy, fn, hold)
        of_copy = nbytes / vector_ms / 1e6 / copy_bw
        rows.append([str(shape), direction, default_ms * 1e3, vector_ms * 1e3,
                     vector_wall_ms * 1e3, nbytes / default_ms / 1e6 / copy_bw, of_copy,
                     default_ms / vector_ms, "yes" if of_copy >= goal else "no"])
    return rows


def print_gpu_targets(results, copy_bw):
    """The issue's GPU targets, on kernel times: one line each, 'yes' or 'no'."""
    rows = []
    for shape, t in results.items():
        for direction, nbytes, goal in (("forward", forward_bytes(shape), 0.70),
                                        ("backward", backward_bytes(shape), 0.55)):
            fraction = nbytes / t["numba", direction][0] / 1e6 / copy_bw
            rows.append(target_row(f"{direction} GB/s / copy {shape}", fraction, goal))
            if ("torch", direction) in t:
                ratio = t["torch", direction][0] / t["numba", direction][0]
                rows.append(target_row(f"{direction} torch/Numba {shape}", ratio, 1.0))
    print_table("Targets, GPU", ["target", "measured", "goal", "met"], rows)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", default="1", choices=["1", "2", "both"],
                        help="CPU threads for Numba and PyTorch (default 1)")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--cpu-only", action="store_true")
    where.add_argument("--gpu-only", action="store_true")
    where.add_argument("--stores", action="store_true",
                       help="only compare ordinary and streaming stores on the CPU")
    where.add_argument("--prefetch", action="store_true",
                       help="only compare the CPU kernels without and with prefetch")
    args = parser.parse_args()
    thread_counts = [1, 2] if args.threads == "both" else [int(args.threads)]
    pin_threads(max(thread_counts))
    if args.stores or args.prefetch:
        for threads in thread_counts:
            switch_table(threads, "stores" if args.stores else "prefetch")
        return
    torch = try_import_torch()
    if not args.gpu_only:
        for threads in thread_counts:
            cpu_tables(threads, torch)
    if not args.cpu_only:
        gpu_tables(torch)


if __name__ == "__main__":
    main()
