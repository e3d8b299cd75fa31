"""softplus, ELU, leaky ReLU, normalize, binary cross-entropy (from probabilities and
from logits) and cross-entropy (class indices or probabilities, weight, ignore_index,
label smoothing), and their modules, against PyTorch.

Forward values and every gradient (input, target, weight where PyTorch has one) must
be PyTorch's to 1e-10 in float64, at the edges too (0, ±inf, NaN, huge and tiny
values): inf of the same sign and NaN at the same places, upstream gradients of 1
and of inf (which tells ``grad * mask`` from masking). NumPy warnings must not
escape. Float64 finite differences check the gradients independently of PyTorch.
"""
import math
import warnings

import numpy as np
import pytest

import tinynet
from tinynet import nn
from tinynet.nn import functional as F
from tinynet.ops.loss import CrossEntropyFunction
from tinynet.testing import gradcheck

torch = pytest.importorskip("torch")

INF, NAN = math.inf, math.nan
REDUCTIONS = ["mean", "sum", "none"]


def rng(seed=0):
    return np.random.default_rng(seed)


def lib_tensor(lib, value, requires_grad):
    if not isinstance(value, np.ndarray):
        return value
    return lib.tensor(value, requires_grad=requires_grad and value.dtype.kind == "f")


def run(lib, fn, arrays, grads, upstream=None):
    """fn(lib, *tensors), then backward from Σ out·dy (dy random, or ``upstream``
    everywhere); returns [out, grad of each array marked in ``grads``]."""
    tensors = [lib_tensor(lib, a, g) for a, g in zip(arrays, grads, strict=True)]
    out = fn(lib, *tensors)
    shape = tuple(out.shape)
    dy = (rng(9).standard_normal(shape) if upstream is None else np.full(shape, upstream))
    out.backward(lib.tensor(dy, dtype=out.dtype))
    result = [out.detach().numpy()]
    for t, g in zip(tensors, grads, strict=True):
        if g:
            result.append(None if t.grad is None else t.grad.numpy())
    return [None if r is None else np.asarray(r) for r in result]


def assert_same(ours, ref, what, rtol=1e-10, atol=1e-12):
    assert (ours is None) == (ref is None), f"{what}: tinynet {ours}, torch {ref}"
    if ref is None:
        return
    assert ours.shape == ref.shape, f"{what}: shape {ours.shape}, torch {ref.shape}"
    with np.errstate(invalid="ignore"):
        wrong = ~np.isclose(ours, ref, rtol=rtol, atol=atol, equal_nan=True)
    if wrong.any():
        pytest.fail(f"{what} differs from PyTorch at {np.argwhere(wrong)[:5].tolist()}: "
                    f"tinynet {ours[wrong][:5].tolist()}, torch {ref[wrong][:5].tolist()}")


