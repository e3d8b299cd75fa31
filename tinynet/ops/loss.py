"""Losses as fused, numerically stable nodes: cross-entropy from logits, binary
cross-entropy from probabilities and from logits.

Each follows PyTorch's CPU formulas, so values and gradients agree at the edges
(p = 0 or 1, infinite logits) as well as in between; NumPy's floating-point
warnings stay inside (:func:`~tinynet.ops.elementwise.no_fp_warnings`).
"""
from __future__ import annotations

import numpy as np

from ..autograd import Function
from ..backend import as_numpy, get_array_module, kernels_for
from .elementwise import no_fp_warnings, zero_where
from .unary import sigmoid_array

__all__ = ["CrossEntropyFunction", "BinaryCrossEntropy", "BinaryCrossEntropyWithLogits",
           "check_class_targets", "log_sigmoid_array"]

LOG_FLOOR = -100         # PyTorch clamps binary cross-entropy's logs here
BCE_GRAD_FLOOR = float(np.float32(1e-12))   # ... and p (1 - p) in its gradient here
                                            # (PyTorch's float EPSILON, also in float64)


def check_class_targets(logits_shape, target, name, ignore_index=None):
    """Targets must be integer class indices in [0, C), one per row (or
    ``ignore_index``, when given). Returns ``(target, kept)``: where ``ignore_index``
    occurs, the targets with it replaced by class 0 (a row the kernels can read)
    and the mask of the other rows; else the targets as they are and None."""
    if not np.issubdtype(target.dtype, np.integer):
        raise ValueError(f"{name}: target must hold integer class indices, "
                         f"got dtype {target.dtype}")
    if len(logits_shape) != 2 or target.shape != logits_shape[:1]:
        raise ValueError(
            f"{name}: expected input of shape (N, C) and target of shape (N,), got "
            f"input {tuple(logits_shape)} and target {tuple(target.shape)}")
    if not target.size:
        return target, None
    classes = logits_shape[1]
    low, high = int(target.min()), int(target.max())
    kept = None
    if ignore_index is not None and low <= ignore_index <= high:
        kept = target != ignore_index
        if kept.all():
            kept = None
        else:
            target = get_array_module(target).where(kept, target, 0)
            low, high = int(target.min()), int(target.max())
    if low < 0 or high >= classes:
        values = as_numpy(target)
        bad = values[(values < 0) | (values >= classes)]
        raise ValueError(
            f"{name}: target value {int(bad[0])} is out of range for {classes} classes "
            f"(expected 0 <= target < {classes})")
    return target, kept


@no_fp_warnings
class CrossEntropyFunction(Function):
    """loss_i = logsumexp(z_i) − z_i[t_i]; d loss_i / d z_i = softmax(z_i) − onehot(t_i).
    The device's ``cross_entropy_forward`` gives both the losses and the softmax,
    which the backward scales.

    Rows outside the mask ``kept`` (those whose target is ``ignore_index``, from
    :func:`check_class_targets`) have loss 0 and no gradient, and the mean is
    over the rows kept (NaN if there are none, as PyTorch).

    With class ``weight`` (an array of C numbers) row i counts w[t_i]: its loss
    and gradient are scaled by it and the mean divides by Σ w[t_i] over the rows
    kept, as PyTorch's ``nll_loss``.
    """

    backward_reads_inputs = False           # it reads the softmax the forward kept

    @staticmethod
    def forward(ctx, logits, target, reduction, kept=None, weight=None):
        xp = get_array_module(logits)
        losses, probs = kernels_for(logits).cross_entropy_forward(logits, target)
        row_weight = kept
        if weight is not None:
            row_weight = weight[target] if kept is None else xp.where(kept, weight[target], 0)
            losses *= row_weight
        if kept is not None:
            losses = zero_where(~kept, losses)     # 0 even where the row's logits are inf/NaN
        count = logits.shape[0] if row_weight is None else row_weight.sum()
        ctx.save_for_backward(probs, target, kept, row_weight)
        ctx.meta = (reduction, count, weight is not None)
        if reduction == "mean":
            return losses.sum() / (count if weight is not None else losses.dtype.type(count))
        if reduction == "sum":
            return losses.sum()
        return losses

    @staticmethod
    def backward(ctx, grad):
        probs, target, kept, row_weight = ctx.saved
        reduction, count, weighted = ctx.meta
        if reduction == "mean":
            scale = grad / (count if weighted else grad.dtype.type(max(int(count), 1)))
        else:
            scale = grad                        # (N,) for 'none', 0-d otherwise
        if row_weight is not None:              # one factor per row, 0 on ignored rows
            scale = scale * row_weight          # (PyTorch's log-softmax backward then
            if kept is not None:                # gives them 0 · softmax: NaN only
                scale = zero_where(~kept, scale)    # where the softmax is)
        dlogits = kernels_for(probs).cross_entropy_backward(probs, scale, target)
        return (dlogits, None, None, None) + ((None,) if weighted else ())


