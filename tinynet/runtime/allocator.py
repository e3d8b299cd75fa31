"""How the C allocator keeps the memory that arrays free: a policy applied at import.

Every training step allocates and frees the same arrays: activations, the
values saved for backward, gradients. NumPy takes their memory from the C
library's ``malloc``. glibc's gives an allocation of at least
``M_MMAP_THRESHOLD`` bytes (128 KiB at first, rising as such blocks are freed)
its own mapping from the operating system, and unmaps it when it is freed; it
also hands the free top of its heap back once that exceeds
``M_TRIM_THRESHOLD``. The next step's arrays then take every page again from
the kernel, one page fault and one page of zeros each time: the LN-LSTM's
training step, whose per-step arrays of 64 × 512 float32 are exactly 128 KiB,
took markedly longer (``benchmarks/threads.py``, column "glibc malloc
defaults"). The MNIST convnet's step at batch 128 frees between 64 and 128 MiB
at the top of the heap: with 64 MiB kept, it took much longer than with
more (300,000 page faults in 23 steps instead of 27,000).

The policy, applied at ``import tinynet`` on glibc: blocks up to
:data:`MMAP_THRESHOLD` come from the heap, and up to :data:`TRIM_THRESHOLD` of
free heap is kept for the next step. A process that frees a large peak keeps
up to that much of it mapped.

The user's own settings win: with any ``MALLOC_*_`` variable of glibc's, or a
``glibc.malloc`` tunable in ``GLIBC_TUNABLES``, in the environment, nothing is
changed. Other C libraries (macOS, musl) are left as they are.
"""
from __future__ import annotations

import ctypes
import os
import sys

__all__ = ["apply_allocator_policy", "MMAP_THRESHOLD", "TRIM_THRESHOLD"]

MMAP_THRESHOLD = 32 << 20      # glibc's own upper bound for its adaptive threshold
"""Bytes: blocks up to this size come from the heap, not their own mapping (32 MiB)."""
TRIM_THRESHOLD = 512 << 20
"""Bytes of free heap kept for the next step before glibc returns it (512 MiB)."""
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3     # mallopt's parameter numbers (malloc.h)
_USER_VARIABLES = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_",
                   "MALLOC_MMAP_MAX_", "MALLOC_ARENA_MAX")


def _user_chose() -> bool:
    return (any(name in os.environ for name in _USER_VARIABLES)
            or "glibc.malloc" in os.environ.get("GLIBC_TUNABLES", ""))


def apply_allocator_policy() -> bool:
    """Keep freed arrays' memory for reuse (see the module docstring); return
    whether the policy was applied."""
    if not sys.platform.startswith("linux") or _user_chose():
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):      # not glibc
        return False
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)
                and mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD))
