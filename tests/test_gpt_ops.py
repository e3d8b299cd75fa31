"""The pieces a GPT needs: tril/triu, gather, topk, multinomial and Generator,
ModuleDict, init.normal_, cross_entropy's ignore_index, LayerNorm without bias,
and erf. Differentiable ops are checked by finite differences (float64) and,
when PyTorch is importable, against it forward and backward."""
import math

import numpy as np
import pytest

import tinynet
from tinynet import nn
from tinynet.nn import functional as F
from tinynet.ops.activation import erf_array
from tinynet.testing import gradcheck

TOL = dict(rtol=1e-10, atol=1e-12)


@pytest.fixture
def torch():
    return pytest.importorskip("torch")


def leaf(array):
    return tinynet.tensor(np.array(array, dtype=np.float64), requires_grad=True)


def assert_matches_torch(torch, fn, *arrays):
    """``fn(lib, *leaves)`` gives the same values with tinynet and torch, and the
    same gradients of a fixed random weighting of its output."""
    ours = [tinynet.tensor(a, requires_grad=True) for a in arrays]
    ref = [torch.tensor(a, requires_grad=True) for a in arrays]
    out, out_ref = fn(tinynet, *ours), fn(torch, *ref)
    assert tuple(out.shape) == tuple(out_ref.shape)
    np.testing.assert_allclose(out.numpy(), out_ref.detach().numpy(), **TOL)
    weights = np.random.default_rng(1).standard_normal(tuple(out_ref.shape))
    (out * tinynet.tensor(weights)).sum().backward()
    (out_ref * torch.tensor(weights)).sum().backward()
    for a, r in zip(ours, ref, strict=True):
        np.testing.assert_allclose(a.grad.numpy(), r.grad.numpy(), **TOL)


def random(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


# ------------------------------------------------------------------ tril, triu
TRIANGLE_SHAPES = [(4, 4), (3, 5), (5, 3), (2, 3, 4), (2, 2, 3, 4)]
DIAGONALS = [0, 1, -1, 7, -7]


@pytest.mark.parametrize("name", ["tril", "triu"])
@pytest.mark.parametrize("shape", TRIANGLE_SHAPES, ids=str)
@pytest.mark.parametrize("diagonal", DIAGONALS)
def test_triangle_matches_torch(torch, name, shape, diagonal):
    assert_matches_torch(torch, lambda lib, x: getattr(lib, name)(x, diagonal), random(*shape))


@pytest.mark.parametrize("name", ["tril", "triu"])
@pytest.mark.parametrize("diagonal", [0, 2, -1])
def test_triangle_method_matches_torch(torch, name, diagonal):
    assert_matches_torch(torch, lambda lib, x: getattr(x, name)(diagonal), random(2, 3, 5))


@pytest.mark.parametrize("name", ["tril", "triu"])
def test_triangle_default_diagonal_is_0(name):
    x = tinynet.tensor(random(3, 4))
    np.testing.assert_array_equal(getattr(x, name)().numpy(), getattr(x, name)(0).numpy())


@pytest.mark.parametrize("name", ["tril", "triu"])
@pytest.mark.parametrize("diagonal", [0, 1, -2])
def test_triangle_gradcheck(name, diagonal):
    assert gradcheck(lambda x: getattr(tinynet, name)(x, diagonal), leaf(random(2, 3, 4)))


@pytest.mark.parametrize("name", ["tril", "triu"])
def test_triangle_numpy_integer_diagonal(name):
    x = tinynet.tensor(random(4, 4))
    np.testing.assert_array_equal(getattr(tinynet, name)(x, np.int64(1)).numpy(),
                                  getattr(tinynet, name)(x, 1).numpy())


@pytest.mark.parametrize("name", ["tril", "triu"])
@pytest.mark.parametrize("shape", [(4,), ()], ids=str)
def test_triangle_needs_two_dims(name, shape):
    with pytest.raises(ValueError, match="at least 2 dims"):
        getattr(tinynet, name)(tinynet.tensor(random(*shape)))


@pytest.mark.parametrize("name", ["tril", "triu"])
@pytest.mark.parametrize("diagonal", [1.0, True, "1", None])
def test_triangle_diagonal_must_be_an_integer(name, diagonal):
    with pytest.raises(TypeError, match="diagonal must be an integer"):
        getattr(tinynet, name)(tinynet.tensor(random(3, 3)), diagonal)


# ---------------------------------------------------------------------- gather
# (input shape, dim, index shape): index may repeat entries along dim and be
# shorter than the input along the other dims, as torch.gather allows.
GATHER_CASES = [
    ((5,), 0, (8,)),
    ((3, 4), 0, (6, 4)),
    ((3, 4), 1, (3, 7)),
    ((3, 4), -1, (3, 2)),
    ((3, 4), 0, (2, 1)),
    ((3, 4), 1, (2, 3)),
    ((2, 3, 4), 1, (2, 5, 4)),
    ((2, 3, 4), -3, (4, 2, 3)),
    ((2, 3, 4), 2, (1, 2, 6)),
    ((3, 4), 1, (0, 4)),
]


def gather_index(shape, dim, index_shape, seed=2):
    size = shape[dim]
    return np.random.default_rng(seed).integers(0, size, index_shape)


@pytest.mark.parametrize("shape, dim, index_shape", GATHER_CASES, ids=str)
def test_gather_matches_torch(torch, shape, dim, index_shape):
    index = gather_index(shape, dim, index_shape)
    assert_matches_torch(torch, lambda lib, x: lib.gather(x, dim, lib.tensor(index)),
                         random(*shape))


@pytest.mark.parametrize("shape, dim, index_shape", GATHER_CASES[1:4], ids=str)
def test_gather_method_matches_torch(torch, shape, dim, index_shape):
    index = gather_index(shape, dim, index_shape)
    assert_matches_torch(torch, lambda lib, x: x.gather(dim, lib.tensor(index)),
                         random(*shape))


@pytest.mark.parametrize("shape, dim, index_shape", GATHER_CASES[:-1], ids=str)
def test_gather_gradcheck(shape, dim, index_shape):
    index = gather_index(shape, dim, index_shape)
    assert gradcheck(lambda x: tinynet.gather(x, dim, index), leaf(random(*shape)))


def test_gather_repeated_indices_add_their_gradients():
    index = np.array([0, 2, 2, 2, 0, 3])
    x = leaf(random(5))
    tinynet.gather(x, 0, index).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.bincount(index, minlength=5))


