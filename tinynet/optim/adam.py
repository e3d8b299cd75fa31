"""Adam (Kingma & Ba, 2015) and its AMSGrad variant (Reddi et al., 2018), with
PyTorch's exact update rule."""
from __future__ import annotations

from ..backend import get_backend
from ..hyperparameters import check_flag, check_real
from .optimizer import Optimizer, check_switches

__all__ = ["Adam"]


def lerp_(start, end, weight: float) -> None:
    """start ← start + weight (end − start), in place, as ``torch.Tensor.lerp_``
    computes it: from ``end`` back when weight ≥ 0.5, so that weight = 1 gives end."""
    if abs(weight) < 0.5:
        start += weight * (end - start)
    else:
        start[...] = end - (end - start) * (1 - weight)


class Adam(Optimizer):
    """Adam as ``torch.optim.Adam``: L2 ``weight_decay`` added to the gradient, or,
    with ``decoupled_weight_decay=True``, AdamW's θ ← θ (1 − lr λ) before the step;
    ``amsgrad=True`` divides by the running maximum of v instead of v (AMSGrad);
    ``maximize=True`` ascends the objective (the gradient's sign is flipped).

    The update of each parameter is one fused kernel from the backend's
    kernel table (``adam_step``; the rule is written out in
    ``tinynet.kernels.ops.adam_spec.adam_step``), in place: no per-step allocation
    of parameter-sized buffers. The state of a parameter is PyTorch's:
    ``step``, ``exp_avg`` (m), ``exp_avg_sq`` (v) and, with AMSGrad, ``max_exp_avg_sq``.
    """

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0, amsgrad: bool = False, *, maximize: bool = False,
                 decoupled_weight_decay: bool = False,
                 foreach=None, fused=None, capturable: bool = False,
                 differentiable: bool = False):
        check_switches("Adam", foreach, fused, capturable, differentiable)
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                      amsgrad=amsgrad, maximize=maximize,
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
        for name in ("amsgrad", "maximize", "decoupled_weight_decay"):
            check_flag(owner, name, hyperparameters[name])

    def step(self):
        """One Adam update of every parameter with a gradient (Kingma & Ba, 2015,
        Algorithm 1, with PyTorch's ε placement): with g the gradient (−g with
        ``maximize``, + λ θ for L2 ``weight_decay``) and t the step count,
        m ← β₁ m + (1 − β₁) g, v ← β₂ v + (1 − β₂) g²,
        θ ← θ − lr / (1 − β₁ᵗ) · m / (√v / √(1 − β₂ᵗ) + ε).

        AMSGrad (Reddi et al., 2018, "On the Convergence of Adam and Beyond") keeps
        v̂ ← max(v̂, v), the largest v so far, and divides by √v̂ instead of √v: a weight
        whose gradients turn small keeps its small steps instead of growing them back
        as v forgets (the paper's non-convergence example). As in PyTorch, v̂ is divided
        by v's bias correction 1 − β₂ᵗ (the paper's Algorithm 2 has none).
        """
        for group, p in self._params_with_grad():
            backend = get_backend(p.device)
            state = self.state.get(p)
            if state is None:
                state = self.state[p] = {"step": 0, "exp_avg": backend.xp.zeros_like(p.array),
                                         "exp_avg_sq": backend.xp.zeros_like(p.array)}
            if group["amsgrad"] and "max_exp_avg_sq" not in state:
                state["max_exp_avg_sq"] = backend.xp.zeros_like(p.array)
            state["step"] += 1
            grad = -p.grad.array if group["maximize"] else p.grad.array
            beta1, beta2 = group["betas"]
            weight_decay, decay = group["weight_decay"], 1.0
            if group["decoupled_weight_decay"]:     # AdamW: θ ← θ (1 − lr λ), in the same pass
                weight_decay, decay = 0.0, 1 - group["lr"] * weight_decay
            if group["amsgrad"]:
                # The fused kernel has no v̂: AMSGrad takes this plain array code instead.
                _amsgrad_step(p.array, grad, state, group["lr"], beta1, beta2, group["eps"],
                              weight_decay, decay, backend.xp)
                continue
            backend.kernels.adam_step(
                p.array, grad, state["exp_avg"], state["exp_avg_sq"], state["step"],
                group["lr"], beta1, beta2, group["eps"], weight_decay, decay)


def _amsgrad_step(param, grad, state, lr, beta1, beta2, eps, weight_decay, decay, xp):
    """The AMSGrad update in place, term for term as ``torch.optim.Adam(amsgrad=True)``."""
    if decay != 1:
        param *= decay
    if weight_decay:
        grad = grad + weight_decay * param
    exp_avg, exp_avg_sq, max_exp_avg_sq = (state[k] for k in
                                           ("exp_avg", "exp_avg_sq", "max_exp_avg_sq"))
    step = state["step"]
    lerp_(exp_avg, grad, 1 - beta1)
    exp_avg_sq *= beta2
    exp_avg_sq += (1 - beta2) * grad * grad
    xp.maximum(max_exp_avg_sq, exp_avg_sq, out=max_exp_avg_sq)
    step_size = lr / (1 - beta1 ** step)
    denom = xp.sqrt(max_exp_avg_sq)
    denom /= (1 - beta2 ** step) ** 0.5
    denom += eps
    param -= step_size * exp_avg / denom
