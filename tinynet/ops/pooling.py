"""Pooling over 1, 2 or 3 spatial dims: ``torch.nn.functional``'s
``max_pool{1,2,3}d``, ``avg_pool{1,2,3}d`` and ``adaptive_avg_pool{1,2,3}d``.

The input is (N, C, *spatial) or, unbatched, (C, *spatial); one mechanism
serves every number of spatial dims, which are always the trailing ones.

**Windows.** Along each spatial dim of length L, output position o reads the
kernel taps o·stride − padding + j·dilation, j = 0 .. kernel − 1, of the input
(negative positions and positions ≥ L are padding). There are

    out = floor((L + 2·padding − dilation·(kernel − 1) − 1) / stride) + 1

windows, or the ceiling of that quotient under ``ceil_mode``, where the last
window may hang over the end, provided it starts inside the input or the left
padding (PyTorch's rule). Padding the input once and then *viewing* it with
strides (stride·s, dilation·s) per dim gives every window without copying:
``windows[..., o, j]`` is element o·stride + j·dilation of the padded input.

**Max pooling** pads with −inf, so padding never wins, and walks the kernel
offsets j in raster order keeping the running maximum and its offset: a value
replaces the maximum if it is larger or NaN, so ties keep the first maximum and
a NaN propagates, as PyTorch's kernel does. Its backward adds each window's
gradient into the tap that won. Both are kernels of the backend's table: the
spec, one strided NumPy pass per kernel offset, in kernels/ops/pooling_spec.py;
on the CPU, compiled loops over the (sample, channel) planes, in
kernels/ops/pooling_cpu.py.

**Average pooling** sums each window through the view and divides by
PyTorch's count: the window's length per dim, clipped to the padded input
(``count_include_pad=True``) or to the input itself (``False``), multiplied
over the dims; or ``divisor_override``. Its backward adds grad / count to
every tap, again one strided add per kernel offset.

**Adaptive average pooling** chooses the windows from the output size: bin i
of n along a dim of length L covers [floor(i·L/n), ceil((i+1)·L/n)). A box of
bins is a product of intervals, so averaging over it is averaging along one
dim after another; a dim that n divides is one reshape and mean.
"""
from __future__ import annotations

import numbers

import numpy as np

from ..autograd import Function
from ..backend import get_array_module, kernels_for
from ..kernels.ops.pooling_spec import crop, pad_windows, windows

__all__ = ["max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d", "avg_pool2d",
           "avg_pool3d", "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d"]


# ------------------------------------------------------------------ arguments
def _ints(where, name, value, n, low):
    """``value`` (an int, or a tuple of 1 or n ints) as n ints, each >= low."""
    values = (value,) if isinstance(value, numbers.Integral) else value
    if not isinstance(values, (tuple, list)) or not all(
            isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in values):
        raise TypeError(f"{where}: {name} must be an int or a tuple of ints, got {value!r}")
    values = tuple(int(v) for v in values) * (n if len(values) == 1 else 1)
    if len(values) != n:
        raise ValueError(f"{where}: {name} must be a single int or a tuple of {n} ints, "
                         f"got {value!r}")
    if min(values) < low:
        rule = "greater than zero" if low == 1 else "non-negative"
        raise ValueError(f"{where}: {name} must be {rule}, but got {value!r}")
    return values


