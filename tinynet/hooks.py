"""Gradient hooks: user code that the backward pass calls, PyTorch's two kinds.

* ``tensor.register_hook(fn)``: ``fn(grad)`` is called with the gradient with
  respect to ``tensor`` once it is complete (summed over every path), before
  it is used; a Tensor it returns replaces that gradient.
* ``leaf.register_post_accumulate_grad_hook(fn)``: ``fn(leaf)`` is called once
  the leaf's gradient of this backward pass is added into ``leaf.grad``.

Both return a :class:`RemovableHandle`. The backward pass delivers each leaf's
gradient as soon as the last node that feeds it has run, not at the end, so a
post-accumulate hook learns *during* backward that a gradient is ready: this is
what lets :class:`~tinynet.nn.parallel.DistributedDataParallel` send gradients
while the rest of the backward is still computing.

A leaf keeps its hooks itself; the hooks of an op's output live on the graph
node that computes it (the tensor object may be gone by the time backward
runs), under the output's position.
"""
from __future__ import annotations

import itertools

__all__ = ["RemovableHandle", "add_grad_hook", "add_post_accumulate_grad_hook",
           "run_grad_hooks"]

_ids = itertools.count()


class RemovableHandle:
    """``handle.remove()`` unregisters the hook; also a context manager that
    removes it on exit (``with x.register_hook(fn): ...``)."""

    def __init__(self, hooks: dict):
        self._hooks = hooks
        self.id = next(_ids)

    def remove(self) -> None:
        self._hooks.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()
        return False


def _add(hooks: dict, fn) -> RemovableHandle:
    if not callable(fn):
        raise TypeError(f"a hook must be callable, got {type(fn).__name__}")
    handle = RemovableHandle(hooks)
    hooks[handle.id] = fn
    return handle


def add_grad_hook(tensor, fn) -> RemovableHandle:
    if not tensor.requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if tensor._node is None:
        if tensor._grad_hooks is None:
            tensor._grad_hooks = {}
        return _add(tensor._grad_hooks, fn)
    node = tensor._node
    if node.output_hooks is None:
        node.output_hooks = {}
    return _add(node.output_hooks.setdefault(tensor._output, {}), fn)


def add_post_accumulate_grad_hook(tensor, fn) -> RemovableHandle:
    if tensor._node is not None:
        raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
    if not tensor.requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if tensor._post_accumulate_hooks is None:
        tensor._post_accumulate_hooks = {}
    return _add(tensor._post_accumulate_hooks, fn)


def run_grad_hooks(hooks: dict, grad):
    """Pass the gradient array ``grad`` through ``hooks`` in the order they were
    registered; each sees the previous one's result."""
    from .tensor import Tensor
    for fn in list(hooks.values()):
        result = fn(Tensor._make(grad))
        if result is None:
            continue
        new = result.array if isinstance(result, Tensor) else result
        if tuple(new.shape) != tuple(grad.shape):
            raise RuntimeError(f"hook {getattr(fn, '__name__', fn)!r} returned a gradient of "
                               f"shape {tuple(new.shape)} for a gradient of shape "
                               f"{tuple(grad.shape)}")
        grad = new
    return grad
