"""Tensor methods that change the dtype, or take another tensor's dtype or shape:
``x.float()``, ``x.long()``, ``x.half()``..., ``x.type(dtype)``, ``x.view(dtype)``,
``x.type_as(y)``, ``x.view_as(y)``, ``x.reshape_as(y)``, ``x.expand_as(y)``.

Mixed into :class:`~tinynet.tensor.Tensor` like :mod:`tinynet.math_methods`, with
PyTorch's names. A cast is ``x.to(dtype)``: the differentiable
:func:`~tinynet.ops.cast` (the tensor itself when it has the dtype already), whose
gradient comes back in x's dtype; a cast to an integer or bool dtype never requires
grad. ``view(dtype)`` is different: the same bits, read as another dtype, outside the
graph (:func:`tinynet.ops.conversion.view_dtype`).
"""
from __future__ import annotations

import numpy as np

from . import tensor as _tensor  # noqa: F401  (the annotations' Tensor)

__all__ = ["ConversionMethods"]


ops = creation = None   # tinynet.ops and .creation, bound by tinynet.tensor once imported


def _is_dtype(value) -> bool:
    """Whether ``value`` names a dtype (``tinynet.int32``, ``np.dtype('f4')``), not a size."""
    return isinstance(value, np.dtype) or (isinstance(value, type)
                                           and issubclass(value, np.generic))


class ConversionMethods:
    """dtype casts, views as another dtype, and the ``*_as`` methods of a Tensor."""

    __slots__ = ()

    def float(self):
        """This tensor as float32 (itself if it is float32): ``to(tinynet.float32)``."""
        return self.to(np.float32)

    def double(self):
        """This tensor as float64 (itself if it is float64): ``to(tinynet.float64)``."""
        return self.to(np.float64)

    def half(self):
        """This tensor as float16 (itself if it is float16): ``to(tinynet.float16)``."""
        return self.to(np.float16)

    def long(self):
        """This tensor as int64, truncated toward zero: ``to(tinynet.int64)`` (no grad)."""
        return self.to(np.int64)

    def int(self):
        """This tensor as int32, truncated toward zero: ``to(tinynet.int32)`` (no grad)."""
        return self.to(np.int32)

    def short(self):
        """This tensor as int16, truncated toward zero: ``to(tinynet.int16)`` (no grad)."""
        return self.to(np.int16)

    def char(self):
        """This tensor as int8, truncated toward zero: ``to(tinynet.int8)`` (no grad)."""
        return self.to(np.int8)

    def byte(self):
        """This tensor as uint8, truncated toward zero: ``to(tinynet.uint8)`` (no grad)."""
        return self.to(np.uint8)

    def bool(self):
        """This tensor as bool, True where it is nonzero: ``to(tinynet.bool)`` (no grad)."""
        return self.to(np.bool_)

    def type(self, dtype):
        """This tensor as ``dtype``: ``to(dtype)`` (``astype`` is the same method, as NumPy's)."""
        return self.to(dtype)

    astype = type

    def type_as(self, other):
        """This tensor with the dtype (and device) of ``other``, as
        ``torch.Tensor.type_as``: itself if it has them already; differentiable."""
        return self.to(other.device, dtype=other.dtype)

    def view(self, *shape, dtype=None):
        """``view(*shape)``: the same elements in another shape, a view of this tensor's
        memory (one dim may be -1); an error where its layout cannot hold the shape
        without a copy, as PyTorch's (``reshape`` copies: :func:`tinynet.ops.view`).
        ``view(dtype)``: the same memory read as ``dtype``, as
        ``torch.Tensor.view(dtype)`` (NumPy's ``ndarray.view``): a dtype of another
        itemsize scales the last dim, which must then be contiguous (int32 to uint8
        makes it 4 times as long, and the reverse needs a multiple of 4). Not
        differentiable: that view never requires grad, even for the tensor's own dtype
        (as in PyTorch).
        """
        if dtype is None and len(shape) == 1 and _is_dtype(shape[0]):
            shape, dtype = (), shape[0]
        if dtype is not None:
            if shape:
                raise TypeError("view() takes a shape or a dtype, not both")
            return ops.conversion.view_dtype(self, dtype)
        return ops.view(self, *shape)

    def contiguous(self):
        """This tensor with its elements in row-major order in memory: itself if they
        are, else a differentiable copy (:func:`tinynet.clone`)."""
        return self if self.is_contiguous() else ops.clone(self)

    def is_contiguous(self) -> bool:
        """Whether the elements lie in row-major order in memory, with no gaps."""
        return bool(self.array.flags.c_contiguous)

    def nelement(self) -> int:
        """The number of elements, :meth:`numel`."""
        return self.array.size

    def view_as(self, other):
        """``view(other.shape)``: this tensor's elements in the shape of ``other``."""
        return ops.view(self, other.shape)

    def reshape_as(self, other):
        """``reshape(other.shape)``: this tensor's elements in the shape of ``other``."""
        return ops.reshape(self, other.shape)

    def expand_as(self, other):
        """``expand(other.shape)``: a broadcast view to the shape of ``other``."""
        return ops.expand(self, other.shape)

    # New tensors like this one
    def _new(self, factory, size, dtype, device, requires_grad, *args):
        return factory(*size, *args, dtype=self.dtype if dtype is None else dtype,
                       device=self.device if device is None else device,
                       requires_grad=requires_grad)

    def new_zeros(self, *size, dtype=None, device=None, requires_grad=False) -> "_tensor.Tensor":
        """Zeros of ``size``, with this tensor's dtype and device unless given."""
        return self._new(creation.zeros, size, dtype, device, requires_grad)

    def new_ones(self, *size, dtype=None, device=None, requires_grad=False) -> "_tensor.Tensor":
        """Ones of ``size``, with this tensor's dtype and device unless given."""
        return self._new(creation.ones, size, dtype, device, requires_grad)

    def new_empty(self, *size, dtype=None, device=None, requires_grad=False) -> "_tensor.Tensor":
        """Uninitialised memory of ``size``, with this tensor's dtype and device unless given."""
        return self._new(creation.empty, size, dtype, device, requires_grad)

    def new_full(self, size, fill_value, dtype=None, device=None,
                 requires_grad=False) -> "_tensor.Tensor":
        """``size`` (a tuple) filled with ``fill_value``, with this tensor's dtype and device
        unless given (as ``torch.Tensor.new_full``).
        """
        return self._new(creation.full, (size,), dtype, device, requires_grad, fill_value)
