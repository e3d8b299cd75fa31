"""Optimizer base class: parameter groups, per-parameter state, state dicts."""
from __future__ import annotations

import copy

from ..backend import as_numpy, get_backend
from ..tensor import Tensor

__all__ = ["Optimizer", "check_switches"]


class Optimizer:
    """Holds ``param_groups`` (each a dict of params and hyper-parameters) and a
    ``state`` dict per parameter, as ``torch.optim.Optimizer``.

    ``params`` is an iterable of leaf tensors, or of dicts (parameter
    groups, each with its own hyper-parameters); ``defaults`` fills in the
    hyper-parameters a group does not give. Subclasses define :meth:`step`.
    """

    def __init__(self, params, defaults: dict):
        self.check_hyperparameters(defaults)
        self.defaults = dict(defaults)
        self.state: dict = {}
        self.param_groups: list[dict] = []
        if isinstance(params, Tensor):      # iterating it would give its rows
            raise TypeError(f"params argument given to the optimizer should be an iterable of "
                            f"Tensors or dicts, but got a Tensor of shape {tuple(params.shape)}"
                            f"; pass [tensor] or model.parameters()")
        params = list(params)
        if not params:
            raise ValueError("optimizer got an empty parameter list")
        groups = params if isinstance(params[0], dict) else [{"params": params}]
        for group in groups:
            self.add_param_group(group)

    def add_param_group(self, group: dict) -> None:
        """Add a parameter group: a dict with ``"params"`` (leaf tensors, in no other
        group; one that does not require grad, a frozen layer's, is never updated) and
        optional hyper-parameters, the defaults filling the rest.
        """
        group = dict(group)
        params = group["params"]
        group["params"] = [params] if isinstance(params, Tensor) else list(params)
        for p in group["params"]:
            if not isinstance(p, Tensor):
                raise TypeError(f"optimizer can only optimize Tensors, but one of the params "
                                f"is a {type(p).__name__}")
            if not p.is_leaf:
                raise ValueError("can't optimize a non-leaf Tensor (one computed from others); "
                                 "optimize the tensors it was computed from")
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        if any(id(p) in seen for p in group["params"]):
            raise ValueError("a parameter appears in more than one parameter group")
        for key, value in self.defaults.items():
            group.setdefault(key, value)
        self.check_hyperparameters(group)
        self.param_groups.append(group)

    def check_hyperparameters(self, hyperparameters: dict) -> None:
        """Raise TypeError or ValueError, naming it, for a bad hyper-parameter in
        the defaults or in a parameter group (``tinynet.hyperparameters``)."""

    def _params_with_grad(self):
        """(group, parameter) pairs for every parameter that has a gradient."""
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    yield group, p

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradient of every parameter: to None (``set_to_none=True``, PyTorch's
        default), else to zeros in place.
        """
        for group in self.param_groups:
            for p in group["params"]:
                if set_to_none or p.grad is None:
                    p.grad = None
                else:
                    p.grad.array[...] = 0

    def step(self):
        """Update every parameter that has a gradient by the optimizer's rule, in place
        (under no autograd); subclasses define it.
        """
        raise NotImplementedError

    def state_dict(self) -> dict:
        """Hyper-parameters and state, with parameters named by their index."""
        index = {id(p): i for i, p in enumerate(p for g in self.param_groups for p in g["params"])}
        groups = []
        for group in self.param_groups:
            saved = {k: v for k, v in group.items() if k != "params"}
            saved["params"] = [index[id(p)] for p in group["params"]]
            groups.append(saved)
        state = {index[id(p)]: {k: (as_numpy(v).copy() if hasattr(v, "shape") else v)
                                for k, v in s.items()}
                 for p, s in self.state.items()}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore hyper-parameters and per-parameter state from :meth:`state_dict`'s
        output; the groups must hold as many parameters as when it was saved.
        """
        groups = state_dict["param_groups"]
        if len(groups) != len(self.param_groups) or any(
                len(g["params"]) != len(own["params"])
                for g, own in zip(groups, self.param_groups, strict=True)):
            raise ValueError("load_state_dict: the saved parameter groups do not match this "
                             "optimizer's (different number of groups or parameters)")
        params = [p for g in self.param_groups for p in g["params"]]
        hyperparameters = [{k: copy.deepcopy(v) for k, v in saved.items() if k != "params"}
                           for saved in groups]
        for own, saved in zip(self.param_groups, hyperparameters, strict=True):
            self.check_hyperparameters({**own, **saved})
        for own, saved in zip(self.param_groups, hyperparameters, strict=True):
            own.update(saved)
        self.state = {}
        for i, s in state_dict["state"].items():
            p = params[int(i)]
            xp = get_backend(p.device).xp
            self.state[p] = {k: (xp.array(v, dtype=p.dtype) if hasattr(v, "shape") and
                                 getattr(v, "ndim", 0) > 0 else v) for k, v in s.items()}


def check_switches(owner: str, foreach=None, fused=None, capturable=False,
                   differentiable=False) -> None:
    """PyTorch's switches between implementations of one update rule (``foreach``,
    ``fused``, ``capturable``), which programs pass: accepted, since tinynet has one
    implementation of each rule and it computes the same numbers. ``differentiable``
    (a step that autograd can differentiate) tinynet's optimizers do not have."""
    for name, value in (("foreach", foreach), ("fused", fused), ("capturable", capturable)):
        if value is not None and not isinstance(value, bool):
            raise TypeError(f"{owner}: {name} must be None, True or False, got {value!r}")
    if differentiable:
        raise NotImplementedError(f"{owner}: differentiable=True (autograd through the step) "
                                  "is not supported: tinynet updates parameters under no_grad")
