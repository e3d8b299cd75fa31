"""Binary elementwise operations, with NumPy broadcasting, and the helpers every
elementwise op shares (the unary ones are in unary.py).

Each backward returns the local derivative times the incoming gradient,
summed back to the input's shape by :func:`~tinynet.autograd.unbroadcast`
when the input was broadcast. Python numbers are constants: they get no
gradient. The result's dtype is PyTorch's (promotion.py): float32 stays float32,
an integer tensor times 1.5 or divided is float32.

At the edges (0, inf, NaN) values and gradients are PyTorch's. inf and NaN are
values, not errors: the ops raise no NumPy warnings for them
(:func:`no_fp_warnings`), and a gradient that PyTorch defines by a mask is
masked with :func:`zero_where`, never multiplied by 0 (0 · inf is NaN).
"""
from __future__ import annotations

import functools
import numbers
import operator

import numpy as np

from ..autograd import Function, is_column, unbroadcast
from ..backend import get_array_module, kernels_for
from ..runtime.quiet import ignore_fp_errors, restore_fp_errors
from ..tensor import Tensor
from .promotion import promoted

__all__ = ["add", "sub", "mul", "div", "pow", "maximum", "minimum", "compare"]

_PLAIN_OPERANDS = frozenset({Tensor, int, float, bool})     # taken as they are


def operand(x):
    """A Tensor or a Python number; arrays become constant tensors."""
    if type(x) in _PLAIN_OPERANDS:
        return x
    if isinstance(x, (Tensor, numbers.Number)) and not isinstance(x, np.generic):
        return x
    if isinstance(x, np.generic):
        return x.item()
    if hasattr(x, "__array_interface__") or hasattr(x, "__cuda_array_interface__"):
        return Tensor._make(x)
    raise TypeError(f"unsupported operand of type {type(x).__name__}")


def _shape(x):
    return getattr(x, "shape", None)     # None for Python numbers


def _grad_for(grad, shape):
    return None if shape is None else unbroadcast(grad, shape)


def _factor_grad(grad, other, shape):
    """The gradient of a factor of ``shape`` in a product: ``grad · other``, summed back
    to its shape. For a column (…, 1), a scale of each row, the product and its sum
    are one pass, the device's ``sum_last_axis_of_product``."""
    if getattr(other, "shape", None) == grad.shape:
        if shape == grad.shape:                                     # nothing broadcast
            return grad * other
        if shape is not None and is_column(shape, grad.shape):
            return kernels_for(grad).sum_last_axis_of_product(grad, other).reshape(shape)
    return _grad_for(broadcast("mul", operator.mul, grad, other), shape)


def no_fp_warnings(cls):
    """Run a Function's forward with NumPy's floating-point warnings off: log 0 =
    -inf, 0 / 0 = NaN and inf - inf = NaN come out silently, as in PyTorch. (The
    backward pass runs every backward with them off: engine.run_backward,
    core.chain_rule.)"""
    def quiet(method):
        @functools.wraps(method)
        def run(*args, **params):
            token = ignore_fp_errors()          # np.errstate(all="ignore"), cheaper
            try:
                return method(*args, **params)
            finally:
                restore_fp_errors(token)
        return staticmethod(run)

    cls.forward = quiet(cls.forward)
    return cls


def zero_where(mask, x):
    """``x`` with 0 where ``mask`` is True: selected, not multiplied by 0, so an inf
    or NaN there does not turn into NaN (PyTorch masks its gradients this way).

    The selection is done on the bits: x's bit pattern AND all ones where it is
    kept, AND all zeros (the pattern of +0.0) where it is masked. ``where``
    gives the same values, but it branches on every element, which a mask as
    random as ReLU's makes several times slower.
    """
    xp = get_array_module(x)
    if x.dtype.kind != "f":
        return xp.where(mask, x.dtype.type(0), x)
    bits = xp.dtype(f"uint{8 * x.dtype.itemsize}")
    keep = xp.negative(xp.logical_not(mask).astype(bits))       # 0 or all ones
    return (x.view(bits) & keep).view(x.dtype)


