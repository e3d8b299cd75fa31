"""Stateless layer functions, as ``torch.nn.functional``."""
from __future__ import annotations

import math
import numbers

import numpy as np

from ..backend import get_backend
from ..hyperparameters import check_real
from ..ops import (
    dropout,
    embedding,
    gelu,
    linear,
    log_softmax,
    one_hot,
    pad,
    relu,
    scaled_dot_product_attention,
    sigmoid,
    silu,
    softmax,
    tanh,
)
from ..ops.loss import CrossEntropyFunction, check_class_targets
from ..ops.normalization import BatchNormFunction, LayerNormFunction, RMSNormFunction
from ..tensor import Tensor

__all__ = ["linear", "relu", "tanh", "sigmoid", "softmax", "log_softmax", "dropout",
           "cross_entropy", "nll_loss", "mse_loss", "layer_norm", "rms_norm", "batch_norm",
           "gelu", "silu", "one_hot", "embedding", "scaled_dot_product_attention", "pad"]

_REDUCTIONS = ("mean", "sum", "none")


def _check_reduction(reduction):
    if reduction not in _REDUCTIONS:
        raise ValueError(f"reduction must be one of {_REDUCTIONS}, got {reduction!r}")


def _reduce(losses, reduction):
    _check_reduction(reduction)
    if reduction == "mean":
        return losses.mean()
    if reduction == "sum":
        return losses.sum()
    return losses


def _target_array(target, like):
    """Class indices as an array on the same device as ``like``."""
    array = target.data if isinstance(target, Tensor) else target
    return get_backend(like.device).asarray(array)


def cross_entropy(input, target, reduction: str = "mean", ignore_index: int = -100):
    """Softmax cross-entropy from logits (N, C) and class indices (N,).

    Rows whose target is ``ignore_index`` (PyTorch's default −100) add nothing:
    the mean is over the other rows.
    """
    _check_reduction(reduction)
    target = _target_array(target, input)
    check_class_targets(input.shape, target, "cross_entropy", ignore_index)
    ignore = ignore_index if bool((target == ignore_index).any()) else None
    return CrossEntropyFunction.apply(input, target, reduction, ignore)


def nll_loss(input, target, reduction: str = "mean"):
    """Negative log-likelihood of log-probabilities (N, C) at class indices (N,)."""
    target = _target_array(target, input)
    check_class_targets(input.shape, target, "nll_loss")
    rows = range(input.shape[0])
    return _reduce(-input[list(rows), target], reduction)


def mse_loss(input, target, reduction: str = "mean"):
    if tuple(input.shape) != tuple(target.shape):
        raise ValueError(
            f"mse_loss: input shape {tuple(input.shape)} and target shape "
            f"{tuple(target.shape)} differ")
    diff = input - target
    return _reduce(diff * diff, reduction)


def _normalized_size(x, normalized_shape, where="layer_norm"):
    shape = ((normalized_shape,) if isinstance(normalized_shape, numbers.Integral)
             else tuple(normalized_shape))
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
        if p is not None and p.data.size != size:
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
    """Normalize each channel (axis 1 of (N, C) or (N, C, L)) over the batch.

    Training uses the batch's mean and variance (biased, unless
    ``unbiased_batch_var``) and, when running buffers are given, updates them:
    running = (1 − momentum)·running + momentum·batch, with the *unbiased*
    variance stored (as PyTorch). Otherwise the running statistics are used.
    """
    if x.ndim not in (2, 3):
        raise ValueError(f"batch_norm: expected a 2-D or 3-D input (N, C[, L]), got shape "
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
        return BatchNormFunction.apply(x, weight, bias, running_mean.data,
                                       running_var.data, eps, None)

    count = x.data.size // channels
    if count <= 1:
        raise ValueError(
            f"batch_norm: expected more than 1 value per channel when training, got input "
            f"of shape {tuple(x.shape)}")
    axes = (0,) if x.ndim == 2 else (0, 2)
    mean = x.data.mean(axis=axes)
    squares = ((x.data - mean.reshape((1, -1) + (1,) * (x.ndim - 2))) ** 2).sum(axis=axes)
    dof = count - 1 if unbiased_batch_var else count
    if running_mean is not None:
        running_mean.data *= 1 - momentum
        running_mean.data += momentum * mean
        running_var.data *= 1 - momentum
        running_var.data += momentum * (squares / (count - 1))
    return BatchNormFunction.apply(x, weight, bias, mean, squares / dof, eps, dof)
