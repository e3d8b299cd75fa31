"""Instructions per call of the CPU LayerNorm kernels, counted under valgrind.

    python tools/count_instructions.py [--shape ROWS H] [--calls N]

Timings on shared machines move by 10-30 % from run to run, more than most
changes worth making at small shapes. Instruction counts under valgrind's
callgrind repeat to within about 1 %, so this tool counts, per call, the whole
public function (Python side included) and the Numba driver alone; their
difference is the Python side. It counts the ``tinynet`` that Python imports
(``make venv`` installs this checkout, editable). Fewer instructions is not
always less time (a memory-bound kernel waits for memory, not for
instructions), so confirm a change with ``benchmarks/kernel_ladder.py`` too.

Needs valgrind with its headers (Debian: ``apt install valgrind``) and a C
compiler, for the three-line helper that switches counting on and off around
the calls. valgrind cannot run AVX-512 code, so Numba compiles for AVX2 here,
into a cache of its own.
"""
from __future__ import annotations

import argparse
import os
import pathlib
import subprocess
import sys
import tempfile

HELPER_C = """#include <valgrind/callgrind.h>
void count_start(void) { CALLGRIND_ZERO_STATS; CALLGRIND_START_INSTRUMENTATION; }
void count_stop(void) { CALLGRIND_STOP_INSTRUMENTATION; CALLGRIND_DUMP_STATS; }
"""
AVX2 = {"NUMBA_CPU_NAME": "skylake",
        "NUMBA_CPU_FEATURES": "+avx,+avx2,+fma,+sse4.2,+sse4.1,+ssse3,+sse3,+popcnt,"
                              "+bmi,+bmi2,+f16c,+lzcnt,+movbe,+cx16,+xsave"}
WHAT = ("forward", "backward", "forward driver", "backward driver")


def child(what: str, rows: int, H: int, calls: int, helper: str) -> None:
    """Run ``calls`` calls of ``what`` with counting switched on around them."""
    import ctypes

    import numpy as np

    from tinynet.kernels.ladder import cpu_5_typed as cpu
    from tinynet.kernels.ladder._recycling import empty_like

    rng = np.random.default_rng(0)
    x, dy = (rng.standard_normal((rows, H)).astype(np.float32) for _ in range(2))
    gain, bias = (rng.standard_normal(H).astype(np.float32) for _ in range(2))
    y, mean, rstd = cpu.layer_norm_forward(x, gain, bias, 1e-5)
    dx, gain_grads = empty_like(x), np.empty((2, H), np.float32)
    # the drivers that layer_norm_forward/backward pick
    forward, backward = (cpu._forward_serial, cpu._backward_serial)
    if cpu._use_parallel(x.size):
        forward, backward = (cpu._forward_parallel, cpu._backward_parallel)
    call = {
        "forward": lambda: cpu.layer_norm_forward(x, gain, bias, 1e-5),
        "backward": lambda: cpu.layer_norm_backward(dy, x, mean, rstd, gain),
        "forward driver": lambda: forward(x, gain, bias, 1e-5, y, mean, rstd),
        "backward driver": lambda: backward(dy, x, mean, rstd, gain, dx, gain_grads),
    }[what]
    call()                                          # compile or load, warm up
    counter = ctypes.CDLL(helper)
    counter.count_start()
    for _ in range(calls):
        call()
    counter.count_stop()


def count(what: str, rows: int, H: int, calls: int, workdir: pathlib.Path) -> float:
    """Instructions per call of ``what``, counted in a child process under valgrind."""
    out = workdir / f"callgrind.{what.replace(' ', '_')}"
    command = [sys.executable, __file__, "--child", what, "--shape", str(rows), str(H),
               "--calls", str(calls), "--helper", str(workdir / "libcount.so")]
    env = dict(os.environ, **AVX2, NUMBA_CACHE_DIR=str(workdir / "numba-cache"),
               OPENBLAS_NUM_THREADS="1", NUMBA_NUM_THREADS="1")
    subprocess.run(command, env=env, check=True, capture_output=True)   # fill the cache
    subprocess.run(["valgrind", "--tool=callgrind", "--instr-atstart=no",
                    f"--callgrind-out-file={out}"] + command,
                   env=env, check=True, capture_output=True)
    total = 0
    for dump in workdir.glob(out.name + "*"):
        for line in dump.read_text().splitlines():
            if line.startswith("totals:"):
                total += int(line.split()[1])
    return total / calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", nargs=2, type=int, default=[64, 128], metavar=("ROWS", "H"))
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--child", choices=WHAT, help=argparse.SUPPRESS)
    parser.add_argument("--helper", help=argparse.SUPPRESS)
    args = parser.parse_args()
    rows, H = args.shape
    if args.child:
        child(args.child, rows, H, args.calls, args.helper)
        return
    with tempfile.TemporaryDirectory() as tmp:
        workdir = pathlib.Path(tmp)
        (workdir / "count.c").write_text(HELPER_C)
        subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", str(workdir / "libcount.so"),
                        str(workdir / "count.c")], check=True)
        counts = {what: count(what, rows, H, args.calls, workdir) for what in WHAT}
    print(f"\nInstructions per call, float32 ({rows}, {H}), 1 thread, AVX2\n")
    print("| | whole call | Numba driver (and its dispatch) | Python side |")
    print("|---|---|---|---|")
    for direction in ("forward", "backward"):
        whole, driver = counts[direction], counts[direction + " driver"]
        print(f"| {direction} | {whole:,.0f} | {driver:,.0f} | {whole - driver:,.0f} |")


if __name__ == "__main__":
    main()
