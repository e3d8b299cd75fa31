"""What :func:`tinynet.load` may rebuild from a pickle, and how it rebuilds it.

Unpickling can run arbitrary code: a pickle names functions and classes, and
loading calls them. With ``weights_only=True`` (the default, as in PyTorch 2.6)
only the names of tensors, arrays, numbers, strings, containers and dtypes
resolve, with what :func:`add_safe_globals` or :func:`safe_globals` allows; any
other is refused by name (:class:`RefusedGlobal`), and so is setting the state of
an object of a class not allowed. :class:`Unpickler` is Python's own unpickler
with those checks; :func:`placer` puts each loaded tensor on its device.
"""
from __future__ import annotations

import codecs
import contextlib
import pickle
from collections import Counter, OrderedDict

import numpy as np

from . import backend
from .tensor import Tensor
from .torch_format import UnsupportedCheckpoint as _Unsupported

__all__ = ["add_safe_globals", "get_safe_globals", "clear_safe_globals", "safe_globals",
           "qualified", "RefusedGlobal", "Unpickler", "placer"]


def qualified(obj) -> str:
    return f"{obj.__module__}.{obj.__qualname__}"


_SAFE_BY_DEFAULT = {
    "collections.OrderedDict": OrderedDict, "collections.Counter": Counter,
    "builtins.set": set, "builtins.frozenset": frozenset, "builtins.complex": complex,
    "builtins.bytearray": bytearray, "builtins.slice": slice,
    "_codecs.encode": codecs.encode,        # how protocol 2 pickles bytes
    **{qualified(t): t for t in (np.dtype(name).type for name in (     # NumPy's dtypes
        "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
        "float16", "float32", "float64", "complex64", "complex128"))},
}
_user_safe: dict[str, object] = {}        # the entries given, by the name they allow
_scoped_safe: list[dict[str, object]] = []


def _named(entry) -> tuple[str, object]:
    """(name, object) of an entry: ``obj`` or ``(obj, "module.Name")``."""
    return (entry[1], entry[0]) if isinstance(entry, tuple) else (qualified(entry), entry)


def add_safe_globals(safe_globals) -> None:
    """Allow ``load(weights_only=True)`` to rebuild these classes and call these
    functions, as ``torch.serialization.add_safe_globals``. An entry is the object,
    or ``(object, "module.Name")`` to allow it under the name a file gives it."""
    _user_safe.update((_named(entry)[0], entry) for entry in safe_globals)


def get_safe_globals() -> list:
    """The entries given to :func:`add_safe_globals`, in order."""
    return list(_user_safe.values())


def clear_safe_globals() -> None:
    """Forget every entry given to :func:`add_safe_globals`."""
    _user_safe.clear()


@contextlib.contextmanager
def safe_globals(safe_globals):
    """Within the ``with`` block, allow these too (as :func:`add_safe_globals`)."""
    scope = dict(_named(entry) for entry in safe_globals)
    _scoped_safe.append(scope)
    try:
        yield
    finally:
        _scoped_safe.remove(scope)


def _allowed_by_user() -> dict[str, object]:
    allowed = dict(_named(entry) for entry in _user_safe.values())
    for scope in _scoped_safe:
        allowed.update(scope)
    return allowed


class RefusedGlobal(pickle.UnpicklingError):
    """``weights_only`` refused a global (PyTorch raises ``UnpicklingError`` too)."""


def _refusal(name: str) -> str:
    return (f"Weights only load failed. Unsupported global: GLOBAL {name} was not an allowed "
            f"global by default. weights_only=True rebuilds only tensors, numbers, strings "
            f"and containers, because unpickling anything else can run arbitrary code. If "
            f"you trust {name}, allow it with `tinynet.serialization.add_safe_globals([{name}])` "
            f"or inside the `tinynet.serialization.safe_globals([{name}])` context manager; "
            f"if you trust the whole file, load it with weights_only=False.")


class Unpickler(pickle._Unpickler):
    """Resolves every name a pickle gives through :meth:`find_class`: the names in
    ``known`` (PyTorch's and tinynet's rebuilding functions) always mean tinynet's
    functions (PyTorch is never imported); with ``weights_only``, only allowed
    names resolve at all, and only instances of allowed classes get a state set
    (``BUILD``), as in PyTorch.
    The Python implementation of the unpickler, which lets ``BUILD`` be checked.
    """

    dispatch = dict(pickle._Unpickler.dispatch)

    def __init__(self, file, persistent_load, weights_only: bool, known: dict):
        super().__init__(file)
        self.weights_only, self.known = weights_only, known
        if persistent_load is not None:
            self.persistent_load = persistent_load

    def find_class(self, module, name):
        if self.proto < 3:      # protocol 2 pickles name Python 2's modules
            module = {"__builtin__": "builtins", "copy_reg": "copyreg"}.get(module, module)
        qualified = f"{module}.{name}"
        for table in (self.known, _SAFE_BY_DEFAULT, _allowed_by_user()):
            if qualified in table:
                return table[qualified]
        if module == "torch" or module.startswith("torch."):
            raise _Unsupported(f"it holds {qualified}, which tinynet does not rebuild (it reads "
                               "PyTorch's tensors, parameters, dtypes, Size and device: save "
                               "a state_dict rather than a whole torch module)")
        if self.weights_only:
            raise RefusedGlobal(_refusal(qualified))
        try:
            return super().find_class(module, name)
        except (ImportError, AttributeError) as error:
            raise _Unsupported(f"it needs {qualified}, which does not import ({error})") from None

    def _load_build(self):
        target = self.stack[-2]
        if self.weights_only and type(target) not in {OrderedDict, Counter,
                                                      *_allowed_by_user().values()}:
            raise RefusedGlobal(f"Weights only load failed: the file sets the state of a "
                                 f"{type(target).__qualname__}, which is not an allowed class")
        pickle._Unpickler.load_build(self)

    def _load_global(self):
        module, name = self.readline(), self.readline()
        if not (module.endswith(b"\n") and name.endswith(b"\n")):
            raise EOFError("the pickle ends within a name")
        self.append(self.find_class(module[:-1].decode("utf-8"), name[:-1].decode("utf-8")))

    dispatch[pickle.BUILD[0]] = _load_build
    dispatch[pickle.GLOBAL[0]] = _load_global


def placer(map_location):
    """``place(array, location)``: a tensor's CPU array, saved on ``location``, on the
    device ``map_location`` chooses (see :func:`load`)."""
    def place(array, location):
        if callable(map_location):
            moved = map_location(Tensor._make(array), location)
            if moved is not None:
                return moved.array if isinstance(moved, Tensor) else moved
        elif isinstance(map_location, dict):
            location = map_location.get(location, location)
        elif map_location is not None:
            location = str(map_location)
        try:
            if backend._parse_device(location) == "cpu":
                return array
            return backend.get_backend("cuda").asarray(array)
        except (RuntimeError, ValueError) as error:
            raise _Unsupported(f"it holds tensors saved on {location} ({error}); pass "
                               "map_location='cpu' to load them onto the CPU") from None
    return place


