"""Pooling layers: MaxPool, AvgPool and AdaptiveAvgPool over 1, 2 or 3 spatial
dims, with PyTorch's constructor arguments, attributes and reprs. Each calls
its function in :mod:`tinynet.ops.pooling` (which explains the method); the
arguments are checked when the layer is built, so a bad one fails there."""
from __future__ import annotations

from ..ops import pooling as P
from .module import Module

__all__ = ["MaxPool1d", "MaxPool2d", "MaxPool3d", "AvgPool1d", "AvgPool2d", "AvgPool3d",
           "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d"]


class _MaxPoolNd(Module):
    dims = None
    function = None

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1,
                 return_indices=False, ceil_mode=False):
        super().__init__()
        P.pool_geometry(type(self).__name__, self.dims, kernel_size, stride, padding, dilation)
        if return_indices:
            raise NotImplementedError(f"{type(self).__name__}: return_indices=True is not "
                                      "supported")
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.dilation = padding, dilation
        self.return_indices, self.ceil_mode = return_indices, ceil_mode

    def forward(self, input):
        """The max over each window: (N, C, *spatial) or (C, *spatial), each output size
        ⌊(size + 2·padding − dilation·(kernel_size − 1) − 1) / stride⌋ + 1 (⌈⌉ with
        ``ceil_mode``); the gradient goes to the first maximum of each window.
        """
        return type(self).function(input, self.kernel_size, self.stride, self.padding,
                                   self.dilation, self.ceil_mode, self.return_indices)

    def extra_repr(self):
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, "
                f"padding={self.padding}, dilation={self.dilation}, "
                f"ceil_mode={self.ceil_mode}")


class MaxPool1d(_MaxPoolNd):
    """Max over windows of the last dim of (N, C, L) or (C, L)."""
    dims, function = 1, staticmethod(P.max_pool1d)


class MaxPool2d(_MaxPoolNd):
    """Max over windows of the last 2 dims of (N, C, H, W) or (C, H, W)."""
    dims, function = 2, staticmethod(P.max_pool2d)


class MaxPool3d(_MaxPoolNd):
    """Max over windows of the last 3 dims of (N, C, D, H, W) or (C, D, H, W)."""
    dims, function = 3, staticmethod(P.max_pool3d)


def _single(value):
    """An int as a 1-tuple, as PyTorch's AvgPool1d stores its sizes."""
    return tuple(value) if isinstance(value, (tuple, list)) else (value,)


class AvgPool1d(Module):
    """Mean over windows of the last dim of (N, C, L) or (C, L)."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False,
                 count_include_pad=True):
        super().__init__()
        P.pool_geometry("AvgPool1d", 1, kernel_size, stride, padding)
        self.kernel_size = _single(kernel_size)
        self.stride = _single(stride if stride is not None else kernel_size)
        self.padding = _single(padding)
        self.ceil_mode, self.count_include_pad = ceil_mode, count_include_pad

    def forward(self, input):
        """The mean over each window: (N, C, L) or (C, L) -> L_out = ⌊(L + 2·padding −
        kernel_size) / stride⌋ + 1 (⌈⌉ with ``ceil_mode``); padded zeros count in the mean
        with ``count_include_pad`` (the default).
        """
        return P.avg_pool1d(input, self.kernel_size, self.stride, self.padding,
                            self.ceil_mode, self.count_include_pad)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class _AvgPoolNd(Module):
    dims = None
    function = None

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False,
                 count_include_pad=True, divisor_override=None):
        super().__init__()
        P.pool_geometry(type(self).__name__, self.dims, kernel_size, stride, padding)
        if divisor_override == 0:
            raise ValueError(f"{type(self).__name__}: divisor_override must be non-zero")
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.ceil_mode = padding, ceil_mode
        self.count_include_pad, self.divisor_override = count_include_pad, divisor_override

    def forward(self, input):
        """The mean over each window: (N, C, *spatial) or (C, *spatial), each output size
        ⌊(size + 2·padding − kernel_size) / stride⌋ + 1 (⌈⌉ with ``ceil_mode``); padded
        zeros count with ``count_include_pad``; ``divisor_override`` replaces the count.
        """
        return type(self).function(input, self.kernel_size, self.stride, self.padding,
                                   self.ceil_mode, self.count_include_pad,
                                   self.divisor_override)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool2d(_AvgPoolNd):
    """Mean over windows of the last 2 dims of (N, C, H, W) or (C, H, W)."""
    dims, function = 2, staticmethod(P.avg_pool2d)


class AvgPool3d(_AvgPoolNd):
    """Mean over windows of the last 3 dims of (N, C, D, H, W) or (C, D, H, W)."""
    dims, function = 3, staticmethod(P.avg_pool3d)


class _AdaptiveAvgPoolNd(Module):
    function = None

    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def forward(self, input):
        """The mean over ``output_size`` bins per spatial dim, bin i covering
        [⌊i·size/out⌋, ⌈(i+1)·size/out⌉): (N, C, *spatial) -> (N, C, *output_size).
        """
        return type(self).function(input, self.output_size)

    def extra_repr(self):
        return f"output_size={self.output_size}"


class AdaptiveAvgPool1d(_AdaptiveAvgPoolNd):
    """Mean over ``output_size`` adaptive bins of the last dim."""
    function = staticmethod(P.adaptive_avg_pool1d)


class AdaptiveAvgPool2d(_AdaptiveAvgPoolNd):
    """Mean over adaptive bins of the last 2 dims; None keeps a dim's size."""
    function = staticmethod(P.adaptive_avg_pool2d)


class AdaptiveAvgPool3d(_AdaptiveAvgPoolNd):
    """Mean over adaptive bins of the last 3 dims; None keeps a dim's size."""
    function = staticmethod(P.adaptive_avg_pool3d)
