"""The product of the elements, over all of them or along one dim: ``prod``.

The gradient of x_i in Π x is the product of the *other* elements. Dividing
the product by x_i gives it only where x_i != 0, so the backward follows
PyTorch case by case (and agrees with it at 0, inf and NaN):

* no zero in the input: ``grad * (prod / x)``;
* over all elements, two zeros or more: every product of the others holds a
  0, and the gradient is 0;
* otherwise (one zero over all elements; any zero for ``prod(dim)``): the
  products of the others, built without division from cumulative products
  from the left and from the right: for [a, b, c], [1, a, ab] · [bc, c, 1].
"""
from __future__ import annotations

import numbers

from ..autograd import Function
from ..backend import get_array_module
from .conversion import computed_in
from .elementwise import no_fp_warnings
from .reduction import normalize_axis

__all__ = ["prod"]


def products_of_others(x, axis):
    """For each element of ``x``, the product of the other elements along ``axis``."""
    xp = get_array_module(x)
    x = xp.moveaxis(x, axis, -1)
    ones = xp.ones_like(x[..., :1])
    before = xp.cumprod(xp.concatenate([ones, x[..., :-1]], axis=-1), axis=-1)
    after = xp.cumprod(xp.concatenate([ones, x[..., :0:-1]], axis=-1), axis=-1)[..., ::-1]
    return xp.moveaxis(before * after, -1, axis)


@no_fp_warnings
class Prod(Function):
    """Π x over ``axis`` (an int, or None for every element); see the module docstring."""

    @staticmethod
    def forward(ctx, x, axis, keepdim):
        out = x.prod(axis=axis, keepdims=keepdim)
        ctx.save_for_backward(x, out)
        ctx.meta = (axis, keepdim)
        return out

    @staticmethod
    def backward(ctx, grad):
        x, out = ctx.saved
        axis, keepdim = ctx.meta
        xp = get_array_module(x)
        if x.ndim == 0:
            return grad, None, None
        if axis is None:
            zeros = int((x == 0).sum())
            if zeros > 1:
                return xp.zeros_like(x), None, None
            if zeros == 1:
                return grad * products_of_others(x.reshape(-1), 0).reshape(x.shape), None, None
        elif not keepdim:
            grad, out = xp.expand_dims(grad, axis), xp.expand_dims(out, axis)
        if axis is None or not bool((x == 0).any()):
            return grad * (out / x), None, None
        return grad * products_of_others(x, axis), None, None


def prod(input, dim=None, keepdim=False, *, dtype=None, axis=None, keepdims=None):
    """The product of all elements (``dim=None``) or along the int ``dim``.

    An empty product is 1, the dtype is kept for floats (integers and bools give
    int64, as in PyTorch). A 0-d input is its own product. With ``dtype`` the
    input is cast to it first, and the product is ``dtype``.
    """
    dim = dim if axis is None else axis
    keepdim = bool(keepdim if keepdims is None else keepdims)
    if dim is not None and not isinstance(dim, numbers.Integral):
        raise TypeError(f"prod: dim must be an int or None, not {type(dim).__name__} "
                        "(PyTorch's prod reduces one dim)")
    if dim is not None:
        dim = None if input.ndim == 0 else normalize_axis(dim, input.ndim)
    if dtype is not None or input.dtype.kind == "u":
        return computed_in(Prod, input, dtype, dim, keepdim)
    return Prod.apply(input, dim, keepdim)
