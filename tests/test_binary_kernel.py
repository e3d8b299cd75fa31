"""The CPU's ``binary`` kernel (kernels/ops/binary_cpu.py) against its spec, NumPy's
operator: the same shape and bits for every layout it compiles and every one it
hands back, and the autograd ops that run it (forward, and the product's backward
with a column's gradient summed by the row sums)."""
import operator

import numpy as np
import pytest

import tinynet
from tinynet.kernels.ops import binary_cpu, binary_spec
from tinynet.testing import gradcheck

OPS = [operator.add, operator.sub, operator.mul, operator.truediv]
ROWS, COLUMNS = 96, 160                     # 15 360 elements: over binary_cpu.MIN_ELEMENTS
# (big shape, small shape): rows, columns, and the leading axes a Transformer has
LAYOUTS = [((ROWS, COLUMNS), (COLUMNS,)), ((ROWS, COLUMNS), (1, COLUMNS)),
           ((ROWS, COLUMNS), (ROWS, 1)), ((4, 24, COLUMNS), (COLUMNS,)),
           ((4, 24, COLUMNS), (1, 1, COLUMNS)), ((4, 24, COLUMNS), (4, 24, 1)),
           ((ROWS, 1), (1,))]


def _arrays(rng, dtype, *shapes):
    # no zeros: x / 0 is inf in both, but keep the comparison about the arithmetic
    return [(rng.standard_normal(shape) + 3).astype(dtype) for shape in shapes]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("op", OPS, ids=lambda op: op.__name__)
@pytest.mark.parametrize("big_first", [True, False])
@pytest.mark.parametrize("shapes", LAYOUTS, ids=str)
def test_a_row_or_column_broadcast_is_numpys_bit_for_bit(shapes, big_first, op, dtype):
    big, small = _arrays(np.random.default_rng(0), dtype, *shapes)
    if big.size < binary_cpu.MIN_ELEMENTS:
        big = np.repeat(big, binary_cpu.MIN_ELEMENTS // big.size + 1, axis=0)
    a, b = (big, small) if big_first else (small, big)
    got, expected = binary_cpu.binary(op, a, b), op(a, b)
    assert got.shape == expected.shape and got.dtype == expected.dtype
    assert np.array_equal(got, expected)


@pytest.mark.parametrize("case", ["same shape", "python number", "mixed dtypes", "small",
                                  "transposed", "outer", "integers", "new leading axis"])
def test_other_operands_run_the_spec(case, monkeypatch):
    rng = np.random.default_rng(1)
    a, b = _arrays(rng, np.float32, (ROWS, COLUMNS), (COLUMNS,))
    a, b = {"same shape": (a, a + 1), "python number": (a, 2.5),
            "mixed dtypes": (a, b.astype(np.float64)), "small": (a[:4], b),
            "transposed": (a.T, b[:ROWS]), "outer": (a[:, :1], b[None, :]),
            "integers": (a.astype(np.int64), b.astype(np.int64)),
            "new leading axis": (a, b.reshape(1, 1, COLUMNS))}[case]
    handed_back = []
    monkeypatch.setattr(binary_spec, "binary",
                        lambda op, x, y: handed_back.append(op) or op(x, y))
    got = binary_cpu.binary(operator.mul, a, b)
    assert handed_back == [operator.mul]
    assert np.array_equal(got, a * b)


def test_operands_that_do_not_broadcast_raise_the_ops_error():
    x, y = tinynet.ones(ROWS, COLUMNS), tinynet.ones(ROWS, 3)
    with pytest.raises(ValueError, match=r"mul: shapes \(96, 160\) and \(96, 3\) cannot be"):
        x * y


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_product_with_a_column_and_its_gradients_are_the_composite_numpy_ones(dtype):
    rng = np.random.default_rng(2)
    x_np, scale_np, upstream = _arrays(rng, dtype, (8, 16, COLUMNS), (8, 16, 1),
                                       (8, 16, COLUMNS))
    x = tinynet.tensor(x_np, requires_grad=True)
    scale = tinynet.tensor(scale_np, requires_grad=True)
    y = x * scale
    y.backward(tinynet.tensor(upstream))
    assert np.array_equal(y.numpy(), x_np * scale_np)
    assert np.array_equal(x.grad.numpy(), upstream * scale_np)
    # the column's gradient is a row sum: the compiled one adds in a different order
    np.testing.assert_allclose(scale.grad.numpy(),
                               (upstream * x_np).sum(axis=-1, keepdims=True),
                               rtol=1e-5 if dtype == np.float32 else 1e-13)


def test_a_column_product_passes_gradcheck():
    rng = np.random.default_rng(3)
    x = tinynet.tensor(rng.standard_normal((64, 130)), requires_grad=True)
    scale = tinynet.tensor(rng.standard_normal((64, 1)), requires_grad=True)
    bias = tinynet.tensor(rng.standard_normal(130), requires_grad=True)
    assert gradcheck(lambda a, s, c: (a * s - c) / (s + 3) + c,
                     [x, scale, bias])
