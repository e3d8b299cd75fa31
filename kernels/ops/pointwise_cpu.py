"""The activations on the CPU, forward and backward, as one compiled pass each.

NumPy evaluates σ(x) = 1 / (1 + e^−x) as four passes over memory, each
allocating a temporary: negate, exp, add, divide; the backward y (1 − y) g
three more. Here each direction is one loop that reads its inputs and writes
its output once, which the compiler turns into SIMD code. Two ideas:

* **an exponential the compiler can vectorize.** The C library's ``expf``,
  called from a compiled loop, is one call per element. :func:`exp32` is
  Cephes' ``expf``: x = n ln 2 + r with |r| ≤ ln 2 / 2, e^r by a polynomial of
  degree 7, and 2^n written straight into a float's exponent bits. Nothing but
  multiplies, adds and integer work, so eight or sixteen lanes at a time; its
  error is at most 2 float32 ulp. NaN passes through; below −87.3, where e^x
  is subnormal, it gives 0 (e^−∞ = 0 exactly), above 88.7 inf. :func:`tanh32`
  (Cephes' ``tanhf``) is built on it, for the LSTM's step (``lstm_cpu.py``).
* **float32 only.** float64 runs the formulas of kernels/pointwise_spec.py in
  NumPy, the exact path that the float64 comparisons with PyTorch rely on;
  so do non-contiguous arrays and CuPy's.

The GELU's tanh approximation uses 1 + tanh u = 2 σ(2u): x (1 + tanh u) / 2 is
x σ(2u), which has no cancellation for negative u and needs only the exponential.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from . import pointwise_spec

__all__ = ["sigmoid_forward", "sigmoid_backward", "silu_forward", "silu_backward",
           "tanh_backward", "relu_forward", "relu_backward", "gelu_tanh_forward",
           "gelu_tanh_backward", "exp32", "sigmoid32", "tanh32", "all_flagged"]

_LOOP = dict(cache=True, error_model="numpy", fastmath={"contract"})
_F = np.float32
_LOG2E, _LN2_HIGH, _LN2_LOW = _F(1.4426950408889634), _F(0.693359375), _F(-2.12194440e-4)
_EXP_LOW, _EXP_HIGH = _F(-87.3), _F(88.7)
_C1, _C2, _C3, _C4, _C5, _C6 = (_F(1.9875691500e-4), _F(1.3981999507e-3), _F(8.3334519073e-3),
                                _F(4.1665795894e-2), _F(1.6666665459e-1), _F(5.0000001201e-1))
_T1, _T2, _T3, _T4, _T5 = (_F(-5.70498872745e-3), _F(2.06390887954e-2), _F(-5.37397155531e-2),
                           _F(1.33314422036e-1), _F(-3.33332819422e-1))
_SQRT_TWO_OVER_PI = _F(pointwise_spec.SQRT_TWO_OVER_PI)
_GELU_CUBIC = _F(pointwise_spec.GELU_TANH_CUBIC)


@njit(inline="always", error_model="numpy", fastmath={"contract"})
def exp32(x):
    """e^x in float32 arithmetic (Cephes' expf), vectorizable: 0 below −87.3
    (where e^x is subnormal) and inf above 88.7."""
    clamped = _EXP_LOW if x < _EXP_LOW else x       # comparisons keep NaN as it is
    clamped = _EXP_HIGH if clamped > _EXP_HIGH else clamped
    n = np.floor(clamped * _LOG2E + _F(0.5))
    r = clamped - n * _LN2_HIGH - n * _LN2_LOW
    p = ((((_C1 * r + _C2) * r + _C3) * r + _C4) * r + _C5) * r + _C6
    p = p * r * r + r + _F(1)
    exponent_bits = np.int32((np.int32(n) + np.int32(127)) << np.int32(23))
    e = p * exponent_bits.view(_F)
    e = _F(0) if x < _EXP_LOW else e
    return _F(np.inf) if x > _EXP_HIGH else e


@njit(inline="always", error_model="numpy", fastmath={"contract"})
def sigmoid32(x):
    """σ(x) = 1 / (1 + e^−x) in float32, vectorizable."""
    return _F(1) / (_F(1) + exp32(-x))


@njit(inline="always", error_model="numpy", fastmath={"contract"})
def tanh32(x):
    """tanh x in float32 arithmetic (Cephes' tanhf), vectorizable: an odd polynomial
    below |x| = 0.625, where 1 − 2 / (e^2|x| + 1) would cancel, that form above it
    (±1 once e^2|x| overflows); at most 2 float32 ulp from tanh."""
    magnitude = abs(x)
    s = x * x
    near_zero = x * (((((_T1 * s + _T2) * s + _T3) * s + _T4) * s + _T5) * s + _F(1))
    far = _F(1) - _F(2) / (exp32(_F(2) * magnitude) + _F(1))
    far = -far if x < _F(0) else far
    return near_zero if magnitude < _F(0.625) else far


@njit(**_LOOP)
def _sigmoid_loop(x, y):
    for i in range(x.size):
        y[i] = sigmoid32(x[i])


@njit(**_LOOP)
def _sigmoid_backward_loop(grad, y, dx):
    for i in range(y.size):
        dx[i] = grad[i] * y[i] * (_F(1) - y[i])


@njit(**_LOOP)
def _silu_loop(x, y, s):
    for i in range(x.size):
        sigma = sigmoid32(x[i])
        s[i] = sigma
        y[i] = x[i] * sigma


@njit(**_LOOP)
def _silu_backward_loop(grad, x, s, dx):
    for i in range(x.size):
        dx[i] = grad[i] * s[i] * (_F(1) + x[i] * (_F(1) - s[i]))


@njit(**_LOOP)
def _tanh_backward_loop(grad, y, dx):
    for i in range(y.size):
        dx[i] = grad[i] * (_F(1) - y[i] * y[i])


@njit(**_LOOP)
def _relu_loop(x, y):
    for i in range(x.size):
        y[i] = _F(0) if x[i] <= _F(0) else x[i]       # NaN stays NaN


@njit(**_LOOP)
def _relu_backward_loop(grad, y, dx):
    for i in range(y.size):
        dx[i] = _F(0) if y[i] <= _F(0) else grad[i]


@njit(inline="always", error_model="numpy", fastmath={"contract"})
def _gelu_gate(x):
    """σ(2u), u = √(2/π) (x + 0.044715 x³): the tanh GELU's (1 + tanh u) / 2."""
    return sigmoid32(_F(2) * _SQRT_TWO_OVER_PI * (x + _GELU_CUBIC * x * x * x))


@njit(**_LOOP)
def _gelu_tanh_loop(x, y):
    for i in range(x.size):
        y[i] = x[i] * _gelu_gate(x[i])


@njit(**_LOOP)
def _gelu_tanh_backward_loop(grad, x, dx):
    for i in range(x.size):
        v = x[i]
        s = _gelu_gate(v)
        slope_u = _SQRT_TWO_OVER_PI * (_F(1) + _F(3) * _GELU_CUBIC * v * v)
        dx[i] = grad[i] * (s + _F(2) * v * s * (_F(1) - s) * slope_u)


def _float32_of_one_shape(arrays) -> bool:
    shape = arrays[0].shape
    for a in arrays:             # a loop, not all(...): every kernel call asks
        if type(a) is not np.ndarray or a.dtype != _F or a.shape != shape:
            return False
    return True


def compiled(*arrays) -> bool:
    """Whether the compiled row loops take these arrays: NumPy, float32, C-ordered,
    one shape."""
    return _float32_of_one_shape(arrays) and all_flagged(arrays, "C_CONTIGUOUS")


def in_one_order(arrays):
    """``(order, arrays)``: the order ('C' or 'F') in which the compiled loops run
    over these arrays flat, and the arrays, those laid out otherwise copied into it
    (a copy is one pass, the spec takes several); or ``(None, arrays)`` where the
    loops do not take them (the spec runs): float32 NumPy arrays of one shape. The
    order is the first array's: F where it is F-ordered, as a Linear's output is
    for few rows (tinynet/ops/linalg.py, ``times_transposed``), else C."""
    if not _float32_of_one_shape(arrays):
        return None, arrays
    first = arrays[0].flags
    order = "F" if first.f_contiguous and not first.c_contiguous else "C"
    if not all_flagged(arrays, order + "_CONTIGUOUS"):
        arrays = [np.asarray(a, order=order) for a in arrays]
    return order, arrays


def all_flagged(arrays, flag) -> bool:
    """Whether every array has the NumPy flag ``flag`` ("C_CONTIGUOUS"...)."""
    for a in arrays:
        if not a.flags[flag]:
            return False
    return True


def _pointwise(loop, fallback):
    """The kernel that runs ``loop`` on the flattened arrays when :func:`in_one_order`
    takes them, and ``fallback`` (kernels/pointwise_spec.py) otherwise."""
    def kernel(*arrays):
        order, arrays = in_one_order(arrays)
        if order is None:
            return fallback(*arrays)
        out = np.empty_like(arrays[0])          # in the inputs' order
        flat = []
        for a in arrays:        # a loop, not a comprehension: every call runs it
            flat.append(a.ravel(order))         # views: each is contiguous in that order
        loop(*flat, out.ravel(order))
        return out
    kernel.__name__ = fallback.__name__
    kernel.__doc__ = fallback.__doc__
    return kernel


sigmoid_forward = _pointwise(_sigmoid_loop, pointwise_spec.sigmoid_forward)
sigmoid_backward = _pointwise(_sigmoid_backward_loop, pointwise_spec.sigmoid_backward)
silu_backward = _pointwise(_silu_backward_loop, pointwise_spec.silu_backward)
tanh_backward = _pointwise(_tanh_backward_loop, pointwise_spec.tanh_backward)
relu_forward = _pointwise(_relu_loop, pointwise_spec.relu_forward)
relu_backward = _pointwise(_relu_backward_loop, pointwise_spec.relu_backward)
gelu_tanh_forward = _pointwise(_gelu_tanh_loop, pointwise_spec.gelu_tanh_forward)
gelu_tanh_backward = _pointwise(_gelu_tanh_backward_loop, pointwise_spec.gelu_tanh_backward)


def silu_forward(x):
    """``(SiLU(x), σ(x))`` in one pass, as :func:`tinynet.kernels.ops.pointwise_spec.silu_forward`:
    σ(x) is kept for the backward, which then needs no exponential (as the GELU's
    keeps Φ(x))."""
    order, (x,) = in_one_order((x,))
    if order is None:
        return pointwise_spec.silu_forward(x)
    y, s = np.empty_like(x), np.empty_like(x)
    _silu_loop(x.ravel(order), y.ravel(order), s.ravel(order))
    return y, s
