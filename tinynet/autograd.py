"""Reverse-mode automatic differentiation.

Every differentiable operation is a :class:`Function` with two static methods
on *raw arrays* (NumPy or CuPy):

* ``forward(ctx, *inputs, **params) -> output`` computes the result and stores
  in ``ctx`` whatever the backward pass will need;
* ``backward(ctx, grad_output) -> grad per input`` applies the chain rule:
  given dL/d(output) it returns dL/d(input) for every positional input
  (``None`` where an input needs no gradient).

A forward may return a tuple of arrays (``split``, ``unbind``): the op then
has several output tensors, and its backward receives one gradient per
output, ``None`` for an output that no gradient reached.

``Function.apply`` runs ``forward`` and, when gradients are wanted, records
the call as a node of the graph: the ``ctx`` object remembers the function and
its input tensors. ``Tensor.backward`` then walks the graph from the output
back to the leaves in reverse topological order (built iteratively, so a chain
of 100,000 ops needs no recursion), summing the gradients that reach each node
and accumulating the ones that reach leaves into ``leaf.grad``.

Only first-order gradients are supported: backward code works on arrays, so
it is not itself recorded (no double backward).

In-place methods (``add_``, ``zero_``... in :mod:`tinynet.inplace`) bump a
tensor's ``_version``. A recorded node notes its input tensors' versions, and
the backward pass refuses to run a node whose inputs changed since the
forward, as PyTorch does: the arrays it saved would no longer be the ones
its gradient formula assumes.
"""
from __future__ import annotations

import contextlib
import itertools

import numpy as _np

from . import backend as _backend
from . import hooks as _hooks
from . import tensor as _tensor

__all__ = ["Function", "Context", "no_grad", "enable_grad", "set_grad_enabled",
           "inference_mode", "is_grad_enabled", "unbroadcast", "run_backward", "as_array",
           "record_in_place", "as_recorded"]

_grad_enabled = True
_sequence = itertools.count()   # numbers the nodes in the order they are recorded


def is_grad_enabled() -> bool:
    """Whether operations are recorded for backward now: True by default, False
    inside ``no_grad()`` (as ``torch.is_grad_enabled``).
    """
    return _grad_enabled


class set_grad_enabled(contextlib.ContextDecorator):
    """Turn graph recording on or off, as a context manager or a decorator."""

    def __init__(self, mode: bool):
        self.mode = bool(mode)
        self._previous = []

    def __enter__(self):
        global _grad_enabled
        self._previous.append(_grad_enabled)
        _grad_enabled = self.mode
        return self

    def __exit__(self, *exc):
        global _grad_enabled
        _grad_enabled = self._previous.pop()
        return False


class no_grad(set_grad_enabled):
    """Disable graph recording: ``with tinynet.no_grad(): ...`` or ``@no_grad``.

    Like PyTorch, it can decorate a function with or without parentheses.
    """

    def __new__(cls, func=None):
        self = super().__new__(cls)
        if callable(func):
            self.__init__()
            return self(func)
        return self

    def __init__(self, func=None):
        super().__init__(False)


class inference_mode(set_grad_enabled):
    """``torch.inference_mode``: no graph recording, as :class:`no_grad` (tinynet has
    no other autograd bookkeeping to skip). ``inference_mode(False)`` changes
    nothing. A context manager, or a decorator with or without parentheses."""

    def __new__(cls, mode=True):
        self = super().__new__(cls)
        if callable(mode):
            self.__init__()
            return self(mode)
        return self

    def __init__(self, mode=True):
        super().__init__(False)
        self.active = bool(mode)

    def __enter__(self):
        if not self.active:
            self.mode = _grad_enabled
        return super().__enter__()


class enable_grad(set_grad_enabled):
    """Re-enable graph recording inside a ``no_grad`` region."""

    def __init__(self):
        super().__init__(True)