# ------------------------------------------------------- binary cross-entropy
def _reduce(losses, reduction):
    """The mean (NaN, silently, when there are no elements), sum or the losses."""
    if reduction == "mean":
        return losses.sum() / losses.dtype.type(losses.size)
    if reduction == "sum":
        return losses.sum()
    return losses


def _finish(grad, weight, reduction, size):
    """An elementwise gradient, times the weight, over the count for a mean."""
    if weight is not None:
        grad = grad * weight
    if reduction == "mean":
        grad = grad / grad.dtype.type(size)
    return grad


def log_sigmoid_array(x):
    """log σ(x) = min(x, 0) − log1p(e^(−|x|)): no overflow for either sign, and
    exact for large |x| (PyTorch's form)."""
    xp = get_array_module(x)
    return xp.minimum(x, 0) - xp.log1p(xp.exp(-xp.abs(x)))


@no_fp_warnings
class BinaryCrossEntropy(Function):
    """loss = −w [t log p + (1 − t) log(1 − p)] of probabilities p, each log clamped
    at −100 (PyTorch's guard: p = 0 or 1 gives a loss of at most 100 w, not inf).

    d/dp = w (p − t) / max(p (1 − p), 1e-12), floored likewise, so finite at 0 and 1;
    d/dt = −w log(p / (1 − p)), not clamped (±inf at p = 0 and 1), as PyTorch.
    ``weight`` is a constant array broadcast to p's shape, or None.
    """

    @staticmethod
    def forward(ctx, p, target, weight, reduction):
        xp = get_array_module(p)
        losses = ((target - 1) * xp.maximum(xp.log1p(-p), LOG_FLOOR)
                  - target * xp.maximum(xp.log(p), LOG_FLOOR))
        if weight is not None:
            losses = losses * weight
        ctx.save_for_backward(p, target, weight)
        ctx.reduction = reduction
        return _reduce(losses, reduction)

    @staticmethod
    def backward(ctx, grad):
        p, target, weight = ctx.saved
        xp = get_array_module(p)
        dp = dt = None
        if ctx.needs_input_grad(0):
            dp = _finish(grad * (p - target) / xp.maximum((1 - p) * p, BCE_GRAD_FLOOR),
                         weight, ctx.reduction, p.size)
        if ctx.needs_input_grad(1):
            dt = _finish(-xp.log(p / (1 - p)) * grad, weight, ctx.reduction, p.size)
        return dp, dt, None, None


@no_fp_warnings
class BinaryCrossEntropyWithLogits(Function):
    """Binary cross-entropy of σ(x), from the logits x, without forming σ(x):

        loss = w [(1 − t) x − (1 + (pw − 1) t) log σ(x)]

    with log σ(x) by :func:`log_sigmoid_array` and pw the ``pos_weight`` of the
    positive term (1 without it). d/dx = w [(pw t + 1 − t) σ(x) − pw t] (σ(x) − t
    for pw = 1); d/dt = w [log σ(−x) − pw log σ(x)] (−w x for pw = 1). These are
    PyTorch's formulas term for term, so its NaN at x = ±inf (0 · inf in (1 − t) x)
    is reproduced too. ``weight`` and ``pos_weight`` are constant arrays or None.
    """

    @staticmethod
    def forward(ctx, x, target, weight, pos_weight, reduction):
        log_sigmoid = log_sigmoid_array(x)
        if pos_weight is not None:
            log_sigmoid = log_sigmoid * ((pos_weight - 1) * target + 1)
        losses = (1 - target) * x - log_sigmoid
        if weight is not None:
            losses = losses * weight
        ctx.save_for_backward(x, target, weight, pos_weight)
        ctx.reduction = reduction
        return _reduce(losses, reduction)

    @staticmethod
    def backward(ctx, grad):
        x, target, weight, pos_weight = ctx.saved
        dx = dt = None
        if ctx.needs_input_grad(0):
            if pos_weight is None:
                dx = sigmoid_array(x) - target
            else:
                positive = pos_weight * target
                dx = (positive + 1 - target) * sigmoid_array(x) - positive
            dx = _finish(dx * grad, weight, ctx.reduction, x.size)
        if ctx.needs_input_grad(1):
            if pos_weight is None:
                dt = -x * grad
            else:
                dt = (log_sigmoid_array(-x) - log_sigmoid_array(x) * pos_weight) * grad
            dt = _finish(dt, weight, ctx.reduction, x.size)
        return dx, dt, None, None, None
