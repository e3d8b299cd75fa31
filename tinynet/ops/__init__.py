"""Every differentiable operation: one Function class per op (see autograd/core.py),
and the plain functions that apply them. Tensor methods dispatch here."""
from .activation import elu, erf, gelu, leaky_relu, silu, softplus
from .attention import scaled_dot_product_attention
from .conditional import clamp, clip, masked_fill, where
from .conversion import cast, to_device
from .cumulative import cummax, cummin, cumprod, cumsum, logcumsumexp
from .einsum import einsum
from .elementwise import add, compare, div, maximum, minimum, mul, pow, sub
from .embedding import embedding, one_hot
from .extremes import argmax, argmin, max, min
from .indexing import argsort, index_select, masked_select, nonzero, repeat_interleave
from .joining import cat, chunk, concatenate, split, stack, unbind
from .linalg import bmm, dot, linear, matmul, mm, mv, outer
from .logical import (
    all,
    any,
    bitwise_and,
    bitwise_not,
    bitwise_or,
    bitwise_xor,
    eq,
    equal,
    ge,
    gt,
    isclose,
    le,
    lt,
    ne,
)
from .math import (
    acos,
    acosh,
    asin,
    asinh,
    atan,
    atanh,
    ceil,
    cos,
    cosh,
    expm1,
    floor,
    floor_divide,
    lerp,
    log1p,
    log2,
    log10,
    round,
    rsqrt,
    sin,
    sinh,
    tan,
    trunc,
)
from .pad import pad
from .product import prod
from .random import Generator, dropout, multinomial, randint, randperm
from .rearrange import diag, diagonal, flip, roll, unflatten, unfold
from .reduction import mean, norm, std, sum, var
from .select import gather, narrow, sort, topk, tril, triu
from .shape import (
    clone,
    expand,
    flatten,
    getitem,
    permute,
    repeat,
    reshape,
    squeeze,
    transpose,
    unsqueeze,
    view,
)
from .softmax import log_softmax, logsumexp, softmax
from .statistics import std_mean, var_mean
from .unary import abs, exp, log, neg, relu, sigmoid, sqrt, tanh

__all__ = [
    "erf", "gelu", "silu", "softplus", "elu", "leaky_relu", "scaled_dot_product_attention", "cast",
    "to_device", "abs", "add", "clamp", "clip", "compare", "div", "exp", "log", "masked_fill",
    "maximum", "minimum", "mul", "neg", "pow", "relu", "sigmoid", "sqrt", "sub", "tanh", "where",
    "embedding", "one_hot", "linear", "matmul", "dropout", "argmax", "argmin", "log_softmax",
    "mm", "bmm", "mv", "dot", "outer",
    "logsumexp", "max", "mean", "min", "norm", "softmax", "std", "sum", "var", "cat", "chunk",
    "clone", "concatenate", "expand", "flatten", "getitem", "permute", "repeat", "reshape", "split",
    "squeeze", "stack", "transpose", "unbind", "unsqueeze", "view", "Generator", "multinomial",
    "randint", "randperm", "gather", "narrow", "eq", "ne", "lt", "le", "gt", "ge", "equal", "sort",
    "topk", "tril", "triu", "all", "any", "bitwise_and", "bitwise_not", "bitwise_or", "bitwise_xor",
    "isclose", "acos", "acosh", "asin", "asinh", "atan", "atanh", "ceil", "cos", "cosh", "floor",
    "floor_divide", "lerp", "round", "rsqrt", "log1p", "expm1", "log2", "log10", "sin", "sinh",
    "tan", "trunc", "prod", "cummax",
    "cummin", "cumprod", "cumsum", "logcumsumexp", "argsort", "index_select", "masked_select",
    "nonzero", "repeat_interleave", "pad", "diag", "diagonal", "flip", "roll", "unflatten",
    "unfold", "einsum", "std_mean", "var_mean",
]
