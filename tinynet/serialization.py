"""Saving and loading any picklable object: state dicts, optimizers, whole modules.

:func:`save` writes one of two formats, both zip archives: ``format="torch"`` (the
default), PyTorch's own (:mod:`tinynet.torch_format`), which ``torch.load`` reads, so
that weights move between tinynet and PyTorch; or ``format="tinynet"``, an ``.npz``
whose ``.npy`` records are the arrays (``np.load`` reads them) and whose pickle record
is the object, referring to them. :func:`load` reads both, PyTorch's legacy format and
tinynet's earlier JSON ``.npz`` files, telling them apart by their content.

Unpickling can run arbitrary code: a pickle names functions and classes, and loading
calls them. So, as PyTorch 2.6 does, ``load`` by default (``weights_only=True``)
rebuilds only tensors, arrays, numbers, strings, bytes, None, lists, tuples, dicts,
sets, ``OrderedDict``, dtypes, and what :func:`add_safe_globals` or
:func:`safe_globals` allows; it refuses anything else by name. ``weights_only=False``
loads anything: use it only for files you trust as you would a program.

A write to a path is atomic (:func:`atomic_write`): a crash mid-write never leaves a
truncated checkpoint. A file that cannot be read raises :class:`CheckpointError`
naming the file and why: truncated, corrupt, no checkpoint, or holding what tinynet
cannot rebuild.
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import pickle
import struct
import tempfile
import zipfile
import zlib

import numpy as np

from . import torch_format, torch_writer
from .backend import as_numpy, device_of
from .nn.module import Parameter
from .tensor import Tensor
from .unpickling import (
    RefusedGlobal,
    Unpickler,
    add_safe_globals,
    clear_safe_globals,
    get_safe_globals,
    placer,
    qualified,
    safe_globals,
)

__all__ = ["CheckpointError", "atomic_write", "save", "load", "add_safe_globals",
           "clear_safe_globals", "get_safe_globals", "safe_globals"]

_PICKLE_KEY = "__tinynet_pickle__"
_STRUCTURE_KEY = "__tinynet_structure__"    # the JSON record of tinynet's earlier files
_ZIP_SIGNATURE = b"PK\x03\x04"     # how every zip archive that holds a record begins
_NPY_SIGNATURE = b"\x93NUMPY"
_Unsupported = torch_format.UnsupportedCheckpoint


class CheckpointError(ValueError):
    """A file that :func:`load` cannot read as a checkpoint: truncated, corrupt, not a
    checkpoint at all, or holding what tinynet cannot rebuild. The message names the
    file and which.

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


# ------------------------------------------------------------- tinynet's format
class _TensorData:
    """A tensor's array, so marked: loading puts it on the device map_location names."""

    def __init__(self, array):
        self.array = array


def _rebuild_tensor(data, requires_grad, parameter=False):
    if not (isinstance(data, np.ndarray) or device_of(data) == "cuda"):
        raise _Unsupported(f"a tensor's data is a {type(data).__name__}")
    if parameter:
        return Parameter(data, requires_grad=bool(requires_grad))
    return Tensor._make_leaf(data, bool(requires_grad))


_KNOWN = {**torch_format.GLOBALS, qualified(_rebuild_tensor): _rebuild_tensor}


class _TinynetPickler(pickle.Pickler):
    """Pickles with every array set aside in ``arrays`` (by id: an array that two
    entries share, as a tied weight, is stored once and comes back shared)."""

    def __init__(self, file, arrays: dict):
        super().__init__(file, protocol=4)
        self.arrays = arrays

    def persistent_id(self, obj):
        if isinstance(obj, _TensorData):
            kind, array = "tensor", obj.array
        elif isinstance(obj, np.ndarray) or device_of(obj) == "cuda":
            kind, array = "array", obj
        elif isinstance(obj, np.generic):
            kind, array = "scalar", np.asarray(obj)
        else:
            return None
        index = self.arrays.setdefault(id(array), (len(self.arrays), array))[0]
        return (kind, index, device_of(array))

    def reducer_override(self, obj):
        if isinstance(obj, Tensor):
            return _rebuild_tensor, (_TensorData(obj.array), obj.requires_grad,
                                     isinstance(obj, Parameter))
        return NotImplemented


