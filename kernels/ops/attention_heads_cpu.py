"""The attention of every head at once on the CPU, the heads in parallel on Numba's workers.

ScaledDotProductAttention (tinynet/ops/attention.py) makes six batched products
a call, each of them, for a GPT's (12, 4, 64, 32) heads, 48 small ones. OpenBLAS
runs those one after another on one core, and two threads calling its
``cblas_sgemm`` at once ran slower than one thread: each call takes buffers
under a lock. NumPy's own OpenBLAS also exports the small-matrix kernels it
keeps for CPUs with AVX-512 (``sgemm_small_kernel_b0_{nn,nt,tn}_SKYLAKEX``),
which pack nothing and take no lock. Here one ``prange`` over the heads runs
each head's products by those kernels, with attention_softmax_cpu's row loops between
them while the head's scores are in the cache::

    forward:   S = q kᵀ,  P = softmax(scale · S + mask),  O = P v
    backward:  dP = dO vᵀ,  dV = Pᵀ dO,  dS = scale · P ∘ (dP − rowsum(dP ∘ P)),
               dQ = dS k,  dK = dSᵀ q

The kernels are column-major: a row-major (m, n) matrix whose rows are ld
numbers apart is their (n, m) matrix with leading dimension ld, so that S = q kᵀ
is their Sᵀ = k qᵀ, with k "transposed" and q not ("tn"). The heads' rows may
lie apart, as a GPT's q, k and v do in the projection they are views of.

For float32 q, k and v of the same (batch, heads), rows contiguous, with no
dropout and no mask or one of the scores' (L, S) shape, on an OpenBLAS that has
those kernels (:func:`runs_all_heads`). Anything else runs the spec's composite
(attention_heads_spec.py) with attention_softmax_cpu's compiled softmax between
its batched products. The GPT's training iteration (the cpu recipe) took less
time with this kernel than with the products, timed alternately in one process.
"""
from __future__ import annotations

import ctypes
import functools

import numpy as np
from llvmlite import ir
from numba import njit, prange, types
from numba.extending import intrinsic

from tinynet.ops.layout import empty_gradients_like, empty_product_like

from . import attention_heads_spec as spec
from .attention_softmax_cpu import (
    _backward_rows,
    _softmax_rows_float32,
    attention_softmax_backward,
    attention_softmax_forward,
)

__all__ = ["attention_heads_forward", "attention_heads_backward", "runs_all_heads",
           "small_kernels"]

_PRODUCTS = ("tn", "nn", "nt")      # op(A) op(B): "t" transposes, in column-major terms
_F = np.float32


@functools.cache
def small_kernels():
    """The addresses of OpenBLAS's kernels C = op(A) op(B) for small float32
    matrices, (tn, nn, nt), for the CPU type it runs on; None where NumPy's BLAS is
    not OpenBLAS or has none for this CPU (its own test: whether it would use them
    for 16 × 16 × 16)."""
    from threadpoolctl import threadpool_info
    for library in threadpool_info():
        if library.get("internal_api") != "openblas" or not library.get("architecture"):
            continue
        core = library["architecture"].upper()
        try:
            loaded = ctypes.CDLL(library["filepath"])
        except OSError:
            return None
        permit = getattr(loaded, f"sgemm_small_matrix_permit_{core}", None)
        kernels = [getattr(loaded, f"sgemm_small_kernel_b0_{p}_{core}", None) for p in _PRODUCTS]
        if permit is None or None in kernels:
            return None
        permit.argtypes = [ctypes.c_int, ctypes.c_int] + [ctypes.c_int64] * 3 + [ctypes.c_float] * 2
        if not permit(0, 0, 16, 16, 16, 1.0, 0.0):       # a generic stand-in, not a kernel
            return None
        return tuple(ctypes.cast(k, ctypes.c_void_p).value for k in kernels)
    return None


@intrinsic
def _product(typingctx, kernel, m, n, k, a, lda, b, ldb, c, ldc):
    """``kernel(m, n, k, a, lda, 1, b, ldb, c, ldc)``: C (m, n) = op(A) op(B), through
    the kernel's address; the arrays are given as addresses too."""
    signature = types.int32(*[types.int64] * 10)

    def codegen(context, builder, signature, arguments):
        kernel, m, n, k, a, lda, b, ldb, c, ldc = arguments
        integer, pointer = ir.IntType(64), ir.FloatType().as_pointer()
        kernel_type = ir.FunctionType(ir.IntType(32), [integer] * 3 + [
            pointer, integer, ir.FloatType(), pointer, integer, pointer, integer])
        function = builder.inttoptr(kernel, kernel_type.as_pointer())
        return builder.call(function, [m, n, k, builder.inttoptr(a, pointer), lda,
                                       ir.Constant(ir.FloatType(), 1.0),
                                       builder.inttoptr(b, pointer), ldb,
                                       builder.inttoptr(c, pointer), ldc])
    return signature, codegen


