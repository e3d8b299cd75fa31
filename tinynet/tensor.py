"""The Tensor: one NumPy or CuPy array, plus what autograd needs.

A tensor is a *leaf* when the user created it (``_node is None``), and the
output of an operation otherwise; ``_node`` is then the graph node (a
:class:`~tinynet.autograd.Context`) that produced it. Leaves with
``requires_grad=True`` receive gradients in ``.grad`` after ``backward()``.

Methods follow PyTorch's names and signatures (``x.sum(dim, keepdim)``,
``x.transpose(d0, d1)``...); NumPy's ``axis``/``keepdims`` are accepted too.
All of the arithmetic lives in :mod:`tinynet.ops`; this class only dispatches,
and a method that forwards to the op of its name takes that op's docstring
(``_take_op_docstrings``, run once the ops are imported).
Here are the arithmetic operators; the in-place methods (``add_``, ``zero_``,
``copy_``...) and their rules live in :mod:`tinynet.inplace`; the reductions and the
trigonometric, rounding, logical and bitwise methods (``sum``, ``sin``, ``//``, ``&``...)
in :mod:`tinynet.math_methods`; the shape, rearranging and indexing methods
(``reshape``, ``transpose``, ``roll``...) in :mod:`tinynet.indexing_methods`; the casts
(``float``, ``long``...), ``view``, the ``*_as`` and ``new_*`` methods in
:mod:`tinynet.conversion_methods`.
"""
from __future__ import annotations

import types

import numpy as np

from . import autograd, hooks
from . import backend as _backend
from .conversion_methods import ConversionMethods
from .devices import device
from .indexing_methods import IndexingMethods
from .inplace import InPlaceMethods
from .math_methods import MathMethods
from .runtime.load import adapt as adapt_threads_to_load

__all__ = ["Tensor"]

_DEVICES = {"cpu": device("cpu"), "cuda": device("cuda")}


def _is_float_dtype(dtype) -> bool:
    return np.issubdtype(dtype, np.floating)


def device_and_dtype(args, device=None, dtype=None):
    """The (device, dtype) of ``to(*args, device=..., dtype=...)``, as PyTorch's
    ``to``: a string among ``args`` is the device, anything else the dtype."""
    for arg in args:
        if isinstance(arg, str):
            device = arg
        else:
            dtype = arg
    return device, dtype


