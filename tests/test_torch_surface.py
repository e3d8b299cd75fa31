"""The PyTorch tensor surface, one expression a line, against PyTorch itself.

Each ``case(name, inputs, fn)`` is one expression ``fn(*tensors, t)``, written once
and run twice: with ``t`` = ``torch`` on torch tensors and with ``t`` = ``tinynet``
on tinynet tensors made from the same arrays (tinygrad's ``helper_test_op``). The
outputs must agree in structure, shape, dtype (by name), ``requires_grad`` and value
(1e-10 relative and absolute in float64, 1e-5 in float32, exactly for integers and
booleans); then the gradients of Σ out · w, for fixed random w over every output
that requires grad in torch, must agree for every input that requires grad (a NaN
where torch has a number is a failure). The ``REFUSED`` table holds expressions
that torch refuses: tinynet must raise too.

``inputs`` lists one entry per tensor: a shape (float64, drawn from the case's
``domain``, requires grad), or ``const(shape)`` (no grad), ``arg(shape, domain)``,
``f32(shape)``, ``ints(shape, low, high)``, ``bools(shape)`` or ``fixed(values)``
(exact values: the edges, such as 0, ±inf and NaN).

What tinynet cannot run yet is marked ``xfail(strict=True)`` with the reason, so
the table is also the to-do list: ``needs=`` names the attributes a case uses
(``"Tensor.sign"``, ``"nn.functional.l1_loss"``) and marks it (not run) while one
is missing; ``xfail=`` marks a known gap ("mismatch:" and "bug:" where tinynet
differs from torch). A strict mark that starts passing fails: remove it then.
"""
import math
from dataclasses import dataclass, field

import numpy as np
import pytest

import tinynet

torch = pytest.importorskip("torch")

# torch's (and tinynet's) warnings about the expressions themselves, not about mismatches
pytestmark = [pytest.mark.filterwarnings(r"ignore:var\(\). degrees of freedom"),
              pytest.mark.filterwarnings("ignore:Using padding='same'")]

TOLERANCE = {"float64": 1e-10, "float32": 1e-5}     # relative and absolute
inf, nan = math.inf, math.nan


def F(t):
    """``torch.nn.functional`` or ``tinynet.nn.functional``."""
    return t.nn.functional


# ------------------------------------------------------------------ the inputs
DOMAINS = {
    "real": lambda rng, shape: rng.standard_normal(shape),
    "positive": lambda rng, shape: rng.uniform(0.5, 2.0, shape),
    "away": lambda rng, shape: rng.uniform(0.2, 2.0, shape) * rng.choice([-1.0, 1.0], shape),
    "unit": lambda rng, shape: rng.uniform(-0.9, 0.9, shape),
    "above1": lambda rng, shape: rng.uniform(1.1, 3.0, shape),
    "prob": lambda rng, shape: rng.uniform(0.05, 0.95, shape),
}


@dataclass
class Arg:
    shape: tuple = ()
    kind: str = "float"          # float | int | bool | fixed
    domain: str | None = None    # None: the case's domain
    grad: bool = True            # float inputs only
    low: int = 0
    high: int = 2
    values: np.ndarray | None = None
    dtype: type = np.float64     # float and int inputs

    def array(self, rng, domain):
        if self.kind == "fixed":
            return self.values.copy()
        if self.kind == "int":
            return rng.integers(self.low, self.high, self.shape).astype(self.dtype)
        if self.kind == "bool":
            return rng.random(self.shape) < 0.5
        return np.asarray(DOMAINS[self.domain or domain](rng, self.shape), self.dtype)


def arg(shape, domain=None, grad=True):
    """A float64 input drawn from ``domain`` (the case's when None)."""
    return Arg(tuple(shape), domain=domain, grad=grad)


def f32(shape, domain=None):
    """A float32 input (compared to float32's tolerance)."""
    return Arg(tuple(shape), domain=domain, dtype=np.float32)


def const(shape, domain=None):
    """A float64 input that does not require grad."""
    return arg(shape, domain, grad=False)


def ints(shape, low, high, dtype=np.int64):
    """An integer input drawn from [low, high)."""
    return Arg(tuple(shape), "int", low=low, high=high, grad=False, dtype=dtype)


def bools(shape):
    return Arg(tuple(shape), "bool", grad=False)


def fixed(values, dtype=None, grad=True):
    """These exact values; lists of floats become float64, of ints int64."""
    values = np.array(values, dtype=dtype)
    return Arg(values.shape, "fixed", grad=grad and values.dtype.kind == "f", values=values)


def _attribute(path):
    """``tinynet.<path>``, or None when some part of it is missing."""
    obj = tinynet
    for part in path.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


@dataclass
class Case:
    name: str
    inputs: list
    fn: object
    domain: str = "real"
    grad: bool = True
    specs: list = field(init=False)

    def __post_init__(self):
        self.specs = [x if isinstance(x, Arg) else arg(x) for x in self.inputs]

    def arrays(self):
        rng = np.random.default_rng(0)
        return [spec.array(rng, self.domain) for spec in self.specs]

    def run(self, lib, arrays):
        tensors = [lib.tensor(a.copy(), requires_grad=self.grad and spec.grad
                              and a.dtype.kind == "f")
                   for a, spec in zip(arrays, self.specs, strict=True)]
        return tensors, self.fn(*tensors, lib)


def case(name, inputs, fn, *, domain="real", grad=True, needs=(), xfail=None):
    """One line of the table; ``grad=False`` compares values only."""
    needs = (needs,) if isinstance(needs, str) else tuple(needs)
    missing = [path for path in needs if _attribute(path) is None]
    marks = []
    if missing:     # cannot pass, so not run (tracebacks cost); the mark goes with the gap
        marks.append(pytest.mark.xfail(strict=True, run=False, reason="tinynet has no "
                                       + ", ".join(missing)))
    elif xfail:
        marks.append(pytest.mark.xfail(strict=True, reason=xfail))
    return pytest.param(Case(name, list(inputs), fn, domain, grad), id=name, marks=marks)


# Values at the edges of the domains, for the ops' conventions there.
EDGES = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, inf, -inf, nan]
MASK = np.array([[True, False, True, True, False, True]] * 4) | np.eye(4, 6, dtype=bool)
IDX = [2, 0, 2, 1]                   # repeated on purpose: backward must add
TARGETS = [1, -100, 3, 0, -100]     # class indices, two ignored

