"""Padding: ``torch.nn.functional.pad`` with modes constant, reflect, replicate
and circular.

``pad`` lists (before, after) counts from the *last* dim backwards:
``(left, right)`` pads the last dim, ``(left, right, top, bottom)`` the last two.
A negative count crops.

* ``constant``: a border of ``value``; the backward crops the gradient back.
* ``reflect``: mirror images without repeating the edge (``[a b c]`` padded by 2
  on the left is ``[c b a b c]``); each count must be smaller than the dim.
* ``replicate``: the edge element repeated.
* ``circular``: wrap around (``[b c a b c a]``); each count at most the dim.

The last three read every output element from one input position per padded
dim (an index vector each); their backward adds the gradient back into those
positions, so an edge element read several times gets the sum.
"""
from __future__ import annotations

import numbers

from ..autograd import Function
from ..backend import get_array_module
from .shape import GetItem

__all__ = ["pad"]

MODES = ("constant", "reflect", "replicate", "circular")


class ConstantPad(Function):
    """``x`` inside a border of ``value``; ``widths[d] = (before, after)``,
    negative to crop. Forward and backward copy the overlapping block."""

    backward_reads_inputs = False

    @staticmethod
    def forward(ctx, x, widths, value):
        xp = get_array_module(x)
        shape = tuple(n + a + b for n, (a, b) in zip(x.shape, widths, strict=True))
        source, target = [], []
        for n, (before, after) in zip(x.shape, widths, strict=True):
            start, stop = max(0, -before), n - max(0, -after)
            source.append(slice(start, max(start, stop)))
            target.append(slice(max(0, before), max(0, before) + max(0, stop - start)))
        ctx.meta = (x.shape, x.dtype, tuple(source), tuple(target))
        out = xp.full(shape, value, dtype=x.dtype)
        out[tuple(target)] = x[tuple(source)]
        return out

    @staticmethod
    def backward(ctx, grad):
        shape, dtype, source, target = ctx.meta
        full = get_array_module(grad).zeros(shape, dtype)
        full[source] = grad[target]
        return full, None, None


def _positions(xp, n, before, after, mode):
    """For each output position along one dim, the input position it reads."""
    if mode == "circular":
        # Crop first (negative counts), then wrap around what is left, as torch does.
        start, size = max(0, -before), n - max(0, -before) - max(0, -after)
        return xp.arange(-max(0, before), size + max(0, after)) % size + start
    p = xp.arange(-before, n + after)
    if mode == "reflect":
        p = xp.abs(p)                              # left side: -k -> k
        return (n - 1) - xp.abs((n - 1) - p)       # right side: n - 1 + k -> n - 1 - k
    return xp.clip(p, 0, n - 1)                    # replicate


def _open_grid(xp, vectors):
    """An index reading the outer product of the index vectors (``slice(None)``
    for a dim without one), as ``numpy.ix_`` does."""
    indexed = [d for d, v in enumerate(vectors) if v is not None]
    index = []
    for d, v in enumerate(vectors):
        if v is None:
            index.append(slice(None))
            continue
        # Each vector along its own axis of the broadcast index.
        k = indexed.index(d)
        index.append(v.reshape((-1,) + (1,) * (len(indexed) - 1 - k)))
    return tuple(index)


def _check_pad(input, pad):
    if isinstance(pad, numbers.Integral) or not hasattr(pad, "__len__"):
        raise TypeError(f"pad: pad must be a tuple of ints, got {pad!r}")
    for p in pad:
        if isinstance(p, bool) or not isinstance(p, numbers.Integral):
            raise TypeError(f"pad: pad must be a tuple of ints, got {tuple(pad)!r}")
    pad = tuple(int(p) for p in pad)
    if len(pad) % 2:
        raise ValueError(f"pad: the pad tuple must have an even length (before, after "
                         f"per dim), got {len(pad)}")
    if len(pad) // 2 > input.ndim:
        raise ValueError(f"pad: {len(pad)} values pad {len(pad) // 2} dims, but the input "
                         f"has only {input.ndim} (shape {tuple(input.shape)})")
    return pad


def pad(input, pad, mode: str = "constant", value=0.0):
    """``input`` padded by ``pad`` = (before, after) counts from the last dim
    backwards, as ``torch.nn.functional.pad``; the output grows by
    ``before + after`` along each padded dim.

    ``constant`` pads any number of dims with ``value`` (negative counts crop).
    ``reflect``, ``replicate`` and ``circular`` pad the last 1, 2 or 3 dims of
    an input with 1 or 2 more dims than that (batch, channel), as torch allows;
    they take no ``value``. reflect needs each count < the dim's size, circular
    at most the size.
    """
    if mode not in MODES:
        raise NotImplementedError(f"pad: unknown padding mode {mode!r}; expected one of "
                                  f"{', '.join(MODES)}")
    pad = _check_pad(input, pad)
    count = len(pad) // 2
    widths = [(0, 0)] * (input.ndim - count) + [
        (pad[2 * k], pad[2 * k + 1]) for k in reversed(range(count))]
    shape = tuple(input.shape)
    for d, (n, (before, after)) in enumerate(zip(shape, widths, strict=True)):
        if n + before + after < 0:
            raise ValueError(f"pad: padding {(before, after)} of dim {d} (size {n}) gives "
                             f"a negative size {n + before + after}")
    if mode == "constant":
        return ConstantPad.apply(input, tuple(widths), value)

    if value != 0:
        raise ValueError(f"pad: mode {mode!r} takes no value (got value={value!r})")
    if count not in (1, 2, 3) or input.ndim not in (count + 1, count + 2):
        raise NotImplementedError(
            f"pad: mode {mode!r} pads the last 1, 2 or 3 dims of a 2-D/3-D, 3-D/4-D or "
            f"4-D/5-D input respectively; got {len(pad)} pad values for a {input.ndim}-D "
            "input")
    xp = get_array_module(input.array)
    vectors = [None] * (input.ndim - count)
    for d in range(input.ndim - count, input.ndim):
        n, (before, after) = shape[d], widths[d]
        if n == 0:
            raise ValueError(f"pad: mode {mode!r} needs non-empty padded dims, but dim {d} "
                             f"of shape {shape} is empty")
        if mode == "reflect" and (before >= n or after >= n):
            raise ValueError(f"pad: reflect padding {(before, after)} of dim {d} must be "
                             f"smaller than its size {n}")
        if mode == "circular" and (before > n or after > n or n + min(0, before)
                                   + min(0, after) <= 0):
            raise ValueError(f"pad: circular padding {(before, after)} of dim {d} may not "
                             f"exceed its size {n} (it would wrap around more than once)")
        vectors.append(_positions(xp, n, before, after, mode))
    # one gather through the open grid of index vectors; its backward scatters back
    return GetItem.apply(input, _open_grid(xp, vectors))
