"""Activation layers beyond ReLU/Tanh/Sigmoid: Softmax, LogSoftmax, GELU, SiLU,
Softplus, ELU, LeakyReLU, and PReLU (with a learnable slope)."""
from __future__ import annotations

import numbers
import warnings

from .. import creation
from ..hyperparameters import check_count, check_real
from ..ops.activation import GELU_APPROXIMATIONS
from . import functional as F
from .init import constant_
from .module import Module, Parameter

__all__ = ["Softmax", "LogSoftmax", "GELU", "SiLU", "Softplus", "ELU", "LeakyReLU", "PReLU"]


def implicit_softmax_dim(where: str, ndim: int) -> int:
    """PyTorch's legacy choice when no ``dim`` is given: 0 for 0-, 1- and 3-D
    inputs, 1 otherwise (a batch of vectors, or of images). Deprecated in
    PyTorch and warned about here in the same way: pass ``dim``."""
    dim = 0 if ndim in (0, 1, 3) else 1
    warnings.warn(f"{where}: implicit dimension choice (dim=None) is deprecated; using "
                  f"dim={dim} for a {ndim}-D input. Pass dim=X explicitly.", stacklevel=4)
    return dim


class _SoftmaxOverDim(Module):
    function = None

    def __init__(self, dim=None):
        super().__init__()
        if dim is not None and (isinstance(dim, bool) or not isinstance(dim, numbers.Integral)):
            raise TypeError(f"{type(self).__name__}: dim must be an integer or None, got "
                            f"{type(dim).__name__} {dim!r}")
        self.dim = dim

    def forward(self, x):
        """The function along ``dim`` (PyTorch's implicit choice, with a warning, when None):
        the output has the input's shape and dtype.
        """
        dim = self.dim
        if dim is None:
            dim = implicit_softmax_dim(type(self).__name__, x.ndim)
        return type(self).function(x, dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class Softmax(_SoftmaxOverDim):
    """softmax(x)_i = exp(x_i) / Σ_j exp(x_j) along ``dim`` (each slice sums to 1).

    ``dim=None`` follows PyTorch's deprecated implicit choice, with a warning
    (see :func:`implicit_softmax_dim`).
    """

    function = staticmethod(F.softmax)


class LogSoftmax(_SoftmaxOverDim):
    """log(softmax(x)) along ``dim``, computed without forming the softmax.

    ``dim=None`` follows PyTorch's deprecated implicit choice, with a warning.
    """

    function = staticmethod(F.log_softmax)


class GELU(Module):
    """x Φ(x), Φ the standard normal CDF; ``approximate='tanh'`` for the tanh form."""

    def __init__(self, approximate: str = "none"):
        super().__init__()
        if approximate not in GELU_APPROXIMATIONS:
            raise ValueError(f"GELU: approximate must be 'none' or 'tanh', got {approximate!r}")
        self.approximate = approximate

    def forward(self, x):
        """GELU(x) = x Φ(x) elementwise (Hendrycks & Gimpel, 2016), or with
        ``approximate='tanh'`` 0.5 x (1 + tanh(√(2/π) (x + 0.044715 x³))); any shape.
        """
        return F.gelu(x, approximate=self.approximate)

    def extra_repr(self):
        return f"approximate={self.approximate!r}"


class SiLU(Module):
    """x σ(x), the sigmoid-weighted linear unit (swish)."""

    def forward(self, x):
        """x σ(x) elementwise; any shape, kept."""
        return F.silu(x)


class Softplus(Module):
    """log(1 + e^(βx)) / β, a smooth ReLU; x itself where βx > threshold."""

    def __init__(self, beta: float = 1.0, threshold: float = 20.0):
        super().__init__()
        self.beta = check_real("Softplus", "beta", beta)
        self.threshold = check_real("Softplus", "threshold", threshold)

    def forward(self, x):
        """log(1 + e^(βx)) / β elementwise, x where βx > threshold; any shape, kept."""
        return F.softplus(x, self.beta, self.threshold)

    def extra_repr(self):
        return f"beta={self.beta}, threshold={self.threshold}"


class ELU(Module):
    """x for x > 0, α (e^x − 1) otherwise (Clevert et al., 2015)."""

    def __init__(self, alpha: float = 1.0):
        super().__init__()
        self.alpha = check_real("ELU", "alpha", alpha)

    def forward(self, x):
        """x where x > 0, α (e^x − 1) elsewhere, elementwise; any shape, kept."""
        return F.elu(x, self.alpha)

    def extra_repr(self):
        return f"alpha={self.alpha}"


class LeakyReLU(Module):
    """x for x > 0, negative_slope · x otherwise."""

    def __init__(self, negative_slope: float = 0.01):
        super().__init__()
        self.negative_slope = check_real("LeakyReLU", "negative_slope", negative_slope)

    def forward(self, x):
        """x where x > 0, negative_slope · x elsewhere, elementwise; any shape, kept."""
        return F.leaky_relu(x, self.negative_slope)

    def extra_repr(self):
        return f"negative_slope={self.negative_slope}"


class PReLU(Module):
    """max(0, x) + a · min(0, x) with learnable slopes a (He et al., 2015), as
    ``torch.nn.PReLU``: ``weight`` holds ``num_parameters`` slopes, each ``init`` at the
    start, either one for every element (1, the default) or one per channel (the
    number of channels, the input's dim 1). Weight decay is best kept off them.
    """

    def __init__(self, num_parameters: int = 1, init: float = 0.25, device=None, dtype=None):
        super().__init__()
        self.num_parameters = check_count("PReLU", "num_parameters", num_parameters)
        self.init = check_real("PReLU", "init", init)
        self.weight = Parameter(creation.empty(num_parameters, dtype=dtype, device=device))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Set every slope to ``init`` again."""
        constant_(self.weight, self.init)

    def forward(self, x):
        """x where x > 0, the slope (its channel's, dim 1) times x elsewhere; any shape,
        kept (a slope per channel needs an input of 2 dims or more, channels in dim 1).
        """
        return F.prelu(x, self.weight)

    def extra_repr(self):
        return f"num_parameters={self.num_parameters}"