# --------------------------------------------------------------------- the table
ARITHMETIC = [
    case("add", [(3, 4), (3, 4)], lambda x, y, t: x + y),
    case("add broadcast row", [(3, 4), (4,)], lambda x, y, t: x + y),
    case("add broadcast both", [(2, 1, 4), (3, 1)], lambda x, y, t: x + y),
    case("add 0-d tensor", [(3, 4), ()], lambda x, y, t: x + y),
    case("add 0-d to 0-d", [(), ()], lambda x, y, t: x + y),
    case("add scalar", [(3, 4)], lambda x, t: x + 2.5),
    case("radd scalar", [(3, 4)], lambda x, t: 2.5 + x),
    case("add method", [(3, 4), (4,)], lambda x, y, t: x.add(y)),
    case("add alpha", [(3, 4), (4,)], lambda x, y, t: x.add(y, alpha=2.0),
         xfail="Tensor.add takes no alpha"),
    case("torch.add", [(3, 4), (4,)], lambda x, y, t: t.add(x, y), needs="add"),
    case("sub", [(3, 4), (3, 4)], lambda x, y, t: x - y),
    case("sub broadcast", [(3, 1), (1, 4)], lambda x, y, t: x - y),
    case("rsub scalar", [(5,)], lambda x, t: 1.0 - x),
    case("sub method", [(3, 4), (3, 1)], lambda x, y, t: x.sub(y)),
    case("torch.sub", [(3, 4), (4,)], lambda x, y, t: t.sub(x, y), needs="sub"),
    case("mul", [(3, 4), (3, 4)], lambda x, y, t: x * y),
    case("mul broadcast", [(2, 3, 4), (3, 1)], lambda x, y, t: x * y),
    case("mul scalar", [(4,)], lambda x, t: x * -3.0),
    case("rmul scalar", [(4,)], lambda x, t: -3.0 * x),
    case("mul self", [(4,)], lambda x, t: x * x),
    case("mul method", [(3, 4), (4,)], lambda x, y, t: x.mul(y)),
    case("torch.mul", [(3, 4), (4,)], lambda x, y, t: t.mul(x, y), needs="mul"),
    case("div", [(3, 4), (3, 4)], lambda x, y, t: x / y, domain="away"),
    case("div broadcast", [(3, 4), (4,)], lambda x, y, t: x / y, domain="away"),
    case("rdiv scalar", [(3, 4)], lambda x, t: 2.0 / x, domain="away"),
    case("div method", [(3, 4), (4,)], lambda x, y, t: x.div(y), domain="away"),
    case("torch.div", [(3, 4), (4,)], lambda x, y, t: t.div(x, y), domain="away", needs="div"),
    case("div by zero", [fixed([1.0, -1.0, 0.0, 2.0]), fixed([0.0, 0.0, 0.0, -0.0])],
         lambda x, y, t: x / y),
    case("neg", [(3, 4)], lambda x, t: -x),
    case("neg method", [(3, 4)], lambda x, t: x.neg()),
    case("pos", [(3, 4)], lambda x, t: +x),
    case("chain", [(3, 4), (4,)], lambda x, y, t: (x * y + x / 3 - y) * 2),
    case("fan-out", [(3, 4)], lambda x, t: x * x.exp() + x.tanh() * x),
    case("maximum", [(3, 4), (4,)], lambda x, y, t: t.maximum(x, y)),
    case("minimum", [(3, 4), (3, 1)], lambda x, y, t: t.minimum(x, y)),
    case("maximum method", [(3, 4), (3, 4)], lambda x, y, t: x.maximum(y)),
    case("maximum ties", [fixed([1.0, 2.0, -1.0]), fixed([1.0, 0.0, -1.0])],
         lambda x, y, t: t.maximum(x, y)),
    case("minimum ties", [fixed([1.0, 2.0, -1.0]), fixed([1.0, 0.0, -1.0])],
         lambda x, y, t: t.minimum(x, y)),
    case("maximum nan", [fixed([nan, 1.0, 2.0]), fixed([0.0, nan, 1.0])],
         lambda x, y, t: t.maximum(x, y)),
    case("torch.max binary", [(3, 4), (4,)], lambda x, y, t: t.max(x, y)),
    case("floor_divide", [(3, 4), (3, 4)], lambda x, y, t: x // y, domain="away", grad=False),
    case("floor_divide scalar", [(3, 4)], lambda x, t: x // 0.3, grad=False),
    case("floor_divide ints", [ints((6,), -9, 9), fixed([2, -2, 3, -3, 4, 5])],
         lambda x, y, t: x // y),
    case("torch.floor_divide", [ints((6,), -9, 9)], lambda x, t: t.floor_divide(x, 4)),
    case("remainder", [(3, 4), (3, 4)], lambda x, y, t: x % y, domain="away",
         needs="Tensor.__mod__"),
    case("fmod", [(3, 4), (3, 4)], lambda x, y, t: t.fmod(x, y), domain="away", needs="fmod"),
    case("atan2", [(3, 4), (3, 4)], lambda x, y, t: t.atan2(x, y), needs="atan2"),
    case("hypot", [(3, 4), (3, 4)], lambda x, y, t: t.hypot(x, y), needs="hypot"),
    case("lerp scalar weight", [(3, 4), (3, 4)], lambda x, y, t: x.lerp(y, 0.3)),
    case("lerp tensor weight", [(3, 4), (3, 4), arg((4,), "prob")],
         lambda x, y, w, t: t.lerp(x, y, w)),
    case("addcmul", [(3, 4), (3, 4), (3, 4)], lambda x, y, z, t: t.addcmul(x, y, z, value=0.5),
         needs="addcmul"),
]

DTYPES = [
    case("int + int", [ints((3, 4), -5, 5), ints((4,), -5, 5)], lambda x, y, t: x + y),
    case("int * int", [ints((3, 4), -5, 5), ints((3, 4), -5, 5)], lambda x, y, t: x * y),
    case("int + python int", [ints((3, 4), -5, 5)], lambda x, t: x + 3),
    case("int * python float", [ints((3, 4), -5, 5)], lambda x, t: x * 1.5),
    case("int / int", [ints((3, 4), -5, 5), fixed([1, 2, -3, 4])], lambda x, y, t: x / y),
    case("int32 + int64", [ints((3, 4), -5, 5, np.int32), ints((4,), 0, 5)],
         lambda x, y, t: x + y),
    case("int32 + python int", [ints((3, 4), -5, 5, np.int32)], lambda x, t: x + 7),
    case("int32 sum", [ints((3, 4), -5, 5, np.int32)], lambda x, t: (x.sum(), x.sum(0))),
    case("int32 cumsum", [ints((3, 4), -5, 5, np.int32)], lambda x, t: x.cumsum(1)),
    case("int32 max and argmax", [ints((3, 4), -5, 5, np.int32)],
         lambda x, t: (x.max(1), x.argmax())),
    case("float32 exp", [f32((3, 4))], lambda x, t: x.exp()),
    case("float32 + python float", [f32((3, 4))], lambda x, t: 1.5 + x / 3),
    case("float32 + int", [f32((3, 4)), ints((4,), 0, 5)], lambda x, y, t: x + y),
    case("float32 sum and mean", [f32((3, 4))], lambda x, t: (x.sum(0), x.mean(), x.var(1))),
    case("float32 matmul", [f32((3, 4)), f32((4, 2))], lambda x, y, t: x @ y),
    case("float32 softmax", [f32((3, 4))], lambda x, t: (x.softmax(-1), x.log_softmax(0))),
    case("float32 layer_norm", [f32((3, 4)), f32((4,))],
         lambda x, w, t: F(t).layer_norm(x, (4,), w)),
    case("float32 cross_entropy", [f32((5, 4)), ints((5,), 0, 4)],
         lambda x, y, t: F(t).cross_entropy(x, y)),
    case("float32 conv2d", [f32((1, 2, 4, 4)), f32((3, 2, 2, 2))],
         lambda x, w, t: F(t).conv2d(x, w)),
    case("float32 sdpa", [f32((2, 3, 4)), f32((2, 3, 4)), f32((2, 3, 4))],
         lambda q, k, v, t: F(t).scaled_dot_product_attention(q, k, v, is_causal=True)),
    case("float32 where and clamp", [f32((3, 4))],
         lambda x, t: t.where(x > 0, x, x * 0.5).clamp(-0.3, 0.4)),
    case("int + float64", [ints((3, 4), -5, 5), (3, 4)], lambda x, y, t: x + y),
    case("int + 0-d float64", [ints((3, 4), -5, 5), ()], lambda x, y, t: x + y),
    case("float32 + float64", [(3, 4), (3, 4)], lambda x, y, t: x.float() + y),
    case("float32 * python float", [(3, 4)], lambda x, t: x.float() * 1.5),
    case("float32 * 0-d float64", [f32((3, 4)), ()], lambda x, y, t: x * y),
    case("bool * float", [(3, 4), (3, 4)], lambda x, y, t: (x > 0) * y),
    case("bool + int", [(3, 4), ints((3, 4), 0, 5)], lambda x, y, t: (x > 0) + y),
    case("float()", [(3, 4)], lambda x, t: x.float()),
    case("double()", [(3, 4)], lambda x, t: x.float().double()),
    case("to(float32)", [(3, 4)], lambda x, t: x.to(t.float32)),
    case("type(float32)", [(3, 4)], lambda x, t: x.type(t.float32)),
    case("int to float64", [ints((3, 4), -5, 5)], lambda x, t: x.to(t.float64)),
    case("float to int64", [(3, 4)], lambda x, t: (x * 3).to(t.int64)),
    case("bool to float32", [(3, 4)], lambda x, t: (x > 0).to(t.float32)),
    case("long()", [(3, 4)], lambda x, t: (x * 3).long()),
    case("int()", [(3, 4)], lambda x, t: (x * 3).int()),
    case("bool()", [(3, 4)], lambda x, t: x.bool()),
    case("type_as", [(3, 4), ints((4,), 0, 3)], lambda x, y, t: y.type_as(x)),
    case("short() char() byte()", [(3, 4)],
         lambda x, t: ((x * 3).short(), (x * 3).char(), (x.abs() * 3).byte())),
    case("int8 + uint8", [ints((3, 4), -5, 5, np.int8), ints((4,), 0, 9, np.uint8)],
         lambda x, y, t: (x + y, y.sum(), x.cumsum(0))),
    case("sum dtype", [f32((3, 4))],
         lambda x, t: (x.sum(dtype=t.float64), x.sum(1, dtype=t.float64))),
    case("mean and prod dtype", [f32((3, 4))],
         lambda x, t: (x.mean(0, dtype=t.float64), t.prod(x, 1, dtype=t.float64))),
    case("cumsum dtype int32", [ints((3, 4), -5, 5)], lambda x, t: x.cumsum(1, dtype=t.int32)),
    case("view dtype", [(3, 4)], lambda x, t: (x.view(t.int64), x.float().view(t.int32))),
    case("item", [(3, 4)], lambda x, t: x.sum().item()),
    case("item of bool", [(3, 4)], lambda x, t: (x > 0).any().item()),
    case("shape", [(3, 4)], lambda x, t: tuple(x.shape)),
    case("size(dim)", [(3, 4)], lambda x, t: x.size(1)),
    case("numel and dim", [(3, 4, 2)], lambda x, t: (x.numel(), x.dim(), x.ndim, len(x))),
    case("tolist", [(2, 3)], lambda x, t: x.tolist()),
    case("float(x)", [()], lambda x, t: float(x.detach() * 2)),
    case("int(x)", [(3,)], lambda x, t: int(x.detach()[0] * 10)),
    case("item of an int tensor", [ints((3,), 0, 9)], lambda x, t: x[1].item()),
    case("where of python ints", [(3, 4)], lambda x, t: t.where(x > 0, 1, 0)),
    case("cat float64 and float32", [(2, 3), f32((1, 3))], lambda x, y, t: t.cat([x, y])),
    case("cat ints and floats", [ints((2, 3), 0, 9), (1, 3)], lambda i, x, t: t.cat([i, x])),
    case("stack float32 and float64", [f32((2, 3)), (2, 3)], lambda x, y, t: t.stack([x, y])),
    case("where float32 or float64", [f32((3, 4)), (3, 4)],
         lambda x, y, t: t.where(x > 0, x, y)),
    case("maximum of int and float", [ints((3, 4), -3, 3), (3, 4)],
         lambda i, x, t: t.maximum(i, x)),
    case("python int ** int tensor", [ints((4,), 0, 5)], lambda x, t: 2 ** x),
    case("int tensor / python int", [ints((4,), -5, 5)], lambda x, t: x / 2),
]

POW = [
    case("pow 2", [(3, 4)], lambda x, t: x ** 2),
    case("pow 3", [(3, 4)], lambda x, t: x ** 3),
    case("pow 0.5", [(3, 4)], lambda x, t: x ** 0.5, domain="positive"),
    case("pow -1", [(3, 4)], lambda x, t: x ** -1, domain="away"),
    case("pow 0", [(3, 4)], lambda x, t: x ** 0),
    case("pow -2.5", [(3, 4)], lambda x, t: x ** -2.5, domain="positive"),
    case("pow tensor", [(3, 4), (4,)], lambda x, y, t: x ** y, domain="positive"),
    case("pow method", [(3, 4)], lambda x, t: x.pow(3)),
    case("torch.pow", [(3, 4), (3, 4)], lambda x, y, t: t.pow(x, y), domain="positive",
         needs="pow"),
    case("rpow scalar", [(3, 4)], lambda x, t: 2.0 ** x),
    case("pow negative base integer exponents", [(3, 4), fixed([1.0, 2.0, 3.0, -2.0])],
         lambda x, y, t: x ** y),
    case("pow int exponent tensor", [(3, 4), fixed([0, 1, 2, 3])], lambda x, y, t: x ** y),
    case("pow at zero", [fixed([0.0, 0.0, 0.0, 0.0, 2.0])],
         lambda x, t: (x ** 2, x ** 0.5, x ** 0, x ** 1)),
    case("pow 0 ** y", [fixed([0.0, 0.0, 0.0, 1.0]), fixed([0.0, 1.0, 2.5, 0.0])],
         lambda x, y, t: x ** y),
    case("pow negative base fraction", [fixed([-1.0, -2.0]), fixed([0.5, 1.5])],
         lambda x, y, t: x ** y),
    case("pow edges", [fixed(EDGES)], lambda x, t: (x ** 2, x ** 0.5, 2.0 ** x), grad=False),
    case("ints ** 2", [ints((5,), -4, 4)], lambda x, t: x ** 2),
    case("sqrt at zero", [fixed([0.0, 1.0, 4.0])], lambda x, t: x.sqrt()),
]

UNARY = [
    case("exp", [(3, 4)], lambda x, t: x.exp()),
    case("torch.exp", [(3, 4)], lambda x, t: t.exp(x)),
    case("log", [(3, 4)], lambda x, t: x.log(), domain="positive"),
    case("torch.log", [(3, 4)], lambda x, t: t.log(x), domain="positive"),
    case("sqrt", [(3, 4)], lambda x, t: x.sqrt(), domain="positive"),
    case("torch.sqrt", [(3, 4)], lambda x, t: t.sqrt(x), domain="positive"),
    case("rsqrt", [(3, 4)], lambda x, t: x.rsqrt(), domain="positive"),
    case("torch.rsqrt", [(3, 4)], lambda x, t: t.rsqrt(x), domain="positive"),
    case("sin", [(3, 4)], lambda x, t: x.sin()),
    case("cos", [(3, 4)], lambda x, t: t.cos(x)),
    case("tan", [(3, 4)], lambda x, t: x.tan(), domain="unit"),
    case("asin", [(3, 4)], lambda x, t: x.asin(), domain="unit"),
    case("acos", [(3, 4)], lambda x, t: t.acos(x), domain="unit"),
    case("atan", [(3, 4)], lambda x, t: x.atan()),
    case("sinh", [(3, 4)], lambda x, t: x.sinh()),
    case("cosh", [(3, 4)], lambda x, t: t.cosh(x)),
    case("tanh", [(3, 4)], lambda x, t: x.tanh()),
    case("torch.tanh", [(3, 4)], lambda x, t: t.tanh(x)),
    case("asinh", [(3, 4)], lambda x, t: x.asinh()),
    case("acosh", [(3, 4)], lambda x, t: x.acosh(), domain="above1"),
    case("atanh", [(3, 4)], lambda x, t: t.atanh(x), domain="unit"),
    case("sigmoid", [(3, 4)], lambda x, t: x.sigmoid()),
    case("torch.sigmoid", [(3, 4)], lambda x, t: t.sigmoid(x * 10)),
    case("relu", [(3, 4)], lambda x, t: x.relu()),
    case("torch.relu", [(3, 4)], lambda x, t: t.relu(x)),
    case("abs", [(3, 4)], lambda x, t: x.abs(), domain="away"),
    case("torch.abs", [(3, 4)], lambda x, t: t.abs(x), domain="away"),
    case("abs builtin", [(3, 4)], lambda x, t: abs(x), domain="away"),
    case("erf", [(3, 4)], lambda x, t: x.erf()),
    case("torch.erf", [(3, 4)], lambda x, t: t.erf(x)),
    case("floor", [(3, 4)], lambda x, t: (x * 3).floor()),
    case("ceil", [(3, 4)], lambda x, t: t.ceil(x * 3)),
    case("round", [(3, 4)], lambda x, t: (x * 3).round()),
    case("round half to even", [fixed([0.5, 1.5, 2.5, -0.5, -1.5, 0.49])], lambda x, t: x.round()),
    case("round decimals", [(3, 4)], lambda x, t: (x * 3).round(decimals=2),
         xfail="round(decimals=...) supports only 0"),
    case("torch.round", [(3, 4)], lambda x, t: t.round(x * 3)),
    case("trunc", [(3, 4)], lambda x, t: (x * 3).trunc()),
    case("torch.trunc", [(3, 4)], lambda x, t: t.trunc(x * 3)),
    case("clamp", [(3, 4)], lambda x, t: x.clamp(-0.5, 0.5)),
    case("clamp min", [(3, 4)], lambda x, t: x.clamp(min=0.1)),
    case("clamp max", [(3, 4)], lambda x, t: x.clamp(max=-0.1)),
    case("torch.clamp", [(3, 4)], lambda x, t: t.clamp(x, min=-0.3, max=0.2)),
    case("torch.clip", [(3, 4)], lambda x, t: t.clip(x, -0.3, 0.2)),
    case("clamp at the bounds", [fixed([-1.0, -0.5, 0.0, 0.5, 1.0])],
         lambda x, t: x.clamp(-0.5, 0.5)),
    case("clamp tensor bounds", [(3, 4), const((4,)), const((3, 1))],
         lambda x, lo, hi, t: x.clamp(lo - 1, hi + 1)),
    case("clamp int", [ints((6,), -5, 5)], lambda x, t: x.clamp(-2, 3)),
    case("abs int", [ints((6,), -5, 5)], lambda x, t: x.abs()),
    case("neg int", [ints((6,), -5, 5)], lambda x, t: -x),
    case("relu at zero", [fixed([-1.0, 0.0, 1.0])], lambda x, t: x.relu()),
    case("abs at zero", [fixed([-1.0, 0.0, -0.0, 1.0])], lambda x, t: x.abs()),
    case("log at zero and below", [fixed([0.0, -1.0, 1.0, inf])], lambda x, t: x.log()),
    case("unary at the edges", [fixed(EDGES)],
         lambda x, t: (x.exp(), x.tanh(), x.sigmoid(), x.relu(), x.abs(), x.erf(), x.atan(),
                       x.floor(), x.ceil(), x.round(), x.trunc(), x.clamp(-1, 1)), grad=False),
    case("sqrt and log at the edges", [fixed(EDGES)],
         lambda x, t: (x.sqrt(), x.log(), x.rsqrt(), x.sin(), x.cos()), grad=False),
    case("sigmoid saturates", [fixed([-800.0, -40.0, 0.0, 40.0, 800.0])], lambda x, t: x.sigmoid()),
    case("tanh saturates", [fixed([-800.0, -20.0, 0.0, 20.0, 800.0])], lambda x, t: x.tanh()),
    case("gradients at nan and inf", [fixed([nan, inf, -inf, 1.0, 0.0])],
         lambda x, t: (x.relu(), x.clamp(-1, 1), x.abs(), x.exp(), x.tanh(), x.sigmoid(),
                       t.maximum(x, x * 0), x * 2, x.sin(), x.erf())),
    case("where picks around nan gradient", [fixed([-1.0, 0.0, 4.0])],
         lambda x, t: t.where(x > 0, x.sqrt(), 0.0)),
    case("exp overflows", [fixed([-800.0, 0.0, 700.0, 800.0])], lambda x, t: x.exp(), grad=False),
    case("sign", [(3, 4)], lambda x, t: x.sign(), domain="away", needs="Tensor.sign"),
    case("torch.sign", [(3, 4)], lambda x, t: t.sign(x), domain="away", needs="sign"),
    case("square", [(3, 4)], lambda x, t: x.square(), needs="Tensor.square"),
    case("log1p", [(3, 4)], lambda x, t: x.log1p(), domain="positive", needs="Tensor.log1p"),
    case("expm1", [(3, 4)], lambda x, t: x.expm1(), needs="Tensor.expm1"),
    case("log2", [(3, 4)], lambda x, t: x.log2(), domain="positive", needs="Tensor.log2"),
    case("log10", [(3, 4)], lambda x, t: t.log10(x), domain="positive", needs="log10"),
    case("reciprocal", [(3, 4)], lambda x, t: x.reciprocal(), domain="away",
         needs="Tensor.reciprocal"),
    case("frac", [(3, 4)], lambda x, t: x.frac(), needs="Tensor.frac"),
    case("erfinv", [(3, 4)], lambda x, t: x.erfinv(), domain="unit", needs="Tensor.erfinv"),
    case("logit", [(3, 4)], lambda x, t: x.logit(), domain="prob", needs="Tensor.logit"),
    case("nan_to_num", [fixed(EDGES)], lambda x, t: t.nan_to_num(x), needs="nan_to_num"),
]

COMPARISON = [
    case("gt", [(3, 4), (3, 4)], lambda x, y, t: x > y),
    case("lt scalar", [(3, 4)], lambda x, t: x < 0.5),
    case("ge broadcast", [(3, 4), (4,)], lambda x, y, t: x >= y),
    case("le", [(3, 4), (3, 1)], lambda x, y, t: x <= y),
    case("eq", [fixed([1.0, 2.0, nan, 0.0]), fixed([1.0, 3.0, nan, -0.0])],
         lambda x, y, t: x == y),
    case("ne", [fixed([1.0, 2.0, nan, 0.0]), fixed([1.0, 3.0, nan, -0.0])],
         lambda x, y, t: x != y),
    case("eq int", [ints((8,), 0, 3), ints((8,), 0, 3)], lambda x, y, t: x == y),
    case("compare int with float", [ints((8,), -3, 3)], lambda x, t: x > 0.5),
    case("rgt scalar", [(3, 4)], lambda x, t: 0.5 < x),
    case("and", [(3, 4), (3, 4)], lambda x, y, t: (x > 0) & (y > 0)),
    case("or", [(3, 4), (3, 4)], lambda x, y, t: (x > 0) | (y > 0)),
    case("xor", [(3, 4), (3, 4)], lambda x, y, t: (x > 0) ^ (y > 0)),
    case("invert", [(3, 4)], lambda x, t: ~(x > 0)),
    case("bitwise ints", [ints((8,), 0, 16), ints((8,), 0, 16)],
         lambda x, y, t: (x & y, x | y, x ^ y, ~x)),
    case("torch.bitwise_and", [bools((3, 4)), bools((4,))], lambda x, y, t: t.bitwise_and(x, y)),
    case("logical_and", [(3, 4), (3, 4)], lambda x, y, t: t.logical_and(x > 0, y > 0),
         needs="logical_and"),
    case("logical_not", [(3, 4)], lambda x, t: t.logical_not(x > 0), needs="logical_not"),
    case("isclose", [(3, 4), (3, 4)], lambda x, y, t: t.isclose(x, x + y * 1e-6)),
    case("isclose method nan", [fixed([1.0, nan, inf]), fixed([1.0 + 1e-9, nan, inf])],
         lambda x, y, t: (x.isclose(y), x.isclose(y, equal_nan=True))),
    case("isnan", [fixed(EDGES)], lambda x, t: t.isnan(x), needs="isnan"),
    case("isinf", [fixed(EDGES)], lambda x, t: t.isinf(x), needs="isinf"),
    case("isfinite", [fixed(EDGES)], lambda x, t: t.isfinite(x), needs="isfinite"),
    case("allclose", [(3, 4)], lambda x, t: t.allclose(x, x + 1e-12), needs="allclose"),
    case("equal", [(3, 4)], lambda x, t: t.equal(x, x * 1), needs="equal"),
    case("where", [(3, 4), (3, 4)], lambda x, y, t: t.where(x > 0, x, y)),
    case("where broadcast", [(3, 4), (4,)], lambda x, y, t: t.where(y > 0, x, y * 2)),
    case("where scalar branch", [(3, 4)], lambda x, t: t.where(x > 0, x, 0.0)),
    case("where scalar first", [(3, 4)], lambda x, t: t.where(x > 0, 1.0, x)),
    case("where method", [(3, 4), (3, 4)], lambda x, y, t: x.where(x > 0, y),
         needs="Tensor.where"),
    case("where masks nan gradient", [fixed([-1.0, 0.0, 4.0])],
         lambda x, t: t.where(x > 0, x, 1.0).sqrt()),
    case("masked_fill", [(3, 4)], lambda x, t: x.masked_fill(x > 0, 0.0)),
    case("masked_fill broadcast", [(3, 4), bools((4,))], lambda x, m, t: x.masked_fill(m, -1.5)),
    case("masked_fill -inf softmax", [(3, 4)],
         lambda x, t: x.masked_fill(~t.tensor(MASK[:3, :4]), -inf).softmax(-1)),
    case("masked_fill tensor value", [(3, 4)], lambda x, t: x.masked_fill(x > 0, t.tensor(2.0))),
    case("torch.masked_fill", [(3, 4)], lambda x, t: t.masked_fill(x, x < 0, 1.0),
         needs="masked_fill"),
    case("any", [(3, 4)], lambda x, t: (x > 1).any()),
    case("all dim", [(3, 4)], lambda x, t: (x > -1).all(dim=1)),
    case("any dim keepdim", [(3, 4)], lambda x, t: (x > 1).any(0, keepdim=True)),
    case("torch.any", [(3, 4)], lambda x, t: t.any(x > 1, dim=1)),
    case("torch.all", [(3, 4)], lambda x, t: t.all(x > -2)),
    case("any of floats", [fixed([0.0, 0.0, 2.0])], lambda x, t: (x.any(), x.all())),
    case("any of ints", [ints((3, 4), 0, 2)], lambda x, t: (x.any(dim=0), x.all(dim=1))),
]

REDUCTION = [
    case("sum", [(3, 4)], lambda x, t: x.sum()),
    case("sum dim", [(3, 4)], lambda x, t: x.sum(dim=1)),
    case("sum dim keepdim", [(2, 3, 4)], lambda x, t: x.sum(-1, keepdim=True)),
    case("sum dims tuple", [(2, 3, 4)], lambda x, t: x.sum(dim=(0, 2))),
    case("sum dims list", [(2, 3, 4)], lambda x, t: x.sum([0, 1])),
    case("torch.sum", [(2, 3, 4)], lambda x, t: t.sum(x, 1)),
    case("sum 0-d", [()], lambda x, t: x.sum()),
    case("sum of ints", [ints((3, 4), -5, 5)], lambda x, t: (x.sum(), x.sum(0))),
    case("sum of bools", [(3, 4)], lambda x, t: ((x > 0).sum(), (x > 0).sum(1))),
    case("sum empty", [(0, 3)], lambda x, t: (x.sum(), x.sum(0))),
    case("mean", [(3, 4)], lambda x, t: x.mean()),
    case("mean dim", [(3, 4)], lambda x, t: x.mean(0)),
    case("mean dims keepdim", [(2, 3, 4)], lambda x, t: x.mean((0, 2), keepdim=True)),
    case("torch.mean", [(2, 3, 4)], lambda x, t: t.mean(x, dim=-1)),
    case("prod", [(3, 4)], lambda x, t: x.prod()),
    case("prod dim", [(3, 4)], lambda x, t: x.prod(1)),
    case("prod keepdim", [(3, 4)], lambda x, t: x.prod(0, keepdim=True)),
    case("prod one zero", [fixed([[1.5, 0.0, 2.0], [1.0, 2.0, 3.0]])], lambda x, t: x.prod(1)),
    case("prod two zeros", [fixed([[0.0, 0.0, 2.0], [1.0, 0.0, 3.0]])], lambda x, t: x.prod()),
    case("torch.prod", [(3, 4)], lambda x, t: t.prod(x, 0)),
    case("prod of ints", [ints((3, 4), -3, 3)], lambda x, t: x.prod(1)),
    case("var", [(3, 4)], lambda x, t: x.var()),
    case("var dim", [(3, 4)], lambda x, t: x.var(1)),
    case("var correction 0", [(3, 4)], lambda x, t: x.var(0, correction=0)),
    case("var correction 2", [(3, 5)], lambda x, t: x.var(1, correction=2)),
    case("var unbiased False", [(3, 4)], lambda x, t: x.var(1, unbiased=False)),
    case("var keepdim", [(2, 3, 4)], lambda x, t: x.var((0, 2), keepdim=True)),
    case("torch.var", [(3, 4)], lambda x, t: t.var(x, 0)),
    case("std", [(3, 4)], lambda x, t: x.std()),
    case("std dim keepdim", [(3, 4)], lambda x, t: x.std(1, keepdim=True)),
    case("std correction 0", [(3, 4)], lambda x, t: x.std(dim=0, correction=0)),
    case("torch.std", [(3, 4)], lambda x, t: t.std(x, 1)),
    case("std of constant", [fixed([[2.0, 2.0, 2.0], [1.0, 2.0, 3.0]])], lambda x, t: x.std(1)),
    case("var of one value", [(3, 1)], lambda x, t: x.var(1), grad=False),
    case("var_mean", [(3, 4)], lambda x, t: t.var_mean(x, 1)),
    case("std_mean", [(3, 4)], lambda x, t: t.std_mean(x, 1)),
    case("max", [(3, 4)], lambda x, t: x.max()),
    case("max ties", [fixed([[1.0, 3.0, 3.0], [3.0, 0.0, 1.0]])], lambda x, t: x.max()),
    case("max dim", [(3, 4)], lambda x, t: x.max(dim=1)),
    case("max dim ties", [fixed([[1.0, 3.0, 3.0], [2.0, 2.0, 1.0]])], lambda x, t: x.max(1)),
    case("max dim values", [(3, 4)], lambda x, t: x.max(1).values),
    case("max dim indices", [(3, 4)], lambda x, t: x.max(1).indices),
    case("max dim [0]", [(3, 4)], lambda x, t: x.max(0)[0]),
    case("max dim keepdim", [(2, 3, 4)], lambda x, t: x.max(-1, keepdim=True)),
    case("torch.max dim", [(3, 4)], lambda x, t: t.max(x, 1)),
    case("torch.max", [(3, 4)], lambda x, t: t.max(x)),
    case("max nan", [fixed([[1.0, nan, 3.0], [1.0, 2.0, 0.0]])], lambda x, t: (x.max(), x.max(1)),
         grad=False),
    case("min", [(3, 4)], lambda x, t: x.min()),
    case("min dim", [(3, 4)], lambda x, t: x.min(0)),
    case("min dim keepdim", [(3, 4)], lambda x, t: x.min(1, keepdim=True)),
    case("torch.min", [(3, 4)], lambda x, t: t.min(x, dim=0).values),
    case("max of ints", [ints((3, 4), -9, 9)], lambda x, t: (x.max(), x.max(1), x.min(0))),
    case("amax", [(3, 4)], lambda x, t: x.amax(1), needs="Tensor.amax"),
    case("amin", [(3, 4)], lambda x, t: t.amin(x, (0, 1)), needs="amin"),
    case("aminmax", [(3, 4)], lambda x, t: t.aminmax(x), needs="aminmax"),
    case("argmax", [(3, 4)], lambda x, t: x.argmax()),
    case("argmax dim", [(3, 4)], lambda x, t: x.argmax(1)),
    case("argmax keepdim", [(3, 4)], lambda x, t: x.argmax(0, keepdim=True)),
    case("argmin", [(3, 4)], lambda x, t: x.argmin(dim=1)),
    case("torch.argmax", [(3, 4)], lambda x, t: t.argmax(x, dim=0)),
    case("torch.argmin", [(3, 4)], lambda x, t: t.argmin(x)),
    case("argmax ties and nan", [fixed([[1.0, 3.0, 3.0], [1.0, nan, 2.0]])],
         lambda x, t: (x.argmax(1), x.argmin(1))),
    case("norm", [(3, 4)], lambda x, t: x.norm()),
    case("norm p=1 dim", [(3, 4)], lambda x, t: x.norm(1, dim=1), domain="away"),
    case("norm p=2 dim keepdim", [(3, 4)], lambda x, t: x.norm(2, dim=0, keepdim=True)),
    case("norm p=3", [(3, 4)], lambda x, t: x.norm(3, dim=1), domain="away"),
    case("norm p=inf", [(3, 4)], lambda x, t: x.norm(inf, dim=1)),
    case("norm of zeros", [fixed([[0.0, 0.0], [3.0, 4.0]])], lambda x, t: x.norm(dim=1)),
    case("torch.norm", [(3, 4)], lambda x, t: t.norm(x), needs="norm"),
    case("linalg.vector_norm", [(3, 4)], lambda x, t: t.linalg.vector_norm(x, dim=1),
         needs="linalg.vector_norm"),
    case("logsumexp", [(3, 4)], lambda x, t: x.logsumexp(1)),
    case("logsumexp keepdim", [(3, 4)], lambda x, t: x.logsumexp(0, keepdim=True)),
    case("logsumexp dims", [(2, 3, 4)], lambda x, t: x.logsumexp((0, 2))),
    case("torch.logsumexp", [(3, 4)], lambda x, t: t.logsumexp(x * 100, dim=-1)),
    case("logsumexp -inf", [fixed([[-inf, -inf], [-inf, 1.0], [inf, 1.0]])],
         lambda x, t: x.logsumexp(1), grad=False),
    case("logsumexp -inf gradient", [fixed([[-inf, 0.0], [-inf, 1.0]])],
         lambda x, t: x.logsumexp(1)),
    case("count_nonzero", [ints((3, 4), 0, 3)], lambda x, t: t.count_nonzero(x, dim=1),
         needs="count_nonzero"),
    case("median", [(3, 5)], lambda x, t: x.median(), needs="Tensor.median"),
    case("mode and kthvalue", [(3, 5)], lambda x, t: x.kthvalue(2, 1), needs="Tensor.kthvalue"),
    case("cumsum", [(3, 4)], lambda x, t: x.cumsum(0)),
    case("cumsum last dim", [(2, 3, 4)], lambda x, t: x.cumsum(dim=-1)),
    case("torch.cumsum", [(3, 4)], lambda x, t: t.cumsum(x, 1)),
    case("cumsum ints", [ints((3, 4), -5, 5)], lambda x, t: x.cumsum(1)),
    case("cumsum bools", [(3, 4)], lambda x, t: (x > 0).cumsum(1)),
    case("cumsum dtype", [ints((3, 4), -5, 5)], lambda x, t: x.cumsum(1, dtype=t.float64)),
    case("cumprod", [(3, 4)], lambda x, t: x.cumprod(1)),
    case("cumprod with zero", [fixed([[1.5, 0.0, 2.0, 3.0], [0.0, 2.0, 0.0, -1.0]])],
         lambda x, t: x.cumprod(1)),
    case("torch.cumprod", [(3, 4)], lambda x, t: t.cumprod(x, 0)),
    case("cummax", [(3, 4)], lambda x, t: x.cummax(1)),
    case("cummax ties", [fixed([[1.0, 3.0, 3.0, 2.0, 3.0]])], lambda x, t: x.cummax(1)),
    case("cummin", [(3, 4)], lambda x, t: t.cummin(x, 0)),
    case("logcumsumexp", [(3, 4)], lambda x, t: x.logcumsumexp(1)),
    case("torch.logcumsumexp", [(3, 4)], lambda x, t: t.logcumsumexp(x * 50, 0)),
    case("logcumsumexp -inf", [fixed([[-inf, 0.0, -inf, 1.0]])], lambda x, t: x.logcumsumexp(1)),
    case("diff", [(3, 5)], lambda x, t: t.diff(x, dim=1), needs="diff"),
]

SHAPE = [
    case("reshape", [(3, 4)], lambda x, t: x.reshape(4, 3)),
    case("reshape tuple", [(3, 4)], lambda x, t: x.reshape((2, -1))),
    case("reshape -1", [(2, 3, 4)], lambda x, t: x.reshape(-1)),
    case("reshape to 0-d", [(1, 1)], lambda x, t: x.reshape(())),
    case("torch.reshape", [(3, 4)], lambda x, t: t.reshape(x, (6, 2))),
    case("view", [(3, 4)], lambda x, t: x.view(2, 6)),
    case("view -1", [(3, 4)], lambda x, t: x.view(-1, 2)),
    case("view_as", [(3, 4), (4, 3)], lambda x, y, t: x.view_as(y)),
    case("reshape_as", [(3, 4), (2, 6)], lambda x, y, t: x.reshape_as(y)),
    case("permute", [(2, 3, 4)], lambda x, t: x.permute(2, 0, 1)),
    case("permute tuple", [(2, 3, 4)], lambda x, t: x.permute((1, 2, 0))),
    case("permute negative", [(2, 3, 4)], lambda x, t: x.permute(-1, 0, 1)),
    case("torch.permute", [(2, 3, 4)], lambda x, t: t.permute(x, (2, 1, 0))),
    case("transpose", [(3, 4)], lambda x, t: x.transpose(0, 1)),
    case("transpose negative", [(2, 3, 4)], lambda x, t: x.transpose(-1, -2)),
    case("torch.transpose", [(2, 3, 4)], lambda x, t: t.transpose(x, 0, 2)),
    case("t()", [(3, 4)], lambda x, t: x.t()),
    case("T", [(3, 4)], lambda x, t: x.T),
    case("mT", [(2, 3, 4)], lambda x, t: x.mT, needs="Tensor.mT"),
    case("swapaxes", [(2, 3, 4)], lambda x, t: x.swapaxes(0, 1), needs="Tensor.swapaxes"),
    case("movedim", [(2, 3, 4)], lambda x, t: x.movedim(0, -1), needs="Tensor.movedim"),
    case("flatten", [(2, 3, 4)], lambda x, t: x.flatten()),
    case("flatten start", [(2, 3, 4)], lambda x, t: x.flatten(1)),
    case("flatten range", [(2, 3, 4, 2)], lambda x, t: x.flatten(1, 2)),
    case("torch.flatten", [(2, 3, 4)], lambda x, t: t.flatten(x, 0, 1)),
    case("flatten 0-d", [()], lambda x, t: x.flatten()),
    case("unflatten", [(3, 4)], lambda x, t: x.unflatten(1, (2, 2))),
    case("unflatten -1", [(3, 8)], lambda x, t: x.unflatten(-1, (2, -1))),
    case("torch.unflatten", [(6, 4)], lambda x, t: t.unflatten(x, 0, (3, 2))),
    case("squeeze", [(1, 3, 1, 4)], lambda x, t: x.squeeze()),
    case("squeeze dim", [(1, 3, 1, 4)], lambda x, t: x.squeeze(2)),
    case("squeeze non-1 dim", [(1, 3, 1, 4)], lambda x, t: x.squeeze(1)),
    case("squeeze dims", [(1, 3, 1, 4)], lambda x, t: x.squeeze((0, 2)),
         xfail="squeeze takes one dim, not a tuple of them"),
    case("torch.squeeze", [(1, 3, 1, 4)], lambda x, t: t.squeeze(x, 0)),
    case("unsqueeze", [(3, 4)], lambda x, t: x.unsqueeze(0)),
    case("unsqueeze -1", [(3, 4)], lambda x, t: x.unsqueeze(-1)),
    case("torch.unsqueeze", [(3, 4)], lambda x, t: t.unsqueeze(x, 1)),
    case("expand", [(1, 4)], lambda x, t: x.expand(3, 4)),
    case("expand -1", [(3, 1)], lambda x, t: x.expand(-1, 4)),
    case("expand new dims", [(4,)], lambda x, t: x.expand(2, 3, 4)),
    case("expand tuple", [(3, 1)], lambda x, t: x.expand((3, 5))),
    case("expand_as", [(3, 1), (3, 4)], lambda x, y, t: x.expand_as(y)),
    case("broadcast_to", [(3, 1)], lambda x, t: t.broadcast_to(x, (2, 3, 4)),
         needs="broadcast_to"),
    case("repeat", [(2, 3)], lambda x, t: x.repeat(2, 3)),
    case("repeat new dims", [(2, 3)], lambda x, t: x.repeat(2, 1, 2)),
    case("repeat tuple", [(2, 3)], lambda x, t: x.repeat((1, 2))),
    case("tile", [(2, 3)], lambda x, t: t.tile(x, (2,)), needs="tile"),
    case("repeat_interleave", [(2, 3)], lambda x, t: x.repeat_interleave(2)),
    case("repeat_interleave dim", [(2, 3)], lambda x, t: x.repeat_interleave(3, dim=0)),
    case("repeat_interleave tensor", [(3, 2), fixed([1, 0, 3])],
         lambda x, r, t: x.repeat_interleave(r, dim=0)),
    case("torch.repeat_interleave", [(2, 3)], lambda x, t: t.repeat_interleave(x, 2, dim=1)),
    case("repeat_interleave counts", [fixed([2, 0, 1])], lambda r, t: t.repeat_interleave(r)),
    case("cat", [(2, 3), (4, 3)], lambda x, y, t: t.cat([x, y])),
    case("cat dim 1", [(2, 3), (2, 1)], lambda x, y, t: t.cat((x, y), dim=1)),
    case("cat three negative dim", [(2, 3), (2, 1), (2, 2)],
         lambda x, y, z, t: t.cat([x, y, z], -1)),
    case("cat self", [(2, 3)], lambda x, t: t.cat([x, x * 2, x])),
    case("cat empty", [(2, 3), (0, 3)], lambda x, y, t: t.cat([x, y])),
    case("concatenate", [(2, 3), (2, 3)], lambda x, y, t: t.concatenate([x, y], 1)),
    case("cat ints", [ints((2, 3), 0, 9), ints((1, 3), 0, 9)], lambda x, y, t: t.cat([x, y])),
    case("stack", [(2, 3), (2, 3)], lambda x, y, t: t.stack([x, y])),
    case("stack dim -1", [(2, 3), (2, 3), (2, 3)], lambda x, y, z, t: t.stack((x, y, z), dim=-1)),
    case("stack 0-d", [(), ()], lambda x, y, t: t.stack([x, y])),
    case("hstack", [(2, 3), (2, 1)], lambda x, y, t: t.hstack([x, y]), needs="hstack"),
    case("vstack", [(2, 3), (1, 3)], lambda x, y, t: t.vstack([x, y]), needs="vstack"),
    case("split", [(5, 3)], lambda x, t: x.split(2)),
    case("split sections", [(2, 5)], lambda x, t: x.split([1, 4], dim=1)),
    case("torch.split", [(5, 3)], lambda x, t: t.split(x, 3)),
    case("split use one part", [(5, 3)], lambda x, t: x.split(2)[1] * 3),
    case("tensor_split", [(5, 3)], lambda x, t: x.tensor_split(3), needs="Tensor.tensor_split"),
    case("chunk", [(6, 3)], lambda x, t: x.chunk(3)),
    case("chunk uneven", [(2, 5)], lambda x, t: x.chunk(2, dim=1)),
    case("chunk fewer", [(2, 3)], lambda x, t: t.chunk(x, 5, 1)),
    case("unbind", [(2, 3)], lambda x, t: x.unbind(1)),
    case("torch.unbind", [(2, 3)], lambda x, t: t.unbind(x)),
    case("narrow", [(3, 5)], lambda x, t: x.narrow(1, 1, 3), needs="Tensor.narrow"),
    case("flip", [(3, 4)], lambda x, t: x.flip(0)),
    case("flip two dims", [(2, 3, 4)], lambda x, t: x.flip(0, 2)),
    case("flip tuple", [(3, 4)], lambda x, t: x.flip((0, 1))),
    case("torch.flip", [(3, 4)], lambda x, t: t.flip(x, [-1])),
    case("fliplr", [(3, 4)], lambda x, t: t.fliplr(x), needs="fliplr"),
    case("rot90", [(3, 4)], lambda x, t: t.rot90(x, 1, (0, 1)), needs="rot90"),
    case("roll flat", [(3, 4)], lambda x, t: x.roll(5)),
    case("roll dim", [(3, 4)], lambda x, t: x.roll(1, 0)),
    case("roll negative", [(3, 4)], lambda x, t: x.roll(-1, dims=1)),
    case("roll two dims", [(3, 4)], lambda x, t: x.roll((1, -3), (0, 1))),
    case("torch.roll", [(3, 4)], lambda x, t: t.roll(x, 2, 1)),
    case("tril", [(3, 4)], lambda x, t: x.tril()),
    case("tril -1", [(4, 4)], lambda x, t: x.tril(-1)),
    case("triu 1", [(3, 4)], lambda x, t: x.triu(1)),
    case("torch.tril batched", [(2, 3, 3)], lambda x, t: t.tril(x)),
    case("torch.triu", [(3, 4)], lambda x, t: t.triu(x, diagonal=-1)),
    case("diagonal", [(3, 4)], lambda x, t: x.diagonal()),
    case("diagonal offset", [(3, 4)], lambda x, t: x.diagonal(1)),
    case("diagonal negative offset", [(3, 4)], lambda x, t: x.diagonal(-1)),
    case("diagonal batched", [(2, 3, 3)], lambda x, t: x.diagonal(0, 1, 2)),
    case("diagonal dims", [(3, 2, 3)], lambda x, t: t.diagonal(x, 0, 0, 2)),
    case("diag of vector", [(3,)], lambda x, t: x.diag()),
    case("diag of vector offset", [(3,)], lambda x, t: t.diag(x, -1)),
    case("diag of matrix", [(3, 4)], lambda x, t: t.diag(x)),
    case("diag of matrix offset", [(3, 4)], lambda x, t: x.diag(2)),
    case("diag_embed", [(2, 3)], lambda x, t: t.diag_embed(x), needs="diag_embed"),
    case("trace", [(3, 3)], lambda x, t: x.trace(), needs="Tensor.trace"),
    case("unfold", [(6,)], lambda x, t: x.unfold(0, 2, 1)),
    case("unfold step", [(3, 7)], lambda x, t: x.unfold(1, 3, 2)),
    case("unfold dim 0", [(5, 2)], lambda x, t: x.unfold(0, 2, 3)),
    case("clone", [(3, 4)], lambda x, t: x.clone()),
    case("detach", [(3, 4)], lambda x, t: x.detach() * x),
    case("contiguous", [(3, 4)], lambda x, t: x.t().contiguous(), needs="Tensor.contiguous"),
]

INDEXING = [
    case("index int", [(3, 4)], lambda x, t: x[0]),
    case("index negative", [(3, 4)], lambda x, t: x[-1]),
    case("index two ints", [(3, 4)], lambda x, t: x[1, 2]),
    case("index chained", [(3, 4)], lambda x, t: x[1][2]),
    case("slice", [(3, 4)], lambda x, t: x[1:]),
    case("slice step", [(3, 4)], lambda x, t: x[:, ::2]),
    case("slice both", [(3, 4)], lambda x, t: x[1:, ::2]),
    case("slice negative", [(5, 4)], lambda x, t: x[-3:-1, :-1]),
    case("slice empty", [(3, 4)], lambda x, t: x[2:1]),
    case("slice past the end", [(3, 4)], lambda x, t: x[1:10]),
    case("ellipsis", [(2, 3, 4)], lambda x, t: x[..., 0]),
    case("ellipsis slice", [(2, 3, 4)], lambda x, t: x[0, ..., 1:]),
    case("None", [(3, 4)], lambda x, t: x[None]),
    case("None middle", [(3, 4)], lambda x, t: x[:, None, 1:]),
    case("list index", [(4, 3)], lambda x, t: x[[0, 2]]),
    case("tensor index repeated", [(4, 3), fixed(IDX)], lambda x, i, t: x[i]),
    case("tensor index negative", [(4, 3), fixed([-1, 0, -4])], lambda x, i, t: x[i]),
    case("tensor index 2-d", [(4, 3), fixed([[0, 1], [3, 3]])], lambda x, i, t: x[i]),
    case("tensor index second dim", [(3, 4), fixed(IDX)], lambda x, i, t: x[:, i]),
    case("two tensor indices", [(4, 3), fixed(IDX), fixed([0, 2, 2, 1])],
         lambda x, i, j, t: x[i, j]),
    case("tensor indices broadcast", [(4, 3), fixed([[0], [3]]), fixed([0, 2])],
         lambda x, i, j, t: x[i, j]),
    case("slice and list", [(4, 3)], lambda x, t: x[1:3, [0, 2]]),
    case("int and list", [(4, 3)], lambda x, t: x[1, [0, 2, 0]]),
    case("advanced split by slice", [(2, 3, 4), fixed([0, 1]), fixed([1, 3])],
         lambda x, i, j, t: x[i, :, j]),
    case("bool mask", [(3, 4)], lambda x, t: x[x > 0]),
    case("bool mask rows", [(3, 4), fixed([True, False, True])], lambda x, m, t: x[m]),
    case("bool list", [(3, 4)], lambda x, t: x[[True, False, True]]),
    case("bool mask all false", [(3, 4)], lambda x, t: x[x > 100]),
    case("index of ints", [ints((4, 3), 0, 9)], lambda x, t: x[1:, [0, 2]]),
    case("gather", [(3, 4), fixed([[0, 3], [1, 1], [2, 0]])], lambda x, i, t: x.gather(1, i)),
    case("gather dim 0", [(3, 4), fixed([[0, 2, 2, 1]])], lambda x, i, t: x.gather(0, i)),
    case("torch.gather", [(3, 4), ints((3, 6), 0, 4)], lambda x, i, t: t.gather(x, 1, i)),
    case("take_along_dim", [(3, 4)], lambda x, t: t.take_along_dim(x, x.argsort(1), 1),
         needs="take_along_dim"),
    case("index_select", [(4, 3), fixed(IDX)], lambda x, i, t: x.index_select(0, i)),
    case("index_select dim 1", [(3, 4), fixed([3, 0])], lambda x, i, t: x.index_select(1, i)),
    case("torch.index_select", [(3, 4), fixed(IDX)], lambda x, i, t: t.index_select(x, -1, i)),
    case("masked_select", [(3, 4)], lambda x, t: x.masked_select(x > 0)),
    case("masked_select broadcast", [(3, 4), fixed([True, False, False, True])],
         lambda x, m, t: t.masked_select(x, m)),
    case("topk", [(3, 5)], lambda x, t: x.topk(2)),
    case("topk smallest dim 0", [(3, 5)], lambda x, t: x.topk(2, dim=0, largest=False)),
    case("topk values", [(3, 5)], lambda x, t: t.topk(x, 3).values),
    case("topk indices", [(3, 5)], lambda x, t: t.topk(x, 3, 1).indices),
    case("topk ints", [fixed([5, 1, 7, 3])], lambda x, t: x.topk(2)),
    case("sort", [(3, 5)], lambda x, t: x.sort(), needs="Tensor.sort"),
    case("torch.sort descending", [(3, 5)], lambda x, t: t.sort(x, 0, descending=True),
         needs="sort"),
    case("argsort", [(3, 5)], lambda x, t: x.argsort()),
    case("argsort descending dim 0", [(3, 5)], lambda x, t: x.argsort(dim=0, descending=True)),
    case("torch.argsort", [(3, 5)], lambda x, t: t.argsort(x, 1)),
    case("argsort stable ties", [fixed([3, 1, 3, 1, 2])], lambda x, t: x.argsort(stable=True)),
    case("nonzero", [fixed([[0, 1, 0], [2, 0, 3]])], lambda x, t: x.nonzero()),
    case("nonzero as_tuple", [fixed([[0.0, 1.5, 0.0], [2.0, 0.0, -1.0]])],
         lambda x, t: x.nonzero(as_tuple=True)),
    case("torch.nonzero", [(3, 4)], lambda x, t: t.nonzero(x > 0)),
    case("argwhere", [(3, 4)], lambda x, t: t.argwhere(x > 0), needs="argwhere"),
    case("scatter", [(3, 4), fixed([[0, 1], [2, 3], [1, 0]]), (3, 2)],
         lambda x, i, s, t: x.scatter(1, i, s), needs="Tensor.scatter"),
    case("scatter_add", [(3, 4), fixed([[0, 0], [2, 3], [1, 1]]), (3, 2)],
         lambda x, i, s, t: x.scatter_add(1, i, s), needs="Tensor.scatter_add"),
    case("index_add", [(4, 3), fixed([0, 2, 0]), (3, 3)],
         lambda x, i, s, t: x.index_add(0, i, s), needs="Tensor.index_add"),
    case("searchsorted", [fixed([1.0, 2.0, 4.0]), (5,)], lambda b, x, t: t.searchsorted(b, x),
         needs="searchsorted"),
    case("unique", [fixed([3, 1, 3, 2])], lambda x, t: t.unique(x), needs="unique"),
]

MATMUL = [
    case("matmul 2-d", [(3, 4), (4, 5)], lambda x, y, t: x @ y),
    case("matmul vec mat", [(4,), (4, 5)], lambda x, y, t: x @ y),
    case("matmul mat vec", [(3, 4), (4,)], lambda x, y, t: x @ y),
    case("matmul vec vec", [(4,), (4,)], lambda x, y, t: x @ y),
    case("matmul batched", [(2, 3, 4), (2, 4, 5)], lambda x, y, t: x @ y),
    case("matmul broadcast 3-d @ 2-d", [(2, 3, 4), (4, 5)], lambda x, y, t: x @ y),
    case("matmul broadcast batches", [(2, 1, 3, 4), (3, 4, 2)], lambda x, y, t: x @ y),
    case("matmul batched @ vec", [(2, 3, 4), (4,)], lambda x, y, t: x @ y),
    case("matmul vec @ batched", [(4,), (2, 4, 3)], lambda x, y, t: x @ y),
    case("log1p and expm1", [(3, 4)],
         lambda x, t: (x.abs().log1p(), t.expm1(x), (x * 1e-6).log1p())),
    case("log2 and log10", [(3, 4)], lambda x, t: (x.abs().log2(), t.log10(x.abs() + 0.5))),
    case("log1p at the edges", [fixed([-1.0, -2.0, 0.0, np.inf])], lambda x, t: x.log1p(),
         grad=False),
    case("mm method and function", [(3, 4), (4, 2)], lambda x, y, t: (x.mm(y), t.mm(x, y))),
    case("bmm method and function", [(2, 3, 4), (2, 4, 5)],
         lambda x, y, t: (x.bmm(y), t.bmm(x, y))),
    case("mv method and function", [(3, 4), (4,)], lambda x, y, t: (x.mv(y), t.mv(x, y))),
    case("dot method and function", [(4,), (4,)], lambda x, y, t: (x.dot(y), t.dot(x, y))),
    case("outer method and function", [(3,), (4,)], lambda x, y, t: (x.outer(y), t.outer(x, y))),
    case("torch.matmul", [(3, 4), (4, 2)], lambda x, y, t: t.matmul(x, y)),
    case("matmul method", [(3, 4), (4, 2)], lambda x, y, t: x.matmul(y)),
    case("matmul self", [(3, 3)], lambda x, t: x @ x),
    case("matmul ints", [ints((2, 3), -3, 3), ints((3, 2), -3, 3)], lambda x, y, t: x @ y),
    case("matmul empty inner", [(3, 0), (0, 2)], lambda x, y, t: x @ y),
    case("mm", [(3, 4), (4, 2)], lambda x, y, t: t.mm(x, y), needs="mm"),
    case("bmm", [(2, 3, 4), (2, 4, 2)], lambda x, y, t: t.bmm(x, y), needs="bmm"),
    case("mv", [(3, 4), (4,)], lambda x, y, t: t.mv(x, y), needs="mv"),
    case("dot", [(4,), (4,)], lambda x, y, t: t.dot(x, y), needs="dot"),
    case("outer", [(3,), (4,)], lambda x, y, t: t.outer(x, y), needs="outer"),
    case("addmm", [(2,), (3, 4), (4, 2)], lambda b, x, y, t: t.addmm(b, x, y), needs="addmm"),
    case("tensordot", [(3, 4), (4, 2)], lambda x, y, t: t.tensordot(x, y, 1), needs="tensordot"),
    case("einsum matmul", [(3, 4), (4, 5)], lambda x, y, t: t.einsum("ij,jk->ik", x, y)),
    case("einsum batched", [(2, 3, 4), (2, 4, 5)], lambda x, y, t: t.einsum("bij,bjk->bik", x, y)),
    case("einsum transpose", [(3, 4)], lambda x, t: t.einsum("ij->ji", x)),
    case("einsum diagonal", [(3, 3)], lambda x, t: t.einsum("ii->i", x)),
    case("einsum trace", [(3, 3)], lambda x, t: t.einsum("ii", x)),
    case("einsum outer", [(3,), (4,)], lambda x, y, t: t.einsum("i,j->ij", x, y)),
    case("einsum sum all", [(3, 4)], lambda x, t: t.einsum("ij->", x)),
    case("einsum row dot", [(3, 4), (3, 4)], lambda x, y, t: t.einsum("ij,ij->i", x, y)),
    case("einsum implicit", [(3, 4), (4, 5)], lambda x, y, t: t.einsum("ij,jk", x, y)),
    case("einsum ellipsis", [(2, 3, 4), (4, 5)], lambda x, y, t: t.einsum("...ij,jk->...ik", x, y)),
    case("einsum attention", [(2, 3, 4), (2, 5, 4)],
         lambda q, k, t: t.einsum("bqd,bkd->bqk", q, k)),
    case("einsum three operands", [(2, 3), (3, 4), (4,)],
         lambda x, y, z, t: t.einsum("ij,jk,k->i", x, y, z)),
    case("einsum spaces", [(3, 4), (4,)], lambda x, y, t: t.einsum("ij, j -> i", x, y)),
    case("einsum operand list", [(3, 4), (4,)], lambda x, y, t: t.einsum("ij,j->i", [x, y])),
    case("linear", [(5, 4), (3, 4), (3,)], lambda x, w, b, t: F(t).linear(x, w, b)),
    case("linear no bias", [(5, 4), (3, 4)], lambda x, w, t: F(t).linear(x, w)),
    case("linear 3-d", [(2, 5, 4), (3, 4), (3,)], lambda x, w, b, t: F(t).linear(x, w, b)),
    case("linear vector", [(4,), (3, 4), (3,)], lambda x, w, b, t: F(t).linear(x, w, b)),
]

CREATION = [
    case("zeros", [], lambda t: t.zeros(2, 3)),
    case("zeros tuple", [], lambda t: t.zeros((2, 3))),
    case("zeros float64", [], lambda t: t.zeros(3, dtype=t.float64)),
    case("zeros int64", [], lambda t: t.zeros(2, dtype=t.int64)),
    case("zeros 0-d", [], lambda t: t.zeros(())),
    case("ones", [], lambda t: t.ones(3)),
    case("ones bool", [], lambda t: t.ones(2, 2, dtype=t.bool)),
    case("full", [], lambda t: t.full((2, 3), 1.5)),
    case("full int", [], lambda t: t.full((2,), 7)),
    case("full bool", [], lambda t: t.full((2,), True)),
    case("full float64", [], lambda t: t.full((2, 2), -inf, dtype=t.float64)),
    case("arange", [], lambda t: t.arange(5)),
    case("arange start stop step", [], lambda t: t.arange(1, 8, 2)),
    case("arange negative step", [], lambda t: t.arange(5, 0, -2)),
    case("arange float", [], lambda t: t.arange(0.0, 1.0, 0.25)),
    case("arange float64", [], lambda t: t.arange(3, dtype=t.float64)),
    case("tensor ints", [], lambda t: t.tensor([1, 2, 3])),
    case("tensor floats", [], lambda t: t.tensor([[1.0, 2.0], [3.0, 4.5]])),
    case("tensor bool", [], lambda t: t.tensor(True)),
    case("tensor scalar", [], lambda t: t.tensor(3.5)),
    case("tensor mixed", [], lambda t: t.tensor([1, 2.5])),
    case("tensor dtype", [], lambda t: t.tensor([1, 2], dtype=t.float64)),
    case("zeros_like", [(2, 3)], lambda x, t: t.zeros_like(x)),
    case("ones_like", [ints((2, 3), 0, 3)], lambda x, t: t.ones_like(x)),
    case("full_like", [(2, 3)], lambda x, t: t.full_like(x, 7)),
    case("zeros_like dtype", [(2, 3)], lambda x, t: t.zeros_like(x, dtype=t.int64)),
    case("new_zeros", [(2, 3)], lambda x, t: x.new_zeros(3, 2)),
    case("new_ones", [ints((2,), 0, 3)], lambda x, t: x.new_ones(2)),
    case("new_full", [(2, 3)], lambda x, t: x.new_full((2,), 3.0)),
    case("new_tensor", [(2, 3)], lambda x, t: x.new_tensor([1.0, 2.0]), needs="Tensor.new_tensor"),
    case("linspace", [], lambda t: t.linspace(0, 1, 5)),
    case("logspace", [], lambda t: t.logspace(0, 2, 3)),
    case("eye", [], lambda t: t.eye(3)),
    case("eye rectangular", [], lambda t: t.eye(2, 3)),
    case("tril_indices", [], lambda t: t.tril_indices(3, 3), needs="tril_indices"),
    case("meshgrid", [(3,), (2,)], lambda x, y, t: t.meshgrid(x, y, indexing="ij"),
         needs="meshgrid"),
]

ACTIVATION = [
    case("F.relu", [(3, 4)], lambda x, t: F(t).relu(x)),
    case("F.gelu", [(3, 4)], lambda x, t: F(t).gelu(x)),
    case("F.gelu tanh", [(3, 4)], lambda x, t: F(t).gelu(x, approximate="tanh")),
    case("F.gelu large", [fixed([-40.0, -8.0, 0.0, 8.0, 40.0])], lambda x, t: F(t).gelu(x)),
    case("F.silu", [(3, 4)], lambda x, t: F(t).silu(x)),
    case("F.sigmoid", [(3, 4)], lambda x, t: F(t).sigmoid(x)),
    case("F.tanh", [(3, 4)], lambda x, t: F(t).tanh(x)),
    case("F.softmax", [(3, 4)], lambda x, t: F(t).softmax(x, dim=-1)),
    case("F.softmax dim 0", [(3, 4)], lambda x, t: F(t).softmax(x, dim=0)),
    case("F.softmax 3-d", [(2, 3, 4)], lambda x, t: F(t).softmax(x, dim=1)),
    case("F.softmax large", [(3, 4)], lambda x, t: F(t).softmax(x * 1000, dim=1)),
    case("F.log_softmax", [(3, 4)], lambda x, t: F(t).log_softmax(x, dim=1)),
    case("F.log_softmax dim 0", [(3, 4)], lambda x, t: F(t).log_softmax(x * 100, dim=0)),
    case("softmax method", [(3, 4)], lambda x, t: x.softmax(-1)),
    case("log_softmax method", [(3, 4)], lambda x, t: x.log_softmax(dim=0)),
    case("torch.softmax", [(3, 4)], lambda x, t: t.softmax(x, 1)),
    case("torch.log_softmax", [(3, 4)], lambda x, t: t.log_softmax(x, -1)),
    case("softmax with -inf", [fixed([[0.0, -inf, 1.0], [-inf, 2.0, -inf]])],
         lambda x, t: (x.softmax(-1), x.log_softmax(-1))),
    case("softmax all -inf", [fixed([[-inf, -inf], [0.0, 1.0]])], lambda x, t: x.softmax(-1),
         grad=False),
    case("softmax 0-d", [()], lambda x, t: x.softmax(0)),
    case("F.dropout p=0", [(3, 4)], lambda x, t: F(t).dropout(x, p=0.0)),
    case("F.dropout eval", [(3, 4)], lambda x, t: F(t).dropout(x, 0.5, training=False)),
    case("F.softplus", [(3, 4)], lambda x, t: F(t).softplus(x), needs="nn.functional.softplus"),
    case("F.softplus beta threshold", [(3, 4)],
         lambda x, t: F(t).softplus(x * 5, beta=2.0, threshold=3.0),
         needs="nn.functional.softplus"),
    case("F.elu", [(3, 4)], lambda x, t: F(t).elu(x), domain="away", needs="nn.functional.elu"),
    case("F.elu alpha", [(3, 4)], lambda x, t: F(t).elu(x, alpha=0.5), domain="away",
         needs="nn.functional.elu"),
    case("F.leaky_relu", [(3, 4)], lambda x, t: F(t).leaky_relu(x), domain="away",
         needs="nn.functional.leaky_relu"),
    case("F.leaky_relu slope", [(3, 4)], lambda x, t: F(t).leaky_relu(x, 0.2), domain="away",
         needs="nn.functional.leaky_relu"),
    case("F.prelu per channel", [(2, 3, 4, 4), (3,)], lambda x, w, t: F(t).prelu(x, w),
         domain="away"),
    case("torch.prelu one slope", [(5,), (1,)], lambda x, w, t: t.prelu(x, w), domain="away"),
    case("activations at zero", [fixed([-1.0, 0.0, 1.0])],
         lambda x, t: (F(t).relu(x), F(t).leaky_relu(x, 0.1), F(t).elu(x), F(t).gelu(x),
                       F(t).silu(x), F(t).softplus(x)),
         needs=("nn.functional.leaky_relu", "nn.functional.elu", "nn.functional.softplus")),
    case("F.normalize", [(3, 4)], lambda x, t: F(t).normalize(x), needs="nn.functional.normalize"),
    case("F.normalize p=1 dim 0", [(3, 4)], lambda x, t: F(t).normalize(x, p=1.0, dim=0),
         domain="away", needs="nn.functional.normalize"),
    case("F.normalize zero row", [fixed([[0.0, 0.0], [3.0, 4.0]])],
         lambda x, t: F(t).normalize(x, dim=-1), needs="nn.functional.normalize"),
    case("F.logsigmoid", [(3, 4)], lambda x, t: F(t).logsigmoid(x),
         needs="nn.functional.logsigmoid"),
    case("F.hardtanh", [(3, 4)], lambda x, t: F(t).hardtanh(x), domain="away",
         needs="nn.functional.hardtanh"),
    case("F.relu6", [(3, 4)], lambda x, t: F(t).relu6(x * 4), domain="away",
         needs="nn.functional.relu6"),
    case("F.mish", [(3, 4)], lambda x, t: F(t).mish(x), needs="nn.functional.mish"),
    case("F.selu", [(3, 4)], lambda x, t: F(t).selu(x), domain="away", needs="nn.functional.selu"),
    case("F.hardswish", [(3, 4)], lambda x, t: F(t).hardswish(x), domain="away",
         needs="nn.functional.hardswish"),
    case("F.glu", [(3, 4)], lambda x, t: F(t).glu(x), needs="nn.functional.glu"),
    case("F.softsign", [(3, 4)], lambda x, t: F(t).softsign(x), needs="nn.functional.softsign"),
    case("F.cosine_similarity", [(3, 4), (3, 4)], lambda x, y, t: F(t).cosine_similarity(x, y),
         needs="nn.functional.cosine_similarity"),
]


def batch_norm_with_buffers(x, t, training=True):
    """batch_norm with running buffers: the output and the buffers afterwards."""
    mean, var = t.zeros(3, dtype=t.float64) + 0.5, t.ones(3, dtype=t.float64) * 2
    y = F(t).batch_norm(x, mean, var, training=training, momentum=0.3)
    return y, mean, var


NORMALIZATION = [
    case("F.layer_norm", [(3, 4)], lambda x, t: F(t).layer_norm(x, (4,))),
    case("F.layer_norm affine", [(3, 4), (4,), (4,)],
         lambda x, w, b, t: F(t).layer_norm(x, (4,), w, b)),
    case("F.layer_norm two dims", [(2, 3, 4), (3, 4), (3, 4)],
         lambda x, w, b, t: F(t).layer_norm(x, (3, 4), w, b, eps=1e-3)),
    case("F.layer_norm list shape", [(3, 4), (4,)], lambda x, w, t: F(t).layer_norm(x, [4], w)),
    case("F.rms_norm", [(3, 4)], lambda x, t: F(t).rms_norm(x, (4,))),
    case("F.rms_norm weight", [(2, 3, 4), (4,)], lambda x, w, t: F(t).rms_norm(x, [4], w)),
    case("F.rms_norm eps two dims", [(2, 3, 4), (3, 4)],
         lambda x, w, t: F(t).rms_norm(x, (3, 4), w, eps=1e-3)),
    case("F.group_norm", [(2, 4, 3)], lambda x, t: F(t).group_norm(x, 2)),
    case("F.group_norm affine", [(2, 4, 3, 2), (4,), (4,)],
         lambda x, w, b, t: F(t).group_norm(x, 2, w, b)),
    case("F.group_norm one group", [(2, 4, 3), (4,), (4,)],
         lambda x, w, b, t: F(t).group_norm(x, 1, w, b, eps=1e-3)),
    case("F.group_norm per channel", [(2, 4, 3)], lambda x, t: F(t).group_norm(x, 4)),
    case("F.batch_norm training", [(5, 3)],
         lambda x, t: F(t).batch_norm(x, None, None, training=True)),
    case("F.batch_norm training affine", [(5, 3), (3,), (3,)],
         lambda x, w, b, t: F(t).batch_norm(x, None, None, w, b, training=True)),
    case("F.batch_norm training 4-d", [(2, 3, 2, 2), (3,), (3,)],
         lambda x, w, b, t: F(t).batch_norm(x, None, None, w, b, True, eps=1e-3)),
    case("F.batch_norm running buffers", [(4, 3, 2)], batch_norm_with_buffers),
    case("F.batch_norm eval", [(4, 3, 2)],
         lambda x, t: batch_norm_with_buffers(x, t, training=False)),
    case("F.instance_norm", [(2, 3, 5)], lambda x, t: F(t).instance_norm(x)),
    case("F.instance_norm affine", [(2, 3, 2, 2), (3,), (3,)],
         lambda x, w, b, t: F(t).instance_norm(x, weight=w, bias=b)),
]

LOSS = [
    case("F.cross_entropy", [(5, 4), ints((5,), 0, 4)], lambda x, y, t: F(t).cross_entropy(x, y)),
    case("F.cross_entropy sum", [(5, 4), ints((5,), 0, 4)],
         lambda x, y, t: F(t).cross_entropy(x, y, reduction="sum")),
    case("F.l1_loss reductions and parameters", [(5, 4), (5, 4)],
         lambda x, y, t: (F(t).l1_loss(x, y), F(t).l1_loss(x, y, reduction="none"))),
    case("F.smooth_l1_loss reductions and parameters", [(5, 4), (5, 4)],
         lambda x, y, t: (F(t).smooth_l1_loss(x, y), F(t).smooth_l1_loss(x, y, beta=0.3),
                          F(t).smooth_l1_loss(x, y, reduction="sum", beta=0.0))),
    case("F.huber_loss reductions and parameters", [(5, 4), (5, 4)],
         lambda x, y, t: (F(t).huber_loss(x, y), F(t).huber_loss(x, y, delta=0.4))),
    case("L1Loss, SmoothL1Loss, HuberLoss", [(5, 4), (5, 4)],
         lambda x, y, t: (t.nn.L1Loss(reduction="sum")(x, y), t.nn.SmoothL1Loss(beta=2.0)(x, y),
                          t.nn.HuberLoss(delta=0.5)(x, y))),
    case("F.cross_entropy none", [(5, 4), ints((5,), 0, 4)],
         lambda x, y, t: F(t).cross_entropy(x, y, reduction="none")),
    case("F.cross_entropy ignore_index", [(5, 4), fixed(TARGETS)],
         lambda x, y, t: F(t).cross_entropy(x, y)),
    case("F.cross_entropy ignore_index none", [(5, 4), fixed(TARGETS)],
         lambda x, y, t: F(t).cross_entropy(x, y, reduction="none")),
    case("F.cross_entropy custom ignore_index", [(5, 4), fixed([1, 2, 3, 2, 0])],
         lambda x, y, t: F(t).cross_entropy(x, y, ignore_index=2)),
    case("F.cross_entropy weight", [(5, 4), ints((5,), 0, 4), const((4,), "positive")],
         lambda x, y, w, t: F(t).cross_entropy(x, y, weight=w)),
    case("F.cross_entropy weight ignore", [(5, 4), fixed(TARGETS), const((4,), "positive")],
         lambda x, y, w, t: F(t).cross_entropy(x, y, weight=w)),
    case("F.cross_entropy 3-d", [(2, 4, 3), ints((2, 3), 0, 4)],
         lambda x, y, t: F(t).cross_entropy(x, y)),
    case("F.cross_entropy 3-d none", [(2, 4, 3), ints((2, 3), 0, 4)],
         lambda x, y, t: F(t).cross_entropy(x, y, reduction="none")),
    case("F.cross_entropy unbatched", [(4,), fixed(2)], lambda x, y, t: F(t).cross_entropy(x, y)),
    case("F.cross_entropy label_smoothing", [(5, 4), ints((5,), 0, 4)],
         lambda x, y, t: F(t).cross_entropy(x, y, label_smoothing=0.1)),
    case("F.cross_entropy label_smoothing ignore", [(5, 4), fixed(TARGETS)],
         lambda x, y, t: F(t).cross_entropy(x, y, label_smoothing=0.2)),
    case("F.cross_entropy label_smoothing weight",
         [(5, 4), ints((5,), 0, 4), const((4,), "positive")],
         lambda x, y, w, t: F(t).cross_entropy(x, y, weight=w, label_smoothing=0.3)),
    case("F.cross_entropy probabilities", [(5, 4), const((5, 4))],
         lambda x, y, t: F(t).cross_entropy(x, y.softmax(1))),
    case("F.cross_entropy probabilities grad", [(5, 4), (5, 4)],
         lambda x, y, t: F(t).cross_entropy(x, y.softmax(1), reduction="sum")),
    case("F.cross_entropy probabilities smoothing", [(5, 4), const((5, 4))],
         lambda x, y, t: F(t).cross_entropy(x, y.softmax(1), label_smoothing=0.1)),
    case("F.cross_entropy probabilities weight", [(5, 4), const((5, 4)), const((4,), "positive")],
         lambda x, y, w, t: F(t).cross_entropy(x, y.softmax(1), weight=w, reduction="none")),
    case("F.cross_entropy probabilities 3-d", [(2, 4, 3), const((2, 4, 3))],
         lambda x, y, t: F(t).cross_entropy(x, y.softmax(1))),
    case("F.nll_loss", [(5, 4), ints((5,), 0, 4)],
         lambda x, y, t: F(t).nll_loss(x.log_softmax(1), y)),
    case("F.nll_loss sum", [(5, 4), ints((5,), 0, 4)],
         lambda x, y, t: F(t).nll_loss(x, y, reduction="sum")),
    case("F.nll_loss none", [(5, 4), ints((5,), 0, 4)],
         lambda x, y, t: F(t).nll_loss(x, y, reduction="none")),
    case("F.nll_loss ignore_index", [(5, 4), fixed(TARGETS)],
         lambda x, y, t: F(t).nll_loss(x, y)),
    case("F.nll_loss weight", [(5, 4), ints((5,), 0, 4), const((4,), "positive")],
         lambda x, y, w, t: F(t).nll_loss(x, y, weight=w)),
    case("F.nll_loss 3-d", [(2, 4, 3), ints((2, 3), 0, 4)],
         lambda x, y, t: F(t).nll_loss(x, y)),
    case("F.mse_loss", [(3, 4), (3, 4)], lambda x, y, t: F(t).mse_loss(x, y)),
    case("F.mse_loss sum", [(3, 4), const((3, 4))],
         lambda x, y, t: F(t).mse_loss(x, y, reduction="sum")),
    case("F.mse_loss none", [(3, 4), (3, 4)],
         lambda x, y, t: F(t).mse_loss(x, y, reduction="none")),
    case("F.binary_cross_entropy", [(3, 4), const((3, 4), "prob")],
         lambda x, y, t: F(t).binary_cross_entropy(x.sigmoid(), y),
         needs="nn.functional.binary_cross_entropy"),
    case("F.binary_cross_entropy weight sum",
         [(3, 4), const((3, 4), "prob"), const((4,), "positive")],
         lambda x, y, w, t: F(t).binary_cross_entropy(x.sigmoid(), y, w, reduction="sum"),
         needs="nn.functional.binary_cross_entropy"),
    case("F.binary_cross_entropy at 0 and 1", [fixed([0.0, 1.0, 0.5]), const((3,), "prob")],
         lambda x, y, t: F(t).binary_cross_entropy(x, y, reduction="none"),
         needs="nn.functional.binary_cross_entropy"),
    case("F.binary_cross_entropy target grad", [arg((3, 4), "prob"), arg((3, 4), "prob")],
         lambda x, y, t: F(t).binary_cross_entropy(x, y),
         needs="nn.functional.binary_cross_entropy"),
    case("F.binary_cross_entropy_with_logits", [(3, 4), const((3, 4), "prob")],
         lambda x, y, t: F(t).binary_cross_entropy_with_logits(x * 10, y),
         needs="nn.functional.binary_cross_entropy_with_logits"),
    case("F.binary_cross_entropy_with_logits pos_weight", [(3, 4), const((3, 4), "prob"),
                                                          const((4,), "positive")],
         lambda x, y, p, t: F(t).binary_cross_entropy_with_logits(x, y, pos_weight=p),
         needs="nn.functional.binary_cross_entropy_with_logits"),
    case("F.binary_cross_entropy_with_logits weight none", [(3, 4), (3, 4), const((3, 1))],
         lambda x, y, w, t: F(t).binary_cross_entropy_with_logits(x, y.sigmoid(), weight=w,
                                                                  reduction="none"),
         needs="nn.functional.binary_cross_entropy_with_logits"),
    case("F.l1_loss", [(3, 4), (3, 4)], lambda x, y, t: F(t).l1_loss(x, y),
         needs="nn.functional.l1_loss"),
    case("F.smooth_l1_loss", [(3, 4), (3, 4)], lambda x, y, t: F(t).smooth_l1_loss(x, y),
         needs="nn.functional.smooth_l1_loss"),
    case("F.huber_loss", [(3, 4), (3, 4)], lambda x, y, t: F(t).huber_loss(x, y, delta=0.5),
         needs="nn.functional.huber_loss"),
    case("F.kl_div", [(3, 4), const((3, 4))],
         lambda x, y, t: F(t).kl_div(x.log_softmax(1), y.softmax(1), reduction="batchmean"),
         needs="nn.functional.kl_div"),
]

PAD = [
    case("F.pad constant", [(2, 3)], lambda x, t: F(t).pad(x, (1, 2))),
    case("F.pad constant two dims", [(2, 3)], lambda x, t: F(t).pad(x, (1, 1, 2, 0), value=0.5)),
    case("F.pad constant all dims", [(2, 3, 2)], lambda x, t: F(t).pad(x, (1, 0, 0, 1, 1, 1))),
    case("F.pad crop", [(2, 5)], lambda x, t: F(t).pad(x, (-1, 2))),
    case("F.pad constant mode", [(2, 3)], lambda x, t: F(t).pad(x, (2, 2), "constant", -1.0)),
    case("F.pad reflect", [(2, 3, 5)], lambda x, t: F(t).pad(x, (2, 1), mode="reflect")),
    case("F.pad reflect 2-d", [(1, 2, 4, 4)], lambda x, t: F(t).pad(x, (1, 2, 3, 1), "reflect")),
    case("F.pad reflect unbatched", [(3, 5)], lambda x, t: F(t).pad(x, (3, 4), mode="reflect")),
    case("F.pad replicate", [(2, 3, 4)], lambda x, t: F(t).pad(x, (3, 1), mode="replicate")),
    case("F.pad replicate 2-d", [(1, 2, 3, 3)],
         lambda x, t: F(t).pad(x, (1, 2, 2, 1), "replicate")),
    case("F.pad replicate 3-d", [(1, 1, 2, 3, 2)],
         lambda x, t: F(t).pad(x, (1, 1, 1, 0, 0, 2), mode="replicate")),
    case("F.pad circular", [(2, 3, 4)], lambda x, t: F(t).pad(x, (2, 3), mode="circular")),
    case("F.pad circular 2-d", [(1, 2, 3, 4)], lambda x, t: F(t).pad(x, (1, 1, 3, 2), "circular")),
    case("F.pad reflect 3-d", [(1, 1, 3, 3, 3)],
         lambda x, t: F(t).pad(x, (1, 1, 2, 0, 1, 2), mode="reflect")),
]

CONV = [
    case("F.conv1d", [(2, 3, 7), (4, 3, 3)], lambda x, w, t: F(t).conv1d(x, w)),
    case("F.conv1d bias stride padding", [(2, 3, 7), (4, 3, 3), (4,)],
         lambda x, w, b, t: F(t).conv1d(x, w, b, stride=2, padding=1)),
    case("F.conv1d dilation", [(1, 2, 9), (3, 2, 3)],
         lambda x, w, t: F(t).conv1d(x, w, dilation=2)),
    case("F.conv1d groups", [(2, 4, 6), (6, 2, 2), (6,)],
         lambda x, w, b, t: F(t).conv1d(x, w, b, groups=2)),
    case("F.conv1d same", [(2, 3, 6), (2, 3, 4)],
         lambda x, w, t: F(t).conv1d(x, w, padding="same")),
    case("F.conv1d unbatched", [(3, 7), (4, 3, 3)], lambda x, w, t: F(t).conv1d(x, w)),
    case("F.conv2d", [(2, 3, 5, 5), (4, 3, 3, 3)], lambda x, w, t: F(t).conv2d(x, w)),
    case("F.conv2d bias stride padding", [(2, 3, 6, 5), (4, 3, 3, 2), (4,)],
         lambda x, w, b, t: F(t).conv2d(x, w, b, stride=(2, 1), padding=(1, 2))),
    case("F.conv2d dilation", [(1, 2, 7, 7), (2, 2, 3, 3)],
         lambda x, w, t: F(t).conv2d(x, w, dilation=(2, 1))),
    case("F.conv2d groups", [(1, 4, 5, 5), (4, 1, 3, 3), (4,)],
         lambda x, w, b, t: F(t).conv2d(x, w, b, padding=1, groups=4)),
    case("F.conv2d same", [(1, 2, 5, 5), (3, 2, 2, 3)],
         lambda x, w, t: F(t).conv2d(x, w, padding="same", dilation=2)),
    case("F.conv2d valid", [(1, 2, 5, 5), (3, 2, 2, 3)],
         lambda x, w, t: F(t).conv2d(x, w, padding="valid")),
    case("F.conv2d 1x1", [(2, 3, 4, 4), (5, 3, 1, 1)], lambda x, w, t: F(t).conv2d(x, w)),
    case("F.conv3d", [(1, 2, 4, 4, 4), (3, 2, 2, 2, 2), (3,)],
         lambda x, w, b, t: F(t).conv3d(x, w, b)),
    case("F.conv3d stride padding", [(1, 2, 5, 4, 4), (2, 2, 3, 2, 2)],
         lambda x, w, t: F(t).conv3d(x, w, stride=2, padding=1)),
    case("F.conv_transpose1d", [(2, 3, 5), (3, 4, 3)], lambda x, w, t: F(t).conv_transpose1d(x, w)),
    case("F.conv_transpose1d stride output_padding", [(2, 3, 5), (3, 2, 3), (2,)],
         lambda x, w, b, t: F(t).conv_transpose1d(x, w, b, stride=2, padding=1, output_padding=1)),
    case("F.conv_transpose1d groups dilation", [(1, 4, 5), (4, 1, 2)],
         lambda x, w, t: F(t).conv_transpose1d(x, w, groups=2, dilation=2)),
    case("F.conv_transpose2d", [(2, 3, 4, 4), (3, 2, 3, 3), (2,)],
         lambda x, w, b, t: F(t).conv_transpose2d(x, w, b)),
    case("F.conv_transpose2d stride padding", [(1, 2, 3, 4), (2, 3, 3, 2)],
         lambda x, w, t: F(t).conv_transpose2d(x, w, stride=(2, 3), padding=(1, 0),
                                                output_padding=(1, 2))),
    case("F.conv_transpose2d dilation groups", [(1, 4, 3, 3), (4, 1, 2, 2)],
         lambda x, w, t: F(t).conv_transpose2d(x, w, dilation=2, groups=2)),
    case("F.conv_transpose3d", [(1, 2, 3, 3, 3), (2, 2, 2, 2, 2)],
         lambda x, w, t: F(t).conv_transpose3d(x, w, stride=2)),
]

POOL = [
    case("F.max_pool1d", [(2, 3, 8)], lambda x, t: F(t).max_pool1d(x, 2)),
    case("F.max_pool1d stride padding", [(2, 3, 7)],
         lambda x, t: F(t).max_pool1d(x, 3, stride=2, padding=1)),
    case("F.max_pool1d ceil_mode", [(1, 2, 7)], lambda x, t: F(t).max_pool1d(x, 2, ceil_mode=True)),
    case("F.max_pool1d dilation", [(1, 2, 9)], lambda x, t: F(t).max_pool1d(x, 3, 1, dilation=2)),
    case("F.max_pool1d overlapping", [(1, 2, 6)], lambda x, t: F(t).max_pool1d(x, 3, stride=1)),
    case("F.max_pool1d ties", [fixed([[[1.0, 1.0, 0.0, 2.0, 2.0, 2.0]]])],
         lambda x, t: F(t).max_pool1d(x, 2, stride=1)),
    case("F.max_pool2d", [(2, 3, 4, 4)], lambda x, t: F(t).max_pool2d(x, 2)),
    case("F.max_pool2d stride padding", [(1, 2, 5, 5)],
         lambda x, t: F(t).max_pool2d(x, 3, stride=2, padding=1)),
    case("F.max_pool2d rectangular", [(1, 2, 6, 5)],
         lambda x, t: F(t).max_pool2d(x, (3, 2), stride=(2, 1))),
    case("F.max_pool2d ceil_mode", [(1, 1, 5, 5)],
         lambda x, t: F(t).max_pool2d(x, 2, ceil_mode=True)),
    case("F.max_pool2d dilation", [(1, 1, 7, 7)],
         lambda x, t: F(t).max_pool2d(x, 2, stride=1, dilation=2)),
    case("F.max_pool2d unbatched", [(2, 4, 4)], lambda x, t: F(t).max_pool2d(x, 2)),
    case("F.max_pool2d return_indices", [(1, 1, 4, 4)],
         lambda x, t: F(t).max_pool2d(x, 2, return_indices=True),
         xfail="max_pool return_indices=True is not supported"),
    case("F.max_pool3d", [(1, 2, 4, 4, 4)], lambda x, t: F(t).max_pool3d(x, 2)),
    case("F.avg_pool1d", [(2, 3, 8)], lambda x, t: F(t).avg_pool1d(x, 2)),
    case("F.avg_pool1d padding", [(2, 3, 7)], lambda x, t: F(t).avg_pool1d(x, 3, 2, 1)),
    case("F.avg_pool1d exclude pad", [(2, 3, 7)],
         lambda x, t: F(t).avg_pool1d(x, 3, 2, 1, count_include_pad=False)),
    case("F.avg_pool1d ceil_mode", [(1, 2, 7)], lambda x, t: F(t).avg_pool1d(x, 2, ceil_mode=True)),
    case("F.avg_pool2d", [(2, 3, 4, 4)], lambda x, t: F(t).avg_pool2d(x, 2)),
    case("F.avg_pool2d stride padding", [(1, 2, 5, 5)],
         lambda x, t: F(t).avg_pool2d(x, 3, stride=2, padding=1)),
    case("F.avg_pool2d exclude pad", [(1, 2, 5, 5)],
         lambda x, t: F(t).avg_pool2d(x, 3, stride=2, padding=1, count_include_pad=False)),
    case("F.avg_pool2d ceil_mode", [(1, 1, 5, 5)],
         lambda x, t: F(t).avg_pool2d(x, 2, ceil_mode=True)),
    case("F.avg_pool2d ceil_mode padding", [(1, 1, 6, 6)],
         lambda x, t: F(t).avg_pool2d(x, 3, 2, 1, ceil_mode=True)),
    case("F.avg_pool2d divisor_override", [(1, 2, 4, 4)],
         lambda x, t: F(t).avg_pool2d(x, 2, divisor_override=3)),
    case("F.avg_pool3d", [(1, 2, 4, 4, 4)], lambda x, t: F(t).avg_pool3d(x, 2, stride=1)),
    case("F.adaptive_avg_pool1d", [(2, 3, 7)], lambda x, t: F(t).adaptive_avg_pool1d(x, 3)),
    case("F.adaptive_avg_pool2d", [(2, 3, 5, 7)], lambda x, t: F(t).adaptive_avg_pool2d(x, (2, 3))),
    case("F.adaptive_avg_pool2d int", [(1, 2, 6, 6)], lambda x, t: F(t).adaptive_avg_pool2d(x, 1)),
    case("F.adaptive_avg_pool2d None", [(1, 2, 5, 4)],
         lambda x, t: F(t).adaptive_avg_pool2d(x, (None, 3))),
    case("F.adaptive_avg_pool2d larger", [(1, 1, 3, 3)],
         lambda x, t: F(t).adaptive_avg_pool2d(x, (4, 5))),
    case("F.adaptive_avg_pool3d", [(1, 2, 4, 5, 3)],
         lambda x, t: F(t).adaptive_avg_pool3d(x, (2, 2, 1))),
    case("F.adaptive_max_pool1d", [(2, 3, 7)], lambda x, t: F(t).adaptive_max_pool1d(x, 3),
         needs="nn.functional.adaptive_max_pool1d"),
    case("F.adaptive_max_pool2d", [(2, 3, 5, 7)],
         lambda x, t: F(t).adaptive_max_pool2d(x, (2, 3)),
         needs="nn.functional.adaptive_max_pool2d"),
    case("F.lp_pool1d", [(2, 3, 8)], lambda x, t: F(t).lp_pool1d(x, 2, 2), domain="positive",
         needs="nn.functional.lp_pool1d"),
    case("F.interpolate nearest", [(1, 2, 3, 3)],
         lambda x, t: F(t).interpolate(x, scale_factor=2), needs="nn.functional.interpolate"),
    case("F.unfold", [(1, 2, 4, 4)], lambda x, t: F(t).unfold(x, 2), needs="nn.functional.unfold"),
    case("F.pixel_shuffle", [(1, 4, 2, 2)], lambda x, t: F(t).pixel_shuffle(x, 2),
         needs="nn.functional.pixel_shuffle"),
]

ATTENTION = [
    case("F.sdpa", [(2, 3, 4, 5), (2, 3, 6, 5), (2, 3, 6, 2)],
         lambda q, k, v, t: F(t).scaled_dot_product_attention(q, k, v)),
    case("F.sdpa is_causal", [(2, 3, 4, 5), (2, 3, 4, 5), (2, 3, 4, 5)],
         lambda q, k, v, t: F(t).scaled_dot_product_attention(q, k, v, is_causal=True)),
    case("F.sdpa is_causal rectangular", [(1, 4, 5), (1, 6, 5), (1, 6, 3)],
         lambda q, k, v, t: F(t).scaled_dot_product_attention(q, k, v, is_causal=True)),
    case("F.sdpa bool mask", [(2, 4, 5), (2, 6, 5), (2, 6, 3), fixed(MASK)],
         lambda q, k, v, m, t: F(t).scaled_dot_product_attention(q, k, v, attn_mask=m)),
    case("F.sdpa float mask", [(2, 4, 5), (2, 6, 5), (2, 6, 3), const((4, 6))],
         lambda q, k, v, m, t: F(t).scaled_dot_product_attention(q, k, v, m)),
    case("F.sdpa float mask grad", [(2, 4, 5), (2, 6, 5), (2, 6, 3), (2, 4, 6)],
         lambda q, k, v, m, t: F(t).scaled_dot_product_attention(q, k, v, m)),
    case("F.sdpa scale", [(2, 4, 5), (2, 6, 5), (2, 6, 3)],
         lambda q, k, v, t: F(t).scaled_dot_product_attention(q, k, v, scale=0.3)),
    case("F.sdpa broadcast batch", [(2, 3, 4, 5), (1, 3, 6, 5), (2, 1, 6, 4)],
         lambda q, k, v, t: F(t).scaled_dot_product_attention(q, k, v)),
    case("F.sdpa 2-d", [(4, 5), (6, 5), (6, 3)],
         lambda q, k, v, t: F(t).scaled_dot_product_attention(q, k, v)),
    case("F.sdpa dropout 0", [(2, 4, 5), (2, 6, 5), (2, 6, 3)],
         lambda q, k, v, t: F(t).scaled_dot_product_attention(q, k, v, dropout_p=0.0)),
    case("F.sdpa composite", [(2, 4, 5), (2, 4, 5), (2, 4, 3)],
         lambda q, k, v, t: ((q @ k.transpose(-2, -1)) / 5 ** 0.5).masked_fill(
             t.tensor(np.tri(4) == 0), -inf).softmax(-1) @ v),
]

EMBEDDING = [
    case("F.embedding", [ints((2, 4), 0, 6), (6, 3)], lambda i, w, t: F(t).embedding(i, w)),
    case("F.embedding repeated", [fixed(IDX), (3, 2)], lambda i, w, t: F(t).embedding(i, w)),
    case("F.embedding padding_idx", [fixed([0, 2, 0, 1]), (3, 2)],
         lambda i, w, t: F(t).embedding(i, w, padding_idx=0)),
    case("F.embedding 0-d index", [fixed(1), (3, 2)], lambda i, w, t: F(t).embedding(i, w)),
    case("F.one_hot", [ints((5,), 0, 4)], lambda y, t: F(t).one_hot(y, 4)),
    case("F.one_hot default classes", [fixed([0, 3, 1])], lambda y, t: F(t).one_hot(y)),
    case("F.one_hot 2-d", [ints((2, 3), 0, 3)], lambda y, t: F(t).one_hot(y, num_classes=5)),
    case("F.one_hot float", [ints((5,), 0, 4), (5, 4)],
         lambda y, x, t: (F(t).one_hot(y, 4).to(t.float64) * x).sum(1)),
]

COMPOSED = [
    case("mlp", [(5, 4), (3, 4), (3,), (2, 3)],
         lambda x, w1, b1, w2, t: F(t).log_softmax(F(t).gelu(F(t).linear(x, w1, b1)) @ w2.T, 1)),
    case("attention head", [(2, 4, 6), (6, 6)],
         lambda x, w, t: F(t).scaled_dot_product_attention(
             *(x @ w).split(2, dim=-1), is_causal=True)),
    case("layer norm by hand", [(3, 4)],
         lambda x, t: (x - x.mean(-1, keepdim=True)) / (x.var(-1, keepdim=True, correction=0)
                                                         + 1e-5).sqrt()),
    case("softmax by hand", [(3, 4)],
         lambda x, t: (x - x.max(1, keepdim=True).values).exp()
         / (x - x.max(1, keepdim=True).values).exp().sum(1, keepdim=True)),
    case("mean of gathered log-probs", [(5, 4), ints((5, 1), 0, 4)],
         lambda x, y, t: -x.log_softmax(1).gather(1, y).mean()),
    case("residual conv block", [(1, 2, 5, 5), (2, 2, 3, 3), (2,)],
         lambda x, w, b, t: x + F(t).relu(F(t).conv2d(x, w, b, padding=1))),
    case("pooled conv features", [(2, 1, 6, 6), (3, 1, 3, 3)],
         lambda x, w, t: F(t).max_pool2d(F(t).conv2d(x, w), 2).flatten(1)),
    case("indexing then reduction", [(4, 5)],
         lambda x, t: x[1:, [0, 2, 4]].sum(0) * x[0, :3]),
    case("where of two branches", [(3, 4)], lambda x, t: t.where(x > 0, x.exp(), x.sin())),
]

VIEWS = [   # transposed, strided, flipped and expanded views as the inputs of ops
    case("layer_norm of a transpose", [(4, 3)], lambda x, t: F(t).layer_norm(x.t(), (4,))),
    case("layer_norm of a transpose affine", [(4, 3), (4,), (4,)],
         lambda x, w, b, t: F(t).layer_norm(x.t(), (4,), w, b)),
    case("rms_norm of a strided slice", [(3, 8), (4,)],
         lambda x, w, t: F(t).rms_norm(x[:, ::2], (4,), w)),
    case("group_norm of a permute", [(2, 3, 4), (4,), (4,)],
         lambda x, w, b, t: F(t).group_norm(x.permute(0, 2, 1), 2, w, b)),
    case("batch_norm of a transpose", [(3, 5), (3,), (3,)],
         lambda x, w, b, t: F(t).batch_norm(x.t(), None, None, w, b, training=True)),
    case("layer_norm of an expand", [(1, 4)], lambda x, t: F(t).layer_norm(x.expand(3, 4), (4,))),
    case("softmax of a transpose", [(3, 4)], lambda x, t: x.t().softmax(-1)),
    case("log_softmax of a strided slice", [(3, 8)], lambda x, t: x[:, ::2].log_softmax(0)),
    case("logsumexp of a flip", [(3, 4)], lambda x, t: x.flip(1).logsumexp(1)),
    case("cross_entropy of a transpose", [(4, 5), ints((5,), 0, 4)],
         lambda x, y, t: F(t).cross_entropy(x.t(), y)),
    case("cross_entropy of a slice", [(5, 6), fixed(TARGETS)],
         lambda x, y, t: F(t).cross_entropy(x[:, 1:5], y, label_smoothing=0.1)),
    case("conv2d of a permute", [(1, 5, 5, 2), (3, 2, 3, 3)],
         lambda x, w, t: F(t).conv2d(x.permute(0, 3, 1, 2), w, padding=1)),
    case("conv1d of a flipped weight", [(2, 3, 7), (4, 3, 3)],
         lambda x, w, t: F(t).conv1d(x, w.flip(-1))),
    case("conv1d of a strided input", [(2, 3, 14), (4, 3, 3)],
         lambda x, w, t: F(t).conv1d(x[..., ::2], w, stride=2)),
    case("conv_transpose2d of a transpose", [(1, 2, 3, 4), (2, 3, 2, 2)],
         lambda x, w, t: F(t).conv_transpose2d(x.transpose(2, 3), w, stride=2)),
    case("max_pool2d of a transpose", [(1, 2, 4, 6)],
         lambda x, t: F(t).max_pool2d(x.transpose(2, 3), 2)),
    case("avg_pool1d of a strided slice", [(2, 3, 12)],
         lambda x, t: F(t).avg_pool1d(x[..., ::2], 2)),
    case("adaptive_avg_pool2d of a flip", [(1, 2, 5, 4)],
         lambda x, t: F(t).adaptive_avg_pool2d(x.flip(2), (2, 3))),
    case("sdpa of transposed keys", [(2, 4, 5), (2, 5, 6), (2, 6, 3)],
         lambda q, k, v, t: F(t).scaled_dot_product_attention(q, k.transpose(-2, -1), v)),
    case("sdpa of split heads", [(2, 4, 6), (2, 4, 6), (2, 4, 6)],
         lambda q, k, v, t: F(t).scaled_dot_product_attention(
             *(z.view(2, 4, 2, 3).transpose(1, 2) for z in (q, k, v)), is_causal=True)),
    case("matmul of transposes", [(4, 3), (2, 4)], lambda x, y, t: x.t() @ y.t()),
    case("matmul of a broadcast view", [(1, 3, 4), (2, 4, 5)],
         lambda x, y, t: x.expand(2, 3, 4) @ y),
    case("einsum of a transpose", [(4, 3), (4, 5)],
         lambda x, y, t: t.einsum("ij,jk->ik", x.t(), y)),
    case("linear of a transposed weight", [(5, 4), (4, 3)], lambda x, w, t: F(t).linear(x, w.t())),
    case("cumsum of a transpose", [(3, 4)], lambda x, t: x.t().cumsum(1)),
    case("cumprod of a flip", [(3, 4)], lambda x, t: x.flip(1).cumprod(1)),
    case("cummax of a transpose", [(3, 4)], lambda x, t: x.t().cummax(1)),
    case("logcumsumexp of a slice", [(3, 5)], lambda x, t: x[:, 1:].logcumsumexp(1)),
    case("gather of a transpose", [(4, 3), fixed([[0, 3], [1, 1], [2, 0]])],
         lambda x, i, t: x.t().gather(1, i)),
    case("index of a transpose", [(4, 3)], lambda x, t: x.t()[[0, 2]]),
    case("bool mask of a transpose", [(4, 3)], lambda x, t: x.t()[x.t() > 0]),
    case("topk of a transpose", [(4, 3)], lambda x, t: x.t().topk(2)),
    case("argsort of a strided slice", [(3, 8)], lambda x, t: x[:, ::2].argsort(1)),
    case("embedding of a transposed weight", [ints((2, 4), 0, 6), (3, 6)],
         lambda i, w, t: F(t).embedding(i, w.t())),
    case("pad of a transpose", [(2, 5, 3)],
         lambda x, t: F(t).pad(x.transpose(1, 2), (1, 2), "reflect")),
    case("var of a transpose", [(3, 4)], lambda x, t: x.t().var(1)),
    case("norm of a strided slice", [(4, 3)], lambda x, t: x[::2].norm(dim=1)),
    case("prod of a transpose", [fixed([[1.5, 0.0], [2.0, 3.0], [-1.0, 0.5]])],
         lambda x, t: x.t().prod(1)),
    case("diagonal then cumsum", [(3, 3)], lambda x, t: x.diagonal().cumsum(0)),
    case("unfold then max", [(2, 6)], lambda x, t: x.unfold(1, 3, 1).max(-1).values),
    case("where of views", [(4, 3), (3, 4)], lambda x, y, t: t.where(x.t() > 0, x.t(), y)),
    case("repeat_interleave of a transpose", [(3, 2)], lambda x, t: x.t().repeat_interleave(2, 1)),
    case("masked_select of a transpose", [(3, 2)], lambda x, t: x.t().masked_select(x.t() > 0)),
    case("one input many uses", [(3, 3)],
         lambda x, t: x + x.t() + x[0] + x.sum(1, keepdim=True) * x.diagonal()),
]

EMPTY_AND_SMALL = [
    case("sum over an empty dim", [(0, 3)], lambda x, t: (x.sum(1), x.sum(0, keepdim=True))),
    case("mean of empty", [(0,)], lambda x, t: x.mean()),
    case("prod of empty", [(0, 2)], lambda x, t: (x.prod(), x.prod(0))),
    case("cumsum of empty", [(0, 3)], lambda x, t: x.cumsum(0)),
    case("softmax over a size-1 dim", [(3, 1)], lambda x, t: (x.softmax(1), x.log_softmax(1))),
    case("layer_norm of one feature", [(3, 1)], lambda x, t: F(t).layer_norm(x, (1,))),
    case("var of one value correction 0", [(3, 1)], lambda x, t: x.var(1, correction=0)),
    case("topk k=0", [(3, 4)], lambda x, t: x.topk(0)),
    case("empty tensor index", [(3, 4), fixed(np.zeros(0, np.int64))], lambda x, i, t: x[i]),
    case("empty list index", [(3, 4)], lambda x, t: x[[]]),
    case("index_select empty", [(3, 4), fixed(np.zeros(0, np.int64))],
         lambda x, i, t: x.index_select(1, i)),
    case("gather empty", [(3, 4), fixed(np.zeros((3, 0), np.int64))],
         lambda x, i, t: x.gather(1, i)),
    case("matmul with an empty batch", [(0, 3, 4), (4, 2)], lambda x, y, t: x @ y),
    case("0-d ops", [()],
         lambda x, t: (x.exp(), x.sum(0), x.max(), x.argmax(), x.norm(), x.cumsum(0),
                       x.flip(0), x.unsqueeze(0), x.reshape(1, 1), x.expand(3), x.squeeze())),
    case("0-d max over dim 0", [()], lambda x, t: x.max(0)),
    case("0-d softmax and logsumexp", [()], lambda x, t: (x.log_softmax(0), x.logsumexp(0))),
    case("size-1 broadcast", [(1, 1), (3, 1, 4)], lambda x, y, t: x * y),
    case("unbind size-1", [(1, 3)], lambda x, t: x.unbind(0)),
    case("split larger than the dim", [(3, 2)], lambda x, t: x.split(10)),
    case("diagonal past the edge", [(3, 4)], lambda x, t: x.diagonal(5)),
    case("repeat 0 times", [(2, 3)], lambda x, t: x.repeat(0, 1)),
    case("expand to 0", [(1, 4)], lambda x, t: x.expand(0, 4)),
    case("arange empty", [], lambda t: t.arange(0)),
    case("zeros with a 0 dim", [], lambda t: t.zeros(0, 3)),
    case("conv1d kernel the input's size", [(1, 2, 3), (1, 2, 3)],
         lambda x, w, t: F(t).conv1d(x, w)),
    case("max_pool1d kernel the input's size", [(1, 2, 5)], lambda x, t: F(t).max_pool1d(x, 5)),
    case("one_hot of empty", [fixed(np.zeros(0, np.int64))], lambda y, t: F(t).one_hot(y, 3)),
    case("embedding of empty", [fixed(np.zeros((2, 0), np.int64)), (3, 2)],
         lambda i, w, t: F(t).embedding(i, w)),
    case("cross_entropy all ignored", [(2, 3), fixed([-100, -100])],
         lambda x, y, t: F(t).cross_entropy(x, y)),
    case("cross_entropy all ignored none", [(2, 3), fixed([-100, -100])],
         lambda x, y, t: F(t).cross_entropy(x, y, reduction="none")),
    case("sdpa one key", [(2, 4, 5), (2, 1, 5), (2, 1, 3)],
         lambda q, k, v, t: F(t).scaled_dot_product_attention(q, k, v)),
    case("nonzero of zeros", [fixed(np.zeros((2, 3)))], lambda x, t: x.nonzero()),
    case("masked_select none", [(3, 4)], lambda x, t: x.masked_select(x > 100)),
    case("cat of one", [(2, 3)], lambda x, t: t.cat([x])),
    case("stack of one", [(2, 3)], lambda x, t: t.stack([x], 1)),
]

MORE_DTYPES = [
    case("sqrt of ints", [ints((4,), 0, 9)], lambda x, t: x.sqrt()),
    case("log and tanh of ints", [ints((4,), 1, 9)], lambda x, t: (x.log(), x.tanh())),
    case("exp and sigmoid of ints", [ints((4,), -3, 3)], lambda x, t: (x.exp(), x.sigmoid())),
    case("ints ** 0.5", [ints((4,), 0, 9)], lambda x, t: x ** 0.5),
    case("where int or python float", [ints((4,), -3, 3)], lambda x, t: t.where(x > 0, x, 0.5)),
    case("where of two python floats", [(3, 4)], lambda x, t: t.where(x > 0, 1.0, 0.0)),
    case("where of int and float64", [ints((3, 4), -3, 3), (3, 4)],
         lambda i, x, t: t.where(i > 0, i, x)),
    case("where of bools", [(3, 4), (3, 4)], lambda x, y, t: t.where(x > y, x > 0, y > 0)),
    case("where int scalar into float64", [(3, 4)], lambda x, t: t.where(x > 0, x, 2)),
    case("float64 * python int", [(3, 4)], lambda x, t: x * 3),
    case("max and prod of bools", [(3, 4)], lambda x, t: ((x > 0).max(), (x > 0).prod(1))),
    case("int sum keepdim", [ints((3, 4), -5, 5)], lambda x, t: x.sum(1, keepdim=True)),
    case("masked_fill of ints", [ints((3, 4), -5, 5)], lambda x, t: x.masked_fill(x > 0, 7)),
    case("ints // python int", [ints((6,), -9, 9)], lambda x, t: x // 2),
    case("ints * bool", [ints((3, 4), -5, 5), (3, 4)], lambda x, y, t: x * (y > 0)),
    case("ints topk and cummax", [ints((3, 5), 0, 100)], lambda x, t: (x.topk(2), x.cummax(1))),
    case("ints gather flip roll", [ints((3, 4), 0, 9), fixed([[0, 3], [1, 1], [2, 0]])],
         lambda x, i, t: (x.gather(1, i), x.flip(0), x.roll(1, 1))),
    case("bool cat and stack", [(2, 3)], lambda x, t: (t.cat([x > 0, x < 0]), t.stack([x > 0]))),
    case("ints tril and diagonal", [ints((3, 3), 0, 9)], lambda x, t: (x.tril(), x.diagonal())),
    case("ints pad", [ints((2, 3), 0, 9)], lambda x, t: F(t).pad(x, (1, 1), value=5)),
    case("ints einsum", [ints((2, 3), -3, 3), ints((3,), -3, 3)],
         lambda x, y, t: t.einsum("ij,j->i", x, y)),
]


def under_no_grad(x, t):
    with t.no_grad():
        y = x * 2
    return y, y.requires_grad, (y * x).requires_grad


CONVENTIONS = [     # conventions at the edges of the ops, and more of the index and pooling rules
    case("norm p=inf ties", [fixed([[1.0, -3.0, 3.0], [2.0, 2.0, 1.0]])],
         lambda x, t: x.norm(inf, dim=1)),
    case("min dim ties", [fixed([[1.0, 0.0, 0.0], [2.0, 2.0, 3.0]])], lambda x, t: x.min(1)),
    case("min ties", [fixed([[1.0, 0.0, 0.0], [0.0, 2.0, 3.0]])], lambda x, t: x.min()),
    case("clamp min above max", [(3, 4)], lambda x, t: x.clamp(0.5, -0.5)),
    case("floor_divide by zero", [fixed([1.0, -1.0, 0.0, 2.5])], lambda x, t: x // 0.0, grad=False),
    case("softmax with +inf", [fixed([[0.0, inf, 1.0]])], lambda x, t: x.softmax(-1), grad=False),
    case("std correction 0 of a constant", [fixed([[2.0, 2.0, 2.0], [1.0, 2.0, 4.0]])],
         lambda x, t: x.std(1, correction=0)),
    case("var of a constant", [fixed([[2.0, 2.0, 2.0], [1.0, 2.0, 4.0]])], lambda x, t: x.var(1)),
    case("layer_norm of a constant row", [fixed([[2.0, 2.0, 2.0], [1.0, 2.0, 4.0]]), (3,)],
         lambda x, w, t: F(t).layer_norm(x, (3,), w)),
    case("rms_norm of a zero row", [fixed([[0.0, 0.0, 0.0], [1.0, 2.0, 4.0]]), (3,)],
         lambda x, w, t: F(t).rms_norm(x, (3,), w)),
    case("batch_norm of a constant channel", [fixed([[1.0, 2.0], [1.0, -1.0], [1.0, 0.5]])],
         lambda x, t: F(t).batch_norm(x, None, None, training=True)),
    case("group_norm of a constant group",
         [fixed([[[1.0, 1.0], [1.0, 1.0], [0.0, 3.0], [1.0, 2.0]]])],
         lambda x, t: F(t).group_norm(x, 2)),
    case("sdpa fully masked row", [(1, 3, 4), (1, 3, 4), (1, 3, 4),
                                   fixed([[True, True, False], [False] * 3, [True, False, True]])],
         lambda q, k, v, m, t: F(t).scaled_dot_product_attention(q, k, v, attn_mask=m)),
    case("sdpa -inf float mask", [(1, 3, 4), (1, 3, 4), (1, 3, 4),
                                  fixed([[0.0, -inf, 1.0], [-inf, 0.0, 0.0], [0.5, 0.0, -inf]])],
         lambda q, k, v, m, t: F(t).scaled_dot_product_attention(q, k, v, attn_mask=m)),
    case("cross_entropy with -inf logits", [fixed([[0.0, -inf, 1.0], [2.0, 0.5, -inf]]),
                                            fixed([0, 1])],
         lambda x, y, t: F(t).cross_entropy(x, y)),
    case("cross_entropy weight none ignore", [(5, 4), fixed(TARGETS), const((4,), "positive")],
         lambda x, y, w, t: F(t).cross_entropy(x, y, weight=w, reduction="none")),
    case("cross_entropy probabilities weight smoothing", [(5, 4), const((5, 4)),
                                                          const((4,), "positive")],
         lambda x, y, w, t: F(t).cross_entropy(x, y.softmax(1), weight=w, label_smoothing=0.2)),
    case("cross_entropy 4-d", [(2, 3, 2, 2), ints((2, 2, 2), 0, 3)],
         lambda x, y, t: F(t).cross_entropy(x, y, label_smoothing=0.1)),
    case("repeat_interleave 0-d repeats", [(2, 3)],
         lambda x, t: x.repeat_interleave(t.tensor(2), 1)),
    case("int32 index", [(4, 3), fixed(IDX, np.int32)], lambda x, i, t: x[i]),
    case("ellipsis then None", [(2, 3)], lambda x, t: x[..., None]),
    case("slice None ellipsis step", [(3, 2, 4)], lambda x, t: x[1:2, None, ..., ::2]),
    case("negative slice and list", [(3, 4)], lambda x, t: x[-1:, [-1]]),
    case("None before an index tensor", [(4, 3), fixed(IDX)], lambda x, i, t: x[None, i]),
    case("index tensor then None", [(4, 3), fixed(IDX)], lambda x, i, t: x[i, None]),
    case("middle index tensor", [(2, 4, 3), fixed(IDX)], lambda x, i, t: x[:, i, :]),
    case("list pairs", [(3, 4)], lambda x, t: x[[0, 1], [1, 2]]),
    case("tuple index", [(3, 4)], lambda x, t: x[(0, 1)]),
    case("bool mask of leading dims", [(3, 4, 2)], lambda x, t: x[x.sum(-1) > 0]),
    case("bool mask then int", [(3, 4), fixed([True, False, True])], lambda x, m, t: x[m, 0]),
    case("int then bool mask", [(3, 4), fixed([True, False, True, True])],
         lambda x, m, t: x[1, m]),
    case("index then mask", [(4, 3), fixed(IDX)], lambda x, i, t: x[i][x[i] > 0]),
    case("sum negative dims tuple", [(2, 3, 4)], lambda x, t: x.sum((-1, 0))),
    case("F.pad second-to-last only", [(2, 3)], lambda x, t: F(t).pad(x, (0, 0, 1, 2))),
    case("F.pad crop both sides", [(2, 6)], lambda x, t: F(t).pad(x, (-2, -1))),
    case("F.conv2d all options", [(1, 4, 7, 6), (6, 2, 3, 2), (6,)],
         lambda x, w, b, t: F(t).conv2d(x, w, b, stride=(2, 1), padding=(2, 1), dilation=(1, 2),
                                        groups=2)),
    case("F.conv2d unbatched", [(2, 5, 5), (3, 2, 3, 3)], lambda x, w, t: F(t).conv2d(x, w)),
    case("F.conv3d groups", [(1, 4, 3, 3, 3), (2, 2, 2, 2, 2)],
         lambda x, w, t: F(t).conv3d(x, w, groups=2)),
    case("F.conv_transpose1d all options", [(2, 4, 5), (4, 3, 3), (6,)],
         lambda x, w, b, t: F(t).conv_transpose1d(x, w, b, stride=3, padding=2, output_padding=1,
                                                  groups=2, dilation=2)),
    case("F.conv_transpose2d unbatched", [(2, 3, 3), (2, 3, 2, 2)],
         lambda x, w, t: F(t).conv_transpose2d(x, w, stride=2)),
    case("F.max_pool1d ceil_mode padding", [(1, 2, 6)],
         lambda x, t: F(t).max_pool1d(x, 2, 2, 1, ceil_mode=True)),
    case("F.max_pool1d ceil_mode last window in padding", [(1, 2, 5)],
         lambda x, t: F(t).max_pool1d(x, 2, 2, 1, ceil_mode=True)),
    case("F.avg_pool1d ceil_mode last window in padding", [(1, 2, 5)],
         lambda x, t: F(t).avg_pool1d(x, 2, 2, 1, ceil_mode=True)),
    case("F.avg_pool2d all options", [(1, 2, 7, 6)],
         lambda x, t: F(t).avg_pool2d(x, (3, 2), (2, 2), (1, 1), ceil_mode=True,
                                      count_include_pad=False)),
    case("F.avg_pool1d ceil_mode exclude pad", [(1, 1, 6)],
         lambda x, t: F(t).avg_pool1d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False)),
    case("F.adaptive_avg_pool1d larger", [(1, 2, 3)], lambda x, t: F(t).adaptive_avg_pool1d(x, 5)),
    case("F.embedding negative padding_idx", [fixed([0, 2, 2, 1]), (3, 2)],
         lambda i, w, t: F(t).embedding(i, w, padding_idx=-1)),
    case("F.one_hot 0-d", [fixed(2)], lambda y, t: F(t).one_hot(y, 4)),
    case("einsum batch diagonal", [(2, 3, 3)], lambda x, t: t.einsum("bii->bi", x)),
    case("einsum full contraction", [(3, 4), (3, 4)], lambda x, y, t: t.einsum("ij,ij->", x, y)),
    case("einsum vector dot", [(4,), (4,)], lambda x, y, t: t.einsum("i,i->", x, y)),
    case("einsum broadcast ellipsis", [(2, 1, 3), (4, 3)],
         lambda x, y, t: t.einsum("...j,kj->...k", x, y)),
    case("new_zeros tuple", [(2, 3)], lambda x, t: x.new_zeros((2, 3))),
    case("arange step 0.1", [], lambda t: t.arange(0, 1, 0.1)),
    case("arange float bounds", [], lambda t: t.arange(1, 2.5, 0.5)),
    case("full float64 int value", [], lambda t: t.full((2,), 1, dtype=t.float64)),
    case("tensor of bools", [], lambda t: t.tensor([[True, False]])),
    case("t() of 1-d and 0-d", [(3,), ()], lambda x, y, t: (x.t(), y.t())),
    case("shape entries", [(2, 3, 4)], lambda x, t: (x.shape[-1], x.size(), x.size(-2))),
    case("autograd flags", [(3,)],
         lambda x, t: (x.is_leaf, (x * 2).is_leaf, x.requires_grad, (x * 2).requires_grad,
                       x.detach().requires_grad, x.grad is None, (x * 2).grad_fn is None)),
    case("no_grad", [(3,)], under_no_grad),
    case("requires_grad_", [const((3,))], lambda x, t: x.requires_grad_() * 2),
]

SIGNATURES = [  # the same ops called the other ways PyTorch allows, and larger rows
    case("sum dim None keepdim", [(3, 4)], lambda x, t: x.sum(None, keepdim=True)),
    case("var full correction 0", [(3, 4)], lambda x, t: x.var(correction=0)),
    case("std unbiased False", [(3, 4)], lambda x, t: x.std(unbiased=False)),
    case("max dim -1", [(2, 3, 4)], lambda x, t: x.max(dim=-1)),
    case("argmax dim -1 keepdim", [(2, 3, 4)], lambda x, t: x.argmax(dim=-1, keepdim=True)),
    case("topk 3-d dim 1 smallest", [(2, 5, 3)], lambda x, t: t.topk(x, 2, 1, False, True)),
    case("cumsum -1 3-d", [(2, 3, 4)], lambda x, t: x.cumsum(-1)),
    case("cummin ties", [fixed([[3.0, 1.0, 1.0, 2.0, 1.0]])], lambda x, t: x.cummin(-1)),
    case("flatten -2", [(2, 3, 4)], lambda x, t: x.flatten(-2)),
    case("unsqueeze at the end", [(3, 4)], lambda x, t: x.unsqueeze(2)),
    case("squeeze -1", [(3, 1)], lambda x, t: x.squeeze(-1)),
    case("split dim -1", [(3, 5)], lambda x, t: x.split(2, dim=-1)),
    case("chunk dim -1", [(3, 4)], lambda x, t: t.chunk(x, 2, -1)),
    case("stack dim -2", [(2, 3), (2, 3)], lambda x, y, t: t.stack([x, y], -2)),
    case("cat 1-d", [(2,), (3,)], lambda x, y, t: t.cat([x, y])),
    case("repeat_interleave tensor flat", [(2, 2), fixed([1, 2, 0, 1])],
         lambda x, r, t: x.repeat_interleave(r)),
    case("roll keywords", [(3, 4)], lambda x, t: x.roll(shifts=(1,), dims=(0,))),
    case("diag -2", [(4, 3)], lambda x, t: t.diag(x, -2)),
    case("tril diagonal 2", [(3, 5)], lambda x, t: x.tril(diagonal=2)),
    case("triu -2", [(5, 3)], lambda x, t: x.triu(-2)),
    case("unfold -1", [(2, 6)], lambda x, t: x.unfold(-1, 2, 2)),
    case("softmax 3-d dim 1", [(2, 3, 4)], lambda x, t: (x.softmax(dim=1), x.log_softmax(-2))),
    case("softmax 4-d", [(2, 3, 2, 4)], lambda x, t: F(t).softmax(x, dim=2)),
    case("F.softmax dtype", [f32((3, 4))], lambda x, t: F(t).softmax(x, -1, dtype=t.float64),
         xfail="F.softmax takes no dtype"),
    case("F.log_softmax dim keyword", [(3, 4)], lambda x, t: F(t).log_softmax(x, dim=-1)),
    case("F.gelu none", [(3, 4)], lambda x, t: F(t).gelu(x, approximate="none")),
    case("F.relu inplace False", [(3, 4)], lambda x, t: F(t).relu(x, inplace=False),
         xfail="F.relu takes no inplace"),
    case("F.dropout p=0 training", [(3, 4)], lambda x, t: F(t).dropout(x, 0.0, True)),
    case("F.layer_norm of x.shape[-1:]", [(3, 4)], lambda x, t: F(t).layer_norm(x, x.shape[-1:])),
    case("F.layer_norm wide row", [(2, 1000), (1000,), (1000,)],
         lambda x, w, b, t: F(t).layer_norm(x, (1000,), w, b)),
    case("F.layer_norm many rows", [(300, 33), (33,)],
         lambda x, w, t: F(t).layer_norm(x, (33,), w)),
    case("F.layer_norm float32 wide", [f32((64, 257)), f32((257,)), f32((257,))],
         lambda x, w, b, t: F(t).layer_norm(x, (257,), w, b)),
    case("F.rms_norm wide row", [(5, 4097), (4097,)], lambda x, w, t: F(t).rms_norm(x, (4097,), w)),
    case("F.group_norm 2-d input", [(4, 6), (6,), (6,)],
         lambda x, w, b, t: F(t).group_norm(x, 3, w, b)),
    case("F.cross_entropy many classes", [(8, 1000), ints((8,), 0, 1000)],
         lambda x, y, t: F(t).cross_entropy(x, y)),
    case("F.nll_loss unbatched", [(4,), fixed(2)], lambda x, y, t: F(t).nll_loss(x, y)),
    case("F.mse_loss 0-d", [(), ()], lambda x, y, t: F(t).mse_loss(x, y)),
    case("F.binary_cross_entropy_with_logits extreme", [fixed([-100.0, -30.0, 0.0, 30.0, 100.0]),
                                                        const((5,), "prob")],
         lambda x, y, t: F(t).binary_cross_entropy_with_logits(x, y, reduction="none")),
    case("F.binary_cross_entropy 0-d", [arg((), "prob"), const((), "prob")],
         lambda x, y, t: F(t).binary_cross_entropy(x, y)),
    case("F.conv1d tuple padding", [(2, 3, 7), (4, 3, 3)],
         lambda x, w, t: F(t).conv1d(x, w, padding=(1,))),
    case("F.conv2d strided valid", [(1, 2, 7, 6), (3, 2, 3, 3)],
         lambda x, w, t: F(t).conv2d(x, w, stride=2, padding="valid")),
    case("F.max_pool2d all options", [(1, 2, 6, 9)],
         lambda x, t: F(t).max_pool2d(x, kernel_size=(2, 3), stride=(1, 2), padding=(1, 1),
                                      dilation=(1, 2))),
    case("F.avg_pool1d default stride", [(2, 3, 9)], lambda x, t: F(t).avg_pool1d(x, 3)),
    case("F.adaptive_avg_pool2d (1, None)", [(1, 2, 5, 4)],
         lambda x, t: F(t).adaptive_avg_pool2d(x, (1, None))),
    case("F.sdpa broadcast bool mask", [(2, 3, 4, 5), (2, 3, 6, 5), (2, 3, 6, 5), fixed(MASK)],
         lambda q, k, v, m, t: F(t).scaled_dot_product_attention(q, k, v, m)),
    case("F.sdpa broadcast float mask", [(2, 4, 5), (2, 6, 5), (2, 6, 5), (1, 4, 6)],
         lambda q, k, v, m, t: F(t).scaled_dot_product_attention(q, k, v, m, scale=0.5)),
    case("F.embedding 3-d index", [ints((2, 2, 3), 0, 5), (5, 4)],
         lambda i, w, t: F(t).embedding(i, w)),
    case("matmul both batches broadcast", [(2, 1, 3, 4), (1, 5, 4, 2)], lambda x, y, t: x @ y),
    case("matmul 4-d @ vec", [(2, 2, 3, 4), (4,)], lambda x, y, t: x @ y),
    case("ones float64", [], lambda t: t.ones(2, 3, dtype=t.float64)),
    case("full_like dtype", [(2, 3)], lambda x, t: t.full_like(x, 1.5, dtype=t.float32)),
]

def add_in_place(x, y, t):
    z = x.clone()
    z += y
    return z


def setitem(x, index, value):
    y = x.clone()
    y[index] = value
    return y


def mul_a_row_in_place(x, t):
    y = x.clone()
    y[0].mul_(2)
    return y


INPLACE = [     # on tensors that do not require grad (tinynet has no in-place autograd)
    case("add_", [const((3, 4)), const((4,))], lambda x, y, t: x.clone().add_(y)),
    case("add_ alpha", [const((3, 4)), const((4,))], lambda x, y, t: x.clone().add_(y, alpha=2)),
    case("sub_ alpha", [const((3, 4)), const((3, 1))],
         lambda x, y, t: x.clone().sub_(y, alpha=0.5)),
    case("mul_ scalar", [const((3, 4))], lambda x, t: x.clone().mul_(-1.5)),
    case("div_", [const((3, 4), "away"), const((4,), "away")], lambda x, y, t: x.clone().div_(y)),
    case("clamp_", [const((3, 4))], lambda x, t: x.clone().clamp_(-0.5, 0.5)),
    case("clamp_ min", [const((3, 4))], lambda x, t: x.clone().clamp_(min=0)),
    case("zero_", [const((3, 4))], lambda x, t: x.clone().zero_()),
    case("fill_", [const((3, 4))], lambda x, t: x.clone().fill_(2.5)),
    case("fill_ int with float", [ints((3,), 0, 5)], lambda x, t: x.clone().fill_(2.7)),
    case("copy_ broadcast", [const((3, 4)), const((4,))], lambda x, y, t: x.clone().copy_(y)),
    case("copy_ casts", [ints((3, 4), 0, 9), const((3, 4))], lambda x, y, t: x.clone().copy_(y)),
    case("add_ ints", [ints((3, 4), 0, 9)], lambda x, t: x.clone().add_(3)),
    case("+=", [const((3, 4)), const((4,))], add_in_place),
    case("+= with grad", [(3, 4), (4,)], add_in_place),
    case("add_ with grad", [(3, 4), (4,)], lambda x, y, t: (x * 1).add_(y),
         xfail="tinynet has no in-place autograd (refused on an op's output, documented)"),
    case("in-place through a view", [const((3, 4))], mul_a_row_in_place),
    case("setitem slice", [const((3, 4))], lambda x, t: setitem(x, np.s_[1:, 0], 5.0),
         needs="Tensor.__setitem__"),
    case("setitem with grad", [(3, 4), (2,)], lambda x, v, t: setitem(x, np.s_[1:, 0], v),
         needs="Tensor.__setitem__"),
    case("masked_fill_", [const((3, 4))], lambda x, t: x.clone().masked_fill_(x > 0, 0.0),
         needs="Tensor.masked_fill_"),
    case("exp_", [const((3, 4))], lambda x, t: x.clone().exp_(), needs="Tensor.exp_"),
]

CASES = (ARITHMETIC + DTYPES + POW + UNARY + COMPARISON + REDUCTION + SHAPE + INDEXING
         + MATMUL + CREATION + ACTIVATION + NORMALIZATION + LOSS + PAD + CONV + POOL
         + ATTENTION + EMBEDDING + COMPOSED + VIEWS + EMPTY_AND_SMALL + MORE_DTYPES
         + CONVENTIONS + SIGNATURES + INPLACE)


def backward_twice(x, t):
    y = (x * x).sum()
    y.backward()
    y.backward()


def backward_after_inplace(x, t):
    y = x.exp()
    y.add_(1)
    y.sum().backward()


REFUSED = [     # expressions torch refuses: tinynet must raise too (any exception)
    case("add shapes that do not broadcast", [(3, 4), (3,)], lambda x, y, t: x + y),
    case("matmul shapes that do not fit", [(3, 4), (3, 4)], lambda x, y, t: x @ y),
    case("cat of different shapes", [(2, 3), (2, 4)], lambda x, y, t: t.cat([x, y])),
    case("stack of different shapes", [(2, 3), (3, 2)], lambda x, y, t: t.stack([x, y])),
    case("reshape to a wrong size", [(3, 4)], lambda x, t: x.reshape(5, 3)),
    case("view with two -1", [(3, 4)], lambda x, t: x.view(-1, -1)),
    case("view of a non-contiguous tensor", [(3, 4)], lambda x, t: x.t().view(-1)),
    case("index out of range", [(3, 4)], lambda x, t: x[3]),
    case("tensor index out of range", [(3, 4), fixed([0, 5])], lambda x, i, t: x[i]),
    case("sum over a dim out of range", [(3, 4)], lambda x, t: x.sum(2)),
    case("softmax over a dim out of range", [(3, 4)], lambda x, t: x.softmax(2)),
    case("transpose a dim out of range", [(3, 4)], lambda x, t: x.transpose(0, 2)),
    case("permute with a repeated dim", [(3, 4)], lambda x, t: x.permute(0, 0)),
    case("expand a dim that is not 1", [(3, 2)], lambda x, t: x.expand(3, 4)),
    case("mean of ints", [ints((3, 4), 0, 5)], lambda x, t: x.mean()),
    case("softmax of ints", [ints((3, 4), 0, 5)], lambda x, t: x.softmax(-1),
         xfail="mismatch: softmax() of an int tensor gives float64 (torch refuses)"),
    case("max of empty", [(0,)], lambda x, t: x.max()),
    case("argmax of empty", [(0, 3)], lambda x, t: x.argmax()),
    case("max over an empty dim", [(0, 3)], lambda x, t: x.max(0)),
    case("gather index out of range", [(3, 4), fixed([[5], [0], [1]])],
         lambda x, i, t: x.gather(1, i)),
    case("topk k too large", [(3, 4)], lambda x, t: x.topk(5)),
    case("unflatten to wrong sizes", [(3, 4)], lambda x, t: x.unflatten(1, (3, 2))),
    case("split sections that do not add up", [(3, 4)], lambda x, t: x.split([1, 2], 1)),
    case("chunk into 0", [(3, 4)], lambda x, t: x.chunk(0)),
    case("int tensor requires grad", [], lambda t: t.tensor([1, 2], requires_grad=True)),
    case("int floor_divide by zero", [ints((3,), 1, 5)], lambda x, t: x // 0),
    case("backward through floor_divide", [(3, 4)], lambda x, t: (x // 0.5).sum().backward()),
    case("backward of a non-scalar", [(3, 4)], lambda x, t: (x * 2).backward()),
    case("backward twice", [(3,)], backward_twice),
    case("backward after an in-place change", [(3,)], backward_after_inplace),
    case("in-place on a leaf that requires grad", [(3,)], lambda x, t: x.add_(1)),
    case("item of many elements", [(3, 4)], lambda x, t: x.item()),
    case("bool of many elements", [(3, 4)], lambda x, t: bool(x > 0)),
    case("len of 0-d", [()], lambda x, t: len(x)),
    case("cross_entropy target out of range", [(2, 3), fixed([0, 3])],
         lambda x, y, t: F(t).cross_entropy(x, y)),
    case("cross_entropy float target of another shape", [(2, 3), (2, 4)],
         lambda x, y, t: F(t).cross_entropy(x, y.softmax(1))),
    case("nll_loss target out of range", [(2, 3), fixed([0, -1])],
         lambda x, y, t: F(t).nll_loss(x, y)),
    case("one_hot index too large", [fixed([0, 3])], lambda y, t: F(t).one_hot(y, 3)),
    case("embedding index out of range", [fixed([0, 3]), (3, 2)],
         lambda i, w, t: F(t).embedding(i, w)),
    case("conv2d channel mismatch", [(1, 3, 5, 5), (2, 2, 3, 3)],
         lambda x, w, t: F(t).conv2d(x, w)),
    case("conv1d kernel larger than the input", [(1, 2, 2), (1, 2, 3)],
         lambda x, w, t: F(t).conv1d(x, w)),
    case("conv1d same with stride", [(1, 2, 6), (1, 2, 3)],
         lambda x, w, t: F(t).conv1d(x, w, stride=2, padding="same")),
    case("layer_norm shape mismatch", [(3, 4)], lambda x, t: F(t).layer_norm(x, (3,))),
    case("mm of a vector", [(3, 4), (4,)], lambda x, y, t: t.mm(x, y)),
    case("bmm of different batches", [(2, 3, 4), (3, 4, 5)], lambda x, y, t: t.bmm(x, y)),
    case("dot of matrices", [(3, 4), (3, 4)], lambda x, y, t: t.dot(x, y)),
    case("huber_loss delta 0", [(3,), (3,)], lambda x, y, t: F(t).huber_loss(x, y, delta=0.0)),
    case("group_norm channels not divisible", [(2, 3, 4)], lambda x, t: F(t).group_norm(x, 2)),
    case("batch_norm one value per channel", [(1, 3)],
         lambda x, t: F(t).batch_norm(x, None, None, training=True)),
    case("pad reflect too wide", [(1, 2, 3)], lambda x, t: F(t).pad(x, (3, 0), "reflect")),
    case("max_pool padding over half the kernel", [(1, 1, 6, 6)],
         lambda x, t: F(t).max_pool2d(x, 2, padding=2)),
    case("avg_pool padding over half the kernel", [(1, 1, 6)],
         lambda x, t: F(t).avg_pool1d(x, 3, padding=2)),
    case("sdpa mask and is_causal", [(2, 4, 5), (2, 4, 5), (2, 4, 5), fixed(np.eye(4) > 0)],
         lambda q, k, v, m, t: F(t).scaled_dot_product_attention(q, k, v, m, is_causal=True)),
    case("sdpa key and value lengths differ", [(2, 4, 5), (2, 6, 5), (2, 5, 5)],
         lambda q, k, v, t: F(t).scaled_dot_product_attention(q, k, v)),
    case("where condition not bool", [(3, 4), (3, 4)], lambda x, y, t: t.where(x, x, y),
         xfail="mismatch: where() takes a float condition as nonzero (torch wants bool)"),
    case("masked_fill mask not bool", [(3, 4)], lambda x, t: x.masked_fill(x, 0.0)),
    case("numpy() of a tensor that requires grad", [(3, 4)], lambda x, t: x.numpy(),
         xfail="mismatch: numpy() of a tensor that requires grad works (torch refuses)"),
    case("float() of many elements", [const((3, 4))], lambda x, t: float(x)),
    case("add_ a float to an int tensor", [ints((3,), 0, 5)], lambda x, t: x.clone().add_(1.5)),
    case("add_ that would broadcast the tensor", [const((4,)), const((3, 4))],
         lambda x, y, t: x.clone().add_(y)),
    case("bitwise and of floats", [(3, 4), (3, 4)], lambda x, y, t: x & y),
]


# ------------------------------------------------------------------ the comparison
def leaves(out):
    """The tensors and Python values of a (nested) result, in order."""
    if isinstance(out, (tuple, list)):
        return [leaf for item in out for leaf in leaves(item)]
    return [out]


def dtype_name(x):
    return str(x.dtype).removeprefix("torch.") if isinstance(x, torch.Tensor) else x.dtype.name


def as_numpy(x):
    return x.detach().numpy() if isinstance(x, torch.Tensor) else np.asarray(x.detach().numpy())


def close(ours, ref, dtype, what):
    """Equal to the dtype's tolerance; NaN only where torch has NaN, ±inf where it has."""
    tol = TOLERANCE[dtype]
    np.testing.assert_allclose(ours, ref, tol, tol, equal_nan=True, err_msg=what)


def assert_same(ours, ref, what):
    if not isinstance(ref, torch.Tensor):      # a Python number, bool or shape entry
        assert type(ours) is type(ref), f"{what}: tinynet {ours!r}, torch {ref!r}"
        if isinstance(ref, float):
            close(ours, ref, "float64", what)
        else:
            assert ours == ref, f"{what}: tinynet {ours!r}, torch {ref!r}"
        return
    assert isinstance(ours, tinynet.Tensor), f"{what}: tinynet gave {type(ours).__name__}"
    assert tuple(ours.shape) == tuple(ref.shape), \
        f"{what}: shape {tuple(ours.shape)}, torch {tuple(ref.shape)}"
    assert dtype_name(ours) == dtype_name(ref), \
        f"{what}: dtype {dtype_name(ours)}, torch {dtype_name(ref)}"
    if ref.dtype.is_floating_point:
        close(as_numpy(ours), as_numpy(ref), dtype_name(ref), what)
    else:
        np.testing.assert_array_equal(as_numpy(ours), as_numpy(ref), err_msg=what)


def backward(lib, outputs, weights):
    total = sum((out * lib.tensor(w)).sum() for out, w in zip(outputs, weights, strict=True))
    total.backward()


def gradient(x, ref):
    """``x.grad`` as an array; torch's None (no path to the input) reads as zeros."""
    if x.grad is None:
        return np.zeros(tuple(ref.shape), as_numpy(ref).dtype)
    return as_numpy(x.grad)


@pytest.mark.parametrize("c", CASES)
def test_expression_matches_torch(c):
    arrays = c.arrays()
    ref_inputs, ref_out = c.run(torch, arrays)
    our_inputs, our_out = c.run(tinynet, arrays)
    refs, ours = leaves(ref_out), leaves(our_out)
    assert len(ours) == len(refs), f"tinynet gave {len(ours)} outputs, torch {len(refs)}"
    for k, (o, r) in enumerate(zip(ours, refs, strict=True)):
        assert_same(o, r, f"output {k}")
    if not c.grad:
        return
    tracked = [k for k, r in enumerate(refs) if isinstance(r, torch.Tensor) and r.requires_grad]
    for k, (o, r) in enumerate(zip(ours, refs, strict=True)):
        if isinstance(r, torch.Tensor):
            assert o.requires_grad == r.requires_grad, \
                f"output {k}: requires_grad {o.requires_grad}, torch {r.requires_grad}"
    if not tracked:
        return
    rng = np.random.default_rng(1)
    weights = [rng.standard_normal(tuple(refs[k].shape)).astype(as_numpy(refs[k]).dtype)
               for k in tracked]
    backward(torch, [refs[k] for k in tracked], weights)
    backward(tinynet, [ours[k] for k in tracked], weights)
    for n, (x, r) in enumerate(zip(our_inputs, ref_inputs, strict=True)):
        if r.requires_grad:
            ref_grad = gradient(r, r)
            our_grad = gradient(x, r)
            assert our_grad.shape == ref_grad.shape, \
                f"grad of input {n}: shape {our_grad.shape}, torch {ref_grad.shape}"
            assert our_grad.dtype == ref_grad.dtype, \
                f"grad of input {n}: dtype {our_grad.dtype}, torch {ref_grad.dtype}"
            close(our_grad, ref_grad, ref_grad.dtype.name, f"grad of input {n}")


@pytest.mark.parametrize("c", REFUSED)
def test_refused_like_torch(c):
    arrays = c.arrays()
    with pytest.raises(Exception):      # noqa: B017 (any error: messages and types may differ)
        c.run(torch, arrays)
    with pytest.raises(Exception):      # noqa: B017
        c.run(tinynet, arrays)


def test_names_are_unique():
    names = [p.id for p in CASES + REFUSED]
    assert len(names) == len(set(names)), sorted(n for n in names if names.count(n) > 1)