class Context:
    """What one call of a Function remembers: a node of the graph.

    ``fn`` and ``inputs`` link the node into the graph; anything the backward
    needs is stored as an attribute or through :meth:`save_for_backward`.
    After a backward pass the node is freed (all of this is dropped) unless
    ``retain_graph=True`` was given.
    """

    freed = False
    sequence = -1               # when it was recorded (_sequence)
    num_outputs = 1
    versions = ()               # the input tensors' _version when the node was recorded
    modified_output = None      # (output index, version) once an output was written in place
    output_hooks = None         # {output index: {id: hook}} (tinynet.hooks)

    def save_for_backward(self, *arrays):
        self.saved = arrays

    def needs_input_grad(self, i: int) -> bool:
        """Whether positional input ``i`` wants a gradient (skip work if not)."""
        x = self.inputs[i]
        return isinstance(x, _tensor.Tensor) and x._requires_grad

    def free(self):
        fn, num_outputs = self.fn, self.num_outputs
        self.__dict__.clear()
        self.fn, self.num_outputs, self.freed = fn, num_outputs, True


class Function:
    """Base class of every differentiable operation (see the module docstring)."""

    #: False for ops whose backward never reads the input tensors' values (only
    #: their shapes, or the op's own output): their inputs are not version-checked.
    backward_reads_inputs = True
    #: True for ops whose output is a view of an input's memory (reshape, slicing):
    #: their inputs are version-checked, so that a graph through a view refuses
    #: backward once the viewed tensor was written in place.
    output_is_view = False
    #: False for ops whose backward never reads the op's own output: that output may
    #: be written in place (recorded, ``y[i] = v``) without refusing the backward.
    backward_reads_output = True

    @staticmethod
    def forward(ctx, *inputs, **params):
        raise NotImplementedError

    @staticmethod
    def backward(ctx, grad):
        raise NotImplementedError

    @classmethod
    def apply(cls, *inputs, **params):
        """Run ``forward`` on the inputs' arrays; record a graph node if needed.

        Inputs may be Tensors or constants (Python numbers, arrays); only
        Tensors with ``requires_grad`` receive gradients.
        """
        Tensor = _tensor.Tensor
        arrays = []
        requires_grad = False
        for x in inputs:
            if isinstance(x, Tensor):
                arrays.append(x.array)
                requires_grad = requires_grad or x._requires_grad
            else:
                arrays.append(x)
        if _backend._cupy is not None:
            _check_same_device(cls, arrays)
        ctx = Context()
        output = cls.forward(ctx, *arrays, **params)
        record = requires_grad and _grad_enabled
        if record:
            ctx.fn = cls
            ctx.inputs = inputs
            ctx.sequence = next(_sequence)
            if cls.backward_reads_inputs or cls.output_is_view:
                ctx.versions = tuple([x._version if isinstance(x, Tensor) else 0
                                      for x in inputs])
        if type(output) is tuple:
            if record:
                ctx.num_outputs = len(output)
            return tuple(_output(Tensor, o, record, ctx, i) for i, o in enumerate(output))
        return _output(Tensor, output, record, ctx)


def _output(Tensor, array, record, ctx, index=0):
    """The Tensor of one output; an integer or boolean one never requires grad
    (indices, comparisons, a cast to int), as in PyTorch."""
    array = as_array(array)
    record = record and getattr(array, "dtype", _np.dtype(float)).kind in "fc"
    return Tensor._make(array, record, ctx if record else None, index)


def as_array(value):
    """NumPy turns 0-d results into scalars (``a + b`` of two 0-d arrays is a
    ``numpy.float64``); keep them arrays, so that they can be written in place."""
    return _np.asarray(value) if isinstance(value, _np.generic) else value


def _check_same_device(fn, arrays):
    devices = {_backend.device_of(a) for a in arrays if hasattr(a, "shape")}
    if len(devices) > 1:
        raise RuntimeError(
            f"{fn.__name__}: expected all tensors on the same device, but found "
            f"tensors on {' and '.join(sorted(devices))}")


def record_in_place(t, fn, others, **attributes):
    """Record an in-place operation of ``fn`` on ``t`` (``t[i] = v``): t becomes the
    output of a new node whose inputs are the tensor t was and ``others``; nodes
    recorded before keep that earlier tensor (:func:`as_recorded`)."""
    before = _tensor.Tensor._make(t.array, t._requires_grad, t._node, t._output)
    ctx = Context()
    ctx.fn, ctx.inputs, ctx.sequence = fn, (before,) + tuple(others), next(_sequence)
    vars(ctx).update(attributes)
    t._history = (t._history or []) + [(ctx.sequence, before)]
    t._node, t._output, t._requires_grad = ctx, 0, True


