"""Tensor methods and operators for the reductions, :mod:`tinynet.ops.math` and
:mod:`tinynet.ops.logical`: ``x.sum(dim)``, ``x.softmax(-1)``, ``x.sin()``,
``x.prod(dim)``, ``x.isclose(y)``, ``x // y``, ``a & b``, ``~a``...

Mixed into :class:`~tinynet.tensor.Tensor` like the in-place methods; each one
dispatches to the op of the same name (PyTorch's names and signatures) and shows
that op's docstring (given by :mod:`tinynet.tensor` once the ops are imported).
"""
from __future__ import annotations

__all__ = ["MathMethods"]


ops = None      # tinynet.ops, bound by tinynet.tensor once it has imported the ops


class MathMethods:
    """Reductions, trigonometric, rounding, logical and bitwise methods of a Tensor."""

    __slots__ = ()

    def sin(self): return ops.sin(self)
    def cos(self): return ops.cos(self)
    def tan(self): return ops.tan(self)
    def asin(self): return ops.asin(self)
    def acos(self): return ops.acos(self)
    def atan(self): return ops.atan(self)
    def sinh(self): return ops.sinh(self)
    def cosh(self): return ops.cosh(self)
    def asinh(self): return ops.asinh(self)
    def acosh(self): return ops.acosh(self)
    def atanh(self): return ops.atanh(self)
    def rsqrt(self): return ops.rsqrt(self)
    def log1p(self): return ops.log1p(self)
    def expm1(self): return ops.expm1(self)
    def log2(self): return ops.log2(self)
    def log10(self): return ops.log10(self)
    def floor(self): return ops.floor(self)
    def ceil(self): return ops.ceil(self)
    def trunc(self): return ops.trunc(self)
    def round(self, *, decimals=0): return ops.round(self, decimals=decimals)
    def lerp(self, end, weight): return ops.lerp(self, end, weight)
    def eq(self, other): return ops.eq(self, other)
    def ne(self, other): return ops.ne(self, other)
    def lt(self, other): return ops.lt(self, other)
    def le(self, other): return ops.le(self, other)
    def gt(self, other): return ops.gt(self, other)
    def ge(self, other): return ops.ge(self, other)
    def equal(self, other): return ops.equal(self, other)

    def isclose(self, other, rtol=1e-05, atol=1e-08, equal_nan=False):
        return ops.isclose(self, other, rtol, atol, equal_nan)

    def prod(self, dim=None, keepdim=False, *, dtype=None, axis=None, keepdims=None):
        return ops.prod(self, dim, keepdim, dtype=dtype, axis=axis, keepdims=keepdims)

    def any(self, dim=None, keepdim=False): return ops.any(self, dim, keepdim)
    def all(self, dim=None, keepdim=False): return ops.all(self, dim, keepdim)

    # Floor division: not differentiable (backward through it is an error, as in PyTorch).
    def floor_divide(self, other): return ops.floor_divide(self, other)
    def __floordiv__(self, other): return ops.floor_divide(self, other)
    def __rfloordiv__(self, other): return ops.floor_divide(other, self)

    # Bitwise on integer tensors, logical on bool tensors; a TypeError on floats.
    def bitwise_and(self, other): return ops.bitwise_and(self, other)
    def bitwise_or(self, other): return ops.bitwise_or(self, other)
    def bitwise_xor(self, other): return ops.bitwise_xor(self, other)
    def bitwise_not(self): return ops.bitwise_not(self)
    def __and__(self, other): return ops.bitwise_and(self, other)
    def __rand__(self, other): return ops.bitwise_and(other, self)
    def __or__(self, other): return ops.bitwise_or(self, other)
    def __ror__(self, other): return ops.bitwise_or(other, self)
    def __xor__(self, other): return ops.bitwise_xor(self, other)
    def __rxor__(self, other): return ops.bitwise_xor(other, self)
    def __invert__(self): return ops.bitwise_not(self)

    # Products beside ``@`` (matmul, in tinynet.tensor)
    def mm(self, mat2): return ops.mm(self, mat2)
    def bmm(self, mat2): return ops.bmm(self, mat2)
    def mv(self, vec): return ops.mv(self, vec)
    def dot(self, other): return ops.dot(self, other)
    def outer(self, vec2): return ops.outer(self, vec2)

    # Reductions
    def sum(self, dim=None, keepdim=False, *, dtype=None, axis=None, keepdims=None):
        return ops.sum(self, dim, keepdim, dtype=dtype, axis=axis, keepdims=keepdims)

    def mean(self, dim=None, keepdim=False, *, dtype=None, axis=None, keepdims=None):
        return ops.mean(self, dim, keepdim, dtype=dtype, axis=axis, keepdims=keepdims)

    def var(self, dim=None, unbiased=None, keepdim=False, *, correction=None,
            axis=None, keepdims=None):
        return ops.var(self, dim, unbiased, keepdim, correction=correction,
                       axis=axis, keepdims=keepdims)

    def std(self, dim=None, unbiased=None, keepdim=False, *, correction=None,
            axis=None, keepdims=None):
        return ops.std(self, dim, unbiased, keepdim, correction=correction,
                       axis=axis, keepdims=keepdims)

    def norm(self, p="fro", dim=None, keepdim=False):
        return ops.norm(self, p, dim, keepdim)

    def max(self, dim=None, keepdim=False, *, axis=None, keepdims=None):
        return ops.max(self, dim, keepdim, axis=axis, keepdims=keepdims)

    def min(self, dim=None, keepdim=False, *, axis=None, keepdims=None):
        return ops.min(self, dim, keepdim, axis=axis, keepdims=keepdims)

    def argmax(self, dim=None, keepdim=False, *, axis=None, keepdims=None):
        return ops.argmax(self, dim, keepdim, axis=axis, keepdims=keepdims)

    def argmin(self, dim=None, keepdim=False, *, axis=None, keepdims=None):
        return ops.argmin(self, dim, keepdim, axis=axis, keepdims=keepdims)

    def logsumexp(self, dim, keepdim=False, *, axis=None, keepdims=None):
        return ops.logsumexp(self, dim, keepdim, axis=axis, keepdims=keepdims)

    def softmax(self, dim=-1, *, axis=None):
        return ops.softmax(self, dim, axis=axis)

    def log_softmax(self, dim=-1, *, axis=None):
        return ops.log_softmax(self, dim, axis=axis)
