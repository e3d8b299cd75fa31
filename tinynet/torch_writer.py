"""Writing PyTorch's checkpoint format, as ``torch.save`` does (the format's layout:
:mod:`tinynet.torch_format`): tensors as ``_rebuild_tensor_v2`` calls over storages,
the storages' bytes as records of their own.
"""
from __future__ import annotations

import io
import os
import pickle
import struct
import zipfile
from collections import OrderedDict

import numpy as np

from .backend import as_numpy, device_of, get_array_module
from .nn.module import Parameter
from .tensor import Tensor
from .torch_format import _STORAGE_CLASSES, _UNSIGNED, ALIGNMENT

__all__ = ["write_zip"]


class _TorchName:
    """A name of PyTorch's (``torch._utils._rebuild_tensor_v2``), pickled as that global."""

    def __init__(self, qualified: str):
        self.module, _, self.name = qualified.rpartition(".")

    def __call__(self, *args):      # the pickler takes only callables for reductions
        raise TypeError(f"{self.module}.{self.name} is PyTorch's; tinynet only names it")


_NAMES: dict[str, _TorchName] = {}


def _torch(qualified: str) -> _TorchName:
    """One object per name, so that the pickle names each once and then refers to it."""
    return _NAMES.setdefault(qualified, _TorchName(qualified))


class _StorageRef:
    """A storage being saved: persistent id ``('storage', type, key, location, numel)``."""

    def __init__(self, key: str, array, location: str):
        self.key, self.array, self.location = key, array, location


_DTYPE_NAMES = {np.dtype(name).type: name for name in (*_STORAGE_CLASSES, *_UNSIGNED)
                if name != "bfloat16"}


def _torch_dtype(obj) -> str | None:
    """PyTorch's name for a NumPy dtype or scalar type (``np.float32`` -> ``'float32'``)."""
    obj = obj.type if isinstance(obj, np.dtype) else obj
    return _DTYPE_NAMES.get(obj) if isinstance(obj, type) else None


