"""Cross-entropy from logits as one fused, numerically stable node."""
from __future__ import annotations

import numpy as np

from ..autograd import Function
from ..backend import as_numpy, get_array_module

__all__ = ["CrossEntropyFunction", "check_class_targets"]


def check_class_targets(logits_shape, target, name):
    """Targets must be integer class indices in [0, C), one per row."""
    if not np.issubdtype(target.dtype, np.integer):
        raise ValueError(f"{name}: target must hold integer class indices, "
                         f"got dtype {target.dtype}")
    if len(logits_shape) != 2 or target.shape != logits_shape[:1]:
        raise ValueError(
            f"{name}: expected input of shape (N, C) and target of shape (N,), got "
            f"input {tuple(logits_shape)} and target {tuple(target.shape)}")
    classes = logits_shape[1]
    if target.size and (int(target.min()) < 0 or int(target.max()) >= classes):
        bad = as_numpy(target)[(as_numpy(target) < 0) | (as_numpy(target) >= classes)]
        raise ValueError(
            f"{name}: target value {int(bad[0])} is out of range for {classes} classes "
            f"(expected 0 <= target < {classes})")


class CrossEntropyFunction(Function):
    """loss_i = logsumexp(z_i) − z_i[t_i]; d loss_i / d z_i = softmax(z_i) − onehot(t_i)."""

    @staticmethod
    def forward(ctx, logits, target, reduction):
        xp = get_array_module(logits)
        shift = logits.max(axis=1, keepdims=True)
        log_norm = xp.log(xp.exp(logits - shift).sum(axis=1, keepdims=True)) + shift
        rows = xp.arange(logits.shape[0])
        losses = log_norm[:, 0] - logits[rows, target]
        ctx.save_for_backward(logits, log_norm, target)
        ctx.reduction = reduction
        if reduction == "mean":
            return losses.mean()
        if reduction == "sum":
            return losses.sum()
        return losses

    @staticmethod
    def backward(ctx, grad):
        logits, log_norm, target = ctx.saved
        xp = get_array_module(logits)
        dlogits = xp.exp(logits - log_norm)
        dlogits[xp.arange(logits.shape[0]), target] -= 1
        if ctx.reduction == "none":
            dlogits *= grad[:, None]
        else:
            scale = grad / logits.shape[0] if ctx.reduction == "mean" else grad
            dlogits *= scale
        return dlogits, None, None
