"""A small MNIST convnet whose normalization is a choice: the paper's §6.7 question.

Ba, Kiros & Hinton report (§6.7) that layer normalization speeds up a convnet
over no normalization, but batch normalization does better: the hidden units
near an image's border rarely fire, so one mean and variance over all of a
layer's (C, H, W) units fit them badly. Group normalization (Wu & He, 2018)
takes the statistics over groups of channels instead, still one sample at a
time. Every choice here normalizes a conv layer's output (N, C, H, W):

========  =============================================  ===================
norm      statistics over                                depends on the batch
========  =============================================  ===================
batch     one channel, all N·H·W values of the batch     yes
layer     one sample, all C·H·W values (the paper's LN)  no
group     one sample, C/G channels·H·W (Wu & He)         no
instance  one sample, one channel's H·W values           no
none      —                                              —
========  =============================================  ===================
"""
from __future__ import annotations

from .. import nn

__all__ = ["ConvNet", "CONV_NORMS", "conv_norm_layer"]

CONV_NORMS = ("none", "batch", "layer", "group", "instance")
"""The names :func:`conv_norm_layer` (and the ConvNet's ``norm``) accept."""
CHANNELS_PER_GROUP = 4


def conv_norm_layer(norm: str, channels: int, height: int, width: int):
    """The normalization of a (channels, height, width) feature map (None for 'none').

    ``layer`` normalizes and scales all C·H·W units of a sample, as the paper
    applies LayerNorm (a gain and bias per unit); ``group`` uses groups of
    ``CHANNELS_PER_GROUP`` channels and ``instance`` single channels, each with
    a gain and bias per channel, as BatchNorm2d has.
    """
    if norm == "batch":
        return nn.BatchNorm2d(channels)
    if norm == "layer":
        return nn.LayerNorm([channels, height, width])
    if norm == "group":
        return nn.GroupNorm(max(1, channels // CHANNELS_PER_GROUP), channels)
    if norm == "instance":
        return nn.InstanceNorm2d(channels, affine=True)
    if norm == "none":
        return None
    raise ValueError(f"norm must be one of {CONV_NORMS}, got {norm!r}")


class ConvNet(nn.Sequential):
    """Stages of 3×3 convolution (padding 1), norm, ReLU and 2×2 max pooling, then
    a linear classifier: 1×28×28 → 16×14×14 → 32×7×7 → 10 with the default
    ``channels=(16, 32)``. Flat (N, 784) inputs are viewed as (N, 1, 28, 28)."""

    def __init__(self, norm: str = "batch", channels=(16, 32), image_size: int = 28,
                 classes: int = 10):
        if norm not in CONV_NORMS:
            raise ValueError(f"norm must be one of {CONV_NORMS}, got {norm!r}")
        layers = [nn.Unflatten(1, (1, image_size, image_size))]
        size, fan_in = image_size, 1
        for width in channels:
            layers.append(nn.Conv2d(fan_in, width, 3, padding=1))
            normalization = conv_norm_layer(norm, width, size, size)
            if normalization is not None:
                layers.append(normalization)
            layers += [nn.ReLU(), nn.MaxPool2d(2)]
            size, fan_in = size // 2, width
        layers += [nn.Flatten(), nn.Linear(fan_in * size * size, classes)]
        super().__init__(*layers)
        self.norm = norm
