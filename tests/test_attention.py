"""Scaled dot-product attention (the fused node) and MultiheadAttention, against
finite differences, the composite form and PyTorch."""
import numpy as np
import pytest

import tinynet
from tinynet import nn
from tinynet.nn import functional as F
from tinynet.testing import gradcheck

from composite import composite_attention

torch = pytest.importorskip("torch")
TF = torch.nn.functional
TOL = dict(rtol=1e-10, atol=1e-10)


def arrays(*shapes, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s) for s in shapes]


def ours_and_grads(fn, inputs, seed=1):
    """fn's outputs and the gradients of Σ out·w (fixed random w) w.r.t. every float input."""
    leaves = [tinynet.tensor(a, requires_grad=a.dtype == np.float64) for a in inputs]
    outs = fn(*leaves)
    outs = outs if isinstance(outs, tuple) else (outs,)
    rng = np.random.default_rng(seed)
    total = None
    for o in outs:
        if o is not None:
            term = (o * tinynet.tensor(rng.standard_normal(o.shape))).sum()
            total = term if total is None else total + term
    total.backward()
    return ([None if o is None else o.numpy() for o in outs],
            [t.grad.numpy() if t.requires_grad else None for t in leaves])


def torch_and_grads(fn, inputs, seed=1):
    leaves = [torch.tensor(a, requires_grad=a.dtype == np.float64) for a in inputs]
    outs = fn(*leaves)
    outs = outs if isinstance(outs, tuple) else (outs,)
    rng = np.random.default_rng(seed)
    total = sum((o * torch.tensor(rng.standard_normal(tuple(o.shape)))).sum()
                for o in outs if o is not None)
    total.backward()
    return ([None if o is None else o.detach().numpy() for o in outs],
            [t.grad.numpy() if t.requires_grad else None for t in leaves])


def assert_all_close(ours, theirs, **tol):
    for a, b in zip(ours, theirs, strict=True):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_allclose(a, b, **(tol or TOL))


# ------------------------------------------------------ the fused SDPA node
def test_sdpa_gradcheck_with_a_float_mask():
    q, k, v, m = (tinynet.tensor(a, requires_grad=True)
                  for a in arrays((2, 3, 4), (2, 5, 4), (2, 5, 3), (3, 5)))
    assert gradcheck(lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m),
                     [q, k, v, m])


def test_sdpa_gradcheck_with_a_float_mask_of_the_scores_shape():
    q, k, v, m = (tinynet.tensor(a, requires_grad=True)
                  for a in arrays((2, 3, 4), (2, 5, 4), (2, 5, 3), (2, 3, 5)))
    assert gradcheck(lambda m: F.scaled_dot_product_attention(q, k, v, attn_mask=m), [m])


def test_sdpa_gradcheck_with_bool_mask_causal_and_scale():
    q, k, v = (tinynet.tensor(a, requires_grad=True) for a in arrays((2, 4, 3), (2, 4, 3),
                                                                      (2, 4, 2)))
    mask = np.random.default_rng(3).random((4, 4)) < 0.7
    mask[:, 0] = True
    assert gradcheck(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=mask),
                     [q, k, v])
    assert gradcheck(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True,
                                                                    scale=0.3), [q, k, v])


def _masks(L, S, lead=()):
    rng = np.random.default_rng(7)
    keep = rng.random(lead + (L, S)) < 0.6
    keep[..., 0] = True
    return {"none": None, "bool": keep, "float": rng.standard_normal(lead + (L, S))}


@pytest.mark.parametrize("lead", [(), (2,), (2, 3), (2, 1, 3)])
@pytest.mark.parametrize("L, S", [(4, 4), (3, 5), (5, 2)])
@pytest.mark.parametrize("mask_kind", ["none", "bool", "float", "causal"])
def test_sdpa_matches_torch(lead, L, S, mask_kind):
    q, k, v = arrays(lead + (L, 4), lead + (S, 4), lead + (S, 3))
    mask = None if mask_kind == "causal" else _masks(L, S, lead[-1:])[mask_kind]
    causal = mask_kind == "causal"
    inputs = [q, k, v] if mask is None else [q, k, v, mask]

    def ours(q, k, v, m=None):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=m, is_causal=causal)

    def theirs(q, k, v, m=None):
        return TF.scaled_dot_product_attention(q, k, v, attn_mask=m, is_causal=causal)

    out, grads = ours_and_grads(ours, inputs)
    assert_all_close(out + grads, sum(torch_and_grads(theirs, inputs), []))


