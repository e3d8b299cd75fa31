"""In-place methods: ``add_``, ``sub_``, ``mul_``, ``div_``, ``zero_``, ``fill_``,
``copy_``, ``clamp_`` and item assignment ``t[index] = value``, with PyTorch's rules.

An in-place method writes into the tensor's own array and returns the tensor.
It is not recorded in the graph (tinynet has no in-place autograd), so:

* outside autograd, it is always allowed: under ``no_grad`` (how optimizers
  update parameters), and on tensors that do not require grad;
* while grad mode is on, it is refused on a leaf that requires grad (PyTorch's
  "a leaf Variable that requires grad is being used in an in-place
  operation"), on the output of an op (a non-leaf), and with an operand that
  requires grad: write ``x = x + y`` instead.

Every write bumps the tensor's ``_version``. A graph node notes its inputs'
versions and the backward pass refuses a node whose inputs changed since its
forward (see :mod:`tinynet.autograd`). Writing into an op's output (under
``no_grad``) marks that op's node, and backward refuses it too, whether or not
its gradient needs the output: the check errs on the safe side. Versions
belong to tensors, not to memory: a write through another tensor that shares
the array (``detach()``, a view made under ``no_grad``) is not seen.

The result keeps the tensor's dtype. As in PyTorch, an operation whose result
is of a higher kind (bool < integer < floating point < complex) than the tensor
is refused: ``int_tensor.add_(0.5)`` and ``int_tensor.div_(2)`` are errors.
``fill_`` and ``copy_`` convert to the tensor's dtype, as PyTorch's do.
"""
from __future__ import annotations

import numbers

import numpy as np

from . import autograd
from . import backend as _backend
from . import tensor as _tensor

__all__ = ["InPlaceMethods"]

_KINDS = {"b": 0, "u": 1, "i": 1, "f": 2, "c": 3}
_KIND_NAMES = ("bool", "integer", "floating point", "complex")


def _kind(value) -> int:
    """0 bool, 1 integer, 2 floating point, 3 complex: the order results promote in."""
    if hasattr(value, "dtype"):
        return _KINDS[value.dtype.kind]
    if isinstance(value, bool):
        return 0
    if isinstance(value, numbers.Integral):
        return 1
    if isinstance(value, numbers.Real):
        return 2
    if isinstance(value, numbers.Complex):
        return 3
    raise TypeError(f"expected a Tensor or a number, got {type(value).__name__}")


def _raw(name, t, value):
    """The array (or number) behind an operand, on ``t``'s device."""
    if not isinstance(value, _tensor.Tensor):
        _kind(value)
        return value
    if value.device != t.device:
        raise RuntimeError(
            f"{name}(): expected both tensors on the same device, but found {t.device} "
            f"and {value.device}")
    return value.array


def _check_allowed(name, t, *operands):
    """Refuse what autograd could not follow (the module docstring's rules)."""
    if not autograd.is_grad_enabled():
        return
    if t._requires_grad and t._node is None:
        raise RuntimeError(
            f"{name}(): a leaf Variable that requires grad is being used in an in-place "
            "operation. Change it under tinynet.no_grad() (as optimizers do), or use "
            "the out-of-place operation.")
    if t._node is not None:
        raise RuntimeError(
            f"{name}(): the tensor is the output of {t._node.fn.__name__} and requires "
            "grad; tinynet does not record in-place operations in the graph: use the "
            "out-of-place operation, or run under tinynet.no_grad().")
    if any(isinstance(x, _tensor.Tensor) and x._requires_grad for x in operands):
        raise RuntimeError(
            f"{name}(): an operand requires grad, but tinynet does not record in-place "
            "operations in the graph: use the out-of-place operation.")


def _check_castable(name, t, *operands, at_least=0):
    """PyTorch's rule: the result's kind must not be above the tensor's."""
    kind = max([at_least] + [_kind(x) for x in operands if x is not None])
    if kind > _kind(t):
        raise RuntimeError(
            f"{name}(): the result type ({_KIND_NAMES[kind]}) can't be cast to the "
            f"tensor's dtype {t.dtype}")


def _target(t):
    """The array to write into (a NumPy scalar cannot be written: make it an array)."""
    if isinstance(t.array, np.generic):
        t.array = np.asarray(t.array)
    return t.array


def _written(name, t, write):
    """Run ``write(array)``, translate NumPy's errors, and bump the version."""
    array = _target(t)
    try:
        write(array)
    except ValueError as error:
        if not array.flags.writeable:
            raise RuntimeError(
                f"{name}(): the tensor's memory is read-only (an expand() or a "
                "read-only array): clone() it first") from None
        raise RuntimeError(
            f"{name}(): the result does not fit the tensor of shape {tuple(t.shape)}: "
            f"{error}") from None
    t._version += 1
    if t._node is not None and t._node.fn.backward_reads_output:
        t._node.modified_output = (t._output, t._version)
    return t


def _ufunc_(name, t, ufunc, other, at_least=0, alpha=1):
    """``t = ufunc(t, alpha * other)`` in place."""
    _check_allowed(name, t, other)
    _check_castable(name, t, other, at_least=at_least)
    value = _raw(name, t, other)
    if alpha != 1:
        if _kind(alpha) > _kind(t):
            raise RuntimeError(
                f"{name}(): alpha {alpha!r} is a {_KIND_NAMES[_kind(alpha)]} number, but "
                f"the tensor is {t.dtype}")
        value = value * alpha
    return _written(name, t, lambda a: ufunc(a, value, out=a, casting="unsafe"))


