"""PyTorch's type promotion: the dtype of ``a op b`` for the binary ops, and the
float32 that the smooth functions (exp, log, sin...) compute integers in.

NumPy and PyTorch agree on two tensors of one kind (int32 + int64 is int64) but not
on the rest: in PyTorch the operand of the higher kind decides, and a Python float
counts as float32 (its default dtype), so ``int64 tensor * 1.5`` and
``int64 / int64`` are float32 where NumPy makes float64, and a 0-d float64 tensor
does not promote a float32 one.
"""
from __future__ import annotations

import numbers

import numpy as np

__all__ = ["result_dtype", "promoted", "floating"]


_KINDS = {"b": 0, "u": 1, "i": 1, "f": 2, "c": 3}      # bool < integer < float < complex
_DEFAULT = {0: np.bool_, 1: np.int64, 2: np.float32, 3: np.complex64}


def _kind(x) -> int:
    if isinstance(x, (bool, np.bool_)):
        return 0
    if hasattr(x, "dtype"):
        return _KINDS[x.dtype.kind]
    return 1 if isinstance(x, numbers.Integral) else 3 if isinstance(x, complex) else 2


def result_dtype(a, b):
    """The dtype of ``a op b`` by PyTorch's promotion: the operand of the higher kind
    (bool < integer < float < complex) decides, a tensor with dims before a 0-d one
    before a Python number; a number decides only with the default dtype of its
    kind (float32 for a float: ``int64 tensor * 1.5`` is float32, as in PyTorch,
    where NumPy would make it float64); two tensors of one rank and kind promote."""
    kind_a, kind_b = _kind(a), _kind(b)
    if not (hasattr(a, "dtype") or hasattr(b, "dtype")):        # two numbers
        return np.dtype(_DEFAULT[max(kind_a, kind_b)])
    if kind_a != kind_b:
        higher = a if kind_a > kind_b else b
        return higher.dtype if hasattr(higher, "dtype") else np.dtype(_DEFAULT[_kind(higher)])
    rank_a = 2 if getattr(a, "ndim", 0) else 1 if hasattr(a, "dtype") else 0
    rank_b = 2 if getattr(b, "ndim", 0) else 1 if hasattr(b, "dtype") else 0
    if rank_a != rank_b:
        return (a if rank_a > rank_b else b).dtype
    return np.promote_types(a.dtype, b.dtype)


def _keeps(dtype, number, true_division):
    """Whether an array of ``dtype`` op a Python ``number`` keeps ``dtype`` (in NumPy
    as in PyTorch): a float array with an int or a float, an integer array with an
    int but for true division."""
    kind = dtype.kind
    return ((kind == "f" and type(number) in (int, float))
            or (kind in "iu" and type(number) is int and not true_division))


def promoted(a, b, true_division=False):
    """``a`` and ``b`` (arrays or Python numbers) cast to :func:`result_dtype`, so that
    NumPy computes ``a op b`` in it (a Python number of a kind not above it keeps the
    result's dtype in NumPy too); ``true_division`` makes integers float32."""
    a_dtype, b_dtype = getattr(a, "dtype", None), getattr(b, "dtype", None)
    if a_dtype is not None and a_dtype == b_dtype and not (true_division and a_dtype.kind in "biu"):
        return a, b                                        # the usual cases: one dtype,
    if (a_dtype is not None and _keeps(a_dtype, b, true_division)) or (
            b_dtype is not None and _keeps(b_dtype, a, true_division)):
        return a, b                                        # or an array and a number
    dtype = result_dtype(a, b)
    if true_division and dtype.kind in "biu":
        dtype = np.dtype(np.float32)
    return tuple(x.astype(dtype) if hasattr(x, "dtype") and x.dtype != dtype else x
                 for x in (a, b))


def floating(x):
    """``x``, or ``x`` as float32 (PyTorch's default dtype) when it holds integers or
    bools: what the smooth functions (exp, log, sin...) compute in, as ``torch.exp``."""
    return x if x.dtype.kind in "fc" else x.astype(np.float32)
