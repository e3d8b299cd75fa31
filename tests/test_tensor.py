"""Tensor creation, properties, conversions and bad input."""
import numpy as np
import pytest

import tinynet


def test_python_data_gets_pytorchs_dtype():
    assert tinynet.tensor([1, 2, 3]).dtype == np.int64
    assert tinynet.tensor([1, 2.5]).dtype == np.float32
    assert tinynet.tensor(2.5).dtype == np.float32
    assert tinynet.tensor([True, False]).dtype == np.bool_
    assert tinynet.tensor([[1.0], [2.0]]).shape == (2, 1)


def test_numpy_arrays_keep_their_dtype_and_are_copied():
    a = np.arange(4.0)
    t = tinynet.tensor(a)
    assert t.dtype == np.float64
    a[0] = 100
    assert t.numpy()[0] == 0
    assert tinynet.tensor(np.arange(3)).dtype == np.int64
    assert tinynet.tensor(a, dtype=tinynet.float32).dtype == np.float32


def test_from_numpy_shares_memory():
    a = np.zeros(3, dtype=np.float32)
    t = tinynet.from_numpy(a)
    a[1] = 7
    assert t.numpy()[1] == 7
    with pytest.raises(TypeError):
        tinynet.from_numpy([1, 2])


def test_properties_and_conversions():
    t = tinynet.ones(2, 3)
    assert t.shape == (2, 3) and t.ndim == 2 and t.dtype == np.float32
    assert t.device == "cpu" and t.size(1) == 3 and t.numel() == 6 and len(t) == 2
    assert np.asarray(t).shape == (2, 3)
    assert tinynet.tensor([4.0]).item() == 4.0
    assert float(tinynet.tensor(1.5)) == 1.5
    with pytest.raises(ValueError, match="one element"):
        t.item()
    assert t.double().dtype == np.float64
    assert t.to(tinynet.float64).dtype == np.float64
    assert t.cpu() is t
    assert t.tolist() == [[1.0] * 3] * 2


def test_cast_is_differentiable():
    x = tinynet.ones(3, requires_grad=True)
    (x.double() * 2).sum().backward()
    assert x.grad.dtype == np.float32
    np.testing.assert_allclose(x.grad.numpy(), 2.0)


def test_factories():
    assert tinynet.zeros(2, 3).numpy().sum() == 0
    assert tinynet.zeros((2, 3)).shape == (2, 3)
    assert tinynet.ones(4, dtype=tinynet.float64).dtype == np.float64
    assert (tinynet.full((2, 2), 7.0).numpy() == 7).all()
    assert tinynet.arange(5).dtype == np.int64
    assert tinynet.arange(0, 1, 0.25).dtype == np.float32
    assert tinynet.arange(0, 1, 0.25).shape == (4,)
    r = tinynet.rand(1000)
    assert 0 <= r.numpy().min() and r.numpy().max() < 1
    n = tinynet.randn(10000, dtype=tinynet.float64)
    assert abs(n.numpy().mean()) < 0.05 and abs(n.numpy().std() - 1) < 0.05
    like = tinynet.zeros_like(n)
    assert like.shape == n.shape and like.dtype == np.float64
    assert tinynet.ones_like(n).numpy().sum() == 10000
    assert tinynet.randn_like(n).shape == n.shape
    assert tinynet.rand_like(n).shape == n.shape
    assert tinynet.full_like(n, 2.0).numpy()[0] == 2.0


def test_manual_seed_repeats_random_draws():
    tinynet.manual_seed(42)
    a = tinynet.randn(5).numpy().copy()
    tinynet.manual_seed(42)
    b = tinynet.randn(5).numpy()
    tinynet.manual_seed(43)
    c = tinynet.randn(5).numpy()
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def test_repr_is_readable():
    t = tinynet.tensor([1.0, 2.0], requires_grad=True)
    assert repr(t) == "tensor([1., 2.], requires_grad=True)"
    assert "dtype=float64" in repr(t.double())
    assert "grad_fn=<Mul>" in repr(t * 2)


def test_torch_style_names_and_numpy_aliases():
    x = tinynet.tensor(np.arange(6.0).reshape(2, 3))
    np.testing.assert_allclose(x.sum(dim=1).numpy(), [3, 12])
    np.testing.assert_allclose(x.sum(axis=1, keepdims=True).numpy(), [[3], [12]])
    values, indices = x.max(1)
    np.testing.assert_allclose(values.numpy(), [2, 5])
    np.testing.assert_array_equal(indices.numpy(), [2, 2])
    assert x.argmax().item() == 5
    np.testing.assert_array_equal(x.argmin(dim=0).numpy(), [0, 0, 0])
    assert x.transpose(0, 1).shape == (3, 2) and x.T.shape == (3, 2)
    assert tinynet.cat([x, x], 1).shape == (2, 6)
    assert tinynet.stack([x, x]).shape == (2, 2, 3)
    assert len(x.chunk(2, dim=1)) == 2


def test_comparisons_give_boolean_tensors():
    x = tinynet.tensor([1.0, 2.0, 3.0])
    assert (x > 1.5).dtype == np.bool_
    np.testing.assert_array_equal((x == 2.0).numpy(), [False, True, False])


@pytest.mark.parametrize("expr, message", [
    (lambda: tinynet.ones(2, 3) + tinynet.ones(4), r"add: shapes \(2, 3\) and \(4,\)"),
    (lambda: tinynet.ones(2, 3) * tinynet.ones(3, 2), r"mul: shapes \(2, 3\) and \(3, 2\)"),
    (lambda: tinynet.ones(2, 3) @ tinynet.ones(2, 3), r"matmul: shapes \(2, 3\) and \(2, 3\)"),
    (lambda: tinynet.ones(2, 3).reshape(4, 2), r"shape \(2, 3\).*into shape \(4, 2\)"),
    (lambda: tinynet.cat([tinynet.ones(2, 3), tinynet.ones(2, 2)]), r"cat: shapes"),
    (lambda: tinynet.stack([tinynet.ones(2), tinynet.ones(3)]), r"stack: .*same shape"),
    (lambda: tinynet.ones(2, 3).expand(4, 3), r"expand"),
    (lambda: tinynet.where(tinynet.ones(2) > 0, tinynet.ones(3), 0.0), r"where"),
    (lambda: tinynet.ones(2, 3).permute(0, 0), r"permute"),
])
def test_shape_errors_name_the_shapes(expr, message):
    with pytest.raises(ValueError, match=message):
        expr()


def test_bad_dimension_is_an_index_error():
    with pytest.raises(IndexError, match="dimension 2 is out of range"):
        tinynet.ones(2, 3).sum(dim=2)


def test_list_of_tensors_is_refused_with_a_hint():
    with pytest.raises(TypeError, match="stack"):
        tinynet.tensor([tinynet.ones(2), tinynet.ones(2)])


def test_numpy_operand_on_the_left_defers_to_tensor():
    x = tinynet.ones(2, requires_grad=True)
    y = np.array([2.0, 3.0], dtype=np.float32) * x
    assert isinstance(y, tinynet.Tensor) and y.requires_grad
