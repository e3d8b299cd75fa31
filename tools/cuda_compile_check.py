"""Compile every CUDA kernel of tinynet for a GPU, without one; report registers.

    python tools/cuda_compile_check.py [--cc 9.0] [--ptxas PATH] [--save-ptx DIR]

Needs numba-cuda, NVVM and NVRTC (pip: ``cuda-toolkit[nvvm,nvrtc]``), no GPU
and no driver.
Each kernel is compiled to PTX for float32 and float64 with
``numba.cuda.compile_ptx``, which catches typing errors before any GPU time is
spent. With ``ptxas`` (pip: ``nvidia-cuda-nvcc``; found on PATH or given) each
PTX is also assembled, and its registers and spills are printed: a held-row
kernel that spills, or needs more registers than a block can have, shows here.
Device functions ask Numba for the current device's compute capability, so a
stand-in device answers with ``--cc``. ``--save-ptx DIR`` writes each
kernel's PTX there: diffing two such folders shows whether a change to the
kernels' source changes what the GPU runs.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import types

os.environ["NUMBA_ENABLE_CUDASIM"] = "0"


def kernels_and_signatures():
    """[(name, kernel dispatcher, argument types)] for float32 and float64."""
    from numba import types as t

    from tinynet.kernels import cuda as k
    found = []
    for dtype in (t.float32, t.float64):
        matrix, vector = t.Array(dtype, 2, "C"), t.Array(dtype, 1, "C")
        statistics = t.Array(t.float64, 1, "C")
        forward = (matrix, vector, vector, t.float64, t.boolean, matrix, statistics, statistics)
        backward = (matrix, matrix, statistics, statistics, vector, t.boolean, matrix, matrix)
        for held in (1, 2, 4, 8, 16, 32):
            found.append((f"{dtype} _held_forward({held})", k._held_forward(held), forward))
            found.append((f"{dtype} _held_backward({held})", k._held_backward(held), backward))
        found.append((f"{dtype} _streamed_forward", k._streamed_forward,
                      (matrix, vector, vector, t.float64, matrix, statistics, statistics)))
        found.append((f"{dtype} _streamed_backward", k._streamed_backward,
                      (matrix, matrix, statistics, statistics, vector, t.int64, t.boolean,
                       matrix, matrix)))
        found.append((f"{dtype} _sum_partials", k._sum_partials, (matrix, vector, vector)))
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cc", default="9.0", help="compute capability (default 9.0)")
    parser.add_argument("--ptxas", default=shutil.which("ptxas"), help="ptxas to assemble with")
    parser.add_argument("--save-ptx", metavar="DIR", help="write each kernel's PTX into DIR")
    args = parser.parse_args()
    cc = tuple(int(part) for part in args.cc.split("."))

    from numba import cuda
    from numba.cuda import dispatcher
    dispatcher.get_current_device = lambda: types.SimpleNamespace(compute_capability=cc)

    failures = 0
    with tempfile.TemporaryDirectory() as work:
        for name, kernel, signature in kernels_and_signatures():
            try:
                ptx, _ = cuda.compile_ptx(kernel.py_func, signature, cc=cc)
            except Exception as error:                  # report every kernel, then fail
                failures += 1
                print(f"{name}: does not compile: {error}")
                continue
            report = "PTX ok"
            if args.save_ptx:
                os.makedirs(args.save_ptx, exist_ok=True)
                file_name = re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_") + ".ptx"
                with open(os.path.join(args.save_ptx, file_name), "w") as f:
                    f.write(ptx)
            if args.ptxas:
                path = os.path.join(work, "kernel.ptx")
                with open(path, "w") as f:
                    f.write(ptx)
                out = subprocess.run([args.ptxas, f"-arch=sm_{cc[0]}{cc[1]}", "-v", path,
                                      "-o", os.devnull], capture_output=True, text=True)
                registers = re.search(r"Used (\d+) registers", out.stderr)
                spills = re.search(r"(\d+) bytes spill stores", out.stderr)
                if out.returncode or not registers:
                    failures += 1
                    report = f"ptxas failed: {out.stderr.strip()[:300]}"
                else:
                    report = (f"{registers.group(1)} registers, "
                              f"{spills.group(1) if spills else 0} bytes spilled")
            print(f"{name}: {report}")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
