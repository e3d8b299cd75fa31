"""The fused Adam step on the CPU: one pass over the flattened arrays, in Numba.

The rule of :func:`tinynet.kernels.ops.adam_spec.adam_step` (PyTorch's). Parameters of
at least kernels/_common.PARALLEL_MIN_ELEMENTS elements are shared out over threads.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from .._common import FLOAT_DTYPES, PARALLEL_MIN_ELEMENTS

__all__ = ["adam_step"]

_EXACT = dict(error_model="numpy", fastmath=False)
_ENTRY = dict(_EXACT, cache=True)
_TINY = {np.dtype(d): np.finfo(d).tiny for d in FLOAT_DTYPES}    # smallest normal number


@njit(**_EXACT)
def _adam_element(i, param, grad, exp_avg, exp_avg_sq, constants):
    step_size, bias_correction2_sqrt, beta1, one_minus_beta1, beta2, one_minus_beta2, \
        eps, weight_decay, decay, tiny = constants
    g = grad[i]
    if weight_decay != 0:
        g = g + weight_decay * param[i]
    m = beta1 * exp_avg[i] + one_minus_beta1 * g
    v = beta2 * exp_avg_sq[i] + one_minus_beta2 * g * g
    # Flush subnormal moments to zero. A weight whose gradient is always 0 (an
    # MNIST border pixel) has m decaying by β₁ per step through the subnormal
    # range, where x86 arithmetic is much slower; such an m moves the weight by
    # less than 1e-30.
    exp_avg[i] = m if abs(m) >= tiny else m * 0
    exp_avg_sq[i] = v if v >= tiny else v * 0
    denom = np.sqrt(exp_avg_sq[i]) / bias_correction2_sqrt + eps
    param[i] = param[i] * decay - step_size * exp_avg[i] / denom


@njit(**_EXACT)
def _constants(hyper):
    """The ten constants of the step, from the array that brings them in the
    parameters' dtype, as scalars the loop keeps in registers."""
    return (hyper[0], hyper[1], hyper[2], hyper[3], hyper[4], hyper[5], hyper[6],
            hyper[7], hyper[8], hyper[9])


@njit(**_ENTRY)
def _adam_serial(param, grad, exp_avg, exp_avg_sq, hyper):
    constants = _constants(hyper)
    for i in range(param.size):
        _adam_element(i, param, grad, exp_avg, exp_avg_sq, constants)


@njit(parallel=True, **_ENTRY)
def _adam_parallel(param, grad, exp_avg, exp_avg_sq, hyper):
    constants = _constants(hyper)
    for i in prange(param.size):
        _adam_element(i, param, grad, exp_avg, exp_avg_sq, constants)


def adam_step(param, grad, exp_avg, exp_avg_sq, step, lr, beta1, beta2, eps,
              weight_decay, decay=1.0):
    """One Adam update in place, in one pass over the flattened arrays.

    The rule of :func:`tinynet.kernels.ops.adam_spec.adam_step` (PyTorch's):
    m ← β₁m + (1 − β₁)g, v ← β₂v + (1 − β₂)g²,
    θ ← θ − (lr / (1 − β₁ᵗ)) · m / (sqrt(v) / sqrt(1 − β₂ᵗ) + ε),
    with g ← g + λθ first when weight_decay λ ≠ 0, and θ ← θ · decay before θ
    is updated (AdamW's decoupled weight decay). Arithmetic is in the
    parameters' dtype, with the constants rounded to it once; subnormal
    moments are flushed to zero (see _adam_element).
    """
    _check_arrays(param, grad, exp_avg, exp_avg_sq)
    hyper = np.array((lr / (1 - beta1 ** step), np.sqrt(1 - beta2 ** step),
                      beta1, 1 - beta1, beta2, 1 - beta2, eps, weight_decay, decay,
                      _TINY[param.dtype]), dtype=param.dtype)     # each rounded once
    run = _adam_parallel if param.size >= PARALLEL_MIN_ELEMENTS else _adam_serial
    run(param.reshape(-1), grad.reshape(-1), exp_avg.reshape(-1), exp_avg_sq.reshape(-1),
        hyper)


def _check_arrays(param, grad, exp_avg, exp_avg_sq):
    """A clear error for arrays the in-place update cannot take."""
    if param.dtype not in _TINY:
        raise ValueError(f"adam_step takes float32 or float64 arrays; param is {param.dtype}")
    arrays = {"param": param, "grad": grad, "exp_avg": exp_avg, "exp_avg_sq": exp_avg_sq}
    for name, a in arrays.items():
        if a.shape != param.shape or a.dtype != param.dtype:
            raise ValueError(f"adam_step: {name} has shape {a.shape} and dtype {a.dtype}; "
                             f"param has shape {param.shape} and dtype {param.dtype}")
        if not a.flags.c_contiguous:
            raise ValueError(f"adam_step updates in place and needs contiguous arrays; "
                             f"{name} is not")
