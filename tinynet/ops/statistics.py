"""``var_mean`` and ``std_mean``: a variance (or standard deviation) and the mean over
the same dims in one call, as ``torch.var_mean`` and ``torch.std_mean``.

Each is the two reductions of :mod:`tinynet.ops.reduction` (``var`` or ``std``, and
``mean``) side by side, so both outputs are differentiable and a gradient through
either (or both) reaches the input.
"""
from __future__ import annotations

from .reduction import mean, std, var

__all__ = ["var_mean", "std_mean"]


def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """``(var(input, dim), mean(input, dim))``, a tuple, as ``torch.var_mean``: the
    variance with Bessel's ``correction`` (1 by default; ``unbiased=False`` is
    ``correction=0``) and the mean over ``dim`` (an int, a tuple of ints, or None: all
    elements), with the reduced dims kept (size 1) when ``keepdim``."""
    return (var(input, dim, unbiased, keepdim, correction=correction),
            mean(input, dim, keepdim))


def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """``(std(input, dim), mean(input, dim))``, a tuple, as ``torch.std_mean``: the
    standard deviation with Bessel's ``correction`` (1 by default) and the mean over
    ``dim``, with :func:`var_mean`'s arguments."""
    return (std(input, dim, unbiased, keepdim, correction=correction),
            mean(input, dim, keepdim))