def unbroadcast(grad, shape):
    """Sum ``grad`` over the axes along which an input of ``shape`` was broadcast.

    Broadcasting copies an input along new leading axes and along axes of
    length 1; the gradient of a copy is the sum of the copies' gradients.
    """
    if grad.shape == shape:
        return grad
    extra = grad.ndim - len(shape)
    axes = tuple(range(extra)) + tuple(
        extra + i for i, n in enumerate(shape) if n == 1 and grad.shape[extra + i] != 1)
    if axes:
        grad = grad.sum(axis=axes, keepdims=True)
    return grad.reshape(shape)


# ----------------------------------------------------------------------------
# The backward pass
# ----------------------------------------------------------------------------

def as_recorded(x, node):
    """The tensor ``x`` as ``node`` saw it. An in-place operation recorded on x
    (``x[i] = v``) makes x the output of a new node; a node recorded before
    that still feeds the tensor x was, which x keeps in its history."""
    if x._history is not None:
        for sequence, before in x._history:
            if node.sequence < sequence:
                return before
    return x


def _inputs(node):
    """The node's input tensors, each as the node saw it."""
    return [as_recorded(x, node) for x in node.inputs if isinstance(x, _tensor.Tensor)]


def _parent_nodes(node):
    if node.freed:
        return ()
    return [x._node for x in _inputs(node) if x._node is not None]


def topological_order(root):
    """Nodes reachable from ``root``, each before the nodes it depends on.

    An iterative depth-first search (an explicit stack instead of recursion)
    emits each node after all of its parents; reversing that post-order puts
    the root first.
    """
    order = []
    visited = {root}
    stack = [(root, iter(_parent_nodes(root)))]
    while stack:
        node, parents = stack[-1]
        for parent in parents:
            if parent not in visited:
                visited.add(parent)
                stack.append((parent, iter(_parent_nodes(parent))))
                break
        else:
            stack.pop()
            order.append(node)
    order.reverse()
    return order


def run_backward(root, grad=None, retain_graph=False):
    """Accumulate d(root)/d(leaf) into ``leaf.grad`` for every leaf that requires it."""
    if not root._requires_grad:
        raise RuntimeError(
            "backward() called on a tensor that does not require grad: no input "
            "of the computation had requires_grad=True (or it ran under no_grad)")
    if grad is None:
        if root.array.size != 1:
            raise RuntimeError(
                f"backward() on a tensor of shape {tuple(root.shape)} needs a grad "
                "argument of the same shape: an implicit gradient exists only for "
                "scalar outputs")
        grad = _backend.get_array_module(root.array).ones_like(root.array)
    else:
        grad = grad.array if isinstance(grad, _tensor.Tensor) else grad
        if tuple(grad.shape) != tuple(root.shape):
            raise ValueError(
                f"backward(): grad has shape {tuple(grad.shape)} but the tensor "
                f"has shape {tuple(root.shape)}")

    stored = set()   # ids of arrays handed to a leaf: never hand one over twice
    if root._node is None:
        _deliver(root, grad, stored)
        return

    sums = _GradientSums()
    sums.add(_sum_key(root), grad)
    order = topological_order(root._node)
    for node, leaves in zip(order, _last_consumers(order), strict=True):
        _run_node(node, sums, retain_graph)
        for leaf in leaves:
            leaf_grad = sums.take(leaf)
            if leaf_grad is not None:
                _deliver(leaf, leaf_grad, stored)


def _last_consumers(order):
    """For each node of ``order``, the leaves (that want a gradient) it is the last
    node to feed: once it has run, their gradients are complete."""
    last = {}
    for node in order:
        if not node.freed:
            for x in _inputs(node):
                if x._node is None and x._requires_grad:
                    last[x] = node
    leaves = {}
    for leaf, node in last.items():
        leaves.setdefault(node, []).append(leaf)
    return [leaves.get(node, ()) for node in order]


