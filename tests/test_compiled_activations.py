"""The compiled float32 kernels of the activations and the row ops
(kernels/ops/pointwise_cpu.py, kernels/ops/rows_cpu.py) against their spec,
kernels/ops/*_spec.py, computed in float64; their edges (0, ±inf, NaN) against
the spec's in float32; the cases they hand to the spec unchanged;
and the public ops against PyTorch in float32."""
from __future__ import annotations

import numpy as np
import pytest

import tinynet
import tinynet.nn.functional as F
from tinynet.kernels.ops import pointwise_cpu, pointwise_spec, rows_cpu, rows_spec

EDGES = np.array([0.0, -0.0, 1e-30, -1e-30, 1e-8, -1e-8, 0.5, -0.5, 20.0, -20.0, 87.0,
                  -87.0, 88.5, -88.5, 100.0, -100.0, 1e30, -1e30, np.inf, -np.inf, np.nan],
                 np.float32)

# (kernel name, arguments built from x: the output of the forward where the
# backward takes it, else x itself)
POINTWISE = {
    "sigmoid_forward": lambda x, g: (x,),
    "sigmoid_backward": lambda x, g: (g, pointwise_spec.sigmoid_forward(x)),
    "silu_backward": lambda x, g: (g, x, pointwise_spec.sigmoid_forward(x)),
    "tanh_backward": lambda x, g: (g, np.tanh(x)),
    "relu_forward": lambda x, g: (x,),
    "relu_backward": lambda x, g: (g, pointwise_spec.relu_forward(x)),
    "gelu_tanh_forward": lambda x, g: (x,),
    "gelu_tanh_backward": lambda x, g: (g, x),
}


def _inputs(n=4099, seed=0):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(n) * 4).astype(np.float32)
    g = rng.standard_normal(n).astype(np.float32)
    return x, g


def _close_to_float64(got, args, name, rtol, atol=1e-37):
    spec = tinynet.kernels.tables.spec_kernels()[name]
    want = spec(*(a.astype(np.float64) if isinstance(a, np.ndarray) else a for a in args))
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=rtol, atol=atol)


def test_exp32_is_within_two_ulp_of_exp():
    x = np.linspace(-87, 88, 200_003, dtype=np.float32)
    got = np.empty_like(x)
    pointwise_cpu._relu_loop(x, got)            # compiles the module's loops first
    from numba import njit

    @njit
    def run(values, out):
        for i in range(values.size):
            out[i] = pointwise_cpu.exp32(values[i])
    run(x, got)
    want = np.exp(x.astype(np.float64))
    ulp = np.spacing(want.astype(np.float32)).astype(np.float64)
    assert (np.abs(got - want) <= 2 * ulp).all()
    edges = np.array([-np.inf, -1000, -87.5, np.inf, 1000, 89, np.nan, 0], np.float32)
    got = np.empty_like(edges)
    run(edges, got)
    np.testing.assert_array_equal(got, [0, 0, 0, np.inf, np.inf, np.inf, np.nan, 1])


def test_tanh32_is_within_two_ulp_of_tanh():
    from numba import njit

    @njit
    def run(values, out):
        for i in range(values.size):
            out[i] = pointwise_cpu.tanh32(values[i])
    rng = np.random.default_rng(0)
    x = np.concatenate([np.linspace(-12, 12, 200_003, dtype=np.float32),
                        np.float32(0.625) + np.arange(-50, 50, dtype=np.float32) * 6e-8,
                        rng.standard_normal(100_000).astype(np.float32) * 1e-3,
                        np.float32([1e-30, -1e-30, 1e-45, 3e-39])])
    got = np.empty_like(x)
    run(x, got)
    want = np.tanh(x.astype(np.float64))
    ulp = np.spacing(np.abs(want).astype(np.float32)).astype(np.float64)
    assert (np.abs(got - want) <= 2 * ulp).all()
    assert (np.sign(got) == np.sign(x)).all()                 # odd, no sign lost near 0
    edges = np.array([-np.inf, -100, -9.5, 0, 9.5, 100, np.inf, np.nan], np.float32)
    got = np.empty_like(edges)
    run(edges, got)
    np.testing.assert_array_equal(got, [-1, -1, -1, 0, 1, 1, 1, np.nan])
    run(np.float32([-0.0]), got[:1])
    assert np.signbit(got[0])                                  # tanh(−0) = −0


