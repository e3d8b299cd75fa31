"""Trigonometric, hyperbolic and rounding functions, rsqrt, lerp, prod, isclose,
any/all, floor division and the bitwise operators, against PyTorch.

Values and gradients must be PyTorch's to 1e-10 (float64), at the edges too
(0, -0, ±1, ±inf, NaN), with the upstream gradient 1 and inf as in
test_op_edges.py; the differentiable ones also pass a float64 gradcheck.
"""
import math
import warnings

import numpy as np
import pytest

import tinynet
from tinynet.testing import gradcheck

torch = pytest.importorskip("torch")

INF, NAN = math.inf, math.nan
EDGES = [0.0, -0.0, 0.5, -0.5, 1.0, -1.0, -2.0, 2.5, 1e300, INF, -INF, NAN]
UPSTREAM = [1.0, INF]
SMOOTH = ["sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh",
          "atanh", "rsqrt"]
STEPS = ["floor", "ceil", "round", "trunc"]
# Where each smooth function is differentiable, for the random inputs.
DOMAINS = {"asin": (-0.9, 0.9), "acos": (-0.9, 0.9), "atanh": (-0.9, 0.9),
           "acosh": (1.1, 3.0), "rsqrt": (0.2, 3.0), "tan": (-1.2, 1.2)}


def run(lib, fn, arrays, upstream=1.0, grad=True):
    """fn's output and the gradient of every input, as NumPy arrays (no warnings
    may escape tinynet's ops)."""
    inputs = [lib.tensor(a, requires_grad=grad) for a in arrays]
    with warnings.catch_warnings():
        if lib is tinynet:
            warnings.simplefilter("error")
        out = fn(lib, *inputs)
        if grad:
            dtype = out.detach().numpy().dtype
            out.backward(lib.tensor(np.full(tuple(out.shape), upstream, dtype=dtype)))
    grads = [None if x.grad is None else x.grad.numpy() for x in inputs] if grad else []
    return [np.asarray(out.detach().numpy())] + grads


def assert_matches_torch(fn, arrays, upstream=1.0, grad=True):
    ours = run(tinynet, fn, arrays, upstream, grad)
    ref = run(torch, fn, arrays, upstream, grad)
    for i, (o, r) in enumerate(zip(ours, ref, strict=True)):
        what = "forward" if i == 0 else f"grad of input {i - 1}"
        assert (o is None) == (r is None), what
        if r is None:
            continue
        assert o.shape == r.shape and o.dtype == r.dtype, (what, o.shape, r.shape, o.dtype)
        np.testing.assert_allclose(o, r, rtol=1e-10, atol=1e-12, equal_nan=True,
                                   err_msg=f"{what} at {[a.tolist() for a in arrays]}")


def grid(*values):
    """Every combination of the values, one flat float64 array per argument."""
    return [g.ravel() for g in np.meshgrid(*[np.array(v) for v in values], indexing="ij")]


def _method(name):
    return lambda lib, x: getattr(x, name)()


# --------------------------------------------------------- smooth functions

@pytest.mark.parametrize("name", SMOOTH)
def test_smooth_function_matches_torch_and_gradcheck(name):
    low, high = DOMAINS.get(name, (-2.0, 2.0))
    x = np.random.default_rng(1).uniform(low, high, (3, 4))
    assert_matches_torch(_method(name), [x])
    assert_matches_torch(lambda lib, t: getattr(lib, name)(t), [x])
    assert gradcheck(getattr(tinynet, name), tinynet.tensor(x, requires_grad=True))


@pytest.mark.parametrize("upstream", UPSTREAM)
@pytest.mark.parametrize("name", SMOOTH + STEPS)
def test_unary_matches_torch_at_the_edges(name, upstream):
    assert_matches_torch(_method(name), [np.array(EDGES)], upstream)


@pytest.mark.parametrize("name", SMOOTH)
def test_smooth_keeps_float32_and_makes_integers_float32(name):
    x = tinynet.tensor([0.5, 0.25], requires_grad=True)
    y = getattr(x, name)()
    y.sum().backward()
    assert y.dtype == np.float32 and x.grad.dtype == np.float32
    assert getattr(tinynet.tensor([1, 2]), name)().dtype == getattr(
        torch.tensor([1, 2]), name)().numpy().dtype == np.float32


# ------------------------------------------------------------------- rounding