def sign(x):
    """-1, 0 or 1, and 0 at NaN: PyTorch's sign, which its gradients of |x| use."""
    xp = get_array_module(x)
    return zero_where(xp.isnan(x), xp.sign(x))


_ARITHMETIC = frozenset({operator.add, operator.sub, operator.mul, operator.truediv})


def broadcast(name, op, a, b):
    """``op(a, b)`` with a clear error when the shapes do not broadcast. +, −, · and /
    on two arrays of different shapes run the device's ``binary`` kernel: NumPy's
    operator (kernels/ops/binary_spec.py), a compiled loop on the CPU where one
    operand is a row or a column broadcast against the other."""
    try:
        if op in _ARITHMETIC and type(a) is type(b) and a.shape != b.shape:
            return kernels_for(a).binary(op, a, b)
        return op(a, b)
    except ValueError:
        raise ValueError(
            f"{name}: shapes {tuple(_shape(a))} and {tuple(_shape(b))} cannot be "
            "broadcast together") from None


# ----------------------------------------------------------------- binary ops

@no_fp_warnings
class Add(Function):
    backward_reads_output = False
    backward_reads_inputs = False

    @staticmethod
    def forward(ctx, a, b):
        ctx.shapes = (_shape(a), _shape(b))
        return broadcast("add", operator.add, *promoted(a, b))

    @staticmethod
    def backward(ctx, grad):
        shape_a, shape_b = ctx.shapes
        return _grad_for(grad, shape_a), _grad_for(grad, shape_b)


@no_fp_warnings
class Sub(Function):
    backward_reads_output = False
    backward_reads_inputs = False

    @staticmethod
    def forward(ctx, a, b):
        ctx.shapes = (_shape(a), _shape(b))
        return broadcast("sub", operator.sub, *promoted(a, b))

    @staticmethod
    def backward(ctx, grad):
        shape_a, shape_b = ctx.shapes
        return _grad_for(grad, shape_a), None if shape_b is None else unbroadcast(-grad, shape_b)


@no_fp_warnings
class Mul(Function):
    backward_reads_output = False
    @staticmethod
    def forward(ctx, a, b):
        ctx.shapes = (_shape(a), _shape(b))
        a, b = promoted(a, b)
        ctx.save_for_backward(a, b)
        return broadcast("mul", operator.mul, a, b)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved
        shape_a, shape_b = ctx.shapes
        grad_a = _factor_grad(grad, b, shape_a) if ctx.needs_input_grad(0) else None
        grad_b = _factor_grad(grad, a, shape_b) if ctx.needs_input_grad(1) else None
        return grad_a, grad_b


