"""dtypes, casts and creation against PyTorch: the dtypes float16, uint8, int8, int16
and ``bool``; the casts ``half() long() int() short() char() byte() bool()``;
``type_as``, ``view_as``, ``reshape_as``, ``expand_as``; ``view(dtype)``; the ``dtype=``
of sum, mean, prod, cumsum and cumprod; ``eye``, ``linspace``, ``logspace``;
``var_mean`` and ``std_mean``.

Values, dtypes (by name) and ``requires_grad`` must be PyTorch's, and gradients too (to
1e-10 in float64); the differentiable ones also pass a float64 gradcheck. What PyTorch
refuses, tinynet refuses.
"""
import numpy as np
import pytest

import tinynet
from tinynet.testing import gradcheck

torch = pytest.importorskip("torch")

DTYPES = ["float16", "float32", "float64", "uint8", "int8", "int16", "int32", "int64", "bool"]
TOLERANCE = {"float64": 1e-10, "float32": 1e-6, "float16": 1e-3}


def dtype_name(x):
    if isinstance(x, torch.Tensor):
        return str(x.dtype).removeprefix("torch.")
    return x.dtype.name


def leaves(out):
    return [leaf for item in out for leaf in leaves(item)] if isinstance(out, tuple) else [out]


def assert_same(ours, ref, what="output", tol=0.0):
    """The same shape, dtype name, requires_grad and values (exact for non-floats; to the
    dtype's tolerance for floats, or ``tol`` if larger)."""
    assert isinstance(ours, tinynet.Tensor), f"{what}: {type(ours).__name__}"
    assert tuple(ours.shape) == tuple(ref.shape), (what, ours.shape, tuple(ref.shape))
    assert dtype_name(ours) == dtype_name(ref), (what, dtype_name(ours), dtype_name(ref))
    assert ours.requires_grad == ref.requires_grad, (what, ours.requires_grad)
    a, b = ours.detach().numpy(), ref.detach().numpy()
    if ref.dtype.is_floating_point:
        tol = max(tol, TOLERANCE[dtype_name(ref)])
        np.testing.assert_allclose(a.astype(np.float64), b.astype(np.float64), tol, tol,
                                   equal_nan=True, err_msg=what)
    else:
        np.testing.assert_array_equal(a, b, err_msg=what)


def check(fn, *arrays, grad=True):
    """``fn(lib, *tensors)`` with lib = torch and tinynet on tensors made from the same
    arrays (float ones require grad when ``grad``): the outputs must agree, then the
    gradients of Σ out · w over the outputs that require grad (to the tolerance of the
    least precise output: a gradient through float32 is float32's)."""
    def run(lib):
        tensors = [lib.tensor(a.copy(), requires_grad=grad and a.dtype.kind == "f")
                   for a in arrays]
        return tensors, leaves(fn(lib, *tensors))

    ref_in, ref_out = run(torch)
    our_in, our_out = run(tinynet)
    assert len(our_out) == len(ref_out)
    for k, (o, r) in enumerate(zip(our_out, ref_out, strict=True)):
        assert_same(o, r, f"output {k}")
    tracked = [k for k, r in enumerate(ref_out) if r.requires_grad]
    if not tracked:
        return
    rng = np.random.default_rng(1)
    weights = [rng.standard_normal(tuple(ref_out[k].shape)) for k in tracked]
    for lib, outs in ((torch, ref_out), (tinynet, our_out)):
        total = sum((outs[k].double() * lib.tensor(w)).sum()
                    for k, w in zip(tracked, weights, strict=True))
        total.backward()
    tol = max(TOLERANCE[dtype_name(ref_out[k])] for k in tracked)
    for n, (x, r) in enumerate(zip(our_in, ref_in, strict=True)):
        if r.grad is None:          # no path from the outputs to this input
            assert x.grad is None or not x.grad.numpy().any(), f"grad of input {n}"
        elif r.requires_grad:
            assert x.grad is not None, f"no gradient for input {n}"
            assert_same(x.grad, r.grad, f"grad of input {n}", tol)


