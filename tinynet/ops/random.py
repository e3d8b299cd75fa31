"""Operations that draw random numbers from the device's seeded generator."""
from __future__ import annotations

from ..autograd import Function
from ..backend import device_of, get_backend
from ..hyperparameters import check_real

__all__ = ["dropout"]


class Dropout(Function):
    """Zero each element with probability p and scale the rest by 1/(1-p), so
    that the expected value is unchanged ("inverted dropout")."""

    @staticmethod
    def forward(ctx, x, p):
        rng = get_backend(device_of(x)).rng
        keep = rng.random(x.shape, dtype=x.dtype) >= p
        mask = keep.astype(x.dtype)
        mask *= x.dtype.type(1.0 / (1.0 - p))
        ctx.save_for_backward(mask)
        return x * mask

    @staticmethod
    def backward(ctx, grad):
        (mask,) = ctx.saved
        return grad * mask, None


def dropout(x, p=0.5, training=True):
    """Inverted dropout; the identity when not training or when p == 0."""
    p = check_real("dropout", "p", p, 0, 1)
    if not training or p == 0:
        return x
    if p == 1:
        return x * 0
    return Dropout.apply(x, p)