def test_round_is_half_to_even_like_torch():
    x = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49999999999999994, 2.0 ** 52 + 1,
                  -0.3, 1e300])
    assert_matches_torch(_method("round"), [x])
    assert tinynet.tensor([0.5, 1.5, 2.5, -2.5]).round().tolist() == [0.0, 2.0, 2.0, -2.0]
    with pytest.raises(NotImplementedError, match="decimals"):
        tinynet.tensor([1.25]).round(decimals=1)


@pytest.mark.parametrize("name", STEPS)
def test_steps_have_torchs_zero_gradient(name):
    x = np.random.default_rng(2).uniform(-3, 3, (2, 5)).round() + 0.3   # away from jumps
    assert_matches_torch(_method(name), [x])
    assert gradcheck(getattr(tinynet, name), tinynet.tensor(x, requires_grad=True))


@pytest.mark.parametrize("name", STEPS)
def test_steps_keep_integers_and_refuse_bools(name):
    ours = getattr(tinynet.tensor([3, -2]), name)()
    assert ours.dtype == np.int64 and ours.tolist() == [3, -2]
    with pytest.raises(TypeError, match="bool"):
        getattr(tinynet.tensor([True]), name)()


# ----------------------------------------------------------------------- lerp

def test_lerp_matches_torch_and_gradcheck():
    rng = np.random.default_rng(3)
    a, b, w = rng.standard_normal((3, 4)), rng.standard_normal((4,)), rng.uniform(-1, 2, (3, 1))
    for weight in (0.3, 0.5, 0.75, -0.2, 1.0):
        assert_matches_torch(lambda lib, x, y, wt=weight: x.lerp(y, wt), [a, b])
    assert_matches_torch(lambda lib, x, y, z: lib.lerp(x, y, z), [a, b, w])
    inputs = [tinynet.tensor(v, requires_grad=True) for v in (a, b, w)]
    assert gradcheck(tinynet.lerp, inputs)
    assert gradcheck(lambda x, y: x.lerp(y, 0.7), inputs[:2])


@pytest.mark.parametrize("upstream", UPSTREAM)
def test_lerp_matches_torch_at_the_edges(upstream):
    values = [0.0, -1.0, 2.5, INF, -INF, NAN]
    weights = [0.0, 0.25, 0.5, 1.0, -1.0, 2.0, INF, NAN]
    assert_matches_torch(lambda lib, a, b, w: lib.lerp(a, b, w), grid(values, values, weights),
                         upstream)
    for weight in weights:
        assert_matches_torch(lambda lib, a, b, w=weight: lib.lerp(a, b, w),
                             grid(values, values), upstream)


def test_lerp_refuses_what_torch_refuses():
    x = tinynet.tensor([1.0, 2.0])
    with pytest.raises(TypeError, match="end must be a Tensor"):
        tinynet.lerp(x, 2.0, 0.5)
    with pytest.raises(TypeError, match="dtype"):
        tinynet.lerp(x, x.double(), 0.5)
    with pytest.raises(ValueError, match="broadcast"):
        tinynet.lerp(x, tinynet.ones(3), 0.5)
    with pytest.raises(TypeError, match="floating point"):
        tinynet.lerp(tinynet.tensor([1, 2]), tinynet.tensor([3, 4]), 0.5)


# ----------------------------------------------------------------------- prod

PROD_ROWS = [[2.0, 3.0, 4.0], [2.0, 0.0, 4.0], [0.0, 3.0, 0.0], [0.0, 0.0, 0.0],
             [-0.0, 2.0, 1.0], [INF, 2.0, 3.0], [INF, 0.0, 3.0], [NAN, 2.0, 0.0],
             [NAN, 0.0, 0.0], [INF, 0.0, 0.0], [1e200, 1e200, 0.0]]


@pytest.mark.parametrize("upstream", UPSTREAM)
@pytest.mark.parametrize("row", PROD_ROWS, ids=str)
def test_prod_matches_torch_with_zeros_inf_and_nan(row, upstream):
    x = np.array(row)
    assert_matches_torch(lambda lib, t: t.prod(), [x], upstream)
    assert_matches_torch(lambda lib, t: t.prod(0), [x], upstream)
    assert_matches_torch(lambda lib, t: t.reshape(3, 1).prod(1), [x], upstream)


@pytest.mark.parametrize("zeros", [0, 1, 2, 3])
def test_prod_over_dims_matches_torch(zeros):
    x = np.random.default_rng(4).uniform(0.5, 2.0, (3, 4, 2))
    x.flat[[1, 7, 13][:zeros]] = 0.0
    for dim, keepdim in [(None, False), (0, False), (1, True), (-1, False), (2, True)]:
        args = () if dim is None else (dim, keepdim)
        assert_matches_torch(lambda lib, t, a=args: t.prod(*a), [x])
        assert_matches_torch(lambda lib, t, a=args: lib.prod(t, *a), [x])
    for dim in (None, 0, 1, 2):
        assert gradcheck(lambda t, d=dim: t.prod(d), tinynet.tensor(x, requires_grad=True))


