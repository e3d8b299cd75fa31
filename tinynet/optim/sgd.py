"""Stochastic gradient descent with momentum, as ``torch.optim.SGD``."""
from __future__ import annotations

from ..hyperparameters import check_flag, check_real
from .optimizer import Optimizer, check_switches

__all__ = ["SGD"]


class SGD(Optimizer):
    """PyTorch's rule, in place::

        g ← −g                              (maximize: ascend the objective)
        g ← g + λ θ                         (weight_decay λ)
        b ← μ b + (1 − dampening) g         (b = g at the first step)
        g ← g + μ b if nesterov else b      (when momentum μ > 0)
        θ ← θ − lr · g

    The momentum buffer is ``state[p]["momentum_buffer"]``, made only when μ > 0.
    """

    def __init__(self, params, lr: float = 1e-3, momentum: float = 0.0, dampening: float = 0.0,
                 weight_decay: float = 0.0, nesterov: bool = False, *, maximize: bool = False,
                 foreach=None, fused=None, capturable: bool = False,
                 differentiable: bool = False):
        check_switches("SGD", foreach, fused, capturable, differentiable)
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening,
                                      weight_decay=weight_decay, nesterov=nesterov,
                                      maximize=maximize))

    def check_hyperparameters(self, hyperparameters):
        for name in ("lr", "momentum", "weight_decay"):
            check_real("SGD", name, hyperparameters[name], low=0)
        check_real("SGD", "dampening", hyperparameters["dampening"])
        for name in ("nesterov", "maximize"):
            check_flag("SGD", name, hyperparameters[name])
        if hyperparameters["nesterov"] and (hyperparameters["momentum"] <= 0
                                            or hyperparameters["dampening"] != 0):
            raise ValueError("SGD: nesterov momentum needs momentum > 0 and dampening = 0")

    def step(self):
        """One SGD update of every parameter with a gradient, by the class docstring's rule."""
        for group, p in self._params_with_grad():
            grad = -p.grad.array if group["maximize"] else p.grad.array
            if group["weight_decay"]:
                grad = grad + group["weight_decay"] * p.array
            momentum = group["momentum"]
            if momentum:
                state = self.state.setdefault(p, {})
                buf = state.get("momentum_buffer")
                if buf is None:
                    buf = state["momentum_buffer"] = grad.copy()
                else:
                    buf *= momentum
                    buf += (1 - group["dampening"]) * grad
                grad = grad + momentum * buf if group["nesterov"] else buf
            p.array -= group["lr"] * grad
