"""Adam (Kingma & Ba, 2015), with PyTorch's exact update rule."""
from __future__ import annotations

from ..backend import get_backend
from ..hyperparameters import check_real
from .optimizer import Optimizer

__all__ = ["Adam"]


class Adam(Optimizer):
    """Adam as ``torch.optim.Adam``: L2 ``weight_decay`` added to the gradient, or,
    with ``decoupled_weight_decay=True``, AdamW's θ ← θ (1 − lr λ) before the step.

    The update of each parameter is one fused kernel from the backend's
    kernel table (``adam_step``; the rule is written out in
    ``tinynet.kernels.reference.adam_step``), in place: no per-step allocation
    of parameter-sized buffers.
    """

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0, *, decoupled_weight_decay: bool = False):
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                      decoupled_weight_decay=decoupled_weight_decay))

    def check_hyperparameters(self, hyperparameters):
        owner = type(self).__name__
        for name in ("lr", "eps", "weight_decay"):
            check_real(owner, name, hyperparameters[name], low=0)
        betas = hyperparameters["betas"]
        if not isinstance(betas, (tuple, list)) or len(betas) != 2:
            raise TypeError(f"{owner}: betas must be a pair (beta1, beta2), got {betas!r}")
        for i, beta in enumerate(betas):
            check_real(owner, f"betas[{i}]", beta, 0, 1, high_included=False)
        decoupled = hyperparameters["decoupled_weight_decay"]
        if not isinstance(decoupled, bool):
            raise TypeError(f"{owner}: decoupled_weight_decay must be True or False, "
                            f"got {decoupled!r}")

    def step(self):
        """One Adam update of every parameter with a gradient (Kingma & Ba, 2015,
        Algorithm 1, with PyTorch's ε placement): with g the gradient (+ λ θ for L2
        ``weight_decay``) and t the step count, m ← β₁ m + (1 − β₁) g,
        v ← β₂ v + (1 − β₂) g², θ ← θ − lr / (1 − β₁ᵗ) · m / (√v / √(1 − β₂ᵗ) + ε).
        """
        for group, p in self._params_with_grad():
            backend = get_backend(p.device)
            state = self.state.get(p)
            if state is None:
                state = self.state[p] = {"step": 0, "exp_avg": backend.xp.zeros_like(p.data),
                                         "exp_avg_sq": backend.xp.zeros_like(p.data)}
            state["step"] += 1
            beta1, beta2 = group["betas"]
            weight_decay, decay = group["weight_decay"], 1.0
            if group["decoupled_weight_decay"]:     # AdamW: θ ← θ (1 − lr λ), in the same pass
                weight_decay, decay = 0.0, 1 - group["lr"] * weight_decay
            backend.kernels.adam_step(
                p.data, p.grad.data, state["exp_avg"], state["exp_avg_sq"], state["step"],
                group["lr"], beta1, beta2, group["eps"], weight_decay, decay)
