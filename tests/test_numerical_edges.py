"""Edge inputs, against PyTorch: one line per case, forward values and every input
gradient, NaN and ±inf positions included.

A case builds its inputs as float64 NumPy arrays (cast to each of its dtypes), runs
one function written with PyTorch's names on tinynet and on torch, backpropagates
the same random weights of each floating output, and compares. The inputs are the
edges where numbers silently go wrong: rows whose sum of squares overflows, NaN and
±inf, sorting NaN, dims of size 0, eps = 0, bounds given as tensors.

``expect`` says what tinynet must give:

* ``"torch"``: PyTorch's result on the same inputs.
* ``"float64"``: PyTorch's result on the inputs in float64, cast back. Here
  PyTorch's float32 result is itself wrong, a float32 sum of squares that
  overflowed (LayerNorm gives NaN, BatchNorm β); tinynet sums in float64 and gives
  the exact result, which float64 computes. tinynet is more accurate than PyTorch
  here (docs/layernorm.md, pitfalls).
* ``"nan"``: NaN in the rows whose squares overflow float64 itself, where
  PyTorch gives numbers (0 from RMSNorm, β from LayerNorm for a row with one huge
  element); PyTorch's elsewhere. tinynet says that the row diverged.

Misuses that PyTorch refuses must be refused too (``MISUSES``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import pytest

import tinynet
from tinynet.kernels.ladder import reference

torch = pytest.importorskip("torch")

F32, F64 = np.float32, np.float64
RTOL = {F32: 2e-5, F64: 1e-10}


@dataclass
class Case:
    name: str
    run: Callable                        # run(lib, F, *tensors) -> a tensor or a tuple
    inputs: Callable                     # () -> float64 arrays (integer ones stay integer)
    dtypes: tuple = (F32, F64)
    expect: str = "torch"
    differentiable: tuple = field(default=None)   # which inputs get a gradient (all floats)


def rows(*values):
    return lambda: [np.array(values, dtype=float)]


def with_affine(x, seed=0):
    rng = np.random.default_rng(seed)
    return lambda: [np.array(x, dtype=float), 1 + rng.random(np.shape(x)[-1]),
                    rng.standard_normal(np.shape(x)[-1])]


def channels(x, seed=0):
    rng = np.random.default_rng(seed)
    x = np.asarray(x, dtype=float)
    return lambda: [x, 1 + rng.random(x.shape[1]), rng.standard_normal(x.shape[1])]


def attention(poison, shape=(2, 3, 5, 8)):
    def build():
        rng = np.random.default_rng(1)
        q, k, v = (rng.standard_normal(shape) for _ in range(3))
        poison(q, k, v)
        return [q, k, v]
    return build


def set_at(name, index, value):
    def poison(q, k, v):
        {"q": q, "k": k, "v": v}[name][index] = value
    return poison


def big_row(H, value, seed=2):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((3, H))
    x[1, H // 3] = value
    x[2] *= value
    return x


def empty(*shape):
    return lambda: [np.zeros(shape)]


def sdpa(lib, F, q, k, v, **options):
    return F.scaled_dot_product_attention(q, k, v, **options)


CASES = [
    # Sums of squares that overflow: LayerNorm and everything on its row kernel.
    Case("layer_norm, a float32 row past 2e19", lambda M, F, x, g, b: F.layer_norm(x, (4,), g, b),
         with_affine([[1e20, 1, 2, 3], [1, 2, 3, 4]]), (F32,), "float64"),
    Case("layer_norm, float32 rows of 1000 past 2e19",
         lambda M, F, x, g, b: F.layer_norm(x, (1000,), g, b), with_affine(big_row(1000, 1e25)),
         (F32,), "float64"),
    Case("layer_norm, float64 rows past 1e154", lambda M, F, x: F.layer_norm(x, (16,)),
         lambda: [big_row(16, 1e200)], (F64,), "nan"),
    Case("group_norm, a float32 group past 2e19",
         lambda M, F, x, g, b: F.group_norm(x, 2, g, b),
         channels(big_row(8, 1e21).reshape(3, 4, 2)), (F32,), "float64"),
    Case("instance_norm, a float32 channel past 2e19",
         lambda M, F, x, g, b: F.instance_norm(x, weight=g, bias=b),
         channels(big_row(8, 1e21).reshape(3, 2, 4)), (F32,), "float64"),
    Case("batch_norm training, a float32 channel past 2e19",
         lambda M, F, x, g, b: F.batch_norm(x, None, None, g, b, training=True),
         channels(big_row(6, 1e21).T), (F32,), "float64"),
    Case("batch_norm training, 4-D, a float32 channel past 2e19",
         lambda M, F, x, g, b: F.batch_norm(x, None, None, g, b, training=True),
         channels(big_row(8, 1e21).reshape(2, 3, 2, 2)), (F32,), "float64"),
    Case("rms_norm, float32 rows past 2e19", lambda M, F, x: F.rms_norm(x, (1000,)),
         lambda: [big_row(1000, 1e25)], (F32,), "float64"),
    Case("rms_norm, float64 rows past 1e154", lambda M, F, x: F.rms_norm(x, (16,)),
         lambda: [big_row(16, 1e200)], (F64,), "nan"),
    Case("std, float32 deviations past 2e19", lambda M, F, x: x.std(), rows(0.0, 1e20), (F32,)),
    Case("std, float32 deviations under 1e-23", lambda M, F, x: x.std(dim=0),
         rows(1e-40, -1e-40, 3e-40), (F32,)),
    # eps = 0 on a constant row or channel.
    Case("layer_norm, eps=0, a constant row", lambda M, F, x: F.layer_norm(x, (4,), eps=0.0),
         rows([7.0, 7, 7, 7], [1, 2, 3, 4])),
    Case("instance_norm, eps=0, a constant channel",
         lambda M, F, x, g, b: F.instance_norm(x, weight=g, bias=b, eps=0.0),
         channels(np.r_[np.ones(4), np.arange(4.0)].reshape(1, 2, 4))),
    # NaN sorts as the largest value.
    Case("topk, NaN, largest", lambda M, F, x: M.topk(x, 2), rows(1.0, np.nan, 3, 2)),
    Case("topk, NaN, smallest", lambda M, F, x: M.topk(x, 3, largest=False),
         rows(1.0, np.nan, 3, 2)),
    Case("topk, NaN, rows", lambda M, F, x: M.topk(x, 2, dim=1),
         rows([1.0, np.nan, 3], [np.nan, 2, np.nan])),
    Case("sort, NaN", lambda M, F, x: M.sort(x, stable=True), rows(1.0, np.nan, 3, -np.inf, 2)),
    Case("sort, NaN, descending", lambda M, F, x: M.sort(x, descending=True, stable=True),
         rows(1.0, np.nan, 3, np.inf, 2)),
    Case("argsort, NaN", lambda M, F, x: M.argsort(x, descending=True),
         rows(1.0, np.nan, 3, 2)),
    Case("max and argmax along a dim, NaN", lambda M, F, x: M.max(x, dim=1),
         rows([1.0, np.nan, 3], [1, 2, 3])),
    Case("min and argmin, NaN", lambda M, F, x: (M.min(x), M.argmin(x)), rows(1.0, np.nan, -3)),
    # Attention: NaN and inf reach every gradient they touch.
    Case("sdpa, +inf in a query (heads)", sdpa, attention(set_at("q", (1, 2, 3, 0), np.inf))),
    Case("sdpa, NaN in a key (heads)", sdpa, attention(set_at("k", (0, 1, 2, 4), np.nan))),
    Case("sdpa, +inf in a query (3-D)", sdpa,
         attention(set_at("q", (1, 3, 0), np.inf), (3, 5, 8))),
    Case("sdpa, NaN in a key, causal (3-D)", lambda M, F, q, k, v: sdpa(M, F, q, k, v,
         is_causal=True), attention(set_at("k", (0, 2, 4), np.nan), (3, 5, 8))),
    Case("sdpa, a query that may attend to nothing",
         lambda M, F, q, k, v: sdpa(M, F, q, k, v, attn_mask=M.tensor(
             np.arange(25).reshape(5, 5) % 7 > 0)), attention(lambda q, k, v: None)),
    Case("sdpa, no keys", sdpa, lambda: [np.ones((2, 4, 8)), np.ones((2, 0, 8)),
                                         np.ones((2, 0, 5))]),
    Case("sdpa, no queries", sdpa, lambda: [np.ones((2, 0, 8)), np.ones((2, 3, 8)),
                                            np.ones((2, 3, 5))]),
    Case("sdpa, no features", sdpa, lambda: [np.ones((2, 4, 0)), np.ones((2, 3, 0)),
                                             np.arange(30.0).reshape(2, 3, 5)]),
    # Dims of size 0.
    Case("softmax over an empty dim", lambda M, F, x: F.softmax(x, dim=-1), empty(3, 0)),
    Case("log_softmax over an empty dim", lambda M, F, x: F.log_softmax(x, dim=-1), empty(3, 0)),
    Case("logsumexp over an empty dim", lambda M, F, x: M.logsumexp(x, dim=1), empty(3, 0)),
    Case("logsumexp over empty dims", lambda M, F, x: M.logsumexp(x, dim=(1, 2)), empty(2, 0, 3)),
    Case("BatchNorm1d training on an empty batch",
         lambda M, F, x: M.nn.BatchNorm1d(3).to(x.dtype)(x), empty(0, 3)),
    Case("layer_norm of no features", lambda M, F, x: F.layer_norm(x, (0,)), empty(2, 0)),
    Case("layer_norm of no rows", lambda M, F, x, g, b: F.layer_norm(x, (3,), g, b),
         with_affine(np.zeros((0, 3)))),
    # (PyTorch's weight gradient here is NaN, a sum over nothing; tinynet's is 0.)
    Case("group_norm of no positions", lambda M, F, x: F.group_norm(x, 2), empty(2, 4, 0)),
    Case("instance_norm of no positions", lambda M, F, x: F.instance_norm(x), empty(2, 3, 0)),
    Case("sum over dim=()", lambda M, F, x: x.sum(dim=()), rows([1.0, 2], [3, 4])),
    Case("mean over dim=()", lambda M, F, x: x.mean(dim=(), keepdim=True), rows([1.0, 2], [3, 4])),
    # Bounds as tensors.
    Case("clamp with tensor bounds", lambda M, F, x, low, high: M.clamp(x, low, high),
         lambda: [np.array([[1.0, -2, 3, np.nan, 0.5]]), np.array([[0.0, 0, 0, 0, 2]]),
                  np.array([[1.0, 1, 1, 1, 1]])]),
    Case("clamp with a broadcast tensor bound", lambda M, F, x, low: M.clamp(x, min=low),
         lambda: [np.array([[1.0, -2, 3], [0, 5, -1]]), np.array([[0.5], [2.0]])]),
]


def as_numpy(t):
    return np.asarray(t.detach().numpy() if isinstance(t, torch.Tensor) else t.numpy())


def outputs_of(result):
    if isinstance(result, tuple):      # a tuple, or a (values, indices) named tuple
        return [t for item in result for t in outputs_of(item)]
    return [result]


def run(case, lib, arrays):
    """(outputs, gradients) of one case on tinynet or torch, as NumPy arrays."""
    functional = lib.nn.functional
    tensors = [lib.tensor(a, requires_grad=a.dtype.kind == "f") for a in arrays]
    with np.errstate(all="ignore"):
        outputs = outputs_of(case.run(lib, functional, *tensors))
        differentiable = [o for o in outputs if o.requires_grad]
        if differentiable:
            rng = np.random.default_rng(7)
            total = sum((o * lib.tensor(rng.standard_normal(tuple(o.shape)).astype(
                as_numpy(o).dtype))).sum() for o in differentiable)
            total.backward()
    grads = [None if t.grad is None else as_numpy(t.grad) for t in tensors]
    return [as_numpy(o) for o in outputs], grads


def assert_same(ours, theirs, rtol, what):
    assert ours.shape == theirs.shape, f"{what}: shape {ours.shape}, expected {theirs.shape}"
    if ours.dtype.kind != "f":
        np.testing.assert_array_equal(ours, theirs, err_msg=what)
        return
    for name, where in (("NaN", np.isnan), ("+inf", np.isposinf), ("-inf", np.isneginf)):
        np.testing.assert_array_equal(where(ours), where(theirs),
                                      err_msg=f"{what}: {name} positions")
    finite = np.isfinite(theirs)
    scale = np.max(np.abs(theirs[finite]), initial=0.0)
    np.testing.assert_allclose(ours[finite], theirs[finite], rtol=rtol, atol=rtol * scale,
                               err_msg=what)


def expected(case, arrays, dtype):
    if case.expect == "float64":
        outputs, grads = run(case, torch, [a.astype(F64) if a.dtype == dtype else a
                                           for a in arrays])
        cast = [o.astype(dtype) if o.dtype == F64 else o for o in outputs]
        return cast, [None if g is None else g.astype(dtype) for g in grads]
    return run(case, torch, arrays)


@pytest.mark.parametrize("case, dtype", [(c, d) for c in CASES for d in c.dtypes],
                         ids=[f"{c.name}-{np.dtype(d).name}" for c in CASES for d in c.dtypes])
def test_edge_case_matches_pytorch(case, dtype):
    arrays = [a.astype(dtype) if a.dtype.kind == "f" else a for a in case.inputs()]
    ours_out, ours_grads = run(case, tinynet, arrays)
    theirs_out, theirs_grads = expected(case, arrays, dtype)
    if case.expect == "nan":      # rows whose squares overflow: NaN, whatever PyTorch gives
        x = arrays[0]
        overflowed = np.abs(x).max(axis=-1) > np.sqrt(np.finfo(x.dtype).max / x.shape[-1])
        assert np.any(np.isfinite(theirs_out[0][overflowed])), "PyTorch gives NaN too"
        for theirs in (theirs_out[0], theirs_grads[0]):
            theirs[overflowed] = np.nan
    assert len(ours_out) == len(theirs_out)
    for i, (ours, theirs) in enumerate(zip(ours_out, theirs_out, strict=True)):
        assert_same(ours, theirs, RTOL[dtype], f"{case.name}: output {i}")
    for i, (ours, theirs) in enumerate(zip(ours_grads, theirs_grads, strict=True)):
        assert (ours is None) == (theirs is None), f"{case.name}: gradient {i} {ours} {theirs}"
        if theirs is not None:
            assert_same(ours, theirs, 1e3 * RTOL[dtype] if dtype == F32 else RTOL[dtype],
                        f"{case.name}: gradient of input {i}")


def test_float32_layer_norm_past_float32s_squares_is_the_float64_references():
    """The row [1e20, 1, 2, 3]: PyTorch's float32 LayerNorm gives NaN; tinynet's float32
    layer, forward and backward, gives the float64 reference kernel's result."""
    x64 = np.array([[1e20, 1, 2, 3], [1, 2, 3, 4]])
    dy64 = np.array([[1.0, -2, 0.5, 3], [0.25, 1, -1, 2]])
    layer = tinynet.nn.LayerNorm(4)
    x = tinynet.tensor(x64.astype(F32), requires_grad=True)
    y = layer(x)
    y.backward(tinynet.tensor(dy64.astype(F32)))
    ones, zeros = np.ones(4), np.zeros(4)
    exact_y, mean, rstd = reference.layer_norm_forward(x64, ones, zeros, 1e-5)
    exact_dx, exact_dgain, exact_dbias = reference.layer_norm_backward(dy64, x64, mean, rstd,
                                                                       ones)
    np.testing.assert_allclose(y.numpy(), exact_y, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(y.numpy()[0], [1.7320508, -0.5773503, -0.5773503, -0.5773503],
                               rtol=1e-6)
    for row in range(2):
        scale = np.max(np.abs(exact_dx[row]))
        np.testing.assert_allclose(x.grad.numpy()[row], exact_dx[row], rtol=1e-4,
                                   atol=1e-5 * scale)
    np.testing.assert_allclose(layer.weight.grad.numpy(), exact_dgain, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(layer.bias.grad.numpy(), exact_dbias, rtol=1e-6)


MISUSES = [
    ("batch_norm training with eps=0", "eps must be positive",
     lambda M: M.nn.functional.batch_norm(M.ones(4, 2), None, None, training=True, eps=0.0)),
    ("BatchNorm2d(eps=0) training", "eps must be positive",
     lambda M: M.nn.BatchNorm2d(2, eps=0.0)(M.ones(2, 2, 3, 3))),
    ("mean of an integer tensor", "floating point", lambda M: M.arange(4).mean()),
    ("var of an integer tensor", "floating point", lambda M: M.arange(4).var()),
    ("std of an integer tensor", "floating point", lambda M: M.std(M.arange(4))),
    ("SGD given a tensor", "iterable of Tensors",
     lambda M: M.optim.SGD(M.nn.Linear(3, 2).weight, lr=0.1)),
    ("Adam given a tensor", "iterable of Tensors",
     lambda M: M.optim.Adam(M.nn.Linear(3, 2).weight)),
    ("AdamW given a tensor", "iterable of Tensors",
     lambda M: M.optim.AdamW(M.nn.Linear(3, 2).weight)),
    ("layer_norm over no dims", "normalized_shape",
     lambda M: M.nn.functional.layer_norm(M.ones(2, 3), ())),
]


@pytest.mark.parametrize("name, message, misuse", MISUSES, ids=[m[0] for m in MISUSES])
def test_a_misuse_pytorch_refuses_is_refused(name, message, misuse):
    with pytest.raises((RuntimeError, TypeError, ValueError)):
        misuse(torch)
    with pytest.raises((TypeError, ValueError), match=message):
        misuse(tinynet)
