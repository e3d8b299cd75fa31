"""The IDX files of MNIST, gzip-compressed: read with every check, written reproducibly.

An IDX file is a header, then the values::

    magic   4 bytes: 0, 0, a type code (0x08: unsigned byte), the number of dimensions
    sizes   one big-endian uint32 per dimension
    values  big-endian, in row-major (C) order

MNIST's images have the magic number 2051 (0x00000803: bytes, 3 dimensions:
count, rows, columns) and its labels 2049 (0x00000801: bytes, 1 dimension).
A file that does not hold what it should raises :class:`MNISTFormatError`,
naming the file and what is wrong.
"""
from __future__ import annotations

import gzip
import math
import zlib
from pathlib import Path

import numpy as np

from ..serialization import atomic_write

__all__ = ["MNISTFormatError", "IMAGES_MAGIC", "LABELS_MAGIC", "read_idx", "write_idx",
           "read_mnist"]

IMAGES_MAGIC = 2051
LABELS_MAGIC = 2049
IMAGE_SHAPE = (28, 28)
NUM_CLASSES = 10

_MAGIC_NAMES = {IMAGES_MAGIC: "MNIST images", LABELS_MAGIC: "MNIST labels"}
_IDX_DTYPES = {0x08: np.dtype("u1"), 0x09: np.dtype("i1"), 0x0B: np.dtype(">i2"),
               0x0C: np.dtype(">i4"), 0x0D: np.dtype(">f4"), 0x0E: np.dtype(">f8")}
_IDX_TYPE_CODES = {dtype.newbyteorder("="): code for code, dtype in _IDX_DTYPES.items()}


class MNISTFormatError(ValueError):
    """A data file that is not what it should be; the message names the file."""


def read_idx(path, magic: int | None = None) -> np.ndarray:
    """The array in a gzip-compressed IDX file, checked against its header.

    ``magic``, when given, is the magic number the file must have. The array
    is read-only for one-byte types (it shares the decompressed buffer).
    """
    path = Path(path)
    raw = _gunzip(path)
    dtype, shape, header_size = _parse_header(path, raw, magic)
    declared = math.prod(shape) * dtype.itemsize
    found = len(raw) - header_size
    if found != declared:
        problem = "truncated" if found < declared else "extra bytes at the end"
        raise MNISTFormatError(
            f"{path}: {problem}: the header declares shape {shape}, {declared} bytes of "
            f"data, but the file holds {found}")
    array = np.frombuffer(raw, dtype, offset=header_size).reshape(shape)
    return array.astype(dtype.newbyteorder("="), copy=False)


def write_idx(path, array: np.ndarray) -> None:
    """Write ``array`` as a gzip-compressed IDX file, atomically.

    The bytes depend only on the array (gzip's timestamp is 0, no file name
    is stored), so that rebuilding a file gives the same file.
    """
    array = np.asarray(array)
    code = _IDX_TYPE_CODES.get(array.dtype.newbyteorder("="))
    if code is None:
        raise TypeError(f"IDX files cannot hold {array.dtype} values")
    header = bytes([0, 0, code, array.ndim])
    header += b"".join(n.to_bytes(4, "big") for n in array.shape)
    values = np.ascontiguousarray(array, _IDX_DTYPES[code]).tobytes()
    with atomic_write(path) as file:
        file.write(gzip.compress(header + values, compresslevel=9, mtime=0))


def read_mnist(images_path, labels_path) -> tuple[np.ndarray, np.ndarray]:
    """MNIST images (uint8, N×28×28) and labels (int64, N) from a pair of IDX files.

    Checks the magic numbers, the image size, that labels are digits 0..9 and
    that both files hold the same number of examples.
    """
    images = read_idx(images_path, IMAGES_MAGIC)
    if images.shape[1:] != IMAGE_SHAPE:
        raise MNISTFormatError(f"{images_path}: images of {images.shape[1]}×"
                               f"{images.shape[2]} pixels, expected 28×28")
    labels = read_idx(labels_path, LABELS_MAGIC).astype(np.int64)
    if labels.size and labels.max() >= NUM_CLASSES:
        index = int(np.argmax(labels >= NUM_CLASSES))
        raise MNISTFormatError(f"{labels_path}: label {labels[index]} at index {index}, "
                               f"expected a digit 0..{NUM_CLASSES - 1}")
    if len(images) != len(labels):
        raise MNISTFormatError(f"{images_path} holds {len(images)} images but "
                               f"{labels_path} holds {len(labels)} labels")
    return images, labels


def _gunzip(path: Path) -> bytes:
    compressed = path.read_bytes()
    try:
        return gzip.decompress(compressed)
    except (gzip.BadGzipFile, EOFError, zlib.error) as error:
        raise MNISTFormatError(f"{path}: not a valid gzip file ({error})") from None


def _describe(magic: int) -> str:
    """A magic number with its meaning: ``2051 (type 0x08, 3 dimensions)``."""
    return f"{magic} (type 0x{magic >> 8 & 0xFF:02x}, {magic & 0xFF} dimensions)"


def _parse_header(path: Path, raw: bytes, magic: int | None):
    """(dtype, shape, header size) from an IDX header."""
    if len(raw) < 4:
        raise MNISTFormatError(f"{path}: {len(raw)} bytes, too short for an IDX header")
    found_magic = int.from_bytes(raw[:4], "big")
    if magic is not None and found_magic != magic:
        raise MNISTFormatError(
            f"{path}: magic number {_describe(found_magic)}, expected "
            f"{_describe(magic)} for {_MAGIC_NAMES.get(magic, 'this file')}")
    type_code, ndim = raw[2], raw[3]
    if raw[:2] != b"\0\0" or type_code not in _IDX_DTYPES:
        raise MNISTFormatError(f"{path}: not an IDX file (magic number {found_magic})")
    header_size = 4 + 4 * ndim
    if len(raw) < header_size:
        raise MNISTFormatError(f"{path}: truncated header: {ndim} dimensions need "
                               f"{header_size} bytes, the file holds {len(raw)}")
    shape = tuple(int.from_bytes(raw[4 + 4 * d:8 + 4 * d], "big") for d in range(ndim))
    return _IDX_DTYPES[type_code], shape, header_size