def random(*shape, seed=0, dtype=np.float64):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


# ------------------------------------------------------------------- the dtypes
@pytest.mark.parametrize("name", DTYPES)
def test_dtype_names_are_torchs(name):
    dtype = getattr(tinynet, name)
    assert np.dtype(dtype).name == str(getattr(torch, name)).removeprefix("torch.")
    assert name in tinynet.__all__


def test_bool_is_bool_():
    assert tinynet.bool is tinynet.bool_ is np.bool_
    assert isinstance(True, bool)       # Python's own bool is untouched


@pytest.mark.parametrize("name", DTYPES)
def test_tensor_to_and_type_take_every_dtype(name):
    data = np.array([[0.0, 1.0, 2.5], [-1.0, 3.0, 7.75]])
    if name == "uint8":
        data = np.abs(data)         # a negative float to uint8 is undefined in C (and torch)
    check(lambda t, x: t.tensor(x.detach().numpy(), dtype=getattr(t, name)), data)
    check(lambda t, x: (x.to(getattr(t, name)), x.type(getattr(t, name))), data)
    check(lambda t, x: x.to(dtype=getattr(t, name)), data)


@pytest.mark.parametrize("name", DTYPES)
def test_factories_take_every_dtype(name):
    check(lambda t: (t.zeros(2, 3, dtype=getattr(t, name)), t.ones((2,), dtype=getattr(t, name)),
                     t.full((2, 2), 1, dtype=getattr(t, name)),
                     t.eye(3, dtype=getattr(t, name))))
    assert tinynet.empty(4, dtype=getattr(tinynet, name)).dtype.name == \
        dtype_name(torch.empty(4, dtype=getattr(torch, name)))


# ---------------------------------------------------------------------- casts
CASTS = ["float", "double", "half", "long", "int", "short", "char", "byte", "bool"]
VALUES = np.array([[0.0, 0.3, 2.9, 100.2], [1.0, 5.5, 0.0, 63.99]])      # >= 0: byte() too


@pytest.mark.parametrize("method", CASTS)
def test_casts_match_torch(method):
    sign = 1 if method == "byte" else -1      # a negative float to uint8 is undefined in C
    check(lambda t, x: getattr(x, method)(), VALUES)
    check(lambda t, x: getattr(x * sign, method)(), VALUES)
    check(lambda t, x: getattr(x, method)(), VALUES.astype(np.int64))
    check(lambda t, x: getattr(x > 1, method)(), VALUES)
    check(lambda t, x: getattr(x, method)(), VALUES.astype(np.float32))


def test_a_cast_to_its_own_dtype_is_the_tensor_itself():
    x = tinynet.tensor(VALUES)
    assert x.double() is x and x.to(tinynet.float64) is x
    for method in CASTS:
        y = getattr(x, method)()
        assert getattr(y, method)() is y and y.type_as(y) is y


def test_half_is_differentiable_and_the_gradient_comes_back_in_the_input_dtype():
    check(lambda t, x: (x.half() * 3).exp(), random(3, 4) * 0.1)
    x = tinynet.tensor(random(3, 4), requires_grad=True)
    x.half().float().sum().backward()
    assert x.grad.dtype == np.float64 and (x.grad.numpy() == 1).all()


@pytest.mark.parametrize("method", ["long", "int", "short", "char", "byte", "bool"])
def test_integer_casts_never_require_grad(method):
    x = tinynet.tensor(VALUES, requires_grad=True)
    y = getattr(x, method)()
    assert not y.requires_grad and y.is_leaf
    with pytest.raises(RuntimeError, match="floating point"):
        y.requires_grad_()


def test_type_as_matches_torch():
    check(lambda t, x, y: y.type_as(x), random(3, 4), np.arange(4))
    check(lambda t, x, y: (x.type_as(y), (x * 2).type_as(x.float())), random(3, 4),
          np.arange(4).astype(np.int32))
    check(lambda t, x, y: x.type_as(y) * y, random(3, 4), random(4, dtype=np.float32))
    x = tinynet.tensor(random(2))
    assert x.type_as(x) is x


