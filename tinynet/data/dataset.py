"""Datasets: indexable collections of examples, as in ``torch.utils.data``.

A dataset has ``__len__`` and ``__getitem__``; an item is a tuple of fields,
such as ``(image, label)``, given as NumPy arrays or numbers. The
:class:`~tinynet.data.DataLoader` asks a dataset for whole batches through
:func:`batch_getter`: it gathers the items one by one and stacks them, field
by field, unless the dataset has a ``get_batch`` method. Datasets that hold
whole arrays (:class:`TensorDataset`, :class:`~tinynet.data.MNIST`, and a
:class:`Subset` of either) have one: a fancy index per array, which is what
makes small batches cheap.

An :class:`IterableDataset` is a stream instead: it has ``__iter__`` and the
loader batches its items in the order they come.
"""
from __future__ import annotations

import collections.abc
import functools

import numpy as np

from .. import backend as _backend
from ..tensor import Tensor

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "Subset", "random_split",
           "default_collate", "batch_getter"]


class Dataset:
    """The base class: subclasses define ``__getitem__`` and ``__len__``.

    A subclass that holds whole arrays may also define ``get_batch(indices)``,
    returning the stacked fields of the items at ``indices`` (an int64 array)
    directly; :func:`batch_getter` uses it instead of gathering item by item.
    """

    def __getitem__(self, index):
        raise NotImplementedError(f"{type(self).__name__} does not define __getitem__")

    def __len__(self):
        raise NotImplementedError(f"{type(self).__name__} does not define __len__")


class IterableDataset(Dataset):
    """A dataset read as a stream, as ``torch.utils.data.IterableDataset``:
    subclasses define ``__iter__``, which yields the items, and ``__len__``
    only if they know the number.

    The :class:`~tinynet.data.DataLoader` batches the items in the order they
    come: it takes no sampler and no ``shuffle``. With ``num_workers > 0``
    every worker process iterates over its own copy of the dataset, and so
    yields every item, unless the dataset splits the items between the
    workers; :func:`~tinynet.data.get_worker_info` tells it which worker is
    asking, and is None in the main process::

        class Numbers(IterableDataset):
            def __init__(self, n):
                self.n = n

            def __iter__(self):
                worker = get_worker_info()
                if worker is None:                           # one process: all of them
                    return iter(range(self.n))
                return iter(range(worker.id, self.n, worker.num_workers))
    """

    def __iter__(self):
        raise NotImplementedError(f"{type(self).__name__} does not define __iter__")

    def __len__(self):
        raise TypeError(f"object of type '{type(self).__name__}' has no len()")

    def __bool__(self):
        return True         # truth does not ask len(), which a stream may not have


def batch_getter(dataset):
    """A function from an array of indices to the batch of ``dataset`` at them.

    It is the dataset's ``get_batch`` when it has one; otherwise it gathers
    the items one by one and stacks them with :func:`default_collate`, so any
    object with ``__getitem__`` and ``__len__`` (a list of tuples, say) works.
    """
    get_batch = getattr(dataset, "get_batch", None)
    if get_batch is not None:
        return get_batch
    return functools.partial(_gather, dataset)     # a partial pickles, for worker processes


def _gather(dataset, indices):
    return default_collate([dataset[int(i)] for i in indices])


def default_collate(items: list):
    """Stack a list of items into a batch (the NumPy side of PyTorch's ``default_collate``).

    Arrays, Tensors and numbers are stacked into one array: arrays keep their
    dtype, Python ints become int64 and Python floats float32 (tinynet's
    default dtype). Containers are collated field by field, recursively, as
    in PyTorch: tuple and list items give a tuple with one batch per field
    (a named tuple keeps its type), dict items a dict with one batch per key,
    and strings stay a list of strings.
    """
    first = items[0]
    if isinstance(first, (str, bytes)):
        return list(items)
    if isinstance(first, collections.abc.Mapping):
        return {key: default_collate([item[key] for item in items]) for key in first}
    if isinstance(first, tuple) and hasattr(first, "_fields"):
        return type(first)(*(default_collate(list(field)) for field in zip(*items, strict=True)))
    if isinstance(first, (tuple, list)):
        return tuple(default_collate(list(field)) for field in zip(*items, strict=True))
    return _stack(items)