def check_torch(fn, arrays, grads, upstream=None, **tolerance):
    """tinynet and PyTorch agree; no NumPy warning escapes tinynet."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ours = run(tinynet, fn, arrays, grads, upstream)
    ref = run(torch, fn, arrays, grads, upstream)
    names = ["forward"] + [f"grad of argument {i}" for i, g in enumerate(grads) if g]
    for name, o, r in zip(names, ours, ref, strict=True):
        assert_same(o, r, name, **tolerance)
    return ours


def leaves(*arrays):
    return [tinynet.tensor(a, requires_grad=True) for a in arrays]


def tiled(values, multiple=32):
    """``values`` repeated to a length that is a multiple of 32, so that PyTorch's
    vectorized loops (8 or 16 doubles a step) handle every element, no scalar tail."""
    return np.tile(np.array(values, dtype=np.float64), multiple)


# ----------------------------------------------------------------- activations
ACTIVATIONS = {
    "softplus": lambda lib, x: lib.nn.functional.softplus(x),
    "softplus_beta2_t5": lambda lib, x: lib.nn.functional.softplus(x, 2.0, 5.0),
    "softplus_beta0.5_t1": lambda lib, x: lib.nn.functional.softplus(x, beta=0.5, threshold=1),
    "softplus_beta-1": lambda lib, x: lib.nn.functional.softplus(x, beta=-1.0),
    "softplus_t1000": lambda lib, x: lib.nn.functional.softplus(x, threshold=1000.0),
    "elu": lambda lib, x: lib.nn.functional.elu(x),
    "elu_0.5": lambda lib, x: lib.nn.functional.elu(x, 0.5),
    "elu_2": lambda lib, x: lib.nn.functional.elu(x, alpha=2.0),
    "elu_0": lambda lib, x: lib.nn.functional.elu(x, alpha=0.0),
    "leaky_relu": lambda lib, x: lib.nn.functional.leaky_relu(x),
    "leaky_relu_0.2": lambda lib, x: lib.nn.functional.leaky_relu(x, 0.2),
    "leaky_relu_0": lambda lib, x: lib.nn.functional.leaky_relu(x, negative_slope=0.0),
    "leaky_relu_-0.5": lambda lib, x: lib.nn.functional.leaky_relu(x, -0.5),
    "leaky_relu_1.5": lambda lib, x: lib.nn.functional.leaky_relu(x, 1.5),
}
ACTIVATION_EDGES = [0.0, -0.0, 1.0, -1.0, 2.5, -2.5, 1e-20, -1e-20, 1e-300, 4.99, 5.01,
                    19.99, 20.01, 30.0, -30.0, 700.0, -700.0, 800.0, -800.0, 1e300, -1e300,
                    INF, -INF, NAN]


@pytest.mark.parametrize("shape", [(), (7,), (3, 4, 5)], ids=str)
@pytest.mark.parametrize("name", ACTIVATIONS)
def test_activation_matches_torch(name, shape):
    x = np.asarray(rng().standard_normal(shape) * 8)
    check_torch(ACTIVATIONS[name], [x], [True])


@pytest.mark.parametrize("upstream", [1.0, INF])
@pytest.mark.parametrize("name", ACTIVATIONS)
def test_activation_matches_torch_at_the_edges(name, upstream):
    check_torch(ACTIVATIONS[name], [tiled(ACTIVATION_EDGES)], [True], upstream)


@pytest.mark.parametrize("name", ACTIVATIONS)
def test_activation_gradcheck(name):
    x = rng(1).standard_normal((3, 5)) * 4
    x[np.abs(x) < 1e-3] = 0.5                   # away from the kinks at 0
    assert gradcheck(lambda t: ACTIVATIONS[name](tinynet, t), leaves(x))


@pytest.mark.parametrize("name", ACTIVATIONS)
def test_activation_float32_forward(name):
    x = (rng(2).standard_normal((4, 6)) * 10).astype(np.float32)
    ours = ACTIVATIONS[name](tinynet, tinynet.tensor(x))
    ref = ACTIVATIONS[name](torch, torch.tensor(x))
    assert ours.dtype == np.float32
    np.testing.assert_allclose(ours.numpy(), ref.numpy(), rtol=2e-6, atol=1e-6)


def test_activation_exact_values():
    x = tinynet.tensor([-1e-20, -2.0, 0.0, 3.0], dtype=tinynet.float64)
    np.testing.assert_array_equal(F.elu(x).numpy(), [-1e-20, math.expm1(-2.0), 0.0, 3.0])
    np.testing.assert_array_equal(F.leaky_relu(x, 0.5).numpy(), [-5e-21, -1.0, 0.0, 3.0])
    x = tinynet.tensor([0.0, 25.0, -50.0], dtype=tinynet.float64)
    np.testing.assert_allclose(F.softplus(x).numpy(),
                               [math.log(2.0), 25.0, math.exp(-50.0)], rtol=1e-15)


@pytest.mark.parametrize("module, functional, kwargs, text", [
    (nn.Softplus, F.softplus, dict(beta=2.0, threshold=3.0), "beta=2.0, threshold=3.0"),
    (nn.ELU, F.elu, dict(alpha=0.5), "alpha=0.5"),
    (nn.LeakyReLU, F.leaky_relu, dict(negative_slope=0.2), "negative_slope=0.2"),
])
def test_activation_modules(module, functional, kwargs, text):
    x = tinynet.tensor(rng(3).standard_normal((3, 4)) * 5)
    np.testing.assert_array_equal(module(**kwargs)(x).numpy(), functional(x, **kwargs).numpy())
    np.testing.assert_array_equal(module()(x).numpy(), functional(x).numpy())
    assert text in repr(module(**kwargs))
    torch_module = getattr(torch.nn, module.__name__)(*kwargs.values())
    np.testing.assert_allclose(module(*kwargs.values())(x).numpy(),
                               torch_module(torch.tensor(x.numpy())).numpy(), rtol=1e-12)


@pytest.mark.parametrize("call, error, match", [
    (lambda x: F.softplus(x, beta="2"), TypeError, "beta"),
    (lambda x: F.softplus(x, threshold=NAN), ValueError, "threshold is NaN"),
    (lambda x: F.elu(x, alpha=None), TypeError, "alpha"),
    (lambda x: F.leaky_relu(x, True), TypeError, "negative_slope"),
    (lambda x: nn.ELU(alpha=NAN), ValueError, "alpha is NaN"),
    (lambda x: nn.LeakyReLU("0.1"), TypeError, "negative_slope"),
    (lambda x: nn.Softplus(beta=[1.0]), TypeError, "beta"),
])
def test_activation_errors(call, error, match):
    with pytest.raises(error, match=match):
        call(tinynet.randn(3))


# ------------------------------------------------------------------- normalize
NORMALIZE_CASES = [((4, 5), {}), ((4, 5), dict(p=1.0)), ((3, 4, 5), dict(dim=2)),
                   ((3, 4, 5), dict(dim=0, p=3.0)), ((3, 4, 5), dict(dim=-1, p=INF)),
                   ((6,), dict(dim=0)), ((2, 6), dict(p=0.5, dim=1)), ((2, 3), dict(eps=10.0))]


def _normalize(kwargs):
    return lambda lib, x: lib.nn.functional.normalize(x, **kwargs)


@pytest.mark.parametrize("shape, kwargs", NORMALIZE_CASES, ids=str)
def test_normalize_matches_torch(shape, kwargs):
    x = rng(4).standard_normal(shape)
    if len(shape) > 1:
        x[0] = 0.0                                   # a zero vector: the eps clamp
    check_torch(_normalize(kwargs), [x], [True])
    assert gradcheck(lambda t: F.normalize(t, **kwargs), leaves(rng(5).standard_normal(shape)))


@pytest.mark.parametrize("upstream", [1.0, INF])
@pytest.mark.parametrize("p", [2.0, 1.0, 3.0, INF])
def test_normalize_matches_torch_at_the_edges(p, upstream):
    rows = np.array([[0.0, 0.0, 0.0], [1e-300, 0.0, -1e-300], [1e200, 1e200, 1.0],
                     [INF, 1.0, -2.0], [-INF, 1.0, 2.0], [NAN, 1.0, 0.0], [1e-13, 0.0, 0.0]])
    check_torch(_normalize(dict(p=p, dim=1)), [rows], [True], upstream)


def test_normalize_float32_and_unit_norm():
    x = rng(6).standard_normal((5, 7)).astype(np.float32)
    y = F.normalize(tinynet.tensor(x), dim=1)
    assert y.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(y.numpy(), axis=1), 1.0, rtol=1e-6)
    np.testing.assert_allclose(y.numpy(), torch.nn.functional.normalize(torch.tensor(x)).numpy(),
                               rtol=1e-6)


def test_normalize_errors():
    with pytest.raises(ValueError, match="eps must be >= 0"):
        F.normalize(tinynet.randn(2, 3), eps=-1.0)
    with pytest.raises(IndexError, match="out of range"):
        F.normalize(tinynet.randn(3), dim=1)


# --------------------------------------------------------- binary cross-entropy
def _bce(reduction, weighted):
    def fn(lib, p, t, w=None):
        return lib.nn.functional.binary_cross_entropy(p, t, weight=w if weighted else None,
                                                      reduction=reduction)
    return fn


def _bce_logits(reduction, weighted, pos_weighted):
    def fn(lib, x, t, w=None, pw=None):
        return lib.nn.functional.binary_cross_entropy_with_logits(
            x, t, weight=w if weighted else None, reduction=reduction,
            pos_weight=pw if pos_weighted else None)
    return fn


BCE_SHAPES = [(5,), (3, 4), (2, 3, 4)]
WEIGHT_SHAPES = {"none": None, "full": lambda s: s, "last": lambda s: s[-1:],
                 "one": lambda s: (1,)}


@pytest.mark.parametrize("weight", WEIGHT_SHAPES)
@pytest.mark.parametrize("shape", BCE_SHAPES, ids=str)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_binary_cross_entropy_matches_torch(reduction, shape, weight):
    g = rng(7)
    p, t = g.uniform(0.02, 0.98, shape), g.uniform(0, 1, shape)
    t.flat[::3] = np.round(t.flat[::3])             # some hard 0/1 labels
    w = None if weight == "none" else g.uniform(0, 2, WEIGHT_SHAPES[weight](shape))
    check_torch(_bce(reduction, w is not None), [p, t, w], [True, True, False])
    inside = np.clip(t, 0.01, 0.99)                 # finite differences stay in [0, 1]
    assert gradcheck(lambda a, b: F.binary_cross_entropy(a, b, w, reduction=reduction),
                     leaves(p, inside))


P_EDGES = [0.0, 1.0, 4.9e-324, 1e-300, 1e-50, 1e-20, 0.5, 1 - 1e-16, 1 - 2 ** -53, 0.999]
T_EDGES = [0.0, 1.0, 0.3, 1 - 1e-16]


def grid(xs, ys):
    x, y = np.meshgrid(np.array(xs), np.array(ys), indexing="ij")
    return x.ravel(), y.ravel()


@pytest.mark.parametrize("upstream", [1.0, INF])
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
def test_binary_cross_entropy_matches_torch_at_the_edges(reduction, upstream, weighted):
    p, t = grid(P_EDGES, T_EDGES)
    w = np.resize([0.0, 2.5, 1.0], p.shape)
    check_torch(_bce(reduction, weighted), [p, t, w], [True, True, False], upstream)


def test_binary_cross_entropy_is_clamped_at_100():
    p = tinynet.tensor([0.0, 1.0, 0.0, 1.0], dtype=tinynet.float64, requires_grad=True)
    loss = F.binary_cross_entropy(p, np.array([1.0, 0.0, 0.0, 1.0]), reduction="none")
    np.testing.assert_array_equal(loss.numpy(), [100.0, 100.0, 0.0, 0.0])
    loss.sum().backward()
    floor = float(np.float32(1e-12))               # PyTorch's float EPSILON
    np.testing.assert_array_equal(p.grad.numpy(), [-1 / floor, 1 / floor, 0.0, 0.0])


@pytest.mark.parametrize("pos_weight", WEIGHT_SHAPES)
@pytest.mark.parametrize("weight", ["none", "full", "last"])
@pytest.mark.parametrize("shape", BCE_SHAPES, ids=str)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_binary_cross_entropy_with_logits_matches_torch(reduction, shape, weight, pos_weight):
    g = rng(8)
    x, t = g.standard_normal(shape) * 4, g.uniform(0, 1, shape)
    w = None if weight == "none" else g.uniform(0, 2, WEIGHT_SHAPES[weight](shape))
    pw = None if pos_weight == "none" else g.uniform(0.1, 3, WEIGHT_SHAPES[pos_weight](shape))
    fn = _bce_logits(reduction, w is not None, pw is not None)
    check_torch(fn, [x, t, w, pw], [True, True, False, False])
    assert gradcheck(lambda a, b: F.binary_cross_entropy_with_logits(
        a, b, w, reduction=reduction, pos_weight=pw), leaves(x, t))


X_EDGES = [0.0, -0.0, 1.0, -1.0, 30.0, -30.0, 800.0, -800.0, 1e4, -1e4, 1e300, -1e300,
           INF, -INF, NAN]


@pytest.mark.parametrize("upstream", [1.0, INF])
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("pos_weight", [None, 3.0, 0.0])
def test_binary_cross_entropy_with_logits_matches_torch_at_the_edges(pos_weight, reduction,
                                                                     upstream):
    x, t = grid(X_EDGES, [0.0, 1.0, 0.25, -0.5])
    w = np.resize([1.0, 0.0, 2.0], x.shape)
    pw = None if pos_weight is None else np.array([pos_weight])
    fn = _bce_logits(reduction, True, pw is not None)
    check_torch(fn, [x, t, w, pw], [True, True, False, False], upstream)


def test_binary_cross_entropy_with_logits_is_exact_for_large_logits():
    x = tinynet.tensor([-800.0, -40.0, 40.0, 800.0], dtype=tinynet.float64, requires_grad=True)
    loss = F.binary_cross_entropy_with_logits(x, np.array([1.0, 1.0, 0.0, 0.0]),
                                              reduction="none")
    np.testing.assert_allclose(loss.numpy(), [800.0, 40.0, 40.0, 800.0], rtol=1e-15)
    loss.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [-1.0, -1.0, 1.0, 1.0], rtol=1e-15)


@pytest.mark.parametrize("logits", [False, True])
def test_binary_cross_entropy_float32_forward(logits):
    g = rng(10)
    x = (g.standard_normal((6, 3)) * 3).astype(np.float32)
    p = 1 / (1 + np.exp(-x))
    t = g.uniform(0, 1, x.shape).astype(np.float32)
    w = g.uniform(0, 2, 3).astype(np.float32)
    for reduction in REDUCTIONS:
        if logits:
            ours = F.binary_cross_entropy_with_logits(tinynet.tensor(x), tinynet.tensor(t),
                                                      tinynet.tensor(w), reduction=reduction)
            ref = torch.nn.functional.binary_cross_entropy_with_logits(
                torch.tensor(x), torch.tensor(t), torch.tensor(w), reduction=reduction)
        else:
            ours = F.binary_cross_entropy(tinynet.tensor(p), t, w, reduction=reduction)
            ref = torch.nn.functional.binary_cross_entropy(
                torch.tensor(p), torch.tensor(t), torch.tensor(w), reduction=reduction)
        assert ours.dtype == np.float32
        np.testing.assert_allclose(ours.numpy(), ref.numpy(), rtol=2e-6, atol=1e-6)


def test_bce_modules():
    g = rng(11)
    x, t = g.standard_normal((4, 3)), g.uniform(0, 1, (4, 3))
    w, pw = g.uniform(0.5, 2, 3), g.uniform(0.5, 2, 3)
    p = 1 / (1 + np.exp(-x))
    for reduction in REDUCTIONS:
        ours = nn.BCELoss(tinynet.tensor(w), reduction=reduction)(tinynet.tensor(p), t)
        ref = torch.nn.BCELoss(torch.tensor(w), reduction=reduction)(torch.tensor(p),
                                                                    torch.tensor(t))
        assert_same(ours.numpy(), ref.numpy(), "BCELoss")
        ours = nn.BCEWithLogitsLoss(tinynet.tensor(w), reduction=reduction,
                                    pos_weight=tinynet.tensor(pw))(tinynet.tensor(x), t)
        ref = torch.nn.BCEWithLogitsLoss(torch.tensor(w), reduction=reduction,
                                         pos_weight=torch.tensor(pw))(torch.tensor(x),
                                                                      torch.tensor(t))
        assert_same(ours.numpy(), ref.numpy(), "BCEWithLogitsLoss")
    module = nn.BCEWithLogitsLoss(pos_weight=tinynet.tensor(pw))
    assert module.weight is None and set(module.state_dict()) == {"pos_weight"}
    module.to(tinynet.float32)
    assert module.pos_weight.dtype == np.float32
    assert nn.BCELoss().reduction == "mean" and nn.BCELoss().weight is None
    plain = nn.BCELoss()(tinynet.tensor(p), t).item()
    assert plain == pytest.approx(torch.nn.BCELoss()(torch.tensor(p), torch.tensor(t)).item())


P2, T2 = np.array([0.2, 0.7]), np.array([0.0, 1.0])
BCE, BCE_LOGITS = F.binary_cross_entropy, F.binary_cross_entropy_with_logits


def t64(values, requires_grad=False):
    return tinynet.tensor(np.asarray(values, dtype=np.float64), requires_grad=requires_grad)


BCE_ERRORS = [
    *[(lambda bad=bad: BCE(t64(bad), t64(T2)), ValueError, "input should be between 0 and 1")
      for bad in ([1.5, 0.5], [-0.1, 0.5], [NAN, 0.5])],
    *[(lambda bad=bad: BCE(t64(P2), t64(bad)), ValueError, "target should be between 0 and 1")
      for bad in ([1.5, 0.5], [-0.1, 0.5], [NAN, 0.5])],
    (lambda: nn.BCELoss()(t64([2.0, 0.5]), T2), ValueError, "between 0 and 1"),
    *[case for f in (BCE, BCE_LOGITS) for case in [
        (lambda f=f: f(t64(P2), t64([0.0, 1.0, 1.0])), ValueError, r"\(3,\).*\(2,\)"),
        (lambda f=f: f(t64(P2), T2, t64([1.0, 2.0, 3.0])), ValueError, "weight of shape"),
        (lambda f=f: f(t64(P2), T2, t64(np.ones((2, 2)))), ValueError, "does not broadcast"),
        (lambda f=f: f(t64(P2), T2, t64([1.0, 1.0], requires_grad=True)), ValueError,
         "not differentiable with respect to weight"),
        (lambda f=f: f(t64(P2), T2, reduction="avg"), ValueError, "reduction must be one of"),
    ]],
    (lambda: BCE_LOGITS(t64(P2), T2, pos_weight=t64([1.0, 2.0, 3.0])), ValueError,
     "pos_weight of shape"),
    (lambda: BCE_LOGITS(t64(P2), T2, pos_weight=t64([1.0, 1.0], requires_grad=True)),
     ValueError, "not differentiable with respect to pos_weight"),
    (lambda: BCE(t64(P2), tinynet.tensor(T2.astype(np.float32))), ValueError, "dtype"),
    (lambda: nn.BCEWithLogitsLoss(reduction="avg"), ValueError, "reduction must be one of"),
]


@pytest.mark.parametrize("call, error, match", BCE_ERRORS)
def test_binary_cross_entropy_errors(call, error, match):
    with pytest.raises(error, match=match):
        call()


@pytest.mark.parametrize("size_average, reduce, expected", [
    (None, False, "none"), (False, None, "sum"), (True, True, "mean"), (False, False, "none")])
def test_legacy_reduction_flags(size_average, reduce, expected):
    x, t = tinynet.randn(3, dtype=tinynet.float64), np.array([0.0, 1.0, 1.0])
    with pytest.warns(UserWarning, match=f"reduction='{expected}'"):
        legacy = F.binary_cross_entropy_with_logits(x, t, None, size_average, reduce)
    modern = F.binary_cross_entropy_with_logits(x, t, reduction=expected)
    np.testing.assert_array_equal(legacy.numpy(), modern.numpy())
    with pytest.warns(UserWarning):
        assert nn.CrossEntropyLoss(size_average=size_average, reduce=reduce).reduction == expected


# ---------------------------------------------------------------- cross-entropy
def _ce(reduction, weighted=False, ignore_index=-100, label_smoothing=0.0):
    def fn(lib, z, t, w=None):
        return lib.nn.functional.cross_entropy(
            z, t, weight=w if weighted else None, ignore_index=ignore_index,
            reduction=reduction, label_smoothing=label_smoothing)
    return fn


CE_SHAPES = [(6, 5), (5,), (3, 5, 4), (2, 4, 3, 2)]


def index_target(shape, g, ignore_index=None):
    classes = shape[0] if len(shape) == 1 else shape[1]
    target_shape = () if len(shape) == 1 else shape[:1] + shape[2:]
    target = g.integers(0, classes, target_shape)
    if ignore_index is not None and target.ndim:
        target.flat[::3] = ignore_index
    return np.asarray(target)


def probability_target(shape, g):
    class_dim = 0 if len(shape) == 1 else 1
    t = g.uniform(0, 1, shape)
    return t / t.sum(axis=class_dim, keepdims=True)


@pytest.mark.parametrize("label_smoothing", [0.0, 0.1, 1.0])
@pytest.mark.parametrize("ignore_index", [-100, 2])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("shape", CE_SHAPES, ids=str)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_cross_entropy_class_indices_match_torch(reduction, shape, weighted, ignore_index,
                                                 label_smoothing):
    g = rng(12)
    z = g.standard_normal(shape) * 3
    target = index_target(shape, g, ignore_index if ignore_index != -100 else None)
    w = g.uniform(0.1, 2, z.shape[0 if z.ndim == 1 else 1])
    fn = _ce(reduction, weighted, ignore_index, label_smoothing)
    check_torch(fn, [z, target, w], [True, False, False])
    assert gradcheck(lambda a: fn(tinynet, a, target, w), leaves(z))


@pytest.mark.parametrize("label_smoothing", [0.0, 0.25, 1.0])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("shape", CE_SHAPES, ids=str)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_cross_entropy_probabilities_match_torch(reduction, shape, weighted, label_smoothing):
    g = rng(13)
    z, target = g.standard_normal(shape) * 3, probability_target(shape, g)
    w = g.uniform(0.1, 2, z.shape[0 if z.ndim == 1 else 1])
    fn = _ce(reduction, weighted, label_smoothing=label_smoothing)
    # the target and (as in PyTorch) the weight get gradients too
    check_torch(fn, [z, target, w], [True, True, weighted])
    assert gradcheck(lambda a, b, c: fn(tinynet, a, b, c), leaves(z, target, w))


# Rows of 3 logits at the edges: -inf is a masked class, +inf or NaN poison the row.
CE_ROWS = [[0.0, 0.0, 0.0], [1.0, -2.0, 0.5], [1e4, -1e4, 0.0], [1e308, -1e308, 0.0],
           [-INF, 1.0, 2.0], [-INF, -INF, 3.0], [-INF, -INF, -INF], [INF, 1.0, -2.0],
           [INF, INF, 0.0], [NAN, 1.0, 0.0], [-800.0, -800.0, -800.0]]
CE_PROBABILITIES = [[1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.2, 0.3, 0.5], [0.0, 0.5, 0.5]]


@pytest.mark.parametrize("upstream", [1.0, INF])
@pytest.mark.parametrize("label_smoothing", [0.0, 0.2])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_cross_entropy_class_indices_at_the_edges(reduction, weighted, label_smoothing,
                                                  upstream):
    z = np.repeat(np.array(CE_ROWS), 3, axis=0)           # each row with each target
    target = np.tile([0, 1, 2], len(CE_ROWS))
    target[::4] = -100
    fn = _ce(reduction, weighted, label_smoothing=label_smoothing)
    check_torch(fn, [z, target, np.array([0.5, 2.0, 1.0])], [True, False, False], upstream)


@pytest.mark.parametrize("upstream", [1.0, INF])
@pytest.mark.parametrize("label_smoothing", [0.0, 0.2])
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_cross_entropy_probabilities_at_the_edges(reduction, label_smoothing, upstream):
    z = np.repeat(np.array(CE_ROWS), len(CE_PROBABILITIES), axis=0)
    target = np.tile(np.array(CE_PROBABILITIES), (len(CE_ROWS), 1))
    fn = _ce(reduction, label_smoothing=label_smoothing)
    check_torch(fn, [z, target], [True, True], upstream)


@pytest.mark.parametrize("label_smoothing", [0.0, 0.3])
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("case", ["all ignored", "zero weights", "one row", "no rows"])
def test_cross_entropy_degenerate_batches(case, reduction, label_smoothing):
    g = rng(14)
    z, target, w = g.standard_normal((4, 3)), np.array([0, 1, 2, 1]), np.array([1.0, 2.0, 0.5])
    if case == "all ignored":
        target = np.full(4, -100)
    elif case == "zero weights":
        w = np.array([0.0, 0.0, 3.0])
        target = np.array([0, 1, 1, 0])
    elif case == "one row":
        z, target = z[:1], target[:1]
    else:
        z, target = z[:0], target[:0]
    for weighted in (False, True):
        check_torch(_ce(reduction, weighted, label_smoothing=label_smoothing),
                    [z, target, w], [True, False, False])


@pytest.mark.parametrize("label_smoothing", [0.0, 0.1])
def test_cross_entropy_float32_forward(label_smoothing):
    g = rng(15)
    z = (g.standard_normal((8, 5)) * 4).astype(np.float32)
    index, probs = g.integers(0, 5, 8), probability_target((8, 5), g).astype(np.float32)
    w = g.uniform(0.5, 2, 5).astype(np.float32)
    for target in (index, probs):
        for reduction in REDUCTIONS:
            ours = F.cross_entropy(tinynet.tensor(z), target, tinynet.tensor(w),
                                   reduction=reduction, label_smoothing=label_smoothing)
            ref = torch.nn.functional.cross_entropy(
                torch.tensor(z), torch.tensor(target), torch.tensor(w), reduction=reduction,
                label_smoothing=label_smoothing)
            assert ours.dtype == np.float32
            np.testing.assert_allclose(ours.numpy(), ref.numpy(), rtol=2e-6, atol=1e-6)


def test_cross_entropy_keeps_one_fused_node_for_class_indices():
    """The language models' loss: class indices, no weight, no smoothing, one node."""
    z = tinynet.randn(6, 5, requires_grad=True)
    target = np.array([0, 1, -1, 3, 4, 2])
    loss = F.cross_entropy(z, target, ignore_index=-1)
    assert isinstance(loss.grad_fn.fn, type) and loss.grad_fn.fn is CrossEntropyFunction
    assert F.cross_entropy(z, target, ignore_index=-1, label_smoothing=0.1).grad_fn.fn \
        is not CrossEntropyFunction


