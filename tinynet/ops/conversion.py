"""Differentiable changes of dtype and device."""
from __future__ import annotations

import numpy as np

from ..autograd import Function
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
