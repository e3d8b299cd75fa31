"""PyTorch's checkpoint format, read and written without PyTorch.

``torch.save`` (since PyTorch 1.6) writes a zip archive of stored, uncompressed
records, all in one top-level folder (``archive/`` for a file object, the file's
stem for a path)::

    archive/data.pkl        the object, pickled (protocol 2). Each tensor in it is the call
                            torch._utils._rebuild_tensor_v2(storage, offset, size, stride,
                            requires_grad, OrderedDict()), and each storage a persistent id
                            ('storage', torch.FloatStorage, key, 'cpu', numel)
    archive/data/<key>      the storage's bytes: numel elements of its type, one after another
    archive/byteorder       'little' or 'big': the byte order of those elements
    archive/version         the format's version, '3'
    archive/.format_version, archive/.storage_alignment, archive/.data/serialization_id
                            PyTorch's bookkeeping (data records start at multiples of 64)

A tensor is a strided view of its storage: element ``[i, j]`` of a tensor with
offset ``o`` and stride ``(s0, s1)`` is ``storage[o + i*s0 + j*s1]``, so tensors that
view one storage (``x`` and ``x.t()``, the rows of a matrix) share its memory.
uint16/32/64 tensors are ``_rebuild_tensor_v3(..., dtype)`` of an untyped storage
(``torch.storage.UntypedStorage``, counted in bytes).

The legacy format (every file before PyTorch 1.6, and ``torch.save(...,
_use_new_zipfile_serialization=False)``) is a stream of pickles: the magic number,
the protocol version 1001, a dict of system information, the object (its storage ids
carry a sixth field, a view of the storage or None), the list of storage keys; then
each storage, in that order, as an int64 element count followed by its bytes.

:func:`read_zip` and :func:`read_legacy` rebuild tensors as tinynet tensors over
NumPy (or CuPy) arrays; :func:`write_zip` writes the zip format.
:mod:`tinynet.serialization` chooses among them and does the (restricted) unpickling.
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

__all__ = ["GLOBALS", "LEGACY_SIGNATURE", "UnsupportedCheckpoint", "Storage",
           "archive_prefix", "read_legacy", "read_zip", "write_zip"]

LEGACY_MAGIC = 0x1950A86A20F9469CFC6C
LEGACY_SIGNATURE = pickle.dumps(LEGACY_MAGIC, protocol=2)   # how a legacy file begins
ALIGNMENT = 64

# PyTorch's dtypes by name (NumPy's names too, but bfloat16) and their storage classes.
# NumPy has no bfloat16: its storages are widened to float32 on loading.
_STORAGE_CLASSES = {
    "float32": "FloatStorage", "float64": "DoubleStorage", "float16": "HalfStorage",
    "bfloat16": "BFloat16Storage", "int64": "LongStorage", "int32": "IntStorage",
    "int16": "ShortStorage", "int8": "CharStorage", "uint8": "ByteStorage",
    "bool": "BoolStorage", "complex64": "ComplexFloatStorage",
    "complex128": "ComplexDoubleStorage",
}
_UNSIGNED = ("uint16", "uint32", "uint64")      # no storage class: untyped storages


class UnsupportedCheckpoint(Exception):
    """A checkpoint that holds something tinynet cannot rebuild (the message says what)."""


class StorageType:
    """A storage class of PyTorch (``torch.FloatStorage``...): the type of its elements."""

    def __init__(self, dtype: str):
        self.dtype = dtype


class Storage:
    """One storage of a checkpoint: a flat NumPy or CuPy array that its tensors view."""

    def __init__(self, array):
        self.array = array

    def view(self, offset: int, size, stride):
        """The array ``storage[offset + sum(i_k * stride_k)]`` of shape ``size``, sharing
        the storage's memory; refused if it would reach outside the storage."""
        size, stride = tuple(int(n) for n in size), tuple(int(s) for s in stride)
        xp = get_array_module(self.array)
        if 0 in size:
            return xp.zeros(size, self.array.dtype)
        last = offset + sum((n - 1) * s for n, s in zip(size, stride, strict=True))
        if offset < 0 or min(stride, default=0) < 0 or last >= self.array.size:
            raise UnsupportedCheckpoint(
                f"a tensor (offset {offset}, size {size}, stride {stride}) reaches element "
                f"{last} of a storage of {self.array.size}: the file is corrupt")
        steps = tuple(s * self.array.dtype.itemsize for s in stride)
        return xp.lib.stride_tricks.as_strided(self.array[offset:], size, steps)


def _storage_array(raw, dtype: str, byteorder: str) -> np.ndarray:
    """A writable, native-order NumPy array of the elements in ``raw`` (bytes or a buffer)."""
    order = "<" if byteorder == "little" else ">"
    if dtype == "bfloat16":     # the upper half of a float32: widen by a 16-bit shift
        bits = np.frombuffer(raw, order + "u2").astype(np.uint32)
        return (bits << 16).view(np.float32)
    return np.frombuffer(raw, np.dtype(dtype).newbyteorder(order)).astype(dtype)


# ------------------------------------------------------------------ rebuilding
def _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad=False,
                       backward_hooks=None, metadata=None, dtype=None):
    """A tensor viewing ``storage`` (seen as ``dtype`` when that is given)."""
    if not isinstance(storage, Storage):
        raise UnsupportedCheckpoint(f"a tensor's storage is a {type(storage).__name__}")
    if metadata:
        raise UnsupportedCheckpoint(f"tensors with conjugate or negative bits ({metadata})")
    if dtype is not None:
        storage = Storage(storage.array.view(np.dtype(dtype)))
    return Tensor._make_leaf(storage.view(storage_offset, size, stride), bool(requires_grad))


