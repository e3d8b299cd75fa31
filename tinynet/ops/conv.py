"""Convolution (``conv1d``, ``conv2d``, ``conv3d``) as one graph node.

A convolution is a matrix product in disguise (im2col). For every output
position, the input values under the kernel form one column of a matrix
``cols`` with C·k₁·k₂… rows; the weight, flattened to (O, C·k₁·k₂…), times
``cols`` is the output. ``cols`` is a *strided view* of the (zero-padded)
input, copied once so the product runs on a contiguous matrix::

    cols[c, i, j, n, h, w] = x[n, c, h·stride + i·dilation, w·stride + j·dilation]
    y[n, o, h, w] = Σ_{c,i,j} W[o, c, i, j] · cols[c, i, j, n, h, w] + b[o]

The backward is the same product turned around: dW = dy colsᵀ, and
d cols = Wᵀ dy, which col2im adds back into the input positions each column
was read from (one strided add per kernel offset: overlapping windows sum).
With ``groups`` G, channels and filters split into G independent convolutions,
one batched product over G. The product's (O, N, positions) result is swapped
into the output's (N, O, positions), the bias added on the way. im2col, col2im
and that swap are kernels of the backend's table: the spec in
kernels/ops/conv_spec.py, compiled loops on the CPU in kernels/ops/conv_cpu.py.
"""
from __future__ import annotations

import math
import numbers

from ..autograd import Function
from ..backend import get_array_module, kernels_for

__all__ = ["conv1d", "conv2d", "conv3d", "conv_arguments", "check_ranks"]


def im2col(xp, x, kernel, stride, padding, dilation, out_sizes=None):
    """The columns of ``x`` (N, C, *spatial): ``(cols, padded_shape, out_sizes)``.

    ``cols`` is the contiguous (C, *kernel, N, *out_sizes) copy of the windows
    of ``x`` zero-padded by ``padding`` ((before, after) per spatial dim);
    ``out_sizes`` defaults to every window that fits. A kernel of the backend's
    table: the spec in kernels/ops/conv_spec.py, compiled loops on the CPU in
    kernels/ops/conv_cpu.py (``xp`` is the array module of ``x``).
    """
    return kernels_for(x).im2col(x, kernel, stride, padding, dilation,
                                                    out_sizes)


def col2im(xp, dcols, padded_shape, stride, dilation, padding, sizes):
    """im2col's adjoint: ``dcols`` (C, *kernel, N, *out_sizes) added back into
    zeros of ``padded_shape`` (N, C, *padded) at the positions each column was
    read from (overlapping windows sum), then cropped to (N, C, *sizes) from
    each dim's ``before`` padding on. A kernel of the backend's table, as im2col."""
    return kernels_for(dcols).col2im(dcols, padded_shape, stride,
                                                        dilation, padding, sizes)


