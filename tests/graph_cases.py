"""The op table of the composed-graph fuzz (test_fuzz_graphs.py).

Each maker draws one node of a random graph: an op, its parameters, and inputs
among all earlier nodes (fan-out), as a :class:`Step` that runs
``fn(lib, *tensors, **params)`` with ``lib`` = tinynet or torch (as op_cases.py).
It tracks shapes through the reference values of the nodes so far (torch, no
grad) and raises :class:`Misfit` rather than make a step that does not fit
(shapes, size), sits where its op is not differentiable (ties of max/min,
relu/abs/clamp at a kink, maximum/minimum of equal values, a ``where`` condition
at 0) or leaves its domain (log, sqrt, pow, division).
"""
from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st

MAX_NUMEL, MAX_NDIM = 48, 4
MARGIN = 1e-3                      # distance kept from kinks, ties and domain edges


@dataclass
class Step:
    """One node of a graph: ``fn(lib, *nodes[inputs], **params)``."""
    name: str
    fn: object
    inputs: tuple
    params: dict

    def run(self, lib, nodes):
        return self.fn(lib, *(nodes[i] for i in self.inputs), **self.params)

    def __repr__(self):
        args = [f"v{i}" for i in self.inputs] + [f"{k}={v!r}" for k, v in self.params.items()]
        return f"{self.name}({', '.join(args)})"


class Misfit(Exception):
    """The drawn op does not fit the nodes drawn so far; the next draw replaces it."""


def require(condition):
    if not condition:
        raise Misfit


class Nodes(list):
    """The reference values of the nodes drawn so far, and which were used as inputs."""

    def __init__(self, values):
        super().__init__(values)
        self.used = set()


def pick(draw, nodes, ok=lambda t: True):
    """An earlier node passing ``ok``; half the time one already used (fan-out)."""
    eligible = [i for i, t in enumerate(nodes) if ok(t)]
    require(eligible)
    reused = [i for i in eligible if i in nodes.used]
    return draw(st.sampled_from(reused if reused and draw(st.booleans()) else eligible))


# ----------------------------------------------------------------------------- shapes, guards
def broadcast(*shapes):
    """The broadcast shape, or None if the shapes do not broadcast or it is too big."""
    try:
        shape = np.broadcast_shapes(*shapes)
    except ValueError:
        return None
    return shape if len(shape) <= MAX_NDIM and np.prod(shape) <= MAX_NUMEL else None


def matmul_shape(a, b):
    """The shape of ``a @ b`` (1-d operands promoted as in torch.matmul), or None."""
    if not a or not b:
        return None
    left = a if len(a) > 1 else (1,) + a
    right = b if len(b) > 1 else b + (1,)
    batch = broadcast(left[:-2], right[:-2])
    if left[-1] != right[-2] or batch is None:
        return None
    return batch + left[-2:-1] * (len(a) > 1) + right[-1:] * (len(b) > 1)


def away(t, *points):
    """Every element at least MARGIN from each point (kinks, ties, domain edges)."""
    return all(bool(((t - p).abs() > MARGIN).all()) for p in points)


def above(t, low):
    return bool((t > low).all())


def untied(t, largest, dim=None):
    """The max (or min) along ``dim`` (or overall) is unique by more than MARGIN."""
    if t.ndim == 0:
        return True
    t, dim = (t.reshape(-1), 0) if dim is None else (t, dim)
    s = t.sort(dim=dim).values
    top, second = (-1, -2) if largest else (0, 1)
    return t.shape[dim] < 2 or away(s.select(dim, top) - s.select(dim, second), 0.0)