def _run_node(node, sums, retain_graph):
    """Apply one node's backward to the gradients summed at its outputs, and add
    what it returns into its inputs' sums."""
    if node.num_outputs == 1:
        grads_out = (sums.take(node),)
        if grads_out[0] is None:
            return
    else:
        grads_out = tuple(sums.take((node, i)) for i in range(node.num_outputs))
        if all(g is None for g in grads_out):
            return
    if node.freed:
        raise RuntimeError(
            "Trying to backward through the graph a second time: its saved "
            "values were freed after the first backward. Call "
            "backward(retain_graph=True) the first time if you need to.")
    if node.versions or node.modified_output is not None:
        _check_unmodified(node)
    if node.output_hooks:
        grads_out = tuple(g if g is None or i not in node.output_hooks
                          else _hooks.run_grad_hooks(node.output_hooks[i], g)
                          for i, g in enumerate(grads_out))
    input_grads = node.fn.backward(node, *grads_out)
    if not isinstance(input_grads, tuple):
        input_grads = (input_grads,)
    if len(input_grads) != len(node.inputs):
        raise RuntimeError(f"{node.fn.__name__}.backward returned {len(input_grads)} "
                           f"gradients for its {len(node.inputs)} inputs")
    for x, g in zip(node.inputs, input_grads, strict=True):
        if g is not None and isinstance(x, _tensor.Tensor) and x._requires_grad:
            x = as_recorded(x, node)
            g = as_array(g)
            if g.dtype != x.array.dtype:     # a gradient has its tensor's dtype, as in PyTorch
                g = g.astype(x.array.dtype)
            sums.add(_sum_key(x), g)
    if not retain_graph:
        node.free()


def _deliver(leaf, grad, stored):
    """A leaf's complete gradient: through its hooks, into ``leaf.grad``."""
    if leaf._grad_hooks:
        grad = _hooks.run_grad_hooks(leaf._grad_hooks, grad)
    leaf._accumulate_grad(grad, stored)
    if leaf._post_accumulate_hooks:
        for hook in list(leaf._post_accumulate_hooks.values()):
            hook(leaf)


def _check_unmodified(node):
    """Refuse a node whose inputs (or outputs) were written in place after its forward."""
    # versions is empty for an op whose backward does not read its inputs.
    for i, (x, version) in enumerate(zip(node.inputs, node.versions, strict=False)):
        if isinstance(x, _tensor.Tensor) and x._version != version:
            _raise_modified(f"input {i} of {node.fn.__name__} (a tensor of shape "
                            f"{tuple(x.shape)})", x._version, version)
    if node.modified_output is not None:
        index, version = node.modified_output
        _raise_modified(f"output {index} of {node.fn.__name__}", version, 0)


def _raise_modified(what, version, expected):
    raise RuntimeError(
        "one of the variables needed for gradient computation has been modified by an "
        f"inplace operation: {what} is at version {version}; expected version {expected} "
        "instead. Change it after backward(), or change a clone() of it.")


def _sum_key(x):
    """Where the gradients reaching tensor ``x`` are summed: the leaf itself, its
    node, or (node, position) for one output of a node with several."""
    node = x._node
    if node is None:
        return x
    return node if node.num_outputs == 1 else (node, x._output)


class _GradientSums:
    """The gradient arriving at each node (and leaf) so far, summed over paths.

    A sum this pass allocated is *owned* and later contributions are added
    into it in place; an array that came from a backward (it may be shared,
    e.g. ``a + b`` hands the same array to both inputs) is never written to.
    Every sum is an array, never a NumPy scalar: ``+=`` on a scalar would
    rebind a new object and lose the contribution.
    """

    def __init__(self):
        self._sums = {}
        self._owned = set()

    def add(self, key, grad):
        previous = self._sums.get(key)
        if previous is None:
            self._sums[key] = grad
            return
        with _np.errstate(invalid="ignore", over="ignore"):   # inf + -inf = NaN, silently
            if id(previous) in self._owned:
                previous += grad
            else:
                total = as_array(previous + grad)
                self._owned.add(id(total))
                self._sums[key] = total

    def take(self, key):
        grad = self._sums.pop(key, None)
        self._owned.discard(id(grad))
        return grad
