"""The cross-entropy losses of :mod:`tinynet.nn.functional` (re-exported there),
with PyTorch's signatures, defaults and numbers.

* ``cross_entropy``: logits (N, C), (C,) or (N, C, d1, ...) against class
  indices (with ``ignore_index``) or class probabilities (a float target of
  the input's shape); class ``weight``; ``label_smoothing``.
* ``binary_cross_entropy``: probabilities in [0, 1], logs clamped at −100.
* ``binary_cross_entropy_with_logits``: logits, by the stable log σ form;
  ``pos_weight`` weighs the positive term.

The fused nodes are in :mod:`tinynet.ops.loss`; probability targets and the
smoothing term are compositions of ``log_softmax``, products and sums, exactly
PyTorch's own composition, so their numbers and gradients are PyTorch's.
PyTorch's deprecated ``size_average`` and ``reduce`` flags are accepted in
their positions, with PyTorch's warning.
"""
from __future__ import annotations

import warnings

import numpy as np

from ..backend import get_backend
from ..hyperparameters import check_real
from ..ops import log_softmax
from ..ops.loss import (
    BinaryCrossEntropy,
    BinaryCrossEntropyWithLogits,
    CrossEntropyFunction,
    check_class_targets,
)
from ..tensor import Tensor

__all__ = ["cross_entropy", "nll_loss", "binary_cross_entropy",
           "binary_cross_entropy_with_logits"]

_REDUCTIONS = ("mean", "sum", "none")


def _check_reduction(reduction):
    if reduction not in _REDUCTIONS:
        raise ValueError(f"reduction must be one of {_REDUCTIONS}, got {reduction!r}")


def _reduce(losses, reduction):
    _check_reduction(reduction)
    if reduction == "mean":
        return losses.mean()
    if reduction == "sum":
        return losses.sum()
    return losses


def legacy_reduction(size_average, reduce, reduction):
    """``reduction``, or PyTorch's reading of its deprecated ``size_average`` and
    ``reduce`` flags when either is given (with PyTorch's warning); checked."""
    if size_average is not None or reduce is not None:
        size_average = True if size_average is None else size_average
        reduce = True if reduce is None else reduce
        reduction = "mean" if size_average and reduce else "sum" if reduce else "none"
        warnings.warn("size_average and reduce args will be deprecated, please use "
                      f"reduction='{reduction}' instead.", stacklevel=3)
    _check_reduction(reduction)
    return reduction


def _target_array(target, like):
    """Class indices as an array on the same device as ``like``."""
    array = target.array if isinstance(target, Tensor) else target
    return get_backend(like.device).asarray(array)


def _constant(where, name, value, like):
    """A weight as an array of ``like``'s dtype on its device; PyTorch's losses are
    not differentiable with respect to their weights, so neither are these."""
    if value is None:
        return None
    if isinstance(value, Tensor):
        if value.requires_grad:
            raise ValueError(f"{where}: not differentiable with respect to {name}, which "
                             "cannot have requires_grad=True (as in PyTorch)")
        value = value.array
    return get_backend(like.device).asarray(value).astype(like.dtype, copy=False)


def _check_broadcasts(where, name, array, input):
    if array is None:
        return
    try:
        fits = np.broadcast_shapes(array.shape, input.shape) == tuple(input.shape)
    except ValueError:
        fits = False
    if not fits:
        raise ValueError(f"{where}: {name} of shape {tuple(array.shape)} does not broadcast "
                         f"to the input's shape {tuple(input.shape)}")


def _float_target(where, target, input):
    """The target as given if it is a tensor (same shape as the input), an array of
    the input's dtype if it is data."""
    if not isinstance(target, Tensor):
        target = _target_array(target, input).astype(input.dtype, copy=False)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"{where}: target of shape {tuple(target.shape)} must have the "
                         f"input's shape {tuple(input.shape)}")
    return target


