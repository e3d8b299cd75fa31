"""Transposed convolution (``conv_transpose1d/2d/3d``) as one graph node.

A convolution maps x to y = W ⋆ x; its input-gradient maps dy back to dx,
adding each output position's contribution into every input position under the
kernel. A *transposed* convolution is that map used forward: each input
position scatters a weighted copy of the kernel into the (larger) output. So
its forward is the convolution's backward, on the same im2col machinery
(``tinynet.ops.conv``): one product, then col2im::

    cols = Wᵀ z              W: (C_in, C_out/groups · k₁·k₂…), z: (C_in, N·positions)
    y    = col2im(cols)       overlapping kernel copies add up; crop the padding

and its backward is a convolution: im2col of dy, then dz = W cols and
dW = z colsᵀ. The output size per spatial dim is PyTorch's::

    (L − 1)·stride − 2·padding + dilation·(k − 1) + output_padding + 1

``output_padding`` (smaller than the stride or the dilation) adds positions at
the end of each dim: it picks one of the input sizes that a strided
convolution maps to the same output size.
"""
from __future__ import annotations

import math
import numbers

from ..autograd import Function
from ..backend import get_array_module
from .conv import _shape_text, _spatial, check_ranks, col2im, im2col

__all__ = ["conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
           "conv_transpose_output_sizes"]