def _rebuild_tensor_v3(storage, storage_offset, size, stride, requires_grad, backward_hooks,
                       dtype, metadata=None):
    return _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad,
                              backward_hooks, metadata, dtype)


def _rebuild_parameter(data, requires_grad, backward_hooks, state=None):
    if state:
        raise UnsupportedCheckpoint(f"parameters with attributes ({sorted(state)})")
    return Parameter(data, requires_grad=bool(requires_grad))


def _rebuild_from_type_v2(func, new_type, args, state):
    """A tensor of ``new_type`` (Tensor or Parameter), as ``func(*args)`` builds it."""
    if (func not in (_rebuild_tensor_v2, _rebuild_tensor_v3, _rebuild_parameter)
            or new_type not in (Tensor, Parameter) or state):
        raise UnsupportedCheckpoint(f"tensors of type {new_type} with attributes {state}")
    tensor = func(*args)
    if new_type is Parameter and not isinstance(tensor, Parameter):
        tensor = Parameter(tensor, requires_grad=tensor.requires_grad)
    return tensor


def _device(kind, index=None) -> str:
    """``torch.device('cuda', 0)`` as tinynet names devices: ``'cuda:0'``."""
    return str(kind) if index is None else f"{kind}:{index}"


GLOBALS = {
    "torch._utils._rebuild_tensor_v2": _rebuild_tensor_v2,
    "torch._utils._rebuild_tensor_v3": _rebuild_tensor_v3,
    "torch._utils._rebuild_tensor": _rebuild_tensor_v2,
    "torch._utils._rebuild_parameter": _rebuild_parameter,
    "torch._utils._rebuild_parameter_with_state": _rebuild_parameter,
    "torch._tensor._rebuild_from_type_v2": _rebuild_from_type_v2,
    "torch.Tensor": Tensor,
    "torch.nn.parameter.Parameter": Parameter,
    "torch.Size": tuple,
    "torch.device": _device,
    "torch.storage.UntypedStorage": StorageType("uint8"),
    **{f"torch.{name}": StorageType(dtype) for dtype, name in _STORAGE_CLASSES.items()},
    **{f"torch.{dtype}": np.dtype("float32" if dtype == "bfloat16" else dtype).type
       for dtype in (*_STORAGE_CLASSES, *_UNSIGNED)},
}
"""What the names in a PyTorch checkpoint mean to tinynet: rebuilding functions, storage
classes, dtypes (as NumPy's), ``torch.Size`` (a tuple) and ``torch.device`` (a string)."""


# -------------------------------------------------------------------- reading
def archive_prefix(names) -> str | None:
    """The top-level folder of a PyTorch zip checkpoint (``'archive/'``), or None."""
    for name in names:
        folder, _, rest = name.partition("/")
        if rest == "data.pkl":
            return folder + "/"
    return None


def _storage_dtype(storage_type) -> str:
    if not isinstance(storage_type, StorageType):
        raise UnsupportedCheckpoint(f"a storage of type {storage_type!r}")
    return storage_type.dtype


def read_zip(archive: zipfile.ZipFile, unpickle, place):
    """The object in a zip checkpoint. ``unpickle(file, persistent_load)`` unpickles;
    ``place(array, location)`` puts a storage's array on its device."""
    prefix = archive_prefix(archive.namelist())
    byteorder = "little"
    if prefix + "byteorder" in archive.namelist():
        byteorder = archive.read(prefix + "byteorder").decode("ascii").strip()
    storages = {}

    def persistent_load(saved_id):
        kind, storage_type, key, location, numel = saved_id
        if key not in storages:
            raw = archive.read(f"{prefix}data/{key}")
            array = _storage_array(raw, _storage_dtype(storage_type), byteorder)
            if kind != "storage" or array.size != numel:
                raise UnsupportedCheckpoint(f"storage {key} holds {array.size} elements, "
                                            f"not {numel}: the file is corrupt")
            storages[key] = Storage(place(array, location))
        return storages[key]

    return unpickle(io.BytesIO(archive.read(prefix + "data.pkl")), persistent_load)


def read_legacy(file, unpickle, place):
    """The object in a legacy (pre-zip) checkpoint, read from ``file`` onto the CPU."""
    magic, version, system = (unpickle(file, None) for _ in range(3))
    if (magic, version) != (LEGACY_MAGIC, 1001):
        raise UnsupportedCheckpoint(f"legacy format version {version} (tinynet reads 1001)")
    byteorder = "little" if system.get("little_endian", True) else "big"
    roots = {}      # storage key -> (dtype, Storage), filled after the object is read

    def persistent_load(saved_id):
        kind, storage_type, key, location, numel, view = saved_id
        if kind != "storage":
            raise UnsupportedCheckpoint("a whole PyTorch module: load a state_dict instead")
        if key not in roots:
            dtype = _storage_dtype(storage_type)
            array = np.zeros(numel, "float32" if dtype == "bfloat16" else dtype)
            if place(array, location) is not array:
                raise UnsupportedCheckpoint("legacy-format checkpoints load onto the CPU "
                                            "only: pass map_location='cpu'")
            roots[key] = (dtype, Storage(array))
        storage = roots[key][1]
        if view is not None:
            _, offset, view_size = view
            storage = Storage(storage.array[offset:offset + view_size])
        return storage

    result = unpickle(file, persistent_load)
    for key in unpickle(file, None):
        dtype, storage = roots[key]
        (count,) = struct.unpack("<q", file.read(8))
        nbytes = count * (2 if dtype == "bfloat16" else storage.array.dtype.itemsize)
        raw = file.read(nbytes)
        if count != storage.array.size or len(raw) != nbytes:
            raise EOFError(f"storage {key} is cut short")
        storage.array[...] = _storage_array(raw, dtype, byteorder)
    return result


# -------------------------------------------------------------------- writing
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
