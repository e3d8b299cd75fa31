"""AdamW (Loshchilov & Hutter, "Decoupled Weight Decay Regularization", 2019)."""
from __future__ import annotations

from .adam import Adam
from .optimizer import check_switches

__all__ = ["AdamW"]


class AdamW(Adam):
    """AdamW as ``torch.optim.AdamW``: Adam whose weight decay shrinks the
    parameters directly instead of entering the gradient (and so the moments)::

        θ ← θ (1 − lr λ)                   (weight_decay λ)
        θ ← Adam step of θ with gradient g (no L2 term)

    Adam's L2 decay is divided by sqrt(v) like the rest of the gradient, so
    weights with large gradients are barely decayed; here every weight decays
    at the same rate lr λ. ``amsgrad`` and ``maximize`` are Adam's (see Adam.step).
    """

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 1e-2, amsgrad: bool = False, *, maximize: bool = False,
                 foreach=None, fused=None, capturable: bool = False,
                 differentiable: bool = False):
        check_switches("AdamW", foreach, fused, capturable, differentiable)
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize=maximize,
                         decoupled_weight_decay=True)
