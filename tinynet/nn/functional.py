"""Stateless layer functions, as ``torch.nn.functional``."""
from __future__ import annotations

import math
import numbers

import numpy as np

from ..backend import get_array_module, kernels_for
from ..hyperparameters import check_real
from ..lacking import lacking
from ..ops import (
    dropout,
    elu,
    embedding,
    gelu,
    leaky_relu,
    linear,
    log_softmax,
    one_hot,
    pad,
    prelu,
    relu,
    scaled_dot_product_attention,
    sigmoid,
    silu,
    softmax,
    softplus,
    tanh,
    where,
)
from ..ops.conv import conv1d, conv2d, conv3d
from ..ops.conv_transpose import conv_transpose1d, conv_transpose2d, conv_transpose3d
from ..ops.normalization import (
    BatchNormFunction,
    GroupNormFunction,
    LayerNormFunction,
    RMSNormFunction,
)
from ..ops.pooling import (
    adaptive_avg_pool1d,
    adaptive_avg_pool2d,
    adaptive_avg_pool3d,
    avg_pool1d,
    avg_pool2d,
    avg_pool3d,
    max_pool1d,
    max_pool2d,
    max_pool3d,
)
from .dropout import dropout1d, dropout2d, dropout3d
from .functional_losses import (
    _check_reduction,  # noqa: F401 (the loss modules check their reduction with it)
    _reduce,
    binary_cross_entropy,
    binary_cross_entropy_with_logits,
    cross_entropy,
    legacy_reduction,
    nll_loss,
)

__all__ = ["linear", "relu", "tanh", "sigmoid", "softmax", "log_softmax", "dropout",
           "dropout1d", "dropout2d", "dropout3d",
           "cross_entropy", "nll_loss", "mse_loss", "layer_norm", "rms_norm", "batch_norm",
           "group_norm", "instance_norm", "conv1d", "conv2d", "conv3d",
           "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
           "max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d", "avg_pool2d", "avg_pool3d",
           "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d",
           "gelu", "silu", "one_hot", "embedding", "scaled_dot_product_attention", "pad",
           "softplus", "elu", "leaky_relu", "prelu", "normalize", "binary_cross_entropy",
           "binary_cross_entropy_with_logits", "l1_loss", "smooth_l1_loss", "huber_loss"]


def mse_loss(input, target, size_average=None, reduce=None, reduction: str = "mean"):
    """Mean squared error of two tensors of one shape: (input − target)² elementwise,
    averaged (``reduction='mean'``, PyTorch's default), summed (``'sum'``) or not
    reduced (``'none'``: the input's shape), as ``torch.nn.functional.mse_loss``.
    """
    reduction = legacy_reduction(size_average, reduce, reduction)
    diff = _difference("mse_loss", input, target)
    return _reduce(diff * diff, reduction)


def _difference(where_, input, target):
    if tuple(input.shape) != tuple(target.shape):
        raise ValueError(f"{where_}: input shape {tuple(input.shape)} and target shape "
                         f"{tuple(target.shape)} differ")
    return input - target


def l1_loss(input, target, size_average=None, reduce=None, reduction: str = "mean"):
    """Mean absolute error |input − target| of two tensors of one shape, reduced as
    :func:`mse_loss`, as ``torch.nn.functional.l1_loss``; its gradient is the sign
    of the difference (0 where they are equal)."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    return _reduce(_difference("l1_loss", input, target).abs(), reduction)


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction: str = "mean",
                   beta: float = 1.0):
    """0.5 z² / β where z = |input − target| < β, else z − 0.5 β (Girshick's Fast R-CNN
    loss), reduced as :func:`mse_loss`, as ``torch.nn.functional.smooth_l1_loss``;
    ``beta=0`` is :func:`l1_loss`."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    beta = check_real("smooth_l1_loss", "beta", beta, low=0)
    z = _difference("smooth_l1_loss", input, target).abs()
    if beta == 0:
        return _reduce(z, reduction)
    return _reduce(where(z < beta, 0.5 * z * z / beta, z - 0.5 * beta), reduction)


def huber_loss(input, target, reduction: str = "mean", delta: float = 1.0):
    """0.5 z² where z = |input − target| < δ, else δ (z − 0.5 δ): :func:`smooth_l1_loss`
    times δ, as ``torch.nn.functional.huber_loss`` (``delta`` must be positive)."""
    delta = check_real("huber_loss", "delta", delta, low=0)
    if delta == 0:
        raise ValueError("huber_loss: delta must be positive, got 0.0")
    z = _difference("huber_loss", input, target).abs()
    return _reduce(where(z < delta, 0.5 * z * z, delta * (z - 0.5 * delta)), reduction)