# ----------------------------------------------------------------------------- elementwise
ANY = lambda *values: True  # noqa: E731
BINARY = {                 # name: (fn, guard on the inputs' values)
    "add": (lambda lib, a, b: a + b, ANY),
    "sub": (lambda lib, a, b: a - b, ANY),
    "mul": (lambda lib, a, b: a * b, ANY),
    "div": (lambda lib, a, b: a / b, lambda a, b: above(b.abs(), 0.2)),
    "pow": (lambda lib, a, b: a ** b, lambda a, b: above(a, 0.1) and above(3 - b.abs(), 0)),
    "maximum": (lambda lib, a, b: lib.maximum(a, b), lambda a, b: away(a - b, 0.0)),
    "minimum": (lambda lib, a, b: lib.minimum(a, b), lambda a, b: away(a - b, 0.0)),
}
REAL = [-1.5, 0.5, 2.0, 3.0]
WITH_CONSTANT = {          # a Python number c on one side: (fn, values of c, guard)
    "add_c": (lambda lib, a, c: a + c, REAL, ANY),
    "rsub_c": (lambda lib, a, c: c - a, REAL, ANY),
    "mul_c": (lambda lib, a, c: a * c, REAL, ANY),
    "rdiv_c": (lambda lib, a, c: c / a, REAL, lambda a, c: above(a.abs(), 0.2)),
    "pow_c": (lambda lib, a, c: a ** c, REAL, lambda a, c: c > 1 or above(a, 0.1)),
    "rpow_c": (lambda lib, a, c: c ** a, [0.5, 2.0, 3.0], ANY),
}
UNARY = {
    "exp": (lambda lib, a: a.exp(), lambda t: above(4 - t, 0)),
    "log": (lambda lib, a: a.log(), lambda t: above(t, 0.05)),
    "sqrt": (lambda lib, a: a.sqrt(), lambda t: above(t, 0.05)),
    "tanh": (lambda lib, a: a.tanh(), ANY),
    "sigmoid": (lambda lib, a: a.sigmoid(), ANY),
    "neg": (lambda lib, a: -a, ANY),
    "relu": (lambda lib, a: a.relu(), lambda t: away(t, 0.0)),
    "abs": (lambda lib, a: a.abs(), lambda t: away(t, 0.0)),
}


def binary(draw, nodes):
    name = draw(st.sampled_from(sorted(BINARY)))
    fn, guard = BINARY[name]
    a = pick(draw, nodes)
    b = pick(draw, nodes, lambda t: broadcast(nodes[a].shape, t.shape) is not None)
    require(guard(nodes[a], nodes[b]))
    return Step(name, fn, (a, b), {})


def with_constant(draw, nodes):
    name = draw(st.sampled_from(sorted(WITH_CONSTANT)))
    fn, constants, guard = WITH_CONSTANT[name]
    a, c = pick(draw, nodes), draw(st.sampled_from(constants))
    require(guard(nodes[a], c))
    return Step(name, fn, (a,), dict(c=c))


def unary(draw, nodes):
    name = draw(st.sampled_from(sorted(UNARY)))
    fn, guard = UNARY[name]
    return Step(name, fn, (pick(draw, nodes, guard),), {})


def clamp(draw, nodes):
    bounds = draw(st.lists(st.sampled_from([-1.0, -0.3, 0.2, 0.8]), min_size=1, max_size=2,
                           unique=True).map(sorted))
    keys = ["min", "max"] if len(bounds) == 2 else [draw(st.sampled_from(["min", "max"]))]
    a = pick(draw, nodes, lambda t: away(t, *bounds))
    return Step("clamp", lambda lib, a, **kw: a.clamp(**kw), (a,),
                dict(zip(keys, bounds, strict=True)))


def where(draw, nodes):
    a = pick(draw, nodes)
    b = pick(draw, nodes, lambda t: broadcast(nodes[a].shape, t.shape) is not None)
    both = broadcast(nodes[a].shape, nodes[b].shape)
    c = pick(draw, nodes, lambda t: broadcast(both, t.shape) is not None and away(t, 0.0))
    return Step("where", lambda lib, c, a, b: lib.where(c > 0, a, b), (c, a, b), {})


