"""Everyday Tensor idioms against PyTorch: clone, repeat, masked_fill, new_*, norm,
var/std, tolist, tensor()'s dtypes (the in-place methods: test_inplace.py).

The gradients of clone, repeat, masked_fill, norm and var/std are also checked by
the op table (op_cases.py); here are the values, dtypes and edge cases.
"""
import subprocess
import sys

import numpy as np
import pytest

import tinynet

INF = float("inf")


@pytest.fixture
def torch():
    return pytest.importorskip("torch")


def both(torch, array, grad=False):
    return (tinynet.tensor(array, requires_grad=grad),
            torch.tensor(array, requires_grad=grad))


def assert_same(ours, ref, rtol=1e-12, atol=1e-14):
    ref = ref.detach().numpy()
    assert ours.shape == ref.shape and str(ours.dtype) == str(ref.dtype)
    np.testing.assert_allclose(ours.numpy(), ref, rtol=rtol, atol=atol)


# ------------------------------------------------------------- out-of-place idioms

def test_clone_owns_its_memory_and_passes_gradients():
    x = tinynet.tensor(np.arange(3.0), requires_grad=True)
    y = x.clone()
    assert y.data is not x.data and not np.shares_memory(y.data, x.data)
    (y * 2).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2, 2, 2])


@pytest.mark.parametrize("shape, repeats", [((3,), (2,)), ((2, 3), (1, 2)), ((2, 3), (2, 1, 2)),
                                            ((), (2, 3)), ((3,), (0,)), ((2, 1), (3, 0, 2))])
def test_repeat_matches_torch(torch, shape, repeats):
    ours, ref = both(torch, np.asarray(np.random.default_rng(0).standard_normal(shape)), grad=True)
    out, out_ref = ours.repeat(*repeats), ref.repeat(*repeats)
    assert_same(out, out_ref)
    weights = np.random.default_rng(1).standard_normal(out.shape)
    (out * tinynet.tensor(weights)).sum().backward()
    (out_ref * torch.tensor(weights)).sum().backward()
    assert_same(ours.grad, ref.grad)
    assert_same(tinynet.ones(shape).repeat(repeats), torch.ones(shape).repeat(repeats))


def test_repeat_refuses_fewer_repeats_than_dims():
    with pytest.raises(ValueError, match="at least one per dim"):
        tinynet.ones(2, 3).repeat(2)
    with pytest.raises(ValueError, match="negative"):
        tinynet.ones(2).repeat(-1)


@pytest.mark.parametrize("dtype, value", [("float32", 1.5), ("int64", 1.5), ("float64", -INF),
                                          ("bool", True)])
def test_masked_fill_values_and_dtypes_match_torch(torch, dtype, value):
    x = np.arange(6).reshape(2, 3).astype(dtype)
    mask = np.array([True, False, True])
    out = tinynet.tensor(x).masked_fill(tinynet.tensor(mask), value)
    assert_same(out, torch.tensor(x).masked_fill(torch.tensor(mask), value))


def test_masked_fill_with_a_0d_tensor_keeps_the_dtype(torch):
    value = np.array(2.0)                      # float64, into a float32 tensor
    out = tinynet.zeros(3).masked_fill(tinynet.zeros(3) == 0, tinynet.tensor(value))
    assert_same(out, torch.zeros(3).masked_fill(torch.zeros(3) == 0, torch.tensor(value)))


def test_masked_fill_refuses_bad_masks_and_values():
    x = tinynet.zeros(3)
    with pytest.raises(TypeError, match="mask must be a bool tensor"):
        x.masked_fill(tinynet.ones(3), 1.0)
    with pytest.raises(ValueError, match="0-dimensional"):
        x.masked_fill(x == 0, tinynet.ones(1))
    with pytest.raises(ValueError, match="broadcast"):
        x.masked_fill(tinynet.ones(4) == 1, 1.0)


@pytest.mark.parametrize("name", ["new_zeros", "new_ones", "new_empty"])
def test_new_factories_follow_self_unless_told(torch, name):
    ours, ref = tinynet.ones(2, dtype=tinynet.float64), torch.ones(2, dtype=torch.float64)
    for args, kwargs in [((2, 3), {}), (((4,),), {}), ((3,), {"dtype": "float32"}),
                         ((2,), {"requires_grad": True})]:
        torch_kwargs = {k: getattr(torch, v) if k == "dtype" else v for k, v in kwargs.items()}
        out = getattr(ours, name)(*args, **kwargs)
        out_ref = getattr(ref, name)(*args, **torch_kwargs)
        assert out.shape == tuple(out_ref.shape) and str(out.dtype) == str(out_ref.dtype)[6:]
        assert out.device == "cpu" and out.requires_grad == out_ref.requires_grad
        if name != "new_empty":
            np.testing.assert_array_equal(out.numpy(), out_ref.detach().numpy())


def test_new_full_matches_torch(torch):
    out = tinynet.ones(2, dtype=tinynet.float64).new_full((2, 2), 3)
    assert_same(out, torch.ones(2, dtype=torch.float64).new_full((2, 2), 3))
    out = tinynet.ones(2).new_full([3], 7, dtype=tinynet.int64)
    assert_same(out, torch.ones(2).new_full([3], 7, dtype=torch.int64))


