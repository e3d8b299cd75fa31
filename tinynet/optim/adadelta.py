"""Adadelta (Zeiler, "ADADELTA: An Adaptive Learning Rate Method", 2012), as
``torch.optim.Adadelta``."""
from __future__ import annotations

from ..backend import get_array_module
from ..hyperparameters import check_flag, check_real
from .optimizer import Optimizer, check_switches

__all__ = ["Adadelta"]


class Adadelta(Optimizer):
    """Adadelta as ``torch.optim.Adadelta``: each weight's step is the ratio of two
    running RMS values, of the past steps and of the gradients (Zeiler 2012,
    Algorithm 1), times ``lr`` (PyTorch's addition; 1 is the paper's rule)::

        g ← −g                                   (maximize: ascend the objective)
        g ← g + λ θ                              (weight_decay λ)
        E[g²] ← ρ E[g²] + (1 − ρ) g²             (state "square_avg")
        Δ ← √(E[Δ²] + ε) / √(E[g²] + ε) · g
        E[Δ²] ← ρ E[Δ²] + (1 − ρ) Δ²             (state "acc_delta")
        θ ← θ − lr · Δ

    ε sits inside both square roots, as in the paper: it starts the first steps
    (E[Δ²] = 0 there) at about √ε / RMS[g] · g. The state also counts ``step``.
    """

    def __init__(self, params, lr: float = 1.0, rho: float = 0.9, eps: float = 1e-6,
                 weight_decay: float = 0.0, *, maximize: bool = False,
                 foreach=None, fused=None, capturable: bool = False,
                 differentiable: bool = False):
        check_switches("Adadelta", foreach, fused, capturable, differentiable)
        super().__init__(params, dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay,
                                      maximize=maximize))

    def check_hyperparameters(self, hyperparameters):
        for name in ("lr", "eps", "weight_decay"):
            check_real("Adadelta", name, hyperparameters[name], low=0)
        check_real("Adadelta", "rho", hyperparameters["rho"], 0, 1)
        check_flag("Adadelta", "maximize", hyperparameters["maximize"])

    def step(self):
        """One Adadelta update of every parameter with a gradient, by the class
        docstring's rule, in PyTorch's order of operations."""
        for group, p in self._params_with_grad():
            xp = get_array_module(p.array)
            state = self.state.get(p)
            if state is None:
                state = self.state[p] = {"step": 0, "square_avg": xp.zeros_like(p.array),
                                         "acc_delta": xp.zeros_like(p.array)}
            state["step"] += 1
            rho, eps = group["rho"], group["eps"]
            grad = -p.grad.array if group["maximize"] else p.grad.array
            if group["weight_decay"]:
                grad = grad + group["weight_decay"] * p.array
            square_avg, acc_delta = state["square_avg"], state["acc_delta"]
            square_avg *= rho
            square_avg += (1 - rho) * grad * grad
            std = xp.sqrt(square_avg + eps)
            delta = xp.sqrt(acc_delta + eps)
            delta /= std
            delta *= grad
            acc_delta *= rho
            acc_delta += (1 - rho) * delta * delta
            p.array -= group["lr"] * delta