def matmul(draw, nodes):
    a = pick(draw, nodes)
    b = pick(draw, nodes, lambda t: matmul_shape(tuple(nodes[a].shape), tuple(t.shape)) is not None)
    return Step("matmul", lambda lib, a, b: a @ b, (a, b), {})


# ----------------------------------------------------------------------------- reductions
REDUCTIONS = {
    "sum": lambda lib, a, **kw: a.sum(**kw),
    "mean": lambda lib, a, **kw: a.mean(**kw),
    "var": lambda lib, a, **kw: a.var(**kw),
    "std": lambda lib, a, **kw: a.std(**kw),
    "max": lambda lib, a, **kw: a.max(**kw)[0] if "dim" in kw else a.max(),
    "min": lambda lib, a, **kw: a.min(**kw)[0] if "dim" in kw else a.min(),
    "logsumexp": lambda lib, a, **kw: a.logsumexp(**kw),
}


def reduction(draw, nodes):
    name = draw(st.sampled_from(sorted(REDUCTIONS)))
    t = nodes[a := pick(draw, nodes)]
    size = max(t.ndim, 1)                              # a 0-d tensor has dims 0 and -1
    dims = ([] if name == "logsumexp" else [None]) + list(range(-size, size))
    if name not in ("max", "min") and t.ndim >= 2:
        dims.append((-1, 0))                           # several dims at once
    require(dims)
    dim = draw(st.sampled_from(dims))
    params = {} if dim is None else dict(dim=dim, keepdim=draw(st.booleans()))
    if name in ("var", "std"):
        params["correction"] = draw(st.sampled_from([0, 1]))
        count = (t.numel() if dim is None or t.ndim == 0
                 else np.prod([t.shape[d] for d in np.atleast_1d(dim)]))
        require(count > params["correction"])
        require(name == "var" or above(t.var(**params), 1e-2))
    require(name not in ("max", "min") or untied(t, name == "max", dim))
    return Step(name, REDUCTIONS[name], (a,), params)


def softmax(draw, nodes):
    a = pick(draw, nodes)
    dim = draw(st.integers(-max(nodes[a].ndim, 1), max(nodes[a].ndim, 1) - 1))  # 0-d: 0, -1
    if draw(st.booleans()):
        return Step("softmax", lambda lib, a, dim: a.softmax(dim), (a,), dict(dim=dim))
    return Step("log_softmax", lambda lib, a, dim: a.log_softmax(dim), (a,), dict(dim=dim))


# ----------------------------------------------------------------------------- shapes
def index(draw, nodes):
    """An integer, a slice, or lists with repeats on one dim or two (pairs)."""
    shape = nodes[a := pick(draw, nodes, lambda t: t.ndim >= 1)].shape
    d = draw(st.integers(0, len(shape) - 1))
    n, kind = shape[d], draw(st.sampled_from(["int", "slice", "repeats"]))
    if kind == "int":
        key = (draw(st.integers(-n, n - 1)),)
    elif kind == "slice":
        start = draw(st.integers(0, n - 1))
        key = (slice(start, draw(st.integers(start + 1, n)), draw(st.sampled_from([1, 2]))),)
    else:
        k = draw(st.integers(1, 4))
        key = tuple(draw(st.lists(st.integers(0, m - 1), min_size=k, max_size=k))
                    for m in shape[d:d + draw(st.integers(1, 2))])
    return Step("getitem", lambda lib, a, index: a[index], (a,),
                dict(index=(slice(None),) * d + key))


def reshape(draw, nodes):
    t = nodes[a := pick(draw, nodes)]
    shape = tuple(t.shape)
    options = [(-1,), (1, -1), shape + (1,), (1,) + shape, shape[::-1]] + [()] * (t.numel() == 1)
    new = draw(st.sampled_from([s for s in options if len(s) <= MAX_NDIM]))
    return Step("reshape", lambda lib, a, shape: a.reshape(shape), (a,), dict(shape=new))