def _write_tinynet(obj, file) -> None:
    arrays: dict = {}
    pickled = io.BytesIO()
    _TinynetPickler(pickled, arrays).dump(obj)
    named = {f"a{i}": as_numpy(a) for i, a in arrays.values()}
    named[_PICKLE_KEY] = np.frombuffer(pickled.getvalue(), np.uint8)
    np.savez(file, **named)


def _read_tinynet(archive: zipfile.ZipFile, unpickle, place):
    def record(name):
        with archive.open(name + ".npy") as member:
            return np.lib.format.read_array(member, allow_pickle=False)

    if _PICKLE_KEY + ".npy" not in archive.namelist():
        structure = json.loads(str(record(_STRUCTURE_KEY)))
        count = sum(name.startswith("a") for name in archive.namelist())
        return _decode(structure, [record(f"a{i}") for i in range(count)], place)
    arrays, placed = {}, {}

    def persistent_load(saved_id):
        kind, index, location = saved_id
        if index not in arrays:
            arrays[index] = record(f"a{int(index)}")
        if kind in ("array", "scalar"):
            return arrays[index] if kind == "array" else arrays[index][()]
        if kind != "tensor":
            raise _Unsupported(f"a record of kind {kind!r}")
        if index not in placed:
            placed[index] = place(arrays[index], location)
        return placed[index]

    return unpickle(io.BytesIO(record(_PICKLE_KEY).tobytes()), persistent_load)


def _decode(node, arrays, place):
    """The object of a JSON structure record (tinynet's earlier format)."""
    if isinstance(node, dict):
        (kind, value), = node.items()
        if kind == "__tensor__":
            return Tensor._make(place(arrays[value], "cpu"))
        if kind == "__array__":
            return arrays[value]
        if kind == "__dict__":
            return {_decode(k, arrays, place): _decode(v, arrays, place) for k, v in value}
        items = [_decode(v, arrays, place) for v in value]
        return tuple(items) if kind == "__tuple__" else items
    return node


# ------------------------------------------------------------------ save / load
def save(obj, f, format: str = "torch") -> None:
    """Write any picklable ``obj`` to ``f``, a path (written atomically) or a binary
    file object, as ``torch.save``.

    ``format="torch"`` (the default) writes PyTorch's zip format, which
    ``torch.load`` reads (with ``weights_only=True`` for state dicts, optimizer
    states, and containers of tensors and numbers; NumPy arrays in it are saved as
    tensors, NumPy scalars as Python numbers); ``format="tinynet"`` tinynet's
    ``.npz`` archive, which keeps NumPy arrays and scalars as they are.
    """
    if format not in ("tinynet", "torch"):
        raise ValueError(f"unknown checkpoint format {format!r}: expected 'tinynet' or 'torch'")
    path = os.fspath(f) if isinstance(f, (str, os.PathLike)) else None

    def write(file):
        if format == "tinynet":
            return _write_tinynet(obj, file)
        folder = os.path.splitext(os.path.basename(path))[0] if path else ""
        torch_writer.write_zip(obj, file, folder or "archive")

    if path is None:
        buffer = io.BytesIO()
        write(buffer)
        f.write(buffer.getvalue())
        return
    with atomic_write(path) as file:
        write(file)


