"""PyTorch's type promotion, without PyTorch: the dtype table from its documentation
(torch.result_type); test_torch_surface.py checks the same against torch itself."""
import numpy as np
import pytest

import tinynet

I64, I32, F32, F64 = np.int64, np.int32, np.float32, np.float64


def t(dtype, shape=(3,)):
    return tinynet.ones(shape, dtype=dtype)


@pytest.mark.parametrize("make, expected", [
    (lambda: t(I64) * 1.5, F32),               # a Python float counts as float32
    (lambda: t(I64) / t(I64), F32),            # true division of integers
    (lambda: t(I64) / 2, F32),
    (lambda: t(I32) + 7, I32),                 # a Python int keeps the tensor's integer type
    (lambda: t(I32) + t(I64), I64),            # same kind: promote
    (lambda: t(F32) + t(I64), F32),            # the higher kind decides
    (lambda: t(F32) * t(F64, ()), F32),        # a 0-d tensor does not promote one with dims
    (lambda: t(I64) + t(F64, ()), F64),        # ...unless its kind is higher
    (lambda: t(F32) + t(F64), F64),
    (lambda: t(I64) ** 0.5, F32),
    (lambda: tinynet.where(t(I64) > 0, t(I64), 0.5), F32),
    (lambda: tinynet.where(t(F64) > 0, 1.0, 0.0), F32),
    (lambda: t(I64).exp(), F32),               # smooth functions compute integers in float32
    (lambda: t(np.bool_).sqrt(), F32),
    (lambda: t(F64).exp(), F64),
])
def test_result_dtype_is_pytorchs(make, expected):
    assert make().dtype == expected


def test_promotion_keeps_gradients_to_the_float_operand():
    x = tinynet.ones(3, requires_grad=True)
    (x * tinynet.arange(3)).sum().backward()
    assert x.grad.dtype == np.float32
    np.testing.assert_array_equal(x.grad.numpy(), [0, 1, 2])
