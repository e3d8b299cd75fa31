"""How the CUDA kernels' launch shape (``tinynet.kernels.ladder.cuda_3_held.Launch``) sets
their speed.

    python benchmarks/gpu_launch_sweep.py          # needs CuPy and a CUDA GPU

For each GPU shape of ``benchmarks/layernorm.py``, times the forward, the
backward and the backward's column-sum kernel alone under variants of the
default launch (one or two knobs changed at a time), as kernel time (CUDA events, queue
kept full) and as a fraction of the device-to-device copy bandwidth. The
defaults in ``kernels/ladder/_cuda_launch.py`` were chosen from this table.
"""
from __future__ import annotations

import dataclasses
import functools
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from common import print_table  # noqa: E402
from layernorm import (  # noqa: E402
    EPS,
    GPU_SHAPES,
    backward_bytes,
    forward_bytes,
    gpu_copy_bandwidth,
    gpu_hold_kernel,
    gpu_time,
    layer_norm_inputs,
)

# Variants of the default launch: {label: the knobs that change}.
FORWARD_VARIANTS = {
    "forward_held=16": dict(forward_held=16),
    "forward_held=8": dict(forward_held=8),
    "warp teams up to H=1024": dict(warp_row_max_h=1024),
    "warps_per_block=2": dict(warps_per_block=2),
    "warps_per_block=8": dict(warps_per_block=8),
    "streamed (forward_held=1)": dict(forward_held=1),
    "vector_access": dict(vector_access=True),
    "vector_access, forward_held=16": dict(vector_access=True, forward_held=16),
}
BACKWARD_VARIANTS = {
    "backward_held=8": dict(backward_held=8),
    "backward_held=32": dict(backward_held=32),
    "warps_per_block=2": dict(warps_per_block=2),
    "backward_partial_elements=2^18": dict(backward_partial_elements=1 << 18),
    "backward_partial_elements=2^20": dict(backward_partial_elements=1 << 20),
    "min_backward_teams=132": dict(min_backward_teams=132),
    "sum_columns=8": dict(sum_columns=8),
    "streamed (backward_held=1)": dict(backward_held=1),
    "vector_access": dict(vector_access=True),
    "vector_access, backward_held=8": dict(vector_access=True, backward_held=8),
    "vector_access, backward_held=32": dict(vector_access=True, backward_held=32),
}


def variants(*tables):
    """The default launch, then each variant: [(label, Launch)]."""
    from tinynet.kernels.ladder.cuda_3_held import GPU_LAUNCH
    found = [("default", GPU_LAUNCH)]
    for table in tables:
        found += [(label, dataclasses.replace(GPU_LAUNCH, **knobs))
                  for label, knobs in table.items()]
    return found


def describe(plan):
    return "streamed" if plan.held == 0 else f"{plan.team} of {plan.threads}, {plan.held} held"


def sweep_forward(cupy, kernels, hold, shape, copy_bw):
    x, gain, bias, _ = layer_norm_inputs(cupy, shape)
    table = []
    for label, launch in variants(FORWARD_VARIANTS):
        plan = describe(launch.forward_plan(shape[1]))
        try:
            forward = functools.partial(kernels._forward, x, gain, bias, EPS, launch)
            ms, wall_ms = gpu_time(cupy, forward, hold)
        except Exception as error:           # a launch this GPU refuses: say so, go on
            table.append([label, plan, repr(error)[:60], "", ""])
            continue
        table.append([label, plan, ms * 1e3, wall_ms * 1e3,
                      forward_bytes(shape) / ms / 1e6 / copy_bw])
    print_table(f"Forward {shape}, float32", ["launch", "rows", "kernel µs", "wall µs",
                                              "of copy"], table)


def sweep_backward(cupy, kernels, hold, shape, copy_bw):
    x, gain, bias, dy = layer_norm_inputs(cupy, shape)
    _, mean, rstd = kernels.layer_norm_forward(x, gain, bias, EPS)
    rows, H = shape
    table = []
    for label, launch in variants(BACKWARD_VARIANTS):
        plan = describe(launch.backward_plan(H))
        try:
            backward = functools.partial(kernels._backward, dy, x, mean, rstd, gain, launch)
            ms, wall_ms = gpu_time(cupy, backward, hold)
        except Exception as error:
            table.append([label, plan, repr(error)[:60], "", "", "", "", ""])
            continue
        blocks, _, partial_rows = launch.backward_grid(rows, H)
        partial_sums = cupy.zeros((partial_rows, 2 * H), x.dtype)
        dgain, dbias = cupy.empty(H, x.dtype), cupy.empty(H, x.dtype)
        sum_partials = functools.partial(
            kernels._launch, kernels._sum_partials, launch.sum_blocks(H),
            (launch.sum_columns, launch.sum_lanes), partial_sums, dgain, dbias)
        sum_ms, _ = gpu_time(cupy, sum_partials, hold)
        table.append([label, plan, blocks, partial_rows, ms * 1e3, sum_ms * 1e3, wall_ms * 1e3,
                      backward_bytes(shape) / ms / 1e6 / copy_bw])
    print_table(f"Backward {shape}, float32", ["launch", "rows", "blocks", "partial rows",
                                               "kernel µs", "of which sums µs", "wall µs",
                                               "of copy"], table)


def main():
    import cupy

    from tinynet.backend import cuda_is_available
    if not cuda_is_available():
        sys.exit("gpu_launch_sweep: needs CuPy and a CUDA GPU")
    from tinynet.kernels.ladder import cuda_3_held as kernels

    hold = gpu_hold_kernel()
    copy_bw = gpu_copy_bandwidth(cupy, hold)
    print(f"device-to-device copy: {copy_bw:.0f} GB/s")
    for shape in GPU_SHAPES:
        sweep_forward(cupy, kernels, hold, shape, copy_bw)
        sweep_backward(cupy, kernels, hold, shape, copy_bw)
        cupy.get_default_memory_pool().free_all_blocks()


if __name__ == "__main__":
    main()
