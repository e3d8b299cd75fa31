"""Max pooling in NumPy/CuPy array code: the spec of the compiled max pool
(kernels/ops/pooling_cpu.py), and the CUDA backend's kernel.

``x`` is (*lead, *spatial) with n spatial dims; ``kernel``, ``stride``,
``padding``, ``dilation`` and ``out`` (the number of windows) hold n ints each,
checked by :mod:`tinynet.ops.pooling`, which explains the windows.

Padding the input once with −inf and then *viewing* it with strides
(stride·s, dilation·s) per dim gives every window without copying:
``windows[..., o, j]`` is element o·stride + j·dilation of the padded input.
The forward walks the kernel offsets j in raster order keeping the running
maximum and its offset ``arg``: a value replaces the maximum if it is larger
or NaN, so ties keep the first maximum and a NaN propagates (the last NaN
wins), as PyTorch's kernel does; a window of −inf keeps its first tap inside
the input. The backward walks the offsets again and adds each window's
gradient into the tap that won, through the same strided view of a zero
gradient buffer, one strided add per offset.
"""
from __future__ import annotations

import numpy as np

from tinynet.backend import get_array_module

__all__ = ["max_pool_forward", "max_pool_backward", "pad_windows", "windows", "crop"]


def pad_windows(x, padding, out, kernel, stride, dilation, fill):
    """x with ``padding`` before each spatial dim and, after it, enough to
    reach the last tap of the last window (more than ``padding`` in ceil_mode)."""
    n = len(kernel)
    right = [max(p, (o - 1) * s + (k - 1) * d + 1 - length - p) for length, o, k, s, p, d
             in zip(x.shape[-n:], out, kernel, stride, padding, dilation, strict=True)]
    if not any(padding) and not any(right):
        return x
    widths = [(0, 0)] * (x.ndim - n) + list(zip(padding, right, strict=True))
    return get_array_module(x).pad(x, widths, constant_values=fill)


def windows(padded, out, kernel, stride, dilation):
    """A strided view of shape (*lead, *out, *kernel) of the padded array:
    element [..., o, j] is padded[..., o·stride + j·dilation] (per dim)."""
    n = len(kernel)
    steps = padded.strides[-n:]
    shape = padded.shape[:-n] + tuple(out) + tuple(kernel)
    strides = (padded.strides[:-n] + tuple(a * s for a, s in zip(steps, stride, strict=True))
               + tuple(a * d for a, d in zip(steps, dilation, strict=True)))
    return get_array_module(padded).lib.stride_tricks.as_strided(padded, shape, strides)


def crop(padded, padding, shape):
    """The inverse of :func:`pad_windows`: the part of ``padded`` that is the input."""
    n = len(padding)
    return padded[(Ellipsis,) + tuple(slice(p, p + length) for p, length
                                      in zip(padding, shape[-n:], strict=True))]


def _first_inside(xp, out, kernel, stride, padding, dilation):
    """The raster index of each window's first tap inside the input: where
    PyTorch's max starts, so it wins when every tap of the window is −inf."""
    n, first = len(kernel), 0
    for d, (o, k, s, p, dil) in enumerate(zip(out, kernel, stride, padding, dilation,
                                              strict=True)):
        j = xp.clip(-((xp.arange(o) * s - p) // dil), 0, k - 1)   # ceil((p − o s)/dil)
        first = first * k + j.reshape((-1,) + (1,) * (n - 1 - d))
    return first


def max_pool_forward(x, kernel, stride, padding, dilation, out):
    """``(best, arg)``: each window's maximum, of x's dtype, and the raster index
    (int32) of its winning tap within the window."""
    xp = get_array_module(x)
    view = windows(pad_windows(x, padding, out, kernel, stride, dilation, -np.inf),
                   out, kernel, stride, dilation)
    best = xp.full(view.shape[:-len(kernel)], -np.inf, dtype=x.dtype)
    arg = xp.broadcast_to(_first_inside(xp, out, kernel, stride, padding, dilation),
                          best.shape).astype(np.int32)
    for j, offset in enumerate(np.ndindex(*kernel)):
        value = view[(Ellipsis,) + offset]
        wins = (value > best) | xp.isnan(value)
        # the offsets only grow, and a winner is inside the input (padding is
        # −inf), so never before the first tap inside: max() is "set to j if it wins"
        arg = xp.maximum(arg, wins * np.int32(j))
        best = xp.maximum(best, value)                   # NaN propagates
    return best, arg


def max_pool_backward(grad, arg, shape, kernel, stride, padding, dilation, out):
    """The gradient (of ``shape``, the input's) that sends each window's ``grad`` to
    its winning tap ``arg``; taps won by several windows sum their gradients."""
    xp = get_array_module(grad)
    n = len(kernel)
    padded_shape = tuple(shape[:-n]) + tuple(
        max(length + p, (o - 1) * s + (k - 1) * d + 1 - p) + p for length, o, k, s, p, d
        in zip(shape[-n:], out, kernel, stride, padding, dilation, strict=True))
    dx = xp.zeros(padded_shape, dtype=grad.dtype)
    view = windows(dx, out, kernel, stride, dilation)
    for j, offset in enumerate(np.ndindex(*kernel)):
        view[(Ellipsis,) + offset] += xp.where(arg == j, grad, 0)
    return crop(dx, padding, shape)
