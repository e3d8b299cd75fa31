"""Adam (Kingma & Ba, 2015), with PyTorch's exact update rule."""
from __future__ import annotations

from ..backend import get_backend
from .optimizer import Optimizer

__all__ = ["Adam"]


class Adam(Optimizer):
    """Adam as ``torch.optim.Adam`` (L2 ``weight_decay`` added to the gradient).

    The update of each parameter is one fused kernel from the backend's
    kernel table (``adam_step``; the rule is written out in
    ``tinynet.kernels.reference.adam_step``), in place: no per-step allocation
    of parameter-sized buffers.
    """

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0):
        if lr < 0 or eps < 0 or weight_decay < 0 or not all(0 <= b < 1 for b in betas):
            raise ValueError(f"invalid Adam hyper-parameters: lr={lr}, betas={betas}, "
                             f"eps={eps}, weight_decay={weight_decay}")
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps,
                                      weight_decay=weight_decay))

    def step(self):
        for group, p in self._params_with_grad():
            state = self.state.get(p)
            if state is None:
                xp = get_backend(p.device).xp
                state = self.state[p] = {"step": 0, "exp_avg": xp.zeros_like(p.data),
                                         "exp_avg_sq": xp.zeros_like(p.data)}
            state["step"] += 1
            beta1, beta2 = group["betas"]
            get_backend(p.device).kernels.adam_step(
                p.data, p.grad.data, state["exp_avg"], state["exp_avg_sq"], state["step"],
                group["lr"], beta1, beta2, group["eps"], group["weight_decay"])
