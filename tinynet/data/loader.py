"""DataLoader: a dataset in (shuffled) mini-batches of tinynet Tensors."""
from __future__ import annotations

import copy
import functools
import itertools
import math
import multiprocessing
import multiprocessing.context

import numpy as np

from ..hyperparameters import check_count, check_real
from ..tensor import Tensor
from .dataset import IterableDataset, batch_getter, default_collate, shuffle_generator
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler, as_generator
from .worker_pool import MultiProcessingDataLoaderIter
from .workers import get_worker_info

__all__ = ["DataLoader", "get_worker_info", "default_collate"]   # torch's dataloader module


class DataLoader:
    """Iterate over ``dataset`` in batches, as ``torch.utils.data.DataLoader``::

        loader = DataLoader(TensorDataset(images, labels), batch_size=32, shuffle=True)
        for x, y in loader:        # x: float32 (32, 784), y: int64 (32,)
            ...

    Each batch has the structure of the dataset's items: a tuple of Tensors
    for tuple items (one per field, stacked), a dict for dict items, else a
    single Tensor (see :func:`~tinynet.data.default_collate`). The last batch
    is smaller when ``batch_size`` does not divide the dataset, unless
    ``drop_last=True`` drops it.

    The order comes from a sampler, as in PyTorch: ``shuffle=True`` makes a
    :class:`~tinynet.data.RandomSampler` (a new order every epoch, every
    ``iter``), else a :class:`~tinynet.data.SequentialSampler`; ``sampler``
    gives one of your own (not together with ``shuffle``), ``batch_sampler``
    one that yields whole lists of indices (not together with ``batch_size``,
    ``shuffle``, ``sampler`` or ``drop_last``). An
    :class:`~tinynet.data.IterableDataset` takes none of these: its items are
    batched in the order it yields them.

    ``generator`` (``seed`` is tinynet's name for the same) drives the
    shuffling: ``None`` for tinynet's seeded CPU generator, so
    :func:`tinynet.manual_seed` makes the order repeatable; an int seed or a
    ``numpy.random.Generator`` for a generator of the loader's own, the same
    sequence of epochs for the same seed whatever else draws numbers.

    ``collate_fn=None`` gathers each batch whole, by one fancy index per array
    of an array dataset (see :func:`~tinynet.data.dataset.batch_getter`), and
    wraps the arrays in Tensors. A ``collate_fn`` of your own receives the
    list of items, ``[dataset[i] for i in batch]``, and the loader yields what
    it returns.

    ``num_workers > 0`` makes the batches in that many worker processes (the
    mechanism is in :mod:`tinynet.data.workers`), still yielded in the
    sampler's order (``in_order=False``: as they are ready). Each worker first
    seeds ``random``, NumPy's global generator and tinynet's with its own
    seed, new every epoch and repeatable under :func:`tinynet.manual_seed` or
    ``generator``, and runs ``worker_init_fn(worker_id)``;
    :func:`~tinynet.data.get_worker_info` tells code running in a worker
    which one it is. ``prefetch_factor`` (default 2) batches per worker are
    asked for ahead; ``persistent_workers`` keeps the workers from one epoch
    to the next; ``timeout`` (seconds, 0 for no limit) bounds the wait for
    one batch. ``multiprocessing_context``
    ('fork', 'spawn', 'forkserver' or a context) says how workers start:
    'fork' on Linux by default, as PyTorch; the others pickle the dataset,
    ``collate_fn`` and ``worker_init_fn`` over to each worker. Without workers
    these options must keep their defaults, except ``worker_init_fn`` and
    ``timeout``, which are ignored, as in PyTorch. Workers pay off when making
    an item costs more than pickling it (reading files, decoding, augmenting):
    a batch of an in-memory array dataset is one fancy index per array, and a
    worker would gather it the same way and then send it back through a pipe.

    ``pin_memory`` is accepted and does nothing: batches are made in CPU
    memory and moved with ``.to(device)``.
    """

    def __init__(self, dataset, batch_size: int | None = 1, shuffle: bool | None = None,
                 sampler=None, batch_sampler=None, num_workers: int = 0, collate_fn=None,
                 pin_memory: bool = False, drop_last: bool = False, timeout: float = 0,
                 worker_init_fn=None, multiprocessing_context=None, generator=None, *,
                 prefetch_factor: int | None = None, persistent_workers: bool = False,
                 pin_memory_device: str = "", in_order: bool = True, seed=None):
        self.num_workers, self.prefetch_factor, self.multiprocessing_context = \
            _check_worker_options(num_workers, timeout, multiprocessing_context,
                                  prefetch_factor, persistent_workers)
        if seed is not None and generator is not None:
            raise ValueError("DataLoader: give generator or seed (its other name), not both")
        self._generator = as_generator("DataLoader", generator if seed is None else seed)
        if isinstance(dataset, IterableDataset):
            _check_iterable_options(shuffle, sampler, batch_sampler)
        shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            raise ValueError("DataLoader: sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("DataLoader: batch_sampler option is mutually exclusive "
                                 "with batch_size, shuffle, sampler, and drop_last")
            batch_size, drop_last = None, False
        else:
            batch_size = check_count("DataLoader", "batch_size", batch_size)
        if sampler is None:
            if isinstance(dataset, IterableDataset):
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=self._generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, bool(drop_last))

        self.dataset = dataset
        self.batch_size = batch_size
        self.drop_last = bool(drop_last)
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.collate_fn = collate_fn
        self.pin_memory = bool(pin_memory)
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.persistent_workers = bool(persistent_workers)
        self.in_order = in_order
        self._iterator = None           # the workers kept by persistent_workers
        self._epochs_begun = 0

    def __len__(self) -> int:
        """The number of batches in one epoch (of an IterableDataset: from its ``len``)."""
        if isinstance(self.dataset, IterableDataset):
            items = len(self.dataset)
            return items // self.batch_size if self.drop_last else math.ceil(
                items / self.batch_size)
        return len(self.batch_sampler)

    def __iter__(self):
        if self.num_workers == 0:
            return self._single_process_batches()
        if not self.persistent_workers:
            return self._worker_batches()
        if self._iterator is None or self._iterator.closed:
            self._iterator = self._worker_batches()
        else:
            self._iterator.reset(iter(self.batch_sampler))
        return self._iterator

    def _single_process_batches(self):
        fetch = _make_fetcher(self.dataset, self.collate_fn, self.batch_size, self.drop_last)
        if isinstance(self.dataset, IterableDataset):
            while True:
                try:
                    batch = fetch(None)
                except StopIteration:
                    return
                yield batch
        for indices in self.batch_sampler:
            yield fetch(indices)

    def _worker_batches(self) -> MultiProcessingDataLoaderIter:
        make_fetcher = functools.partial(_make_fetcher, collate_fn=self.collate_fn,
                                         batch_size=self.batch_size, drop_last=self.drop_last)
        return MultiProcessingDataLoaderIter(
            self.dataset, make_fetcher, iter(self.batch_sampler),
            num_workers=self.num_workers, prefetch_factor=self.prefetch_factor,
            persistent_workers=self.persistent_workers, timeout=self.timeout,
            worker_init_fn=self.worker_init_fn, context=self.multiprocessing_context,
            base_seed=self._next_base_seed(), in_order=self.in_order)

    def _next_base_seed(self) -> int:
        """The seed of the next epoch's workers (worker ``i`` gets it plus ``i``).

        It hashes a number drawn from a *copy* of the loader's generator with
        the count of epochs begun: repeatable under :func:`tinynet.manual_seed`
        or a seeded generator, new every epoch, and the generator itself is
        left as it was, so that a shuffled epoch has the order it has with
        ``num_workers=0``.
        """
        self._epochs_begun += 1
        drawn = int(copy.deepcopy(self.generator).integers(2**63))
        state = np.random.SeedSequence([drawn, self._epochs_begun]).generate_state(1, np.uint64)
        return int(state[0] >> np.uint64(1))

    @property
    def generator(self) -> np.random.Generator:
        """The generator that ``shuffle=True`` draws from: the loader's own, or
        tinynet's CPU generator (never None, unlike PyTorch's attribute)."""
        return shuffle_generator(None) if self._generator is None else self._generator

    def generator_state(self) -> dict:
        """The shuffling generator's state: save it to resume an epoch's order later."""
        return self.generator.bit_generator.state

    def set_generator_state(self, state: dict) -> None:
        """Restore a state from :meth:`generator_state`; the next epoch repeats that order."""
        self.generator.bit_generator.state = state


