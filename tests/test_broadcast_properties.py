"""Property tests (hypothesis): random broadcastable shapes and reduction axes."""
import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes, mutually_broadcastable_shapes

import tinynet
from tinynet.autograd import unbroadcast
from tinynet.testing import gradcheck

SETTINGS = settings(max_examples=40, deadline=None)

BINARY = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
    "maximum": lambda a, b: tinynet.maximum(a, b),
    "where": lambda a, b: tinynet.where(a > b, a, b * 3),
}


def _inputs(shapes, seed):
    """float64 leaf tensors of these shapes, values ±[0.5, 1.5): away from zero
    (for div), and no two of the n values (all inputs together) nearer than
    0.5/n, far more than gradcheck's step, so that maximum and where never
    meet a tie. (Drawn independently, two values once came 1.5e-7 apart.)"""
    rng = np.random.default_rng(seed)
    sizes = [int(np.prod(shape)) for shape in shapes]
    n = sum(sizes)
    magnitudes = 0.5 + (rng.permutation(n) + rng.uniform(0.25, 0.75, n)) / n
    values = np.split(magnitudes * rng.choice([-1, 1], n), np.cumsum(sizes)[:-1])
    return [tinynet.tensor(v.reshape(shape), dtype=tinynet.float64, requires_grad=True)
            for v, shape in zip(values, shapes, strict=True)]


@SETTINGS
@given(shapes=mutually_broadcastable_shapes(num_shapes=2, max_dims=4, max_side=3),
       op=st.sampled_from(sorted(BINARY)), seed=st.integers(0, 2**16))
def test_binary_ops_broadcast_values_and_gradients(shapes, op, seed):
    a, b = _inputs(shapes.input_shapes, seed)
    out = BINARY[op](a, b)
    assert out.shape == shapes.result_shape
    assert gradcheck(BINARY[op], [a, b])
    assert a.grad.shape == a.shape and b.grad.shape == b.shape


@SETTINGS
@given(shapes=mutually_broadcastable_shapes(num_shapes=2, max_dims=4, max_side=4))
def test_unbroadcast_sums_every_copy_once(shapes):
    shape, _ = shapes.input_shapes
    grad = np.ones(shapes.result_shape)
    reduced = unbroadcast(grad, shape)
    assert reduced.shape == shape
    copies = np.prod(shapes.result_shape) / max(np.prod(shape), 1)
    np.testing.assert_allclose(reduced, copies)


NUMPY_REDUCTIONS = {
    "sum": np.sum,
    "mean": np.mean,
    "var": lambda a, axis, keepdims: np.var(a, axis=axis, keepdims=keepdims, ddof=1),
    "logsumexp": lambda a, axis, keepdims: np.log(np.exp(a).sum(axis=axis, keepdims=keepdims)),
}


@SETTINGS
@given(shape=array_shapes(min_dims=1, max_dims=4, max_side=3), data=st.data(),
       reduction=st.sampled_from(sorted(NUMPY_REDUCTIONS)))
def test_reductions_over_random_axes(shape, data, reduction):
    axes = tuple(data.draw(st.lists(st.integers(0, len(shape) - 1), min_size=1, unique=True)))
    keepdim = data.draw(st.booleans())
    assume(reduction != "var" or np.prod([shape[a] for a in axes]) >= 2)
    x = _inputs([shape], 0)[0]

    def fn(t):
        return getattr(t, reduction)(dim=axes, keepdim=keepdim)
    expected = NUMPY_REDUCTIONS[reduction](x.numpy(), axis=axes, keepdims=keepdim)
    np.testing.assert_allclose(fn(x).numpy(), expected, rtol=1e-10)
    assert gradcheck(fn, x)


@pytest.mark.parametrize("op", sorted(BINARY))
def test_incompatible_shapes_raise_value_error_naming_them(op):
    a, b = tinynet.ones(2, 3), tinynet.ones(4, 1, 2)
    with pytest.raises(ValueError, match=r"\(2, 3\).*\(4, 1, 2\)|\(4, 1, 2\).*\(2, 3\)"):
        BINARY[op](a, b)
