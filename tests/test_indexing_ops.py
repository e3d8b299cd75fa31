"""F.pad (constant, reflect, replicate, circular), roll, flip, diagonal, diag,
unflatten, Tensor.unfold, index_select, repeat_interleave, masked_select,
nonzero and argsort.

Differentiable ops pass a float64 gradcheck and match PyTorch to 1e-10 forward
and backward (gradients of a fixed random weighting of the output); the
index-valued ones match PyTorch exactly; bad arguments raise clear errors.
"""
import math

import numpy as np
import pytest

import tinynet
from tinynet.nn import functional as F
from tinynet.testing import gradcheck

torch = pytest.importorskip("torch")
TF = torch.nn.functional
TOL = dict(rtol=1e-10, atol=1e-12)


def random(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def assert_matches_torch(fn, *arrays, check_grad=True):
    """``fn(lib, *leaves)`` gives PyTorch's values and gradients; and a gradcheck."""
    ours = [tinynet.tensor(a, requires_grad=True) for a in arrays]
    ref = [torch.tensor(a, requires_grad=True) for a in arrays]
    out, out_ref = fn(tinynet, *ours), fn(torch, *ref)
    assert tuple(out.shape) == tuple(out_ref.shape)
    np.testing.assert_allclose(out.detach().numpy(), out_ref.detach().numpy(), **TOL)
    weights = np.random.default_rng(1).standard_normal(tuple(out_ref.shape))
    (out * tinynet.tensor(weights)).sum().backward()
    (out_ref * torch.tensor(weights)).sum().backward()
    for a, r in zip(ours, ref, strict=True):
        np.testing.assert_allclose(a.grad.numpy(), r.grad.numpy(), **TOL)
    if check_grad:
        leaves = [tinynet.tensor(a, requires_grad=True) for a in arrays]
        assert gradcheck(lambda *xs: fn(tinynet, *xs), leaves)


def _functional(lib):
    return F if lib is tinynet else TF


# ----------------------------------------------------------------------- pad
CONSTANT_CASES = [((3, 4), (1, 2)), ((3, 4), (1, 2, 0, 3)), ((2, 3, 4), (2, 1, 1, 1, 1, 2)),
                  ((3, 4), (-1, 2)), ((3, 4), (-1, -2, 1, -1)), ((2, 2, 3), (0, 0, -2, 0)),
                  ((4,), (3, 0)), ((2, 3), (-3, 0))]


@pytest.mark.parametrize("shape,pad", CONSTANT_CASES, ids=str)
@pytest.mark.parametrize("value", [0.0, 2.5])
def test_constant_pad_matches_torch(shape, pad, value):
    assert_matches_torch(lambda lib, x: _functional(lib).pad(x, pad, value=value),
                         random(*shape))


INDEX_CASES = [((2, 5), (2, 3)), ((2, 3, 5), (4, 1)), ((2, 3, 4), (1, 2, 3, 1)),
               ((1, 2, 3, 4), (3, 2, 0, 2)), ((1, 2, 3, 3, 4), (1, 2, 2, 0, 1, 2)),
               ((2, 2, 3, 3), (2, 2, 1, 1, 2, 2)), ((2, 5), (-1, 2)), ((2, 5), (1, -2))]


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
@pytest.mark.parametrize("shape,pad", INDEX_CASES, ids=str)
def test_index_pad_matches_torch(mode, shape, pad):
    if mode == "reflect":
        sizes = [n for n in shape[::-1] for _ in "ab"][:len(pad)]
        pad = tuple(min(p, n - 1) for p, n in zip(pad, sizes, strict=True))
    assert_matches_torch(lambda lib, x: _functional(lib).pad(x, pad, mode=mode),
                         random(*shape))


def test_pad_at_the_limits_matches_torch():
    x = random(1, 4)
    assert_matches_torch(lambda lib, t: _functional(lib).pad(t, (3, 3), mode="reflect"), x)
    assert_matches_torch(lambda lib, t: _functional(lib).pad(t, (4, 4), mode="circular"), x)
    assert_matches_torch(lambda lib, t: _functional(lib).pad(t, (9, 7), mode="replicate"), x)
    assert_matches_torch(lambda lib, t: _functional(lib).pad(t, (-4, 0)), x)


def test_pad_keeps_integer_and_bool_dtypes():
    ints = tinynet.tensor([[1, 2, 3]])
    assert F.pad(ints, (1, 1), value=7).tolist() == [[7, 1, 2, 3, 7]]
    assert F.pad(ints, (2, 1), mode="reflect").tolist() == [[3, 2, 1, 2, 3, 2]]
    flags = F.pad(tinynet.tensor([True]), (1, 0))
    assert flags.dtype == np.bool_ and flags.tolist() == [False, True]


@pytest.mark.parametrize("shape,pad,mode,error", [
    ((3, 4), (1,), "constant", ValueError),                 # odd length
    ((3, 4), (1, 1, 1, 1, 1, 1), "constant", ValueError),   # more dims than the input
    ((3, 4), (-5, 0), "constant", ValueError),              # negative size
    ((3, 4), (1.5, 1), "constant", TypeError),
    ((3, 4), (1, 1), "wrap", NotImplementedError),
    ((4,), (1, 1), "reflect", NotImplementedError),          # 1-D input
    ((3, 4), (1, 1, 1, 1), "replicate", NotImplementedError),
    ((2, 3, 4, 5, 6, 7), (1, 1, 1, 1, 1, 1), "circular", NotImplementedError),
    ((2, 3, 4, 5), (1,) * 8, "reflect", NotImplementedError),
    ((3, 4), (4, 0), "reflect", ValueError),                 # not smaller than the dim
    ((3, 4), (5, 0), "circular", ValueError),                # wraps more than once
    ((3, 0), (1, 1), "replicate", ValueError),               # empty padded dim
    ((2, 3), (-2, -1), "circular", ValueError),              # nothing left to wrap
])
def test_pad_errors(shape, pad, mode, error):
    with pytest.raises(error):
        F.pad(tinynet.zeros(*shape), pad, mode=mode)


def test_pad_rejects_a_value_outside_constant_mode():
    with pytest.raises(ValueError, match="takes no value"):
        F.pad(tinynet.zeros(2, 3), (1, 1), mode="reflect", value=1.0)
    assert F.pad(tinynet.zeros(2, 3), (1, 1), mode="reflect", value=0.0).shape == (2, 5)


# --------------------------------------------------------- roll, flip, diagonal
@pytest.mark.parametrize("shifts,dims", [(1, None), (-7, None), (2, 0), ((1, -2), (0, 2)),
                                         (5, -1), ((1, 1), (1, 1)), (0, 1), (3, 1)], ids=str)
def test_roll_matches_torch(shifts, dims):
    assert_matches_torch(lambda lib, x: lib.roll(x, shifts, dims), random(2, 3, 4))
    assert_matches_torch(lambda lib, x: x.roll(shifts, dims), random(2, 3, 4))


def test_roll_of_a_scalar_and_errors():
    assert tinynet.roll(tinynet.tensor(3.0), 1).item() == 3.0
    with pytest.raises(ValueError, match="same length"):
        tinynet.roll(tinynet.zeros(2, 3), (1, 2), 0)
    with pytest.raises(ValueError):
        tinynet.roll(tinynet.zeros(2, 3), (1, 2))
    with pytest.raises(IndexError):
        tinynet.roll(tinynet.zeros(2, 3), 1, 2)


@pytest.mark.parametrize("dims", [(0,), (1, 2), (-1, 0, 1), ()], ids=str)
def test_flip_matches_torch(dims):
    assert_matches_torch(lambda lib, x: lib.flip(x, dims), random(2, 3, 4))
    assert_matches_torch(lambda lib, x: x.flip(dims), random(2, 3, 4))


def test_flip_errors_and_scalar():
    assert tinynet.tensor([1, 2, 3]).flip(0).tolist() == [3, 2, 1]
    assert tinynet.flip(tinynet.tensor(2.0), (0,)).item() == 2.0
    with pytest.raises(ValueError, match="more than once"):
        tinynet.flip(tinynet.zeros(2, 3), (0, 0))
    with pytest.raises(IndexError):
        tinynet.flip(tinynet.zeros(2, 3), (2,))


@pytest.mark.parametrize("offset,dim1,dim2", [(0, 0, 1), (1, -1, 0), (-1, 1, 2), (5, 0, 2),
                                              (-2, 2, 0), (2, 1, 2)], ids=str)
def test_diagonal_matches_torch(offset, dim1, dim2):
    assert_matches_torch(lambda lib, x: lib.diagonal(x, offset, dim1, dim2), random(2, 3, 4))
    assert_matches_torch(lambda lib, x: x.diagonal(offset, dim1, dim2), random(3, 4, 2))


def test_diagonal_errors():
    with pytest.raises(ValueError, match="differ"):
        tinynet.diagonal(tinynet.zeros(2, 3), 0, 1, 1)
    with pytest.raises(IndexError):
        tinynet.diagonal(tinynet.zeros(3), 0)
    with pytest.raises(TypeError):
        tinynet.diagonal(tinynet.zeros(2, 3), 1.0)


@pytest.mark.parametrize("diagonal", [0, 1, -2, 5])
@pytest.mark.parametrize("shape", [(4,), (3, 4), (4, 3)], ids=str)
def test_diag_matches_torch(shape, diagonal):
    assert_matches_torch(lambda lib, x: lib.diag(x, diagonal), random(*shape))
    assert_matches_torch(lambda lib, x: x.diag(diagonal), random(*shape))


def test_diag_errors_and_dtype():
    assert tinynet.diag(tinynet.tensor([1, 2]), -1).tolist() == [[0, 0, 0], [1, 0, 0], [0, 2, 0]]
    for shape in [(), (2, 3, 4)]:
        with pytest.raises(ValueError, match="1-D or 2-D"):
            tinynet.diag(tinynet.zeros(*shape))


# ------------------------------------------------------------ unflatten, unfold
@pytest.mark.parametrize("dim,sizes", [(1, (3, 4)), (1, (3, -1)), (-1, (-1, 2, 2)), (0, (2, 1)),
                                       (1, (12,))], ids=str)
def test_unflatten_matches_torch(dim, sizes):
    assert_matches_torch(lambda lib, x: lib.unflatten(x, dim, sizes), random(2, 12))
    assert_matches_torch(lambda lib, x: x.unflatten(dim, sizes), random(2, 12))


@pytest.mark.parametrize("sizes", [(5, -1), (5, 2), (), (-1, -1), (-2, -6), 12])
def test_unflatten_errors(sizes):
    with pytest.raises((ValueError, TypeError)):
        tinynet.unflatten(tinynet.zeros(2, 12), 1, sizes)


def test_unflatten_ambiguous_minus_one():
    with pytest.raises(ValueError, match="ambiguous"):
        tinynet.unflatten(tinynet.zeros(2, 0), 1, (0, -1))


@pytest.mark.parametrize("shape,dim,size,step", [((7,), 0, 3, 1), ((7,), 0, 3, 2), ((7,), 0, 2, 3),
                                                 ((2, 7, 3), 1, 3, 2), ((2, 5, 3), -1, 3, 1),
                                                 ((4, 5), 0, 4, 4), ((4, 5), 1, 1, 1),
                                                 ((5,), 0, 5, 3)], ids=str)
def test_unfold_matches_torch(shape, dim, size, step):
    assert_matches_torch(lambda lib, x: x.unfold(dim, size, step), random(*shape))


def test_unfold_edges_and_errors():
    assert tinynet.tensor(5.0).unfold(0, 1, 1).tolist() == [5.0]
    assert tinynet.zeros(5).unfold(0, 0, 1).shape == (6, 0)
    with pytest.raises(ValueError, match="step"):
        tinynet.zeros(5).unfold(0, 2, 0)
    with pytest.raises(ValueError, match="size"):
        tinynet.zeros(5).unfold(0, 6, 1)


# --------------------------------------------- index_select, repeat_interleave
def test_index_select_matches_torch():
    index = [2, 0, 2, -1]
    assert_matches_torch(
        lambda lib, x: lib.index_select(x, 1, lib.tensor(index if lib is tinynet else
                                                         [i % 4 for i in index])),
        random(3, 4))
    with pytest.raises(IndexError):
        tinynet.index_select(tinynet.zeros(3, 4), 1, tinynet.tensor([4]))
    with pytest.raises(TypeError):
        tinynet.index_select(tinynet.zeros(3, 4), 1, tinynet.tensor([1.0]))


@pytest.mark.parametrize("repeats,dim", [(2, None), (3, 0), (0, 1), ("tensor", 0), ("tensor", -1),
                                         ("one", 1), ("scalar", 1)], ids=str)
def test_repeat_interleave_matches_torch(repeats, dim):
    def counts(lib, x):
        if repeats == "tensor":
            return lib.tensor([1, 0, 3][:x.shape[dim]])
        if repeats == "one":
            return lib.tensor([2])
        if repeats == "scalar":
            return lib.tensor(2)
        return repeats
    assert_matches_torch(lambda lib, x: lib.repeat_interleave(x, counts(lib, x), dim),
                         random(3, 3))
    assert_matches_torch(lambda lib, x: x.repeat_interleave(counts(lib, x), dim), random(3, 3))


def test_repeat_interleave_counts_alone_and_errors():
    assert tinynet.repeat_interleave(tinynet.tensor([2, 1])).tolist() == [0, 0, 1]
    x = tinynet.zeros(2, 3)
    with pytest.raises(ValueError, match="one per slice"):
        tinynet.repeat_interleave(x, tinynet.tensor([1, 2]), 1)
    with pytest.raises(ValueError, match="non-negative"):
        tinynet.repeat_interleave(x, tinynet.tensor([1, -2]), 0)
    with pytest.raises(ValueError, match="non-negative"):
        tinynet.repeat_interleave(x, -1, 0)
    with pytest.raises(TypeError):
        tinynet.repeat_interleave(x, tinynet.tensor([1.0, 2.0]), 0)


# --------------------------------------------------- masked_select, nonzero
@pytest.mark.parametrize("shape,mask", [((2, 3), [[True, False, True], [False, False, True]]),
                                        ((2, 3), [True, False, True]), ((3,), [[True], [False]]),
                                        ((2, 1), [[False, True, True], [True, False, False]])],
                         ids=str)
def test_masked_select_matches_torch(shape, mask):
    assert_matches_torch(lambda lib, x: lib.masked_select(x, lib.tensor(mask)), random(*shape))
    assert_matches_torch(lambda lib, x: x.masked_select(lib.tensor(mask)), random(*shape))


def test_masked_select_errors():
    with pytest.raises(TypeError, match="bool"):
        tinynet.masked_select(tinynet.zeros(3), tinynet.tensor([1, 0, 1]))
    with pytest.raises(ValueError, match="broadcast"):
        tinynet.masked_select(tinynet.zeros(2, 3), tinynet.tensor([True, False]))


@pytest.mark.parametrize("values", [[[0, 1], [2, 0]], [0.0, math.nan, -0.0, 3.0], 3.0, 0.0,
                                    [[[True, False]], [[False, True]]], []], ids=str)
def test_nonzero_matches_torch(values):
    ours, ref = tinynet.tensor(values), torch.tensor(values)
    out, expected = tinynet.nonzero(ours), torch.nonzero(ref)
    assert out.dtype == np.int64 and out.shape == tuple(expected.shape)
    assert out.tolist() == expected.tolist()
    for a, b in zip(tinynet.nonzero(ours, as_tuple=True), torch.nonzero(ref, as_tuple=True),
                    strict=True):
        assert a.tolist() == b.tolist()
    assert ours.nonzero().tolist() == ref.nonzero().tolist()


# ------------------------------------------------------------------- argsort
ARGSORT_VALUES = [[2.0, math.nan, 1.0, 2.0, math.nan, -math.inf, 1.0, math.inf],
                  [3, 1, 3, -2, 1, 3], [True, False, True, False]]


@pytest.mark.parametrize("values", ARGSORT_VALUES, ids=str)
@pytest.mark.parametrize("descending", [False, True])
def test_argsort_stable_matches_torch(values, descending):
    ours = tinynet.argsort(tinynet.tensor(values), descending=descending, stable=True)
    expected = torch.argsort(torch.tensor(values), descending=descending, stable=True)
    assert ours.dtype == np.int64 and ours.tolist() == expected.tolist()


@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("descending", [False, True])
def test_argsort_along_a_dim_matches_torch(dim, descending):
    x = np.random.default_rng(0).integers(0, 4, (3, 5, 4))
    ours = tinynet.tensor(x).argsort(dim, descending, stable=True)
    assert ours.tolist() == torch.tensor(x).argsort(dim=dim, descending=descending,
                                                           stable=True).tolist()
    x = random(3, 5)      # no ties: the unstable order is the same
    assert (tinynet.argsort(tinynet.tensor(x), dim % 2, descending).tolist()
            == torch.argsort(torch.tensor(x), dim % 2, descending).tolist())


def test_argsort_of_a_scalar_and_bad_dim():
    assert tinynet.argsort(tinynet.tensor(2.0)).tolist() == 0
    with pytest.raises(IndexError):
        tinynet.argsort(tinynet.zeros(2, 3), 2)
