"""tinynet: a small tensor and autograd framework, written to be read.

Its subject is Layer Normalization (Ba, Kiros & Hinton, 2016). The pieces:

* :mod:`tinynet.tensor` and :mod:`tinynet.autograd`: the Tensor and the engine;
* :mod:`tinynet.ops`: every differentiable operation, one Function each;
* :mod:`tinynet.backend`: NumPy on the CPU, CuPy on the GPU, kernel tables;
* :mod:`tinynet.kernels`: the LayerNorm kernels (NumPy reference, Numba CPU/CUDA);
* :mod:`tinynet.runtime`: threads, the shared BLAS pool, the allocator's policy (a reader
  of the framework can skip it; ``tinynet.threads`` is its thread settings);
* :mod:`tinynet.distributed`: torch.distributed's collectives over MPI (mpi4py is
  imported when a program joins a process group, not here);
* :mod:`tinynet.viz`: the autograd graph as Graphviz DOT text or a picture (the
  graphviz package is imported when a picture is drawn, not here).
"""
from . import runtime
from .runtime import allocator, threads

runtime.configure()            # before any OpenMP runtime loads (runtime/threads.py)

from . import backend
from .tensor import Tensor  # first: tensor.py completes the autograd <-> ops cycle

# isort: split
from . import (
    accelerator,
    as_torch,
    backends,
    cuda,
    data,
    distributed,
    nn,
    optim,
    serialization,
    testing,
    utils,
    viz,
)
from .autograd import enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled
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
from .devices import device
from .lacking import lacking
from .ops import (
    Generator,
    abs,
    acos,
    acosh,
    add,
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
    bmm,
    cat,
    ceil,
    chunk,
    clamp,
    clip,
    clone,
    concatenate,
    cos,
    cosh,
    cummax,
    cummin,
    cumprod,
    cumsum,
    diag,
    diagonal,
    div,
    dot,
    einsum,
    eq,
    equal,
    erf,
    exp,
    expm1,
    flatten,
    flip,
    floor,
    floor_divide,
    gather,
    ge,
    gt,
    index_select,
    isclose,
    le,
    lerp,
    log,
    log1p,
    log2,
    log10,
    log_softmax,
    logcumsumexp,
    logsumexp,
    lt,
    masked_select,
    matmul,
    max,
    maximum,
    mean,
    min,
    minimum,
    mm,
    mul,
    multinomial,
    mv,
    narrow,
    ne,
    neg,
    nonzero,
    outer,
    permute,
    pow,
    prod,
    randint,
    randperm,
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
    sub,
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
from .runtime.threads import get_num_threads, set_num_threads
from .serialization import CheckpointError, load, save

__all__ = [
    # modules
    "allocator", "backend", "data", "distributed", "nn", "optim", "testing", "threads", "viz",
    "accelerator", "as_torch", "backends", "cuda", "serialization", "utils",
    # the Tensor, autograd's modes
    "Tensor", "enable_grad", "inference_mode", "is_grad_enabled", "no_grad", "set_grad_enabled",
    # devices and kernels
    "device", "cuda_is_available", "get_array_module", "use_kernels", "use_reference_kernels",
    # creation and dtypes (and PyTorch's other names for them)
    "arange", "bool", "bool_", "empty", "eye", "float16", "float32", "float64", "from_numpy",
    "full", "full_like", "int8", "int16", "int32", "int64", "linspace", "logspace",
    "long", "int", "short", "float", "double", "half",
    "manual_seed", "ones", "ones_like", "rand", "rand_like", "randn", "randn_like", "tensor",
    "uint8", "zeros", "zeros_like",
    # ops
    "abs", "argmax", "argmin", "cat", "chunk", "clamp", "clip", "concatenate", "exp", "flatten",
    "log", "log_softmax", "logsumexp", "matmul", "max", "maximum", "mean", "min", "minimum",
    "mm", "bmm", "mv", "dot", "outer",
    "permute", "relu", "reshape", "sigmoid", "softmax", "split", "sqrt", "squeeze", "stack",
    "std", "sum", "tanh", "transpose", "unbind", "unsqueeze", "var", "where",
    "gather", "sort", "topk", "tril", "triu", "multinomial", "randint", "randperm", "Generator",
    "erf",
    "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh",
    "rsqrt", "log1p", "expm1", "log2", "log10", "floor", "ceil", "round", "trunc", "lerp",
    "isclose", "prod", "any", "all",
    "floor_divide", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not",
    "roll", "flip", "diagonal", "diag", "unflatten", "index_select", "repeat_interleave",
    "masked_select", "nonzero", "argsort", "cumsum", "cumprod", "cummax", "cummin",
    "logcumsumexp", "einsum", "std_mean", "var_mean", "pow", "narrow", "eq", "ne", "lt", "le",
    "gt", "ge", "equal", "add", "sub", "mul", "div", "neg", "clone",
    # checkpoints, threads
    "CheckpointError", "load", "save", "get_num_threads", "set_num_threads",
]

__version__ = "0.1.0"

# PyTorch's other names for the dtypes. (Last: from here on, in this module,
# float and int are these.)
long, int, short = int64, int32, int16
float, double, half = float32, float64, float16


__getattr__ = lacking("torch")   # a name tinynet lacks, as the PyTorch name asked for
