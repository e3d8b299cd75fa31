"""Activation layers beyond ReLU/Tanh/Sigmoid: Softmax, LogSoftmax, GELU, SiLU."""
from __future__ import annotations

import numbers
import warnings

from ..ops.activation import GELU_APPROXIMATIONS
from . import functional as F
from .module import Module

__all__ = ["Softmax", "LogSoftmax", "GELU", "SiLU"]


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
        return F.gelu(x, approximate=self.approximate)

    def extra_repr(self):
        return f"approximate={self.approximate!r}"


class SiLU(Module):
    """x σ(x), the sigmoid-weighted linear unit (swish)."""

    def forward(self, x):
        return F.silu(x)