def test_sdpa_broadcast_batch_axes_match_torch_on_expanded_inputs():
    q, k, v, m = arrays((2, 1, 3, 4), (1, 3, 5, 4), (3, 5, 2), (1, 3, 5))
    out, grads = ours_and_grads(lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, m),
                                [q, k, v, m])
    shape = (2, 3)
    ref = torch_and_grads(lambda q, k, v, m: TF.scaled_dot_product_attention(
        q.expand(*shape, 3, 4), k.expand(*shape, 5, 4), v.expand(*shape, 5, 2),
        m.expand(*shape, 3, 5)), [q, k, v, m])
    assert out[0].shape == (2, 3, 3, 2)
    assert_all_close(out + grads, sum(ref, []))


def test_sdpa_fully_masked_query_row_gives_zero_output_and_gradients_as_torch():
    q, k, v = arrays((2, 3, 4), (2, 5, 4), (2, 5, 4))
    mask = np.ones((3, 5), dtype=bool)
    mask[1] = False
    out, grads = ours_and_grads(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, mask),
                                [q, k, v])
    assert np.all(out[0][:, 1] == 0) and np.all(grads[0][:, 1] == 0)
    ref = torch_and_grads(lambda q, k, v: TF.scaled_dot_product_attention(
        q, k, v, torch.tensor(mask)), [q, k, v])
    assert_all_close(out + grads, sum(ref, []))


def test_output_and_gradients_are_laid_out_as_the_inputs():
    """q, k and v as a GPT makes them, views of one projection (B, L, 3, heads, E): the
    output is laid out as q, so that gathering the heads back is a view, and the values
    and gradients are those of contiguous q, k and v."""
    projection = np.random.default_rng(0).standard_normal((2, 5, 3, 4, 6))
    weights = tinynet.tensor(np.random.default_rng(1).standard_normal((2, 5, 24)))
    leaf = tinynet.tensor(projection, requires_grad=True)
    q, k, v = leaf.permute(2, 0, 3, 1, 4).unbind(0)
    out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    heads = out.transpose(1, 2).reshape(2, 5, 24)
    (heads * weights).sum().backward()
    assert np.shares_memory(heads.numpy(), out.numpy())

    separate = [tinynet.tensor(np.ascontiguousarray(a), requires_grad=True)
                for a in projection.transpose(2, 0, 3, 1, 4)]
    ref = F.scaled_dot_product_attention(*separate, is_causal=True)
    (ref.transpose(1, 2).reshape(2, 5, 24) * weights).sum().backward()
    np.testing.assert_allclose(out.numpy(), ref.numpy(), **TOL)
    ref_grad = np.stack([t.grad.numpy() for t in separate]).transpose(1, 3, 0, 2, 4)
    np.testing.assert_allclose(leaf.grad.numpy(), ref_grad, **TOL)


@pytest.mark.parametrize("mask_kind", ["none", "bool", "float", "causal"])
def test_fused_attention_agrees_with_the_composite(mask_kind):
    q, k, v = arrays((2, 3, 5, 4), (2, 3, 5, 4), (2, 3, 5, 6))
    if mask_kind == "causal":
        mask = np.tril(np.ones((5, 5), dtype=bool))
    else:
        mask = _masks(5, 5)[mask_kind]
    inputs = [q, k, v] if mask is None or mask.dtype == bool else [q, k, v, mask]

    def fused(q, k, v, m=None):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask if m is None else m,
                                              scale=0.7)

    def composite(q, k, v, m=None):
        return composite_attention(q, k, v, mask if m is None else m, scale=0.7)

    out, grads = ours_and_grads(fused, inputs)
    ref_out, ref_grads = ours_and_grads(composite, inputs)
    assert_all_close(out + grads, ref_out + ref_grads, rtol=1e-10, atol=1e-12)


def _uniform_problem(batch=64, queries=64, keys=32):
    """q = k = 0: every weight is 1/S; v = I makes the output the (dropped) weights."""
    q = tinynet.zeros(batch, queries, 4, dtype=tinynet.float64, requires_grad=True)
    k = tinynet.zeros(batch, keys, 4, dtype=tinynet.float64)
    v = tinynet.tensor(np.broadcast_to(np.eye(keys), (batch, keys, keys)).copy())
    return q, k, v


