"""Cross-entropy from logits as one fused, numerically stable node."""
from __future__ import annotations

import numpy as np

from ..autograd import Function
from ..backend import as_numpy, get_array_module

__all__ = ["CrossEntropyFunction", "check_class_targets"]


def check_class_targets(logits_shape, target, name, ignore_index=None):
    """Targets must be integer class indices in [0, C), one per row (or
    ``ignore_index``, when given)."""
    if not np.issubdtype(target.dtype, np.integer):
        raise ValueError(f"{name}: target must hold integer class indices, "
                         f"got dtype {target.dtype}")
    if len(logits_shape) != 2 or target.shape != logits_shape[:1]:
        raise ValueError(
            f"{name}: expected input of shape (N, C) and target of shape (N,), got "
            f"input {tuple(logits_shape)} and target {tuple(target.shape)}")
    classes = logits_shape[1]
    if ignore_index is not None:
        target = target[target != ignore_index]
    if target.size and (int(target.min()) < 0 or int(target.max()) >= classes):
        bad = as_numpy(target)[(as_numpy(target) < 0) | (as_numpy(target) >= classes)]
        raise ValueError(
            f"{name}: target value {int(bad[0])} is out of range for {classes} classes "
            f"(expected 0 <= target < {classes})")


class CrossEntropyFunction(Function):
    """loss_i = logsumexp(z_i) − z_i[t_i]; d loss_i / d z_i = softmax(z_i) − onehot(t_i).

    Rows whose target is ``ignore_index`` have loss 0 and no gradient, and the
    mean is over the other rows (NaN if there are none, as PyTorch).
    """

    @staticmethod
    def forward(ctx, logits, target, reduction, ignore_index=None):
        xp = get_array_module(logits)
        shift = logits.max(axis=1, keepdims=True)
        log_norm = xp.log(xp.exp(logits - shift).sum(axis=1, keepdims=True)) + shift
        rows = xp.arange(logits.shape[0])
        kept = None
        if ignore_index is not None:
            kept = target != ignore_index
            target = xp.where(kept, target, 0)
        losses = log_norm[:, 0] - logits[rows, target]
        if kept is not None:
            losses *= kept
        count = logits.shape[0] if kept is None else kept.sum()
        ctx.save_for_backward(logits, log_norm, target, kept)
        ctx.meta = (reduction, count)
        if reduction == "mean":
            with np.errstate(invalid="ignore", divide="ignore"):
                return losses.sum() / losses.dtype.type(count)
        if reduction == "sum":
            return losses.sum()
        return losses

    @staticmethod
    def backward(ctx, grad):
        logits, log_norm, target, kept = ctx.saved
        reduction, count = ctx.meta
        xp = get_array_module(logits)
        dlogits = xp.exp(logits - log_norm)
        dlogits[xp.arange(logits.shape[0]), target] -= 1
        if reduction == "none":
            scale = grad[:, None]
        elif reduction == "mean":
            scale = grad / grad.dtype.type(max(int(count), 1))
        else:
            scale = grad
        dlogits *= scale
        if kept is not None:
            dlogits *= kept[:, None]      # 0, not NaN, when every row is ignored
        return dlogits, None, None, None
