"""tinynet: a small tensor and autograd framework, written to be read.

Its subject is Layer Normalization (Ba, Kiros & Hinton, 2016). The pieces:

* :mod:`tinynet.tensor` and :mod:`tinynet.autograd`: the Tensor and the engine;
* :mod:`tinynet.ops`: every differentiable operation, one Function each;
* :mod:`tinynet.backend`: NumPy on the CPU, CuPy on the GPU, kernel tables;
* :mod:`tinynet.kernels`: the LayerNorm kernels (NumPy reference, Numba CPU/CUDA);
* :mod:`tinynet.threads`: how many threads the computations use, and how idle ones wait;
* :mod:`tinynet.allocator`: freed arrays' memory kept for the next step (glibc);
* :mod:`tinynet.distributed`: torch.distributed's collectives over MPI (mpi4py is
  imported when a program joins a process group, not here);
* :mod:`tinynet.viz`: the autograd graph as Graphviz DOT text or a picture (the
  graphviz package is imported when a picture is drawn, not here).
"""
from . import allocator, threads

threads.apply_wait_policy()    # before any OpenMP runtime loads (see threads.py)
allocator.apply_allocator_policy()

from . import backend
from .tensor import Tensor  # first: tensor.py completes the autograd <-> ops cycle

# isort: split
from . import data, distributed, nn, optim, testing, viz
from .autograd import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from .backend import cuda_is_available, get_array_module, use_kernels, use_reference_kernels
from .creation import (
    arange,
    bool,
    bool_,
    empty,
    eye,
    float16,
    float32,
    float64,
    from_numpy,
    full,
    full_like,
    int8,
    int16,
    int32,
    int64,
    linspace,
    logspace,
    manual_seed,
    ones,
    ones_like,
    rand,
    rand_like,
    randn,
    randn_like,
    tensor,
    uint8,
    zeros,
    zeros_like,
)
from .ops import (
    Generator,
    abs,
    acos,
    acosh,
    all,
    any,
    argmax,
    argmin,
    argsort,
    asin,
    asinh,
    atan,
    atanh,
    bitwise_and,
    bitwise_not,
    bitwise_or,
    bitwise_xor,
    cat,
    ceil,
    chunk,
    clamp,
    clip,
    concatenate,
    cos,
    cosh,
    cummax,
    cummin,
    cumprod,
    cumsum,
    diag,
    diagonal,
    einsum,
    erf,
    exp,
    flatten,
    flip,
    floor,
    floor_divide,
    gather,
    index_select,
    isclose,
    lerp,
    log,
    log_softmax,
    logcumsumexp,
    logsumexp,
    masked_select,
    matmul,
    max,
    maximum,
    mean,
    min,
    minimum,
    multinomial,
    nonzero,
    permute,
    prod,
    relu,
    repeat_interleave,
    reshape,
    roll,
    round,
    rsqrt,
    sigmoid,
    sin,
    sinh,
    softmax,
    sort,
    split,
    sqrt,
    squeeze,
    stack,
    std,
    std_mean,
    sum,
    tan,
    tanh,
    topk,
    transpose,
    tril,
    triu,
    trunc,
    unbind,
    unflatten,
    unsqueeze,
    var,
    var_mean,
    where,
)
from .serialization import CheckpointError, load, save
from .threads import get_num_threads, set_num_threads

__all__ = [
    # modules
    "allocator", "backend", "data", "distributed", "nn", "optim", "testing", "threads", "viz",
    # the Tensor, autograd's modes
    "Tensor", "enable_grad", "is_grad_enabled", "no_grad", "set_grad_enabled",
    # devices and kernels
    "cuda_is_available", "get_array_module", "use_kernels", "use_reference_kernels",
    # creation and dtypes
    "arange", "bool", "bool_", "empty", "eye", "float16", "float32", "float64", "from_numpy",
    "full", "full_like", "int8", "int16", "int32", "int64", "linspace", "logspace",
    "manual_seed", "ones", "ones_like", "rand", "rand_like", "randn", "randn_like", "tensor",
    "uint8", "zeros", "zeros_like",
    # ops
    "abs", "argmax", "argmin", "cat", "chunk", "clamp", "clip", "concatenate", "exp", "flatten",
    "log", "log_softmax", "logsumexp", "matmul", "max", "maximum", "mean", "min", "minimum",
    "permute", "relu", "reshape", "sigmoid", "softmax", "split", "sqrt", "squeeze", "stack",
    "std", "sum", "tanh", "transpose", "unbind", "unsqueeze", "var", "where",
    "gather", "sort", "topk", "tril", "triu", "multinomial", "Generator", "erf",
    "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh",
    "rsqrt", "floor", "ceil", "round", "trunc", "lerp", "isclose", "prod", "any", "all",
    "floor_divide", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not",
    "roll", "flip", "diagonal", "diag", "unflatten", "index_select", "repeat_interleave",
    "masked_select", "nonzero", "argsort", "cumsum", "cumprod", "cummax", "cummin",
    "logcumsumexp", "einsum", "std_mean", "var_mean",
    # checkpoints, threads
    "CheckpointError", "load", "save", "get_num_threads", "set_num_threads",
]

__version__ = "0.1.0"
