"""The in-place methods against PyTorch: values, dtypes, versions, and the rules that
keep them from corrupting gradients (refused on leaves that require grad in grad mode,
allowed under no_grad, detected by the version counter when a saved tensor changed)."""
import numpy as np
import pytest

import tinynet
from tinynet import nn


@pytest.fixture
def torch():
    return pytest.importorskip("torch")


def assert_same(ours, ref, rtol=1e-12, atol=1e-14):
    ref = ref.detach().numpy()
    assert ours.shape == ref.shape and str(ours.dtype) == str(ref.dtype)
    np.testing.assert_allclose(ours.numpy(), ref, rtol=rtol, atol=atol)


IN_PLACE = [
    ("add_", lambda lib, x, y: x.add_(y)),
    ("add_alpha", lambda lib, x, y: x.add_(y, alpha=-0.5)),
    ("sub_alpha", lambda lib, x, y: x.sub_(y[0], alpha=2)),
    ("mul_", lambda lib, x, y: x.mul_(y)),
    ("mul_scalar", lambda lib, x, y: x.mul_(3)),
    ("div_", lambda lib, x, y: x.div_(y)),
    ("zero_", lambda lib, x, y: x.zero_()),
    ("fill_", lambda lib, x, y: x.fill_(2.5)),
    ("fill_0d_tensor", lambda lib, x, y: x.fill_(y[0, 1])),
    ("copy_broadcast", lambda lib, x, y: x.copy_(y[0])),
    ("copy_other_dtype", lambda lib, x, y: x.copy_(y.double())),
    ("clamp_", lambda lib, x, y: x.clamp_(-0.5, 0.5)),
    ("clamp_min", lambda lib, x, y: x.clamp_(min=0.1)),
    ("clamp_max_tensor", lambda lib, x, y: x.clamp_(max=y)),
    ("float64_into_float32", lambda lib, x, y: x.add_(lib.ones(3, dtype=lib.float64) / 3)),
]


@pytest.mark.parametrize("name, fn", IN_PLACE, ids=[n for n, _ in IN_PLACE])
def test_in_place_matches_torch_and_returns_self(torch, name, fn):
    rng = np.random.default_rng(4)
    x, y = rng.standard_normal((2, 3)).astype(np.float32), rng.standard_normal((2, 3))
    ours, ref = tinynet.tensor(x), torch.tensor(x)
    y_ours, y_ref = tinynet.tensor(y.astype(np.float32)), torch.tensor(y.astype(np.float32))
    assert fn(tinynet, ours, y_ours) is ours
    fn(torch, ref, y_ref)
    assert_same(ours, ref, rtol=1e-6, atol=1e-7)
    assert ours._version == ref._version == 1


@pytest.mark.parametrize("dtype, fn", [
    ("int64", lambda x: x.add_(1.5)), ("int64", lambda x: x.div_(2)),
    ("int64", lambda x: x.mul_(2.0)), ("int64", lambda x: x.clamp_(min=0.5)),
    ("int64", lambda x: x.add_(1, alpha=0.5)), ("bool", lambda x: x.add_(1)),
])
def test_in_place_refuses_what_torch_cannot_cast(torch, dtype, fn):
    with pytest.raises(RuntimeError):
        fn(torch.zeros(3, dtype=getattr(torch, dtype)))
    with pytest.raises(RuntimeError, match="can't be cast|alpha"):
        fn(tinynet.zeros(3, dtype=dtype))


def test_in_place_converts_like_torch_where_torch_does(torch):
    for fn in (lambda x: x.fill_(1.5), lambda x: x.copy_(x.new_full((3,), -1.7, dtype=x.dtype)),
               lambda x: x.add_(True), lambda x: x.mul_(3)):
        ours, ref = tinynet.zeros(3, dtype="int64"), torch.zeros(3, dtype=torch.int64)
        fn(ours)
        fn(ref)
        assert_same(ours, ref)


def test_in_place_shape_and_memory_errors():
    with pytest.raises(RuntimeError, match=r"add_\(\).*shape \(3,\)"):
        tinynet.zeros(3).add_(tinynet.ones(2, 3))
    with pytest.raises(RuntimeError, match="copy_"):
        tinynet.zeros(3).copy_(tinynet.ones(2, 3))
    with pytest.raises(RuntimeError, match="read-only.*clone"):
        tinynet.zeros(1, 3).expand(2, 3).zero_()
    with pytest.raises(TypeError, match="copy_"):
        tinynet.zeros(3).copy_([1, 2, 3])


def test_in_place_on_0d_and_comparison_results():
    x = tinynet.tensor(2.0)
    assert x.mul_(3).item() == 6.0
    flag = tinynet.tensor(1.0) > 0                 # a 0-d bool result
    assert flag.fill_(False).item() is False


