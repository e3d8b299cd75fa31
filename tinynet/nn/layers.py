"""Basic layers: Linear, activations, Dropout, Flatten, losses."""
from __future__ import annotations

from .. import creation
from ..hyperparameters import check_count, check_real
from ..tensor import Tensor
from . import functional as F
from . import init
from .functional_losses import legacy_reduction
from .module import Module, Parameter

__all__ = ["Linear", "ReLU", "Tanh", "Sigmoid", "Identity", "Flatten", "Unflatten", "Dropout",
           "CrossEntropyLoss", "NLLLoss", "MSELoss", "BCELoss", "BCEWithLogitsLoss", "L1Loss",
           "SmoothL1Loss", "HuberLoss"]


class Linear(Module):
    """y = x Wᵀ + b, W of shape (out_features, in_features), b (out_features,) (none
    with ``bias=False``), as ``torch.nn.Linear``; PyTorch's init: W and b ~
    U(−1/√in, 1/√in). Input (*, in_features), output (*, out_features)."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True,
                 dtype=None, device="cpu"):
        super().__init__()
        self.in_features = check_count("Linear", "in_features", in_features, low=0)
        self.out_features = check_count("Linear", "out_features", out_features, low=0)
        bound = init.fan_in_bound(in_features)
        self.weight = Parameter(init.uniform_(
            creation.empty(out_features, in_features, dtype=dtype, device=device), -bound, bound))
        if bias:
            self.bias = Parameter(init.uniform_(
                creation.empty(out_features, dtype=dtype, device=device), -bound, bound))
        else:
            self.register_parameter("bias", None)

    def forward(self, x):
        """``x @ weight.T + bias``: input (*, in_features), output (*, out_features), any
        number of leading dims.
        """
        if x.shape[-1:] != (self.in_features,):
            raise ValueError(
                f"Linear({self.in_features}, {self.out_features}): input of shape "
                f"{tuple(x.shape)} must end in {self.in_features} features")
        return F.linear(x, self.weight, self.bias)

    def extra_repr(self):
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")


class _Elementwise(Module):
    """A module applying the function ``function`` elementwise, any shape."""

    function = None

    def forward(self, x):
        """The activation applied elementwise: the output has the input's shape and dtype."""
        return type(self).function(x)


class ReLU(_Elementwise):
    """max(x, 0) elementwise (Nair & Hinton, 2010), as ``torch.nn.ReLU``; any shape."""

    function = staticmethod(F.relu)


class Tanh(_Elementwise):
    """tanh x elementwise, as ``torch.nn.Tanh``; any shape."""

    function = staticmethod(F.tanh)


class Sigmoid(_Elementwise):
    """σ(x) = 1 / (1 + e^-x) elementwise, as ``torch.nn.Sigmoid``; any shape."""

    function = staticmethod(F.sigmoid)


class Identity(Module):
    """The input itself, as ``torch.nn.Identity``: a placeholder where a layer is
    optional (a model built without normalization holds one in its place)."""

    def forward(self, x):
        """``x`` itself, unchanged (any shape)."""
        return x


class Flatten(Module):
    """Dims ``start_dim`` (default 1) to ``end_dim`` (default -1) merged into one, as
    ``torch.nn.Flatten``: (N, C, H, W) -> (N, C·H·W), the batch dim kept."""

    def __init__(self, start_dim: int = 1, end_dim: int = -1):
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, x):
        """Dims ``start_dim`` to ``end_dim`` merged: (N, C, H, W) -> (N, C·H·W) by default."""
        return x.flatten(self.start_dim, self.end_dim)


class Unflatten(Module):
    """Dim ``dim`` split into ``unflattened_size``, as ``torch.nn.Unflatten``:
    ``Unflatten(1, (1, 28, 28))`` views flat (N, 784) images as (N, 1, 28, 28)."""

    def __init__(self, dim: int, unflattened_size):
        super().__init__()
        self.dim, self.unflattened_size = dim, tuple(unflattened_size)

    def forward(self, x):
        """Dim ``dim`` split into ``unflattened_size``: (N, 784) -> (N, 1, 28, 28) for
        ``Unflatten(1, (1, 28, 28))``.
        """
        return x.unflatten(self.dim, self.unflattened_size)

    def extra_repr(self):
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"


class Dropout(Module):
    """Inverted dropout (Srivastava et al., 2014) while training: each element zeroed
    with probability ``p`` (default 0.5), the rest scaled by 1 / (1 - p); the identity
    in eval mode. Any shape."""

    def __init__(self, p: float = 0.5):
        super().__init__()
        self.p = check_real("Dropout", "p", p, 0, 1)

    def forward(self, x):
        """In training mode each element zeroed with probability ``p`` and the rest scaled
        by 1 / (1 - p); in eval mode ``x`` itself. Any shape, kept.
        """
        return F.dropout(x, self.p, self.training)

    def extra_repr(self):
        return f"p={self.p}"


class _Loss(Module):
    function = None

    def __init__(self, size_average=None, reduce=None, reduction: str = "mean"):
        super().__init__()
        self.reduction = legacy_reduction(size_average, reduce, reduction)

    def forward(self, input, target):
        """The loss of ``input`` against ``target``, reduced by ``reduction``: a 0-d tensor
        for ``'mean'`` and ``'sum'``, one value per element (or sample) for ``'none'``.
        """
        return type(self).function(input, target, reduction=self.reduction)