# -------------------------------------------------------------- cross-entropy
def cross_entropy(input, target, weight=None, size_average=None, ignore_index: int = -100,
                  reduce=None, reduction: str = "mean", label_smoothing: float = 0.0):
    """Softmax cross-entropy of logits, as ``torch.nn.functional.cross_entropy``.

    ``input`` is (N, C), (C,) or (N, C, d1, ...), the classes along dim 1 (dim 0
    unbatched). ``target`` is either

    * class indices, of shape (N,), () or (N, d1, ...): loss = −w[t] log softmax(z)[t];
      a target equal to ``ignore_index`` adds nothing, and the mean divides by
      Σ w[t] over the other positions (their count without ``weight``); or
    * class probabilities, a float target of the input's shape:
      loss = −Σ_c w_c t_c log softmax(z)_c, the mean over the N·d1··· positions.

    ``label_smoothing`` ε ∈ [0, 1] mixes the target with the uniform distribution:
    (1 − ε) t + ε / C for probabilities; (1 − ε) · NLL + ε / C · (−Σ_c w_c log p_c)
    for indices. ``weight`` (C numbers) gets no gradient for index targets (as
    PyTorch, which refuses one that requires it) and one for probabilities.
    """
    reduction = legacy_reduction(size_average, reduce, reduction)
    label_smoothing = check_real("cross_entropy", "label_smoothing", label_smoothing, 0, 1)
    if input.ndim == 0:
        raise ValueError("cross_entropy: expected an input of shape (C,), (N, C) or "
                         "(N, C, d1, ...), got a 0-dimensional tensor")
    class_dim = 0 if input.ndim == 1 else 1
    classes = input.shape[class_dim]
    weight_shape = None if weight is None else tuple(getattr(weight, "shape", np.shape(weight)))
    if weight is not None and weight_shape != (classes,):
        raise ValueError(f"cross_entropy: weight of shape {weight_shape} must hold one "
                         f"number per class, shape ({classes},)")
    if not isinstance(target, Tensor):
        target = _target_array(target, input)
    floating = np.issubdtype(target.dtype, np.floating)
    if tuple(target.shape) == tuple(input.shape):
        if not floating:
            raise ValueError(f"cross_entropy: a target of the input's shape "
                             f"{tuple(input.shape)} holds class probabilities and must be "
                             f"floating point, got dtype {target.dtype}")
        if ignore_index != -100:
            raise ValueError("cross_entropy: ignore_index is not supported for class "
                             "probabilities (a floating-point target), as in PyTorch")
        if not isinstance(target, Tensor):
            target = target.astype(input.dtype, copy=False)
        return _probability_cross_entropy(input, target, weight, reduction, label_smoothing,
                                          class_dim, classes)
    if floating and target.ndim == input.ndim:
        raise ValueError(f"cross_entropy: class probabilities of shape {tuple(target.shape)} "
                         f"must have the input's shape {tuple(input.shape)}")
    if not np.issubdtype(target.dtype, np.integer):
        raise ValueError(f"cross_entropy: target must hold integer class indices (or class "
                         f"probabilities of the input's shape), got dtype {target.dtype}")
    target = _target_array(target, input)
    expected = tuple(input.shape[:1] + input.shape[2:]) if input.ndim > 1 else ()
    if tuple(target.shape) != expected:
        raise ValueError(f"cross_entropy: an input of shape {tuple(input.shape)} needs class "
                         f"indices of shape {expected} (or class probabilities of the "
                         f"input's shape), got a target of shape {tuple(target.shape)}")
    return _index_cross_entropy(input, target, weight, reduction, ignore_index,
                                label_smoothing, classes)


def _rows(input, target, classes):
    """(rows, C) scores and (rows,) targets from an input (N, C), (C,) or (N, C, d1, ...)
    with the classes along dim 1 (dim 0 unbatched): one row per position."""
    if input.ndim == 2:
        return input, target
    if input.ndim == 1:
        return input.reshape(1, classes), target.reshape(1)
    return (input.permute(0, *range(2, input.ndim), 1).reshape(-1, classes),   # (N·d1···, C)
            target.reshape(-1))


def _index_cross_entropy(input, target, weight, reduction, ignore_index, label_smoothing,
                         classes):
    logits, flat = _rows(input, target, classes)
    safe, kept = check_class_targets(logits.shape, flat, "cross_entropy", ignore_index)
    weight = _constant("cross_entropy", "weight", weight, input)
    if weight is None:                      # the language models' path: one fused node
        loss = CrossEntropyFunction.apply(logits, safe, reduction, kept)
    else:
        loss = CrossEntropyFunction.apply(logits, safe, reduction, kept, weight)
    if label_smoothing > 0:
        smooth = _smoothing_term(logits, safe, weight, reduction, kept)
        loss = (1 - label_smoothing) * loss + smooth * (label_smoothing / classes)
    if reduction == "none" and input.ndim != 2:
        loss = loss.reshape(target.shape)
    return loss


def _smoothing_term(logits, target, weight, reduction, kept):
    """−Σ_c w_c log softmax(z)_c of each row, 0 on the rows not ``kept`` (None: all
    are), reduced like the NLL term (the mean over Σ w[t] of the kept rows), as
    PyTorch."""
    log_p = log_softmax(logits, 1)
    if weight is not None:
        log_p = log_p * weight
    smooth = -log_p.sum(1)
    if kept is not None:
        smooth = smooth.masked_fill(~kept, 0.0)
    if reduction == "none":
        return smooth
    if reduction == "sum":
        return smooth.sum()
    if weight is not None:
        count = (weight[target] if kept is None else weight[target[kept]]).sum()
    else:
        count = target.size if kept is None else kept.sum()
    return smooth.sum() / count


def _probability_cross_entropy(input, target, weight, reduction, label_smoothing, class_dim,
                               classes):
    log_p = log_softmax(input, class_dim)
    if label_smoothing > 0:
        target = target * (1 - label_smoothing) + label_smoothing / classes
    product = log_p * target
    if weight is not None:
        if not isinstance(weight, Tensor):
            weight = _target_array(weight, input).astype(input.dtype, copy=False)
        if input.ndim > 1:
            weight = weight.reshape((1, classes) + (1,) * (input.ndim - 2))
        product = product * weight
    if reduction == "none":
        return -product.sum(class_dim)
    if reduction == "sum":
        return -product.sum()
    positions = input.array.size // classes if classes else 0
    return -product.sum() / positions        # NaN when there are none, as PyTorch