def _stack(values: list) -> np.ndarray:
    if isinstance(values[0], Tensor):
        values = [v.array for v in values]
    dtype = np.float32 if isinstance(values[0], float) else None
    return np.stack(values, dtype=dtype)


def _as_array(data):
    """The array behind a Tensor, or ``data`` as a NumPy array (Tensors keep their device)."""
    return data.array if isinstance(data, Tensor) else np.asarray(data)


class TensorDataset(Dataset):
    """Examples given as whole arrays: item ``i`` is ``tuple(a[i] for a in arrays)``.

    Each argument is a tinynet Tensor or anything NumPy can make an array of;
    all must have the same first dimension (the number of examples)::

        dataset = TensorDataset(images, labels)
        image, label = dataset[0]
    """

    def __init__(self, *tensors):
        if not tensors:
            raise ValueError("TensorDataset needs at least one tensor")
        self.arrays = tuple(_as_array(t) for t in tensors)
        if any(a.ndim == 0 for a in self.arrays):
            raise ValueError("TensorDataset needs tensors with a first dimension, "
                             "not 0-d tensors")
        sizes = [a.shape[0] for a in self.arrays]
        if len(set(sizes)) > 1:
            raise ValueError("TensorDataset needs tensors of the same size in the first "
                             f"dimension; got sizes {sizes}")

    def __getitem__(self, index):
        return tuple(a[index] for a in self.arrays)

    def __len__(self):
        return self.arrays[0].shape[0]

    def get_batch(self, indices):
        """The items at ``indices`` (an int64 array) stacked: ``tuple(a[indices] for a in
        arrays)``, one array per field, the batch dim first.
        """
        return tuple(a[indices] for a in self.arrays)


class Subset(Dataset):
    """The examples of ``dataset`` at ``indices``, in that order (no copy).

    A subset of an array dataset keeps the fast batch path::

        train = Subset(mnist, range(55_000))
        valid = Subset(mnist, range(55_000, 60_000))
    """

    def __init__(self, dataset, indices):
        self.dataset = dataset
        self._dataset_batch = batch_getter(dataset)
        self.indices = np.asarray(indices, dtype=np.int64)
        if self.indices.ndim != 1:
            raise ValueError(f"Subset needs a 1-d list of indices, not shape {self.indices.shape}")
        n = len(dataset)
        if self.indices.size and not (0 <= self.indices.min() and self.indices.max() < n):
            bad = self.indices[(self.indices < 0) | (self.indices >= n)][0]
            raise IndexError(f"Subset index {bad} is out of range for a dataset of {n} items")

    def __getitem__(self, index):
        return self.dataset[int(self.indices[index])]

    def __len__(self):
        return self.indices.size

    def get_batch(self, indices):
        """The items at positions ``indices`` of the subset, stacked by the underlying
        dataset's batch path (one array per field, the batch dim first).
        """
        return self._dataset_batch(self.indices[indices])


def random_split(dataset, lengths, seed=None) -> list[Subset]:
    """Split ``dataset`` at random into :class:`Subset` s of the given ``lengths``.

    The lengths must add up to ``len(dataset)``. With ``seed=None`` the
    permutation comes from tinynet's seeded CPU generator
    (see :func:`tinynet.manual_seed`); an int seeds a generator of its own.
    """
    lengths = [int(n) for n in lengths]
    if sum(lengths) != len(dataset) or min(lengths, default=0) < 0:
        raise ValueError(f"random_split: lengths {lengths} (sum {sum(lengths)}) must be "
                         f"non-negative and add up to the dataset's {len(dataset)} items")
    order = shuffle_generator(seed).permutation(len(dataset))
    ends = np.cumsum(lengths)
    return [Subset(dataset, order[end - n:end]) for n, end in zip(lengths, ends, strict=True)]


def shuffle_generator(seed) -> np.random.Generator:
    """tinynet's seeded CPU generator for ``seed=None``, else ``numpy.random.default_rng(seed)``."""
    if seed is None:
        return _backend.get_backend("cpu").rng
    return np.random.default_rng(seed)
