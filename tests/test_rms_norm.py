"""RMSNorm: the reference kernels, the fused op, F.rms_norm and nn.RMSNorm.

Oracles: the Jacobian written out in NumPy, PyTorch's ``rms_norm``, float64
finite differences, and the scale invariance of the output when ε = 0.
"""
import numpy as np
import pytest

import tinynet
from tinynet import nn
from tinynet.backend import get_backend
from tinynet.kernels.ladder import reference
from tinynet.nn import functional as F
from tinynet.testing import gradcheck

EPS = 1e-6
SHAPES = [(1, 1), (5, 1), (1, 7), (64, 7), (3, 33), (200, 33), (1, 1000), (4, 1000)]
DTYPES = [np.float32, np.float64]
TOL = {np.float32: dict(rtol=2e-5, atol=1e-6), np.float64: dict(rtol=1e-12, atol=1e-13)}


@pytest.fixture
def torch():
    return pytest.importorskip("torch")


def inputs(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(shape) * 2 + 0.5).astype(dtype)
    gain = rng.uniform(0.5, 1.5, shape[-1:]).astype(dtype)
    dy = rng.standard_normal(shape).astype(dtype)
    return x, gain, dy


def jacobian_vjp(dy, x, gain, eps):
    """dx and dgain from the full Jacobian of y_j = g_j x_j r, r = (mean(x²) + ε)^(-1/2):
    ∂y_j/∂x_i = g_j (δ_ij r − r³ x_j x_i / H), in float64."""
    x, dy, gain = (a.astype(np.float64) for a in (x, dy, gain))
    h = x.shape[1]
    r = 1 / np.sqrt((x ** 2).sum(1) / h + eps)
    jac = (np.eye(h)[None] * r[:, None, None]
           - (r ** 3)[:, None, None] * x[:, :, None] * x[:, None, :] / h) * gain[None, :, None]
    dx = np.einsum("rj,rji->ri", dy, jac)
    dgain = (dy * x * r[:, None]).sum(0)
    return dx, dgain


# ---------------------------------------------------------------- the reference kernels

@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_reference_matches_the_formula_and_its_jacobian(shape, dtype):
    x, gain, dy = inputs(shape, dtype)
    y, rstd = reference.rms_norm_forward(x, gain, EPS)
    x64 = x.astype(np.float64)
    expected_rstd = 1 / np.sqrt(np.mean(x64 ** 2, axis=1) + EPS)
    assert y.dtype == dtype and rstd.dtype == np.float64 and rstd.shape == (shape[0],)
    np.testing.assert_allclose(rstd, expected_rstd, rtol=1e-14)
    np.testing.assert_allclose(y, x64 * expected_rstd[:, None] * gain, **TOL[dtype])
    dx, dgain = reference.rms_norm_backward(dy, x, rstd, gain)
    expected_dx, expected_dgain = jacobian_vjp(dy, x, gain, EPS)
    assert dx.dtype == dtype and dgain.dtype == dtype
    np.testing.assert_allclose(dx, expected_dx, **TOL[dtype])
    np.testing.assert_allclose(dgain, expected_dgain, rtol=TOL[dtype]["rtol"],
                               atol=TOL[dtype]["atol"] * shape[0])


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_reference_matches_torch(torch, shape, dtype):
    x, gain, dy = inputs(shape, dtype)
    y, rstd = reference.rms_norm_forward(x, gain, EPS)
    dx, dgain = reference.rms_norm_backward(dy, x, rstd, gain)
    xt = torch.tensor(x, requires_grad=True)
    gt = torch.tensor(gain, requires_grad=True)
    yt = torch.nn.functional.rms_norm(xt, shape[-1:], gt, EPS)
    yt.backward(torch.tensor(dy))
    tol = TOL[dtype]
    np.testing.assert_allclose(y, yt.detach().numpy(), **tol)
    np.testing.assert_allclose(dx, xt.grad.numpy(), **tol)
    np.testing.assert_allclose(dgain, gt.grad.numpy(), rtol=tol["rtol"] * 10,
                               atol=tol["atol"] * shape[0])


@pytest.mark.parametrize("dtype", DTYPES)
def test_reference_without_gain(dtype):
    x, _, dy = inputs((6, 33), dtype)
    y, rstd = reference.rms_norm_forward(x, None, EPS)
    y_ones, _ = reference.rms_norm_forward(x, np.ones(33, dtype), EPS)
    np.testing.assert_array_equal(y, y_ones)
    dx, dgain = reference.rms_norm_backward(dy, x, rstd, None)
    assert dgain is None
    np.testing.assert_allclose(dx, jacobian_vjp(dy, x, np.ones(33), EPS)[0], **TOL[dtype])


def test_a_zero_row_gives_zero_and_finite_gradients():
    x, gain, dy = inputs((3, 8), np.float64)
    x[1] = 0.0
    y, rstd = reference.rms_norm_forward(x, gain, EPS)
    dx, dgain = reference.rms_norm_backward(dy, x, rstd, gain)
    assert np.all(y[1] == 0) and np.all(np.isfinite(dx)) and np.all(np.isfinite(dgain))
    np.testing.assert_allclose(dx[1], dy[1] * gain / np.sqrt(EPS), rtol=1e-12)


