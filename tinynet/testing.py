"""Checking gradients against finite differences.

``gradcheck`` compares the gradients that backward() computes with central
differences, (f(x + ε) − f(x − ε)) / 2ε, element by element, in float64. A
non-scalar output is reduced to a scalar with fixed random weights, so the
check covers the whole vector-Jacobian product, not only the sum.
"""
from __future__ import annotations

import numpy as np

from .autograd import no_grad
from .backend import as_numpy, get_array_module
from .tensor import Tensor

__all__ = ["gradcheck", "GradcheckError"]


class GradcheckError(AssertionError):
    """Analytic and numeric gradients disagree."""


def _as_tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _scalarize(outputs, weights):
    """Σ_k Σ (output_k · w_k): one scalar from any outputs."""
    total = None
    for out, w in zip(outputs, weights, strict=True):
        term = (out * w).sum()
        total = term if total is None else total + term
    return total


def gradcheck(fn, inputs, eps=1e-6, atol=1e-5, rtol=1e-3, seed=0) -> bool:
    """Check ``fn``'s gradients with respect to every input that requires grad.

    ``inputs`` is a Tensor or a sequence of them; the ones with
    ``requires_grad=True`` must be float64. Raises :class:`GradcheckError`
    naming the worst element (input, index, analytic and numeric values) when
    ``|analytic − numeric| > atol + rtol·|numeric|`` anywhere; returns True.
    """
    inputs = _as_tuple(inputs)
    checked = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]
    if not checked:
        raise ValueError("gradcheck: no input has requires_grad=True")
    for i in checked:
        if inputs[i].dtype != np.float64:
            raise TypeError(
                f"gradcheck: input {i} is {inputs[i].dtype}; finite differences need "
                "float64 inputs")

    outputs = _as_tuple(fn(*inputs))
    rng = np.random.default_rng(seed)
    weights = [Tensor._make(get_array_module(o.data).asarray(
        rng.standard_normal(o.shape))) for o in outputs]
    for i in checked:
        inputs[i].grad = None
    _scalarize(outputs, weights).backward()

    failures = []
    for i in checked:
        x = inputs[i]
        analytic = np.zeros(x.shape) if x.grad is None else as_numpy(x.grad.data)
        numeric = np.zeros(x.shape)
        flat = x.data.reshape(-1)           # a view: perturbs x in place
        with no_grad():
            for k in range(flat.size):
                original = flat[k].item()
                flat[k] = original + eps
                plus = _scalarize(_as_tuple(fn(*inputs)), weights).item()
                flat[k] = original - eps
                minus = _scalarize(_as_tuple(fn(*inputs)), weights).item()
                flat[k] = original
                numeric.reshape(-1)[k] = (plus - minus) / (2 * eps)
        error = np.abs(analytic - numeric)
        bad = error > atol + rtol * np.abs(numeric)
        if bad.any():
            score = error / (atol + rtol * np.abs(numeric))
            worst = np.unravel_index(np.argmax(score), x.shape)
            failures.append(
                f"input {i} (shape {tuple(x.shape)}): {int(bad.sum())} of {x.data.size} "
                f"elements differ; worst at index {tuple(int(j) for j in worst)}: "
                f"analytic {analytic[worst]:.8g}, numeric {numeric[worst]:.8g}, "
                f"|difference| {error[worst]:.3g}")
    if failures:
        raise GradcheckError("gradcheck failed:\n  " + "\n  ".join(failures))
    return True