class _WeightedLoss(Module):
    """A loss with PyTorch's arguments: ``weight`` (a buffer, None by default), the
    deprecated ``size_average`` / ``reduce`` flags, and ``reduction``."""

    def __init__(self, weight=None, size_average=None, reduce=None, reduction: str = "mean"):
        super().__init__()
        self.reduction = legacy_reduction(size_average, reduce, reduction)
        self.register_buffer("weight", _as_tensor(weight))


def _as_tensor(value):
    return value if value is None or isinstance(value, Tensor) else creation.tensor(value)


class CrossEntropyLoss(_WeightedLoss):
    """Softmax cross-entropy of logits against class indices or probabilities
    (see :func:`~tinynet.nn.functional.cross_entropy`); targets equal to
    ``ignore_index`` add nothing; ``label_smoothing`` in [0, 1]."""

    def __init__(self, weight=None, size_average=None, ignore_index: int = -100, reduce=None,
                 reduction: str = "mean", label_smoothing: float = 0.0):
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index
        self.label_smoothing = check_real("CrossEntropyLoss", "label_smoothing",
                                          label_smoothing, 0, 1)

    def forward(self, input, target):
        """Logits (N, C) or (N, C, d1, ...) against class indices (N) or (N, d1, ...), or
        probabilities of the input's shape; a 0-d tensor unless ``reduction='none'``
        (then one loss per sample).
        """
        return F.cross_entropy(input, target, self.weight, ignore_index=self.ignore_index,
                               reduction=self.reduction, label_smoothing=self.label_smoothing)


class BCELoss(_WeightedLoss):
    """Binary cross-entropy of probabilities in [0, 1] (see
    :func:`~tinynet.nn.functional.binary_cross_entropy`)."""

    def forward(self, input, target):
        """Probabilities ``input`` against targets of the same shape, in [0, 1]; a 0-d
        tensor unless ``reduction='none'`` (then the input's shape).
        """
        return F.binary_cross_entropy(input, target, self.weight, reduction=self.reduction)


class BCEWithLogitsLoss(_WeightedLoss):
    """Binary cross-entropy from logits, by the stable log σ form; ``pos_weight``
    (a buffer) weighs the positive term (see
    :func:`~tinynet.nn.functional.binary_cross_entropy_with_logits`)."""

    def __init__(self, weight=None, size_average=None, reduce=None, reduction: str = "mean",
                 pos_weight=None):
        super().__init__(weight, size_average, reduce, reduction)
        self.register_buffer("pos_weight", _as_tensor(pos_weight))

    def forward(self, input, target):
        """Logits ``input`` against targets of the same shape, in [0, 1]; a 0-d tensor
        unless ``reduction='none'`` (then the input's shape).
        """
        return F.binary_cross_entropy_with_logits(input, target, self.weight,
                                                  reduction=self.reduction,
                                                  pos_weight=self.pos_weight)


class NLLLoss(_WeightedLoss):
    """Negative log-likelihood of log-probabilities (N, C) (or (N, C, d1, ...)) at class
    indices: −weight[t] · input[n, t], as ``torch.nn.NLLLoss`` (see
    :func:`~tinynet.nn.functional.nll_loss`); targets equal to ``ignore_index`` add
    nothing."""

    def __init__(self, weight=None, size_average=None, ignore_index: int = -100, reduce=None,
                 reduction: str = "mean"):
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index

    def forward(self, input, target):
        """A 0-d tensor unless ``reduction='none'`` (then one loss per position)."""
        return F.nll_loss(input, target, self.weight, ignore_index=self.ignore_index,
                          reduction=self.reduction)


class MSELoss(_Loss):
    """Mean squared error (input - target)² of two tensors of one shape, averaged
    (``reduction='mean'``, the default), summed or not reduced, as
    ``torch.nn.MSELoss`` (see :func:`~tinynet.nn.functional.mse_loss`)."""

    function = staticmethod(F.mse_loss)


class L1Loss(_Loss):
    """Mean absolute error |input - target| of two tensors of one shape, as
    ``torch.nn.L1Loss`` (see :func:`~tinynet.nn.functional.l1_loss`)."""

    function = staticmethod(F.l1_loss)


class SmoothL1Loss(_Loss):
    """Quadratic below ``beta``, linear above, as ``torch.nn.SmoothL1Loss`` (see
    :func:`~tinynet.nn.functional.smooth_l1_loss`)."""

    def __init__(self, size_average=None, reduce=None, reduction: str = "mean",
                 beta: float = 1.0):
        super().__init__(size_average, reduce, reduction)
        self.beta = beta

    def forward(self, input, target):
        """A 0-d tensor unless ``reduction='none'`` (then the input's shape)."""
        return F.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class HuberLoss(_Loss):
    """Quadratic below ``delta``, linear above with slope ``delta``, as
    ``torch.nn.HuberLoss`` (see :func:`~tinynet.nn.functional.huber_loss`)."""

    def __init__(self, reduction: str = "mean", delta: float = 1.0):
        super().__init__(reduction=reduction)
        self.delta = delta

    def forward(self, input, target):
        """A 0-d tensor unless ``reduction='none'`` (then the input's shape)."""
        return F.huber_loss(input, target, reduction=self.reduction, delta=self.delta)
