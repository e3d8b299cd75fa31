"""Samplers: the order in which a :class:`~tinynet.data.DataLoader` visits a dataset.

The classes and their semantics are ``torch.utils.data``'s. A sampler iterates
over dataset indices (Python ints); a :class:`BatchSampler` groups another
sampler's indices into lists, one list per batch::

    list(BatchSampler(SequentialSampler(range(10)), batch_size=3, drop_last=False))
    # [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]

Random samplers take a ``generator`` where PyTorch takes a ``torch.Generator``:

* ``None``: tinynet's seeded CPU generator, looked up at each epoch, so
  :func:`tinynet.manual_seed` makes the order repeatable;
* an int: the seed of a generator of the sampler's own (the same sequence of
  epochs for the same seed, whatever else draws random numbers);
* a ``numpy.random.Generator``: used as it is, and shared with whoever else holds it.
"""
from __future__ import annotations

import itertools
import math
import numbers

import numpy as np

from .. import distributed
from ..hyperparameters import check_count
from .dataset import shuffle_generator

__all__ = ["Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler",
           "BatchSampler", "DistributedSampler", "as_generator"]

_DRAW_CHUNK = 1024
"""How many indices a :class:`RandomSampler` with replacement draws at once."""


def as_generator(where: str, generator) -> np.random.Generator | None:
    """``generator`` (None, an int seed, a :class:`tinynet.Generator`, as PyTorch
    programs pass one, or a ``numpy.random.Generator``) as a NumPy generator, or
    None for tinynet's CPU generator. TypeError for anything else."""
    from ..ops.random import Generator
    if isinstance(generator, Generator):
        return generator.rng
    if generator is None or isinstance(generator, np.random.Generator):
        return generator
    if isinstance(generator, numbers.Integral) and not isinstance(generator, bool):
        return shuffle_generator(int(generator))
    raise TypeError(f"{where}: generator must be None, an int seed, a tinynet.Generator or a "
                    f"numpy.random.Generator, got {type(generator).__name__} {generator!r}")


def _check_flag(where: str, name: str, value) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{where}: {name} must be a bool, got {type(value).__name__} {value!r}")
    return bool(value)


def _check_integer(where: str, name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{where}: {name} must be an integer, got "
                        f"{type(value).__name__} {value!r}")
    return int(value)


class Sampler:
    """The base class: subclasses define ``__iter__`` (over indices, or over
    lists of indices for a batch sampler) and usually ``__len__``."""

    def __iter__(self):
        raise NotImplementedError(f"{type(self).__name__} does not define __iter__")