def test_prod_of_a_0d_tensor_and_of_integers():
    for x in (np.array(0.0), np.array(2.5)):
        assert_matches_torch(lambda lib, t: t.prod(), [x])
        assert_matches_torch(lambda lib, t: t.prod(0), [x])
    for data in ([2, 3, 4], [True, True], np.array([2, 3], dtype=np.int32)):
        ours, ref = tinynet.tensor(data).prod(), torch.tensor(data).prod()
        assert ours.item() == ref.item() and ours.dtype == ref.numpy().dtype
    with pytest.raises(TypeError, match="one dim"):
        tinynet.ones(2, 3).prod((0, 1))


# ----------------------------------------------------------- isclose, any, all

def test_isclose_matches_torch_at_the_edges():
    values = [0.0, -0.0, 1.0, 1.0 + 1e-6, 1.0 + 1e-4, 1e-9, -1e-9, 1e300, INF, -INF, NAN]
    a, b = grid(values, values)
    for options in ({}, {"equal_nan": True}, {"rtol": 0.0, "atol": 0.0}, {"rtol": 0.1},
                    {"atol": 1e-3, "equal_nan": True}, {"rtol": 0.0, "atol": 1e-8}):
        assert_matches_torch(lambda lib, x, y, o=options: lib.isclose(x, y, **o), [a, b],
                             grad=False)
        with np.errstate(over="ignore"):             # 1e300 is inf in float32
            single = [a.astype(np.float32), b.astype(np.float32)]
        assert_matches_torch(lambda lib, x, y, o=options: x.isclose(y, **o), single, grad=False)


def test_isclose_on_integers_and_bools_and_its_errors():
    for a, b in (([1, 2, 100000], [1, 3, 100001]), ([True, False], [True, True])):
        ours = tinynet.isclose(tinynet.tensor(a), tinynet.tensor(b))
        assert ours.tolist() == torch.isclose(torch.tensor(a), torch.tensor(b)).tolist()
    x = tinynet.tensor([1.0], requires_grad=True)
    assert tinynet.isclose(x, x).dtype == np.bool_ and not tinynet.isclose(x, x).requires_grad
    with pytest.raises(TypeError, match="one dtype"):
        tinynet.isclose(x, x.double())
    with pytest.raises(TypeError, match="Tensor"):
        tinynet.isclose(x, 1.0)
    with pytest.raises(ValueError, match=">= 0"):
        tinynet.isclose(x, x, rtol=-1.0)


@pytest.mark.parametrize("name", ["any", "all"])
def test_any_all_match_torch(name):
    data = [np.array([[0.0, 1.0, NAN], [0.0, 0.0, 0.0]]), np.array([[True, False], [True, True]]),
            np.array([[3, 0], [1, 2]]), np.zeros((0, 3)), np.array(0.0), np.array(-0.0),
            np.array([[NAN, 1.0]])]
    for x in data:
        calls = [()] + [(d, k) for d in range(x.ndim) for k in (False, True)]
        for args in calls:
            ours = getattr(tinynet.tensor(x), name)(*args)
            ref = getattr(torch.tensor(x), name)(*args)
            assert ours.dtype == np.bool_ and ours.shape == tuple(ref.shape), (x, args)
            assert ours.tolist() == ref.tolist(), (x, args)
        assert getattr(tinynet, name)(tinynet.tensor(x)).tolist() == getattr(torch, name)(
            torch.tensor(x)).tolist()
    ours = getattr(tinynet.ones(2, 3, 2), name)(dim=(0, 2), keepdim=True)
    assert ours.shape == (1, 3, 1)


# ------------------------------------------------------------- floor division