def test_dropout_keeps_the_mean_and_drops_a_fraction_p():
    p, keys = 0.5, 32
    q, k, v = _uniform_problem(keys=keys)
    kept = F.scaled_dot_product_attention(q, k, v, dropout_p=p).numpy()
    n = kept.size
    dropped = np.mean(kept == 0)
    assert abs(dropped - p) < 4 * np.sqrt(p * (1 - p) / n)
    np.testing.assert_allclose(kept[kept != 0], 1 / (keys * (1 - p)), rtol=1e-12)
    row_sums = kept.sum(axis=-1)            # mean 1; each sum has variance p / ((1 − p) S)
    standard_error = np.sqrt(p / ((1 - p) * keys) / row_sums.size)
    assert abs(row_sums.mean() - 1) < 4 * standard_error
    again = F.scaled_dot_product_attention(q, k, v, dropout_p=p).numpy()
    assert not np.array_equal(kept == 0, again == 0)


def test_dropout_mask_repeats_under_a_seed_and_its_gradients_check():
    q, k, v = (tinynet.tensor(a, requires_grad=True) for a in arrays((2, 3, 4), (2, 4, 4),
                                                                      (2, 4, 3)))

    def seeded(q, k, v):
        tinynet.manual_seed(11)
        return F.scaled_dot_product_attention(q, k, v, dropout_p=0.5)

    np.testing.assert_array_equal(seeded(q, k, v).numpy(), seeded(q, k, v).numpy())
    assert not np.allclose(seeded(q, k, v).numpy(),
                           F.scaled_dot_product_attention(q, k, v).numpy())
    assert gradcheck(seeded, [q, k, v])


@pytest.mark.parametrize("call, error, message", [
    (lambda q, k, v: F.scaled_dot_product_attention(q[0, 0], k, v), ValueError, "at least 2"),
    (lambda q, k, v: F.scaled_dot_product_attention(q, k[..., :3], v), ValueError, "last dim"),
    (lambda q, k, v: F.scaled_dot_product_attention(q, k, v[:, :4]), ValueError, "positions"),
    (lambda q, k, v: F.scaled_dot_product_attention(q, k[:1].repeat(3, 1, 1), v[:1]),
     ValueError, "broadcast"),
    (lambda q, k, v: F.scaled_dot_product_attention(q, k.float(), v), TypeError, "one dtype"),
    (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=np.ones((3, 4))),
     ValueError, r"\(3, 4\)"),
    (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=np.ones((3, 5), "f4")),
     TypeError, "float32"),
    (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=np.ones((3, 5), bool),
                                                    is_causal=True), ValueError, "not both"),
    (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, dropout_p=1.0), ValueError,
     "dropout_p"),
    (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, dropout_p=-0.1), ValueError,
     "dropout_p"),
    (lambda q, k, v: F.scaled_dot_product_attention(q.type(tinynet.int64), k, v), ValueError,
     "floating"),
])
def test_sdpa_errors(call, error, message):
    q, k, v = (tinynet.tensor(a) for a in arrays((2, 3, 4), (2, 5, 4), (2, 5, 3)))
    with pytest.raises(error, match=message):
        call(q, k, v)


# ------------------------------------------------------- MultiheadAttention
def mha_pair(embed_dim=6, num_heads=2, seed=0, **kw):
    """tinynet's and torch's layers with the same random weights (torch's state dict)."""
    ref = torch.nn.MultiheadAttention(embed_dim, num_heads, **kw).double()
    rng = np.random.default_rng(seed)
    ref.load_state_dict({name: torch.tensor(rng.standard_normal(tuple(t.shape)) * 0.5)
                         for name, t in ref.state_dict().items()})
    ours = nn.MultiheadAttention(embed_dim, num_heads, dtype=tinynet.float64, **kw)
    ours.load_state_dict({name: t.numpy() for name, t in ref.state_dict().items()})
    return ours, ref


def _mha_masks(kind, N, H, L, S, batched=True):
    rng = np.random.default_rng(5)
    lead = (N * H,) if batched else (H,)
    blocked = rng.random((L, S)) < 0.3
    blocked[:, 0] = False
    padding = rng.random((N, S) if batched else (S,)) < 0.3
    padding[..., 1] = False
    blocked3 = rng.random(lead + (L, S)) < 0.3
    blocked3[..., 2] = False
    return {"none": {}, "attn_bool": {"attn_mask": blocked},
            "attn_float": {"attn_mask": rng.standard_normal((L, S))},
            "attn_3d": {"attn_mask": blocked3}, "pad_bool": {"key_padding_mask": padding},
            "pad_float": {"key_padding_mask": rng.standard_normal(padding.shape)},
            "both": {"attn_mask": blocked, "key_padding_mask": padding}}[kind]


