"""Channel-wise dropout: ``Dropout1d``, ``Dropout2d``, ``Dropout3d`` and their functions.

Elementwise dropout (Srivastava et al., 2014) barely regularizes a convolution's
feature maps, whose neighbouring values are strongly correlated: zeroing one
pixel leaves its neighbours carrying the same signal. Tompson et al. (2015,
"Efficient Object Localization Using Convolutional Networks") drop whole
channels instead. For an input (N, C, *spatial) one Bernoulli draw per
(sample, channel) decides for the whole feature map::

    keep[n, c] ~ Bernoulli(1 − p)        y[n, c, ...] = x[n, c, ...] · keep[n, c] / (1 − p)

so the expected value is unchanged, as with inverted dropout. In eval mode
(``training=False``) the input comes back as it is.

The shapes follow PyTorch's rules. ``dropout1d`` takes (N, C, L) or an unbatched
(C, L) and refuses anything else; ``dropout3d`` takes (N, C, D, H, W) or an
unbatched (C, D, H, W); ``dropout2d`` takes (N, C, H, W), and reads a 3-D
input as (N, C, L), not as an unbatched (C, H, W) (PyTorch's historical
behaviour, which it warns about). Other ranks for ``dropout2d`` and
``dropout3d`` work with PyTorch's deprecation warning.
"""
from __future__ import annotations

import warnings

from ..backend import get_backend
from ..hyperparameters import check_real
from ..tensor import Tensor
from .module import Module

__all__ = ["Dropout1d", "Dropout2d", "Dropout3d", "dropout1d", "dropout2d", "dropout3d"]


def _check_input(where, input, p) -> float:
    if not isinstance(input, Tensor):
        raise TypeError(f"{where}: expected a Tensor, got {type(input).__name__}")
    if input.dtype.kind != "f":
        raise TypeError(f"{where}: expected a floating point input, got {input.dtype}")
    return check_real(where, "p", p, 0, 1)


def _feature_dropout(input, p, training, inplace, batched):
    """Zero whole channels of ``input``: those of dim 1 if ``batched``, else of dim 0."""
    shape = tuple(input.shape) if batched else (1, *input.shape)
    if len(shape) < 2:
        raise ValueError("feature dropout needs a channel dimension, got an input of shape "
                         f"{tuple(input.shape)}")
    if not training or p == 0 or input.numel() == 0:
        return input
    # one draw per (sample, channel), broadcast over the feature map
    mask_shape = shape[:2] + (1,) * (len(shape) - 2)
    if not batched:
        mask_shape = mask_shape[1:]
    backend = get_backend(input.device)
    if p == 1:
        mask = backend.xp.zeros(mask_shape, input.dtype)
    else:
        keep = backend.rng.random(mask_shape, dtype=input.dtype) >= p
        mask = keep.astype(input.dtype) * input.dtype.type(1 / (1 - p))
    if inplace:
        return input.mul_(mask)
    return input * Tensor._make(mask)


def dropout1d(input, p: float = 0.5, training: bool = True, inplace: bool = False):
    """Zero whole channels with probability ``p`` and scale the rest by 1 / (1 − p):
    input (N, C, L) or unbatched (C, L), one draw per channel of each sample.
    The identity when not ``training``. ``inplace=True`` writes into ``input``
    under tinynet's in-place rules (:mod:`tinynet.inplace`).
    """
    p = _check_input("dropout1d", input, p)
    if input.ndim not in (2, 3):
        raise ValueError(
            f"dropout1d: expected a 2-D or 3-D input, got shape {tuple(input.shape)}: "
            "dropout1d zeroes whole channels of inputs with 1 spatial dimension, a channel "
            "dimension and an optional batch dimension")
    return _feature_dropout(input, p, training, inplace, batched=input.ndim == 3)


def dropout2d(input, p: float = 0.5, training: bool = True, inplace: bool = False):
    """Zero whole channels with probability ``p`` and scale the rest by 1 / (1 − p):
    input (N, C, H, W), one draw per channel of each sample; the identity when not
    ``training``. As PyTorch, a 3-D input is read as (N, C, L) (with PyTorch's
    warning that this will change) and other ranks warn that they are deprecated.
    """
    p = _check_input("dropout2d", input, p)
    if input.ndim not in (3, 4):
        warnings.warn(
            f"dropout2d: Received a {input.ndim}-D input to dropout2d, which is deprecated "
            "and will result in an error in a future release. To retain the behavior "
            "and silence this warning, please use dropout instead. Note that dropout2d "
            "exists to provide channel-wise dropout on inputs with 2 spatial dimensions, "
            "a channel dimension, and an optional batch dimension (i.e. 3D or 4D inputs).",
            stacklevel=2)
    if input.ndim == 3:
        warnings.warn(
            "dropout2d: Received a 3D input to dropout2d and assuming that channel-wise "
            "1D dropout behavior is desired - input is interpreted as shape (N, C, L), "
            "where C is the channel dim. This behavior will change in a future release "
            "to interpret the input as one without a batch dimension, i.e. shape "
            "(C, H, W). To maintain the 1D channel-wise dropout behavior, please switch "
            "to using dropout1d instead.", stacklevel=2)
    return _feature_dropout(input, p, training, inplace, batched=True)


def dropout3d(input, p: float = 0.5, training: bool = True, inplace: bool = False):
    """Zero whole channels with probability ``p`` and scale the rest by 1 / (1 − p):
    input (N, C, D, H, W) or unbatched (C, D, H, W), one draw per channel of each
    sample; the identity when not ``training``. Other ranks warn, as PyTorch, and
    are read as unbatched.
    """
    p = _check_input("dropout3d", input, p)
    if input.ndim not in (4, 5):
        warnings.warn(
            f"dropout3d: Received a {input.ndim}-D input to dropout3d, which is deprecated "
            "and will result in an error in a future release. To retain the behavior "
            "and silence this warning, please use dropout instead. Note that dropout3d "
            "exists to provide channel-wise dropout on inputs with 3 spatial dimensions, "
            "a channel dimension, and an optional batch dimension (i.e. 4D or 5D inputs).",
            stacklevel=2)
    return _feature_dropout(input, p, training, inplace, batched=input.ndim == 5)


class _DropoutNd(Module):
    function = None

    def __init__(self, p: float = 0.5, inplace: bool = False):
        super().__init__()
        self.p = check_real(type(self).__name__, "p", p, 0, 1)
        self.inplace = inplace

    def forward(self, input):
        """Whole channels zeroed with probability ``p``, the rest scaled by 1 / (1 − p),
        in training mode; ``input`` itself in eval mode. The shape is kept."""
        return type(self).function(input, self.p, self.training, self.inplace)

    def extra_repr(self):
        return f"p={self.p}, inplace={self.inplace}"


class Dropout1d(_DropoutNd):
    """Channel-wise dropout for (N, C, L) or unbatched (C, L) inputs, as
    ``torch.nn.Dropout1d(p=0.5, inplace=False)``: see :func:`dropout1d`."""

    function = staticmethod(dropout1d)


class Dropout2d(_DropoutNd):
    """Channel-wise dropout for (N, C, H, W) inputs, as
    ``torch.nn.Dropout2d(p=0.5, inplace=False)``: see :func:`dropout2d` (a 3-D input
    is read as (N, C, L), as PyTorch does)."""

    function = staticmethod(dropout2d)


class Dropout3d(_DropoutNd):
    """Channel-wise dropout for (N, C, D, H, W) or unbatched (C, D, H, W) inputs, as
    ``torch.nn.Dropout3d(p=0.5, inplace=False)``: see :func:`dropout3d`."""

    function = staticmethod(dropout3d)