def test_gather_index_may_be_a_list():
    x = tinynet.tensor(random(2, 3))
    index = [[2, 0], [1, 1]]
    np.testing.assert_array_equal(tinynet.gather(x, 1, index).numpy(),
                                  np.take_along_axis(x.numpy(), np.array(index), axis=1))


def test_gather_of_a_0d_tensor(torch):
    assert_matches_torch(torch, lambda lib, x: lib.gather(x, 0, lib.tensor(0)), np.array(1.5))


@pytest.mark.parametrize("index, error, match", [
    (np.zeros((3,), dtype=np.int64), ValueError, "dims"),
    (np.zeros((3, 4, 1), dtype=np.int64), ValueError, "dims"),
    (np.zeros((3, 4)), TypeError, "integer"),
    (np.zeros((3, 4), dtype=bool), TypeError, "integer"),
    (np.full((3, 4), 4), IndexError, "out of range"),
    (np.full((3, 4), -1), IndexError, "out of range"),
    (np.zeros((4, 4), dtype=np.int64), ValueError, "larger than input"),
], ids=["1-d", "3-d", "float", "bool", "too-large", "negative", "too-many-rows"])
def test_gather_errors(index, error, match):
    with pytest.raises(error, match=match):
        tinynet.gather(tinynet.tensor(random(3, 4)), 1, index)


@pytest.mark.parametrize("dim", [2, -3])
def test_gather_dim_out_of_range(dim):
    with pytest.raises(IndexError, match="out of range"):
        tinynet.gather(tinynet.tensor(random(3, 4)), dim, np.zeros((3, 4), dtype=np.int64))


# ------------------------------------------------------------------------ topk
def tie_free(*shape, seed=3):
    """Distinct values in a random order."""
    return np.random.default_rng(seed).permutation(math.prod(shape)).reshape(shape) / 7.0


TOPK_CASES = [((4, 6), dim, k) for dim in (0, 1, -1) for k in ("none", "one", "all")]
TOPK_CASES += [((3, 4, 5), dim, k) for dim in (0, 1, 2) for k in ("one", "half")]