@pytest.mark.parametrize("p", [2, 1, INF, -INF, 0, 3, 1.5, 0.5, -1, "fro"])
@pytest.mark.parametrize("dim, keepdim", [(None, False), (1, False), ((0, 2), True), (-1, True)])
def test_norm_matches_torch(torch, p, dim, keepdim):
    if p == "fro" and dim is not None and not isinstance(dim, tuple):
        dim = (dim,)
    ours, ref = both(torch, np.random.default_rng(2).standard_normal((3, 4, 2)), grad=True)
    out, out_ref = ours.norm(p, dim, keepdim), ref.norm(p, dim, keepdim)
    assert_same(out, out_ref, rtol=1e-10)
    out.sum().backward()
    out_ref.sum().backward()
    if ref.grad is None:                       # p = 0: no gradient, as in PyTorch
        assert ours.grad is None
    else:
        assert_same(ours.grad, ref.grad, rtol=1e-10)


@pytest.mark.parametrize("p", [2, 1, INF, -INF, 3, 1.5, 0.5, "fro"])
def test_norm_gradient_at_zero_is_torchs(torch, p):
    for values in ([0.0, 0.0, 0.0], [0.0, 1.0, -1.0], [[0.0, 0.0], [2.0, 0.0]]):
        ours, ref = both(torch, np.array(values), grad=True)
        ours.norm(p, dim=-1).sum().backward()
        ref.norm(p, dim=-1).sum().backward()
        assert np.isfinite(ours.grad.numpy()).all()
        assert_same(ours.grad, ref.grad)


def test_norm_refuses_what_it_does_not_compute():
    with pytest.raises(TypeError, match="floating point"):
        tinynet.arange(3).norm()
    with pytest.raises(ValueError, match="'nuc'"):
        tinynet.ones(2, 2).norm("nuc")
    with pytest.raises(ValueError, match="one or two dims"):
        tinynet.ones(2, 2, 2).norm("fro", dim=(0, 1, 2))


@pytest.mark.parametrize("op", ["var", "std"])
@pytest.mark.parametrize("correction", [0, 1, 2, 0.5])
@pytest.mark.parametrize("dim, keepdim", [(None, False), (0, True), ((0, 2), False),
                                          ((-1, 1), True)])
def test_var_std_corrections_match_torch(torch, op, correction, dim, keepdim):
    ours, ref = both(torch, np.random.default_rng(3).standard_normal((3, 4, 5)), grad=True)
    out = getattr(ours, op)(dim, keepdim=keepdim, correction=correction)
    out_ref = getattr(ref, op)(dim, keepdim=keepdim, correction=correction)
    assert_same(out, out_ref, rtol=1e-10)
    (out * out).sum().backward()
    (out_ref * out_ref).sum().backward()
    assert_same(ours.grad, ref.grad, rtol=1e-10)


def test_std_of_constant_rows_has_torchs_zero_gradient(torch):
    x = np.array([[1.0, 1.0, 1.0], [1.0, 2.0, 4.0]])
    ours, ref = both(torch, x, grad=True)
    ours.std(dim=1).sum().backward()
    ref.std(dim=1).sum().backward()
    assert_same(ours.grad, ref.grad)


def test_tolist_gives_python_scalars_like_torch(torch):
    for value in (1.5, 3, True, [[1, 2]], [0.25]):
        ours, ref = tinynet.tensor(value).tolist(), torch.tensor(value).tolist()
        assert ours == ref and type(ours) is type(ref)
    assert type(tinynet.tensor([1.5, 2.5]).sum().tolist()) is float


# ------------------------------------------------------------------- tensor()

PYTHON_DATA = ["[1, 2, 3]", "3", "2.5", "True", "[True, False]", "[True, 2]", "[True, 1.5]",
               "[1, 2.5]", "[[1], [2.5]]", "(1, 2)", "range(3)", "[]", "[[]]",
               "np.float64(1.5)", "np.int32(1)", "np.bool_(True)", "[np.float64(1.0), 2.0]",
               "[np.float32(1.0), 2]", "[np.int32(1), 2]", "[np.uint8(1), 2]",
               "[np.array([1.0, 2.0]), np.array([3.0, 4.0])]", "np.arange(3.0)",
               "np.arange(3, dtype=np.uint8)", "np.ones(2, np.float32)"]


@pytest.mark.filterwarnings("ignore:Creating a tensor from a list of numpy")
@pytest.mark.parametrize("text", PYTHON_DATA)
def test_tensor_dtype_follows_torch(torch, text):
    ours, ref = tinynet.tensor(eval(text)), torch.tensor(eval(text))
    assert_same(ours, ref)


def test_explicit_dtype_wins_and_full_infers_like_torch(torch):
    assert tinynet.tensor([1, 2], dtype=tinynet.float64).dtype == np.float64
    assert tinynet.tensor([1.7, -1.7], dtype="int64").tolist() == [1, -1]
    for value in (7, 7.5, True):
        assert_same(tinynet.full((2,), value), torch.full((2,), value))
    assert tinynet.full((2,), 7, dtype=tinynet.float32).dtype == np.float32


def test_tensor_refuses_what_it_cannot_hold():
    with pytest.raises(TypeError, match="str"):
        tinynet.tensor(["a"])
    with pytest.raises(TypeError, match="stack"):
        tinynet.tensor([[tinynet.ones(2)]])


def test_import_tinynet_reaches_data_and_testing():
    code = "import tinynet; tinynet.data.DataLoader; tinynet.testing.gradcheck"
    subprocess.run([sys.executable, "-c", code], check=True)
