"""nn.utils gradient clipping against torch.nn.utils: returned norms and clipped gradients."""
import math

import numpy as np
import pytest

import tinynet
from tinynet import nn, optim

torch = pytest.importorskip("torch")


def parameter_pairs(grads, dtype=np.float64):
    ours = [nn.Parameter(tinynet.zeros(*g.shape, dtype=dtype)) for g in grads]
    ref = [torch.nn.Parameter(torch.zeros(g.shape, dtype=getattr(torch, np.dtype(dtype).name)))
           for g in grads]
    for p, q, g in zip(ours, ref, grads, strict=True):
        p.grad, q.grad = tinynet.tensor(g.astype(dtype)), torch.tensor(g.astype(dtype))
    return ours, ref


def gradients(scale=5.0, seed=3):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((3, 4)) * scale, rng.standard_normal(4) * scale,
            rng.standard_normal((2, 1, 3)) * scale]


def assert_same_grads(ours, ref, rtol=1e-14):
    for p, q in zip(ours, ref, strict=True):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=rtol, atol=0)


@pytest.mark.parametrize("norm_type", [2.0, 1, 3.5, 0.5, math.inf])
@pytest.mark.parametrize("max_norm", [1.5, 1e6])
def test_clip_grad_norm_matches_torch(norm_type, max_norm):
    ours, ref = parameter_pairs(gradients())
    ours.append(nn.Parameter(tinynet.zeros(2, dtype=tinynet.float64)))   # no gradient
    total = nn.utils.clip_grad_norm_(ours, max_norm, norm_type)
    total_ref = torch.nn.utils.clip_grad_norm_(ref, max_norm, norm_type)
    assert total.shape == () and total.dtype == np.float64
    assert total.item() == pytest.approx(total_ref.item(), rel=1e-14)
    assert_same_grads(ours[:-1], ref)
    assert ours[-1].grad is None


def test_clip_grad_norm_float32_matches_torch():
    ours, ref = parameter_pairs(gradients(), np.float32)
    total = nn.utils.clip_grad_norm_(ours, 2.0)
    total_ref = torch.nn.utils.clip_grad_norm_(ref, 2.0)
    assert total.dtype == np.float32
    assert total.item() == pytest.approx(total_ref.item(), rel=1e-6)
    assert_same_grads(ours, ref, rtol=1e-6)


@pytest.mark.parametrize("max_norm", [1e6, 0.4])       # the total norm is 0.47
def test_grads_under_the_limit_keep_their_bits_and_those_over_it_are_scaled(max_norm):
    """A factor of exactly 1 leaves the arrays untouched (PyTorch multiplies by
    it: the same bits); over the limit every gradient is scaled."""
    rng = np.random.default_rng(5)
    values = rng.standard_normal(64).astype(np.float32) / 16
    values[:3] = (-0.0, np.float32(1e-42), -np.float32(1e-42))    # -0 and subnormals
    ours, ref = parameter_pairs([values.reshape(8, 8), values[:5]], np.float32)
    arrays = [p.grad.array for p in ours]
    before = [a.copy() for a in arrays]
    nn.utils.clip_grad_norm_(ours, max_norm)
    torch.nn.utils.clip_grad_norm_(ref, max_norm)
    for p, q, array, old in zip(ours, ref, arrays, before, strict=True):
        assert p.grad.array is array
        if max_norm == 1e6:
            assert array.tobytes() == old.tobytes() == q.grad.numpy().tobytes()
        else:
            assert np.abs(array).sum() < np.abs(old).sum()
            np.testing.assert_allclose(array, q.grad.numpy(), rtol=1e-6, atol=0)


def test_clip_grad_norm_of_one_tensor_and_of_none():
    ours, ref = parameter_pairs(gradients()[:1])
    nn.utils.clip_grad_norm_(ours[0], 0.5)
    torch.nn.utils.clip_grad_norm_(ref[0], 0.5)
    assert_same_grads(ours, ref)
    empty = nn.utils.clip_grad_norm_([nn.Parameter(tinynet.zeros(2))], 1.0)
    assert empty.item() == torch.nn.utils.clip_grad_norm_([], 1.0).item() == 0.0
    assert empty.dtype == np.float32


@pytest.mark.parametrize("bad", [math.inf, math.nan])
def test_a_nonfinite_norm_reaches_the_grads_as_in_torch_or_raises(bad):
    grads = gradients()
    grads[1][0] = bad
    ours, ref = parameter_pairs(grads)
    total = nn.utils.clip_grad_norm_(ours, 1.0)
    total_ref = torch.nn.utils.clip_grad_norm_(ref, 1.0)
    np.testing.assert_equal(total.item(), total_ref.item())
    for p, q in zip(ours, ref, strict=True):
        np.testing.assert_array_equal(p.grad.numpy(), q.grad.numpy())
    ours, _ = parameter_pairs(grads)
    before = [p.grad.numpy().copy() for p in ours]
    with pytest.raises(RuntimeError, match="total norm of order 2.0 .* is non-finite"):
        nn.utils.clip_grad_norm_(ours, 1.0, error_if_nonfinite=True)
    for p, b in zip(ours, before, strict=True):
        np.testing.assert_array_equal(p.grad.numpy(), b)


def test_get_total_norm_and_clip_grads_with_norm_match_torch():
    ours, ref = parameter_pairs(gradients())
    total = nn.utils.get_total_norm([p.grad for p in ours], 3.0)
    total_ref = torch.nn.utils.get_total_norm([q.grad for q in ref], 3.0)
    assert total.item() == pytest.approx(total_ref.item(), rel=1e-14)
    nn.utils.clip_grads_with_norm_(ours, 2.0, total)
    torch.nn.utils.clip_grads_with_norm_(ref, 2.0, total_ref)
    assert_same_grads(ours, ref)


@pytest.mark.parametrize("clip_value", [0.0, 0.7, 100])
def test_clip_grad_value_matches_torch(clip_value):
    ours, ref = parameter_pairs(gradients(scale=1.0))
    assert nn.utils.clip_grad_value_(ours, clip_value) is None
    torch.nn.utils.clip_grad_value_(ref, clip_value)
    for p, q in zip(ours, ref, strict=True):
        np.testing.assert_array_equal(p.grad.numpy(), q.grad.numpy())


def test_optim_reexports_the_same_function():
    assert optim.clip_grad_norm_ is nn.utils.clip_grad_norm_


@pytest.mark.parametrize("call, error, message", [
    (lambda ps: nn.utils.clip_grad_norm_(ps, -1.0), ValueError,
     "clip_grad_norm_: max_norm must be >= 0"),
    (lambda ps: nn.utils.clip_grad_norm_(ps, 1.0, norm_type="fro"), TypeError,
     "clip_grad_norm_: norm_type must be a real number"),
    (lambda ps: nn.utils.clip_grad_value_(ps, -0.5), ValueError,
     "clip_grad_value_: clip_value must be >= 0"),
    (lambda ps: nn.utils.get_total_norm([p.grad for p in ps], 0), ValueError,
     "get_total_norm: norm_type must be above 0"),
])
def test_bad_arguments_are_named(call, error, message):
    ours, _ = parameter_pairs(gradients())
    with pytest.raises(error, match=message):
        call(ours)
