"""Saving and loading state dicts (and nested containers of them) as ``.npz``.

Every write is atomic: data goes to a temporary file in the target directory,
which is renamed over the target only when complete, so a crash mid-write
never leaves a truncated checkpoint behind (:func:`atomic_write`).
"""
from __future__ import annotations

import contextlib
import json
import os
import tempfile

import numpy as np

from .backend import as_numpy
from .tensor import Tensor

__all__ = ["atomic_write", "save", "load"]

_STRUCTURE_KEY = "__tinynet_structure__"


@contextlib.contextmanager
def atomic_write(path, mode: str = "wb"):
    """Open a temporary file beside ``path``; rename it to ``path`` on success.

    On an exception the temporary file is removed and ``path`` is untouched.
    """
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, temp = tempfile.mkstemp(dir=directory, prefix="." + os.path.basename(path) + ".",
                                suffix=".tmp")
    os.close(fd)
    try:
        with open(temp, mode) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.chmod(temp, 0o666 & ~_current_umask())   # mkstemp made it private (0600)
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.remove(temp)
        raise


def _current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _encode(obj, arrays: list):
    """A JSON-able skeleton of ``obj``; arrays are set aside in ``arrays``."""
    if isinstance(obj, Tensor) or isinstance(obj, np.ndarray) or hasattr(obj, "__cuda_array_interface__"):
        arrays.append(as_numpy(obj.data if isinstance(obj, Tensor) else obj))
        kind = "tensor" if isinstance(obj, Tensor) else "array"
        return {"__" + kind + "__": len(arrays) - 1}
    if isinstance(obj, dict):
        return {"__dict__": [[_encode(k, arrays), _encode(v, arrays)] for k, v in obj.items()]}
    if isinstance(obj, (list, tuple)):
        return {"__" + type(obj).__name__ + "__": [_encode(v, arrays) for v in obj]}
    if isinstance(obj, np.generic):
        return obj.item()
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    raise TypeError(f"tinynet.save cannot store an object of type {type(obj).__name__}")


def _decode(node, arrays):
    if isinstance(node, dict):
        (kind, value), = node.items()
        if kind == "__tensor__":
            return Tensor._make(arrays[value])
        if kind == "__array__":
            return arrays[value]
        if kind == "__dict__":
            return {_decode(k, arrays): _decode(v, arrays) for k, v in value}
        items = [_decode(v, arrays) for v in value]
        return tuple(items) if kind == "__tuple__" else items
    return node


def save(obj, path) -> None:
    """Write ``obj`` (a state dict, or dicts/lists of tensors, arrays and numbers)."""
    arrays: list = []
    structure = json.dumps(_encode(obj, arrays))
    named = {f"a{i}": a for i, a in enumerate(arrays)}
    named[_STRUCTURE_KEY] = np.array(structure)
    with atomic_write(path) as f:
        np.savez(f, **named)


def load(path):
    """Read what :func:`save` wrote; tensors come back on the CPU."""
    try:
        with np.load(os.fspath(path), allow_pickle=False) as archive:
            if _STRUCTURE_KEY not in archive.files:
                raise ValueError(f"{path} is not a tinynet checkpoint (no structure record)")
            structure = json.loads(str(archive[_STRUCTURE_KEY]))
            arrays = [archive[f"a{i}"] for i in range(len(archive.files) - 1)]
    except FileNotFoundError:
        raise
    except (OSError, ValueError, KeyError, EOFError) as error:
        raise ValueError(f"cannot read tinynet checkpoint {path}: {error}") from None
    return _decode(structure, arrays)
