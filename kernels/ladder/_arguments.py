"""The ladder's four public kernels, checked, as every rung exposes them (plain
Python: they work on NumPy and CuPy arrays alike).

A rung's ``layer_norm_forward(x, gain, bias, eps)`` is
``layer_norm_forward(run_forward, its_kernels, x, gain, bias, eps)`` here: the
arguments are checked (or, as a layer passes them, taken as they are after a
quick test), then the rung's ``run_forward(its_kernels, x, gain, bias, eps,
centered)`` computes ``(y, mean, rstd)``, and its ``run_backward(its_kernels, dy,
x, mean, rstd, gain, centered)`` ``(dx, dgain, dbias)``. ``centered`` is False
for RMSNorm: μ = 0.
"""
from __future__ import annotations

import numpy as np

from tinynet.backend import get_array_module
from tinynet.hyperparameters import check_real

from .._common import FLOAT_DTYPES


def check_array(name, a):
    """Raise TypeError unless ``a`` is a NumPy or CuPy array (not, say, a list)."""
    if not isinstance(a, np.ndarray) and get_array_module(a) is np:
        raise TypeError(f"layer norm kernels take NumPy or CuPy arrays; {name} is a "
                        f"{type(a).__name__}")


def check_layer_norm_input(x, what="x"):
    """Raise ValueError unless ``x`` is a 2-D float32/float64 array with H ≥ 1
    (TypeError if it is no array at all)."""
    check_array(what, x)
    if x.ndim != 2:
        raise ValueError(f"layer norm kernels take 2-D (rows, H) arrays; "
                         f"{what} has shape {tuple(x.shape)}")
    if x.dtype not in FLOAT_DTYPES:
        raise ValueError(f"layer norm kernels take float32 or float64; {what} is {x.dtype}")
    if x.shape[1] == 0:
        raise ValueError(f"layer norm needs H ≥ 1 features per row; {what} has shape "
                         f"{tuple(x.shape)}")


def check_same_layout(name, a, x):
    """Raise ValueError unless ``a`` has the shape and dtype of ``x``."""
    check_array(name, a)
    if a.shape != x.shape or a.dtype != x.dtype:
        raise ValueError(f"{name} must match x: shape {tuple(x.shape)} and dtype {x.dtype}; "
                         f"got shape {tuple(a.shape)} and dtype {a.dtype}")


def check_parameter(name, p, x):
    """Raise ValueError unless ``p`` is None or an (H,) array of x's dtype."""
    if p is None:
        return
    check_array(name, p)
    if p.shape != x.shape[1:] or p.dtype != x.dtype:
        raise ValueError(f"{name} must have shape ({x.shape[1]},) and dtype {x.dtype} "
                         f"(x has shape {tuple(x.shape)}); got shape {tuple(p.shape)} "
                         f"and dtype {p.dtype}")


def check_row_statistics(mean, rstd, x):
    """Raise ValueError unless ``mean`` and ``rstd`` hold one number per row of x."""
    check_array("mean", mean)
    check_array("rstd", rstd)
    if mean.shape == rstd.shape == x.shape[:1]:
        return
    for name, s in (("mean", mean), ("rstd", rstd)):
        if s.shape != x.shape[:1]:
            raise ValueError(f"{name} must have shape ({x.shape[0]},), one value per row "
                             f"of x {tuple(x.shape)}; got shape {tuple(s.shape)}")


def _fits(a, shape, dtype) -> bool:
    return (type(a) is np.ndarray and a.shape == shape and a.dtype == dtype
            and a.flags.c_contiguous)


def forward_ready(x, gain, bias, eps) -> bool:
    """Whether the forward's arguments can go to a compiled kernel as they are:
    C-contiguous NumPy arrays, x (rows, H ≥ 1) of float32 or float64, gain and
    bias (H,) of its dtype, eps a float ≥ 0. The quick test of the usual case;
    :func:`forward_arguments` checks the rest."""
    return (type(x) is np.ndarray and x.ndim == 2 and x.dtype in FLOAT_DTYPES
            and x.shape[1] > 0 and x.flags.c_contiguous and type(eps) is float and eps >= 0
            and _fits(gain, x.shape[1:], x.dtype) and _fits(bias, x.shape[1:], x.dtype))


