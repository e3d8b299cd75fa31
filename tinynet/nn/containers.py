"""Containers of modules: Sequential, ModuleList (by index), ModuleDict (by name).

A module held in a container is registered like an attribute, so its parameters
are the container's (and its parent's) parameters.
"""
from __future__ import annotations

from collections.abc import Mapping

from .module import Module

__all__ = ["Sequential", "ModuleList", "ModuleDict"]


class _Container(Module):
    """Indexing, length and iteration over the registered sub-modules."""

    def _add(self, module) -> None:
        """Register ``module`` under the next index. Anything that is not a
        Module is refused: setattr would keep it as a plain attribute, and
        forward() and parameters() would silently skip it."""
        if not isinstance(module, Module):
            raise TypeError(f"{type(self).__name__} holds Modules; got {type(module).__name__} "
                            f"{module!r} (wrap a function in a Module, e.g. nn.ReLU())")
        setattr(self, str(len(self._modules)), module)

    def __getitem__(self, index):
        return list(self._modules.values())[index]

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())


class Sequential(_Container):
    """Modules applied one after another."""

    def __init__(self, *modules):
        super().__init__()
        for module in modules:
            self._add(module)

    def forward(self, x):
        """``x`` passed through each module in turn, the output of one the input of the next."""
        for module in self._modules.values():
            x = module(x)
        return x


class ModuleList(_Container):
    """A list of modules whose parameters are registered."""

    def __init__(self, modules=()):
        super().__init__()
        for module in modules:
            self.append(module)

    def append(self, module: Module) -> "ModuleList":
        """Add ``module`` at the end (registered under the next index); return self."""
        self._add(module)
        return self


class ModuleDict(Module):
    """Modules by name, in insertion order, as ``torch.nn.ModuleDict``:
    ``blocks["attn"]``, ``"attn" in blocks``, ``keys()``, ``items()``, ``update()``."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __setitem__(self, name: str, module: Module) -> None:
        if not isinstance(name, str):
            raise TypeError(f"ModuleDict keys are strings, got {type(name).__name__} {name!r}")
        if not name or "." in name or (name not in self._modules and hasattr(self, name)):
            raise KeyError(f"ModuleDict: {name!r} cannot be a key (empty, holding a '.', or "
                           "the name of an attribute of the module)")
        if not isinstance(module, Module):
            raise TypeError(f"ModuleDict holds Modules; got {type(module).__name__} for "
                            f"key {name!r}")
        setattr(self, name, module)

    def __getitem__(self, name: str) -> Module:
        return self._modules[name]

    def __delitem__(self, name: str) -> None:
        if name not in self._modules:
            raise KeyError(name)
        delattr(self, name)

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules)

    def __contains__(self, name) -> bool:
        return name in self._modules

    def keys(self):
        """The names, in insertion order."""
        return self._modules.keys()

    def values(self):
        """The modules, in insertion order."""
        return self._modules.values()

    def items(self):
        """(name, module) pairs, in insertion order."""
        return self._modules.items()

    def pop(self, name: str) -> Module:
        """Remove the module named ``name`` and return it (a KeyError if there is none)."""
        module = self[name]
        del self[name]
        return module

    def clear(self) -> None:
        """Remove every module."""
        for name in list(self._modules):
            del self[name]

    def update(self, modules) -> None:
        """Add (name, module) pairs from a mapping (a ModuleDict too) or an
        iterable of pairs."""
        pairs = modules.items() if isinstance(modules, (Mapping, ModuleDict)) else modules
        for name, module in pairs:
            self[name] = module
