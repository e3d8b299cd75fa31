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
import numbers

import numpy as np

from ..hyperparameters import check_count
from .dataset import shuffle_generator

__all__ = ["Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler",
           "BatchSampler", "as_generator"]


def as_generator(where: str, generator) -> np.random.Generator | None:
    """``generator`` (None, an int seed or a ``numpy.random.Generator``) as a
    generator, or None for tinynet's CPU generator. TypeError for anything else."""
    if generator is None or isinstance(generator, np.random.Generator):
        return generator
    if isinstance(generator, numbers.Integral) and not isinstance(generator, bool):
        return shuffle_generator(int(generator))
    raise TypeError(f"{where}: generator must be None, an int seed or a "
                    f"numpy.random.Generator, got {type(generator).__name__} {generator!r}")


def _check_flag(where: str, name: str, value) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{where}: {name} must be a bool, got {type(value).__name__} {value!r}")
    return bool(value)


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
    (default ``len(data_source)``) indices independently and uniformly.
    ``generator``: see the module's docstring.
    """

    def __init__(self, data_source, replacement: bool = False, num_samples: int | None = None,
                 generator=None):
        self.data_source = data_source
        self.replacement = _check_flag("RandomSampler", "replacement", replacement)
        if len(data_source) == 0:
            raise ValueError("RandomSampler: the data source is empty, there is nothing "
                             "to sample")
        self._num_samples = (None if num_samples is None else
                             check_count("RandomSampler", "num_samples", num_samples))
        self.generator = as_generator("RandomSampler", generator)

    @property
    def num_samples(self) -> int:
        """The number of indices per epoch."""
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        n, wanted = len(self.data_source), self.num_samples
        generator = shuffle_generator(None) if self.generator is None else self.generator
        if self.replacement:
            yield from generator.integers(0, n, size=wanted).tolist()
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
