"""The engine: topological order, accumulation, graph freeing, no_grad."""
import numpy as np
import pytest

import tinynet
from tinynet.autograd import topological_order


def test_chain_of_100000_ops_backprops_without_recursion():
    x = tinynet.tensor([1.0], dtype=np.float64, requires_grad=True)
    y = x
    for _ in range(100_000):
        y = y * 1.0001
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [1.0001 ** 100_000], rtol=1e-9)


def test_diamond_graph_sums_both_paths():
    x = tinynet.tensor([2.0, 3.0], requires_grad=True)
    a = x * 3
    b = x * x
    (a + b).sum().backward()          # d/dx (3x + x²) = 3 + 2x
    np.testing.assert_allclose(x.grad.numpy(), [7.0, 9.0])


def test_topological_order_puts_each_node_before_its_inputs():
    x = tinynet.tensor([1.0], requires_grad=True)
    a = x * 2
    b = a + x
    c = b * a
    order = topological_order(c.grad_fn)
    position = {node: i for i, node in enumerate(order)}
    assert order[0] is c.grad_fn
    assert position[b.grad_fn] < position[a.grad_fn]


def test_second_backward_accumulates():
    x = tinynet.tensor([1.0, -2.0], requires_grad=True)
    (x * x).sum().backward()
    (x * x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [4.0, -8.0])


def test_retain_graph_allows_second_backward_and_accumulates():
    x = tinynet.tensor([3.0], requires_grad=True)
    y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), [12.0])


def test_backward_through_freed_graph_raises():
    x = tinynet.tensor([3.0], requires_grad=True)
    y = (x * x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="second time"):
        y.backward()


def test_non_scalar_backward_needs_grad():
    x = tinynet.ones(3, requires_grad=True)
    y = x * 2
    with pytest.raises(RuntimeError, match="scalar"):
        y.backward()
    y.backward(tinynet.tensor([1.0, 2.0, 3.0]))
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 4.0, 6.0])


def test_backward_grad_of_wrong_shape_raises():
    x = tinynet.ones(3, requires_grad=True)
    with pytest.raises(ValueError, match=r"\(2,\).*\(3,\)"):
        (x * 2).backward(tinynet.ones(2))


def test_backward_without_requires_grad_raises():
    x = tinynet.ones(3)
    with pytest.raises(RuntimeError, match="does not require grad"):
        (x * 2).sum().backward()


def test_backward_on_a_leaf_sets_its_grad():
    x = tinynet.tensor(2.0, requires_grad=True)
    x.backward()
    assert x.grad.item() == 1.0


def test_requires_grad_propagation():
    a = tinynet.ones(2, requires_grad=True)
    b = tinynet.ones(2)
    assert (a + b).requires_grad and not (b + b).requires_grad
    assert not (a + b).is_leaf and a.is_leaf
    assert not a.detach().requires_grad
    assert not (a > 0).requires_grad


def test_no_grad_context_and_decorators():
    a = tinynet.ones(2, requires_grad=True)
    with tinynet.no_grad():
        assert not (a * 2).requires_grad
        with tinynet.enable_grad():
            assert (a * 2).requires_grad
    assert (a * 2).requires_grad

    @tinynet.no_grad()
    def with_parens(t):
        return t * 2

    @tinynet.no_grad
    def without_parens(t):
        return t * 2

    assert not with_parens(a).requires_grad
    assert not without_parens(a).requires_grad
    assert tinynet.is_grad_enabled()


def test_no_grad_restores_mode_after_exception():
    with pytest.raises(ZeroDivisionError):
        with tinynet.no_grad():
            1 / 0
    assert tinynet.is_grad_enabled()


def test_integer_tensor_cannot_require_grad():
    with pytest.raises(RuntimeError, match="floating point"):
        tinynet.tensor(np.arange(3), requires_grad=True)
    with pytest.raises(RuntimeError, match="floating point"):
        tinynet.arange(3).requires_grad_()


def test_shared_gradient_arrays_are_not_aliased_between_leaves():
    a = tinynet.ones(3, requires_grad=True)
    b = tinynet.ones(3, requires_grad=True)
    (a + b).sum().backward()
    a.grad.numpy()[:] = 5.0
    np.testing.assert_allclose(b.grad.numpy(), 1.0)


def test_grad_of_unused_leaf_stays_none():
    a = tinynet.ones(3, requires_grad=True)
    b = tinynet.ones(3, requires_grad=True)
    (a * 2).sum().backward()
    assert b.grad is None


def test_graph_is_freed_after_backward():
    x = tinynet.ones(3, requires_grad=True)
    y = (x.exp() * 2).sum()
    node = y.grad_fn
    y.backward()
    assert node.freed and not hasattr(node, "inputs")


ZERO_D_CASES = {
    "sum(dim=0)": lambda a: a.sum(dim=0),
    "mean(dim=-1, keepdim)": lambda a: a.mean(dim=-1, keepdim=True),
    "max(dim=0)": lambda a: a.max(dim=0)[0],
    "min(0)": lambda a: a.min(0)[0],
    "logsumexp(0)": lambda a: a.logsumexp(0),
    "var(0, correction=0)": lambda a: a.var(0, correction=0) + a,
    "std(0, correction=0)": lambda a: a.std(0, correction=0) + a,
    "transpose(0, -1)": lambda a: a.transpose(0, -1) * 2,
    "squeeze(0)": lambda a: a.squeeze(0) * 3,
    "softmax(0)": lambda a: a.softmax(0) * a,
}