class InPlaceMethods:
    """The in-place methods of :class:`~tinynet.tensor.Tensor` (mixed into it)."""

    __slots__ = ()

    def add_(self, other, *, alpha=1):
        """``self += alpha * other`` in place; returns self."""
        xp = _backend.get_array_module(self.array)
        return _ufunc_("add_", self, xp.add, other, alpha=alpha)

    def sub_(self, other, *, alpha=1):
        """``self -= alpha * other`` in place; returns self."""
        xp = _backend.get_array_module(self.array)
        return _ufunc_("sub_", self, xp.subtract, other, alpha=alpha)

    def mul_(self, other):
        """``self *= other`` in place, broadcast to this shape; returns self."""
        return _ufunc_("mul_", self, _backend.get_array_module(self.array).multiply, other)

    def div_(self, other):
        """True division in place: refused on integer tensors (as PyTorch)."""
        xp = _backend.get_array_module(self.array)
        return _ufunc_("div_", self, xp.true_divide, other, at_least=2)

    def clamp_(self, min=None, max=None):
        """Clamp to [min, max] in place; ``clip_`` is the same method."""
        if min is None and max is None:
            raise ValueError("clamp_(): at least one of min and max must be given")
        _check_allowed("clamp_", self, min, max)
        _check_castable("clamp_", self, min, max)
        low, high = (None if v is None else _raw("clamp_", self, v) for v in (min, max))
        xp = _backend.get_array_module(self.array)
        if low is None or high is None:     # NumPy's clip needs both bounds
            bound = high if low is None else low
            clip = xp.minimum if low is None else xp.maximum
            return _written("clamp_", self, lambda a: clip(a, bound, out=a, casting="unsafe"))
        return _written("clamp_", self,
                        lambda a: xp.clip(a, low, high, out=a, casting="unsafe"))

    clip_ = clamp_

    def zero_(self):
        """Fill with zeros in place; returns self."""
        _check_allowed("zero_", self)
        return _written("zero_", self, lambda a: a.fill(0))

    def fill_(self, value):
        """Fill with ``value`` (a number or a 0-d tensor), converted to this dtype."""
        if isinstance(value, _tensor.Tensor) and value.ndim != 0:
            raise RuntimeError(
                f"fill_(): value must be a number or a 0-dimensional tensor, not a tensor "
                f"of shape {tuple(value.shape)}")
        _check_allowed("fill_", self, value)
        raw = _raw("fill_", self, value)
        return _written("fill_", self, lambda a: a.fill(raw.item() if hasattr(raw, "item")
                                                       else raw))

    def __setitem__(self, index, value):
        """``t[index] = value``: a number or a tensor, broadcast to the indexed places
        and converted to this dtype, as in PyTorch; any index ``t[index]`` takes
        (ints, slices, masks, index tensors).

        With grad mode on, where t or the value requires grad, the assignment is
        recorded in the graph (the one in-place operation that is): t becomes the
        output of a ``SetItem`` node, as in PyTorch, and ``backward()`` sends the
        gradient of the written places to the value. Refused, as PyTorch refuses
        it, on a leaf that requires grad; refused too on a tensor whose memory is
        a view of another's (``clone()`` it first).
        """
        from .ops.indexing import SetItem
        from .ops.shape import _raw_index
        if isinstance(value, (list, tuple)):                     # t[:] = [1.0, 2.0, 3.0]
            value = _backend.get_array_module(self.array).asarray(value)
        raw, where = _raw("__setitem__", self, value), _raw_index(index)
        value_grad = isinstance(value, _tensor.Tensor) and value._requires_grad
        if not (autograd.is_grad_enabled() and (self._requires_grad or value_grad)):
            _written("__setitem__", self, lambda a: a.__setitem__(where, raw))
            return
        if self._requires_grad and self._node is None:
            _check_allowed("__setitem__", self, value)       # a leaf: PyTorch's error
        if getattr(self.array, "base", None) is not None:
            raise RuntimeError(
                "__setitem__(): the tensor's memory is a view of another tensor's "
                "(a reshape or a slice of it); tinynet records item assignment only on "
                "a tensor with memory of its own: clone() it first")
        _written("__setitem__", self, lambda a: a.__setitem__(where, raw))
        autograd.record_in_place(self, SetItem, (value,) if value_grad else (raw,),
                                 index=where, value_shape=value.shape if value_grad else None)

    def copy_(self, src, non_blocking=False):
        """Copy ``src`` (broadcast to this shape, converted to this dtype and device)."""
        if not isinstance(src, _tensor.Tensor):
            raise TypeError(f"copy_(): src must be a Tensor, not {type(src).__name__}")
        _check_allowed("copy_", self, src)
        source = src.array
        if src.device != self.device:
            source = _backend.get_backend(self.device).asarray(source)
        xp = _backend.get_array_module(self.array)
        return _written("copy_", self,
                        lambda a: xp.copyto(a, source, casting="unsafe"))