def test_cross_entropy_label_smoothing_one_is_uniform_target():
    z = tinynet.tensor(rng(16).standard_normal((3, 4)))
    uniform = np.full((3, 4), 0.25)
    np.testing.assert_allclose(
        F.cross_entropy(z, np.array([0, 1, 2]), label_smoothing=1.0).item(),
        F.cross_entropy(z, uniform).item(), rtol=1e-14)


def test_cross_entropy_loss_module():
    g = rng(17)
    z, target, w = g.standard_normal((5, 4)), g.integers(0, 4, 5), g.uniform(0.5, 2, 4)
    probs = probability_target((5, 4), g)
    for kwargs in (dict(), dict(label_smoothing=0.2), dict(ignore_index=1, label_smoothing=0.1),
                   dict(reduction="none", label_smoothing=0.3)):
        for tgt in (target, probs) if "ignore_index" not in kwargs else (target,):
            ours = nn.CrossEntropyLoss(tinynet.tensor(w), **kwargs)(tinynet.tensor(z), tgt)
            ref = torch.nn.CrossEntropyLoss(torch.tensor(w), **kwargs)(torch.tensor(z),
                                                                      torch.tensor(tgt))
            assert_same(ours.numpy(), ref.numpy(), f"CrossEntropyLoss {kwargs}")
    module = nn.CrossEntropyLoss(label_smoothing=0.1)
    assert module.label_smoothing == 0.1 and module.weight is None
    assert module.ignore_index == -100 and module.reduction == "mean"
    assert set(nn.CrossEntropyLoss(tinynet.tensor(w)).state_dict()) == {"weight"}


