"""Ops at the edges of their domain (0, -0, ±1, ±inf, NaN) against PyTorch.

The forward value and every gradient must be PyTorch's, inf and NaN included:
a NaN where PyTorch has a finite gradient is a silent error, and so is a
finite value where it has NaN. The upstream gradient is 1 and also inf, which
tells ``grad * mask`` (inf · 0 = NaN) from PyTorch's masking (0). NumPy's
warnings must not escape: inf and NaN are values here, as in PyTorch.
"""
import math
import warnings
from dataclasses import dataclass

import numpy as np
import pytest

import tinynet

torch = pytest.importorskip("torch")

INF, NAN = math.inf, math.nan
EDGES = [0.0, -0.0, 1.0, -1.0, -2.0, 2.5, INF, -INF, NAN]
EXPONENTS = [0.0, 1.0, 2.0, 3.0, -1.0, -2.0, 0.5, -0.5, 2.5, INF, -INF, NAN]
NUMBERS = [0, 2, 3, -1, *EXPONENTS]             # Python ints as well as floats
UPSTREAM = [1.0, INF]
# Rows to reduce; [-inf, -inf, -inf] is a fully masked attention row.
ROWS = [[0.0, 0.0, 0.0], [-0.0, 0.0, 1.0], [1.0, -2.0, 0.0], [INF, 1.0, -2.0],
        [INF, INF, 1.0], [INF, -INF, 1.0], [-INF, 1.0, 2.0], [-INF, -INF, -INF],
        [NAN, 1.0, -2.0], [NAN, INF, 0.0]]


@dataclass
class Case:
    name: str
    fn: object           # fn(lib, *tensors) -> tensor, run unchanged on tinynet and torch
    inputs: list         # float64 arrays

    def __str__(self):
        return self.name


def grid(xs, ys):
    """Every pair (x, y) as two flat arrays."""
    x, y = np.meshgrid(np.array(xs), np.array(ys), indexing="ij")
    return [x.ravel(), y.ravel()]


UNARY = {
    "neg": lambda lib, x: -x,
    "exp": lambda lib, x: x.exp(),
    "log": lambda lib, x: x.log(),
    "sqrt": lambda lib, x: x.sqrt(),
    "abs": lambda lib, x: x.abs(),
    "tanh": lambda lib, x: x.tanh(),
    "sigmoid": lambda lib, x: x.sigmoid(),
    "relu": lambda lib, x: x.relu(),
    "clamp": lambda lib, x: x.clamp(-1.0, 2.0),
    "clamp_min": lambda lib, x: x.clamp(min=0.0),
    "clamp_max": lambda lib, x: x.clamp(max=0.0),
    "times_0": lambda lib, x: x * 0.0,
    "over_0": lambda lib, x: x / 0.0,
    "0_over": lambda lib, x: 0.0 / x,
    "1_over": lambda lib, x: 1.0 / x,
}
BINARY = {
    "add": lambda lib, a, b: a + b,
    "sub": lambda lib, a, b: a - b,
    "mul": lambda lib, a, b: a * b,
    "div": lambda lib, a, b: a / b,
    "maximum": lambda lib, a, b: a.maximum(b),
    "minimum": lambda lib, a, b: a.minimum(b),
}
REDUCTIONS = {
    "sum": lambda lib, x: x.sum(),
    "mean": lambda lib, x: x.mean(),
    "var": lambda lib, x: x.var(),
    "std": lambda lib, x: x.std(),
    "max": lambda lib, x: x.max(),
    "min": lambda lib, x: x.min(),
    "max_dim": lambda lib, x: x.max(0).values,
    "logsumexp": lambda lib, x: x.logsumexp(0),
    "softmax": lambda lib, x: x.softmax(0),
    "log_softmax": lambda lib, x: x.log_softmax(0),
}


def _norm(p):
    return lambda lib, x: x.norm(p)


def _pow_number(s):
    return lambda lib, t: t ** s


def _number_pow(s):
    return lambda lib, t: s ** t


CASES = [
    Case("pow", lambda lib, a, b: a ** b, grid(EDGES, EXPONENTS)),
    *[Case(f"pow_tensor_{s!r}", _pow_number(s), [np.array(EDGES)]) for s in NUMBERS],
    *[Case(f"pow_{s!r}_tensor", _number_pow(s), [np.array(EXPONENTS)])
      for s in [*NUMBERS, -0.0]],
    *[Case(name, fn, [np.array(EDGES)]) for name, fn in UNARY.items()],
    *[Case(name, fn, grid(EDGES, EDGES)) for name, fn in BINARY.items()],
    Case("mul_broadcast", lambda lib, a, b: a * b, [np.array(EDGES), np.array([2.0])]),
    *[Case(f"{name}_{i}", fn, [np.array(row)])
      for name, fn in REDUCTIONS.items() for i, row in enumerate(ROWS)],
    *[Case(f"norm_{p}_{i}", _norm(p), [np.array(row)])
      for p in (2, 1, 3, 1.5, 0.5, -1, INF, -INF) for i, row in enumerate(ROWS)],
]


def run(lib, case, upstream):
    """The forward value and the gradient of every input, as NumPy arrays."""
    inputs = [lib.tensor(a, requires_grad=True) for a in case.inputs]
    out = case.fn(lib, *inputs)
    out.backward(lib.tensor(np.full(tuple(out.shape), upstream)))
    grads = [x.grad for x in inputs]
    return [np.asarray(out.detach().numpy())] + [
        None if g is None else np.asarray(g.numpy()) for g in grads]


def assert_same(ours, ref, case, what):
    """Equal to PyTorch's, with inf of the same sign and NaN at the same places."""
    assert (ours is None) == (ref is None), f"{case} {what}: tinynet {ours}, torch {ref}"
    if ref is None:
        return
    assert ours.shape == ref.shape, f"{case} {what}: shape {ours.shape}, torch {ref.shape}"
    with np.errstate(invalid="ignore"):
        wrong = ~np.isclose(ours, ref, rtol=1e-10, atol=1e-12, equal_nan=True)
    if wrong.any():
        if ours.shape == case.inputs[0].shape:      # elementwise: name the inputs
            at = zip(*[np.broadcast_to(x, wrong.shape)[wrong].tolist() for x in case.inputs],
                     strict=True)
            rows = [f"at {a}: tinynet {o}, torch {r}"
                    for a, o, r in zip(at, ours[wrong].tolist(), ref[wrong].tolist(),
                                       strict=True)]
        else:
            rows = [f"at {[x.tolist() for x in case.inputs]}: tinynet {ours.tolist()}, "
                    f"torch {ref.tolist()}"]
        pytest.fail(f"{case} {what} differs from PyTorch:\n  " + "\n  ".join(rows))


@pytest.mark.parametrize("upstream", UPSTREAM)
@pytest.mark.parametrize("case", CASES, ids=str)
def test_matches_torch_at_the_edges(case, upstream):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        ours = run(tinynet, case, upstream)
    ref = run(torch, case, upstream)
    names = ["forward"] + [f"grad of input {i}" for i in range(len(case.inputs))]
    for what, o, r in zip(names, ours, ref, strict=True):
        assert_same(o, r, case, what)


@pytest.mark.parametrize("upstream", UPSTREAM)
@pytest.mark.parametrize("case", CASES, ids=str)
def test_no_warning_at_the_edges(case, upstream):
    """inf and NaN are values, not errors: NumPy's warnings stay inside the ops."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        run(tinynet, case, upstream)
