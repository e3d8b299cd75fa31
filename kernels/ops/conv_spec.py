"""im2col and col2im in NumPy/CuPy array code: the spec of the compiled ones
(kernels/ops/conv_cpu.py), and the CUDA backend's kernels.

For every output position of a convolution, the input values under the
kernel form one column of a matrix ``cols`` with C·k₁·k₂… rows (see
:mod:`tinynet.ops.conv`)::

    cols[c, i, j, n, h, w] = x[n, c, h·stride + i·dilation, w·stride + j·dilation]

of the zero-padded x. im2col takes a *strided view* of the padded input and
copies it once; col2im, its adjoint, adds the columns back into the input
positions they were read from (overlapping windows sum), one strided add per
kernel offset, in raster order of the offsets. The product's result comes
out as (O, N, *out_sizes); :func:`swap_leading_axes` turns it into the
output's (N, O, *out_sizes), adding the bias, and the output's gradient back.
"""
from __future__ import annotations

import itertools

from tinynet.backend import get_array_module

__all__ = ["im2col", "col2im", "swap_leading_axes"]


def _windows(xp, padded, kernel, stride, dilation, out_sizes):
    """The strided view (C, *kernel, N, *out_sizes) of ``padded`` (N, C, *spatial)."""
    n_stride, c_stride, *space = padded.strides
    strides = ((c_stride,) + tuple(d * s for d, s in zip(dilation, space, strict=True))
               + (n_stride,) + tuple(t * s for t, s in zip(stride, space, strict=True)))
    shape = (padded.shape[1],) + kernel + (padded.shape[0],) + out_sizes
    return xp.lib.stride_tricks.as_strided(padded, shape=shape, strides=strides)


def _window_slices(offset, stride, dilation, out_sizes):
    """The input positions (one slice per spatial dim) read at kernel ``offset``."""
    return tuple(slice(i * d, i * d + s * (n - 1) + 1, s)
                 for i, s, d, n in zip(offset, stride, dilation, out_sizes, strict=True))


def im2col(x, kernel, stride, padding, dilation, out_sizes=None):
    """The columns of ``x`` (N, C, *spatial): ``(cols, padded_shape, out_sizes)``.

    ``cols`` is the contiguous (C, *kernel, N, *out_sizes) copy of the windows
    of ``x`` zero-padded by ``padding`` ((before, after) per spatial dim);
    ``out_sizes`` defaults to every window that fits.
    """
    xp = get_array_module(x)
    padded = x
    if any(before or after for before, after in padding):
        padded = xp.pad(padded, ((0, 0), (0, 0)) + tuple(padding))
    if out_sizes is None:
        out_sizes = tuple((size - d * (k - 1) - 1) // s + 1 for size, k, s, d
                          in zip(padded.shape[2:], kernel, stride, dilation, strict=True))
    cols = xp.ascontiguousarray(_windows(xp, padded, kernel, stride, dilation, out_sizes))
    return cols, padded.shape, out_sizes


def col2im(dcols, padded_shape, stride, dilation, padding, sizes):
    """im2col's adjoint: ``dcols`` (C, *kernel, N, *out_sizes) added back into
    zeros of ``padded_shape`` (N, C, *padded) at the positions each column was
    read from (overlapping windows sum), then cropped to (N, C, *sizes) from
    each dim's ``before`` padding on."""
    xp = get_array_module(dcols)
    dims = len(sizes)
    kernel, out_sizes = dcols.shape[1:1 + dims], dcols.shape[2 + dims:]
    grad_padded = xp.zeros(padded_shape, dtype=dcols.dtype)
    for offset in itertools.product(*(range(k) for k in kernel)):
        where = (slice(None), slice(None)) + _window_slices(offset, stride, dilation, out_sizes)
        grad_padded[where] += dcols[(slice(None),) + offset].swapaxes(0, 1)
    return grad_padded[(slice(None), slice(None)) + tuple(
        slice(before, before + size) for (before, _), size in zip(padding, sizes, strict=True))]


def swap_leading_axes(a, bias=None):
    """``a`` (A, B, …) as a C-ordered (B, A, …) array, plus ``bias[i]`` at every
    element of row i of A when a bias (A,) is given."""
    xp = get_array_module(a)
    out = xp.ascontiguousarray(a.swapaxes(0, 1))
    if bias is not None:
        out += bias.reshape((1, -1) + (1,) * (a.ndim - 2))
    return out
