"""Convolution layers: ``Conv1d``, ``Conv2d``, ``Conv3d``, with PyTorch's arguments,
weight layout (out_channels, in_channels/groups, *kernel_size) and initialisation;
the transposed ones, ``ConvTranspose1d/2d/3d``, with weight (in_channels,
out_channels/groups, *kernel_size)."""
from __future__ import annotations

import math
import numbers

from .. import creation
from ..hyperparameters import check_count
from ..ops.conv import _spatial, conv_arguments
from ..ops.conv_transpose import conv_transpose_output_sizes
from . import functional as F
from . import init
from .module import Module, Parameter

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
           "ConvTranspose3d"]

PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


def _channels(name, in_channels, out_channels, groups):
    """in_channels, out_channels and groups, checked as PyTorch checks them."""
    counts = tuple(check_count(name, what, n) for what, n in
                   (("in_channels", in_channels), ("out_channels", out_channels),
                    ("groups", groups)))
    for what, n in (("in_channels", in_channels), ("out_channels", out_channels)):
        if n % groups:
            raise ValueError(f"{name}: {what} must be divisible by groups")
    return counts


def _kernel_size(name, kernel_size, dims):
    """``kernel_size`` (an int or ``dims`` of them) as a tuple of positive ints."""
    sizes = (kernel_size,) * dims if isinstance(kernel_size, numbers.Integral) else tuple(
        kernel_size)
    if len(sizes) != dims or min(sizes) < 1:
        raise ValueError(f"{name}: kernel_size must be a positive int or {dims} of them, "
                         f"got {kernel_size!r}")
    return tuple(int(k) for k in sizes)


def _init_parameters(module, weight_shape, fan_in, bias, dtype, device):
    """PyTorch's init: weight (and bias, one per output channel) ~ U(−1/√fan_in, 1/√fan_in)."""
    bound = init.fan_in_bound(fan_in)
    module.weight = Parameter(init.uniform_(
        creation.empty(*weight_shape, dtype=dtype, device=device), -bound, bound))
    if bias:
        module.bias = Parameter(init.uniform_(
            creation.empty(module.out_channels, dtype=dtype, device=device), -bound, bound))
    else:
        module.register_parameter("bias", None)


def _describe(module, settings):
    """PyTorch's repr of a convolution: channels, kernel size, stride, then each of
    ``settings`` (name, value, default) that differs from its default."""
    text = (f"{module.in_channels}, {module.out_channels}, "
            f"kernel_size={module.kernel_size}, stride={module.stride}")
    for name, value, default in settings:
        if value != default:
            text += f", {name}={value}"
    return text + (", bias=False" if module.bias is None else "")