def normalize(input, p: float = 2.0, dim: int = 1, eps: float = 1e-12):
    """input / max(‖input‖_p, eps), the p-norm taken over ``dim``: unit vectors along
    ``dim`` (a zero vector stays zero), as ``torch.nn.functional.normalize``."""
    eps = check_real("normalize", "eps", eps, low=0)
    return input / input.norm(p, dim, keepdim=True).clamp(min=eps)


def _normalized_size(x, normalized_shape, where="layer_norm"):
    shape = ((normalized_shape,) if isinstance(normalized_shape, numbers.Integral)
             else tuple(normalized_shape))
    if not shape:
        raise ValueError(f"{where}: expected normalized_shape to be at least 1-dimensional "
                         f"(the trailing dims each sample is normalized over), got ()")
    if x.ndim < len(shape) or tuple(x.shape[x.ndim - len(shape):]) != shape:
        raise ValueError(
            f"{where}: normalized_shape {shape} does not match the trailing "
            f"dimensions of the input of shape {tuple(x.shape)}")
    return math.prod(shape)


def layer_norm(x, normalized_shape, weight=None, bias=None, eps: float = 1e-5):
    """Normalize over the trailing ``normalized_shape`` dims of each sample.

    The paper's Eq. (4): μ and σ are the mean and (biased) standard deviation
    of the H = prod(normalized_shape) summed inputs of one sample, ε inside
    the square root; then y = weight · (x − μ)/σ + bias.
    """
    size = _normalized_size(x, normalized_shape)
    eps = check_real("layer_norm", "eps", eps, low=0)
    for name, p in (("weight", weight), ("bias", bias)):
        if p is not None and p.array.size != size:
            raise ValueError(
                f"layer_norm: {name} of shape {tuple(p.shape)} does not match "
                f"normalized_shape ({size} elements)")
    return LayerNormFunction.apply(x, weight, bias, size, eps)


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """Divide each sample by the root mean square of its trailing ``normalized_shape``
    dims (Zhang & Sennrich, 2019): y = weight · x / sqrt(mean(x²) + ε).

    ``eps=None`` means ``finfo(input.dtype).eps``, as PyTorch.
    """
    shape = ((normalized_shape,) if isinstance(normalized_shape, numbers.Integral)
             else tuple(normalized_shape))
    size = _normalized_size(input, shape, "rms_norm")
    eps = (float(np.finfo(input.dtype).eps) if eps is None
           else check_real("rms_norm", "eps", eps, low=0))
    if weight is not None and tuple(weight.shape) != shape:
        raise ValueError(f"rms_norm: weight of shape {tuple(weight.shape)} does not match "
                         f"normalized_shape {shape}")
    return RMSNormFunction.apply(input, weight, size, eps)


def batch_norm(x, running_mean, running_var, weight=None, bias=None, training=False,
               momentum: float = 0.1, eps: float = 1e-5, unbiased_batch_var: bool = False):
    """Normalize each channel (axis 1 of (N, C, *spatial)) over the batch (and the
    spatial positions).

    Training uses the batch's mean and variance (biased, unless
    ``unbiased_batch_var``) and, when running buffers are given, updates them:
    running = (1 − momentum)·running + momentum·batch, with the *unbiased*
    variance stored (as PyTorch). Otherwise the running statistics are used.
    """
    if x.ndim < 2:
        raise ValueError(f"batch_norm: expected an input (N, C, *spatial), got shape "
                         f"{tuple(x.shape)}")
    eps = check_real("batch_norm", "eps", eps, low=0)
    momentum = check_real("batch_norm", "momentum", momentum, 0, 1)
    channels = x.shape[1]
    for name, t in (("weight", weight), ("bias", bias), ("running_mean", running_mean),
                    ("running_var", running_var)):
        if t is not None and tuple(t.shape) != (channels,):
            raise ValueError(f"batch_norm: {name} has shape {tuple(t.shape)}, but the input "
                             f"of shape {tuple(x.shape)} has {channels} channels")
    if not training:
        if running_mean is None or running_var is None:
            raise ValueError("batch_norm: eval mode needs running_mean and running_var")
        return BatchNormFunction.apply(x, weight, bias, running_mean.array,
                                       running_var.array, eps, None)

    if eps == 0:
        raise ValueError("batch_norm: eps must be positive during training, but got 0 (a "
                         "channel of equal values would divide 0 by 0)")
    count = x.array.size // channels if channels else 0
    if count == 0:             # an empty batch: an empty output, the running statistics kept
        xp = get_array_module(x.array)
        return BatchNormFunction.apply(x, weight, bias, xp.zeros(channels, x.dtype),
                                       xp.ones(channels, x.dtype), eps, None)
    if count == 1:
        raise ValueError(
            f"batch_norm: expected more than 1 value per channel when training, got input "
            f"of shape {tuple(x.shape)}")
    mean, squares = kernels_for(x.array).batch_norm_statistics(x.array)   # Σ (x − mean)²
    dof = count - 1 if unbiased_batch_var else count
    if running_mean is not None:
        running_mean.array *= 1 - momentum
        running_mean.array += momentum * mean
        running_var.array *= 1 - momentum
        running_var.array += momentum * (squares / (count - 1))
    return BatchNormFunction.apply(x, weight, bias, mean, squares / dof, eps, dof)


