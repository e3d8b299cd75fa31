"""Fewer threads while other processes keep this process's cores busy.

The work of a step is cut into pieces that wait for each other: a matrix
product's panels, a kernel's rows shared out over the threads. On a machine
where another process keeps one of the cores busy, the piece given to that core
waits for the operating system to hand it a slice of time, and every product and
kernel waits with it: a small model's step takes many times as long. Here, at
most once every :data:`INTERVAL` seconds, at a backward pass (``Tensor.backward``
calls :func:`adapt`), the CPU time the machine spent on this process's cores
outside this process since the last look is read (Linux's ``/proc/stat`` and
``/proc/self/stat``), and the threads are set to the cores the others leave
(at least one); once the others stop, all of them again. An idle machine keeps
every thread. A thread count the user chose (``set_num_threads``,
``OMP_NUM_THREADS``...) is left alone, and ``TINYNET_ADAPT_THREADS=0`` turns
this off. ``benchmarks/busy.py`` times steps beside busy processes.
"""
from __future__ import annotations

import os
import time

from . import threads

__all__ = ["adapt", "free_cores"]

INTERVAL = 1.0               # seconds between two looks at the machine
ADAPT_VARIABLE = "TINYNET_ADAPT_THREADS"
_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100

_last = None                 # (time, busy ticks of our cores, this process's ticks)


def free_cores(others_busy: float, cores: int) -> int:
    """The threads to use when other processes keep ``others_busy`` of our
    ``cores`` cores busy (in cores, on average): one per core they leave, a core
    counted as taken from half of it on, and at least one."""
    return max(1, cores - int(others_busy + 0.5))


def _cpus():
    try:
        return os.sched_getaffinity(0)
    except AttributeError:               # not Linux: nothing to read either
        return set()


def _busy_ticks(cpus) -> int:
    """The ticks the ``cpus`` spent busy (not idle, not waiting for I/O), since boot."""
    busy = 0
    with open("/proc/stat", encoding="ascii") as stat:
        for line in stat:
            if not line.startswith("cpu"):
                break
            name, *fields = line.split()
            if name != "cpu" and int(name[3:]) in cpus:
                values = [int(v) for v in fields[:8]]
                busy += sum(values) - values[3] - values[4]
    return busy


def _own_ticks() -> int:
    """This process's user and system ticks, all of its threads, since it started."""
    with open("/proc/self/stat", encoding="ascii") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def _enabled() -> bool:
    return (os.environ.get(ADAPT_VARIABLE) != "0" and threads.chosen_count() is None
            and os.path.exists("/proc/stat"))


def adapt() -> None:
    """Look at the machine if :data:`INTERVAL` has passed, and set the thread count
    to the cores other processes leave free (see the module docstring)."""
    global _last
    now = time.monotonic()
    if _last is not None and now - _last[0] < INTERVAL:
        return
    if not _enabled():
        _last = (now, 0, 0)
        return
    cpus = _cpus()
    busy, own = _busy_ticks(cpus), _own_ticks()
    if _last is not None and _last[1]:
        others = ((busy - _last[1]) - (own - _last[2])) / _TICKS / (now - _last[0])
        threads.adapt_thread_count(free_cores(others, len(cpus)))
    _last = (now, busy, own)
