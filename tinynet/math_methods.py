"""Tensor methods and operators for :mod:`tinynet.ops.math`, :mod:`tinynet.ops.logical`
and ``prod``: ``x.sin()``, ``x.prod(dim)``, ``x.isclose(y)``, ``x // y``, ``a & b``, ``~a``...

Mixed into :class:`~tinynet.tensor.Tensor` like the in-place methods; each one
dispatches to the op of the same name (PyTorch's names and signatures) and shows
that op's docstring (given by :mod:`tinynet.tensor` once the ops are imported).
"""
from __future__ import annotations

from . import tensor as _tensor

__all__ = ["MathMethods"]


def _ops():
    return _tensor.ops      # bound once tinynet.tensor has imported the ops


class MathMethods:
    """Trigonometric, rounding, logical and bitwise methods of a Tensor."""

    __slots__ = ()

    def sin(self): return _ops().sin(self)
    def cos(self): return _ops().cos(self)
    def tan(self): return _ops().tan(self)
    def asin(self): return _ops().asin(self)
    def acos(self): return _ops().acos(self)
    def atan(self): return _ops().atan(self)
    def sinh(self): return _ops().sinh(self)
    def cosh(self): return _ops().cosh(self)
    def asinh(self): return _ops().asinh(self)
    def acosh(self): return _ops().acosh(self)
    def atanh(self): return _ops().atanh(self)
    def rsqrt(self): return _ops().rsqrt(self)
    def floor(self): return _ops().floor(self)
    def ceil(self): return _ops().ceil(self)
    def trunc(self): return _ops().trunc(self)
    def round(self, *, decimals=0): return _ops().round(self, decimals=decimals)
    def lerp(self, end, weight): return _ops().lerp(self, end, weight)
    def eq(self, other): return _ops().eq(self, other)
    def ne(self, other): return _ops().ne(self, other)
    def lt(self, other): return _ops().lt(self, other)
    def le(self, other): return _ops().le(self, other)
    def gt(self, other): return _ops().gt(self, other)
    def ge(self, other): return _ops().ge(self, other)
    def equal(self, other): return _ops().equal(self, other)

    def isclose(self, other, rtol=1e-05, atol=1e-08, equal_nan=False):
        return _ops().isclose(self, other, rtol, atol, equal_nan)

    def prod(self, dim=None, keepdim=False, *, dtype=None, axis=None, keepdims=None):
        return _ops().prod(self, dim, keepdim, dtype=dtype, axis=axis, keepdims=keepdims)

    def any(self, dim=None, keepdim=False): return _ops().any(self, dim, keepdim)
    def all(self, dim=None, keepdim=False): return _ops().all(self, dim, keepdim)

    # Floor division: not differentiable (backward through it is an error, as in PyTorch).
    def floor_divide(self, other): return _ops().floor_divide(self, other)
    def __floordiv__(self, other): return _ops().floor_divide(self, other)
    def __rfloordiv__(self, other): return _ops().floor_divide(other, self)

    # Bitwise on integer tensors, logical on bool tensors; a TypeError on floats.
    def bitwise_and(self, other): return _ops().bitwise_and(self, other)
    def bitwise_or(self, other): return _ops().bitwise_or(self, other)
    def bitwise_xor(self, other): return _ops().bitwise_xor(self, other)
    def bitwise_not(self): return _ops().bitwise_not(self)
    def __and__(self, other): return _ops().bitwise_and(self, other)
    def __rand__(self, other): return _ops().bitwise_and(other, self)
    def __or__(self, other): return _ops().bitwise_or(self, other)
    def __ror__(self, other): return _ops().bitwise_or(other, self)
    def __xor__(self, other): return _ops().bitwise_xor(self, other)
    def __rxor__(self, other): return _ops().bitwise_xor(other, self)
    def __invert__(self): return _ops().bitwise_not(self)
