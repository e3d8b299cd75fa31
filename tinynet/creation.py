"""Making tensors: ``tensor``, ``zeros``, ``randn``... with PyTorch's signatures.

Random factories draw from the device's generator, seeded for every device at
once by :func:`tinynet.manual_seed`.
"""
from __future__ import annotations

import builtins
import numbers

import numpy as np

from . import backend as _backend
from .tensor import Tensor

__all__ = ["tensor", "from_numpy", "zeros", "ones", "full", "empty", "arange", "eye",
           "linspace", "logspace", "rand", "randn", "zeros_like", "ones_like", "full_like",
           "rand_like", "randn_like", "manual_seed", "float16", "float32", "float64",
           "uint8", "int8", "int16", "int32", "int64", "bool", "bool_"]

float16 = np.float16
"""NumPy's float16 (``torch.float16``, ``torch.half``): half precision."""
float32 = np.float32
"""NumPy's float32, the default dtype (``torch.float32``)."""
float64 = np.float64
"""NumPy's float64 (``torch.float64``): gradchecks run in it."""
uint8 = np.uint8
"""NumPy's uint8 (``torch.uint8``): bytes, the pixels of images."""
int8 = np.int8
"""NumPy's int8 (``torch.int8``)."""
int16 = np.int16
"""NumPy's int16 (``torch.int16``, ``torch.short``)."""
int32 = np.int32
"""NumPy's int32 (``torch.int32``)."""
int64 = np.int64
"""NumPy's int64 (``torch.int64``): the dtype of indices and of integer data."""
bool_ = np.bool_
"""NumPy's bool (``torch.bool``): the dtype of comparisons and masks."""
bool = np.bool_    # PyTorch's name: this module says builtins.bool for Python's own
"""NumPy's bool under PyTorch's name, ``torch.bool`` (the same type as ``bool_``)."""

DEFAULT_DTYPE = np.float32


# The dtype of a Python number in tensor() or full(), as in PyTorch.
_PYTHON_DTYPES = ((builtins.bool, np.dtype(np.bool_)), (numbers.Integral, np.dtype(np.int64)),
                  (numbers.Real, np.dtype(DEFAULT_DTYPE)),
                  (numbers.Complex, np.dtype(np.complex64)))
_KIND_ORDER = "buifc"


def _scalar_dtype(value):
    """A NumPy value's own dtype; bool, int64, float32 or complex64 for Python numbers."""
    if hasattr(value, "dtype"):
        return np.dtype(value.dtype)
    for kind, dtype in _PYTHON_DTYPES:
        if isinstance(value, kind):
            return dtype
    return None


def _inferred_dtype(data):
    """PyTorch's dtype for ``tensor(data)`` of (nested lists of) numbers and arrays.

    The highest kind present wins (bool < unsigned < int < float < complex), at the
    widest size among its values: ``[1, 2]`` is int64, ``[1, 2.5]`` float32 (the
    default dtype), ``[np.float64(1), 2.0]`` float64. Empty data is float32.
    """
    found = set()
    pending = [data]
    while pending:
        item = pending.pop()
        if isinstance(item, (list, tuple, range)):
            pending.extend(item)
        elif isinstance(item, Tensor):
            raise TypeError("tensor() of a list of Tensors: use tinynet.stack instead")
        else:
            dtype = _scalar_dtype(item)
            if dtype is None:
                raise TypeError(f"cannot make a tensor from {type(item).__name__} data")
            found.add(dtype)
    if not found:
        return np.dtype(DEFAULT_DTYPE)
    top = max(_KIND_ORDER.index(d.kind) for d in found)
    return np.result_type(*[d for d in found if _KIND_ORDER.index(d.kind) == top])


def _to_array(data, dtype=None, device=None):
    """The array behind ``tensor(data, dtype, device)``.

    A NumPy (or CuPy) array keeps its dtype unless one is given; Python data
    gets PyTorch's (see :func:`_inferred_dtype`).
    """
    if isinstance(data, Tensor):
        data = data.array
    if dtype is not None:
        dtype = np.dtype(dtype)
    elif not hasattr(data, "dtype") or isinstance(data, np.generic):
        dtype = _inferred_dtype(data)
    if isinstance(data, (list, tuple)) and any(isinstance(x, Tensor) for x in data):
        raise TypeError("tensor() of a list of Tensors: use tinynet.stack instead")
    target = device if device is not None else _backend.device_of(data)
    array = _backend.get_backend(target).asarray(data, dtype=dtype)
    if array.dtype == object:
        raise TypeError(f"cannot make a tensor from {type(data).__name__} data")
    return array