class ConvTransposeFunction(Function):
    """y = Wᵀ ⋆ z + b over the trailing spatial dims of z (N, C_in, *spatial).

    ``weight`` is (C_in, C_out/groups, *kernel), PyTorch's layout; ``padding``
    is one count per spatial dim (cropped from both ends of the full output),
    ``output_padding`` one per dim (kept at the end). Inputs of different float
    dtypes are computed in the wider one.
    """

    @staticmethod
    def forward(ctx, z, weight, bias, stride, padding, output_padding, dilation, groups):
        xp = get_array_module(z, weight)
        dtype = xp.result_type(*(a for a in (z, weight, bias) if a is not None))
        n, channels = z.shape[:2]
        in_sizes, kernel = tuple(z.shape[2:]), tuple(weight.shape[2:])
        filters = weight.shape[1] * groups                     # output channels
        full = tuple((size - 1) * s + d * (k - 1) + 1 + extra for size, s, d, k, extra
                     in zip(in_sizes, stride, dilation, kernel, output_padding, strict=True))
        out_sizes = tuple(f - 2 * p for f, p in zip(full, padding, strict=True))
        positions = math.prod(in_sizes)
        # z as (G, C_in/G, N·positions), W as (G, C_in/G, C_out/G·k…): the product's layout
        zz = xp.ascontiguousarray(
            z.astype(dtype, copy=False).reshape(n, channels, positions).swapaxes(0, 1))
        zz = zz.reshape(groups, channels // groups, n * positions)
        w = weight.astype(dtype, copy=False).reshape(groups, channels // groups, -1)
        cols = (w.swapaxes(1, 2) @ zz).reshape((filters,) + kernel + (n,) + in_sizes)
        pairs = tuple((p, p) for p in padding)
        out = col2im(xp, cols, (n, filters) + full, stride, dilation, pairs, out_sizes)
        out = xp.ascontiguousarray(out)
        if bias is not None:
            out += bias.astype(dtype, copy=False).reshape((1, filters) + (1,) * len(kernel))
        ctx.save_for_backward(zz, w)
        ctx.meta = (z.shape, weight.shape, kernel, stride, pairs, dilation, in_sizes,
                    bias is not None)
        return out

    @staticmethod
    def backward(ctx, grad):
        zz, w = ctx.saved
        z_shape, weight_shape, kernel, stride, pairs, dilation, in_sizes, has_bias = ctx.meta
        xp = get_array_module(grad)
        groups = w.shape[0]
        n, channels = z_shape[:2]
        # dy's windows, one per input position: the convolution that is this op's adjoint
        cols, _, _ = im2col(xp, grad, kernel, stride, pairs, dilation, in_sizes)
        cols = cols.reshape(groups, w.shape[2], n * math.prod(in_sizes))
        grad_z = grad_w = grad_b = None
        if ctx.needs_input_grad(0):
            grad_z = (w @ cols).reshape((channels, n) + in_sizes).swapaxes(0, 1)
        if ctx.needs_input_grad(1):
            grad_w = (zz @ cols.swapaxes(1, 2)).reshape(weight_shape)
        if has_bias and ctx.needs_input_grad(2):
            grad_b = grad.sum(axis=(0,) + tuple(range(2, grad.ndim)))
        return grad_z, grad_w, grad_b, None, None, None, None, None


def conv_transpose_output_sizes(in_sizes, kernel, stride, padding, output_padding, dilation):
    """PyTorch's output size per spatial dim (see the module docstring)."""
    return tuple((size - 1) * s - 2 * p + d * (k - 1) + extra + 1
                 for size, k, s, p, extra, d
                 in zip(in_sizes, kernel, stride, padding, output_padding, dilation,
                        strict=True))


def check_output_padding(where, output_padding, stride, dilation):
    """PyTorch's rule: each output_padding smaller than its stride or its dilation."""
    if any(o >= s and o >= d for o, s, d in zip(output_padding, stride, dilation,
                                                strict=True)):
        raise ValueError(f"{where}: output padding must be smaller than either stride or "
                         f"dilation, but got output_padding={output_padding}, "
                         f"stride={stride}, dilation={dilation}")


def _conv_transpose(dims, input, weight, bias, stride, padding, output_padding, groups,
                    dilation):
    where = f"conv_transpose{dims}d"
    check_ranks(where, dims, input, weight, "in_channels, out_channels/groups")
    if input.ndim == dims + 1:
        return _conv_transpose(dims, input.unsqueeze(0), weight, bias, stride, padding,
                               output_padding, groups, dilation).squeeze(0)
    if (isinstance(groups, bool) or not isinstance(groups, numbers.Integral)
            or groups < 1):
        raise ValueError(f"{where}: groups must be a positive integer, got {groups!r}")
    if weight.shape[0] % groups:
        raise ValueError(f"{where}: given groups={groups}, expected weight to be divisible "
                         f"by {groups} at dimension 0, but got weight of size "
                         f"{list(weight.shape)} instead")
    if input.shape[1] != weight.shape[0]:
        raise ValueError(f"{where}: given transposed=1, weight of size "
                         f"{list(weight.shape)}, expected input{list(input.shape)} to have "
                         f"{weight.shape[0]} channels, but got {input.shape[1]} channels "
                         "instead")
    filters = weight.shape[1] * groups
    if bias is not None and tuple(bias.shape) != (filters,):
        raise ValueError(f"{where}: bias of shape {tuple(bias.shape)} does not match the "
                         f"{filters} output channels")
    kernel = tuple(weight.shape[2:])
    stride = _spatial(where, "stride", stride, dims, 1)
    dilation = _spatial(where, "dilation", dilation, dims, 1)
    padding = _spatial(where, "padding", padding, dims, 0)
    output_padding = _spatial(where, "output_padding", output_padding, dims, 0)
    check_output_padding(where, output_padding, stride, dilation)
    sizes = conv_transpose_output_sizes(input.shape[2:], kernel, stride, padding,
                                        output_padding, dilation)
    if any(size < 1 for size in sizes):
        raise ValueError(f"{where}: given input size per channel: "
                         f"({_shape_text(input.shape[2:])}). Calculated output size per "
                         f"channel: ({_shape_text(sizes)}). Output size is too small "
                         f"(padding {padding})")
    return ConvTransposeFunction.apply(input, weight, bias, stride, padding, output_padding,
                                       dilation, int(groups))


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0,
                     groups=1, dilation=1):
    """1-D transposed convolution of (N, C_in, L) by weight (C_in, C_out/groups, k), as
    ``torch.nn.functional.conv_transpose1d``."""
    return _conv_transpose(1, input, weight, bias, stride, padding, output_padding, groups,
                           dilation)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0,
                     groups=1, dilation=1):
    """2-D transposed convolution of (N, C_in, H, W) by weight (C_in, C_out/groups, kH, kW),
    as ``torch.nn.functional.conv_transpose2d``."""
    return _conv_transpose(2, input, weight, bias, stride, padding, output_padding, groups,
                           dilation)


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0,
                     groups=1, dilation=1):
    """3-D transposed convolution of (N, C_in, D, H, W) by weight
    (C_in, C_out/groups, kD, kH, kW)."""
    return _conv_transpose(3, input, weight, bias, stride, padding, output_padding, groups,
                           dilation)
