"""RMSprop (Tieleman & Hinton, Coursera "Neural Networks for Machine Learning",
lecture 6e, 2012), as ``torch.optim.RMSprop``."""
from __future__ import annotations

from ..backend import get_array_module
from ..hyperparameters import check_flag, check_real
from .adam import lerp_
from .optimizer import Optimizer, check_switches

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
    """RMSprop as ``torch.optim.RMSprop``: the gradient divided by a running RMS of
    the recent gradients (Hinton, lecture 6e), with optional momentum and, with
    ``centered=True``, the running variance instead of the second moment
    (Graves, 2013, "Generating Sequences With Recurrent Neural Networks", Eq. 38)::

        g ← −g                                   (maximize: ascend the objective)
        g ← g + λ θ                              (weight_decay λ)
        v ← α v + (1 − α) g²                     (state "square_avg")
        ḡ ← ḡ + (1 − α)(g − ḡ)                   (centered; state "grad_avg")
        d ← √(v − ḡ²) + ε if centered else √v + ε
        b ← μ b + g / d;  θ ← θ − lr · b         (momentum μ > 0; "momentum_buffer")
        θ ← θ − lr · g / d                       (momentum μ = 0)

    ε is added outside the square root (PyTorch's placement). The state also
    counts ``step``; the buffers of momentum and centering exist only when used.
    """

    def __init__(self, params, lr: float = 1e-2, alpha: float = 0.99, eps: float = 1e-8,
                 weight_decay: float = 0.0, momentum: float = 0.0, centered: bool = False, *,
                 maximize: bool = False,
                 foreach=None, fused=None, capturable: bool = False,
                 differentiable: bool = False):
        check_switches("RMSprop", foreach, fused, capturable, differentiable)
        super().__init__(params, dict(lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay,
                                      momentum=momentum, centered=centered, maximize=maximize))

    def check_hyperparameters(self, hyperparameters):
        for name in ("lr", "eps", "weight_decay", "momentum"):
            check_real("RMSprop", name, hyperparameters[name], low=0)
        check_real("RMSprop", "alpha", hyperparameters["alpha"], 0, 1)
        for name in ("centered", "maximize"):
            check_flag("RMSprop", name, hyperparameters[name])

    def step(self):
        """One RMSprop update of every parameter with a gradient, by the class
        docstring's rule, in PyTorch's order of operations."""
        for group, p in self._params_with_grad():
            xp = get_array_module(p.array)
            alpha, momentum = group["alpha"], group["momentum"]
            state = self.state.get(p)
            if state is None:
                state = self.state[p] = {"step": 0, "square_avg": xp.zeros_like(p.array)}
                if momentum > 0:
                    state["momentum_buffer"] = xp.zeros_like(p.array)
                if group["centered"]:
                    state["grad_avg"] = xp.zeros_like(p.array)
            state["step"] += 1
            grad = -p.grad.array if group["maximize"] else p.grad.array
            if group["weight_decay"]:
                grad = grad + group["weight_decay"] * p.array
            square_avg = state["square_avg"]
            square_avg *= alpha
            square_avg += (1 - alpha) * grad * grad
            if group["centered"]:
                grad_avg = state["grad_avg"]
                lerp_(grad_avg, grad, 1 - alpha)
                avg = xp.sqrt(square_avg - grad_avg * grad_avg)
            else:
                avg = xp.sqrt(square_avg)
            avg += group["eps"]
            if momentum > 0:
                buf = state["momentum_buffer"]
                buf *= momentum
                buf += grad / avg
                p.array -= group["lr"] * buf
            else:
                p.array -= group["lr"] * grad / avg