SHAPE_AS = [("view_as", (3, 4), (4, 3)), ("view_as", (2, 3, 4), (24,)), ("view_as", (1,), ()),
            ("reshape_as", (3, 4), (2, 6)), ("reshape_as", (6,), (3, 2, 1)),
            ("expand_as", (3, 1), (3, 4)), ("expand_as", (4,), (2, 3, 4)),
            ("expand_as", (1, 1), (5, 2))]


@pytest.mark.parametrize("method,shape,other", SHAPE_AS, ids=str)
def test_shape_as_methods_match_torch_and_gradcheck(method, shape, other):
    x, y = random(*shape), random(*other, seed=1)
    check(lambda t, a, b: getattr(a, method)(b), x, y)
    check(lambda t, a, b: getattr(a, method)(b.long()), x, y)     # only the shape counts
    assert gradcheck(lambda a: getattr(a, method)(tinynet.tensor(y)),
                     tinynet.tensor(x, requires_grad=True))


def test_shape_as_methods_refuse_what_torch_refuses():
    for lib in (torch, tinynet):
        x, y = lib.tensor(random(3, 4)), lib.tensor(random(5))
        for method in ("view_as", "reshape_as", "expand_as"):
            with pytest.raises((RuntimeError, ValueError)):
                getattr(x, method)(y)
        with pytest.raises(RuntimeError if lib is torch else (RuntimeError, ValueError)):
            lib.tensor(random(3, 2)).expand_as(x)


# -------------------------------------------------------------- view(dtype)
VIEWS = [("float32", "int32", (3, 4)), ("float64", "int64", (2, 3)), ("int64", "float64", (5,)),
         ("float32", "float32", (2, 2)), ("int32", "uint8", (2, 3)), ("float64", "int16", (3,)),
         ("uint8", "int32", (2, 8)), ("int8", "int16", (4, 6)), ("int16", "float16", (3, 2)),
         ("uint8", "bool", (6,)), ("float64", "float32", (1, 2)), ("float32", "float64", (3, 2)),
         ("int32", "float32", ()), ("float64", "int64", (0, 3))]


@pytest.mark.parametrize("source,target,shape", VIEWS, ids=str)
def test_view_dtype_matches_torch(source, target, shape):
    rng = np.random.default_rng(0)
    if source == "uint8" and target == "bool":
        data = rng.integers(0, 2, shape).astype(np.uint8)
    elif np.dtype(source).kind == "f":
        data = rng.standard_normal(shape).astype(source)
    else:
        data = rng.integers(-100, 100, shape).astype(source)
    check(lambda t, x: x.view(getattr(t, target)), data)
    check(lambda t, x: x.view(dtype=getattr(t, target)), data)
    check(lambda t, x: x.view(getattr(t, target)), data, grad=False)


def test_view_dtype_shares_memory_and_is_outside_the_graph():
    x = tinynet.tensor(np.array([1.0, -2.0], np.float32), requires_grad=True)
    bits = x.view(tinynet.int32)
    assert not bits.requires_grad and bits.is_leaf
    assert np.shares_memory(bits.numpy(), x.detach().numpy())
    same = x.view(x.dtype)
    assert not same.requires_grad and same is not x       # as torch: no grad, even so
    assert bits.view(tinynet.float32).tolist() == [1.0, -2.0]
    ints = tinynet.tensor([1, 2, 3])
    with tinynet.no_grad():
        ints.view(tinynet.float64).zero_()
    assert ints.tolist() == [0, 0, 0]
    assert x.view(2, 1).shape == (2, 1) and x.view((1, 2)).requires_grad     # shapes: as before
    assert x.view(np.dtype("int32")).dtype == np.int32


REFUSED_VIEWS = [
    ("a 0-d tensor to another itemsize", lambda t: t.tensor(1.0).view(t.int16)),
    ("a last dim that does not divide", lambda t: t.zeros(3, dtype=t.uint8).view(t.int32)),
    ("a non-contiguous last dim", lambda t: t.zeros(4, 3, dtype=t.uint8).t().view(t.int16)),
    ("strides that do not divide", lambda t: t.zeros(3, 6, dtype=t.uint8)[:, :4].view(t.int32)),
]


