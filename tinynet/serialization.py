"""Saving and loading state dicts (and nested containers of them) as ``.npz``.

Every write is atomic: data goes to a temporary file in the target directory,
which is renamed over the target only when complete, so a crash mid-write
never leaves a truncated checkpoint behind (:func:`atomic_write`).

:func:`load` tells the ways a file can fail to be a checkpoint apart, naming
the file: missing (``FileNotFoundError``), truncated or corrupt, or some other
kind of file (:class:`CheckpointError`).
"""
from __future__ import annotations

import contextlib
import json
import os
import tempfile
import zipfile
import zlib

import numpy as np

from .backend import as_numpy
from .tensor import Tensor

__all__ = ["CheckpointError", "atomic_write", "save", "load"]

_STRUCTURE_KEY = "__tinynet_structure__"
_ZIP_SIGNATURE = b"PK\x03\x04"     # how every .npz that holds an array begins
_NPY_SIGNATURE = b"\x93NUMPY"


class CheckpointError(ValueError):
    """A file that :func:`load` cannot read as a tinynet checkpoint: truncated,
    corrupt, or not a checkpoint at all. The message names the file and which.

    A ``ValueError``: the file exists and opens, but its content is not a
    valid value for :func:`load` (as a malformed number is for ``float``).
    """


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


def _encode(obj, arrays: dict):
    """A JSON-able skeleton of ``obj``; arrays are set aside in ``arrays`` (by the
    id of the array, so that one shared by two entries, as a tied weight is in
    a state dict, is stored once and both entries point at it)."""
    if isinstance(obj, (Tensor, np.ndarray)) or hasattr(obj, "__cuda_array_interface__"):
        array = obj.data if isinstance(obj, Tensor) else obj
        if id(array) not in arrays:
            arrays[id(array)] = (len(arrays), array)
        kind = "tensor" if isinstance(obj, Tensor) else "array"
        return {"__" + kind + "__": arrays[id(array)][0]}
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
    arrays: dict = {}
    structure = json.dumps(_encode(obj, arrays))
    named = {f"a{i}": as_numpy(a) for i, a in arrays.values()}
    named[_STRUCTURE_KEY] = np.array(structure)
    with atomic_write(path) as f:
        np.savez(f, **named)


def load(path):
    """Read what :func:`save` wrote; tensors come back on the CPU.

    Raises ``FileNotFoundError`` when there is no file at ``path``, and
    :class:`CheckpointError` when the file is truncated or corrupt, or is not a
    tinynet checkpoint (a text file, a ``.npy``, an ``.npz`` from ``numpy.savez``).
    """
    path = os.fspath(path)
    with open(path, "rb") as file:
        start = file.read(len(_NPY_SIGNATURE))
        if not start.startswith(_ZIP_SIGNATURE):
            raise _unreadable(path, _not_an_archive(start))
        file.seek(0)
        try:
            with np.load(file, allow_pickle=False) as archive:
                if _STRUCTURE_KEY not in archive.files:
                    raise _unreadable(path, "it is not a tinynet checkpoint: an .npz archive "
                                      "without tinynet's structure record (numpy.savez "
                                      "writes such files, tinynet.save checkpoints)")
                structure = json.loads(str(archive[_STRUCTURE_KEY]))
                arrays = [archive[f"a{i}"] for i in range(len(archive.files) - 1)]
                return _decode(structure, arrays)
        except CheckpointError:
            raise
        except (zipfile.BadZipFile, zlib.error, EOFError, ValueError, KeyError, IndexError,
                NotImplementedError, OSError) as error:    # the ways a damaged zip fails
            raise _unreadable(path, f"the file is truncated or corrupt ({_describe(error)})"
                              ) from None


def _unreadable(path: str, why: str) -> CheckpointError:
    return CheckpointError(f"cannot read tinynet checkpoint {path}: {why}")


def _not_an_archive(start: bytes) -> str:
    """Why a file that does not begin as an .npz archive does is no checkpoint."""
    if not start:
        return "the file is empty (0 bytes): truncated, or never written"
    if _ZIP_SIGNATURE.startswith(start):
        return "the file is truncated, within its first zip header"
    kind = "a NumPy .npy array" if start == _NPY_SIGNATURE else "not a zip archive"
    return (f"it is not a tinynet checkpoint: tinynet.save writes .npz (zip) archives, "
            f"and this file is {kind}")


def _describe(error: Exception) -> str:
    if isinstance(error, zipfile.BadZipFile) and "not a zip file" in str(error):
        return "the zip archive's closing directory, at the file's end, is missing"
    return f"{type(error).__name__}: {error}"
