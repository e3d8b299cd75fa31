"""Seconds from ``import tinynet`` to the end of the first LayerNorm forward+backward,
on a fresh Numba cache and on a warm one (a new process each).

    python benchmarks/first_use.py [--rounds 3]

The fresh cache is an empty temporary NUMBA_CACHE_DIR, as on a new install;
the warm run reuses it. Target: at most 8 s on a fresh cache.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from common import print_table  # noqa: E402

FIRST_USE = """
import time
start = time.perf_counter()
import tinynet
layer = tinynet.nn.LayerNorm({H})
x = tinynet.randn({rows}, {H}, requires_grad=True)
layer(x).sum().backward()
print(time.perf_counter() - start)
"""


def seconds(code: str, cache: str) -> float:
    env = dict(os.environ, NUMBA_CACHE_DIR=cache)
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                            text=True, check=True)
    return float(result.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    rows = []
    for shape in ((4, 1000), (128, 1000)):
        code = FIRST_USE.format(rows=shape[0], H=shape[1])
        fresh, warm = [], []
        for _ in range(args.rounds):
            with tempfile.TemporaryDirectory() as cache:
                fresh.append(seconds(code, cache))
                warm.append(seconds(code, cache))
        rows.append([str(shape), statistics.median(fresh), f"{min(fresh):.3g}-{max(fresh):.3g}",
                     statistics.median(warm), "8"])
    print_table(f"first LayerNorm forward+backward, seconds from import (median of "
                f"{args.rounds})", ["shape", "fresh cache", "spread", "warm cache", "target ≤"],
                rows)


if __name__ == "__main__":
    main()
