"""Gradient clipping by global norm."""
from __future__ import annotations

import math

from ..backend import get_array_module
from ..hyperparameters import check_real
from ..tensor import Tensor

__all__ = ["clip_grad_norm_"]


def clip_grad_norm_(parameters, max_norm: float, norm_type: float = 2.0) -> Tensor:
    """Scale all gradients in place so that their joint norm is at most ``max_norm``.

    Returns the total norm before clipping (as ``torch.nn.utils.clip_grad_norm_``).
    """
    max_norm = check_real("clip_grad_norm_", "max_norm", max_norm, low=0)
    if check_real("clip_grad_norm_", "norm_type", norm_type, low=0) == 0:
        raise ValueError("clip_grad_norm_: norm_type must be above 0 (2 for the usual norm, "
                         "math.inf for the largest magnitude)")
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    grads = [p.grad.data for p in parameters if p.grad is not None]
    if not grads:
        return Tensor._make(get_array_module().asarray(0.0))
    xp = get_array_module(grads[0])
    if norm_type == math.inf:
        total = max(float(xp.abs(g).max()) for g in grads)
    else:
        total = sum(float((xp.abs(g) ** norm_type).sum()) for g in grads) ** (1.0 / norm_type)
    coefficient = max_norm / (total + 1e-6)
    if coefficient < 1:
        for g in grads:
            g *= coefficient
    return Tensor._make(xp.asarray(total, dtype=grads[0].dtype))
