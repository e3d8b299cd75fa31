"""Adagrad (Duchi, Hazan & Singer, "Adaptive Subgradient Methods for Online Learning
and Stochastic Optimization", JMLR 2011), as ``torch.optim.Adagrad``."""
from __future__ import annotations

from ..backend import get_array_module
from ..hyperparameters import check_flag, check_real
from .optimizer import Optimizer, check_switches

__all__ = ["Adagrad"]


class Adagrad(Optimizer):
    """Adagrad as ``torch.optim.Adagrad``: each weight's step is divided by the root
    of the sum of all its squared gradients so far (Duchi et al. 2011, the diagonal
    version), so weights that rarely get a gradient keep large steps::

        g ← −g                                   (maximize: ascend the objective)
        g ← g + λ θ                              (weight_decay λ)
        η ← lr / (1 + (t − 1) · lr_decay)        (t: the step count, state "step")
        G ← G + g²                               (state "sum", from initial_accumulator_value)
        θ ← θ − η · g / (√G + ε)

    As in PyTorch, the state of every parameter is made when it joins the
    optimizer (``step`` 0, ``sum`` filled with ``initial_accumulator_value``). A
    parameter group's own initial_accumulator_value fills its sums; PyTorch fills
    every group's with the constructor's value, whatever the group says.
    """

    def __init__(self, params, lr: float = 1e-2, lr_decay: float = 0.0,
                 weight_decay: float = 0.0, initial_accumulator_value: float = 0.0,
                 eps: float = 1e-10, *, maximize: bool = False,
                 foreach=None, fused=None, capturable: bool = False,
                 differentiable: bool = False):
        check_switches("Adagrad", foreach, fused, capturable, differentiable)
        super().__init__(params, dict(lr=lr, lr_decay=lr_decay, weight_decay=weight_decay,
                                      initial_accumulator_value=initial_accumulator_value,
                                      eps=eps, maximize=maximize))

    def check_hyperparameters(self, hyperparameters):
        for name in ("lr", "lr_decay", "weight_decay", "initial_accumulator_value", "eps"):
            check_real("Adagrad", name, hyperparameters[name], low=0)
        check_flag("Adagrad", "maximize", hyperparameters["maximize"])

    def add_param_group(self, group: dict) -> None:
        """Add a parameter group (see Optimizer.add_param_group) and make the state of
        its parameters: ``step`` 0 and ``sum`` filled with its initial_accumulator_value.
        """
        super().add_param_group(group)
        group = self.param_groups[-1]
        for p in group["params"]:
            self._state(group, p)

    def _state(self, group, p) -> dict:
        state = self.state.get(p)
        if state is None:
            xp = get_array_module(p.array)
            state = self.state[p] = {
                "step": 0, "sum": xp.full_like(p.array, group["initial_accumulator_value"])}
        return state

    def step(self):
        """One Adagrad update of every parameter with a gradient, by the class
        docstring's rule, in PyTorch's order of operations."""
        for group, p in self._params_with_grad():
            xp = get_array_module(p.array)
            state = self._state(group, p)
            state["step"] += 1
            grad = -p.grad.array if group["maximize"] else p.grad.array
            if group["weight_decay"]:
                grad = grad + group["weight_decay"] * p.array
            clr = group["lr"] / (1 + (state["step"] - 1) * group["lr_decay"])
            state_sum = state["sum"]
            state_sum += grad * grad
            std = xp.sqrt(state_sum)
            std += group["eps"]
            p.array -= clr * grad / std