def tensor(data, dtype=None, requires_grad=False, device="cpu") -> Tensor:
    """A new leaf tensor holding a copy of ``data`` (as ``torch.tensor``)."""
    array = _to_array(data, dtype, device)
    if isinstance(data, Tensor) or array is data:
        array = array.copy()
    return Tensor._make_leaf(array, requires_grad)


def from_numpy(array: np.ndarray) -> Tensor:
    """A CPU tensor sharing memory with a NumPy array (dtype kept)."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"from_numpy expects a numpy.ndarray, got {type(array).__name__}")
    return Tensor._make_leaf(array, False)


def _shape(size) -> tuple:
    if len(size) == 1 and not isinstance(size[0], numbers.Integral):
        size = tuple(size[0])
    return tuple(int(n) for n in size)


def _float_dtype(dtype, name):
    if dtype not in (np.float32, np.float64):
        raise TypeError(f"{name} makes float32 or float64 tensors, not {dtype}")
    return dtype


def _factory(make):
    """Shared signature of the shape factories: ``(*size, dtype, device, requires_grad)``."""
    def factory(*size, dtype=None, device="cpu", requires_grad=False):
        b = _backend.get_backend(device)
        array = make(b, _shape(size), np.dtype(dtype or DEFAULT_DTYPE))
        return Tensor._make_leaf(array, requires_grad)
    factory.__name__ = make.__name__
    factory.__doc__ = make.__doc__
    return factory


def _random_factory(draw):
    """The shape factories that draw random numbers: a ``generator`` of their own too."""
    def factory(*size, generator=None, dtype=None, device="cpu", requires_grad=False):
        from .ops.random import generator_rng
        rng = generator_rng(generator, device)
        array = draw(rng, _shape(size), np.dtype(dtype or DEFAULT_DTYPE))
        return Tensor._make_leaf(array, requires_grad)
    factory.__name__ = draw.__name__
    factory.__doc__ = draw.__doc__
    return factory


@_factory
def zeros(b, shape, dtype):
    """A tensor of zeros: ``zeros(2, 3)`` or ``zeros((2, 3))``."""
    return b.xp.zeros(shape, dtype)


@_factory
def ones(b, shape, dtype):
    """A tensor of ones."""
    return b.xp.ones(shape, dtype)


@_factory
def empty(b, shape, dtype):
    """An uninitialised tensor."""
    return b.xp.empty(shape, dtype)


@_random_factory
def rand(rng, shape, dtype):
    """Uniform samples from [0, 1), from the seeded generator (or ``generator``)."""
    return rng.random(shape, dtype=_float_dtype(dtype, "rand"))


@_random_factory
def randn(rng, shape, dtype):
    """Standard normal samples, from the seeded generator (or ``generator``)."""
    return rng.standard_normal(shape, dtype=_float_dtype(dtype, "randn"))


def full(size, fill_value, dtype=None, device="cpu", requires_grad=False) -> Tensor:
    """A tensor filled with ``fill_value``, of its dtype by default (as PyTorch:
    ``full((2,), 7)`` is int64, ``full((2,), 7.0)`` float32)."""
    if dtype is None:
        dtype = _inferred_dtype(fill_value)
    b = _backend.get_backend(device)
    array = b.xp.full(_shape((size,)), fill_value, np.dtype(dtype))
    return Tensor._make_leaf(array, requires_grad)


def arange(start, end=None, step=1, dtype=None, device="cpu", requires_grad=False) -> Tensor:
    """``arange(end)`` or ``arange(start, end, step)``; int64 for integer arguments."""
    if end is None:
        start, end = 0, start
    if dtype is None:
        integral = all(isinstance(v, numbers.Integral) for v in (start, end, step))
        dtype = np.int64 if integral else DEFAULT_DTYPE
    array = _backend.get_backend(device).xp.arange(start, end, step, dtype=np.dtype(dtype))
    return Tensor._make_leaf(array, requires_grad)


def _size(value, name, what="n") -> int:
    """A non-negative int argument, as PyTorch checks it."""
    if isinstance(value, builtins.bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name}(): argument '{what}' must be an int, not "
                        f"{type(value).__name__}")
    if value < 0:
        raise ValueError(f"{name}(): {what} must be greater or equal to 0, got {value}")
    return int(value)


def _dtype(dtype):
    """``dtype`` as a NumPy dtype; the default float32 for None."""
    return np.dtype(DEFAULT_DTYPE if dtype is None else dtype)


def eye(n, m=None, dtype=None, device="cpu", requires_grad=False) -> Tensor:
    """The (n, m) identity matrix (``m = n`` by default): ones on the diagonal, zeros
    elsewhere, float32 unless ``dtype`` is given (as ``torch.eye``)."""
    n = _size(n, "eye")
    m = n if m is None else _size(m, "eye", "m")
    array = _backend.get_backend(device).xp.eye(n, m, dtype=_dtype(dtype))
    return Tensor._make_leaf(array, requires_grad)


def _number(value):
    """A Python number from a number or a one-element tensor (start, end, base)."""
    return value.item() if isinstance(value, Tensor) else value


def _evenly_spaced(name, start, end, steps, dtype):
    """``steps`` points from ``start`` to ``end`` in float64, as PyTorch computes them:
    start and end first converted to ``dtype`` (an integer dtype truncates them),
    step = (end - start) / (steps - 1), the first half counted up from start and the
    second down from end, so that both ends are exact; one step is ``[start]``."""
    steps = _size(steps, name, "steps")
    if dtype == np.bool_:
        raise TypeError(f"{name}(): dtype=bool is not supported (as in PyTorch)")
    start, end = np.asarray([_number(start), _number(end)]).astype(dtype).tolist()
    if steps == 1:
        return np.asarray([start])
    index = np.arange(steps)
    step = (end - start) / builtins.max(steps - 1, 1)
    return np.where(index < steps // 2, start + step * index,
                    end - step * (steps - 1 - index))


def linspace(start, end, steps, dtype=None, device="cpu", requires_grad=False) -> Tensor:
    """``steps`` evenly spaced values from ``start`` to ``end``, both included (as
    ``torch.linspace``): float32 unless ``dtype`` is given (an integer dtype truncates
    toward zero); ``steps`` is an int >= 0 (0 gives an empty tensor, 1 ``[start]``)."""
    dtype = _dtype(dtype)
    values = _evenly_spaced("linspace", start, end, steps, dtype)
    array = _backend.get_backend(device).asarray(values.astype(dtype), dtype=dtype)
    return Tensor._make_leaf(array, requires_grad)


def logspace(start, end, steps, base=10.0, dtype=None, device="cpu",
             requires_grad=False) -> Tensor:
    """``base ** linspace(start, end, steps)``: ``steps`` values spaced evenly on a log
    scale from ``base ** start`` to ``base ** end`` (as ``torch.logspace``), float32
    unless ``dtype`` is given."""
    dtype = _dtype(dtype)
    exponents = _evenly_spaced("logspace", start, end, steps, dtype)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        values = np.power(float(_number(base)), exponents)
        array = _backend.get_backend(device).asarray(values.astype(dtype), dtype=dtype)
    return Tensor._make_leaf(array, requires_grad)


def _like(factory):
    def like(t, dtype=None, device=None, requires_grad=False):
        return factory(*t.shape, dtype=dtype or t.dtype, device=device or t.device,
                       requires_grad=requires_grad)
    like.__name__ = factory.__name__ + "_like"
    like.__doc__ = f"``{factory.__name__}`` with the shape, dtype and device of ``t``."
    return like


zeros_like = _like(zeros)
ones_like = _like(ones)
rand_like = _like(rand)
randn_like = _like(randn)


def full_like(t, fill_value, dtype=None, device=None, requires_grad=False) -> Tensor:
    """``full`` with the shape of ``t``, and its dtype and device unless given."""
    return full(t.shape, fill_value, dtype=t.dtype if dtype is None else dtype,
                device=device or t.device, requires_grad=requires_grad)


def manual_seed(seed: int) -> None:
    """Seed every device's generator: runs become repeatable."""
    _backend.manual_seed(seed)
