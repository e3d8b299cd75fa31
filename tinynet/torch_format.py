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
NumPy (or CuPy) arrays; :func:`tinynet.torch_writer.write_zip` writes the zip format.
:mod:`tinynet.serialization` chooses among them and does the (restricted) unpickling.
"""
from __future__ import annotations

import io
import pickle
import struct
import zipfile

import numpy as np

from .backend import get_array_module
from .nn.module import Parameter
from .tensor import Tensor

__all__ = ["GLOBALS", "LEGACY_SIGNATURE", "UnsupportedCheckpoint", "Storage",
           "archive_prefix", "read_legacy", "read_zip"]

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