def test_silu_forward_gives_the_value_and_the_sigmoid_it_keeps():
    x, _ = _inputs()
    y, s = pointwise_cpu.silu_forward(x)
    assert y.dtype == s.dtype == np.float32 and y.shape == s.shape == x.shape
    np.testing.assert_array_equal(s, pointwise_cpu.sigmoid_forward(x))
    np.testing.assert_array_equal(y, x * s)
    want_y, want_s = pointwise_spec.silu_forward(x.astype(np.float64))
    np.testing.assert_allclose(y, want_y, rtol=5e-6, atol=1e-6)
    with np.errstate(all="ignore"):
        for got, want in zip(pointwise_cpu.silu_forward(EDGES), pointwise_spec.silu_forward(EDGES),
                             strict=True):
            np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
            np.testing.assert_allclose(got[~np.isnan(want)], want[~np.isnan(want)],
                                       rtol=5e-6, atol=1e-30)
    for got, want in zip(pointwise_cpu.silu_forward(x.astype(np.float64)),
                         pointwise_spec.silu_forward(x.astype(np.float64)), strict=True):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name", POINTWISE)
def test_pointwise_kernel_matches_the_spec_in_float64(name):
    x, g = _inputs()
    args = POINTWISE[name](x, g)
    got = getattr(pointwise_cpu, name)(*args)
    assert got.dtype == np.float32 and got.shape == x.shape
    _close_to_float64(got, args, name, rtol=5e-6, atol=1e-6)


@pytest.mark.parametrize("name", POINTWISE)
def test_pointwise_kernel_edges_are_the_specs(name):
    g = np.ones_like(EDGES)
    args = POINTWISE[name](EDGES, g)
    with np.errstate(all="ignore"):
        want = getattr(pointwise_spec, name)(*args)
        got = getattr(pointwise_cpu, name)(*args)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    finite = np.isfinite(want)
    np.testing.assert_array_equal(got[~finite & ~np.isnan(want)], want[~finite & ~np.isnan(want)])
    np.testing.assert_allclose(got[finite], want[finite], rtol=5e-6, atol=1e-30)


@pytest.mark.parametrize("name", POINTWISE)
def test_pointwise_kernel_hands_other_dtypes_to_the_spec(name):
    x, g = _inputs(64)
    args = tuple(a.astype(np.float64) for a in POINTWISE[name](x, g))
    np.testing.assert_array_equal(getattr(pointwise_cpu, name)(*args),
                                  getattr(pointwise_spec, name)(*args))


ROW_SHAPES = [(3, 1), (5, 7), (4, 8), (6, 65), (2, 3, 64), (1, 300)]


def _rows(shape, seed=1):
    rng = np.random.default_rng(seed)
    return ((rng.standard_normal(shape) * 5).astype(np.float32),
            rng.standard_normal(shape).astype(np.float32))