class _InfiniteConstantSampler(Sampler):
    """None for ever: the sampler of an IterableDataset, whose items come in their order."""

    def __iter__(self):
        return itertools.repeat(None)


def _check_worker_options(num_workers, timeout, multiprocessing_context, prefetch_factor,
                          persistent_workers):
    """``(num_workers, prefetch_factor, context)`` checked as PyTorch checks them.

    Without workers the options that PyTorch refuses are refused, and
    ``timeout`` and ``worker_init_fn`` are ignored. With workers
    ``prefetch_factor`` defaults to 2 and a start method's name becomes its
    context; None stays None (the default context, chosen at each ``iter``).
    """
    workers = check_count("DataLoader", "num_workers", num_workers, low=0)
    check_real("DataLoader", "timeout", timeout, low=0)
    if workers == 0:
        for name, value, default in (("multiprocessing_context", multiprocessing_context, None),
                                     ("prefetch_factor", prefetch_factor, None),
                                     ("persistent_workers", persistent_workers, False)):
            if value != default:
                raise ValueError(f"DataLoader: {name}={value!r} applies to worker processes, "
                                 "and this DataLoader has none (num_workers=0)")
        return 0, None, None
    prefetch = 2 if prefetch_factor is None else check_count("DataLoader", "prefetch_factor",
                                                             prefetch_factor)
    context = multiprocessing_context
    if isinstance(context, str):
        methods = multiprocessing.get_all_start_methods()
        if context not in methods:
            raise ValueError("DataLoader: multiprocessing_context should specify a valid start "
                             f"method in {methods!r}, but got multiprocessing_context="
                             f"{context!r}")
        context = multiprocessing.get_context(context)
    elif context is not None and not isinstance(context, multiprocessing.context.BaseContext):
        raise TypeError("DataLoader: multiprocessing_context should be a valid context object "
                        "or a string specifying the start method, but got "
                        f"multiprocessing_context={context!r}")
    return workers, prefetch, context


