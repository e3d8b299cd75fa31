"""Differentiable changes of dtype and device; the ``dtype=`` of sum, mean and prod;
``Tensor.view(dtype)``, the same bits read as another dtype."""
from __future__ import annotations

import numpy as np

from ..autograd import Function, is_grad_enabled
from ..backend import as_numpy, device_of, get_backend

__all__ = ["cast", "to_device"]


class Cast(Function):
    @staticmethod
    def forward(ctx, x, dtype):
        ctx.input_dtype = x.dtype
        return x.astype(dtype)

    @staticmethod
    def backward(ctx, grad):
        if not np.issubdtype(ctx.input_dtype, np.floating):
            return None, None
        return grad.astype(ctx.input_dtype), None


def _move(array, device):
    backend = get_backend(device)
    return as_numpy(array) if backend.name == "cpu" else backend.xp.asarray(array)


class ToDevice(Function):
    @staticmethod
    def forward(ctx, x, device):
        ctx.source = device_of(x)
        return _move(x, device)

    @staticmethod
    def backward(ctx, grad):
        return _move(grad, ctx.source), None


def cast(x, dtype):
    """``x`` converted to ``dtype`` (``Tensor.to(dtype)``); differentiable from a
    floating-point input: the gradient is cast back to the input's dtype.
    """
    return Cast.apply(x, np.dtype(dtype))


def to_device(x, device):
    """``x`` copied to ``device`` (``'cpu'`` or ``'cuda'``, ``Tensor.to(device)``);
    differentiable: the gradient is copied back to the input's device.
    """
    return ToDevice.apply(x, device)


def computed_in(fn, x, dtype, *args):
    """``fn.apply(x, *args)`` computed in ``dtype``, as the ``dtype=`` of PyTorch's sum,
    mean and prod: x cast to ``dtype`` first (differentiable: the gradient comes back in
    x's dtype), and the result ``dtype`` too (NumPy would give int64 for a sum of int32).
    With ``dtype=None`` unsigned integers give int64 as in PyTorch (bools and signed
    integers already do in NumPy; its sum of uint8 would be uint64)."""
    dtype = np.dtype(np.int64 if dtype is None else dtype)
    check_reduction_dtype(x, dtype)
    if x.dtype != dtype:
        x = cast(x, dtype)
    out = fn.apply(x, *args)
    return out if out.dtype == dtype else cast(out, dtype)


def check_reduction_dtype(x, dtype):
    """PyTorch's refusal of a sum, product or cumulative sum into an integer or bool
    ``dtype`` of a tensor that requires grad, while grad mode is on (cast it first:
    ``x.long().sum()``)."""
    dtype = np.dtype(dtype)
    if dtype.kind not in "fc" and x.requires_grad and is_grad_enabled():
        raise RuntimeError(
            f"autograd does not support dtype {dtype}: this reduction of a tensor that "
            f"requires grad cannot compute in {dtype} (cast it first, or use no_grad())")


def view_dtype(x, dtype):
    """The same memory as ``x`` read as ``dtype`` (``Tensor.view(dtype)``, NumPy's
    ``ndarray.view``), as PyTorch's: another itemsize scales the last dim (which must be
    contiguous, its size and the other strides divisible when the items grow; a 0-d
    tensor keeps its itemsize). Not differentiable: the result never requires grad,
    even for x's own dtype (PyTorch's view(dtype) is outside autograd too).
    """
    from ..tensor import Tensor
    dtype = np.dtype(dtype)
    data, old, new = x.array, x.dtype.itemsize, dtype.itemsize
    if old != new:
        where = f"view({dtype}) of a {x.dtype} tensor of shape {tuple(x.shape)}"
        if data.ndim == 0:
            raise RuntimeError(f"{where}: a 0-d tensor can only be viewed as a dtype of "
                               f"the same itemsize ({old} bytes, not {new})")
        if data.shape[-1] != 1 and data.strides[-1] != old:
            raise RuntimeError(f"{where}: the last dim must be contiguous (stride 1)")
        if new > old and (data.shape[-1] * old % new
                          or any(s % new for s in data.strides[:-1])):
            raise RuntimeError(
                f"{where}: the last dim's size ({data.shape[-1]}) times {old} bytes and "
                f"the other dims' strides must be divisible by the new itemsize {new}")
    return Tensor._make(data.view(dtype))
