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
        self.in_channels = check_count(name, "in_channels", in_channels)
        self.out_channels = check_count(name, "out_channels", out_channels)
        self.groups = check_count(name, "groups", groups)
        if in_channels % groups:
            raise ValueError(f"{name}: in_channels must be divisible by groups")
        if out_channels % groups:
            raise ValueError(f"{name}: out_channels must be divisible by groups")
        if padding_mode not in PADDING_MODES:
            raise ValueError(f"{name}: padding_mode must be one of {PADDING_MODES}, got "
                             f"{padding_mode!r}")
        kernel_size = ((kernel_size,) * self.dims
                       if isinstance(kernel_size, numbers.Integral) else tuple(kernel_size))
        if len(kernel_size) != self.dims or min(kernel_size) < 1:
            raise ValueError(f"{name}: kernel_size must be a positive int or {self.dims} "
                             f"of them, got {kernel_size!r}")
        self.kernel_size = tuple(int(k) for k in kernel_size)
        self.stride, self._padding, self.dilation = conv_arguments(
            name, self.dims, self.kernel_size, stride, padding, dilation)
        self.padding = padding if isinstance(padding, str) else tuple(
            before for before, _ in self._padding)
        self.padding_mode = padding_mode
        fan_in = in_channels // groups * math.prod(self.kernel_size)
        bound = init.fan_in_bound(fan_in)
        shape = (out_channels, in_channels // groups) + self.kernel_size
        self.weight = Parameter(init.uniform_(
            creation.empty(*shape, dtype=dtype, device=device), -bound, bound))
        if bias:
            self.bias = Parameter(init.uniform_(
                creation.empty(out_channels, dtype=dtype, device=device), -bound, bound))
        else:
            self.register_parameter("bias", None)

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
        text = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}")
        if self.padding != (0,) * self.dims:
            text += f", padding={self.padding}"
        if self.dilation != (1,) * self.dims:
            text += f", dilation={self.dilation}"
        if self.groups != 1:
            text += f", groups={self.groups}"
        if self.bias is None:
            text += ", bias=False"
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
        self.in_channels = check_count(name, "in_channels", in_channels)
        self.out_channels = check_count(name, "out_channels", out_channels)
        self.groups = check_count(name, "groups", groups)
        if in_channels % groups:
            raise ValueError(f"{name}: in_channels must be divisible by groups")
        if out_channels % groups:
            raise ValueError(f"{name}: out_channels must be divisible by groups")
        if padding_mode != "zeros":
            raise ValueError(f'{name}: only "zeros" padding mode is supported, got '
                             f"{padding_mode!r}")
        kernel_size = ((kernel_size,) * self.dims
                       if isinstance(kernel_size, numbers.Integral) else tuple(kernel_size))
        if len(kernel_size) != self.dims or min(kernel_size) < 1:
            raise ValueError(f"{name}: kernel_size must be a positive int or {self.dims} "
                             f"of them, got {kernel_size!r}")
        self.kernel_size = tuple(int(k) for k in kernel_size)
        self.stride = _spatial(name, "stride", stride, self.dims, 1)
        self.padding = _spatial(name, "padding", padding, self.dims, 0)
        self.output_padding = _spatial(name, "output_padding", output_padding, self.dims, 0)
        self.dilation = _spatial(name, "dilation", dilation, self.dims, 1)
        self.padding_mode = padding_mode
        shape = (in_channels, out_channels // groups) + self.kernel_size
        bound = init.fan_in_bound(shape[1] * math.prod(self.kernel_size))
        self.weight = Parameter(init.uniform_(
            creation.empty(*shape, dtype=dtype, device=device), -bound, bound))
        if bias:
            self.bias = Parameter(init.uniform_(
                creation.empty(out_channels, dtype=dtype, device=device), -bound, bound))
        else:
            self.register_parameter("bias", None)

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
        text = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}")
        if self.padding != (0,) * self.dims:
            text += f", padding={self.padding}"
        if self.dilation != (1,) * self.dims:
            text += f", dilation={self.dilation}"
        if self.output_padding != (0,) * self.dims:
            text += f", output_padding={self.output_padding}"
        if self.groups != 1:
            text += f", groups={self.groups}"
        if self.bias is None:
            text += ", bias=False"
        return text


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
