"""The kernel ladder (kernels/ladder/): every rung of each device, timed.

    python benchmarks/kernel_ladder.py [--threads N] [--repeat N] [--cpu-only | --gpu-only]

One table per device: rung x shape, LayerNorm forward+backward of float32
rows (the LayerNorm benchmark's shapes and those the examples run), median
time, bandwidth (the minimal traffic: the forward reads x and writes y, the
backward reads dy and x and writes dx, 5·rows·H·4 bytes), that bandwidth as a
fraction of this machine's copy bandwidth measured in the same run, the
speedup over the rung below, and the speedup over PyTorch's layer_norm
forward+backward (``autograd.grad``) timed alongside, where PyTorch is
installed. On the CPU the rungs and PyTorch are timed in interleaved rounds
(``--repeat`` of them, 7 by default), so that a slow spell of a shared machine
slows them all; "spread" is the fastest and the slowest round against the
median. The CPU runs at the default threads unless ``--threads`` is given; on
a GPU times come from CUDA events. benchmarks/layernorm.py shows the GPU's
forward and backward apart. Nothing here asserts.
"""
from __future__ import annotations

import argparse
import importlib
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from common import median_time, print_table, timing_rounds, try_import_torch  # noqa: E402
from layernorm import (  # noqa: E402
    BANDWIDTH_ELEMENTS,
    EPS,
    gpu_copy_bandwidth,
    gpu_hold_kernel,
    gpu_time,
    layer_norm_inputs,
    torch_closures,
)

SHAPES = [(4, 1000), (128, 1000), (64, 512), (64, 128), (4096, 1024), (32768, 256)]
GPU_SHAPES = [(64, 1000), (4096, 1024), (32768, 1024), (8192, 4096), (65536, 256)]


def traffic(shape) -> int:
    return 5 * shape[0] * shape[1] * 4


def forward_backward(kernels, x, gain, bias, dy):
    def both():
        _, mean, rstd = kernels.layer_norm_forward(x, gain, bias, EPS)
        kernels.layer_norm_backward(dy, x, mean, rstd, gain)
    return both


def ladder_rows(device, shapes, seconds_of, copy_gbs):
    """Rows of one device's table; ``seconds_of(shape) -> ({rung: seconds},
    {rung: spread})``, the spreads empty where there are none."""
    from tinynet.kernels import ladder
    names = ladder.rung_names(device)
    rows = []
    for shape in shapes:
        seconds, spreads = seconds_of(shape)
        torch_seconds = seconds.get("PyTorch")
        for below, name in zip([None] + names[:-1], names, strict=True):
            gbs = traffic(shape) / seconds[name] / 1e9
            label = f"{name} (default)" if name == ladder.DEFAULT[device] else name
            rows.append([str(shape), label, seconds[name] * 1e6, spreads.get(name, "-"), gbs,
                         gbs / copy_gbs, seconds[below] / seconds[name] if below else "-",
                         torch_seconds / seconds[name] if torch_seconds else "-"])
        if torch_seconds:
            rows.append([str(shape), "PyTorch", torch_seconds * 1e6, spreads.get("PyTorch", "-"),
                         traffic(shape) / torch_seconds / 1e9,
                         traffic(shape) / torch_seconds / 1e9 / copy_gbs, "-", 1.0])
    return rows


HEADERS = ["shape", "rung", "fwd+bwd µs", "spread", "GB/s", "of copy", "× rung below",
           "× PyTorch"]


def cpu_copy_bandwidth():
    """Copy bandwidth in GB/s (bytes read + written) of a Numba loop on the
    current threads, over arrays far larger than the caches."""
    import numba
    import numpy as np

    @numba.njit(parallel=True)
    def copy(dst, src):
        for i in numba.prange(src.size):
            dst[i] = src[i]

    a, b = np.ones(BANDWIDTH_ELEMENTS, np.float32), np.ones(BANDWIDTH_ELEMENTS, np.float32)
    return 2 * a.nbytes / median_time(lambda: copy(a, b), repeat=5) / 1e9


def cpu_table(threads, repeat):
    import numpy as np

    import tinynet
    from tinynet.kernels import ladder
    torch = try_import_torch()
    if threads:
        tinynet.set_num_threads(threads)
        if torch is not None:
            torch.set_num_threads(threads)
    modules = {r.name: importlib.import_module(r.module) for r in ladder.LADDERS["cpu"]}

    def seconds_of(shape):
        inputs = layer_norm_inputs(np, shape)
        steps = {name: forward_backward(kernels, *inputs) for name, kernels in modules.items()}
        if torch is not None:
            steps["PyTorch"] = torch_closures(torch, "cpu", *inputs)["both"]
        rounds = timing_rounds(steps, repeat)          # the rungs interleaved
        return ({name: rounds.median(name) for name in steps},
                {name: rounds.spread(name) for name in steps})

    copy_gbs = cpu_copy_bandwidth()
    print_table(f"CPU kernel ladder, LayerNorm forward+backward, float32, "
                f"{tinynet.get_num_threads()} thread(s), medians of {repeat} rounds; "
                f"copy {copy_gbs:.1f} GB/s",
                HEADERS, ladder_rows("cpu", SHAPES, seconds_of, copy_gbs))


def gpu_table():
    from tinynet.backend import cuda_is_available
    if not cuda_is_available():
        print("\nGPU: not measured (needs CuPy and a CUDA GPU)")
        return
    import cupy

    from tinynet.kernels import ladder
    modules = {r.name: importlib.import_module(r.module) for r in ladder.LADDERS["cuda"]}
    hold = gpu_hold_kernel()
    torch = try_import_torch()
    torch_on_gpu = torch is not None and torch.cuda.is_available()

    def seconds_of(shape):
        inputs = layer_norm_inputs(cupy, shape)
        steps = {name: forward_backward(kernels, *inputs) for name, kernels in modules.items()}
        if torch_on_gpu:
            steps["PyTorch"] = torch_closures(torch, "cuda", *inputs)["both"]
        return {name: gpu_time(cupy, step, hold)[0] / 1e3 for name, step in steps.items()}, {}

    copy_gbs = gpu_copy_bandwidth(cupy, hold)
    print_table(f"GPU kernel ladder, LayerNorm forward+backward, float32, CUDA events; "
                f"copy {copy_gbs:.0f} GB/s", HEADERS,
                ladder_rows("cuda", GPU_SHAPES, seconds_of, copy_gbs))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, help="CPU threads (default: all cores)")
    parser.add_argument("--repeat", type=int, default=7,
                        help="interleaved timing rounds per shape on the CPU (default 7)")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--cpu-only", action="store_true")
    which.add_argument("--gpu-only", action="store_true")
    args = parser.parse_args()
    if not args.gpu_only:
        cpu_table(args.threads, args.repeat)
    if not args.cpu_only:
        gpu_table()


if __name__ == "__main__":
    main()