def topk_k(shape, dim, k):
    size = shape[dim]
    return {"none": 0, "one": 1, "half": size // 2, "all": size}[k]


@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("shape, dim, k", TOPK_CASES, ids=str)
def test_topk_values_match_torch(torch, shape, dim, k, largest):
    k = topk_k(shape, dim, k)
    assert_matches_torch(torch, lambda lib, x: lib.topk(x, k, dim=dim, largest=largest).values,
                         tie_free(*shape))


@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("shape, dim, k", TOPK_CASES, ids=str)
def test_topk_indices_match_torch(torch, shape, dim, k, largest):
    k = topk_k(shape, dim, k)
    x = tie_free(*shape)
    ours = tinynet.tensor(x).topk(k, dim, largest).indices
    ref = torch.topk(torch.tensor(x), k, dim, largest).indices
    assert ours.dtype == np.int64
    np.testing.assert_array_equal(ours.numpy(), ref.numpy())


@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("dim", [0, -1])
def test_topk_gradcheck(largest, dim):
    x = leaf(tie_free(3, 4))
    assert gradcheck(lambda x: tinynet.topk(x, 2, dim=dim, largest=largest).values, x)


def test_topk_is_a_values_indices_pair():
    x = tinynet.tensor(tie_free(3, 5))
    result = x.topk(2)
    values, indices = result
    assert result[0] is result.values is values and result[1] is result.indices is indices
    np.testing.assert_array_equal(values.numpy(),
                                  np.take_along_axis(x.numpy(), indices.numpy(), axis=-1))


def test_topk_defaults_are_last_dim_largest_sorted():
    x = tinynet.tensor(tie_free(3, 5))
    values = x.topk(3).values.numpy()
    np.testing.assert_array_equal(values, -np.sort(-x.numpy(), axis=-1)[:, :3])


def test_topk_of_a_0d_tensor(torch):
    assert_matches_torch(torch, lambda lib, x: lib.topk(x, 1).values, np.array(2.5))


@pytest.mark.parametrize("k", [-1, 6, 2.0, True])
def test_topk_k_out_of_range(k):
    with pytest.raises(ValueError, match="k must be an integer in"):
        tinynet.topk(tinynet.tensor(tie_free(3, 5)), k)


def test_topk_dim_out_of_range():
    with pytest.raises(IndexError, match="out of range"):
        tinynet.topk(tinynet.tensor(tie_free(3, 5)), 1, dim=2)


# ------------------------------------------------------- multinomial, Generator
def draw(weights, num_samples, replacement=False, seed=0):
    generator = tinynet.Generator().manual_seed(seed)
    return tinynet.multinomial(tinynet.tensor(np.array(weights, dtype=np.float64)), num_samples,
                               replacement, generator=generator).numpy()


@pytest.mark.parametrize("replacement", [False, True])
def test_multinomial_shapes_and_dtype(replacement):
    assert draw([1.0, 2.0, 3.0], 2, replacement).shape == (2,)
    samples = draw(np.ones((4, 3)), 3, replacement)
    assert samples.shape == (4, 3) and samples.dtype == np.int64


def test_generator_manual_seed_returns_the_generator():
    generator = tinynet.Generator()
    assert generator.manual_seed(1) is generator


def test_multinomial_same_seed_same_draws():
    np.testing.assert_array_equal(draw(np.ones(10), 100, True, seed=5),
                                  draw(np.ones(10), 100, True, seed=5))


def test_multinomial_different_seeds_differ():
    assert not np.array_equal(draw(np.ones(10), 100, True, seed=5),
                              draw(np.ones(10), 100, True, seed=6))


def test_multinomial_global_seed_repeats_without_a_generator():
    weights = tinynet.tensor(np.ones((2, 10)))
    tinynet.manual_seed(3)
    first = tinynet.multinomial(weights, 50, replacement=True).numpy()
    tinynet.manual_seed(3)
    np.testing.assert_array_equal(tinynet.multinomial(weights, 50, replacement=True).numpy(),
                                  first)


def test_generator_is_independent_of_the_global_seed():
    weights = tinynet.tensor(np.ones(10))
    alone = draw(np.ones(10), 20, True, seed=4)
    generator = tinynet.Generator().manual_seed(4)
    interleaved = []
    for _ in range(20):
        tinynet.multinomial(weights, 3)                    # the global generator
        interleaved.append(tinynet.multinomial(weights, 1, True, generator=generator).item())
    np.testing.assert_array_equal(interleaved, alone)


@pytest.mark.parametrize("replacement", [False, True])
def test_multinomial_never_draws_a_zero_weight(replacement):
    weights = np.array([[0.0, 1.0, 0.0, 1e-3, 5.0, 0.0],
                        [2.0, 0.0, 0.0, 0.0, 0.0, 1.0]])
    weights = np.repeat(weights, 500, axis=0)
    samples = draw(weights, 2, replacement)
    assert (np.take_along_axis(weights, samples, axis=1) > 0).all()


def test_multinomial_without_replacement_never_repeats_in_a_row():
    samples = draw(np.random.default_rng(0).random((200, 8)), 5)
    assert all(len(set(row)) == 5 for row in samples.tolist())


def test_multinomial_without_replacement_can_draw_every_positive_category():
    weights = np.array([[3.0, 0.0, 1.0, 2.0], [0.0, 1.0, 1.0, 1.0]])
    samples = draw(weights, 3)
    for row, w in zip(samples, weights, strict=True):
        assert sorted(row) == np.flatnonzero(w).tolist()


def within_5_standard_errors(counts, probabilities):
    n = counts.sum()
    standard_error = np.sqrt(n * probabilities * (1 - probabilities))
    return np.abs(counts - n * probabilities) <= 5 * standard_error


def test_multinomial_with_replacement_frequencies_follow_the_weights():
    weights = np.array([1.0, 0.0, 2.0, 3.0, 4.0, 0.5])          # not normalized
    counts = np.bincount(draw(weights, 20_000, True, seed=11), minlength=weights.size)
    assert within_5_standard_errors(counts, weights / weights.sum()).all()
    assert counts[1] == 0


def test_multinomial_without_replacement_renormalizes_after_each_draw():
    # P(second = j) = Σ_{i≠j} p_i p_j / (1 − p_i) when each draw renormalizes.
    weights = np.array([1.0, 2.0, 3.0, 4.0])
    p = weights / weights.sum()
    second = np.outer(p / (1 - p), p)
    np.fill_diagonal(second, 0)
    samples = draw(np.tile(weights, (20_000, 1)), 2, seed=12)
    for column, probabilities in ((0, p), (1, second.sum(axis=0))):
        counts = np.bincount(samples[:, column], minlength=4)
        assert within_5_standard_errors(counts, probabilities).all(), column


@pytest.mark.parametrize("weights, match", [
    ([1.0, -0.5, 1.0], "non-negative"),
    ([1.0, np.nan, 1.0], "finite"),
    ([1.0, np.inf, 1.0], "finite"),
    ([[1.0, 1.0], [0.0, 0.0]], "positive sum"),
    (np.ones((2, 2, 2)), "1-D or 2-D"),
    (np.ones((2, 2), dtype=np.int64), "floating point"),
], ids=["negative", "nan", "inf", "zero-row", "3-d", "integer"])
def test_multinomial_bad_weights(weights, match):
    with pytest.raises(ValueError, match=match):
        tinynet.multinomial(tinynet.tensor(np.array(weights)), 1)


@pytest.mark.parametrize("weights, num_samples", [
    ([1.0, 1.0, 1.0], 4),
    ([1.0, 0.0, 1.0], 3),
    ([[1.0, 1.0, 1.0], [1.0, 0.0, 1.0]], 3),
])
def test_multinomial_too_many_samples_without_replacement(weights, num_samples):
    with pytest.raises(ValueError, match="without replacement"):
        tinynet.multinomial(tinynet.tensor(np.array(weights)), num_samples)


@pytest.mark.parametrize("num_samples", [0, -1, 2.0, True, "2"])
def test_multinomial_bad_num_samples(num_samples):
    with pytest.raises(ValueError, match="num_samples"):
        tinynet.multinomial(tinynet.tensor(np.ones(3)), num_samples, replacement=True)


def test_multinomial_numpy_integer_num_samples():
    assert draw(np.ones(3), np.int64(2)).shape == (2,)


# ------------------------------------------------------------------ ModuleDict
def blocks():
    return nn.ModuleDict({"b": nn.Linear(2, 3), "a": nn.Linear(3, 1)})


def test_module_dict_registers_parameters():
    d = blocks()
    assert len(list(d.parameters())) == 4
    assert list(d.state_dict()) == ["b.weight", "b.bias", "a.weight", "a.bias"]


def test_module_dict_inside_a_module_prefixes_its_names():
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.blocks = blocks()

    assert list(Net().state_dict()) == ["blocks.b.weight", "blocks.b.bias",
                                        "blocks.a.weight", "blocks.a.bias"]


def test_module_dict_mapping_protocol():
    d = blocks()
    a, b = d["a"], d["b"]
    assert len(d) == 2 and "a" in d and "c" not in d
    assert list(d) == list(d.keys()) == ["b", "a"]
    assert list(d.values()) == [b, a]
    assert list(d.items()) == [("b", b), ("a", a)]


def test_module_dict_setitem_adds_and_replaces_in_place():
    d = blocks()
    relu, linear = nn.ReLU(), nn.Linear(2, 2)
    d["c"] = relu
    d["b"] = linear
    assert list(d.keys()) == ["b", "a", "c"]
    assert d["b"] is linear and d["c"] is relu
    assert list(d.state_dict()) == ["b.weight", "b.bias", "a.weight", "a.bias"]


def test_module_dict_delitem_unregisters():
    d = blocks()
    del d["b"]
    assert list(d) == ["a"] and "b" not in d
    assert list(d.state_dict()) == ["a.weight", "a.bias"]


def test_module_dict_missing_key_is_a_key_error():
    with pytest.raises(KeyError):
        blocks()["c"]


@pytest.mark.parametrize("as_pairs", [False, True])
def test_module_dict_update_keeps_insertion_order(as_pairs):
    d = blocks()
    new = {"z": nn.ReLU(), "m": nn.Linear(1, 1)}
    d.update(list(new.items()) if as_pairs else new)
    assert list(d) == ["b", "a", "z", "m"] and d["z"] is new["z"]


def test_module_dict_from_pairs():
    assert list(nn.ModuleDict([("y", nn.ReLU()), ("x", nn.ReLU())])) == ["y", "x"]


@pytest.mark.parametrize("key, value", [("f", lambda x: x), ("n", 3), (1, nn.ReLU()),
                                        (("a",), nn.ReLU())], ids=["function", "int",
                                                                  "int-key", "tuple-key"])
def test_module_dict_refuses_non_modules_and_non_str_keys(key, value):
    d = blocks()
    with pytest.raises(TypeError):
        d[key] = value
    with pytest.raises(TypeError):
        nn.ModuleDict({key: value})
    assert list(d) == ["b", "a"]


def test_module_dict_loads_a_torch_state_dict(torch):
    ref = torch.nn.ModuleDict({"q": torch.nn.Linear(3, 2), "k": torch.nn.Linear(2, 4)})
    d = nn.ModuleDict({"q": nn.Linear(3, 2), "k": nn.Linear(2, 4)})
    d.load_state_dict(ref.state_dict())
    assert list(d.state_dict()) == list(ref.state_dict())
    for name, value in ref.state_dict().items():
        np.testing.assert_array_equal(d.state_dict()[name].numpy(), value.numpy())


# --------------------------------------------------------------- init.normal_
@pytest.mark.parametrize("dtype", [tinynet.float32, tinynet.float64])
@pytest.mark.parametrize("mean, std", [(0.0, 0.02), (3.0, 2.0)])
def test_normal_mean_and_std(dtype, mean, std):
    w = tinynet.zeros((400, 500), dtype=dtype)
    assert nn.init.normal_(w, mean, std) is w
    values, n = w.numpy().astype(np.float64), w.numpy().size
    assert w.dtype == dtype
    assert abs(values.mean() - mean) < 5 * std / math.sqrt(n)
    assert abs(values.std() - std) < 5 * std / math.sqrt(2 * n)


def test_normal_defaults_are_standard():
    w = nn.init.normal_(tinynet.zeros((400, 500)))
    assert abs(w.numpy().mean()) < 5 / math.sqrt(w.numpy().size)
    assert abs(w.numpy().std() - 1) < 5 / math.sqrt(2 * w.numpy().size)


def test_normal_repeats_under_manual_seed():
    tinynet.manual_seed(5)
    first = nn.init.normal_(tinynet.zeros((3, 4)), 0.0, 1.0).numpy()
    tinynet.manual_seed(5)
    np.testing.assert_array_equal(nn.init.normal_(tinynet.zeros((3, 4)), 0.0, 1.0).numpy(), first)


def test_normal_negative_std_is_an_error():
    with pytest.raises(ValueError, match="std"):
        nn.init.normal_(tinynet.zeros(3), 0.0, -0.1)


# ----------------------------------------------------- cross_entropy's ignore
CE_TARGETS = [
    (-100, [1, -100, 3, 0, -100, 2]),
    (-1, [-1, 2, 2, -1, 0, 3]),
    (0, [0, 1, 2, 3, 0, 0]),
    (-100, [1, 2, 3, 0, 1, 2]),                 # none ignored
    (-100, [-100] * 6),                          # all ignored: mean NaN, gradient 0
    (2, [2] * 6),
]


def cross_entropy_case(target, ignore_index, reduction):
    return lambda lib, z: lib.nn.functional.cross_entropy(
        z, lib.tensor(target), reduction=reduction, ignore_index=ignore_index)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("ignore_index, target", CE_TARGETS, ids=str)
def test_cross_entropy_ignore_index_matches_torch(torch, ignore_index, target, reduction):
    assert_matches_torch(torch, cross_entropy_case(target, ignore_index, reduction),
                         random(6, 4))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("ignore_index, target", CE_TARGETS[:3], ids=str)
def test_cross_entropy_ignore_index_gradcheck(ignore_index, target, reduction):
    assert gradcheck(lambda z: F.cross_entropy(z, np.array(target), reduction=reduction,
                                               ignore_index=ignore_index),
                     leaf(random(6, 4)))


def test_cross_entropy_all_ignored_mean_is_nan_with_zero_gradient():
    z = leaf(random(3, 4))
    loss = F.cross_entropy(z, np.full(3, -100))
    loss.backward()
    assert np.isnan(loss.item())
    np.testing.assert_array_equal(z.grad.numpy(), np.zeros((3, 4)))


def test_cross_entropy_loss_module_passes_ignore_index():
    z, target = tinynet.tensor(random(6, 4)), np.array([0, 1, 2, 3, 0, 1])
    for ignore_index in (0, 1):
        np.testing.assert_array_equal(
            nn.CrossEntropyLoss(ignore_index=ignore_index)(z, target).numpy(),
            F.cross_entropy(z, target, ignore_index=ignore_index).numpy())
    assert nn.CrossEntropyLoss().ignore_index == -100


@pytest.mark.parametrize("ignore_index, target", [
    (-100, [0, -1, 1]),
    (-1, [0, -100, 1]),
    (-1, [0, 4, -1]),
    (0, [0, 1, 5]),
])
def test_cross_entropy_out_of_range_targets_still_error(ignore_index, target):
    with pytest.raises(ValueError, match="out of range"):
        F.cross_entropy(tinynet.tensor(random(3, 4)), np.array(target), ignore_index=ignore_index)


# ---------------------------------------------------- LayerNorm(bias=False)
def test_layer_norm_without_bias_has_only_a_weight():
    norm = nn.LayerNorm(5, bias=False)
    assert norm.bias is None
    assert list(norm.state_dict()) == ["weight"]
    assert [tuple(p.shape) for p in norm.parameters()] == [(5,)]


def test_layer_norm_without_bias_matches_torch(torch):
    ref = torch.nn.LayerNorm(5, bias=False, dtype=torch.float64)
    with torch.no_grad():
        ref.weight.copy_(torch.tensor(random(5, seed=4)))
    norm = nn.LayerNorm(5, bias=False, dtype=tinynet.float64)
    norm.load_state_dict(ref.state_dict())
    x = random(2, 3, 5)
    ours, theirs = leaf(x), torch.tensor(x, requires_grad=True)
    out, out_ref = norm(ours), ref(theirs)
    np.testing.assert_allclose(out.numpy(), out_ref.detach().numpy(), **TOL)
    weights = random(2, 3, 5, seed=5)
    (out * tinynet.tensor(weights)).sum().backward()
    (out_ref * torch.tensor(weights)).sum().backward()
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), **TOL)
    np.testing.assert_allclose(norm.weight.grad.numpy(), ref.weight.grad.numpy(), **TOL)


