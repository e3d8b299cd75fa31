"""Gradient clipping, as ``torch.nn.utils``, and per-parameter gradient norms.

``clip_grad_norm_`` = ``get_total_norm`` of the gradients, then
``clip_grads_with_norm_``: every gradient is multiplied in place by
min(max_norm / (total_norm + 1e-6), 1). A NaN or infinite norm reaches the
gradients (as in PyTorch: NaN and 0 are factors too) unless
``error_if_nonfinite=True`` stops it. On the CPU a factor of exactly 1 leaves
the gradients as they are, which is what multiplying by it gives, bit for bit;
on a GPU they are multiplied whatever the factor, so that no value has to be
copied to the host to decide.

``parameter_grad_norms`` reports ‖∂L/∂W‖₂ of each parameter by name: the
quantity Xiong et al. (2020) compare across layers to show that at
initialisation Post-LN's gradients grow toward the output and Pre-LN's do not.
"""
from __future__ import annotations

import math

import numpy as np

from ..backend import get_array_module
from ..hyperparameters import check_real
from ..lacking import lacking
from ..tensor import Tensor

__all__ = ["clip_grad_norm_", "clip_grad_value_", "get_total_norm", "clip_grads_with_norm_",
           "parameter_grad_norms"]


def _tensors(tensors) -> list:
    return [tensors] if isinstance(tensors, Tensor) else list(tensors)


def _grads(parameters) -> list:
    """The gradient arrays of the parameters that have one."""
    return [p.grad.array for p in _tensors(parameters) if p.grad is not None]


def _check_norm_type(where: str, norm_type) -> float:
    norm_type = check_real(where, "norm_type", norm_type, low=0)
    if norm_type == 0:
        raise ValueError(f"{where}: norm_type must be above 0 (2 for the usual norm, "
                         "math.inf for the largest magnitude)")
    return norm_type


def _vector_norm(xp, array, norm_type: float):
    """‖array‖_p of all its elements, as a 0-d array of its dtype."""
    if norm_type == math.inf:
        return xp.abs(array).max()
    if norm_type == 2:              # Σ x² as one BLAS dot product, with no temporary
        flat = array.reshape(-1)
        return xp.sqrt(xp.dot(flat, flat))
    return (xp.abs(array) ** norm_type).sum() ** (1 / norm_type)


def get_total_norm(tensors, norm_type: float = 2.0, error_if_nonfinite: bool = False) -> Tensor:
    """The p-norm of all elements of ``tensors`` together, as one vector.

    Computed as PyTorch does: the norm of the vector of the tensors' norms.
    An empty list gives 0. With ``error_if_nonfinite``, a NaN or infinite
    norm is a RuntimeError.
    """
    norm_type = _check_norm_type("get_total_norm", norm_type)
    arrays = [t.array if isinstance(t, Tensor) else t for t in _tensors(tensors)]
    if not arrays:
        return Tensor._make(np.asarray(0.0, dtype=np.float32))
    xp = get_array_module(arrays[0])
    norms = xp.stack([_vector_norm(xp, a, norm_type) for a in arrays])
    total = _vector_norm(xp, norms, norm_type)
    if error_if_nonfinite and not bool(xp.isfinite(total)):
        raise RuntimeError(
            f"The total norm of order {norm_type} for gradients from `parameters` is "
            "non-finite, so it cannot be clipped. To disable this error and scale the "
            "gradients by the non-finite norm anyway, set `error_if_nonfinite=False`")
    return Tensor._make(xp.asarray(total))


def clip_grads_with_norm_(parameters, max_norm: float, total_norm) -> None:
    """Multiply every gradient in place by min(max_norm / (total_norm + 1e-6), 1)."""
    max_norm = check_real("clip_grads_with_norm_", "max_norm", max_norm, low=0)
    grads = _grads(parameters)
    if not grads:
        return
    total = total_norm.array if isinstance(total_norm, Tensor) else total_norm
    xp = get_array_module(grads[0])
    total = xp.asarray(total)
    factor = xp.minimum(max_norm / (total + 1e-6), 1.0)
    if xp is np and factor == 1:
        return
    with np.errstate(invalid="ignore"):       # inf · 0 = NaN is the intended result
        for g in grads:
            g *= factor


def clip_grad_norm_(parameters, max_norm: float, norm_type: float = 2.0,
                    error_if_nonfinite: bool = False) -> Tensor:
    """Scale all gradients in place so that their joint ``norm_type``-norm is at
    most ``max_norm``; return the norm before clipping (a 0-d tensor)."""
    parameters = _tensors(parameters)
    max_norm = check_real("clip_grad_norm_", "max_norm", max_norm, low=0)
    norm_type = _check_norm_type("clip_grad_norm_", norm_type)
    total = get_total_norm([p.grad for p in parameters if p.grad is not None], norm_type,
                           error_if_nonfinite)
    clip_grads_with_norm_(parameters, max_norm, total)
    return total


def clip_grad_value_(parameters, clip_value: float) -> None:
    """Clamp every gradient in place to [-clip_value, clip_value]."""
    clip_value = check_real("clip_grad_value_", "clip_value", clip_value, low=0)
    for g in _grads(parameters):
        get_array_module(g).clip(g, -clip_value, clip_value, out=g)


def parameter_grad_norms(module) -> dict:
    """The 2-norm of each parameter's gradient, ``{name: float}``, in
    ``named_parameters()`` order; parameters whose ``.grad`` is None are left out.

    A parameter shared under two names (a tied embedding) appears once, under
    the name ``named_parameters`` gives it.
    """
    norms = {}
    for name, p in module.named_parameters():
        if p.grad is not None:
            grad = p.grad.array
            norms[name] = float(_vector_norm(get_array_module(grad), grad, 2))
    return norms

__getattr__ = lacking("torch.nn.utils")
