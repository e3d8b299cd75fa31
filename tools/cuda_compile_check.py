"""Compile every CUDA kernel of tinynet for a GPU, without one; report registers.

    python tools/cuda_compile_check.py [--cc 9.0] [--ptxas PATH] [--save-ptx DIR]
    python tools/cuda_compile_check.py --compare BEFORE AFTER

Needs numba-cuda, NVVM and NVRTC (pip: ``cuda-toolkit[nvvm,nvrtc]``), no GPU
and no driver.
Each kernel is compiled to PTX for float32 and float64 with
``numba.cuda.compile_ptx``, which catches typing errors before any GPU time is
spent. With ``ptxas`` (pip: ``nvidia-cuda-nvcc``; found on PATH or given) each
PTX is also assembled, and its registers and spills are printed: a held-row
kernel that spills, or needs more registers than a block can have, shows here.
Device functions ask Numba for the current device's compute capability, so a
stand-in device answers with ``--cc``.

``--save-ptx DIR`` writes each kernel's PTX there, and ``--compare BEFORE
AFTER`` compares two such folders kernel by kernel: the same instructions in
the same order; the same number of each kind of instruction, in another order
or on other registers; or which kinds' counts differ. That tells, without a
GPU, whether a change to the kernels' source changes the arithmetic the GPU
does.
"""
from __future__ import annotations

import argparse
import collections
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

    from tinynet.kernels.ladder import cuda_3_held as k
    from tinynet.kernels.ladder._cuda_vectors import VECTOR_BYTES
    found = []
    for dtype in (t.float32, t.float64):
        matrix, vector = t.Array(dtype, 2, "C"), t.Array(dtype, 1, "C")
        statistics = t.Array(t.float64, 1, "C")
        forward = (matrix, vector, vector, t.float64, t.boolean, matrix, statistics, statistics)
        backward = (matrix, matrix, statistics, statistics, vector, t.boolean, matrix, matrix)
        lanes = VECTOR_BYTES * 8 // dtype.bitwidth      # elements per 16-byte access
        for held in (1, 2, 4, 8, 16, 32):
            found.append((f"{dtype} _held_forward({held})", k._held_forward(held), forward))
            found.append((f"{dtype} _held_backward({held})", k._held_backward(held), backward))
            if held >= lanes:      # rung 4's vector-access variants (cuda_4_vectors)
                found.append((f"{dtype} _held_forward({held}, {lanes})",
                              k._held_forward(held, lanes), forward))
                found.append((f"{dtype} _held_backward({held}, {lanes})",
                              k._held_backward(held, lanes), backward))
        found.append((f"{dtype} _streamed_forward", k._streamed_forward,
                      (matrix, vector, vector, t.float64, matrix, statistics, statistics)))
        found.append((f"{dtype} _streamed_backward", k._streamed_backward,
                      (matrix, matrix, statistics, statistics, vector, t.int64, t.boolean,
                       matrix, matrix)))
        found.append((f"{dtype} _sum_partials", k._sum_partials, (matrix, vector, vector)))
    return found


def ptx_instructions(text):
    """The instructions of a PTX text, in order, with symbol names and
    comments left out (Numba's names and declarations vary from run to run)."""
    instructions = []
    for line in text.splitlines():
        line = line.split("//")[0].strip()
        if line and not line.startswith(".") and not line.endswith(":") and line not in "{}":
            instructions.append(re.sub(r"_ZN\w+", "<symbol>", line))
    return instructions


def compare_ptx(before, after):
    """Print, per kernel, how the PTX in folder ``after`` differs from ``before``."""
    for name in sorted(os.listdir(before)):
        with open(os.path.join(before, name)) as a, open(os.path.join(after, name)) as b:
            old, new = ptx_instructions(a.read()), ptx_instructions(b.read())
        if old == new:
            verdict = "the same instructions, in the same order"
        else:
            def opcodes(lines):
                return collections.Counter(line.split()[0] for line in lines)
            counts_old, counts_new = opcodes(old), opcodes(new)
            changed = {op: (counts_old[op], counts_new[op]) for op in counts_old | counts_new
                       if counts_old[op] != counts_new[op]}
            verdict = (f"different instruction counts {changed}" if changed
                       else "the same counts of each instruction, reordered or renamed")
        print(f"{name}: {verdict}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cc", default="9.0", help="compute capability (default 9.0)")
    parser.add_argument("--ptxas", default=shutil.which("ptxas"), help="ptxas to assemble with")
    parser.add_argument("--save-ptx", metavar="DIR", help="write each kernel's PTX into DIR")
    parser.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"),
                        help="compare two --save-ptx folders instead of compiling")
    args = parser.parse_args()
    if args.compare:
        compare_ptx(*args.compare)
        return
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