def load(f, map_location=None, *, weights_only=True, mmap=None):
    """Read what :func:`save` or ``torch.save`` wrote to ``f`` (a path or a binary file
    object), as ``torch.load``.

    ``map_location`` puts tensors on a device, as ``torch.load``'s: None (where they
    were saved), a device (``'cpu'``, ``'cuda'``), a dict from saved locations to new
    ones, or a function ``(storage, location)`` returning the storage (a 1-d tensor)
    moved, or None to leave it where it was saved.

    ``weights_only`` (True by default, and for None) rebuilds only tensors, arrays,
    numbers, strings, bytes, None, lists, tuples, dicts, sets, ``OrderedDict``, dtypes
    and what :func:`add_safe_globals` allows, and refuses any other class or function
    the file names with ``pickle.UnpicklingError``, naming it. ``weights_only=False``
    loads anything, and so runs any code the file names: only for files you trust.
    ``mmap`` is accepted for ``torch.load``'s sake; storages are read into memory.

    Raises ``FileNotFoundError`` when there is no file at ``f``, and
    :class:`CheckpointError` when the file is truncated or corrupt, is no checkpoint
    (a text file, a ``.npy``, an ``.npz`` from ``numpy.savez``), or holds what tinynet
    cannot rebuild.
    """
    path = os.fspath(f) if isinstance(f, (str, os.PathLike)) else None
    name = path if path is not None else str(getattr(f, "name", f"<{type(f).__name__}>"))
    with contextlib.ExitStack() as stack:
        if path is not None:
            file = stack.enter_context(open(path, "rb"))
        else:
            file = f if getattr(f, "seekable", lambda: False)() else io.BytesIO(f.read())
        try:
            return _read(file, name, placer(map_location), weights_only is not False)
        except CheckpointError:
            raise
        except RefusedGlobal as error:
            raise pickle.UnpicklingError(f"{name}: {error}") from None
        except _Unsupported as error:
            raise _unreadable(name, str(error)) from None
        except (zipfile.BadZipFile, zlib.error, EOFError, ValueError, KeyError, IndexError,
                TypeError, AttributeError, NotImplementedError, OSError, MemoryError,
                struct.error, pickle.UnpicklingError) as error:    # how damaged files fail
            raise _unreadable(name, f"the file is truncated or corrupt ({_describe(error)})"
                              ) from None


def _read(file, name: str, place, weights_only: bool):
    start = file.tell()
    head = file.read(len(torch_format.LEGACY_SIGNATURE))
    file.seek(start)

    def unpickle(stream, persistent_load):
        return Unpickler(stream, persistent_load, weights_only, _KNOWN).load()

    if head == torch_format.LEGACY_SIGNATURE:
        return torch_format.read_legacy(file, unpickle, place)
    if not head.startswith(_ZIP_SIGNATURE):
        raise _unreadable(name, _not_an_archive(head))
    with zipfile.ZipFile(file) as archive:
        names = archive.namelist()
        if torch_format.archive_prefix(names) is not None:
            return torch_format.read_zip(archive, unpickle, place)
        if {_PICKLE_KEY + ".npy", _STRUCTURE_KEY + ".npy"} & set(names):
            return _read_tinynet(archive, unpickle, place)
    raise _unreadable(name, "it is not a tinynet checkpoint: a zip archive with neither "
                      "tinynet's records nor PyTorch's data.pkl (numpy.savez writes such "
                      "files, tinynet.save and torch.save checkpoints)")


def _unreadable(name: str, why: str) -> CheckpointError:
    return CheckpointError(f"cannot read checkpoint {name}: {why}")


def _not_an_archive(head: bytes) -> str:
    """Why a file that begins as no checkpoint does is no checkpoint."""
    if not head:
        return "the file is empty (0 bytes): truncated, or never written"
    if _ZIP_SIGNATURE.startswith(head) or torch_format.LEGACY_SIGNATURE.startswith(head):
        return "the file is truncated, within its first header"
    kind = ("a NumPy .npy array" if head.startswith(_NPY_SIGNATURE) else
            "not a zip archive (nor PyTorch's legacy format)")
    return (f"it is not a tinynet checkpoint: tinynet.save and torch.save write zip "
            f"archives, and this file is {kind}")


def _describe(error: Exception) -> str:
    if isinstance(error, zipfile.BadZipFile) and "not a zip file" in str(error):
        return "the zip archive's closing directory, at the file's end, is missing"
    return f"{type(error).__name__}: {error}"
