"""Every differentiable operation: one Function class per op (see autograd.py),
and the plain functions that apply them. Tensor methods dispatch here."""
from .conversion import cast, to_device
from .elementwise import (abs, add, clamp, clip, compare, div, exp, log, maximum,
                          minimum, mul, neg, pow, relu, sigmoid, sqrt, sub, tanh, where)
from .linalg import linear, matmul
from .random import dropout
from .reduction import (argmax, argmin, log_softmax, logsumexp, max, mean, min, softmax,
                        std, sum, var)
from .shape import (cat, chunk, concatenate, expand, flatten, getitem, permute, reshape,
                    split, squeeze, stack, transpose, unbind, unsqueeze, view)
