"""Module: the container of parameters, buffers and sub-modules (as torch.nn).

Assigning a :class:`Parameter`, a :class:`Module` or a registered buffer to an
attribute registers it (the containers that hold modules by index or by name
are in :mod:`tinynet.nn.containers`), so that ``parameters()``, ``state_dict()``, ``to()``
and ``train()``/``eval()`` reach everything in the tree.
"""
from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping

import numpy as np

from ..backend import as_numpy, get_backend
from ..tensor import Tensor, device_and_dtype

__all__ = ["Parameter", "Module"]


class Parameter(Tensor):
    """A leaf tensor that a Module owns and an optimizer updates.

    ``Parameter(data, requires_grad=True)`` wraps the array of ``data`` (a Tensor or
    an array) without copying it; assigning it to a Module's attribute registers it
    in ``parameters()`` and ``state_dict()``.
    """

    __slots__ = ()

    def __init__(self, data, requires_grad=True):
        array = data.array if isinstance(data, Tensor) else data
        Tensor.__init__(self, array, requires_grad=requires_grad)

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()


class Module:
    """Base class of every layer, as ``torch.nn.Module``. Subclasses define ``forward``.

    Assigning a :class:`Parameter` or a Module to an attribute registers it;
    ``register_buffer`` registers state that is not a parameter. ``module(x)``
    calls ``forward(x)``. A new module is in training mode.
    """

    def __init__(self):
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_non_persistent", set())
        object.__setattr__(self, "_modules", OrderedDict())
        object.__setattr__(self, "training", True)

    # Registered values also live in __dict__, so reading ``self.weight`` is a
    # plain attribute lookup (this matters in a training loop).
    def __setattr__(self, name, value):
        if "_parameters" not in self.__dict__:
            raise AttributeError(
                f"cannot assign {name!r} before Module.__init__() has been called")
        registries = (self._parameters, self._buffers, self._modules)
        if isinstance(value, Parameter):
            target = self._parameters
        elif isinstance(value, Module):
            target = self._modules
        elif name in self._parameters:
            if value is not None:
                raise TypeError(
                    f"cannot assign {type(value).__name__} to parameter {name!r}: "
                    "expected a Parameter or None")
            target = self._parameters
        elif name in self._buffers:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"buffer {name!r} must be a Tensor or None")
            target = self._buffers
        else:
            target = None
        for registry in registries:
            if registry is not target:
                registry.pop(name, None)
        if target is not None:
            target[name] = value
        object.__setattr__(self, name, value)

    def __delattr__(self, name):
        for registry in (self._parameters, self._buffers, self._modules):
            registry.pop(name, None)
        object.__delattr__(self, name)

    def register_parameter(self, name: str, param) -> None:
        """Register ``param`` (a :class:`Parameter`, or None for an optional one such as a
        missing bias) under ``name``, as assigning ``self.name = param`` does.
        """
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"{name!r} must be a Parameter or None")
        self._parameters[name] = param
        object.__setattr__(self, name, param)

    def register_buffer(self, name: str, tensor, persistent: bool = True) -> None:
        """A tensor that is state but not a parameter (e.g. running statistics)."""
        self._buffers[name] = tensor
        if not persistent:
            self._non_persistent.add(name)
        object.__setattr__(self, name, tensor)

    def forward(self, *args, **kwargs):
        """The computation of the module; subclasses define it, and ``module(*args)`` calls
        it. Each layer's ``forward`` documents its input and output shapes.
        """
        raise NotImplementedError(f"{type(self).__name__} does not define forward()")

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    # -------------------------------------------------------------- traversal
    def named_modules(self, prefix: str = ""):
        """(name, module) for this module and every descendant, depth first."""
        stack = [(prefix, self)]
        seen = set()
        while stack:
            name, module = stack.pop()
            if id(module) in seen:
                continue
            seen.add(id(module))
            yield name, module
            children = [(f"{name}.{k}" if name else k, m)
                        for k, m in module._modules.items() if m is not None]
            stack.extend(reversed(children))

    def modules(self):
        """This module and every descendant, depth first, each once."""
        for _, module in self.named_modules():
            yield module

    def named_children(self):
        """(name, child) for each direct sub-module; one registered under two
        names is given once (as PyTorch)."""
        seen = set()
        for name, module in self._modules.items():
            if module is not None and id(module) not in seen:
                seen.add(id(module))
                yield name, module

    def children(self):
        """The direct sub-modules, each once."""
        for _, module in self.named_children():
            yield module

    def _named_members(self, registry_name, recurse=True):
        seen = set()
        modules = self.named_modules() if recurse else [("", self)]
        for module_name, module in modules:
            for name, value in getattr(module, registry_name).items():
                if value is None or id(value) in seen:
                    continue
                seen.add(id(value))
                yield (f"{module_name}.{name}" if module_name else name), value

    def named_parameters(self, recurse: bool = True):
        """(name, parameter) for every parameter of this module and (with ``recurse``, the
        default) of its descendants, by dotted name (``"0.weight"``), each once.
        """
        return self._named_members("_parameters", recurse)

    def parameters(self, recurse: bool = True):
        """Every parameter of this module and (with ``recurse``, the default) of its
        descendants, each once: what an optimizer is given.
        """
        for _, p in self.named_parameters(recurse):
            yield p

    def named_buffers(self, recurse: bool = True):
        """(name, buffer) for every buffer (running statistics...) of this module and (with
        ``recurse``, the default) of its descendants, by dotted name.
        """
        return self._named_members("_buffers", recurse)

    def buffers(self, recurse: bool = True):
        """Every buffer of this module and (with ``recurse``, the default) of its descendants."""
        for _, b in self.named_buffers(recurse):
            yield b

    # ------------------------------------------------------------------ modes
    def train(self, mode: bool = True) -> "Module":
        """Set training mode (``mode=True``) or eval mode on this module and every
        descendant (``self.training``: dropout and batch norm behave differently); return
        self.
        """
        for module in self.modules():
            object.__setattr__(module, "training", bool(mode))
        return self

    def eval(self) -> "Module":
        """Set eval mode on this module and every descendant (``train(False)``); return self."""
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> "Module":
        """Set ``requires_grad`` on every parameter (default True: False freezes the
        module); return self.
        """
        for p in self.parameters():
            p.requires_grad = requires_grad
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset every parameter's gradient: to None (``set_to_none=True``, PyTorch's
        default), else to zeros.
        """
        for p in self.parameters():
            if set_to_none or p.grad is None:
                p.grad = None
            else:
                p.grad = Tensor._make(get_backend(p.device).xp.zeros_like(p.array))

    def to(self, *args, device=None, dtype=None) -> "Module":
        """``to(device)``, ``to(dtype)`` or ``to(device, dtype)``: move every parameter
        and buffer in place, casting the floating-point ones to ``dtype``; return self."""
        device, dtype = device_and_dtype(args, device, dtype)
        if dtype is not None and not np.issubdtype(np.dtype(dtype), np.floating):
            raise TypeError(f"{type(self).__name__}.to: only floating-point dtypes are "
                            f"accepted, got {np.dtype(dtype)}")
        for tensor in list(self.parameters()) + list(self.buffers()):
            floating = np.issubdtype(tensor.dtype, np.floating)
            moved = tensor.detach().to(device=device, dtype=dtype if floating else None)
            tensor.array = moved.array
            if tensor.grad is not None:
                tensor.grad = tensor.grad.to(device=device, dtype=dtype)
        return self

    def cpu(self) -> "Module":
        """Move every parameter and buffer to the CPU in place; return self."""
        return self.to("cpu")

    def cuda(self) -> "Module":
        """Move every parameter and buffer to the GPU (CuPy) in place; return self."""
        return self.to("cuda")

    def double(self) -> "Module":
        """Cast the floating-point parameters and buffers to float64; return self."""
        return self.to(dtype=np.float64)

    def float(self) -> "Module":
        """Cast the floating-point parameters and buffers to float32; return self."""
        return self.to(dtype=np.float32)

    def apply(self, fn) -> "Module":
        """Call ``fn(module)`` on every sub-module, children before their parent,
        then on self; return self (``model.apply(init_weights)``)."""
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    # ------------------------------------------------------------ state dicts
    def state_dict(self) -> "OrderedDict[str, Tensor]":
        """Parameters and persistent buffers by dotted name (detached, shared data)."""
        state = OrderedDict()
        for module_name, module in self.named_modules():
            prefix = f"{module_name}." if module_name else ""
            for name, p in module._parameters.items():
                if p is not None:
                    state[prefix + name] = p.detach()
            for name, b in module._buffers.items():
                if b is not None and name not in module._non_persistent:
                    state[prefix + name] = b.detach()
        return state

    def load_state_dict(self, state_dict, strict: bool = True):
        """Copy values into this module's parameters and buffers (in place).

        With ``strict``, missing and unexpected keys are errors; a shape
        mismatch is always an error. Returns ``(missing_keys, unexpected_keys)``.
        """
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"load_state_dict for {type(self).__name__}: expected a mapping of "
                            f"names to arrays, got {type(state_dict).__name__}")
        own = self.state_dict()
        missing = [k for k in own if k not in state_dict]
        unexpected = [k for k in state_dict if k not in own]
        mismatched = [f"{k}: checkpoint {tuple(np.shape(_array(state_dict[k])))}, "
                      f"model {tuple(own[k].shape)}"
                      for k in own if k in state_dict
                      and tuple(np.shape(_array(state_dict[k]))) != tuple(own[k].shape)]
        problems = []
        if strict and missing:
            problems.append("missing keys: " + ", ".join(missing))
        if strict and unexpected:
            problems.append("unexpected keys: " + ", ".join(unexpected))
        if mismatched:
            problems.append("shape mismatch: " + "; ".join(mismatched))
        if problems:
            raise ValueError(f"load_state_dict for {type(self).__name__}: " + " | ".join(problems))
        for key, target in own.items():
            if key in state_dict:
                xp = get_backend(target.device).xp
                target.array[...] = xp.asarray(_array(state_dict[key]), dtype=target.dtype)
        return missing, unexpected

    # ------------------------------------------------------------------- repr
    def extra_repr(self) -> str:
        """The module's own settings for its ``repr`` (``"in_features=2, out_features=3"``);
        subclasses override it, as in PyTorch. Empty here.
        """
        return ""

    def __repr__(self):
        lines = [f"({name}): " + repr(module).replace("\n", "\n  ")
                 for name, module in self._modules.items()]
        head = f"{type(self).__name__}({self.extra_repr()}"
        if not lines:
            return head + ")"
        return head + "\n  " + "\n  ".join(lines) + "\n)"


def _array(value):
    """The NumPy array behind a Tensor or array-like value of a state dict."""
    return as_numpy(value.array) if isinstance(value, Tensor) else as_numpy(value)