def test_leaf_that_requires_grad_is_refused_under_grad_mode(torch):
    w_ref = torch.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        w_ref.add_(1)
    w = tinynet.ones(3, requires_grad=True)
    for fn, name in [(lambda: w.add_(1), "add_"), (lambda: w.zero_(), "zero_"),
                     (lambda: w.copy_(tinynet.zeros(3)), "copy_"),
                     (lambda: w.clamp_(0, 1), "clamp_")]:
        with pytest.raises(RuntimeError, match=name + r"\(\): a leaf Variable that requires "
                                                      "grad is being used in an in-place"):
            fn()
    assert w._version == 0 and (w.numpy() == 1).all()


def test_in_place_is_allowed_under_no_grad_and_outside_autograd():
    w = tinynet.ones(3, requires_grad=True)
    with tinynet.no_grad():
        w.mul_(2).sub_(tinynet.ones(3), alpha=0.5)
    np.testing.assert_array_equal(w.numpy(), [1.5, 1.5, 1.5])
    assert w.requires_grad and w.is_leaf and w._version == 2
    buffer = tinynet.zeros(3)                       # requires no grad: fine in grad mode
    buffer.add_(w.detach())
    (w * w).sum().backward()
    w.grad.zero_()
    np.testing.assert_array_equal(w.grad.numpy(), 0)


def test_non_leaf_and_grad_requiring_operands_are_refused():
    w = tinynet.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"mul_\(\): the tensor is the output of Exp"):
        w.exp().mul_(2)
    with pytest.raises(RuntimeError, match=r"add_\(\): an operand requires grad"):
        tinynet.zeros(3).add_(w)
    with tinynet.no_grad():
        tinynet.zeros(3).add_(w)


def test_modified_saved_input_is_detected_like_torch(torch):
    w_ref, c_ref = torch.ones(3, requires_grad=True), torch.ones(3)
    y_ref = w_ref * c_ref
    c_ref.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y_ref.sum().backward()
    w, c = tinynet.ones(3, requires_grad=True), tinynet.ones(3)
    y = w * c
    c.mul_(2)
    with pytest.raises(RuntimeError, match=r"modified by an inplace operation: input 1 of Mul "
                                           r"\(a tensor of shape \(3,\)\) is at version 1; "
                                           "expected version 0"):
        y.sum().backward()


def test_modified_leaf_under_no_grad_is_detected():
    w = tinynet.ones(3, requires_grad=True)
    y = (w * w).sum()
    with tinynet.no_grad():
        w.add_(1)
        w.add_(1)
    with pytest.raises(RuntimeError, match="input 0 of Mul .* is at version 2; expected version 0"):
        y.backward()


def test_modified_output_is_detected_like_torch(torch):
    w_ref = torch.ones(3, requires_grad=True)
    y_ref = w_ref.exp()
    with torch.no_grad():
        y_ref.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y_ref.sum().backward()
    w = tinynet.ones(3, requires_grad=True)
    y = w.exp()
    with tinynet.no_grad():
        y.mul_(2)
    with pytest.raises(RuntimeError, match="output 0 of Exp is at version 1"):
        y.sum().backward()


def test_ops_that_do_not_read_their_inputs_allow_changes_like_torch(torch):
    for lib, no_grad in ((torch, torch.no_grad), (tinynet, tinynet.no_grad)):
        w, c = lib.ones(3, requires_grad=True), lib.ones(3)
        y = (w + c).exp().reshape(3, 1).sum()
        c.add_(1)                                   # Add's backward needs shapes only
        with no_grad():
            w.add_(1)                               # Exp's backward reads its output
        y.backward()
        np.testing.assert_allclose(np.asarray(w.grad.numpy()), np.exp(2.0), rtol=1e-6)


def test_changes_after_backward_are_fine():
    w = tinynet.ones(3, requires_grad=True)
    y = (w * w).sum()
    y.backward(retain_graph=True)
    with tinynet.no_grad():
        w.sub_(w.grad, alpha=0.1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()                                # the retained graph saw w at version 0


def test_manual_sgd_with_in_place_updates_matches_torch(torch):
    rng = np.random.default_rng(5)
    a, b, x0 = rng.standard_normal((6, 4)), rng.standard_normal(6), rng.standard_normal(4)
    paths = []
    for lib in (tinynet, torch):
        x = lib.tensor(x0, requires_grad=True)
        A, B = lib.tensor(a), lib.tensor(b)
        for _ in range(5):
            r = A @ x - B
            (r * r).sum().backward()
            with lib.no_grad():
                x.sub_(x.grad, alpha=0.05).clamp_(-1, 1)
            x.grad.zero_()
        paths.append(x.detach().numpy().copy())
    np.testing.assert_allclose(paths[0], paths[1], rtol=1e-12)


def test_optimizer_steps_still_work():
    layer = nn.Linear(4, 2)
    opt = tinynet.optim.SGD(layer.parameters(), lr=0.1)
    before = layer.weight.numpy().copy()
    for _ in range(2):
        opt.zero_grad()
        layer(tinynet.ones(3, 4)).sum().backward()
        opt.step()
    assert not np.allclose(layer.weight.numpy(), before)
