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
    ops,
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
from .ops import *  # every op: tinynet.sum is tinynet.ops.sum (but see below)
from .runtime.threads import get_num_threads, set_num_threads
from .serialization import CheckpointError, load, save

# The ops PyTorch keeps off its top level stay off tinynet's: torch.nn.functional's (and
# its embedding and dropout, whose torch.X take other arguments), Tensor methods, and what
# operators and .to() call. They are tinynet.ops.X (and tinynet.nn.functional.X).
_NOT_AT_TOP_LEVEL = (
    "elu", "gelu", "leaky_relu", "linear", "one_hot", "pad", "scaled_dot_product_attention",
    "silu", "softplus", "embedding", "dropout",
    "expand", "repeat", "unfold", "view",
    "cast", "compare", "getitem", "to_device",
)
for _name in _NOT_AT_TOP_LEVEL:
    del globals()[_name]
del _name

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
    # the ops (tinynet/ops/)
    *(name for name in ops.__all__ if name not in _NOT_AT_TOP_LEVEL),
    # checkpoints, threads
    "CheckpointError", "load", "save", "get_num_threads", "set_num_threads",
]

__version__ = "0.1.0"

# PyTorch's other names for the dtypes. (Last: from here on, in this module,
# float and int are these.)
long, int, short = int64, int32, int16
float, double, half = float32, float64, float16


__getattr__ = lacking("torch")   # a name tinynet lacks, as the PyTorch name asked for