class SequentialSampler(Sampler):
    """The indices ``0, 1, ..., len(data_source) - 1``, in that order, every epoch."""

    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler(Sampler):
    """Indices of ``data_source`` in a random order, a new one every epoch.

    Without ``replacement`` each epoch is a permutation of all indices; a
    ``num_samples`` above ``len(data_source)`` chains whole permutations and
    the start of one more. With ``replacement`` it draws ``num_samples``
    (default ``len(data_source)``) indices independently and uniformly, 1024
    at a time as the epoch goes: an epoch of any length
    (``num_samples=int(1e10)`` makes an endless loader) takes no memory up
    front. ``generator``: see the module's docstring.
    """

    def __init__(self, data_source, replacement: bool = False, num_samples: int | None = None,
                 generator=None):
        self.data_source = data_source
        self.replacement = _check_flag("RandomSampler", "replacement", replacement)
        if len(data_source) == 0:
            raise ValueError("RandomSampler: the data source is empty, there is nothing "
                             "to sample")
        if num_samples is not None and (isinstance(num_samples, bool) or not isinstance(
                num_samples, numbers.Integral) or num_samples <= 0):
            raise ValueError("RandomSampler: num_samples should be a positive integer value, "
                             f"but got num_samples={num_samples!r}")
        self._num_samples = None if num_samples is None else int(num_samples)
        self.generator = as_generator("RandomSampler", generator)

    @property
    def num_samples(self) -> int:
        """The number of indices per epoch."""
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        n, wanted = len(self.data_source), self.num_samples
        generator = shuffle_generator(None) if self.generator is None else self.generator
        if self.replacement:
            for start in range(0, wanted, _DRAW_CHUNK):
                yield from generator.integers(0, n, size=min(_DRAW_CHUNK, wanted - start)).tolist()
            return
        for _ in range(wanted // n):
            yield from generator.permutation(n).tolist()
        if wanted % n:
            yield from generator.permutation(n)[:wanted % n].tolist()

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given ``indices`` in a random order, a new one every epoch (no replacement)."""

    def __init__(self, indices, generator=None):
        self.indices = indices
        self.generator = as_generator("SubsetRandomSampler", generator)

    def __iter__(self):
        generator = shuffle_generator(None) if self.generator is None else self.generator
        for position in generator.permutation(len(self.indices)).tolist():
            yield self.indices[position]

    def __len__(self) -> int:
        return len(self.indices)


class BatchSampler(Sampler):
    """Lists of ``batch_size`` consecutive indices of ``sampler`` (any iterable of
    indices); the last list is shorter unless ``drop_last`` drops it."""

    def __init__(self, sampler, batch_size: int, drop_last: bool):
        self.sampler = sampler
        self.batch_size = check_count("BatchSampler", "batch_size", batch_size)
        self.drop_last = _check_flag("BatchSampler", "drop_last", drop_last)

    def __iter__(self):
        indices = iter(self.sampler)
        while batch := list(itertools.islice(indices, self.batch_size)):
            if len(batch) < self.batch_size and self.drop_last:
                return
            yield batch

    def __len__(self) -> int:
        full_batches, rest = divmod(len(self.sampler), self.batch_size)
        return full_batches + (1 if rest and not self.drop_last else 0)


class DistributedSampler(Sampler):
    """The share of ``dataset`` that one process (``rank``) of ``num_replicas``
    trains on, as ``torch.utils.data.DistributedSampler``::

        sampler = DistributedSampler(dataset)         # the process group's rank and size
        loader = DataLoader(dataset, batch_size=32, sampler=sampler)
        for epoch in range(epochs):
            sampler.set_epoch(epoch)                  # else every epoch has the same order
            for x, y in loader:
                ...

    Every rank lists the indices in the same order (shuffled by ``seed`` and the
    epoch, or ``0 .. n-1``), makes the list a multiple of ``num_replicas`` long
    (repeating indices from its start, or, with ``drop_last``, cutting its
    tail), and takes every ``num_replicas``-th index from position ``rank`` on.
    The shards are disjoint (apart from the repeats), of equal length, and
    together cover the dataset (with ``drop_last``, all but the tail).

    The shuffled order is ``numpy.random.default_rng(seed + epoch)``'s
    permutation where PyTorch draws ``torch.randperm``: the same on every rank
    for the same seed and epoch, but not PyTorch's numbers. With
    ``shuffle=False`` the shards are PyTorch's, index for index.
    """

    def __init__(self, dataset, num_replicas: int | None = None, rank: int | None = None,
                 shuffle: bool = True, seed: int = 0, drop_last: bool = False):
        where = "DistributedSampler"
        self.num_replicas = (distributed.get_world_size() if num_replicas is None
                             else check_count(where, "num_replicas", num_replicas))
        self.rank = distributed.get_rank() if rank is None else _check_integer(where, "rank", rank)
        if not 0 <= self.rank < self.num_replicas:
            raise ValueError(f"{where}: Invalid rank {self.rank}, rank should be in the "
                             f"interval [0, {self.num_replicas - 1}]")
        self.dataset = dataset
        self.epoch = 0
        self.shuffle = _check_flag(where, "shuffle", shuffle)
        self.seed = check_count(where, "seed", seed, low=0)
        self.drop_last = _check_flag(where, "drop_last", drop_last)
        size = len(dataset)
        if self.drop_last and size % self.num_replicas:
            self.num_samples = math.ceil((size - self.num_replicas) / self.num_replicas)
        else:
            self.num_samples = math.ceil(size / self.num_replicas)
        self.total_size = self.num_samples * self.num_replicas

    def __iter__(self):
        size = len(self.dataset)
        if self.shuffle:
            indices = np.random.default_rng(self.seed + self.epoch).permutation(size).tolist()
        else:
            indices = list(range(size))
        if self.drop_last:
            indices = indices[:self.total_size]
        elif self.total_size > size:
            padding = self.total_size - size
            indices += (indices * math.ceil(padding / size))[:padding]
        return iter(indices[self.rank:self.total_size:self.num_replicas])

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """Shuffle the next epoch with ``seed + epoch``: call it before each epoch."""
        self.epoch = check_count("DistributedSampler.set_epoch", "epoch", epoch, low=0)