@pytest.mark.parametrize("shape", ROW_SHAPES)
def test_row_kernels_match_the_spec_in_float64(shape):
    x, g = _rows(shape)
    axis = len(shape) - 1
    y = rows_cpu.softmax_forward(x, axis)
    _close_to_float64(y, (x, axis), "softmax_forward", rtol=1e-5, atol=1e-7)
    _close_to_float64(rows_cpu.softmax_backward(g, y, axis), (g, y, axis),
                      "softmax_backward", rtol=1e-4, atol=1e-6)
    out = rows_cpu.log_softmax_forward(x, axis)
    _close_to_float64(out, (x, axis), "log_softmax_forward", rtol=1e-5, atol=1e-5)
    _close_to_float64(rows_cpu.log_softmax_backward(g, out, axis), (g, out, axis),
                      "log_softmax_backward", rtol=1e-4, atol=1e-5)
    _close_to_float64(rows_cpu.sum_last_axis(x), (x,), "sum_last_axis", rtol=1e-5, atol=1e-4)
    _close_to_float64(rows_cpu.sum_last_axis_of_product(x, g), (x, g),
                      "sum_last_axis_of_product", rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("classes", [1, 7, 65])
def test_cross_entropy_kernels_match_the_spec_in_float64(classes):
    logits, _ = _rows((9, classes))
    target = np.arange(9) % classes
    losses, probs = rows_cpu.cross_entropy_forward(logits, target)
    assert losses.shape == (9,) and probs.shape == logits.shape
    want_losses, want_probs = rows_spec.cross_entropy_forward(logits.astype(np.float64), target)
    np.testing.assert_allclose(losses, want_losses, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(probs, want_probs, rtol=1e-6, atol=1e-7)
    for scale in (np.float32(0.25) + np.zeros((), np.float32),
                  np.linspace(0, 1, 9, dtype=np.float32)):
        got = rows_cpu.cross_entropy_backward(probs, scale, target)
        want = rows_spec.cross_entropy_backward(want_probs, scale.astype(np.float64), target)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_row_kernel_edges_are_the_specs():
    x = np.array([[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0],
                  [-np.inf] * 9,
                  [0.0, np.nan, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0],
                  [np.inf, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0],
                  [-np.inf, 0.0, -np.inf, 1.0, 2.0, 3.0, 4.0, 5.0, 1e30],
                  [-1e30, 88.0, -88.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]], np.float32)
    with np.errstate(all="ignore"):
        for name in ("softmax_forward", "log_softmax_forward"):
            want = getattr(rows_spec, name)(x, 1)
            got = getattr(rows_cpu, name)(x, 1)
            np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=name)
            np.testing.assert_allclose(got[~np.isnan(want)], want[~np.isnan(want)],
                                       rtol=1e-6, atol=1e-7, err_msg=name)
        masked = rows_cpu.softmax_forward(x[4:5], 1)
        assert (masked[x[4:5] == -np.inf] == 0).all()       # exactly 0, as e^−∞
        target = np.arange(len(x)) % x.shape[1]
        for want, got in zip(rows_spec.cross_entropy_forward(x, target),
                             rows_cpu.cross_entropy_forward(x, target), strict=True):
            np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
            np.testing.assert_allclose(got[~np.isnan(want)], want[~np.isnan(want)],
                                       rtol=1e-6, atol=1e-7)


def test_row_kernels_hand_other_axes_and_dtypes_to_the_spec():
    x, g = _rows((4, 6, 5))
    for args in ((x, 1), (x.astype(np.float64), 2), (x.transpose(0, 2, 1), 2)):
        np.testing.assert_array_equal(rows_cpu.softmax_forward(*args),
                                      rows_spec.softmax_forward(*args))
        np.testing.assert_array_equal(rows_cpu.log_softmax_forward(*args),
                                      rows_spec.log_softmax_forward(*args))
    np.testing.assert_array_equal(rows_cpu.sum_last_axis(x.astype(np.float64)),
                                  x.astype(np.float64).sum(axis=-1))
    assert rows_cpu.sum_last_axis(np.zeros((3, 0), np.float32)).shape == (3,)


@pytest.mark.parametrize("shape", [(768,), (2, 3), ()])
@pytest.mark.parametrize("size", [512, 1, 0])
def test_sum_last_axis_backward_spreads_each_value(shape, size):
    grad = np.random.default_rng(3).standard_normal(shape).astype(np.float32)
    got = rows_cpu.sum_last_axis_backward(grad, size)
    want = rows_spec.sum_last_axis_backward(grad, size)
    assert got.shape == shape + (size,) and got.dtype == np.float32
    np.testing.assert_array_equal(got, want)
    if grad.size and size:
        assert got.flags.c_contiguous and got.flags.writeable     # the engine keeps it


def test_sum_over_the_last_axis_gives_each_element_its_rows_gradient():
    x = tinynet.tensor(np.random.default_rng(4).standard_normal((6, 5)).astype(np.float32),
                       requires_grad=True)
    g = np.arange(6, dtype=np.float32)
    x.sum(dim=-1).backward(tinynet.tensor(g))
    np.testing.assert_array_equal(x.grad.numpy(), np.repeat(g[:, None], 5, axis=1))
    x.grad = None
    x.sum(dim=1, keepdim=True).backward(tinynet.tensor(g[:, None]))
    np.testing.assert_array_equal(x.grad.numpy(), np.repeat(g[:, None], 5, axis=1))


@pytest.mark.parametrize("order", ["C", "F"])       # F: a Linear's output for few rows
@pytest.mark.parametrize("shape", [(768, 384), (2, 3, 65), (5, 1), (4,), (32, 33)])
def test_add_bias_is_numpys_add_bit_for_bit(shape, order):
    out, _ = _rows(shape)
    out = np.asarray(out, order=order)
    out.reshape(-1)[:4] = [np.inf, -0.0, np.nan, 3e38][:out.size]
    bias = np.random.default_rng(2).standard_normal(shape[-1:]).astype(np.float32)
    want = out + bias
    got = rows_cpu.add_bias(out, bias)
    assert got is out and got.flags[order + "_CONTIGUOUS"]      # in place
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


def test_add_bias_hands_other_arrays_to_numpy():
    out = np.ones((3, 4))
    assert rows_cpu.add_bias(out, np.arange(4.0)) is out
    np.testing.assert_array_equal(out, np.ones((3, 4)) + np.arange(4.0))
    transposed = np.ones((3, 4), np.float32).T               # a product's (W xᵀ)ᵀ
    np.testing.assert_array_equal(rows_cpu.add_bias(transposed, np.arange(3, dtype=np.float32)),
                                  np.ones((4, 3)) + np.arange(3))


try:
    import torch
except ImportError:
    torch = None


@pytest.mark.skipif(torch is None, reason="needs torch")
@pytest.mark.parametrize("op", [
    lambda lib, Fn, a: a.sigmoid(), lambda lib, Fn, a: Fn.silu(a),
    lambda lib, Fn, a: a.tanh(), lambda lib, Fn, a: a.relu(),
    lambda lib, Fn, a: Fn.gelu(a, approximate="tanh"),
    lambda lib, Fn, a: Fn.softmax(a, dim=-1), lambda lib, Fn, a: Fn.log_softmax(a, dim=-1),
    lambda lib, Fn, a: a.sum(dim=-1)],
    ids=["sigmoid", "silu", "tanh", "relu", "gelu_tanh", "softmax", "log_softmax", "sum"])
def test_float32_ops_match_torch(op):
    x, _ = _rows((37, 65), seed=3)
    a = tinynet.tensor(x, requires_grad=True)
    b = torch.tensor(x, requires_grad=True)
    out_a, out_b = op(tinynet, F, a), op(torch, torch.nn.functional, b)
    upstream = np.random.default_rng(4).standard_normal(out_b.shape).astype(np.float32)
    out_a.backward(tinynet.tensor(upstream))
    out_b.backward(torch.tensor(upstream))
    assert out_a.dtype == tinynet.float32 and a.grad.dtype == tinynet.float32
    np.testing.assert_allclose(out_a.numpy(), out_b.detach().numpy(), rtol=2e-6, atol=2e-6)
    # atol: where tanh u rounds to ±1 in float32, PyTorch's slope is 0 and the
    # kernel's x σ(2u) form keeps the true value, a few 1e-6
    np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=2e-5, atol=1e-5)