@njit(inline="always")
def _multiply(kernel, m, n, k, a, b, c):
    """C (m, n) = op(A) op(B) by the kernel at address ``kernel``, for the row-major
    2-D views a, b and c (column-major, each is its transpose, its rows' distance the
    leading dimension)."""
    _product(kernel, m, n, k,
             np.int64(a.ctypes.data), np.int64(a.strides[0] // a.itemsize),
             np.int64(b.ctypes.data), np.int64(b.strides[0] // b.itemsize),
             np.int64(c.ctypes.data), np.int64(c.strides[0] // c.itemsize))


@njit(parallel=True, cache=True, error_model="numpy")
def _forward_heads(kernels, q, k, v, bias_rows, scale, weights, out):
    tn, nn, _ = kernels
    heads = q.shape[1]
    queries, keys, depth, width = q.shape[2], k.shape[2], q.shape[3], v.shape[3]
    for i in prange(q.shape[0] * heads):
        b, h = i // heads, i % heads
        _multiply(tn, keys, queries, depth, k[b, h], q[b, h], weights[b, h])     # S = q kᵀ
        _softmax_rows_float32(weights[b, h], bias_rows, scale)
        _multiply(nn, width, queries, keys, v[b, h], weights[b, h], out[b, h])   # O = P v


@njit(parallel=True, cache=True, error_model="numpy")
def _backward_heads(kernels, q, k, v, weights, grad, scale, grad_scores, dq, dk, dv):
    tn, nn, nt = kernels
    heads = q.shape[1]
    queries, keys, depth, width = q.shape[2], k.shape[2], q.shape[3], v.shape[3]
    for i in prange(q.shape[0] * heads):
        b, h = i // heads, i % heads
        p, g, s = weights[b, h], grad[b, h], grad_scores[b, h]
        _multiply(tn, keys, queries, width, v[b, h], g, s)            # dP = dO vᵀ
        _multiply(nt, width, keys, queries, g, p, dv[b, h])           # dV = Pᵀ dO
        _backward_rows(s, p, scale)                                   # dS, in place of dP
        _multiply(nn, depth, queries, keys, k[b, h], s, dq[b, h])     # dQ = dS k
        _multiply(nt, depth, keys, queries, q[b, h], s, dk[b, h])     # dK = dSᵀ q


def _heads_fit(*arrays):
    """float32 NumPy arrays (batch, heads, rows, columns) of the same batch and heads,
    each row contiguous."""
    first = arrays[0]
    return all(isinstance(a, np.ndarray) and a.dtype == np.float32 and a.ndim == 4
               and a.shape[:2] == first.shape[:2] and a.strides[3] == a.itemsize
               and a.strides[2] % a.itemsize == 0 and a.strides[2] > 0 for a in arrays)


def runs_all_heads(q, k, v, bias, drop=None) -> bool:
    """Whether the compiled all-heads loops take this attention (see the module
    docstring); the spec's composite runs it otherwise."""
    return (drop is None and small_kernels() is not None and _heads_fit(q, k, v)
            and 0 not in q.shape and 0 not in k.shape
            and (bias is None or (isinstance(bias, np.ndarray) and bias.dtype == np.float32
                                  and bias.shape == (q.shape[2], k.shape[2]))))


def attention_heads_forward(q, k, v, bias, scale, drop=None):
    """``(O, P)``, as attention_heads_spec.attention_heads_forward; O laid out as q is."""
    if not runs_all_heads(q, k, v, bias, drop):
        return spec.attention_heads_forward(q, k, v, bias, scale, drop,
                                            softmax_forward=attention_softmax_forward)
    keys = k.shape[2]
    bias_rows = np.zeros((1, keys), _F) if bias is None else np.ascontiguousarray(bias)
    weights = np.empty(q.shape[:3] + (keys,), _F)
    out = empty_product_like(np, q.shape[:3] + (v.shape[3],), _F, q)
    _forward_heads(small_kernels(), q, k, v, bias_rows, _F(scale), weights, out)
    return out, weights


def attention_heads_backward(q, k, v, weights, drop, grad, grad_weights, scale, needs,
                             bias_shape):
    """``(dQ, dK, dV, dM)``, as attention_heads_spec.attention_heads_backward; each
    gradient laid out as its input. The all-heads loops compute dQ, dK and dV
    whichever are needed, and no dM."""
    if (grad is None or grad_weights is not None or (bias_shape is not None and needs[3])
            or not runs_all_heads(q, k, v, None, drop) or not _heads_fit(q, k, v, grad)
            or weights.dtype != np.float32 or not weights.flags.c_contiguous):
        return spec.attention_heads_backward(q, k, v, weights, drop, grad, grad_weights, scale,
                                             needs, bias_shape,
                                             softmax_backward=attention_softmax_backward)
    dq, dk, dv = empty_gradients_like((q, k, v), _F)     # one buffer where q, k, v share one
    grad_scores = np.empty_like(weights)
    _backward_heads(small_kernels(), q, k, v, weights, grad, _F(scale), grad_scores, dq, dk, dv)
    return dq, dk, dv, None
