"""Every op's forward and backward against PyTorch (skipped when torch is absent)."""
import numpy as np
import pytest

import tinynet

from op_cases import CASES

torch = pytest.importorskip("torch")


def _as_tuple(x):
    return x if isinstance(x, tuple) else (x,)


def run(lib, case, arrays, make):
    inputs = [make(a) for a in arrays]
    outputs = _as_tuple(case.fn(lib, *inputs))
    rng = np.random.default_rng(1)
    weights = [rng.standard_normal(tuple(o.shape)) for o in outputs]
    total = sum((o * make(w, grad=False)).sum() for o, w in zip(outputs, weights, strict=True))
    total.backward()
    values = [np.asarray(o.detach().numpy()) for o in outputs]
    grads = [np.asarray(x.grad.numpy()) if x.grad is not None else None for x in inputs]
    return values, grads


def make_tinynet(a, grad=True):
    return tinynet.tensor(a, requires_grad=grad)


def make_torch(a, grad=True):
    return torch.tensor(a, requires_grad=grad)


@pytest.mark.parametrize("case", CASES, ids=str)
def test_matches_torch(case):
    arrays = case.inputs(seed=7)
    ours_values, ours_grads = run(tinynet, case, arrays, make_tinynet)
    ref_values, ref_grads = run(torch, case, arrays, make_torch)
    assert len(ours_values) == len(ref_values)
    for ours, ref in zip(ours_values, ref_values, strict=True):
        assert ours.shape == ref.shape
        np.testing.assert_allclose(ours, ref, rtol=1e-10, atol=1e-12)
    for ours, ref in zip(ours_grads, ref_grads, strict=True):
        assert (ours is None) == (ref is None)
        if ref is not None:
            np.testing.assert_allclose(ours, ref, rtol=1e-10, atol=1e-12)


def test_linear_matches_torch():
    rng = np.random.default_rng(0)
    x, w, b = rng.standard_normal((5, 4)), rng.standard_normal((3, 4)), rng.standard_normal(3)
    ours = [tinynet.tensor(a, requires_grad=True) for a in (x, w, b)]
    ref = [torch.tensor(a, requires_grad=True) for a in (x, w, b)]
    out = tinynet.ops.linear(*ours)
    out_ref = torch.nn.functional.linear(*ref)
    (out * out).sum().backward()
    (out_ref * out_ref).sum().backward()
    np.testing.assert_allclose(out.numpy(), out_ref.detach().numpy(), rtol=1e-12)
    for a, r in zip(ours, ref, strict=True):
        np.testing.assert_allclose(a.grad.numpy(), r.grad.numpy(), rtol=1e-12)


@pytest.mark.parametrize("permute", [(1, 0, 2), (2, 0, 1, 3), (0, 1, 2)])
@pytest.mark.parametrize("widths", [(3, 8), (8, 3)])          # (in, out)
def test_linear_backward_from_a_gradient_stored_in_another_order(permute, widths):
    """The gradient reaching a Linear laid out with its leading axes permuted (an RNN
    hands its batch-first input's gates back time-major) gives PyTorch's gradients."""
    rng = np.random.default_rng(1)
    shape = (4, 5, 2)[:len(permute) - 1] + (widths[0],)
    x, w, b = (rng.standard_normal(s) for s in (shape, widths[::-1], (widths[1],)))
    stored = rng.standard_normal(tuple(np.take(shape[:-1] + (widths[1],), permute)))
    grad = stored.transpose(np.argsort(permute))           # out's shape, stored permuted
    assert grad.flags.c_contiguous == (permute == (0, 1, 2))
    ours = [tinynet.tensor(a, requires_grad=True) for a in (x, w, b)]
    ref = [torch.tensor(a, requires_grad=True) for a in (x, w, b)]
    tinynet.ops.linear(*ours).backward(grad)
    torch.nn.functional.linear(*ref).backward(torch.from_numpy(np.ascontiguousarray(grad)))
    for a, r in zip(ours, ref, strict=True):
        np.testing.assert_allclose(a.grad.numpy(), r.grad.numpy(), rtol=1e-10, atol=1e-12)
