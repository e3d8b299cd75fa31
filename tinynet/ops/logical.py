"""Bool results and bitwise operators: isclose, any, all, ``&``, ``|``, ``^``, ``~``.

None of these is differentiable (their results are bool or integer), so none is
a graph node: they compute on the arrays and return tensors outside the graph,
as comparisons do.
"""
from __future__ import annotations

import builtins
import numbers
import operator

import numpy as np

from ..backend import get_array_module
from ..tensor import Tensor
from .elementwise import broadcast, operand
from .elementwise import compare as _compare
from .reduction import resolve_dims

__all__ = ["isclose", "any", "all", "bitwise_and", "bitwise_or", "bitwise_xor",
           "bitwise_not", "eq", "ne", "lt", "le", "gt", "ge", "equal"]


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Where ``|input - other| <= atol + rtol |other|`` (bool, broadcast), as
    ``torch.isclose``: equal values are close (inf to inf of the same sign), NaN
    is close to NaN only with ``equal_nan``. Both tensors of one dtype; the
    tolerance is computed in that dtype (a bool pair in float32)."""
    for name, t in (("input", input), ("other", other)):
        if not isinstance(t, Tensor):
            raise TypeError(f"isclose: {name} must be a Tensor, not {type(t).__name__}")
    if input.dtype != other.dtype:
        raise TypeError(f"isclose: expected both tensors of one dtype, got {input.dtype} "
                        f"and {other.dtype}")
    if rtol < 0 or atol < 0:
        raise ValueError(f"isclose: rtol and atol must be >= 0, got rtol={rtol}, atol={atol}")
    a, b = input.array, other.array
    xp = get_array_module(a, b)
    close = broadcast("isclose", operator.eq, a, b)
    floating = np.issubdtype(a.dtype, np.floating)
    if equal_nan and floating:
        close = close | (xp.isnan(a) & xp.isnan(b))
    if rtol != 0 or atol != 0:
        if a.dtype == np.bool_:
            a, b = a.astype(np.float32), b.astype(np.float32)
        with np.errstate(all="ignore"):
            allowed = atol + xp.abs(rtol * b)
            actual = xp.abs(a - b)
            close = close | (xp.isfinite(actual) & (actual <= allowed))
    return Tensor._make(xp.asarray(close))


def _truth(input, dim, keepdim, reduce):
    if dim is not None and not isinstance(dim, numbers.Integral) and len(dim) == 0:
        axes = ()                       # dim=(): each element's own truth, as in torch.any
    else:
        axes, keepdim = resolve_dims(input, dim, keepdim)
    data = input.array
    xp = get_array_module(data)
    nonzero = data if data.dtype == np.bool_ else data != 0     # NaN counts as True
    return Tensor._make(xp.asarray(reduce(nonzero, axis=axes, keepdims=keepdim)))


def any(input, dim=None, keepdim=False):
    """Whether any element (over ``dim``, an int or a tuple) is non-zero: bool,
    False over an empty axis. NaN is non-zero."""
    return _truth(input, dim, keepdim, lambda a, **kw: a.any(**kw))


def all(input, dim=None, keepdim=False):
    """Whether every element (over ``dim``) is non-zero: bool, True over an empty axis."""
    return _truth(input, dim, keepdim, lambda a, **kw: a.all(**kw))


def _integral(name, x):
    """The array or number behind a bitwise operand; TypeError unless bool or integer."""
    x = operand(x)
    data = x.array if isinstance(x, Tensor) else x
    dtype = getattr(data, "dtype", None)
    if dtype is None:
        if not isinstance(data, numbers.Integral):
            raise TypeError(f"{name}: expected a bool or integer operand, got "
                            f"{type(data).__name__} {data!r}")
    elif dtype.kind not in "biu":
        raise TypeError(f"{name}: only bool and integer tensors, not dtype {dtype} "
                        "(for a logical operation on floats, compare them first: x != 0)")
    return data


def _bitwise(name, op, input, other):
    a, b = _integral(name, input), _integral(name, other)
    if not builtins.any(hasattr(x, "dtype") for x in (a, b)):
        raise TypeError(f"{name}: expected at least one tensor")
    return Tensor._make(get_array_module(a, b).asarray(broadcast(name, op, a, b)))


def bitwise_and(input, other):
    """``input & other``: logical and for bools, bitwise for integers (broadcast)."""
    return _bitwise("bitwise_and", operator.and_, input, other)


def bitwise_or(input, other):
    """``input | other``: logical or for bools, bitwise for integers."""
    return _bitwise("bitwise_or", operator.or_, input, other)


def bitwise_xor(input, other):
    """``input ^ other``: exclusive or, logical for bools, bitwise for integers."""
    return _bitwise("bitwise_xor", operator.xor, input, other)


def bitwise_not(input):
    """``~input``: logical not for bools, bitwise not for integers (~5 = -6)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"bitwise_not: expected a Tensor, not {type(input).__name__}")
    return Tensor._make(operator.invert(_integral("bitwise_not", input)))


def _comparison(name, doc):
    def compare(input, other):
        return _compare(name, input, other)
    compare.__name__, compare.__doc__ = name, doc
    return compare


eq = _comparison("eq", "``input == other`` elementwise, broadcast: a bool tensor (``torch.eq``).")
ne = _comparison("ne", "``input != other`` elementwise, broadcast: a bool tensor (``torch.ne``).")
lt = _comparison("lt", "``input < other`` elementwise, broadcast: a bool tensor (``torch.lt``).")
le = _comparison("le", "``input <= other`` elementwise, broadcast: a bool tensor (``torch.le``).")
gt = _comparison("gt", "``input > other`` elementwise, broadcast: a bool tensor (``torch.gt``).")
ge = _comparison("ge", "``input >= other`` elementwise, broadcast: a bool tensor (``torch.ge``).")


def equal(input, other) -> bool:
    """Whether the two tensors have the same shape and the same elements, a Python bool
    (``torch.equal``; NaN equals nothing)."""
    return tuple(input.shape) == tuple(other.shape) and builtins.bool(
        get_array_module(input.array).all(input.array == other.array))
