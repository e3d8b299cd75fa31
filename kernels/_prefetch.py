"""Software prefetch for Numba, written as an LLVM intrinsic: Numba has no word
for it.

Why: one core that reads a large array row by row, with a few hundred
instructions of work between short rows, does not keep enough of the array
on its way from memory: the hardware prefetchers alone left the CPU kernels
at (32768, 256) on one thread waiting for rows. Asking for the row a few KB
ahead, one request per cache line at the start of each row, made them
1.1-1.5x faster there (benchmarks/layernorm.py --prefetch).

A prefetch is a hint: it changes no result, and a request for an address
outside the array does not fault (the kernels do not make one anyway). It
loads into the L2 cache (``prefetcht1`` on x86), not L1: the row is needed
several rows later, and L1 is kept for the rows being worked on.

Numba's on-disk cache checks only the source file of the function it caches
(``cpu_3_pipelined.py``), not this one: after editing this file, touch that one. The
address of an element is computed as for the streaming stores (``_streaming_stores``).
"""
from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from ._streaming_stores import element_pointer, is_element_of_2d_array

CACHE_LINE = 64                 # bytes

_READ = 0                       # llvm.prefetch's arguments: a read,
_LOCALITY_L2 = 2                # ... kept in L2 and below (3 would be L1, 0 none),
_DATA = 1                       # ... of data, not instructions


@intrinsic
def prefetch(typingctx, array, row, column):
    """Start loading the cache line that holds ``array[row, column]`` (2-D, C order)."""
    if not is_element_of_2d_array(array, row, column):
        return None                     # no match: Numba reports a typing error

    def codegen(context, builder, signature, args):
        array_value, row_index, column_index = args
        pointer = element_pointer(context, builder, array, array_value, row_index, column_index)
        address = builder.bitcast(pointer, ir.IntType(8).as_pointer())
        i32 = ir.IntType(32)
        llvm_prefetch = builder.module.declare_intrinsic(
            "llvm.prefetch", [address.type],
            ir.FunctionType(ir.VoidType(), [address.type, i32, i32, i32]))
        builder.call(llvm_prefetch, [address, i32(_READ), i32(_LOCALITY_L2), i32(_DATA)])
        return context.get_dummy_value()
    return types.void(array, types.intp, types.intp), codegen
