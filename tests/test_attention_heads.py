"""The attention of every head at once (kernels/ops/attention_heads_cpu.py) against its
spec's composite of batched products (kernels/ops/attention_heads_spec.py), and the
cases it leaves to that composite."""
import numpy as np
import pytest

import tinynet
from tinynet.backend import get_backend
from tinynet.kernels.ops import attention_heads_cpu, attention_heads_spec
from tinynet.nn import functional as F

needs_kernels = pytest.mark.skipif(
    attention_heads_cpu.small_kernels() is None,
    reason="NumPy's OpenBLAS has no small-matrix kernels for this CPU")


@pytest.fixture
def products_only(monkeypatch):
    """The spec's products and softmax: the all-heads loops switched off."""
    def without_heads():
        monkeypatch.setattr(attention_heads_cpu, "small_kernels", lambda: None)
    return without_heads


def attention_and_grads(make_inputs, **options):
    """The output and the gradients of q, k and v (and of the mask, if it is a leaf)."""
    leaves, (q, k, v, mask) = make_inputs()
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, **options)
    weights = np.random.default_rng(1).standard_normal(out.shape).astype(out.dtype)
    (out * tinynet.tensor(weights)).sum().backward()
    return out.numpy(), [leaf.grad.numpy() for leaf in leaves]


def gpt_heads(batch=3, steps=10, heads=2, width=8, dtype=np.float32):
    """q, k and v as a GPT makes them: views of one projection (B, T, 3, heads, E)."""
    data = np.random.default_rng(0).standard_normal((batch, steps, 3, heads, width))

    def make():
        projection = tinynet.tensor(data.astype(dtype), requires_grad=True)
        q, k, v = projection.permute(2, 0, 3, 1, 4).unbind(0)
        return [projection], (q, k, v, None)
    return make


def separate(shapes, mask=None, dtype=np.float32):
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s).astype(dtype) for s in shapes]

    def make():
        leaves = [tinynet.tensor(a, requires_grad=True) for a in arrays]
        return leaves, (*leaves, mask)
    return make


def assert_same_attention(make, products_only, **options):
    ours = attention_and_grads(make, **options)
    products_only()
    spec = attention_and_grads(make, **options)
    for a, b in zip([ours[0], *ours[1]], [spec[0], *spec[1]], strict=True):
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-6)
    return ours


@needs_kernels
@pytest.mark.parametrize("is_causal", [True, False])
def test_gpt_heads_match_the_products(products_only, is_causal):
    assert_same_attention(gpt_heads(), products_only, is_causal=is_causal)


@needs_kernels
@pytest.mark.parametrize("mask_kind", ["bool", "float"])
def test_cross_attention_with_a_mask_matches_the_products(products_only, mask_kind):
    rng = np.random.default_rng(2)
    allowed = rng.random((5, 7)) < 0.7
    allowed[:, 0] = True
    mask = allowed if mask_kind == "bool" else np.where(allowed, 0.0, -np.inf).astype(np.float32)
    assert_same_attention(separate([(2, 3, 5, 4), (2, 3, 7, 4), (2, 3, 7, 6)], mask),
                          products_only, scale=0.3)


@needs_kernels
def test_a_query_with_every_key_masked_gets_zeros(products_only):
    mask = np.ones((4, 6), dtype=bool)
    mask[2] = False
    out, grads = assert_same_attention(
        separate([(1, 2, 4, 3), (1, 2, 6, 3), (1, 2, 6, 3)], mask), products_only)
    assert np.all(out[:, :, 2] == 0) and np.all(grads[0][:, :, 2] == 0)


@needs_kernels
def test_the_kernel_runs_for_the_gpt_and_lays_out_its_results_as_the_inputs():
    q, k, v = (np.random.default_rng(0).standard_normal((2, 6, 3, 2, 4)).astype(np.float32)
               .transpose(2, 0, 3, 1, 4))
    assert attention_heads_cpu.runs_all_heads(q, k, v, None)
    out, weights = attention_heads_cpu.attention_heads_forward(q, k, v, None, 0.5)
    assert out.transpose(0, 2, 1, 3).flags.c_contiguous and weights.flags.c_contiguous
    needs = (True, True, True, False)
    grads = attention_heads_cpu.attention_heads_backward(q, k, v, weights, None, out, None, 0.5,
                                                         needs, None)
    assert grads[3] is None
    for grad, x in zip(grads[:3], (q, k, v), strict=True):
        assert grad.shape == x.shape
        assert np.argsort(grad.strides).tolist() == np.argsort(x.strides).tolist()