@pytest.mark.parametrize("what,fn", REFUSED_VIEWS, ids=[r[0] for r in REFUSED_VIEWS])
def test_view_dtype_refuses_what_torch_refuses(what, fn):
    with pytest.raises(RuntimeError):
        fn(torch)
    with pytest.raises(RuntimeError, match="view"):
        fn(tinynet)


def test_view_takes_a_shape_or_a_dtype_not_both():
    with pytest.raises(TypeError, match="not both"):
        tinynet.zeros(4).view(2, 2, dtype=tinynet.int32)


# ---------------------------------------------------------- dtype= of reductions
def reductions(dtype):
    return [
        lambda t, x: x.sum(dtype=getattr(t, dtype)),
        lambda t, x: t.sum(x, 1, dtype=getattr(t, dtype)),
        lambda t, x: x.sum((0, 1), keepdim=True, dtype=getattr(t, dtype)),
        lambda t, x: x.prod(dtype=getattr(t, dtype)),
        lambda t, x: t.prod(x, 0, keepdim=True, dtype=getattr(t, dtype)),
        lambda t, x: x.cumsum(1, dtype=getattr(t, dtype)),
        lambda t, x: t.cumprod(x, 0, dtype=getattr(t, dtype)),
    ]


@pytest.mark.parametrize("source", ["float64", "float32", "int32", "int64", "uint8", "bool"])
@pytest.mark.parametrize("dtype", ["float64", "float32", "int32", "int64", "int16"])
def test_sum_prod_cumsum_dtype_match_torch(source, dtype):
    x = np.array([[0.5, 1.25, -2.0, 3.0], [1.5, -0.75, 2.0, 1.0]])
    if np.dtype(source).kind != "f":
        x = (x * 2).astype(np.int64).clip(0 if source in ("uint8", "bool") else -9, 9)
    x = x.astype(source)
    for k, fn in enumerate(reductions(dtype)):
        try:
            check(fn, x, grad=np.dtype(dtype).kind == "f")
        except AssertionError as error:
            raise AssertionError(f"reduction {k}: {error}") from None


@pytest.mark.parametrize("k", range(len(reductions("int32"))))
@pytest.mark.parametrize("dtype", ["int32", "int64", "uint8", "bool"])
def test_integer_dtype_of_a_tensor_that_requires_grad_is_refused_as_torch(k, dtype):
    x = random(2, 3)
    if dtype == "bool" and k >= 5:      # cumsum, cumprod: torch has no bool dtype at all
        for lib in (torch, tinynet):
            with pytest.raises((RuntimeError, TypeError), match="(?i)bool"):
                reductions(dtype)[k](lib, lib.tensor(x))
        return
    for lib in (torch, tinynet):
        fn = reductions(dtype)[k]
        with pytest.raises(RuntimeError, match="(?i)autograd does not support dtype"
                           if lib is tinynet else "dtype"):
            fn(lib, lib.tensor(x, requires_grad=True))
        with lib.no_grad():
            out = fn(lib, lib.tensor(x, requires_grad=True))
        assert dtype_name(out) == dtype and not out.requires_grad
    check(reductions(dtype)[k], x, grad=False)     # the values, without grad


@pytest.mark.parametrize("source", ["float64", "float32"])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_mean_dtype_matches_torch(source, dtype):
    x = random(3, 4).astype(source)
    check(lambda t, a: (a.mean(dtype=getattr(t, dtype)), t.mean(a, 0, dtype=getattr(t, dtype)),
                        a.mean((0, 1), keepdim=True, dtype=getattr(t, dtype))), x)


def test_mean_of_ints_with_a_float_dtype_matches_torch():
    check(lambda t, a: (a.mean(dtype=t.float64), a.mean(1, dtype=t.float32)),
          np.arange(12).reshape(3, 4))