def compare_mha(ours, ref, inputs, masks=(), self_attention=False, **kw):
    """Outputs, weights, input and parameter gradients of both layers, to TOL."""
    def run(layer, tensor):
        converted = {name: tensor(m) for name, m in dict(masks).items()}
        return lambda *xs: layer(*(xs * 3 if self_attention else xs), **converted, **kw)
    ours_result = ours_and_grads(run(ours, tinynet.tensor), inputs)
    ref_result = torch_and_grads(run(ref, torch.tensor), inputs)
    assert_all_close(sum(ours_result, []), sum(ref_result, []))
    theirs = dict(ref.named_parameters())
    for name, p in ours.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), theirs[name].grad.numpy(), err_msg=name,
                                   **TOL)


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("mask_kind", ["none", "attn_bool", "attn_float", "attn_3d", "pad_bool",
                                       "pad_float", "both"])
@pytest.mark.parametrize("need_weights, average", [(True, True), (True, False), (False, True)])
def test_mha_cross_attention_matches_torch(batch_first, mask_kind, need_weights, average):
    N, H, L, S, E = 3, 2, 4, 5, 6
    ours, ref = mha_pair(E, H, batch_first=batch_first)
    shape = (lambda T: (N, T, E)) if batch_first else (lambda T: (T, N, E))
    q, k, v = arrays(shape(L), shape(S), shape(S), seed=2)
    compare_mha(ours, ref, [q, k, v], masks=_mha_masks(mask_kind, N, H, L, S),
                need_weights=need_weights, average_attn_weights=average)


@pytest.mark.parametrize("mask_kind", ["none", "attn_3d", "pad_bool", "both"])
@pytest.mark.parametrize("need_weights", [True, False])
def test_mha_unbatched_self_attention_matches_torch(mask_kind, need_weights):
    ours, ref = mha_pair(6, 3)
    x, = arrays((5, 6), seed=3)
    compare_mha(ours, ref, [x], self_attention=True, need_weights=need_weights,
                masks=_mha_masks(mask_kind, 1, 3, 5, 5, batched=False),
                average_attn_weights=False)


@pytest.mark.parametrize("need_weights", [True, False])
@pytest.mark.parametrize("padding", [False, True])
def test_mha_is_causal_hint_matches_torch(need_weights, padding):
    ours, ref = mha_pair(4, 2, bias=False, batch_first=True)
    x, = arrays((2, 5, 4), seed=4)
    masks = {"attn_mask": np.triu(np.ones((5, 5), dtype=bool), 1)}
    if padding:
        masks["key_padding_mask"] = np.array([[False] * 5, [False] * 3 + [True] * 2])
    compare_mha(ours, ref, [x], self_attention=True, masks=masks, need_weights=need_weights,
                is_causal=True)


def test_mha_fully_masked_query_gives_zero_attention():
    ours, ref = mha_pair(4, 2)
    x, = arrays((3, 2, 4), seed=5)
    blocked = np.zeros((3, 3), dtype=bool)
    blocked[1] = True
    compare_mha(ours, ref, [x], self_attention=True, masks={"attn_mask": blocked},
                need_weights=False)
    out, weights = ours(*[tinynet.tensor(x)] * 3, attn_mask=blocked)
    np.testing.assert_array_equal(weights.numpy()[:, 1], 0)      # torch gives NaN here
    np.testing.assert_allclose(out.numpy()[1], np.broadcast_to(ours.out_proj.bias.numpy(),
                                                               (2, 4)))


def test_mha_state_dicts_interchange_with_torch():
    ref = torch.nn.MultiheadAttention(8, 4).double()
    ours = nn.MultiheadAttention(8, 4, dtype=tinynet.float64)
    assert list(ours.state_dict()) == list(ref.state_dict())
    ours.load_state_dict({k: v.numpy() for k, v in ref.state_dict().items()})
    x, = arrays((3, 2, 8))
    np.testing.assert_allclose(ours(*[tinynet.tensor(x)] * 3)[0].numpy(),
                               ref(*[torch.tensor(x)] * 3)[0].detach().numpy(), **TOL)
    back = nn.MultiheadAttention(8, 4, dtype=tinynet.float64)
    ref.load_state_dict({k: torch.tensor(v.numpy()) for k, v in back.state_dict().items()})
    np.testing.assert_allclose(back(*[tinynet.tensor(x)] * 3)[0].numpy(),
                               ref(*[torch.tensor(x)] * 3)[0].detach().numpy(), **TOL)