class Tensor(InPlaceMethods, MathMethods, IndexingMethods, ConversionMethods):
    """An n-dimensional array and what autograd needs, as ``torch.Tensor``.

    * ``array``: the array itself (NumPy on ``'cpu'``, CuPy on ``'cuda'``); ``data`` is
      PyTorch's, the same memory as a tensor outside the graph;
    * ``grad``: None, or after ``backward()`` a Tensor of the same shape holding
      the accumulated gradient (a leaf with ``requires_grad`` only);
    * :attr:`requires_grad`, :attr:`is_leaf`, :attr:`grad_fn`: its place in the graph.

    The methods have PyTorch's names, signatures and defaults (``x.sum(dim,
    keepdim)``, ``x.transpose(d0, d1)``); a method that forwards to an op shows
    that op's docstring. The operators (``+ - * / ** @ // & | ^ ~``, comparisons,
    indexing) are the ops of :mod:`tinynet.ops`, broadcast as NumPy's.
    """

    # _version counts the in-place writes to this tensor (see tinynet.inplace).
    # _grad_hooks / _post_accumulate_hooks: a leaf's hooks (tinynet.hooks), or None.
    # _history: (node sequence, the tensor before) of each in-place op recorded on it.
    __slots__ = ("array", "grad", "_requires_grad", "_node", "_output", "_version",
                 "_history", "_grad_hooks", "_post_accumulate_hooks", "__weakref__")

    # Make NumPy hand mixed expressions (ndarray + Tensor) over to Tensor.
    __array_ufunc__ = None

    def __init__(self, data, dtype=None, requires_grad=False, device=None):
        """A copy of ``data`` (numbers, nested lists, a NumPy or CuPy array), as
        :func:`tinynet.tensor` makes it: float32 for floating-point Python data, int64
        for integers, unless ``dtype`` is given."""
        from .creation import _to_array
        self.array = _to_array(data, dtype, device)
        """The array: NumPy's ``ndarray`` on ``'cpu'``, CuPy's on ``'cuda'``."""
        self.grad = None
        """None, or after ``backward()`` the accumulated gradient: a Tensor of this
        shape and dtype (for a leaf that requires grad)."""
        self._node = None
        self._output = 0
        self._version = 0
        self._history = None
        self._grad_hooks = self._post_accumulate_hooks = None
        self._requires_grad = False
        self.requires_grad = requires_grad

    @classmethod
    def _make_leaf(cls, data, requires_grad=False):
        """A new leaf around ``data``, checking that it may require grad."""
        t = cls._make(data)
        t.requires_grad = requires_grad
        return t

    @classmethod
    def _make(cls, data, requires_grad=False, node=None, output=0):
        """Wrap an array without copying or checking (used by every op).

        ``output`` is this tensor's position among the outputs of ``node``.
        """
        t = object.__new__(cls)
        t.array = data
        t.grad = None
        t._requires_grad = requires_grad
        t._node = node
        t._output = output
        t._version = 0
        t._history = None
        t._grad_hooks = t._post_accumulate_hooks = None
        return t

    # ------------------------------------------------------------------ autograd
    @property
    def requires_grad(self) -> bool:
        """Whether backward() computes a gradient for this tensor (floating-point tensors
        only; settable on a leaf, as PyTorch's). False by default.
        """
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool):
        value = bool(value)
        if value and not _is_float_dtype(self.array.dtype):
            raise RuntimeError(
                f"only floating point tensors can require gradients, "
                f"not a tensor of dtype {self.array.dtype}")
        if self._node is not None and not value:
            raise RuntimeError(
                "requires_grad can only be changed on leaf tensors; use detach()")
        self._requires_grad = value

    def requires_grad_(self, requires_grad: bool = True) -> "Tensor":
        """Set :attr:`requires_grad` in place (default True) and return self, as PyTorch's."""
        self.requires_grad = requires_grad
        return self

    @property
    def is_leaf(self) -> bool:
        """True for a tensor the user made (or detached), False for the output of an op."""
        return self._node is None

    @property
    def grad_fn(self):
        """The graph node that produced this tensor (None for leaves)."""
        return self._node

    def backward(self, grad=None, retain_graph: bool = False) -> None:
        """Accumulate the gradient of this tensor into the leaves' ``.grad``."""
        adapt_threads_to_load()         # tinynet/runtime/load.py: a reader may skip it
        autograd.run_backward(self, grad, retain_graph)

    def register_hook(self, hook) -> "hooks.RemovableHandle":
        """Call ``hook(grad)`` with this tensor's gradient once backward has it; a
        Tensor it returns replaces the gradient. See :mod:`tinynet.hooks`."""
        return hooks.add_grad_hook(self, hook)

    def register_post_accumulate_grad_hook(self, hook) -> "hooks.RemovableHandle":
        """Call ``hook(self)`` (a leaf) once backward has added into ``self.grad``."""
        return hooks.add_post_accumulate_grad_hook(self, hook)

    def _accumulate_grad(self, grad, stored: set) -> None:
        if grad.dtype != self.array.dtype:
            grad = grad.astype(self.array.dtype)
        if id(grad) in stored or not grad.flags.c_contiguous:
            grad = grad.copy()          # own a contiguous array nobody else holds
        if self.grad is None:
            self.grad = Tensor._make(grad)
        else:
            self.grad = Tensor._make(autograd.as_array(self.grad.array + grad))
        stored.add(id(self.grad.array))

    def detach(self) -> "Tensor":
        """The same data, cut from the graph (shares memory, like PyTorch)."""
        return Tensor._make(self.array)

    @property
    def data(self) -> "Tensor":
        """This tensor's memory as a tensor outside the graph, as ``torch.Tensor.data``:
        writing into it writes into this tensor, unseen by autograd (``p.data.add_(g)``,
        as old optimizers do; :meth:`detach` is the same tensor). Assigning a tensor (or
        an array) to it gives this tensor that memory. The array itself is :attr:`array`."""
        return Tensor._make(self.array)

    @data.setter
    def data(self, value):
        self.array = value.array if isinstance(value, Tensor) else value

    def clone(self) -> "Tensor":
        """A copy with its own memory, still in the graph (gradients flow back)."""
        return ops.clone(self)

    # --------------------------------------------------------------- properties
    @property
    def shape(self) -> tuple:
        """The size of each dim, a tuple of ints (``torch.Size`` is a tuple too)."""
        return self.array.shape

    @property
    def ndim(self) -> int:
        """The number of dims (0 for a scalar tensor); ``dim()`` is the same."""
        return self.array.ndim

    @property
    def dtype(self):
        """The NumPy dtype of the elements: float32 by default, float64, int64, bool..."""
        return self.array.dtype

    @property
    def device(self) -> device:
        """``device('cpu')`` (a NumPy array) or ``device('cuda')`` (a CuPy array); a
        :class:`~tinynet.device` is also its name, ``'cpu'`` or ``'cuda'``."""
        return _DEVICES[_backend.device_of(self.array)]

    def size(self, dim=None):
        """The shape (a tuple), or the size of dim ``dim``, as ``torch.Tensor.size``."""
        return self.array.shape if dim is None else self.array.shape[dim]

    def dim(self) -> int:
        """The number of dims, :attr:`ndim`."""
        return self.array.ndim

    def numel(self) -> int:
        """The number of elements, the product of the shape (an int)."""
        return int(self.array.size)

    def __len__(self):
        if self.array.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self.array.shape[0]

    # -------------------------------------------------------------- conversions
    def _require_cpu(self, what):
        if self.device != "cpu":
            raise TypeError(
                f"{what} needs a CPU tensor, but this tensor is on {self.device}: "
                "call .cpu() first")

    def numpy(self) -> np.ndarray:
        """The underlying NumPy array (shares memory). CPU tensors only."""
        self._require_cpu("numpy()")
        return self.array

    def __array__(self, dtype=None, copy=None):
        self._require_cpu("conversion to a NumPy array")
        return self.array if dtype is None else self.array.astype(dtype)

    def item(self):
        """The element of a one-element tensor, as a Python number (a ValueError for more)."""
        if self.array.size != 1:
            raise ValueError(
                f"item() needs a tensor with one element, not shape {tuple(self.shape)}")
        return self.array.reshape(()).item()

    def tolist(self):
        """The elements as (nested lists of) Python numbers; a 0-d tensor gives a number."""
        return _backend.as_numpy(self.array).tolist()

    def __float__(self):
        return float(self.item())

    def __int__(self):
        return int(self.item())

    def __index__(self):
        """A one-element integer tensor as an index (``seq[t]``, ``range(t)``), as PyTorch."""
        if self.array.size != 1 or self.array.dtype.kind not in "iub":
            raise TypeError(f"only integer tensors of a single element can be converted to "
                            f"an index; got dtype {self.dtype} and shape {tuple(self.shape)}")
        return int(self.array.reshape(()))

    def __format__(self, spec):
        """``f"{loss:.4f}"``: a one-element tensor formats as its number, as PyTorch's."""
        if spec and self.array.size == 1:
            return format(self.item(), spec)
        return format(str(self), spec)

    def __bool__(self):
        if self.array.size != 1:
            raise RuntimeError(
                f"the truth value of a tensor of shape {tuple(self.shape)} is ambiguous")
        return bool(self.item())

    def to(self, *args, dtype=None, device=None) -> "Tensor":
        """``to(device)``, ``to(dtype)`` or ``to(device, dtype)``: differentiable."""
        device, dtype = device_and_dtype(args, device, dtype)
        out = self
        if dtype is not None and np.dtype(dtype) != self.dtype:
            out = ops.cast(out, dtype)
        if device is not None and _backend._parse_device(device) != self.device:
            out = ops.to_device(out, device)
        return out

    def cpu(self) -> "Tensor":
        """This tensor on the CPU: itself if it is there, else a differentiable copy."""
        return self.to("cpu")

    def cuda(self) -> "Tensor":
        """This tensor on the GPU (CuPy): itself if it is there, else a differentiable copy."""
        return self.to("cuda")

    def __repr__(self):
        body = np.array2string(_backend.as_numpy(self.array), separator=", ",
                               prefix="tensor(", threshold=200, precision=4)
        extras = []
        if self.dtype != np.float32:
            extras.append(f"dtype={self.dtype}")
        if self.device != "cpu":
            extras.append(f"device='{self.device}'")
        if self._node is not None:
            extras.append(f"grad_fn=<{self._node.fn.__name__}>")
        elif self._requires_grad:
            extras.append("requires_grad=True")
        return "tensor(" + ", ".join([body] + extras) + ")"

    __hash__ = object.__hash__

    # --------------------------------------------------------------- arithmetic
    def __add__(self, other): return ops.add(self, other)
    def __radd__(self, other): return ops.add(other, self)
    def __sub__(self, other): return ops.sub(self, other)
    def __rsub__(self, other): return ops.sub(other, self)
    def __mul__(self, other): return ops.mul(self, other)
    def __rmul__(self, other): return ops.mul(other, self)
    def __truediv__(self, other): return ops.div(self, other)
    def __rtruediv__(self, other): return ops.div(other, self)
    def __pow__(self, other): return ops.pow(self, other)
    def __rpow__(self, other): return ops.pow(other, self)
    def __neg__(self): return ops.neg(self)
    def __pos__(self): return self
    def __abs__(self): return ops.abs(self)
    def __matmul__(self, other): return ops.matmul(self, other)
    def __rmatmul__(self, other): return ops.matmul(other, self)
    def __getitem__(self, index): return ops.getitem(self, index)

    # Comparisons give boolean tensors, outside the graph (as in PyTorch).
    def __lt__(self, other): return ops.compare("lt", self, other)
    def __le__(self, other): return ops.compare("le", self, other)
    def __gt__(self, other): return ops.compare("gt", self, other)
    def __ge__(self, other): return ops.compare("ge", self, other)
    def __eq__(self, other): return ops.compare("eq", self, other)
    def __ne__(self, other): return ops.compare("ne", self, other)

    def add(self, other): return ops.add(self, other)
    def sub(self, other): return ops.sub(self, other)
    def mul(self, other): return ops.mul(self, other)
    def div(self, other): return ops.div(self, other)
    def pow(self, exponent): return ops.pow(self, exponent)
    def neg(self): return ops.neg(self)
    def matmul(self, other): return ops.matmul(self, other)
    def maximum(self, other): return ops.maximum(self, other)
    def minimum(self, other): return ops.minimum(self, other)
    def clip(self, min=None, max=None): return ops.clip(self, min, max)
    clamp = clip
    def masked_fill(self, mask, value): return ops.masked_fill(self, mask, value)

    def exp(self): return ops.exp(self)
    def erf(self): return ops.erf(self)
    def log(self): return ops.log(self)
    def sqrt(self): return ops.sqrt(self)
    def abs(self): return ops.abs(self)
    def tanh(self): return ops.tanh(self)
    def sigmoid(self): return ops.sigmoid(self)
    def relu(self): return ops.relu(self)



# The ops build on Tensor and Tensor dispatches to them: imported once it exists, and
# handed to the mixins.
from . import conversion_methods, creation, indexing_methods, math_methods, ops  # noqa: E402

conversion_methods.ops = indexing_methods.ops = math_methods.ops = ops
conversion_methods.creation = creation


def _take_op_docstrings(cls) -> None:
    """Give each public method of ``cls`` and of its mixins that has no docstring of its
    own and the name of an op of :mod:`tinynet.ops` (``x.sum(dim)`` is
    ``ops.sum(x, dim)``) that op's docstring: the same string, not a copy, so that
    ``help(Tensor.sum)`` says what ``help(tinynet.sum)`` says and the two cannot drift."""
    for klass in cls.__mro__:
        for name, method in vars(klass).items():
            if (not name.startswith("_") and isinstance(method, types.FunctionType)
                    and method.__doc__ is None and name in ops.__all__):
                method.__doc__ = getattr(ops, name).__doc__


_take_op_docstrings(Tensor)
