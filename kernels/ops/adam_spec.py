"""Adam's update, the spec of ``adam_cpu`` (PyTorch's rule, in NumPy/CuPy array code)."""
from __future__ import annotations

import numpy as np

from tinynet.backend import get_array_module

__all__ = ["adam_step"]


def adam_step(param, grad, exp_avg, exp_avg_sq, step, lr, beta1, beta2, eps,
              weight_decay, decay=1.0):
    """One Adam update in place, with PyTorch's exact rule (``torch.optim.Adam``)::

        g ← g + λ θ                        (if weight_decay λ > 0)
        m ← β₁ m + (1 − β₁) g              v ← β₂ v + (1 − β₂) g²
        θ ← θ · decay                      (AdamW: decay = 1 − lr λ)
        θ ← θ − (lr / (1 − β₁ᵗ)) · m / (sqrt(v) / sqrt(1 − β₂ᵗ) + ε)
    """
    xp = get_array_module(param)
    if decay != 1:
        param *= decay
    if weight_decay:
        grad = grad + weight_decay * param
    exp_avg *= beta1
    exp_avg += (1 - beta1) * grad
    exp_avg_sq *= beta2
    exp_avg_sq += (1 - beta2) * grad * grad
    step_size = lr / (1 - beta1 ** step)
    denom = xp.sqrt(exp_avg_sq)
    denom /= np.sqrt(1 - beta2 ** step)
    denom += eps
    param -= step_size * exp_avg / denom