Z, INDICES = tinynet.randn(3, 4), np.array([0, 1, 2])
CE = F.cross_entropy
CE_ERRORS = [
    *[(lambda bad=bad: CE(Z, INDICES, label_smoothing=bad), ValueError,
       r"label_smoothing must be in \[0, 1\]") for bad in (-0.1, 1.5)],
    (lambda: nn.CrossEntropyLoss(label_smoothing=1.5), ValueError, "label_smoothing"),
    (lambda: CE(Z, INDICES, label_smoothing=NAN), ValueError, "label_smoothing is NaN"),
    (lambda: CE(Z, INDICES, label_smoothing="0.1"), TypeError, "label_smoothing"),
    (lambda: CE(Z, tinynet.rand(3, 5)), ValueError, r"probabilities of shape \(3, 5\).*\(3, 4\)"),
    (lambda: CE(Z, np.zeros((3, 4), np.int64)), ValueError, "must be floating point"),
    (lambda: CE(Z, tinynet.rand(3, 4), ignore_index=0), ValueError,
     "ignore_index is not supported"),
    (lambda: CE(Z, tinynet.tensor([0.0, 1.0, 2.0])), ValueError, "integer class indices"),
    (lambda: CE(Z, np.array([0, 4, 1])), ValueError, "out of range"),
    (lambda: CE(Z, np.array([0, 1])), ValueError, r"\(3, 4\).*\(2,\)"),
    (lambda: CE(tinynet.randn(2, 4, 5), np.zeros((2, 4), np.int64)), ValueError,
     r"class indices of shape \(2, 5\)"),
    (lambda: CE(tinynet.randn(4), np.array([1, 2])), ValueError, r"indices of shape \(\)"),
    (lambda: CE(tinynet.tensor(1.0), np.array(0)), ValueError, "0-dimensional"),
    (lambda: CE(Z, INDICES, tinynet.ones(3)), ValueError, "one number per class"),
    (lambda: CE(Z, INDICES, tinynet.ones(4, requires_grad=True)), ValueError,
     "not differentiable with respect to weight"),
    (lambda: CE(Z, INDICES, reduction="avg"), ValueError, "reduction must be one of"),
    (lambda: nn.CrossEntropyLoss(reduction="avg"), ValueError, "reduction must be one of"),
]


@pytest.mark.parametrize("call, error, match", CE_ERRORS)
def test_cross_entropy_errors(call, error, match):
    with pytest.raises(error, match=match):
        call()
