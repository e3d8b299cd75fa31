"""The embedding's compiled gradient (kernels/ops/scatter_cpu.py) against its spec,
kernels/ops/scatter_spec.py's ``add_rows``: the same bits, since it adds each run of
rows in NumPy's pairwise order; runs of every length (the 8-sum block, the
remainder, the recursive halves past 128), float32 and float64, −0.0, a
target that is not zero; the fallbacks and a bad row."""
import numpy as np
import pytest

import tinynet
from tinynet.kernels.ops import scatter_cpu, scatter_spec


def _case(rng, count, embeddings, columns, dtype):
    rows = rng.integers(0, embeddings, count)
    scale = rng.choice([1e-3, 1.0, 1e4, 1e8], (count, 1))
    values = (rng.standard_normal((count, columns)) * scale).astype(dtype)
    values[rng.random(values.shape) < 0.05] = -0.0
    return rows, values


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("count, embeddings", [(1, 1), (7, 1), (8, 1), (9, 1), (129, 1),
                                               (300, 1), (1000, 2), (768, 65), (2000, 97)])
def test_add_rows_is_the_reference_bit_for_bit(count, embeddings, dtype):
    rng = np.random.default_rng(count + embeddings)
    rows, values = _case(rng, count, embeddings, 19, dtype)
    for start in (np.zeros, lambda shape, dtype: rng.standard_normal(shape).astype(dtype)):
        ours = start((embeddings, 19), dtype)
        theirs = ours.copy()
        scatter_cpu.add_rows(ours, rows, values)
        scatter_spec.add_rows(theirs, rows, values)
        np.testing.assert_array_equal(ours, theirs)
        np.testing.assert_array_equal(np.signbit(ours), np.signbit(theirs))


def test_add_rows_of_a_run_of_negative_zeros_is_the_references():
    values = np.full((5, 3), -0.0, np.float32)
    ours, theirs = np.zeros((2, 3), np.float32), np.zeros((2, 3), np.float32)
    scatter_cpu.add_rows(ours, np.array([1, 1, 1, 1, 1]), values)
    scatter_spec.add_rows(theirs, np.array([1, 1, 1, 1, 1]), values)
    np.testing.assert_array_equal(np.signbit(ours), np.signbit(theirs))


def test_add_rows_hands_other_arrays_to_the_reference_and_refuses_a_bad_row():
    target = np.zeros((4, 6), np.float32)[:, ::2]                # not C-ordered
    scatter_cpu.add_rows(target, np.array([0, 0, 3]), np.ones((3, 3), np.float32))
    np.testing.assert_array_equal(target[:, 0], [2, 0, 0, 1])
    empty = np.zeros((2, 3), np.float32)
    scatter_cpu.add_rows(empty, np.zeros(0, np.intp), np.zeros((0, 3), np.float32))
    assert not empty.any()
    for bad in ([0, 2], [1, -1]):
        with pytest.raises(IndexError, match=r"rows must be in \[0, 2\)"):
            scatter_cpu.add_rows(np.zeros((2, 3), np.float32), np.array(bad),
                                 np.ones((2, 3), np.float32))


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_add_rows_takes_rows_of_either_integer_width_and_values_of_any_layout(dtype):
    """The counting sort's rows as int32 or int64; values that are a strided view
    (the gradient of one of several concatenated embeddings)."""
    rng = np.random.default_rng(5)
    rows = rng.integers(0, 6, (4, 9)).astype(dtype)
    values = rng.standard_normal((36, 24)).astype(np.float32)[:, 5:13]
    ours, theirs = np.zeros((6, 8), np.float32), np.zeros((6, 8), np.float32)
    scatter_cpu.add_rows(ours, rows, values)
    scatter_spec.add_rows(theirs, rows.reshape(-1), values)
    np.testing.assert_array_equal(ours, theirs)


def test_the_embedding_gradient_sums_each_rows_gradients():
    weight = tinynet.tensor(np.zeros((5, 4), np.float32), requires_grad=True)
    tokens = np.array([[1, 3, 1], [4, 1, 0]])
    grad = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    tinynet.nn.functional.embedding(tinynet.tensor(tokens), weight).backward(tinynet.tensor(grad))
    want = np.zeros((5, 4), np.float32)
    np.add.at(want, tokens.reshape(-1), grad.reshape(-1, 4))
    np.testing.assert_array_equal(weight.grad.numpy(), want)


@pytest.mark.parametrize("shape, index", [
    ((5, 4), [[1, 3, 1], [4, 1, 0]]),        # a bigram's W[x]: rows of a table
    ((6,), [2, -1, 2, 5, -6]),              # a vector, negative positions from the end
    ((3, 2, 4), [[0], [-1], [0]]),          # rows that are matrices
    ((4, 3), 2),                            # one row (a 0-d index array)
    ((4, 3), np.zeros(0, np.int64)),        # no rows
])
def test_an_integer_array_index_gradient_adds_each_rows_gradients(shape, index):
    """``x[idx]``'s gradient goes through the embedding's add_rows; it is add.at's sum."""
    rng = np.random.default_rng(len(shape))
    index = np.asarray(index)
    x = tinynet.tensor(rng.standard_normal(shape), requires_grad=True)
    grad = rng.standard_normal(index.shape + shape[1:])
    x[tinynet.tensor(index)].backward(tinynet.tensor(grad))
    want = np.zeros(shape)
    np.add.at(want, index, grad)
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-14, atol=1e-15)


def test_an_index_along_another_axis_still_scatters_into_its_view():
    """index_select along dim 1 scatters into a transposed (not C-ordered) view of
    the gradient: add.at's path, the sum still lands in the gradient."""
    x = tinynet.tensor(np.zeros((2, 3)), requires_grad=True)
    index = tinynet.tensor([2, 0, 2])
    tinynet.index_select(x, 1, index).backward(tinynet.tensor(np.arange(6.0).reshape(2, 3)))
    np.testing.assert_array_equal(x.grad.numpy(), [[1, 0, 2], [4, 0, 8]])
