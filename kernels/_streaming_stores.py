"""Streaming (non-temporal) stores for Numba, written as an LLVM intrinsic:
Numba has no word for them.

Why: an ordinary store first reads the cache line it writes into ("read for
ownership"), so writing an array that does not fit in the cache costs a read
and a write of memory, and the output pushes the kernel's inputs out of the
cache on its way. A streaming store (``vmovntps`` on x86) sends whole lines
straight to memory. That is only worth it for outputs that nobody will read
back from the cache, i.e. outputs larger than it (``cpu.STREAMING_MIN_BYTES``).

Two rules come with them:

* **Alignment.** :func:`store_streaming` tells LLVM that its addresses are
  ALIGNMENT-byte aligned, which the vector instructions it becomes need (a
  misaligned ``vmovntps`` faults). The caller must pass arrays whose rows start
  on an ALIGNMENT boundary (:func:`rows_are_aligned`): LLVM vectorizes a loop
  over a row's columns from column 0 on, in vectors of 4 to 16 numbers, so each
  vector then starts at a multiple of its own size. (The claim is made per
  element, so it is not true of the scalar stores that finish a row after the
  vector loop; those have no alignment requirement on x86, and tests check
  every element.)
* **Ordering.** Streaming stores may become visible to other cores later than
  the ordinary stores after them. :func:`store_fence` (a sequentially
  consistent fence; on x86 a locked instruction, which drains the
  write-combining buffers) after a thread's last streaming store makes them
  visible before anything the thread does next, such as telling the main
  thread it has finished.

The results are bit for bit those of ordinary stores (``tests/test_kernels_cpu.py``).
Numba's on-disk cache checks only the source file of the function it caches
(``cpu_3_pipelined.py``), not this one: after editing this file, touch that one.
"""
from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.extending import intrinsic

ALIGNMENT = 64          # bytes: a cache line, and the widest (AVX-512) vector


def rows_are_aligned(a) -> bool:
    """Whether every row of the 2-D C-contiguous NumPy array ``a`` starts on an
    ALIGNMENT boundary, as :func:`store_streaming` needs."""
    row_bytes = a.shape[1] * a.itemsize
    return a.ctypes.data % ALIGNMENT == 0 and row_bytes % ALIGNMENT == 0


def is_element_of_2d_array(array, row, column) -> bool:
    """Whether Numba types ``array, row, column`` name an element of a 2-D
    C-contiguous array (for this module's intrinsics and _prefetch's)."""
    return (isinstance(array, types.Array) and array.ndim == 2 and array.layout == "C"
            and isinstance(row, types.Integer) and isinstance(column, types.Integer))


def element_pointer(context, builder, array_type, array_value, row, column):
    """The LLVM pointer to ``array[row, column]`` of a 2-D C-contiguous array;
    the indices are not checked."""
    data = context.make_array(array_type)(context, builder, array_value)
    columns = builder.extract_value(data.shape, 1)
    index = builder.add(builder.mul(row, columns), column)
    return builder.gep(data.data, [index], inbounds=True)


@intrinsic
def store_streaming(typingctx, array, row, column, value):
    """``array[row, column] = value`` as a streaming store, for a 2-D
    C-contiguous array with aligned rows; the indices are not checked."""
    if not is_element_of_2d_array(array, row, column):
        return None                     # no match: Numba reports a typing error

    def codegen(context, builder, signature, args):
        array_value, row_index, column_index, element = args
        pointer = element_pointer(context, builder, array, array_value, row_index, column_index)
        store = builder.store(element, pointer)
        store.align = ALIGNMENT
        store.set_metadata("nontemporal",
                           builder.module.add_metadata([ir.Constant(ir.IntType(32), 1)]))
        return context.get_dummy_value()
    return types.void(array, types.intp, types.intp, array.dtype), codegen


@intrinsic
def store_fence(typingctx):
    """Order this thread's streaming stores before its later memory accesses."""
    def codegen(context, builder, signature, args):
        builder.fence("seq_cst")
        return context.get_dummy_value()
    return types.void(), codegen
