"""LayerNorm on the GPU in detail, and the inputs and timers the LayerNorm benchmarks share.

    python benchmarks/layernorm.py

What benchmarks/kernel_ladder.py (every rung of each device, forward+backward,
against PyTorch) does not show: the GPU's forward and backward apart, each with
its kernel time (CUDA events) and wall time (the host clock after a
synchronize, what a caller waits), for the Numba CUDA kernels
(``tinynet.kernels.ladder.cuda_3_held``), the reference run on CuPy arrays (a composite of
CuPy array ops) and PyTorch on CUDA when it has it, float32, on (32768, 1024),
(8192, 4096) and (65536, 256). Bandwidth counts the minimal traffic (the
forward reads x and writes y, 2·rows·H·4 bytes; the backward reads dy and x
and writes dx, 3·rows·H·4 bytes) and is compared with a device-to-device copy.
The last table says which of the GPU targets are met: forward ≥ 70 %
and backward ≥ 55 % of the copy bandwidth, and no slower than PyTorch. The
other CUDA rungs, rung 4's 16-byte vector loads and stores among them, are
timed by benchmarks/kernel_ladder.py. Needs CuPy and a CUDA GPU; nothing here
asserts.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from common import print_table, try_import_torch  # noqa: E402

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


def target_row(what, measured, goal):
    """A row of a targets table: what, measured, goal, met ('yes' or 'no')."""
    return [what, measured, goal, "yes" if measured >= goal else "no"]


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
    from tinynet.kernels.ladder.cuda_3_held import _launch
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

    from tinynet.kernels.ladder import cuda_3_held as cuda_kernels
    from tinynet.kernels.ladder import reference

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


def print_gpu_targets(results, copy_bw):
    """The GPU targets, on kernel times: one line each, 'yes' or 'no'."""
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
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    gpu_tables(try_import_torch())


if __name__ == "__main__":
    main()