class _ConvNd(Module):
    """The parameters and checks shared by the convolutions of every dimension.

    Weight and bias start as PyTorch's, U(−1/√fan_in, 1/√fan_in) with
    fan_in = in_channels/groups · prod(kernel_size): a Linear layer's init for
    the C·k·k inputs one output reads.
    """

    dims = 0
    convolve = None

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 dilation=1, groups=1, bias=True, padding_mode="zeros", device="cpu",
                 dtype=None):
        super().__init__()
        name = type(self).__name__
        self.in_channels, self.out_channels, self.groups = _channels(
            name, in_channels, out_channels, groups)
        if padding_mode not in PADDING_MODES:
            raise ValueError(f"{name}: padding_mode must be one of {PADDING_MODES}, got "
                             f"{padding_mode!r}")
        self.kernel_size = _kernel_size(name, kernel_size, self.dims)
        self.stride, self._padding, self.dilation = conv_arguments(
            name, self.dims, self.kernel_size, stride, padding, dilation)
        self.padding = padding if isinstance(padding, str) else tuple(
            before for before, _ in self._padding)
        self.padding_mode = padding_mode
        _init_parameters(self, (out_channels, in_channels // groups) + self.kernel_size,
                         in_channels // groups * math.prod(self.kernel_size), bias, dtype,
                         device)

    def forward(self, x):
        """The convolution (a cross-correlation, as PyTorch's) of ``x``: (N, C_in, *spatial)
        or unbatched (C_in, *spatial) -> (N, C_out, *spatial_out), each output size
        ⌊(size + 2·padding − dilation·(kernel_size − 1) − 1) / stride⌋ + 1
        (``padding='same'`` keeps the size).
        """
        if self.padding_mode == "zeros":
            return type(self).convolve(x, self.weight, self.bias, self.stride,
                                       self.padding, self.dilation, self.groups)
        # F.pad's widths run from the last dim backwards
        widths = tuple(w for pair in reversed(self._padding) for w in pair)
        return type(self).convolve(F.pad(x, widths, mode=self.padding_mode), self.weight,
                                   self.bias, self.stride, 0, self.dilation, self.groups)

    def extra_repr(self):
        text = _describe(self, [("padding", self.padding, (0,) * self.dims),
                                ("dilation", self.dilation, (1,) * self.dims),
                                ("groups", self.groups, 1)])
        if self.padding_mode != "zeros":
            text += f", padding_mode={self.padding_mode}"
        return text


class Conv1d(_ConvNd):
    """1-D convolution over (N, C, L), as ``torch.nn.Conv1d``."""

    dims = 1
    convolve = staticmethod(F.conv1d)


class Conv2d(_ConvNd):
    """2-D convolution over (N, C, H, W), as ``torch.nn.Conv2d``: one graph node
    (im2col through a strided view and one matrix product; see ``tinynet.ops.conv``)."""

    dims = 2
    convolve = staticmethod(F.conv2d)


class Conv3d(_ConvNd):
    """3-D convolution over (N, C, D, H, W), as ``torch.nn.Conv3d``."""

    dims = 3
    convolve = staticmethod(F.conv3d)


class _ConvTransposeNd(Module):
    """The parameters and checks shared by the transposed convolutions.

    The weight is (in_channels, out_channels/groups, *kernel_size), PyTorch's
    layout (a convolution's weight read the other way round), and weight and
    bias start as PyTorch's: U(−1/√fan_in, 1/√fan_in) with fan_in computed from
    the weight as PyTorch does, weight.size(1) · prod(kernel_size) =
    out_channels/groups · prod(kernel_size).
    """

    dims = 0
    convolve = None

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 output_padding=0, groups=1, bias=True, dilation=1, padding_mode="zeros",
                 device="cpu", dtype=None):
        super().__init__()
        name = type(self).__name__
        self.in_channels, self.out_channels, self.groups = _channels(
            name, in_channels, out_channels, groups)
        if padding_mode != "zeros":
            raise ValueError(f'{name}: only "zeros" padding mode is supported, got '
                             f"{padding_mode!r}")
        self.kernel_size = _kernel_size(name, kernel_size, self.dims)
        self.stride = _spatial(name, "stride", stride, self.dims, 1)
        self.padding = _spatial(name, "padding", padding, self.dims, 0)
        self.output_padding = _spatial(name, "output_padding", output_padding, self.dims, 0)
        self.dilation = _spatial(name, "dilation", dilation, self.dims, 1)
        self.padding_mode = padding_mode
        _init_parameters(self, (in_channels, out_channels // groups) + self.kernel_size,
                         out_channels // groups * math.prod(self.kernel_size), bias, dtype,
                         device)

    def _output_padding(self, x, output_size):
        """The output_padding that gives ``output_size`` (PyTorch's rule), or ours."""
        if output_size is None:
            return self.output_padding
        name = type(self).__name__
        output_size = tuple(output_size)
        leading = x.ndim - self.dims                       # N and C, or C alone
        if len(output_size) == leading + self.dims:
            output_size = output_size[leading:]
        if len(output_size) != self.dims:
            raise ValueError(f"{name}: for {x.ndim}D input, output_size must have "
                             f"{self.dims} or {leading + self.dims} elements (got "
                             f"{len(output_size)})")
        smallest = conv_transpose_output_sizes(x.shape[leading:], self.kernel_size,
                                               self.stride, self.padding,
                                               (0,) * self.dims, self.dilation)
        largest = tuple(s + t - 1 for s, t in zip(smallest, self.stride, strict=True))
        if not all(lo <= size <= hi for lo, size, hi in zip(smallest, output_size, largest,
                                                             strict=True)):
            raise ValueError(f"{name}: requested an output size of {output_size}, but "
                             f"valid sizes range from {list(smallest)} to {list(largest)} "
                             f"(for an input of {tuple(x.shape[leading:])})")
        return tuple(size - lo for size, lo in zip(output_size, smallest, strict=True))

    def forward(self, x, output_size=None):
        """The transposed convolution of ``x`` (the gradient of a convolution with respect
        to its input): (N, C_in, *spatial) or (C_in, *spatial) -> (N, C_out, *spatial_out),
        each output size (size − 1)·stride − 2·padding + dilation·(kernel_size − 1) +
        output_padding + 1; ``output_size`` picks ``output_padding`` to give that size.
        """
        return type(self).convolve(x, self.weight, self.bias, self.stride, self.padding,
                                   self._output_padding(x, output_size), self.groups,
                                   self.dilation)

    def extra_repr(self):
        return _describe(self, [("padding", self.padding, (0,) * self.dims),
                                ("dilation", self.dilation, (1,) * self.dims),
                                ("output_padding", self.output_padding, (0,) * self.dims),
                                ("groups", self.groups, 1)])


class ConvTranspose1d(_ConvTransposeNd):
    """1-D transposed convolution over (N, C, L), as ``torch.nn.ConvTranspose1d``."""

    dims = 1
    convolve = staticmethod(F.conv_transpose1d)


class ConvTranspose2d(_ConvTransposeNd):
    """2-D transposed convolution over (N, C, H, W), as ``torch.nn.ConvTranspose2d``:
    one graph node (a product and col2im; see ``tinynet.ops.conv_transpose``)."""

    dims = 2
    convolve = staticmethod(F.conv_transpose2d)


class ConvTranspose3d(_ConvTransposeNd):
    """3-D transposed convolution over (N, C, D, H, W), as ``torch.nn.ConvTranspose3d``."""

    dims = 3
    convolve = staticmethod(F.conv_transpose3d)