# ------------------------------------------------------- binary cross-entropy
def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None,
                         reduction: str = "mean"):
    """−w [t log p + (1 − t) log(1 − p)] of probabilities p = ``input``, each log
    clamped at −100, as ``torch.nn.functional.binary_cross_entropy``.

    ``input`` and ``target`` must have the same shape and lie in [0, 1] (NaN does
    not); ``weight`` broadcasts to that shape and gets no gradient (as PyTorch).
    The target gets a gradient, −w log(p / (1 − p)).
    """
    where = "binary_cross_entropy"
    reduction = legacy_reduction(size_average, reduce, reduction)
    target = _float_target(where, target, input)
    if isinstance(target, Tensor) and target.dtype != input.dtype:
        raise ValueError(f"{where}: target of dtype {target.dtype} does not match the "
                         f"input's dtype {input.dtype}")
    values_of_target = target.array if isinstance(target, Tensor) else target
    for name, values in (("input", input.array), ("target", values_of_target)):
        if values.size and not bool(((values >= 0) & (values <= 1)).all()):
            raise ValueError(f"{where}: all elements of {name} should be between 0 and 1 "
                             f"(probabilities; for logits use "
                             f"binary_cross_entropy_with_logits)")
    weight = _constant(where, "weight", weight, input)
    _check_broadcasts(where, "weight", weight, input)
    return BinaryCrossEntropy.apply(input, target, weight, reduction)


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None,
                                     reduce=None, reduction: str = "mean", pos_weight=None):
    """Binary cross-entropy of σ(``input``) from the logits, without forming σ:
    w [(1 − t) x − (1 + (pos_weight − 1) t) log σ(x)], as
    ``torch.nn.functional.binary_cross_entropy_with_logits``.

    ``target`` has the input's shape (any real values, as PyTorch); ``weight`` and
    ``pos_weight`` (the weight of the positive term, e.g. one per class along the
    last dim) broadcast to it and get no gradient (as PyTorch).
    """
    where = "binary_cross_entropy_with_logits"
    reduction = legacy_reduction(size_average, reduce, reduction)
    target = _float_target(where, target, input)
    weight = _constant(where, "weight", weight, input)
    pos_weight = _constant(where, "pos_weight", pos_weight, input)
    _check_broadcasts(where, "weight", weight, input)
    _check_broadcasts(where, "pos_weight", pos_weight, input)
    return BinaryCrossEntropyWithLogits.apply(input, target, weight, pos_weight, reduction)


def nll_loss(input, target, weight=None, size_average=None, ignore_index: int = -100,
             reduce=None, reduction: str = "mean"):
    """Negative log-likelihood of log-probabilities at class indices, as
    ``torch.nn.functional.nll_loss``: loss = −w[t] · input[t] at each position.

    ``input`` is (N, C), (C,) or (N, C, d1, ...), the classes along dim 1, and
    ``target`` class indices (N,), () or (N, d1, ...). A target equal to
    ``ignore_index`` adds nothing; the mean divides by Σ w[t] over the other
    positions (their count without ``weight``), NaN when none is left.
    """
    reduction = legacy_reduction(size_average, reduce, reduction)
    if input.ndim == 0:
        raise ValueError("nll_loss: expected an input of shape (C,), (N, C) or "
                         "(N, C, d1, ...), got a 0-dimensional tensor")
    classes = input.shape[0 if input.ndim == 1 else 1]
    target = _target_array(target, input)
    expected = tuple(input.shape[:1] + input.shape[2:]) if input.ndim > 1 else ()
    if tuple(target.shape) != expected:
        raise ValueError(f"nll_loss: an input of shape {tuple(input.shape)} needs class "
                         f"indices of shape {expected}, got a target of shape "
                         f"{tuple(target.shape)}")
    log_p, flat = _rows(input, target, classes)
    safe, kept = check_class_targets(log_p.shape, flat, "nll_loss", ignore_index)
    xp = get_backend(input.device).xp
    if kept is None:
        kept = xp.ones(flat.shape, bool)
    weight = _constant("nll_loss", "weight", weight, input)
    if weight is not None and tuple(weight.shape) != (classes,):
        raise ValueError(f"nll_loss: weight of shape {tuple(weight.shape)} must hold one "
                         f"number per class, shape ({classes},)")
    w = (xp.ones(flat.shape, input.dtype) if weight is None else weight[safe]) * kept
    losses = -log_p[xp.arange(flat.shape[0]), safe] * w
    _check_reduction(reduction)
    if reduction == "none":
        return losses.reshape(target.shape)
    if reduction == "sum":
        return losses.sum()
    return losses.sum() / w.sum()                 # 0 / 0, NaN, when every target is ignored