@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_floor_divide_matches_torch_at_the_edges(dtype):
    values = [0.0, -0.0, 1.0, -1.0, 2.5, -7.0, 7.0, 0.3, 1e30, INF, -INF, NAN]
    a, b = (v.astype(dtype) for v in grid(values, values))
    ours = (tinynet.tensor(a) // tinynet.tensor(b)).numpy()
    ref = (torch.tensor(a) // torch.tensor(b)).numpy()
    assert ours.dtype == ref.dtype
    np.testing.assert_array_equal(ours, ref)
    number = ~np.isnan(ref)                          # -0.0 and 0.0 told apart; NaN's sign not
    np.testing.assert_array_equal(np.signbit(ours[number]), np.signbit(ref[number]))


def test_floor_divide_with_numbers_and_integers():
    t, r = tinynet.tensor([7, -7, 0, 9]), torch.tensor([7, -7, 0, 9])
    for ours, ref in ((t // 2, r // 2), (t // -2, r // -2), (20 // (t + 8), 20 // (r + 8)),
                      (t // tinynet.tensor([2, 3, -4, 5]), r // torch.tensor([2, 3, -4, 5])),
                      (tinynet.floor_divide(t, 4), torch.floor_divide(r, 4)),
                      (t.floor_divide(3), r.floor_divide(3))):
        assert ours.tolist() == ref.tolist() and ours.dtype == ref.numpy().dtype
    x = np.array([3.5, -2.0, 0.25])
    assert_matches_torch(lambda lib, u: u // 0.5, [x], grad=False)
    assert_matches_torch(lambda lib, u: 1.0 // u, [x], grad=False)
    with pytest.raises(ZeroDivisionError):
        t // 0
    with pytest.raises(ZeroDivisionError):
        7 // t
    with pytest.raises(TypeError, match="bool"):
        tinynet.tensor([True]) // tinynet.tensor([True])


def test_floor_divide_is_not_differentiable_as_in_torch():
    for lib in (tinynet, torch):
        x = lib.tensor([3.5, -2.0], requires_grad=True)
        y = x // 2
        assert y.requires_grad
        with pytest.raises(RuntimeError, match="derivative for .*floor_divide is not impl"):
            (y * 3 + x).sum().backward()
    with tinynet.no_grad():
        assert not (tinynet.tensor([3.5], requires_grad=True) // 2).requires_grad


# -------------------------------------------------------------------- bitwise

BITWISE = {"and": lambda a, b: a & b, "or": lambda a, b: a | b, "xor": lambda a, b: a ^ b}


@pytest.mark.parametrize("name", list(BITWISE))
def test_bitwise_operators_match_torch(name):
    op = BITWISE[name]
    bools, ints = [True, False, True, False], [5, -3, 0, 12]
    others = [[True, True, False, False], [3, 6, -1, 8], True, False, 1, 6]
    for left in (bools, ints):
        for right in others:
            right_ours = tinynet.tensor(right) if isinstance(right, list) else right
            right_ref = torch.tensor(right) if isinstance(right, list) else right
            for ours, ref in ((op(tinynet.tensor(left), right_ours),
                               op(torch.tensor(left), right_ref)),
                              (op(right_ours, tinynet.tensor(left)),
                               op(right_ref, torch.tensor(left)))):
                assert ours.tolist() == ref.tolist(), (left, right)
                assert ours.dtype == ref.numpy().dtype, (left, right)
    method = getattr(tinynet.tensor(ints), f"bitwise_{name}")(3)
    function = getattr(tinynet, f"bitwise_{name}")(tinynet.tensor(ints), 3)
    assert method.tolist() == function.tolist() == op(torch.tensor(ints), 3).tolist()
    assert op(tinynet.ones(2, 1, dtype=tinynet.int64), tinynet.tensor([1, 2, 3])).shape == (2, 3)


def test_invert_matches_torch():
    for data in ([True, False], [5, -1, 0], np.array([7, 0], dtype=np.int32)):
        ours, ref = ~tinynet.tensor(data), ~torch.tensor(data)
        assert ours.tolist() == ref.tolist() and ours.dtype == ref.numpy().dtype
        assert tinynet.bitwise_not(tinynet.tensor(data)).tolist() == ref.tolist()


def test_bitwise_refuses_floats():
    x, b = tinynet.tensor([1.0, 0.0]), tinynet.tensor([True, False])
    for expression in (lambda: x & x, lambda: x | b, lambda: b ^ x, lambda: ~x,
                       lambda: b & 1.0, lambda: 2.5 | b, lambda: x.bitwise_and(b)):
        with pytest.raises(TypeError, match="bool and integer|bool or integer"):
            expression()


# ------------------------------------------------------------------ exports

def test_names_are_on_tinynet_and_on_tensors():
    names = SMOOTH + STEPS + ["lerp", "isclose", "prod", "any", "all", "floor_divide",
                              "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not"]
    for name in names:
        assert name in tinynet.__all__ and callable(getattr(tinynet, name))
        assert callable(getattr(tinynet.Tensor, name))
        assert hasattr(torch, name) and hasattr(torch.Tensor, name)
    assert not hasattr(tinynet.ones(1), "__dict__")      # the mixin keeps __slots__
