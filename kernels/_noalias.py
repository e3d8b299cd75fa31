"""``@njit(noalias=True)``: Numba's missing ``restrict``.

Why: a loop that writes one array while reading others may only be vectorized
if the arrays do not overlap. Numba cannot know that they don't, so LLVM
compiles such a loop twice and, each time the loop starts, compares the address
range of every array it writes with that of every array it reads before it picks
the vector version. The backward's loop over a row writes dx and two rows of
scratch sums and reads five rows: about 200 instructions of comparisons per row,
as many as the loop itself takes for a row of 128 numbers
(tools/count_instructions.py counts them).

Numba's compiler has the flag that removes them (``Flags.noalias``: it puts
LLVM's ``noalias`` on every pointer argument of the function; ``parallel=True``
sets it on the functions it outlines when it can prove it), but ``@njit`` does
not take it as an option (Numba pull request #9108 proposed that, unmerged).
Registering the option takes one line, below. Where a Numba version lacks the
flag, :data:`NOALIAS` is empty and the kernels keep their run-time checks.

The promise is the caller's: while a ``noalias`` function runs, an array it
writes must not share memory with any other array it is passed (arrays it only
reads may). The CPU kernels write only arrays they have just allocated.

Numba's on-disk cache checks only the file of the function it caches
(``cpu_3_pipelined.py``), not this one: after editing this file, touch that one.
"""
from __future__ import annotations

from numba.core import compiler, cpu, options


def _register() -> bool:
    if "noalias" not in compiler.Flags.options:
        return False
    cpu.CPUTargetOptions.noalias = options.TargetOptions.Mapping("noalias")
    return True


# The keyword arguments to add to @njit: {"noalias": True}, or {} where unsupported.
NOALIAS = {"noalias": True} if _register() else {}
