"""Basic layers: Linear, activations, Dropout, Flatten, losses."""
from __future__ import annotations

from .. import creation
from ..hyperparameters import check_count, check_real
from . import functional as F
from . import init
from .module import Module, Parameter

__all__ = ["Linear", "ReLU", "Tanh", "Sigmoid", "Identity", "Flatten", "Dropout",
           "CrossEntropyLoss", "NLLLoss", "MSELoss"]


class Linear(Module):
    """y = x Wᵀ + b, W of shape (out_features, in_features), PyTorch's init:
    W and b ~ U(−1/√in, 1/√in)."""

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
        if x.shape[-1:] != (self.in_features,):
            raise ValueError(
                f"Linear({self.in_features}, {self.out_features}): input of shape "
                f"{tuple(x.shape)} must end in {self.in_features} features")
        return F.linear(x, self.weight, self.bias)

    def extra_repr(self):
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")


class _Elementwise(Module):
    function = None

    def forward(self, x):
        return type(self).function(x)


class ReLU(_Elementwise):
    function = staticmethod(F.relu)


class Tanh(_Elementwise):
    function = staticmethod(F.tanh)


class Sigmoid(_Elementwise):
    function = staticmethod(F.sigmoid)


class Identity(Module):
    def forward(self, x):
        return x


class Flatten(Module):
    def __init__(self, start_dim: int = 1, end_dim: int = -1):
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, x):
        return x.flatten(self.start_dim, self.end_dim)


class Dropout(Module):
    """Inverted dropout while training; the identity in eval mode."""

    def __init__(self, p: float = 0.5):
        super().__init__()
        self.p = check_real("Dropout", "p", p, 0, 1)

    def forward(self, x):
        return F.dropout(x, self.p, self.training)

    def extra_repr(self):
        return f"p={self.p}"


class _Loss(Module):
    function = None

    def __init__(self, reduction: str = "mean"):
        super().__init__()
        F._check_reduction(reduction)
        self.reduction = reduction

    def forward(self, input, target):
        return type(self).function(input, target, reduction=self.reduction)


class CrossEntropyLoss(_Loss):
    """Softmax cross-entropy from logits (N, C) and class indices (N,); targets
    equal to ``ignore_index`` add nothing."""

    def __init__(self, reduction: str = "mean", ignore_index: int = -100):
        super().__init__(reduction)
        self.ignore_index = ignore_index

    def forward(self, input, target):
        return F.cross_entropy(input, target, self.reduction, self.ignore_index)


class NLLLoss(_Loss):
    function = staticmethod(F.nll_loss)


class MSELoss(_Loss):
    function = staticmethod(F.mse_loss)
