"""Shared helpers of the benchmark scripts: thread pinning, timing, tables.

Benchmarks report medians of repeated runs as *ratios* against a reference
measured in the same process, because these machines are shared and noisy.
"""
from __future__ import annotations

import os
import statistics
import time


def pin_threads(n: int = 1) -> None:
    """Limit BLAS, Numba and PyTorch to ``n`` threads. Call before importing NumPy."""
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
                "NUMBA_NUM_THREADS"):
        os.environ[var] = str(n)
    try:
        import torch
        torch.set_num_threads(n)
    except ImportError:
        pass


def try_import_torch():
    try:
        import torch
        return torch
    except ImportError:
        return None


def median_time(fn, repeat: int = 7, min_time: float = 0.05) -> float:
    """Median seconds per call of ``fn`` over ``repeat`` rounds of ≥ ``min_time`` each."""
    return median_times({"fn": fn}, repeat, min_time)["fn"]


def median_times(functions: dict, repeat: int = 7, min_time: float = 0.05) -> dict:
    """:func:`median_time` of several functions, measured in interleaved rounds
    (see :func:`timing_rounds`). Returns {name: median seconds per call}."""
    rounds = timing_rounds(functions, repeat, min_time)
    return {name: rounds.median(name) for name in functions}


class Rounds:
    """Seconds per call of each function, one entry per round."""

    def __init__(self, times: dict):
        self.times = times

    def median(self, name) -> float:
        return statistics.median(self.times[name])

    def spread(self, name) -> str:
        """The fastest and slowest round, relative to the median: '-3% / +8%'."""
        median = self.median(name)
        low, high = min(self.times[name]), max(self.times[name])
        return f"{100 * (low / median - 1):+.0f}% / {100 * (high / median - 1):+.0f}%"


def timing_rounds(functions: dict, repeat: int = 7, min_time: float = 0.05) -> Rounds:
    """Time several functions in interleaved rounds.

    Each round times every function once (a batch of calls of ≥ ``min_time``),
    so that a slow spell of a shared machine hits all of them alike and their
    ratios stay meaningful.
    """
    numbers = {}
    for name, fn in functions.items():
        fn()                               # warm up (compilation, caches)
        number = 1
        while True:
            start = time.perf_counter()
            for _ in range(number):
                fn()
            if time.perf_counter() - start >= min_time:
                break
            number *= 2
        numbers[name] = number
    rounds = {name: [] for name in functions}
    for _ in range(repeat):
        for name, fn in functions.items():
            start = time.perf_counter()
            for _ in range(numbers[name]):
                fn()
            rounds[name].append((time.perf_counter() - start) / numbers[name])
    return Rounds(rounds)


def print_table(title: str, headers: list[str], rows: list[list]) -> None:
    """A Markdown table, so that it can be pasted into docs and notes as is."""
    def cell(v):
        if isinstance(v, float):
            return f"{v:.3g}" if abs(v) < 1000 else f"{v:.0f}"
        return str(v)
    text = [[cell(v) for v in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in text)) for i, h in enumerate(headers)]
    print(f"\n{title}\n")
    print("| " + " | ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)) + " |")
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for r in text:
        print("| " + " | ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)) + " |")