@pytest.mark.skipif(torch is None, reason="needs torch")
def test_float32_cross_entropy_matches_torch():
    logits, _ = _rows((50, 65), seed=5)
    target = np.random.default_rng(6).integers(0, 65, 50)
    a = tinynet.tensor(logits, requires_grad=True)
    b = torch.tensor(logits, requires_grad=True)
    loss_a = F.cross_entropy(a, tinynet.tensor(target))
    loss_b = torch.nn.functional.cross_entropy(b, torch.tensor(target))
    loss_a.backward()
    loss_b.backward()
    np.testing.assert_allclose(loss_a.item(), loss_b.item(), rtol=2e-6)
    np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=2e-5, atol=1e-8)


@pytest.mark.parametrize("name", sorted(tinynet.kernels.tables.spec_kernels()))
def test_the_cpu_table_runs_the_compiled_kernels_and_the_reference_rung_the_spec(name):
    from tinynet.kernels import tables
    compiled, specs = tables.compiled_cpu_kernels(), tables.spec_kernels()
    table = tinynet.backend.get_backend("cpu").kernels
    expected = compiled[name]
    assert getattr(table, name) is expected is tinynet.kernels.which(name)
    assert expected.__module__.startswith("tinynet.kernels.ops.")
    assert expected.__module__.endswith("_cpu")     # beside its spec, in the same folder
    assert specs[name].__module__ == expected.__module__.removesuffix("_cpu") + "_spec"
    with tinynet.use_kernels("reference"):
        assert getattr(table, name) is specs[name] is tinynet.kernels.which(name)
    assert getattr(table, name) is expected


