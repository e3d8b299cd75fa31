"""Reverse-mode automatic differentiation: what ``loss.backward()`` runs.

Read core.py first: Function and Context, the topological order and the chain
rule (:func:`chain_rule`), the whole of backpropagation in one sitting. Beside
it, each in a short module of its own, what a framework adds:

* grad_mode.py: ``no_grad``, ``enable_grad``, ``set_grad_enabled``, ``inference_mode``;
* engine.py: ``run_backward``, which ``Tensor.backward`` calls: the core's walk with
  hooks, freeing, in-place sums and each leaf's gradient delivered when complete;
* versions.py: in-place writes by PyTorch's rules (version checks, item assignment).
"""
from .core import (
                   Context,
                   Function,
                   as_array,
                   as_recorded,
                   chain_rule,
                   is_column,
                   topological_order,
                   unbroadcast,
)
from .engine import run_backward
from .grad_mode import enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled
from .versions import record_in_place

__all__ = ["Function", "Context", "no_grad", "enable_grad", "set_grad_enabled",
           "inference_mode", "is_grad_enabled", "unbroadcast", "is_column", "run_backward",
           "as_array", "record_in_place", "as_recorded", "chain_rule", "topological_order"]