def pool_geometry(where, n, kernel_size, stride, padding, dilation=1):
    """Checked (kernel, stride, padding, dilation), n ints each; stride None
    (or an empty tuple) means the kernel size, as in PyTorch."""
    kernel = _ints(where, "kernel_size", kernel_size, n, 1)
    empty = isinstance(stride, (tuple, list)) and len(stride) == 0
    stride = kernel if stride is None or empty else _ints(where, "stride", stride, n, 1)
    padding = _ints(where, "padding", padding, n, 0)
    dilation = _ints(where, "dilation", dilation, n, 1)
    if any(p > k // 2 for p, k in zip(padding, kernel, strict=True)):
        raise ValueError(f"{where}: pad should be at most half of kernel size, but got "
                         f"padding={padding} and kernel_size={kernel}")
    return kernel, stride, padding, dilation


def _check_input(where, n, input, allow_empty_channels=False):
    shape = tuple(input.shape)
    if len(shape) not in (n + 1, n + 2):
        raise ValueError(f"{where}: expected a {n + 1}-D (unbatched) or {n + 2}-D (batched) "
                         f"input, but got shape {shape}")
    if not np.issubdtype(input.dtype, np.floating):
        raise TypeError(f"{where}: expected a floating-point input, got {input.dtype}")
    inner = shape[-n:] if allow_empty_channels else shape[-n - 1:]
    if 0 in inner:
        raise ValueError(f"{where}: expected non-zero sizes for the non-batch dims, "
                         f"but got input shape {shape}")


def _output_length(length, kernel, stride, padding, dilation, ceil_mode):
    """Number of windows along one dim (PyTorch's ``pooling_output_shape``)."""
    span = length + 2 * padding - dilation * (kernel - 1) - 1
    out = (span + (stride - 1 if ceil_mode else 0)) // stride + 1
    if ceil_mode and (out - 1) * stride >= length + padding:
        out -= 1                 # the last window would start in the right padding
    return out


def _output_shape(where, n, input, kernel, stride, padding, dilation, ceil_mode):
    _check_input(where, n, input)
    spatial = tuple(input.shape[-n:])
    out = tuple(_output_length(*args, bool(ceil_mode)) for args in
                zip(spatial, kernel, stride, padding, dilation, strict=True))
    if min(out) < 1:
        channels = input.shape[-n - 1]
        raise ValueError(
            f"{where}: Given input size: ({'x'.join(map(str, (channels,) + spatial))}). "
            f"Calculated output size: ({'x'.join(map(str, (channels,) + out))}). "
            "Output size is too small")
    return out


class MaxPool(Function):
    """Max over each window; the gradient goes to the tap that won. A kernel of
    the backend's table (``max_pool_forward``, ``max_pool_backward``; the spec in
    kernels/ops/pooling_spec.py, compiled loops on the CPU in kernels/ops/pooling_cpu.py)."""

    backward_reads_inputs = False

    @staticmethod
    def forward(ctx, x, kernel, stride, padding, dilation, out):
        kernels = kernels_for(x)
        best, arg = kernels.max_pool_forward(x, kernel, stride, padding, dilation, out)
        ctx.save_for_backward(arg)
        ctx.meta = (x.shape, kernel, stride, padding, dilation, out)
        return best

    @staticmethod
    def backward(ctx, grad):
        (arg,) = ctx.saved
        kernels = kernels_for(grad)
        return kernels.max_pool_backward(grad, arg, *ctx.meta)


def _divisor(xp, shape, kernel, stride, padding, out, count_include_pad, dtype):
    """Each window's element count as PyTorch counts it: its length per dim (a
    vector along that dim, broadcast and multiplied over the dims), never the
    part past the right padding (ceil_mode), the padding only with
    ``count_include_pad``."""
    n, divisor = len(kernel), 1
    for d, (length, k, s, p, o) in enumerate(zip(shape, kernel, stride, padding, out,
                                                 strict=True)):
        start = xp.arange(o) * s - p
        end = xp.minimum(start + k, length + p)
        if not count_include_pad:
            start, end = xp.maximum(start, 0), xp.minimum(end, length)
        divisor = divisor * (end - start).reshape((-1,) + (1,) * (n - 1 - d)).astype(dtype)
    return divisor


class AvgPool(Function):
    """Sum over each window / its count; backward: grad / count to every tap."""

    backward_reads_inputs = False

    @staticmethod
    def forward(ctx, x, kernel, stride, padding, out, count_include_pad, divisor_override):
        xp, n = get_array_module(x), len(kernel)
        dilation = (1,) * n
        padded = pad_windows(x, padding, out, kernel, stride, dilation, 0)
        view = windows(padded, out, kernel, stride, dilation)
        divisor = divisor_override or _divisor(xp, x.shape[-n:], kernel, stride, padding, out,
                                               count_include_pad, x.dtype)
        ctx.save_for_backward(divisor)
        ctx.meta = (x.shape, padded.shape, kernel, stride, padding, out)
        return view.sum(axis=tuple(range(-n, 0))) / divisor

    @staticmethod
    def backward(ctx, grad):
        (divisor,) = ctx.saved
        shape, padded_shape, kernel, stride, padding, out = ctx.meta
        xp = get_array_module(grad)
        share = grad / divisor
        dx = xp.zeros(padded_shape, dtype=grad.dtype)
        view = windows(dx, out, kernel, stride, (1,) * len(kernel))
        for offset in np.ndindex(*kernel):
            view[(Ellipsis,) + offset] += share
        return crop(dx, padding, shape)


def _bins(length, size):
    """PyTorch's adaptive bins: [floor(i·L/n), ceil((i+1)·L/n)) for i < n."""
    return [(i * length // size, -(-(i + 1) * length // size)) for i in range(size)]


def _along(axis, index):
    return (slice(None),) * axis + (index,)


def _average_bins(x, axis, size):
    """Average x over the ``size`` adaptive bins of one axis."""
    xp, length = get_array_module(x), x.shape[axis]
    if length % size == 0:                                   # equal, disjoint bins
        return x.reshape(x.shape[:axis] + (size, length // size) + x.shape[axis + 1:]).mean(
            axis=axis + 1)
    return xp.concatenate([x[_along(axis, slice(a, b))].mean(axis=axis, keepdims=True)
                           for a, b in _bins(length, size)], axis=axis)


def _spread_bins(grad, axis, shape):
    """The backward of :func:`_average_bins`: each bin's grad / its length to
    every element of the bin (overlapping bins add up)."""
    xp, length, size = get_array_module(grad), shape[axis], grad.shape[axis]
    if length % size == 0:
        return xp.repeat(grad / (length // size), length // size, axis=axis)
    dx = xp.zeros(shape, dtype=grad.dtype)
    for i, (a, b) in enumerate(_bins(length, size)):
        dx[_along(axis, slice(a, b))] += grad[_along(axis, slice(i, i + 1))] / (b - a)
    return dx


class AdaptiveAvgPool(Function):
    """Average over adaptive bins, one spatial dim after another."""

    backward_reads_inputs = False

    @staticmethod
    def forward(ctx, x, output_size):
        shapes, first = [], x.ndim - len(output_size)
        for axis, size in enumerate(output_size, start=first):
            shapes.append(x.shape)
            x = _average_bins(x, axis, size) if size else x[_along(axis, slice(0, 0))]
        ctx.meta = (shapes, first)
        return x

    @staticmethod
    def backward(ctx, grad):
        shapes, first = ctx.meta
        for axis, shape in reversed(list(enumerate(shapes, start=first))):
            grad = (_spread_bins(grad, axis, shape) if grad.shape[axis]
                    else get_array_module(grad).zeros(shape, dtype=grad.dtype))
        return grad


# ------------------------------------------------------------------ functions
def _max_pool(n, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices):
    where = f"max_pool{n}d"
    if return_indices:
        raise NotImplementedError(f"{where}: return_indices=True is not supported; the "
                                  "indices of the maxima are kept inside the op only")
    kernel, stride, padding, dilation = pool_geometry(where, n, kernel_size, stride, padding,
                                                  dilation)
    out = _output_shape(where, n, input, kernel, stride, padding, dilation, ceil_mode)
    return MaxPool.apply(input, kernel=kernel, stride=stride, padding=padding,
                         dilation=dilation, out=out)


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """Max over windows of the last dim of (N, C, L) or (C, L), as torch's."""
    return _max_pool(1, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """Max over windows of the last 2 dims of (N, C, H, W) or (C, H, W), as torch's."""
    return _max_pool(2, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """Max over windows of the last 3 dims of (N, C, D, H, W) or (C, D, H, W)."""
    return _max_pool(3, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def _avg_pool(n, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
              divisor_override):
    where = f"avg_pool{n}d"
    kernel, stride, padding, _ = pool_geometry(where, n, kernel_size, stride, padding)
    if divisor_override is not None:
        if isinstance(divisor_override, bool) or not isinstance(divisor_override,
                                                                numbers.Integral):
            raise TypeError(f"{where}: divisor_override must be an int or None, got "
                            f"{divisor_override!r}")
        if divisor_override == 0:
            raise ValueError(f"{where}: divisor_override must be non-zero")
    out = _output_shape(where, n, input, kernel, stride, padding, (1,) * n, ceil_mode)
    return AvgPool.apply(input, kernel=kernel, stride=stride, padding=padding, out=out,
                         count_include_pad=bool(count_include_pad),
                         divisor_override=divisor_override)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True):
    """Mean over windows of the last dim of (N, C, L) or (C, L), as torch's."""
    return _avg_pool(1, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     None)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    """Mean over windows of the last 2 dims of (N, C, H, W) or (C, H, W)."""
    return _avg_pool(2, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override)


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    """Mean over windows of the last 3 dims of (N, C, D, H, W) or (C, D, H, W)."""
    return _avg_pool(3, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override)


def _adaptive_avg_pool(n, input, output_size):
    where = f"adaptive_avg_pool{n}d"
    _check_input(where, n, input, allow_empty_channels=True)
    if output_size is None:
        output_size = tuple(input.shape[-n:])
    elif isinstance(output_size, (tuple, list)) and len(output_size) == n:   # None: keep
        output_size = tuple(length if s is None else s
                            for s, length in zip(output_size, input.shape[-n:], strict=True))
    sizes = _ints(where, "output_size", output_size, n, 0)
    return AdaptiveAvgPool.apply(input, output_size=sizes)


def adaptive_avg_pool1d(input, output_size):
    """Mean over ``output_size`` adaptive bins of the last dim, as torch's."""
    return _adaptive_avg_pool(1, input, output_size)


def adaptive_avg_pool2d(input, output_size):
    """Mean over adaptive bins of the last 2 dims; None keeps a dim's size."""
    return _adaptive_avg_pool(2, input, output_size)


def adaptive_avg_pool3d(input, output_size):
    """Mean over adaptive bins of the last 3 dims; None keeps a dim's size."""
    return _adaptive_avg_pool(3, input, output_size)