def _check_iterable_options(shuffle, sampler, batch_sampler) -> None:
    """An IterableDataset sets its own order: no shuffle, sampler or batch_sampler."""
    for name, value, unset in (("shuffle", shuffle, shuffle in (None, False)),
                               ("sampler", sampler, sampler is None),
                               ("batch_sampler", batch_sampler, batch_sampler is None)):
        if not unset:
            raise ValueError(f"DataLoader with IterableDataset: expected unspecified {name} "
                             f"option, but got {name}={value!r}")


def _make_fetcher(dataset, collate_fn, batch_size, drop_last):
    """A function from one batch's task to the batch, made where the batches are made
    (in the loader's process, or in each worker).

    For a map-style dataset the task is the batch's list of indices; for an
    :class:`~tinynet.data.IterableDataset` it is ignored, and each call
    collates the next ``batch_size`` items of one iterator over the dataset,
    raising StopIteration when it runs out (or, with ``drop_last``, when a
    batch would come out short).
    """
    default = collate_fn is None or collate_fn is default_collate
    if isinstance(dataset, IterableDataset):
        items = iter(dataset)
        collate = (lambda batch: _as_tensors(default_collate(batch))) if default else collate_fn

        def next_batch(_task):
            batch = list(itertools.islice(items, batch_size))
            if not batch or drop_last and len(batch) < batch_size:
                raise StopIteration
            return collate(batch)
        return next_batch
    if default:
        get_batch = batch_getter(dataset)
        return lambda indices: _as_tensors(get_batch(np.asarray(indices, dtype=np.int64)))
    return lambda indices: collate_fn([dataset[i] for i in indices])


def _as_tensors(batch):
    """Wrap a batch's arrays in Tensors, without copying (gathering made them fresh),
    keeping its structure: tuples (named ones too), dicts, lists of strings."""
    if isinstance(batch, tuple):
        tensors = [_as_tensors(field) for field in batch]
        return type(batch)(*tensors) if hasattr(batch, "_fields") else tuple(tensors)
    if isinstance(batch, dict):
        return {key: _as_tensors(value) for key, value in batch.items()}
    if isinstance(batch, list):
        return batch
    return Tensor._make(batch)
