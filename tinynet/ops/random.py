"""Operations that draw random numbers: from the device's seeded generator, or
from a :class:`Generator` of their own."""
from __future__ import annotations

import numbers

import numpy as np

from ..autograd import Function
from ..backend import device_of, get_backend
from ..hyperparameters import check_real

__all__ = ["dropout", "multinomial", "Generator", "randint", "randperm"]


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


class Generator:
    """A random number generator of its own, as ``torch.Generator``:
    ``g = tinynet.Generator().manual_seed(1337)`` makes sampling repeatable
    without touching the global seed."""

    def __init__(self, device="cpu"):
        self.device = device
        self._backend = get_backend(device)
        self.rng = self._backend.xp.random.default_rng()

    def manual_seed(self, seed: int) -> "Generator":
        """Restart this generator from ``seed``; returns the generator (as PyTorch's)."""
        self.rng = self._backend.xp.random.default_rng(seed)
        return self


def multinomial(input, num_samples: int, replacement: bool = False, *, generator=None):
    """Draw ``num_samples`` category indices per row of the weights ``input``
    ((C,) or (B, C); non-negative, not necessarily normalized), as
    ``torch.multinomial``. Without ``replacement`` a category is drawn at most once
    per row (each draw renormalizes over the ones left). Returns int64 indices.
    """
    from ..tensor import Tensor
    weights = input.array if isinstance(input, Tensor) else input
    if weights.ndim not in (1, 2) or not np.issubdtype(weights.dtype, np.floating):
        raise ValueError(f"multinomial: expected a 1-D or 2-D floating point tensor of "
                         f"weights, got shape {tuple(weights.shape)} and dtype {weights.dtype}")
    rows = weights.reshape(1, -1) if weights.ndim == 1 else weights
    xp = get_backend(device_of(rows)).xp
    categories = rows.shape[1]
    if (isinstance(num_samples, bool) or not isinstance(num_samples, numbers.Integral)
            or num_samples < 1):
        raise ValueError(f"multinomial: num_samples must be a positive integer, got "
                         f"{num_samples!r}")
    if not replacement and num_samples > categories:
        raise ValueError(f"multinomial: cannot draw {num_samples} samples without replacement "
                         f"from {categories} categories")
    if bool((rows < 0).any()) or not bool(xp.isfinite(rows).all()):
        raise ValueError("multinomial: weights must be finite and non-negative")
    if bool((rows.sum(axis=1) <= 0).any()):
        raise ValueError("multinomial: every row of weights needs a positive sum")
    positive = int((rows > 0).sum(axis=1).min())
    if not replacement and num_samples > positive:
        raise ValueError(f"multinomial: cannot draw {num_samples} samples without replacement "
                         f"from a row with {positive} categories of positive weight")
    rng = (generator.rng if generator is not None else get_backend(device_of(rows)).rng)
    rows = rows.astype(np.float64)
    num_samples = int(num_samples)
    samples = xp.empty((rows.shape[0], num_samples), dtype=np.int64)
    left = rows.copy()
    for s in range(num_samples):
        cumulative = xp.cumsum(left, axis=1)
        draw = rng.random((rows.shape[0], 1)) * cumulative[:, -1:]
        chosen = xp.minimum((cumulative <= draw).sum(axis=1), categories - 1)
        chosen = _skip_empty(left, chosen)
        samples[:, s] = chosen
        if not replacement:
            left[xp.arange(rows.shape[0]), chosen] = 0
    return Tensor._make(samples if weights.ndim == 2 else samples[0])


def _skip_empty(weights, chosen):
    """Rounding can land a draw on a category of weight 0 at the top end: move it
    to the last category with a positive weight."""
    xp = get_backend(device_of(weights)).xp
    rows = xp.arange(weights.shape[0])
    empty = weights[rows, chosen] == 0
    if bool(empty.any()):
        last = weights.shape[1] - 1 - xp.argmax((weights > 0)[:, ::-1], axis=1)
        chosen = xp.where(empty, last, chosen)
    return chosen


def generator_rng(generator, device="cpu"):
    """The NumPy (CuPy) generator to draw from: ``generator``'s own, else the device's
    seeded one (:func:`tinynet.manual_seed`)."""
    if generator is None:
        return get_backend(device).rng
    if not isinstance(generator, Generator):
        raise TypeError(f"generator must be a tinynet.Generator, got {type(generator).__name__}")
    return generator.rng


def randint(low, high=None, size=None, *, generator=None, dtype=None, device="cpu",
            requires_grad=False):
    """Integers drawn uniformly from [low, high), of shape ``size``, as
    ``torch.randint``: ``randint(high, size)`` or ``randint(low, high, size)``;
    int64 unless ``dtype`` is given."""
    from ..tensor import Tensor
    if size is None:                     # randint(high, size)
        low, high, size = 0, low, high
    elif high is None:                   # randint(high, size=size)
        low, high = 0, low
    if size is None:
        raise TypeError("randint(): missing the size, e.g. randint(10, (3,))")
    for name, value in (("low", low), ("high", high)):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise TypeError(f"randint(): {name} must be an int, got {value!r}")
    if high <= low:
        raise ValueError(f"randint(): expected low < high, got low={low}, high={high}")
    shape = (size,) if isinstance(size, numbers.Integral) else tuple(size)
    rng = generator_rng(generator, device)
    values = rng.integers(int(low), int(high), size=shape, dtype=np.int64)
    return Tensor._make_leaf(values.astype(np.dtype(dtype or np.int64), copy=False),
                             requires_grad)


def randperm(n, *, generator=None, dtype=None, device="cpu", requires_grad=False):
    """A random permutation of 0, 1, ..., n − 1, as ``torch.randperm``; int64 unless
    ``dtype`` is given."""
    from ..tensor import Tensor
    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 0:
        raise ValueError(f"randperm(): n must be an int >= 0, got {n!r}")
    values = generator_rng(generator, device).permutation(int(n))
    return Tensor._make_leaf(values.astype(np.dtype(dtype or np.int64), copy=False),
                             requires_grad)