@no_fp_warnings
class Div(Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.shapes = (_shape(a), _shape(b))
        a, b = promoted(a, b, true_division=True)
        out = broadcast("div", operator.truediv, a, b)
        ctx.save_for_backward(b, out)
        return out

    @staticmethod
    def backward(ctx, grad):
        b, out = ctx.saved
        shape_a, shape_b = ctx.shapes
        grad_a = _grad_for(grad / b, shape_a) if ctx.needs_input_grad(0) else None
        grad_b = _grad_for(-grad * out / b, shape_b) if ctx.needs_input_grad(1) else None
        return grad_a, grad_b


def _power(a, b):
    """a ** b. A Python-number exponent of 3, -2, 0.5 or -0.5 is a·a·a, 1 / (a·a),
    sqrt(a) or 1 / sqrt(a), as PyTorch computes it: the same bits (C's pow rounds
    a³ differently), a·a·a without pow's per-element cost, and (-0.0) ** 0.5 = -0.0,
    (-inf) ** 0.5 = NaN (C's pow: 0.0 and inf). NumPy already squares for 2 and
    divides for -1."""
    if type(b) in (int, float):
        if b == 3:
            return a * a * a
        if b == -2:
            return 1 / (a * a)
        if b in (0.5, -0.5):
            root = get_array_module(a).sqrt(a)
            return root if b > 0 else 1 / root
    return broadcast("pow", operator.pow, a, b)


@no_fp_warnings
class Pow(Function):
    """a ** b: d/da = b a^(b-1), d/db = a^b log a, with PyTorch's two exceptions:

    * where b = 0, a ** b is the constant 1 and d/da = 0, also at a = 0 (where
      b a^(b-1) is 0 · inf) and at a = NaN;
    * where a = 0 and b >= 0, a ** b is 0 or 1 and d/db = 0, not 0 · log 0.

    Elsewhere the formulas stand, inf and NaN included: d/db is NaN for a < 0
    (log a is NaN, even where b is an integer and a ** b is finite), and
    0 ** b for b < 0 is inf, with infinite gradients.
    """

    @staticmethod
    def forward(ctx, a, b):
        a, b = promoted(a, b)
        out = _power(a, b)
        ctx.save_for_backward(a, b, out)
        return out

    @staticmethod
    def backward(ctx, grad):
        a, b, out = ctx.saved
        grad_a = grad_b = None
        if ctx.needs_input_grad(0):
            grad_a = _grad_for(zero_where(b == 0, grad * (b * _power(a, b - 1))), _shape(a))
        if ctx.needs_input_grad(1):
            log_a = get_array_module(out).log(a)
            grad_b = _grad_for(grad * zero_where((a == 0) & (b >= 0), out * log_a), _shape(b))
        return grad_a, grad_b


class Maximum(Function):
    """Elementwise max; at ties each input gets half the gradient, and where either
    is NaN (so is the max) both get all of it, as in PyTorch."""

    @staticmethod
    def forward(ctx, a, b):
        xp = get_array_module(a, b)
        a, b = promoted(a, b)
        ctx.save_for_backward(a, b)
        return broadcast("maximum", xp.maximum, a, b)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved
        shared = get_array_module(grad).where(a == b, grad * grad.dtype.type(0.5), grad)
        return (_grad_for(zero_where(a < b, shared), _shape(a)),
                _grad_for(zero_where(a > b, shared), _shape(b)))


def add(a, b):
    """``a + b``, elementwise and broadcast (NumPy's rules, as PyTorch's). ``a`` or ``b``
    may be a Python number: a constant that keeps the tensor's dtype (float32 + 1.5 is
    float32). The gradient of each input is the incoming one, summed over the dims
    that were broadcast.
    """
    return Add.apply(operand(a), operand(b))


def sub(a, b):
    """``a - b``, elementwise and broadcast; a Python number is a constant that keeps the
    tensor's dtype. d/da = 1, d/db = -1.
    """
    return Sub.apply(operand(a), operand(b))


def mul(a, b):
    """``a * b``, elementwise and broadcast; a Python number is a constant that keeps the
    tensor's dtype. d/da = b, d/db = a.
    """
    return Mul.apply(operand(a), operand(b))


def div(a, b):
    """``a / b``, true division, elementwise and broadcast; integer operands give
    float64 (NumPy's promotion; PyTorch's is float32). d/da = 1 / b, d/db = -a / b².
    """
    return Div.apply(operand(a), operand(b))


def pow(a, b):
    """``a ** b``, elementwise and broadcast; d/da = b a^(b-1), d/db = a^b log a,
    with PyTorch's exceptions where b = 0 or a = 0 (``tinynet.ops.elementwise.Pow``).
    """
    return Pow.apply(operand(a), operand(b))


def maximum(a, b):
    """The elementwise larger of ``a`` and ``b``, broadcast (NaN where either is NaN, as
    ``torch.maximum``); at ties each input gets half the gradient.
    """
    return Maximum.apply(operand(a), operand(b))


def minimum(a, b):
    """The elementwise smaller of ``a`` and ``b``, broadcast (NaN where either is NaN, as
    ``torch.minimum``); at ties each input gets half the gradient.
    """
    return -maximum(-operand(a), -operand(b))


_COMPARISONS = {"lt": operator.lt, "le": operator.le, "gt": operator.gt,
                "ge": operator.ge, "eq": operator.eq, "ne": operator.ne}


def compare(name, a, b):
    """A boolean tensor, outside the graph (comparisons have no gradient)."""
    a, b = operand(a), operand(b)
    a = a.array if isinstance(a, Tensor) else a
    b = b.array if isinstance(b, Tensor) else b
    return Tensor._make(broadcast(name, _COMPARISONS[name], a, b))
