"""``Tensor.backward``: the core's chain rule (core.py) with what a framework adds.

:func:`run_backward` walks the graph as ``core.chain_rule`` does, and also

* runs the hooks on gradients (``register_hook``, tinynet.hooks);
* refuses a node whose tensors were written in place since (versions.py);
* frees each node's saved arrays once it has run, unless ``retain_graph``;
* sums the gradients reaching a node in place, into arrays it allocated, with
  NumPy's floating-point warnings off for the whole walk (inf + -inf is NaN
  silently, as in PyTorch; hooks and the ops' backwards run in it too); an op
  with an ``add_backward`` (slicing) adds its gradient straight into that sum;
* delivers each leaf's gradient to ``leaf.grad`` as soon as it is complete, not at
  the end, so that data-parallel training can start averaging it across workers
  while the backward goes on (tinynet.distributed).
"""
from __future__ import annotations

from .. import backend as _backend
from .. import hooks as _hooks
from .. import tensor as _tensor
from ..runtime.quiet import ignore_fp_errors, restore_fp_errors
from .core import as_array, as_recorded, node_inputs, topological_order
from .versions import check_unmodified

__all__ = ["run_backward"]


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
    token = ignore_fp_errors()
    try:
        completes = _last_consumers(order)
        for node in order:
            _run_node(node, sums, retain_graph)
            for leaf in completes.get(node, ()):
                leaf_grad = sums.take(leaf)
                if leaf_grad is not None:
                    _deliver(leaf, leaf_grad, stored)
    finally:
        restore_fp_errors(token)


def _last_consumers(order):
    """{node: the leaves (that want a gradient) it is the last node of ``order`` to
    feed}: once it has run, their gradients are complete."""
    last = {}
    for node in order:
        if not node.freed:
            for x in node_inputs(node):
                if x._node is None and x._requires_grad:
                    last[x] = node
    leaves = {}
    for leaf, node in last.items():
        leaves.setdefault(node, []).append(leaf)
    return leaves


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
        check_unmodified(node)
    if node.output_hooks:
        grads_out = tuple(g if g is None or i not in node.output_hooks
                          else _hooks.run_grad_hooks(node.output_hooks[i], g)
                          for i, g in enumerate(grads_out))
    if node.fn.add_backward is not None:
        x = node.inputs[0]
        if isinstance(x, _tensor.Tensor) and x._requires_grad:
            x = as_recorded(x, node)
            total = sums.owned(_sum_key(x), x.array)
            node.fn.add_backward(node, grads_out[0], total)
    else:
        _add_input_grads(node, node.fn.backward(node, *grads_out), sums)
    if not retain_graph:
        node.free()


def _add_input_grads(node, input_grads, sums):
    """Add what a node's backward returned into its inputs' sums."""
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


def _deliver(leaf, grad, stored):
    """A leaf's complete gradient: through its hooks, into ``leaf.grad``."""
    if leaf._grad_hooks:
        grad = _hooks.run_grad_hooks(leaf._grad_hooks, grad)
    leaf._accumulate_grad(grad, stored)
    if leaf._post_accumulate_hooks:
        for hook in list(leaf._post_accumulate_hooks.values()):
            hook(leaf)


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
        elif id(previous) in self._owned:
            previous += grad
        else:
            total = as_array(previous + grad)
            self._owned.add(id(total))
            self._sums[key] = total

    def owned(self, key, like):
        """The sum at ``key`` as an array this pass owns, for a backward to add into
        in place: zeros of ``like``'s shape and dtype if nothing has arrived yet."""
        total = self._sums.get(key)
        if total is not None and id(total) in self._owned:
            return total
        if total is None:
            total = _backend.get_array_module(like).zeros(like.shape, like.dtype)
        else:
            total = total.copy()
        self._owned.add(id(total))
        self._sums[key] = total
        return total

    def take(self, key):
        grad = self._sums.pop(key, None)
        self._owned.discard(id(grad))
        return grad
