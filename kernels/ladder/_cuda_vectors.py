"""Vector loads and stores for the CUDA kernels: several adjacent elements of
an array in one memory instruction (``ld.global.v4.f32``, ``st.global.v2.f64``).

Why: a held-row kernel is bound by how many bytes it has on their way from
memory at once, and a thread of a kernel that loads 4 bytes per instruction
keeps fewer bytes in flight than one that loads 16 (PyTorch's and llm.c's
LayerNorm kernels load ``float4``). Numba has no word for a vector access:
:func:`load_lanes` and :func:`store_lanes` are LLVM intrinsics that read or
write ``lanes`` elements (16 bytes' worth at most: 4 float32 or 2 float64) as
one LLVM vector, which the NVPTX backend turns into one instruction.

The rule that comes with them is **alignment**: a vector access of 16 bytes
must start on a 16-byte boundary (a misaligned one faults the kernel). The
intrinsics promise LLVM that alignment, so the caller must make it true:
every flat ``index`` a multiple of ``lanes``, and every array starting on a
VECTOR_BYTES boundary (:func:`vector_lanes` checks the arrays on the host).

Under Numba's CUDA simulator the kernels are plain Python, and so are these
functions: element by element, after checking that ``index`` is a multiple of
``lanes``, so that the simulated tests catch a misaligned access.
"""
from __future__ import annotations

import numba
import numpy as np

VECTOR_BYTES = 16       # the widest global memory access of one CUDA thread


def address(a) -> int:
    """Where the first element of the NumPy or CuPy array ``a`` lies in memory."""
    data = a.data
    return data.ptr if hasattr(data, "ptr") else a.ctypes.data


def vector_lanes(*arrays) -> int:
    """Elements per vector access for C-contiguous ``arrays`` of one dtype,
    read and written in runs that start at multiples of it within each row:
    VECTOR_BYTES' worth if every array starts on a VECTOR_BYTES boundary and
    its rows (last axis) hold a whole number of vectors, else 1."""
    itemsize = arrays[0].dtype.itemsize
    lanes = VECTOR_BYTES // itemsize
    for a in arrays:
        if address(a) % VECTOR_BYTES or a.shape[-1] % lanes:
            return 1
    return lanes


def _check_index(index, lanes):
    if index % lanes:
        raise ValueError(f"a vector access of {lanes} elements must start at a multiple of "
                         f"{lanes}; got element {index}")


def _flat_position(array, index):
    """The position of flat (C-order) element ``index`` in a 1-D or 2-D array."""
    return index if len(array.shape) == 1 else divmod(index, array.shape[1])


if numba.config.ENABLE_CUDASIM:
    def load_lanes(array, index, into, at, lanes):
        """into[at:at + lanes] = the ``lanes`` elements of ``array`` from flat index ``index``."""
        _check_index(index, lanes)
        for v in range(lanes):
            into[at + v] = array[_flat_position(array, index + v)]

    def store_lanes(array, index, out_of, at, lanes):
        """The ``lanes`` elements of ``array`` from flat index ``index`` =
        out_of[at:at + lanes]."""
        _check_index(index, lanes)
        for v in range(lanes):
            array[_flat_position(array, index + v)] = out_of[at + v]

else:
    from llvmlite import ir
    from numba import types
    from numba.cuda.extending import intrinsic

    def _pointer(context, builder, array_type, array_value, index_type, index):
        """The LLVM pointer to flat element ``index`` of a C-contiguous array."""
        index = context.cast(builder, index, index_type, types.intp)
        data = context.make_array(array_type)(context, builder, array_value)
        return builder.gep(data.data, [index], inbounds=True)

    def _lanes_signature(array, index, local, at, lanes):
        """The intrinsics' signature, or None (a typing error) for other arguments."""
        if (isinstance(array, types.Array) and array.layout == "C"
                and isinstance(local, types.Array) and local.dtype == array.dtype
                and isinstance(index, types.Integer) and isinstance(at, types.Integer)
                and isinstance(lanes, types.IntegerLiteral)
                and lanes.literal_value * np.dtype(str(array.dtype)).itemsize <= VECTOR_BYTES):
            return types.void(array, index, local, at, lanes)
        return None

    def _accesses(context, builder, signature, args):
        """(pointer to the run of ``lanes`` elements of the global array, as a
        vector type; pointers to the ``lanes`` elements of the local array;
        the run's alignment in bytes), for the intrinsics' codegen."""
        array_type, index_type, local_type, at_type, lanes_type = signature.args
        array, index, local, at, _ = args
        lanes = lanes_type.literal_value
        element = context.get_data_type(array_type.dtype)
        run = _pointer(context, builder, array_type, array, index_type, index)
        run = builder.bitcast(run, ir.VectorType(element, lanes).as_pointer())
        first = _pointer(context, builder, local_type, local, at_type, at)
        locals_ = [builder.gep(first, [context.get_constant(types.intp, v)])
                   for v in range(lanes)]
        return run, locals_, lanes * context.get_abi_sizeof(element)

    def _lane(context, v):
        return context.get_constant(types.int32, v)

    @intrinsic
    def load_lanes(typingctx, array, index, into, at, lanes):
        """into[at:at + lanes] = the ``lanes`` elements of ``array`` from flat
        index ``index``, in one load (aligned: see the module's docstring)."""
        def codegen(context, builder, signature, args):
            run, locals_, alignment = _accesses(context, builder, signature, args)
            vector = builder.load(run, align=alignment)
            for v, pointer in enumerate(locals_):
                builder.store(builder.extract_element(vector, _lane(context, v)), pointer)
            return context.get_dummy_value()
        signature = _lanes_signature(array, index, into, at, lanes)
        return None if signature is None else (signature, codegen)

    @intrinsic
    def store_lanes(typingctx, array, index, out_of, at, lanes):
        """The ``lanes`` elements of ``array`` from flat index ``index`` =
        out_of[at:at + lanes], in one store (aligned: see the module's docstring)."""
        def codegen(context, builder, signature, args):
            run, locals_, alignment = _accesses(context, builder, signature, args)
            vector = ir.Constant(run.type.pointee, ir.Undefined)
            for v, pointer in enumerate(locals_):
                vector = builder.insert_element(vector, builder.load(pointer),
                                                _lane(context, v))
            builder.store(vector, run, align=alignment)
            return context.get_dummy_value()
        signature = _lanes_signature(array, index, out_of, at, lanes)
        return None if signature is None else (signature, codegen)