def rearrange(draw, nodes):
    name = draw(st.sampled_from(["transpose", "permute", "unsqueeze", "squeeze"]))
    a = pick(draw, nodes, lambda t: t.ndim >= 2 or name in ("unsqueeze", "squeeze"))
    ndim, shape = nodes[a].ndim, nodes[a].shape
    if name == "transpose":
        dims = draw(st.lists(st.integers(-ndim, ndim - 1), min_size=2, max_size=2, unique=True))
        return Step(name, lambda lib, a, dims: a.transpose(*dims), (a,), dict(dims=tuple(dims)))
    if name == "permute":
        dims = tuple(draw(st.permutations(range(ndim))))
        return Step(name, lambda lib, a, dims: a.permute(*dims), (a,), dict(dims=dims))
    if name == "unsqueeze" and ndim < MAX_NDIM:
        return Step(name, lambda lib, a, dim: a.unsqueeze(dim), (a,),
                    dict(dim=draw(st.integers(-ndim - 1, ndim))))
    ones = [d for d, n in enumerate(shape) if n == 1] or ([0, -1] if ndim == 0 else [])
    require(name == "squeeze" and ones)
    return Step(name, lambda lib, a, dim: a.squeeze(dim), (a,),
                dict(dim=draw(st.sampled_from(ones))))


def expand(draw, nodes):
    """Size-1 dims grow (or stay, as -1), and new leading dims appear."""
    shape = tuple(nodes[a := pick(draw, nodes)].shape)
    lead = tuple(draw(st.lists(st.sampled_from([1, 2]), max_size=MAX_NDIM - len(shape))))
    tail = tuple(draw(st.sampled_from([-1, 2, 3])) if n == 1 else -1 for n in shape)
    target = lead + tuple(n if s == -1 else s for n, s in zip(shape, tail, strict=True))
    require(target and np.prod(target) <= MAX_NUMEL)
    return Step("expand", lambda lib, a, sizes: a.expand(*sizes), (a,), dict(sizes=lead + tail))


def join(draw, nodes):
    stack = draw(st.booleans())
    a = pick(draw, nodes, lambda t: t.ndim >= 1 or stack)
    require(nodes[a].ndim < MAX_NDIM and 2 * nodes[a].numel() <= MAX_NUMEL)
    shape, ndim = tuple(nodes[a].shape), nodes[a].ndim
    if stack:
        b = pick(draw, nodes, lambda t: tuple(t.shape) == shape)
        return Step("stack", lambda lib, a, b, dim: lib.stack([a, b], dim=dim), (a, b),
                    dict(dim=draw(st.integers(-ndim - 1, ndim))))
    dim = draw(st.integers(-ndim, ndim - 1))
    keep = [d for d in range(ndim) if d != dim % ndim]
    b = pick(draw, nodes, lambda t: t.ndim == ndim and t.numel() <= nodes[a].numel()
             and all(t.shape[d] == shape[d] for d in keep))
    return Step("cat", lambda lib, a, b, dim: lib.cat([a, b], dim=dim), (a, b), dict(dim=dim))


def unbind(draw, nodes):
    """Several outputs of one node: one used twice, the others maybe not at all."""
    a = pick(draw, nodes, lambda t: t.ndim >= 1)
    dim = draw(st.integers(-nodes[a].ndim, nodes[a].ndim - 1))
    i, j = (draw(st.integers(0, nodes[a].shape[dim] - 1)) for _ in range(2))
    return Step("unbind", lambda lib, a, dim, i, j: (lambda p: p[i] * p[j] + p[i])(a.unbind(dim)),
                (a,), dict(dim=dim, i=i, j=j))


# Each maker draws one family; the elementwise families, the biggest, come up twice.
MAKERS = [binary, binary, with_constant, unary, unary, clamp, where, matmul, reduction,
          reduction, softmax, index, reshape, rearrange, expand, join, unbind]