def test_mean_refuses_an_integer_dtype_as_torch():
    for lib in (torch, tinynet):
        with pytest.raises((RuntimeError, TypeError)):
            lib.tensor([1.0, 2.0]).mean(dtype=lib.int64)
    with pytest.raises(TypeError, match="floating point"):
        tinynet.tensor([1.0, 2.0]).mean(dtype=tinynet.int32)


@pytest.mark.parametrize("source", ["uint8", "int8", "int16", "bool"])
def test_small_integers_reduce_to_int64_as_torch(source):
    x = np.array([[1, 0, 3], [2, 1, 1]]).astype(source)
    check(lambda t, a: (a.sum(), a.sum(0), a.prod(), a.prod(1), a.cumsum(1), a.cumprod(0)), x)


def test_reductions_with_a_wider_dtype_do_not_overflow():
    check(lambda t, a: (a.sum(), a.sum(dtype=t.int16), a.sum(dtype=t.uint8)),
          np.full((4, 100), 250, np.uint8))
    check(lambda t, a: (a.sum(dtype=t.float64), a.mean(dtype=t.float64)),
          np.full(10, 60000.0, np.float16), grad=False)


@pytest.mark.parametrize("name", ["sum", "mean", "prod", "cumsum", "cumprod"])
def test_reductions_with_dtype_gradcheck(name):
    x = tinynet.tensor(random(3, 4), requires_grad=True)
    dim = () if name in ("sum", "mean", "prod") else (1,)
    assert gradcheck(lambda a: getattr(a, name)(*dim, dtype=tinynet.float64), x)
    assert gradcheck(lambda a: getattr(tinynet, name)(a, *(dim or (0,)), dtype=tinynet.float64), x)


def test_without_dtype_the_fast_paths_are_untouched():
    x = tinynet.tensor(random(3, 4), requires_grad=True)
    for out in (x.sum(), x.mean(1), x.prod(0)):
        assert out.grad_fn.fn.__name__ in ("Sum", "Mean", "Prod")
        assert out.grad_fn.inputs[0] is x
    y = x.sum(dtype=tinynet.float64)
    assert y.grad_fn.fn.__name__ == "Sum" and y.grad_fn.inputs[0] is x     # no cast needed


# ------------------------------------------------------------------- creation
CREATION = [
    lambda t: t.eye(3),
    lambda t: t.eye(2, 4),
    lambda t: t.eye(4, 2, dtype=t.int64),
    lambda t: t.eye(0),
    lambda t: t.eye(3, 0),
    lambda t: t.eye(1, dtype=t.bool),
    lambda t: t.eye(3, m=3, dtype=t.float64, requires_grad=True),
    lambda t: t.linspace(0, 1, 5),
    lambda t: t.linspace(-2.5, 7.25, 11, dtype=t.float64),
    lambda t: t.linspace(3, -3, 7),
    lambda t: t.linspace(0, 1, 1),
    lambda t: t.linspace(2, 5, 0),
    lambda t: t.linspace(0, 1, 2, dtype=t.float64, requires_grad=True),
    lambda t: t.linspace(0, 10, 5, dtype=t.int64),
    lambda t: t.linspace(-3.7, 10.7, 5, dtype=t.int64),
    lambda t: t.linspace(0.5, 10.7, 6, dtype=t.int32),
    lambda t: t.linspace(0, 1000, 1001, dtype=t.float64),
    lambda t: t.linspace(-1, 1, 100),
    lambda t: t.linspace(0, 1, 9, dtype=t.float16),
    lambda t: t.linspace(t.tensor(1.0), t.tensor(2.0), 3, dtype=t.float64),
    lambda t: t.logspace(0, 2, 3),
    lambda t: t.logspace(-2, 2, 9, dtype=t.float64),
    lambda t: t.logspace(0.5, 2.5, 3, base=2),
    lambda t: t.logspace(1, 3, 3, base=2.0, dtype=t.float64),
    lambda t: t.logspace(3, 0, 4, 10.0, dtype=t.float64),
    lambda t: t.logspace(0, 2, 3, dtype=t.int64),
    lambda t: t.logspace(0, 1, 1),
    lambda t: t.logspace(0, 1, 0),
    lambda t: t.logspace(-1, 1, 5, base=np.e, dtype=t.float64, requires_grad=True),
]


