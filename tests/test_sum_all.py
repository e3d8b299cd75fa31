"""The sum and mean of all elements (tinynet/ops/reduction.py, ``_sum_all``): the
device's row sums and then their sum where the rows suit the kernel, NumPy's sum
elsewhere; both as accurate as a float64 sum allows, with PyTorch's values at
inf and NaN and an unchanged gradient; the row sums shared out over the threads
give the serial loop's bits."""
from __future__ import annotations

import math

import numpy as np
import pytest

import tinynet
from tinynet.ops.reduction import ROW_SUM_ELEMENTS

SHORTEST, LONGEST = ROW_SUM_ELEMENTS
# the row sums' path, and NumPy's on either side of it
SHAPES = [(768, 512), (3, LONGEST), (4, 5, SHORTEST), (40,), (2, LONGEST + 1),
          (100, SHORTEST - 1)]


def _exact(a):
    return math.fsum(a.astype(np.float64).ravel())


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sum_and_mean_of_all_are_the_exact_sum_rounded(shape, dtype):
    a = np.random.default_rng(0).standard_normal(shape).astype(dtype)
    x = tinynet.tensor(a)
    scale = math.fsum(np.abs(a).ravel())
    tolerance = (1e-6 if dtype == np.float32 else 1e-14) * scale
    total, mean = x.sum(), x.mean()
    assert total.dtype == mean.dtype == x.dtype and total.shape == mean.shape == ()
    assert abs(total.item() - _exact(a)) <= tolerance
    assert abs(mean.item() - _exact(a) / a.size) <= tolerance / a.size
    kept = x.sum(keepdim=True)
    assert kept.shape == (1,) * a.ndim
    assert kept.item() == total.item()


def test_many_equal_values_sum_without_drift():
    # a running float32 sum of 4 M times 0.1 is off by several percent
    a = np.full((4096, 1024), 0.1, np.float32)
    got = tinynet.tensor(a).sum().item()
    want = float(np.float32(0.1)) * a.size
    assert abs(got - want) <= 1e-6 * want


@pytest.mark.parametrize("values, want", [((np.nan,), "nan"), ((np.inf,), "inf"),
                                          ((np.inf, -np.inf), "nan"), ((-np.inf,), "-inf")])
def test_inf_and_nan_reach_the_sum(values, want):
    a = np.ones((64, 64), np.float32)
    for k, value in enumerate(values):
        a[k * 7, 3] = value
    assert str(tinynet.tensor(a).sum().item()) == want
    assert str(tinynet.tensor(a).mean().item()) == want


def test_gradient_of_the_mean_of_all_is_one_over_the_count():
    x = tinynet.randn(32, 64, requires_grad=True)
    x.mean().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full((32, 64), 1 / 2048, np.float32))


@pytest.mark.parametrize("shape", SHAPES)
def test_sum_and_mean_of_all_match_torch(shape):
    torch = pytest.importorskip("torch")
    a = np.random.default_rng(1).standard_normal(shape)
    for op in ("sum", "mean"):
        ours = getattr(tinynet.tensor(a), op)().item()
        theirs = getattr(torch.tensor(a), op)().item()
        assert ours == pytest.approx(theirs, rel=1e-12, abs=1e-12)


def test_row_sums_shared_over_threads_are_the_serial_loops_bits():
    from tinynet.kernels._common import PARALLEL_MIN_ELEMENTS
    from tinynet.kernels.ops import rows_cpu
    a = np.random.default_rng(2).standard_normal((PARALLEL_MIN_ELEMENTS // 100 + 3, 100))
    a = a.astype(np.float32)
    shared = rows_cpu.sum_last_axis(a)                   # large enough to be shared out
    serial = np.empty(a.shape[0], np.float32)
    rows_cpu._row_sums(a, serial)
    np.testing.assert_array_equal(shared, serial)
    np.testing.assert_allclose(shared, a.astype(np.float64).sum(axis=1), rtol=1e-5, atol=1e-4)
