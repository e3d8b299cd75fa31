"""Every op's backward against float64 central differences."""
import numpy as np
import pytest

import tinynet
from tinynet.testing import GradcheckError, gradcheck

from op_cases import CASES


@pytest.mark.parametrize("case", CASES, ids=str)
def test_gradcheck(case):
    inputs = [tinynet.tensor(a, requires_grad=True) for a in case.inputs()]
    assert gradcheck(lambda *xs: case.fn(tinynet, *xs), inputs)


@pytest.mark.parametrize("case", CASES, ids=str)
def test_float32_stays_float32(case):
    inputs = [tinynet.tensor(a, requires_grad=True) for a in case.inputs(dtype=np.float32)]
    outputs = case.fn(tinynet, *inputs)
    outputs = outputs if isinstance(outputs, tuple) else (outputs,)
    total = sum((o * 1.5).sum() for o in outputs)
    total.backward()
    assert all(o.dtype == np.float32 for o in outputs)
    for x in inputs:
        assert x.grad is not None and x.grad.dtype == np.float32
        assert x.grad.shape == x.shape


def test_dropout_gradcheck_with_fixed_mask():
    def fn(x):
        tinynet.manual_seed(3)          # the same mask at every evaluation
        return tinynet.ops.dropout(x, p=0.4)
    x = tinynet.randn(4, 5, dtype=np.float64, requires_grad=True)
    assert gradcheck(fn, x)


def test_gradcheck_catches_a_wrong_backward():
    class WrongSquare(tinynet.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved
            return grad * x            # missing the factor 2

    x = tinynet.randn(3, dtype=np.float64, requires_grad=True)
    with pytest.raises(GradcheckError, match=r"worst at index .* analytic .* numeric"):
        gradcheck(WrongSquare.apply, x)


def test_gradcheck_needs_float64():
    x = tinynet.randn(3, requires_grad=True)
    with pytest.raises(TypeError, match="float64"):
        gradcheck(lambda t: t * 2, x)