class ConvFunction(Function):
    """y = W ⋆ x + b over the trailing spatial dims of x (N, C, *spatial).

    ``weight`` is (O, C/groups, *kernel), PyTorch's layout; ``padding`` holds
    (before, after) zero counts per spatial dim. Inputs of different float
    dtypes are computed in the wider one.
    """

    @staticmethod
    def forward(ctx, x, weight, bias, stride, padding, dilation, groups):
        xp = get_array_module(x, weight)
        dtype = xp.result_type(*(a for a in (x, weight, bias) if a is not None))
        n, channels = x.shape[:2]
        filters, kernel = weight.shape[0], tuple(weight.shape[2:])
        cols, padded_shape, out_sizes = im2col(xp, x.astype(dtype, copy=False), kernel,
                                               stride, padding, dilation)
        per_group = channels // groups * math.prod(kernel)       # rows of cols per group
        cols = cols.reshape(groups, per_group, n * math.prod(out_sizes))
        w = weight.astype(dtype, copy=False).reshape(groups, filters // groups, per_group)
        out = kernels_for(x).swap_leading_axes(
            (w @ cols).reshape((filters, n) + out_sizes),
            None if bias is None else bias.astype(dtype, copy=False))
        ctx.save_for_backward(cols, w)
        ctx.meta = (x.shape, padded_shape, weight.shape, padding, stride, dilation,
                    out_sizes, bias is not None)
        return out

    @staticmethod
    def backward(ctx, grad):
        cols, w = ctx.saved
        (x_shape, padded_shape, weight_shape, padding, stride, dilation, out_sizes,
         has_bias) = ctx.meta
        xp = get_array_module(grad)
        groups, filters = w.shape[0], weight_shape[0]
        n, channels = x_shape[:2]
        # dy as (G, O/G, N·positions): the layout of the forward's product
        positions = math.prod(out_sizes)
        dy = kernels_for(grad).swap_leading_axes(grad.reshape(n, filters, positions))
        dy = dy.reshape(groups, filters // groups, n * positions)
        grad_x = grad_w = grad_b = None
        if ctx.needs_input_grad(1):
            grad_w = (dy @ cols.swapaxes(1, 2)).reshape(weight_shape)
        if has_bias and ctx.needs_input_grad(2):
            # a row of dy per filter, summed as dy 1 (BLAS is faster than sum(axis=2))
            grad_b = (dy @ xp.ones(dy.shape[2], dy.dtype)).reshape(filters)
        if ctx.needs_input_grad(0):
            kernel = tuple(weight_shape[2:])
            dcols = (w.swapaxes(1, 2) @ dy).reshape((channels,) + kernel + (n,) + out_sizes)
            grad_x = col2im(xp, dcols, padded_shape, stride, dilation, padding, x_shape[2:])
        return grad_x, grad_w, grad_b, None, None, None, None


def _spatial(where, name, value, dims, low):
    """``value`` (an int or a sequence of ``dims`` ints, each ≥ ``low``) as a tuple."""
    values = (value,) * dims if isinstance(value, numbers.Integral) else tuple(value)
    if len(values) != dims or not all(isinstance(v, numbers.Integral) for v in values):
        raise ValueError(f"{where}: {name} must be an int or {dims} ints, got {value!r}")
    if any(v < low for v in values):
        kind = "non-positive" if low > 0 else "negative"
        raise ValueError(f"{where}: {kind} {name} is not supported, got {value!r}")
    return tuple(int(v) for v in values)


def conv_arguments(where, dims, kernel, stride, padding, dilation):
    """stride, dilation and padding as tuples; padding as (before, after) per dim.

    ``padding="valid"`` is no padding; ``"same"`` keeps the input's size (stride 1
    only) with d·(k − 1) zeros in all, the odd one after, as PyTorch.
    """
    stride = _spatial(where, "stride", stride, dims, 1)
    dilation = _spatial(where, "dilation", dilation, dims, 1)
    if padding == "valid":
        return stride, ((0, 0),) * dims, dilation
    if padding == "same":
        if any(s != 1 for s in stride):
            raise ValueError(f"{where}: padding='same' is not supported for strided "
                             "convolutions")
        totals = [d * (k - 1) for d, k in zip(dilation, kernel, strict=True)]
        return stride, tuple((t // 2, t - t // 2) for t in totals), dilation
    if isinstance(padding, str):
        raise ValueError(f"{where}: padding must be 'valid', 'same', an int or {dims} "
                         f"ints, got {padding!r}")
    return stride, tuple((p, p) for p in _spatial(where, "padding", padding, dims, 0)), dilation


def _shape_text(sizes):
    return " x ".join(str(s) for s in sizes)


def check_ranks(where, dims, input, weight, layout):
    """A clear error unless ``weight`` has ``dims`` + 2 dims (``layout`` names the first
    two) and ``input`` is batched (N, C, *spatial) or unbatched (C, *spatial)."""
    if weight.ndim != dims + 2:
        raise ValueError(f"{where}: expected a {dims + 2}-D weight ({layout}, *kernel), "
                         f"got shape {tuple(weight.shape)}")
    if input.ndim not in (dims + 1, dims + 2):
        raise ValueError(f"{where}: expected {dims + 1}-D (unbatched) or {dims + 2}-D "
                         f"(batched) input, but got input of size: {list(input.shape)}")


def _conv(dims, input, weight, bias, stride, padding, dilation, groups):
    where = f"conv{dims}d"
    check_ranks(where, dims, input, weight, "out_channels, in_channels/groups")
    if input.ndim == dims + 1:
        return _conv(dims, input.unsqueeze(0), weight, bias, stride, padding, dilation,
                     groups).squeeze(0)
    if not isinstance(groups, numbers.Integral) or groups < 1:
        raise ValueError(f"{where}: groups must be a positive integer, got {groups!r}")
    filters, kernel = weight.shape[0], tuple(weight.shape[2:])
    if filters % groups:
        raise ValueError(f"{where}: given groups={groups}, expected weight to be divisible "
                         f"by {groups} at dimension 0, but got weight of size "
                         f"{list(weight.shape)} instead")
    if input.shape[1] != weight.shape[1] * groups:
        raise ValueError(f"{where}: given groups={groups}, weight of size "
                         f"{list(weight.shape)}, expected input{list(input.shape)} to have "
                         f"{weight.shape[1] * groups} channels, but got {input.shape[1]} "
                         "channels instead")
    if bias is not None and tuple(bias.shape) != (filters,):
        raise ValueError(f"{where}: bias of shape {tuple(bias.shape)} does not match the "
                         f"{filters} output channels")
    stride, padding, dilation = conv_arguments(where, dims, kernel, stride, padding, dilation)
    padded = [size + a + b for size, (a, b) in zip(input.shape[2:], padding, strict=True)]
    spans = [d * (k - 1) + 1 for d, k in zip(dilation, kernel, strict=True)]
    if any(span > size for span, size in zip(spans, padded, strict=True)):
        raise ValueError(f"{where}: calculated padded input size per channel: "
                         f"({_shape_text(padded)}). Kernel size: ({_shape_text(spans)}). "
                         "Kernel size can't be greater than actual input size")
    return ConvFunction.apply(input, weight, bias, stride, padding, dilation, int(groups))


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-D convolution of (N, C, L) by weight (O, C/groups, k), as ``torch.nn.functional``."""
    return _conv(1, input, weight, bias, stride, padding, dilation, groups)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-D convolution of (N, C, H, W) by weight (O, C/groups, kH, kW), as
    ``torch.nn.functional.conv2d`` (``padding``: an int, a pair, ``"valid"`` or ``"same"``)."""
    return _conv(2, input, weight, bias, stride, padding, dilation, groups)


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """3-D convolution of (N, C, D, H, W) by weight (O, C/groups, kD, kH, kW)."""
    return _conv(3, input, weight, bias, stride, padding, dilation, groups)