# ------------------------------------------------------------- op, functional and layer

@pytest.mark.parametrize("shape, normalized", [((2, 3, 4), 4), ((2, 3, 4), (3, 4)),
                                              ((5, 7), (7,)), ((1, 1), 1)])
@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("dtype", DTYPES)
def test_layer_matches_torch(torch, shape, normalized, affine, dtype):
    x_np, _, dy = inputs(shape, dtype)
    ours = nn.RMSNorm(normalized, eps=EPS, elementwise_affine=affine, dtype=dtype)
    theirs = torch.nn.RMSNorm(normalized, eps=EPS, elementwise_affine=affine,
                              dtype=getattr(torch, np.dtype(dtype).name))
    if affine:
        ours.weight.data[...] = np.random.default_rng(1).uniform(0.5, 1.5, ours.weight.shape)
        theirs.load_state_dict({"weight": torch.tensor(ours.weight.numpy())})
    assert repr(ours) == repr(theirs)
    x, xt = tinynet.tensor(x_np, requires_grad=True), torch.tensor(x_np, requires_grad=True)
    y, yt = ours(x), theirs(xt)
    (y * tinynet.tensor(dy)).sum().backward()
    yt.backward(torch.tensor(dy))
    assert y.dtype == dtype
    np.testing.assert_allclose(y.numpy(), yt.detach().numpy(), **TOL[dtype])
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), **TOL[dtype])
    if affine:
        np.testing.assert_allclose(ours.weight.grad.numpy(), theirs.weight.grad.numpy(),
                                   rtol=TOL[dtype]["rtol"] * 10, atol=TOL[dtype]["atol"] * 10)


@pytest.mark.parametrize("dtype", DTYPES)
def test_eps_none_is_the_machine_epsilon_of_the_input_dtype(torch, dtype):
    """Rows with mean(x²) of the size of ε, where ε decides the output."""
    machine_eps = np.finfo(dtype).eps
    x_np, _, _ = inputs((4, 16), dtype)
    x_np = (x_np * np.sqrt(machine_eps)).astype(dtype)
    y = F.rms_norm(tinynet.tensor(x_np), 16)
    theirs = torch.nn.functional.rms_norm(torch.tensor(x_np), (16,)).numpy()
    np.testing.assert_allclose(y.numpy(), theirs, **TOL[dtype])
    y_explicit = F.rms_norm(tinynet.tensor(x_np), 16, eps=float(machine_eps))
    np.testing.assert_array_equal(y.numpy(), y_explicit.numpy())
    y_no_eps = F.rms_norm(tinynet.tensor(x_np), 16, eps=0.0)
    assert np.abs(y.numpy() - y_no_eps.numpy()).max() > 0.1
    layer = nn.RMSNorm(16, dtype=dtype)
    assert layer.eps is None
    np.testing.assert_array_equal(layer(tinynet.tensor(x_np)).numpy(), y.numpy())


def composite_rms_norm(x, weight, eps):
    """RMSNorm over the last axis in primitive ops: the teaching counterpart."""
    return x / ((x * x).mean(dim=-1, keepdim=True) + eps).sqrt() * weight


def test_fused_and_composite_agree():
    x_np, gain, dy = inputs((6, 9), np.float64)
    grads = []
    for fn in (lambda x, w: F.rms_norm(x, 9, w, EPS), lambda x, w: composite_rms_norm(x, w, EPS)):
        x = tinynet.tensor(x_np, requires_grad=True)
        w = tinynet.tensor(gain, requires_grad=True)
        y = fn(x, w)
        (y * tinynet.tensor(dy)).sum().backward()
        grads.append((y.numpy(), x.grad.numpy(), w.grad.numpy()))
    for fused, composite in zip(*grads, strict=True):
        np.testing.assert_allclose(fused, composite, rtol=1e-10, atol=1e-12)


def x64(*shape, seed=1):
    return tinynet.tensor(np.random.default_rng(seed).standard_normal(shape) * 2 + 0.5,
                          requires_grad=True)


@pytest.mark.parametrize("shape, normalized", [((4, 6), 6), ((2, 3, 5), (3, 5)), ((3, 1), 1)])
def test_gradcheck_functional(shape, normalized):
    size = (normalized,) if isinstance(normalized, int) else normalized
    weight = tinynet.tensor(np.random.default_rng(2).uniform(0.5, 1.5, size), requires_grad=True)
    assert gradcheck(lambda x, w: F.rms_norm(x, normalized, w, EPS), [x64(*shape), weight])
    assert gradcheck(lambda x: F.rms_norm(x, normalized), [x64(*shape)])


@pytest.mark.parametrize("affine", [True, False])
def test_gradcheck_layer(affine):
    layer = nn.RMSNorm((3, 5), elementwise_affine=affine, dtype=tinynet.float64)
    inputs_ = [x64(2, 3, 5)]
    if affine:
        layer.weight.data[...] = np.random.default_rng(3).uniform(-1.5, 1.5, (3, 5))
        inputs_.append(layer.weight)
    assert gradcheck(lambda x, *_: layer(x), inputs_)