def test_layer_norm_without_bias_gradcheck():
    norm = nn.LayerNorm(4, bias=False, dtype=tinynet.float64)
    norm.weight.data[...] = random(4, seed=6)
    assert gradcheck(lambda x, weight: norm(x), (leaf(random(3, 4)), norm.weight))


# ------------------------------------------------------------------------- erf
def erf_inputs(dtype):
    x = np.random.default_rng(7).standard_normal(4000) * 3
    x = np.concatenate([x, [0.0, 1e-30, -1e-300, 0.5, 0.8, 1e-3, 5.9, 6.0, 30.0]])
    return x.astype(dtype)


def test_erf_float32_within_1_ulp_of_torch(torch):
    x = erf_inputs(np.float32)
    ours = erf_array(x)
    assert ours.dtype == np.float32
    np.testing.assert_array_max_ulp(ours, torch.erf(torch.tensor(x)).numpy(), maxulp=1)


def test_erf_float64_matches_torch(torch):
    x = erf_inputs(np.float64)
    ours = erf_array(x)
    assert ours.dtype == np.float64
    np.testing.assert_allclose(ours, torch.erf(torch.tensor(x)).numpy(), rtol=1e-15, atol=0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_erf_special_values(dtype):
    ours = erf_array(np.array([np.inf, -np.inf, np.nan, -0.0], dtype=dtype))
    np.testing.assert_array_equal(ours[:3], [1.0, -1.0, np.nan])
    assert ours[3] == 0 and np.signbit(ours[3])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_erf_of_a_0d_array(dtype):
    ours = erf_array(np.array(0.5, dtype=dtype))
    assert np.shape(ours) == () and ours.dtype == dtype
    assert ours == erf_array(np.array([0.5], dtype=dtype))[0]


def test_erf_of_a_non_contiguous_array():
    x = random(6, 8)[:, ::3].T
    assert not x.flags.c_contiguous
    np.testing.assert_array_equal(erf_array(x), erf_array(np.ascontiguousarray(x)))
    np.testing.assert_array_equal(erf_array(x), [[math.erf(v) for v in row] for row in x])


@pytest.mark.parametrize("dtype", [np.int32, np.int64, bool])
def test_erf_of_integers_is_float64(dtype):
    x = np.array([-2, 0, 1, 3]).astype(dtype)
    ours = erf_array(x)
    assert ours.dtype == np.float64
    np.testing.assert_array_equal(ours, [math.erf(v) for v in x.astype(np.float64)])


def test_erf_op_matches_torch(torch):
    erf = {tinynet: tinynet.ops.erf, torch: torch.erf}
    assert_matches_torch(torch, lambda lib, x: erf[lib](x), random(3, 4) * 2)


def test_erf_op_gradcheck_and_0d():
    assert gradcheck(tinynet.ops.erf, leaf(random(3, 4)))
    assert tuple(tinynet.ops.erf(leaf(0.3)).shape) == ()


def test_unbind_of_a_permuted_view_gives_a_gradient_laid_out_as_the_view():
    import numpy as np

    import tinynet
    base = tinynet.tensor(np.random.default_rng(0).standard_normal((2, 5, 3, 4, 6)),
                          requires_grad=True)
    view = base.permute(2, 0, 3, 1, 4)                    # a GPT's (3, B, heads, T, d)
    q, k, v = view.unbind(0)
    (q * 1.0 + k * 2.0 + v * 3.0).sum().backward()
    assert base.grad.numpy().flags.c_contiguous         # no copy back through the permute
    expected = np.broadcast_to(np.array([1.0, 2.0, 3.0])[None, None, :, None, None],
                               base.shape)
    np.testing.assert_array_equal(base.grad.numpy(), expected)
    x = tinynet.tensor(np.ones((3, 2, 2)), requires_grad=True)
    x.unbind(0)[1].sum().backward()                     # the unused slices get 0
    np.testing.assert_array_equal(x.grad.numpy(), [[[0, 0]] * 2, [[1, 1]] * 2, [[0, 0]] * 2])