@pytest.mark.parametrize("case", ["float64", "broadcast batch", "mask per batch",
                                  "scattered rows", "3-D", "dropout"])
def test_cases_it_leaves_to_the_spec_give_the_specs_results(case):
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((2, 3, 5, 4)).astype(np.float32) for _ in range(3))
    bias = drop = None
    if case == "float64":
        q, k, v = (a.astype(np.float64) for a in (q, k, v))
    elif case == "broadcast batch":
        k = k[:1]
    elif case == "mask per batch":
        bias = np.zeros((2, 1, 5, 5), np.float32)
    elif case == "scattered rows":
        q = np.asfortranarray(q)
    elif case == "3-D":
        q, k, v = q[0], k[0], v[0]
    elif case == "dropout":
        drop = (rng.random((2, 3, 5, 5)) > 0.3).astype(np.float32) / np.float32(0.7)
    assert not attention_heads_cpu.runs_all_heads(q, k, v, bias, drop)
    ours = attention_heads_cpu.attention_heads_forward(q, k, v, bias, 0.5, drop)
    spec = attention_heads_spec.attention_heads_forward(q, k, v, bias, 0.5, drop)
    for a, b in zip(ours, spec, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    grad = rng.standard_normal(ours[0].shape).astype(q.dtype)
    needs = (True, True, True, bias is not None)
    ours = attention_heads_cpu.attention_heads_backward(q, k, v, spec[1], drop, grad, None, 0.5,
                                                        needs, None if bias is None else bias.shape)
    spec = attention_heads_spec.attention_heads_backward(q, k, v, spec[1], drop, grad, None, 0.5,
                                                         needs,
                                                         None if bias is None else bias.shape)
    for a, b in zip(ours, spec, strict=True):
        if b is None:
            assert a is None
        else:
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_without_the_library_kernels_the_spec_runs(monkeypatch):
    monkeypatch.setattr(attention_heads_cpu, "small_kernels", lambda: None)
    q = np.zeros((1, 1, 2, 2), np.float32)
    assert not attention_heads_cpu.runs_all_heads(q, q, q, None)
    make = gpt_heads(steps=4)
    out, grads = attention_and_grads(make, is_causal=True)
    assert np.isfinite(out).all() and np.abs(grads[0]).sum() > 0


def test_dropout_and_a_mask_that_learns_keep_to_the_spec(monkeypatch):
    calls = []
    forward, backward = attention_heads_cpu._forward_heads, attention_heads_cpu._backward_heads
    monkeypatch.setattr(attention_heads_cpu, "_forward_heads",
                        lambda *a: calls.append("forward") or forward(*a))
    monkeypatch.setattr(attention_heads_cpu, "_backward_heads",
                        lambda *a: calls.append("backward") or backward(*a))
    make = gpt_heads(steps=4)
    leaves, (q, k, v, _) = make()
    F.scaled_dot_product_attention(q, k, v, dropout_p=0.5).sum().backward()
    assert calls == []
    mask = tinynet.tensor(np.zeros((4, 4), np.float32), requires_grad=True)
    leaves, (q, k, v, _) = make()
    F.scaled_dot_product_attention(q, k, v, attn_mask=mask).sum().backward()
    expected = ["forward"] if attention_heads_cpu.small_kernels() is not None else []
    assert calls == expected and mask.grad is not None


def test_the_cpu_table_runs_the_kernel_and_the_reference_rung_the_spec():
    table = get_backend("cpu").kernels
    assert table.attention_heads_forward is attention_heads_cpu.attention_heads_forward
    with tinynet.use_kernels("reference"):
        assert table.attention_heads_backward is attention_heads_spec.attention_heads_backward