def backward_ready(dy, x, mean, rstd, gain) -> bool:
    """As :func:`forward_ready`, for the backward: dy of x's shape and dtype,
    mean and rstd float64 (rows,), gain given."""
    return (type(x) is np.ndarray and x.ndim == 2 and x.dtype in FLOAT_DTYPES
            and x.shape[1] > 0 and x.flags.c_contiguous and _fits(dy, x.shape, x.dtype)
            and _fits(mean, x.shape[:1], np.float64) and _fits(rstd, x.shape[:1], np.float64)
            and _fits(gain, x.shape[1:], x.dtype))


def forward_arguments(x, gain, bias, eps, where="layer_norm_forward"):
    """Checked, contiguous ``(x, gain, bias, eps)``; a missing gain is ones, a
    missing bias zeros (exact stand-ins); eps a float ≥ 0."""
    check_layer_norm_input(x)
    check_parameter("gain", gain, x)
    check_parameter("bias", bias, x)
    eps = check_real(where, "eps", eps, low=0)
    xp = get_array_module(x)
    x = xp.ascontiguousarray(x)
    H = x.shape[1]
    gain = xp.ones(H, x.dtype) if gain is None else xp.ascontiguousarray(gain)
    bias = xp.zeros(H, x.dtype) if bias is None else xp.ascontiguousarray(bias)
    return x, gain, bias, eps


def rms_arguments(x, gain, eps):
    """:func:`forward_arguments` of RMSNorm, which has no bias: zeros stand in."""
    return forward_arguments(x, gain, None, eps, where="rms_norm_forward")


def backward_arguments(dy, x, mean, rstd, gain):
    """Checked, contiguous ``(dy, x, mean, rstd, gain, affine)``; statistics as
    float64, a missing gain as ones (``affine`` says whether one was given)."""
    check_layer_norm_input(x)
    check_same_layout("dy", dy, x)
    check_row_statistics(mean, rstd, x)
    check_parameter("gain", gain, x)
    xp = get_array_module(x)
    affine = gain is not None
    return (xp.ascontiguousarray(dy), xp.ascontiguousarray(x),
            xp.ascontiguousarray(mean, dtype=xp.float64),
            xp.ascontiguousarray(rstd, dtype=xp.float64),
            xp.ascontiguousarray(gain) if affine else xp.ones(x.shape[1], x.dtype), affine)


def layer_norm_forward(run_forward, kernels, x, gain, bias, eps):
    """``(y, mean, rstd)`` of each row of x (rows, H); as reference.layer_norm_forward."""
    if not forward_ready(x, gain, bias, eps):
        x, gain, bias, eps = forward_arguments(x, gain, bias, eps)
    return run_forward(kernels, x, gain, bias, eps, True)


def layer_norm_backward(run_backward, kernels, dy, x, mean, rstd, gain):
    """``(dx, dgain, dbias)``; as reference.layer_norm_backward."""
    if backward_ready(dy, x, mean, rstd, gain):
        return run_backward(kernels, dy, x, mean, rstd, gain, True)
    dy, x, mean, rstd, checked_gain, affine = backward_arguments(dy, x, mean, rstd, gain)
    dx, dgain, dbias = run_backward(kernels, dy, x, mean, rstd, checked_gain, True)
    return (dx, dgain, dbias) if affine else (dx, None, None)


def rms_norm_forward(run_forward, kernels, x, gain, eps):
    """``(y, rstd)``; as reference.rms_norm_forward."""
    y, _, rstd = run_forward(kernels, *rms_arguments(x, gain, eps), False)
    return y, rstd


def rms_norm_backward(run_backward, kernels, dy, x, rstd, gain):
    """``(dx, dgain)``; as reference.rms_norm_backward."""
    check_array("x", x)
    no_mean = get_array_module(x).zeros(len(x))
    dy, x, mean, rstd, checked_gain, affine = backward_arguments(dy, x, no_mean, rstd, gain)
    dx, dgain, _ = run_backward(kernels, dy, x, mean, rstd, checked_gain, False)
    return (dx, dgain) if affine else (dx, None)