def test_mixed_dtypes_compute_in_the_wider_one():
    x = tinynet.tensor(np.ones((2, 4), np.float32), requires_grad=True)
    w = tinynet.tensor(np.full(4, 2.0), requires_grad=True)
    y = F.rms_norm(x, 4, w)
    y.sum().backward()
    assert y.dtype == np.float64 and x.grad.dtype == np.float32 and w.grad.dtype == np.float64


# ------------------------------------------------------------------------- kernel table

@pytest.mark.parametrize("dtype", DTYPES)
def test_forced_reference_and_kernel_table_agree(dtype):
    x_np, gain, dy = inputs((7, 33), dtype)
    results = []
    for forced in (False, True):
        with tinynet.use_reference_kernels(forced):
            x = tinynet.tensor(x_np, requires_grad=True)
            w = tinynet.tensor(gain, requires_grad=True)
            y = F.rms_norm(x, 33, w, EPS)
            (y * tinynet.tensor(dy)).sum().backward()
            results.append((y.numpy(), x.grad.numpy(), w.grad.numpy()))
    for table, forced in zip(*results, strict=True):
        np.testing.assert_allclose(table, forced, **TOL[dtype])
    kernels = get_backend("cpu").kernels
    assert {"rms_norm_forward", "rms_norm_backward"} <= set(kernels.names())
    with tinynet.use_reference_kernels():
        assert kernels.rms_norm_forward is reference.rms_norm_forward
        assert kernels.rms_norm_backward is reference.rms_norm_backward


# -------------------------------------------------------------------- gradient identity

def test_scale_invariance_gives_sum_of_dx_times_x_zero_per_row():
    """y(αx) = y(x) when ε = 0, for any gain: the gradient has no component along x,
    Σ_j dx_j x_j = 0 per row. With ε > 0 the sum is rstd³ · ε · Σ_j dy_j g_j x_j."""
    x, gain, dy = inputs((5, 64), np.float64, seed=4)
    y, rstd = reference.rms_norm_forward(x, gain, 0.0)
    dx, _ = reference.rms_norm_backward(dy, x, rstd, gain)
    scale = np.abs(dx * x).sum(1)
    assert np.all(np.abs((dx * x).sum(1)) < 1e-13 * scale)
    eps = 0.5
    y, rstd = reference.rms_norm_forward(x, gain, eps)
    dx, _ = reference.rms_norm_backward(dy, x, rstd, gain)
    expected = rstd ** 3 * eps * (dy * gain * x).sum(1)
    assert np.all(np.abs(expected) > 1e-4 * np.abs(dx * x).sum(1))
    np.testing.assert_allclose((dx * x).sum(1), expected, rtol=1e-10)


# ---------------------------------------------------------------------- state and errors

def test_state_dict_round_trip(tmp_path):
    a = nn.RMSNorm((3, 4), eps=1e-5)
    a.weight.data[...] = np.random.default_rng(5).standard_normal((3, 4))
    assert list(a.state_dict()) == ["weight"]
    tinynet.save(a.state_dict(), tmp_path / "rms.tn")
    b = nn.RMSNorm((3, 4), eps=1e-5)
    b.load_state_dict(tinynet.load(tmp_path / "rms.tn"))
    x = tinynet.randn(2, 3, 4)
    np.testing.assert_array_equal(b.weight.numpy(), a.weight.numpy())
    np.testing.assert_array_equal(b(x).numpy(), a(x).numpy())
    assert nn.RMSNorm(4, elementwise_affine=False).state_dict() == {}


def test_bad_input_names_the_problem():
    x = tinynet.randn(2, 3, 4)
    with pytest.raises(ValueError, match=r"rms_norm: normalized_shape \(5,\) does not match"):
        F.rms_norm(x, 5)
    with pytest.raises(ValueError, match=r"rms_norm: normalized_shape \(3,\) does not match"):
        nn.RMSNorm(3)(x)
    with pytest.raises(ValueError, match=r"rms_norm: weight of shape \(12,\) does not match"):
        F.rms_norm(x, (3, 4), tinynet.ones(12))
    with pytest.raises(ValueError, match="rms_norm: eps must be >= 0"):
        F.rms_norm(x, 4, eps=-1e-5)
    with pytest.raises(ValueError, match="rms_norm: eps is NaN"):
        F.rms_norm(x, 4, eps=float("nan"))
    with pytest.raises(TypeError, match="rms_norm: eps must be a real number"):
        F.rms_norm(x, 4, eps="1e-5")
    with pytest.raises(ValueError, match="RMSNorm: eps must be >= 0"):
        nn.RMSNorm(4, eps=-1.0)
    with pytest.raises(ValueError, match="RMSNorm: normalized_shape must be at least 1"):
        nn.RMSNorm((3, 0))
    with pytest.raises(TypeError, match="RMSNorm: normalized_shape must be an integer"):
        nn.RMSNorm(3.5)
