"""In-place writes and the graph, by PyTorch's rules.

In-place methods (``add_``, ``zero_``... in :mod:`tinynet.inplace`) bump a
tensor's ``_version``. A recorded node notes its input tensors' versions
(``Function.apply``), and the backward pass refuses to run a node whose inputs
changed since the forward, as PyTorch does: the arrays it saved would no longer
be the ones its gradient formula assumes. Item assignment (``t[i] = v``) is
recorded as a node of its own (:func:`record_in_place`).
"""
from __future__ import annotations

from .. import tensor as _tensor
from . import core as _core

__all__ = ["record_in_place", "check_unmodified"]


def record_in_place(t, fn, others, **attributes):
    """Record an in-place operation of ``fn`` on ``t`` (``t[i] = v``): t becomes the
    output of a new node whose inputs are the tensor t was and ``others``; nodes
    recorded before keep that earlier tensor (``core.as_recorded``)."""
    before = _tensor.Tensor._make(t.array, t._requires_grad, t._node, t._output)
    ctx = _core.Context()
    ctx.fn, ctx.inputs, ctx.sequence = fn, (before,) + tuple(others), next(_core._sequence)
    vars(ctx).update(attributes)
    t._history = (t._history or []) + [(ctx.sequence, before)]
    t._node, t._output, t._requires_grad = ctx, 0, True


def check_unmodified(node):
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