@pytest.mark.parametrize("name", ZERO_D_CASES)
def test_dims_of_a_0d_tensor_work_as_in_pytorch(name):
    """A 0-d tensor has dims 0 and -1, each holding its one element."""
    torch = pytest.importorskip("torch")
    fn = ZERO_D_CASES[name]
    a = tinynet.tensor(0.3, dtype=tinynet.float64, requires_grad=True)
    t = torch.tensor(0.3, dtype=torch.float64, requires_grad=True)
    ours, theirs = fn(a), fn(t)
    assert ours.shape == tuple(theirs.shape)
    ours.sum().backward()
    theirs.sum().backward()
    np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), rtol=1e-15)
    np.testing.assert_allclose(a.grad.numpy(), t.grad.numpy(), rtol=1e-15)
    assert a.max(0).indices.item() == a.argmax(0).item() == 0


def test_the_cores_chain_rule_on_a_diamond_with_several_outputs():
    """core.chain_rule alone: fan-out, broadcasting, a two-output op (split), a leaf
    that needs no gradient; the engine's .grad agrees."""
    rng = np.random.default_rng(0)
    x = tinynet.tensor(rng.standard_normal((4, 3)), requires_grad=True)
    b = tinynet.tensor(rng.standard_normal(3), requires_grad=True)
    c = tinynet.tensor(rng.standard_normal((4, 3)))                # no gradient wanted
    h = (x * b + c).tanh()
    top, bottom = h.split(2, dim=0)
    loss = (top * x[:2]).sum() + (bottom.exp() * b).sum()
    grads = tinynet.autograd.chain_rule(loss)
    assert set(grads) == {x, b}
    loss.backward()
    np.testing.assert_array_equal(grads[x], x.grad.numpy())
    np.testing.assert_array_equal(grads[b], b.grad.numpy())
    (root, ones), = tinynet.autograd.chain_rule(b).items()         # a leaf as the root
    assert root is b and np.array_equal(ones, np.ones(3))


def test_gradient_sums_that_overflow_are_inf_and_nan_without_warnings():
    """Two paths whose gradients are +inf and -inf meet at x: their sum is NaN, as in
    PyTorch, with no RuntimeWarning from NumPy; the warnings are back after."""
    import warnings
    x = tinynet.tensor([1.0, 2.0], dtype=np.float32, requires_grad=True)
    big = np.float32(3e38)
    y = (x * big) * 10 - (x * big) * 10          # d/dx: +inf and -inf, summed at x
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        y.sum().backward()
    assert np.isnan(x.grad.numpy()).all()
    with pytest.warns(RuntimeWarning):
        np.float32(3e38) * np.float32(10)        # NumPy warns again outside the backward


def test_floating_point_warnings_turned_off_twice_come_back_once_both_end():
    from tinynet.runtime.quiet import ignore_fp_errors, restore_fp_errors
    outer = ignore_fp_errors()
    inner = ignore_fp_errors()
    assert np.geterr()["over"] == "ignore"
    restore_fp_errors(inner)
    assert np.geterr()["over"] == "ignore"
    restore_fp_errors(outer)
    assert np.geterr()["over"] == "warn"


def test_the_cores_chain_rule_gives_overflowing_gradients_without_warnings():
    """The ops' backwards are quiet in core.chain_rule as in Tensor.backward."""
    import warnings
    x = tinynet.tensor([1.0, 2.0], dtype=np.float32, requires_grad=True)
    y = ((x * np.float32(3e38)) * 10).sum()        # d/dx = 3e39: inf in float32
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        grads = tinynet.autograd.chain_rule(y)
    assert np.isinf(grads[x]).all()


def test_slices_of_one_tensor_add_their_gradients_into_one_sum():
    """Slicing adds its gradient straight into the sum at the sliced tensor
    (GetItem.add_backward): slices that overlap, a column, an index that repeats a
    row, and a gradient from another path that arrives first, an array shared with
    another leaf (a + b hands both the same one), which must stay as it was."""
    rng = np.random.default_rng(3)
    x0, w0 = rng.standard_normal((4, 5)), rng.standard_normal((4, 5))
    indices = [np.s_[0:2], np.s_[1:3], np.s_[:, 2], np.s_[[0, 0, 3]], np.s_[..., -1]]
    weights = [rng.standard_normal(x0[i].shape) for i in indices]
    top = rng.standard_normal((4, 5))

    def loss(x, w):
        # the slices are recorded first, so that x + w's backward runs before theirs
        parts = [(x[i] * c).sum() for i, c in zip(indices, weights, strict=True)]
        return sum(parts) + ((x + w) * top).sum()

    x = tinynet.tensor(x0, requires_grad=True)
    w = tinynet.tensor(w0, requires_grad=True)
    loss(x, w).backward()
    want = top.copy()
    for i, c in zip(indices, weights, strict=True):
        np.add.at(want, i, c)
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-14, atol=1e-14)
    np.testing.assert_array_equal(w.grad.numpy(), top)
    x2 = tinynet.tensor(x0, requires_grad=True)
    w2 = tinynet.tensor(w0, requires_grad=True)
    grads = tinynet.autograd.chain_rule(loss(x2, w2))
    np.testing.assert_allclose(grads[x2], want, rtol=1e-14, atol=1e-14)