@pytest.mark.parametrize("name", sorted(POINTWISE) + ["silu_forward"])
def test_a_transposed_block_runs_the_loops_and_keeps_its_order(name):
    """A Linear's output for few rows is an F-ordered block (ops/linalg.py): the
    loops take it flat, as a C-ordered one, and the result keeps the order."""
    x, g = _inputs(64 * 33)
    x, g = x.reshape(64, 33), g.reshape(64, 33)
    c_args = POINTWISE.get(name, lambda x, g: (x,))(x, g)
    f_args = tuple(np.asfortranarray(a) for a in c_args)
    assert pointwise_cpu.in_one_order(f_args)[0] == "F"
    assert pointwise_cpu.in_one_order(c_args)[0] == "C"
    kernel = getattr(pointwise_cpu, name)
    ours, theirs = kernel(*f_args), kernel(*c_args)
    for got, want in zip(ours if name == "silu_forward" else (ours,),
                         theirs if name == "silu_forward" else (theirs,), strict=True):
        assert got.flags.f_contiguous and not got.flags.c_contiguous
        assert np.array_equal(got, want, equal_nan=True)


@pytest.mark.parametrize("name", sorted(POINTWISE))
def test_arrays_laid_out_differently_run_the_loops_in_the_first_ones_order(name):
    """A sigmoid's output in a Linear's F order and its gradient in C order (a GRU
    cell's), or strided slices: the loops run on copies, so the values come out as
    for C-ordered arrays, bit for bit, whatever the layout."""
    x, g = _inputs(64 * 33)
    c_args = POINTWISE[name](x.reshape(64, 33), g.reshape(64, 33))
    mixed = (np.asfortranarray(c_args[0]),) + c_args[1:]
    order, taken = pointwise_cpu.in_one_order(mixed)
    assert order == "F" and all(a.flags.f_contiguous for a in taken)
    sliced = tuple(np.repeat(a, 2, axis=1)[:, ::2] for a in c_args)    # not contiguous
    assert pointwise_cpu.in_one_order(sliced)[0] == "C"
    kernel = getattr(pointwise_cpu, name)
    want = kernel(*c_args)
    for args in (mixed, sliced):
        assert np.array_equal(kernel(*args), want, equal_nan=True)

