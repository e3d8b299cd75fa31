"""Reverse-mode automatic differentiation: the core, read in one sitting.

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
its input tensors. :func:`chain_rule` then walks the graph from the output
back to the leaves in reverse topological order (built iteratively, so a chain
of 100,000 ops needs no recursion), summing the gradients that reach each node.
That is all of backpropagation; ``Tensor.backward`` runs the same walk with the
framework's extras (engine.py). Only first-order gradients are supported:
backward code works on arrays, so it is not itself recorded.
"""
from __future__ import annotations

import itertools

import numpy as _np

from .. import backend as _backend
from .. import tensor as _tensor
from . import grad_mode as _grad_mode

__all__ = ["Function", "Context", "chain_rule", "topological_order", "unbroadcast",
           "is_column", "as_array", "as_recorded"]

_sequence = itertools.count()   # numbers the nodes in the order they are recorded
_FLOAT = _np.dtype(float)       # the dtype of an output that is a Python number


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
    """Base class of every differentiable operation (see the module docstring).

    The three flags say what the backward reads, for the in-place rules of
    versions.py; the defaults are the safe ones.
    """

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

    #: Optionally, ``add_backward(ctx, grad, total)``: add the gradient that
    #: ``backward`` would return for input 0 (the op's only differentiable input)
    #: into ``total``, an array of that input's shape, in place. The backward pass
    #: then hands it the gradient summed at that input so far (engine.py).
    add_backward = None

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
        record = requires_grad and _grad_mode.enabled
        if record:
            ctx.fn = cls
            ctx.inputs = inputs
            ctx.sequence = next(_sequence)
            if cls.backward_reads_inputs or cls.output_is_view:
                versions = []
                for x in inputs:
                    versions.append(x._version if isinstance(x, Tensor) else 0)
                ctx.versions = tuple(versions)
        if type(output) is tuple:
            if record:
                ctx.num_outputs = len(output)
            return tuple(_output(Tensor, o, record, ctx, i) for i, o in enumerate(output))
        return _output(Tensor, output, record, ctx)


def _output(Tensor, array, record, ctx, index=0):
    """The Tensor of one output; an integer or boolean one never requires grad
    (indices, comparisons, a cast to int), as in PyTorch."""
    array = as_array(array)
    record = record and getattr(array, "dtype", _FLOAT).kind in "fc"
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


def is_column(shape, full_shape) -> bool:
    """Whether an input of ``shape`` is a column (…, 1) broadcast along the last axis
    of ``full_shape``, and nowhere else: a scale or sum of each row."""
    return (len(shape) == len(full_shape) > 0 and shape[-1] == 1 != full_shape[-1]
            and tuple(shape[:-1]) == tuple(full_shape[:-1]))


def unbroadcast(grad, shape):
    """Sum ``grad`` over the axes along which an input of ``shape`` was broadcast.

    Broadcasting copies an input along new leading axes and along axes of
    length 1; the gradient of a copy is the sum of the copies' gradients.
    """
    if grad.shape == shape:
        return grad
    if is_column(shape, grad.shape):    # (…, 1): the device's row sums
        return _backend.kernels_for(grad).sum_last_axis(grad).reshape(shape)
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
    (``x[i] = v``, versions.py) makes x the output of a new node; a node recorded
    before that still feeds the tensor x was, which x keeps in its history."""
    if x._history is not None:
        for sequence, before in x._history:
            if node.sequence < sequence:
                return before
    return x


def node_inputs(node):
    """The node's input tensors, each as the node saw it."""
    tensors = []
    for x in node.inputs:        # a loop: a list comprehension costs a call (Python 3.11)
        if isinstance(x, _tensor.Tensor):
            tensors.append(as_recorded(x, node))
    return tensors


def topological_order(root):
    """Nodes reachable from ``root``, each before the nodes it depends on.

    A node's inputs were recorded before it, so the reverse of the order in which
    the forward recorded the nodes (``Context.sequence``) is such an order: collect
    the nodes ``root`` reaches (an explicit stack, no recursion), then sort them,
    the root first.
    """
    reached = {root}
    stack = [root]
    while stack:
        node = stack.pop()
        if node.freed:
            continue
        for x in node_inputs(node):
            parent = x._node
            if parent is not None and parent not in reached:
                reached.add(parent)
                stack.append(parent)
    return sorted(reached, key=_recorded_when, reverse=True)


def _recorded_when(node):
    return node.sequence


def chain_rule(root, grad=None):
    """Backpropagation: ``{leaf: d(root)/d(leaf)}`` for every leaf that requires grad.

    Node by node in topological order, each node's backward receives the sum of
    the gradients that reached its outputs, dL/d(output), and returns
    dL/d(input) = dL/d(output) · d(output)/d(input) for each input, which is
    added to what reached that input by other paths. Nothing is written to
    ``.grad`` and the graph is kept; ``Tensor.backward`` (engine.run_backward)
    is this walk plus hooks, version checks, freeing and early delivery.
    """
    if grad is None:
        grad = _backend.get_array_module(root.array).ones_like(root.array)
    sums = {_summed_at(root): grad}     # a leaf, or (node, output index)
    for node in topological_order(root._node) if root._node is not None else ():
        grads_out = [sums.pop((node, i), None) for i in range(node.num_outputs)]
        if all(g is None for g in grads_out):
            continue
        with _np.errstate(all="ignore"):       # inf - inf = NaN silently, as in PyTorch
            input_grads = node.fn.backward(node, *grads_out)
        if not isinstance(input_grads, tuple):
            input_grads = (input_grads,)
        for x, g in zip(node.inputs, input_grads, strict=True):
            if g is not None and isinstance(x, _tensor.Tensor) and x._requires_grad:
                key = _summed_at(as_recorded(x, node))
                sums[key] = sums[key] + g if key in sums else g
    return {x: g for x, g in sums.items() if isinstance(x, _tensor.Tensor)}


def _summed_at(x):
    return x if x._node is None else (x._node, x._output)