class _TorchPickler(pickle._Pickler):
    """Pickles as ``torch.save`` does: tensors as ``_rebuild_tensor_v2`` of a storage.

    The Python implementation of the pickler, because it can write a global (``torch
    FloatStorage``) that does not import here; the C one checks that every global does.
    NumPy arrays are saved as tensors, NumPy scalars as Python numbers, NumPy dtypes
    as PyTorch's, so that ``torch.load(weights_only=True)`` accepts them.
    """

    dispatch = dict(pickle._Pickler.dispatch)

    def __init__(self, file):
        super().__init__(file, protocol=2)
        self.saved: list[_StorageRef] = []          # in order of their keys
        self.by_id: dict[int, _StorageRef] = {}     # by id of the array they save
        self.kept = []                              # keeps those ids in use

    def _save_torch_name(self, obj: _TorchName):
        self.write(pickle.GLOBAL + f"{obj.module}\n{obj.name}\n".encode("utf-8"))
        self.memoize(obj)

    dispatch[_TorchName] = _save_torch_name

    def save(self, obj, save_persistent_id=True):
        if isinstance(obj, np.generic):
            obj = obj.item()
        elif (dtype := _torch_dtype(obj)) is not None:
            obj = _torch(f"torch.{dtype}")
        super().save(obj, save_persistent_id)

    def persistent_id(self, obj):
        if not isinstance(obj, _StorageRef):
            return None
        dtype = obj.array.dtype.name
        if dtype in _UNSIGNED:
            kind, numel = "torch.storage.UntypedStorage", obj.array.nbytes
        else:
            kind, numel = f"torch.{_STORAGE_CLASSES[dtype]}", obj.array.size
        return ("storage", _torch(kind), obj.key, obj.location, int(numel))

    def reducer_override(self, obj):
        if isinstance(obj, Parameter):
            return (_torch("torch._utils._rebuild_parameter"),
                    (Tensor._make(obj.array), obj.requires_grad, OrderedDict()))
        if isinstance(obj, (Tensor, np.ndarray)) or device_of(obj) == "cuda":
            array = obj.array if isinstance(obj, Tensor) else obj
            storage, offset, stride = self._storage_of(array)
            args = (storage, offset, tuple(array.shape), stride,
                    bool(getattr(obj, "requires_grad", False)), OrderedDict())
            if array.dtype.name in _UNSIGNED:
                return _torch("torch._utils._rebuild_tensor_v3"), (*args, array.dtype)
            return _torch("torch._utils._rebuild_tensor_v2"), args
        return NotImplemented

    def _storage_of(self, array):
        """(storage, offset, stride): the array as a view of the NumPy array whose memory
        it lives in, a storage that every tensor viewing that memory shares; else all of a
        storage of its own (a contiguous copy of it, if it is not contiguous)."""
        owner, itemsize = array, array.dtype.itemsize
        root = _memory_root(array) if device_of(array) == "cpu" else array
        start = _address(array) - _address(root) if root is not array else 0
        if not (root.dtype == array.dtype and root.flags.c_contiguous and start % itemsize == 0
                and all(s >= 0 and s % itemsize == 0 for s in array.strides)):
            if not array.flags.c_contiguous:        # negative strides, CuPy views...
                array = get_array_module(array).ascontiguousarray(array)
            root, start = array, 0
        stride = tuple(s // itemsize for s in array.strides)
        key = root if root is not array else owner      # a copy is made once per array copied
        return self._storage(root, key), start // itemsize, stride

    def _storage(self, array, key) -> _StorageRef:
        """The storage of ``array``, made once per ``key`` (the array, or the one it copies)."""
        if id(key) not in self.by_id:
            if _torch_dtype(array.dtype) is None:
                raise TypeError(f"PyTorch's format has no dtype {array.dtype} "
                                "(tinynet's own format saves it)")
            self.kept.append(key)
            location = "cuda:0" if device_of(array) == "cuda" else "cpu"
            self.by_id[id(key)] = _StorageRef(str(len(self.saved)), array, location)
            self.saved.append(self.by_id[id(key)])
        return self.by_id[id(key)]


def _memory_root(array: np.ndarray) -> np.ndarray:
    """The outermost NumPy array whose memory ``array`` views (through slices, transposes,
    ``as_strided``), or ``array`` itself."""
    root, base = array, array.base
    while base is not None:
        root = base if isinstance(base, np.ndarray) else root
        base = getattr(base, "base", None)
    return root


def _address(array: np.ndarray) -> int:
    return array.__array_interface__["data"][0]


def write_zip(obj, file, folder: str = "archive") -> None:
    """Write ``obj`` to the seekable binary ``file`` as ``torch.save`` does."""
    pickled = io.BytesIO()
    pickler = _TorchPickler(pickled)
    pickler.dump(obj)
    with zipfile.ZipFile(file, "w", zipfile.ZIP_STORED) as archive:
        _add(archive, f"{folder}/data.pkl", pickled.getvalue())
        _add(archive, f"{folder}/.format_version", b"1")
        _add(archive, f"{folder}/.storage_alignment", str(ALIGNMENT).encode())
        _add(archive, f"{folder}/byteorder", b"little")
        for storage in pickler.saved:
            little = storage.array.dtype.newbyteorder("<")
            data = as_numpy(storage.array).astype(little, copy=False).tobytes()
            _add(archive, f"{folder}/data/{storage.key}", data, aligned=True)
        _add(archive, f"{folder}/version", b"3\n")
        _add(archive, f"{folder}/.data/serialization_id", os.urandom(20).hex().encode())


def _add(archive: zipfile.ZipFile, name: str, data: bytes, aligned: bool = False) -> None:
    """Store a record; an aligned one gets an extra field that pads its data to 64 bytes,
    as PyTorch's (``torch.load(mmap=True)`` maps storages in place)."""
    info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
    if aligned:
        start = archive.fp.tell() + 30 + len(name.encode()) + 4
        padding = -start % ALIGNMENT
        info.extra = struct.pack("<HH", 0x4246, padding) + b"Z" * padding
    archive.writestr(info, data)