def test_mha_init_follows_torch():
    E = 64
    mha = nn.MultiheadAttention(E, 8)
    w = mha.in_proj_weight.numpy()
    xavier = np.sqrt(6 / (E + 3 * E))
    assert w.shape == (3 * E, E) and 0.95 * xavier < np.abs(w).max() <= xavier
    assert abs(w.std() - xavier / np.sqrt(3)) < 0.05 * xavier
    out = mha.out_proj.weight.numpy()
    assert 0.95 / np.sqrt(E) < np.abs(out).max() <= 1 / np.sqrt(E)
    assert not mha.in_proj_bias.numpy().any() and not mha.out_proj.bias.numpy().any()
    assert isinstance(mha.out_proj, nn.Linear)
    no_bias = nn.MultiheadAttention(E, 8, bias=False)
    assert no_bias.in_proj_bias is None and no_bias.out_proj.bias is None
    assert [n for n, _ in no_bias.named_parameters()] == ["in_proj_weight", "out_proj.weight"]


def test_mha_dropout_only_in_training_and_the_same_in_both_paths():
    mha = nn.MultiheadAttention(8, 2, dropout=0.5, dtype=tinynet.float64)
    plain = nn.MultiheadAttention(8, 2, dtype=tinynet.float64)
    plain.load_state_dict(mha.state_dict())
    x = tinynet.tensor(arrays((6, 3, 8))[0])
    np.testing.assert_array_equal(mha.eval()(x, x, x)[0].numpy(), plain(x, x, x)[0].numpy())
    mha.train()
    first, second = mha(x, x, x)[0].numpy(), mha(x, x, x)[0].numpy()
    assert not np.allclose(first, second) and not np.allclose(first, plain(x, x, x)[0].numpy())
    tinynet.manual_seed(3)
    with_weights, weights = mha(x, x, x, average_attn_weights=False)
    tinynet.manual_seed(3)
    without = mha(x, x, x, need_weights=False)[0]
    np.testing.assert_allclose(with_weights.numpy(), without.numpy(), rtol=1e-12, atol=1e-12)
    assert np.mean(weights.numpy() == 0) > 0.3           # the returned weights are dropped


@pytest.mark.parametrize("need_weights, mask_grad", [
    (True, True), (False, False), (False, True)])
def test_mha_gradcheck(need_weights, mask_grad):
    mha = nn.MultiheadAttention(4, 2, dtype=tinynet.float64)
    rng = np.random.default_rng(0)
    for p in mha.parameters():
        p.data[...] = rng.standard_normal(p.shape) * 0.5
    q, k = (tinynet.tensor(a, requires_grad=True) for a in arrays((3, 2, 4), (2, 2, 4)))
    mask = tinynet.tensor(rng.standard_normal((2 * 2, 3, 2)), requires_grad=mask_grad)
    padding = np.array([[False, True], [False, False]])

    def fn(q, k, mask, *params):
        out, weights = mha(q, k, k, attn_mask=mask, key_padding_mask=padding,
                           need_weights=need_weights)
        return (out, weights) if need_weights else out
    assert gradcheck(fn, [q, k, mask, *mha.parameters()])


@pytest.mark.parametrize("make, call, error, message", [
    (lambda: nn.MultiheadAttention(6, 4), None, ValueError, "divisible"),
    (lambda: nn.MultiheadAttention(6, 2, add_bias_kv=True), None, NotImplementedError,
     "add_bias_kv"),
    (lambda: nn.MultiheadAttention(6, 2, kdim=3), None, NotImplementedError, "kdim"),
    (lambda: nn.MultiheadAttention(6, 2, dropout=1.5), None, ValueError, "dropout"),
    (None, lambda m, x: m(x, x, x, is_causal=True), ValueError, "needs attn_mask"),
    (None, lambda m, x: m(x[0, 0], x[0, 0], x[0, 0]), ValueError, "2-D"),
    (None, lambda m, x: m(x, x[:2], x), ValueError, "same shape"),
    (None, lambda m, x: m(x[..., :4], x[..., :4], x[..., :4]), ValueError, "embed_dim 6"),
    (None, lambda m, x: m(x, x[:, :1], x[:, :1]), ValueError, "batch sizes"),
    (None, lambda m, x: m(x, x, x, attn_mask=np.zeros((5, 4), bool)), ValueError,
     r"attn_mask has shape \(5, 4\)"),
    (None, lambda m, x: m(x, x, x, key_padding_mask=np.zeros((5, 3), bool)), ValueError,
     r"key_padding_mask has shape \(5, 3\), expected \(3, 5\)"),
    (None, lambda m, x: m(x, x, x, attn_mask=np.zeros((5, 5), "f4")), TypeError, "float64"),
])
def test_mha_errors(make, call, error, message):
    with pytest.raises(error, match=message):
        mha = make() if make else nn.MultiheadAttention(6, 2, dtype=tinynet.float64)
        call(mha, tinynet.tensor(arrays((5, 3, 6))[0]))