def _check_channel_affine(where, x, weight, bias):
    for name, p in (("weight", weight), ("bias", bias)):
        if p is not None and tuple(p.shape) != (x.shape[1],):
            raise ValueError(f"{where}: {name} has shape {tuple(p.shape)}, but the input of "
                             f"shape {tuple(x.shape)} has {x.shape[1]} channels")


def group_norm(input, num_groups: int, weight=None, bias=None, eps: float = 1e-5):
    """Group normalization (Wu & He, 2018) of (N, C, *spatial).

    The C channels of each sample split into ``num_groups`` groups of C/G
    consecutive channels; each group is normalized over its C/G·H·W values by
    its own mean and biased variance (the paper's Eq. 4 on that row), then
    scaled and shifted per channel: y = weight_c · x̂ + bias_c. One group is
    LayerNorm over (C, H, W); C groups is InstanceNorm.
    """
    if input.ndim < 2:
        raise ValueError(f"group_norm: expected an input (N, C, *spatial), got shape "
                         f"{tuple(input.shape)}")
    if (not isinstance(num_groups, numbers.Integral) or num_groups < 1
            or input.shape[1] % num_groups):
        raise ValueError(f"group_norm: expected the number of channels ({input.shape[1]}) "
                         f"to be divisible by num_groups, got num_groups={num_groups!r}")
    eps = check_real("group_norm", "eps", eps, low=0)
    _check_channel_affine("group_norm", input, weight, bias)
    return GroupNormFunction.apply(input, weight, bias, int(num_groups), eps, False)


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None,
                  use_input_stats: bool = True, momentum: float = 0.1, eps: float = 1e-5):
    """Instance normalization (Ulyanov et al., 2016): each channel of each sample
    normalized over its spatial positions, i.e. ``group_norm`` with C groups.

    With running buffers, training also updates them by the batch's average of
    the per-instance means and unbiased variances (as PyTorch), and
    ``use_input_stats=False`` normalizes by them instead.
    """
    if input.ndim < 3:
        raise ValueError(f"instance_norm: expected an input (N, C, *spatial), got shape "
                         f"{tuple(input.shape)}")
    if not use_input_stats:
        return batch_norm(input, running_mean, running_var, weight, bias, training=False,
                          eps=eps)
    momentum = check_real("instance_norm", "momentum", momentum, 0, 1)
    positions = math.prod(input.shape[2:])
    if positions == 1:
        raise ValueError(f"instance_norm: expected more than 1 spatial element when "
                         f"training, got input of shape {tuple(input.shape)}")
    eps = check_real("instance_norm", "eps", eps, low=0)
    _check_channel_affine("instance_norm", input, weight, bias)
    if running_mean is not None and input.array.size:
        values = input.array.reshape(input.shape[0], input.shape[1], -1)
        running_mean.array *= 1 - momentum
        running_mean.array += momentum * values.mean(axis=2).mean(axis=0)
        running_var.array *= 1 - momentum
        running_var.array += momentum * values.var(axis=2, ddof=1).mean(axis=0)
    # A constant channel with eps = 0 normalizes to 0, with a zero gradient, as
    # PyTorch's instance_norm gives (batch norm's 1/σ = 0 where σ = 0).
    return GroupNormFunction.apply(input, weight, bias, input.shape[1], eps, True)

__getattr__ = lacking("torch.nn.functional")