@pytest.mark.parametrize("k", range(len(CREATION)))
def test_creation_matches_torch(k):
    check(CREATION[k])


def test_created_leaves_take_gradients():
    x = tinynet.linspace(0, 1, 5, dtype=tinynet.float64, requires_grad=True)
    (x * x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.linspace(0, 1, 5), 1e-15)
    assert tinynet.eye(2, requires_grad=True).is_leaf


CREATION_REFUSED = [
    ("negative steps", lambda t: t.linspace(0, 1, -1), ValueError),
    ("negative steps logspace", lambda t: t.logspace(0, 1, -2), ValueError),
    ("float steps", lambda t: t.linspace(0, 1, 2.0), TypeError),
    ("bool linspace", lambda t: t.linspace(0, 1, 3, dtype=t.bool), TypeError),
    ("bool logspace", lambda t: t.logspace(0, 1, 3, dtype=t.bool), TypeError),
    ("no steps", lambda t: t.linspace(0, 1), TypeError),
    ("negative n", lambda t: t.eye(-1), ValueError),
    ("negative m", lambda t: t.eye(2, -3), ValueError),
    ("float n", lambda t: t.eye(2.5), TypeError),
    ("int eye requires grad", lambda t: t.eye(2, dtype=t.int64, requires_grad=True),
     RuntimeError),
    ("int linspace requires grad",
     lambda t: t.linspace(0, 4, 5, dtype=t.int32, requires_grad=True), RuntimeError),
]


@pytest.mark.parametrize("what,fn,error", CREATION_REFUSED, ids=[c[0] for c in CREATION_REFUSED])
def test_creation_refuses_what_torch_refuses(what, fn, error):
    with pytest.raises((RuntimeError, TypeError, NotImplementedError)):
        fn(torch)
    with pytest.raises(error):
        fn(tinynet)


# ---------------------------------------------------------- var_mean, std_mean
MOMENTS = [
    lambda t, x: t.var_mean(x),
    lambda t, x: t.std_mean(x),
    lambda t, x: t.var_mean(x, 1),
    lambda t, x: t.std_mean(x, 0, keepdim=True),
    lambda t, x: t.var_mean(x, (0, 2), correction=0),
    lambda t, x: t.std_mean(x, dim=-1, correction=2),
    lambda t, x: t.var_mean(x, 1, False),
    lambda t, x: t.std_mean(x, 1, True, True),
    lambda t, x: t.var_mean(x, dim=(1,), unbiased=False, keepdim=True),
    lambda t, x: t.std_mean(x.float(), 2),
]


@pytest.mark.parametrize("k", range(len(MOMENTS)))
def test_var_mean_and_std_mean_match_torch_and_gradcheck(k):
    x = random(2, 3, 4)
    check(MOMENTS[k], x)
    ours = MOMENTS[k](tinynet, tinynet.tensor(x))
    assert type(ours) is tuple and len(ours) == 2
    if k != len(MOMENTS) - 1:
        assert gradcheck(lambda a: MOMENTS[k](tinynet, a), tinynet.tensor(x, requires_grad=True))


def test_var_mean_is_var_and_mean():
    x = tinynet.tensor(random(3, 5))
    v, m = tinynet.var_mean(x, 1, correction=0)
    np.testing.assert_array_equal(v.numpy(), x.var(1, correction=0).numpy())
    np.testing.assert_array_equal(m.numpy(), x.mean(1).numpy())
    s, m = tinynet.std_mean(x)
    np.testing.assert_array_equal(s.numpy(), x.std().numpy())


def test_var_mean_of_one_value_warns_as_torch():
    with pytest.warns(UserWarning, match="degrees of freedom"):
        torch.var_mean(torch.ones(3, 1), 1)
    with pytest.warns(UserWarning, match="degrees of freedom") as caught:
        v, m = tinynet.var_mean(tinynet.ones(3, 1), 1)
    assert caught[0].filename == __file__
    assert np.isnan(v.numpy()).all() and (m.numpy() == 1).all()
