"""DataLoader: a dataset in (shuffled) mini-batches of tinynet Tensors."""
from __future__ import annotations

import numpy as np

from ..hyperparameters import check_count, check_real
from ..tensor import Tensor
from .dataset import batch_getter, default_collate, shuffle_generator
from .sampler import BatchSampler, RandomSampler, SequentialSampler, as_generator

__all__ = ["DataLoader"]


class DataLoader:
    """Iterate over ``dataset`` in batches, as ``torch.utils.data.DataLoader``::

        loader = DataLoader(TensorDataset(images, labels), batch_size=32, shuffle=True)
        for x, y in loader:        # x: float32 (32, 784), y: int64 (32,)
            ...

    Each batch has the structure of the dataset's items: a tuple of Tensors
    for tuple items (one per field, stacked), else a single Tensor. The last
    batch is smaller when ``batch_size`` does not divide the dataset, unless
    ``drop_last=True`` drops it.

    The order comes from a sampler, as in PyTorch: ``shuffle=True`` makes a
    :class:`~tinynet.data.RandomSampler` (a new order every epoch, every
    ``iter``), else a :class:`~tinynet.data.SequentialSampler`; ``sampler``
    gives one of your own (not together with ``shuffle``), ``batch_sampler``
    one that yields whole lists of indices (not together with ``batch_size``,
    ``shuffle``, ``sampler`` or ``drop_last``).

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

    The other arguments are PyTorch's, accepted so that its code runs
    unchanged: ``pin_memory`` does nothing (batches are made on the CPU and
    moved with ``.to(device)``), and ``num_workers`` must be 0: a batch of an
    in-memory dataset is gathered here in microseconds, and a worker process
    would gather the same batch and then pickle it back through a pipe.
    """

    def __init__(self, dataset, batch_size: int | None = 1, shuffle: bool | None = None,
                 sampler=None, batch_sampler=None, num_workers: int = 0, collate_fn=None,
                 pin_memory: bool = False, drop_last: bool = False, timeout: float = 0,
                 worker_init_fn=None, multiprocessing_context=None, generator=None, *,
                 prefetch_factor: int | None = None, persistent_workers: bool = False,
                 pin_memory_device: str = "", in_order: bool = True, seed=None):
        _check_single_process(num_workers, timeout, multiprocessing_context,
                              prefetch_factor, persistent_workers)
        if seed is not None and generator is not None:
            raise ValueError("DataLoader: give generator or seed (its other name), not both")
        self._generator = as_generator("DataLoader", generator if seed is None else seed)
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
            sampler = (RandomSampler(dataset, generator=self._generator) if shuffle
                       else SequentialSampler(dataset))
        if batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, bool(drop_last))

        self.dataset = dataset
        self.batch_size = batch_size
        self.drop_last = bool(drop_last)
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.collate_fn = collate_fn
        self.num_workers = 0
        self.pin_memory = bool(pin_memory)
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.in_order = in_order

    def __len__(self) -> int:
        """The number of batches in one epoch."""
        return len(self.batch_sampler)

    def __iter__(self):
        fetch = self._batch_fetcher()
        for indices in self.batch_sampler:
            yield fetch(indices)

    def _batch_fetcher(self):
        """A function from one batch's list of indices to the batch."""
        if self.collate_fn is None or self.collate_fn is default_collate:
            get_batch = batch_getter(self.dataset)
            return lambda indices: _as_tensors(get_batch(np.asarray(indices, dtype=np.int64)))
        return lambda indices: self.collate_fn([self.dataset[i] for i in indices])

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


def _check_single_process(num_workers, timeout, multiprocessing_context, prefetch_factor,
                          persistent_workers) -> None:
    """Batches are made in the calling process: ``num_workers`` must be 0.

    The worker options that PyTorch refuses without workers are refused
    here too; those it ignores (``worker_init_fn``) are ignored.
    """
    workers = check_count("DataLoader", "num_workers", num_workers, low=0)
    if workers > 0:
        raise ValueError(f"DataLoader: num_workers={workers} is not supported, use "
                         "num_workers=0: batches are gathered in this process by one fancy "
                         "index per array of the in-memory dataset, and worker processes "
                         "would only add the cost of pickling each batch back")
    if check_real("DataLoader", "timeout", timeout, low=0) != 0:
        raise ValueError("DataLoader: timeout applies to worker processes; with "
                         f"num_workers=0 it must be 0, got {timeout}")
    for name, value, default in (("multiprocessing_context", multiprocessing_context, None),
                                 ("prefetch_factor", prefetch_factor, None),
                                 ("persistent_workers", persistent_workers, False)):
        if value != default:
            raise ValueError(f"DataLoader: {name}={value!r} applies to worker processes, "
                             "and this DataLoader has none (num_workers=0)")


def _as_tensors(batch):
    """Wrap a batch's arrays in Tensors, without copying: gathering made them fresh."""
    if isinstance(batch, tuple):
        return tuple(Tensor._make(array) for array in batch)
    return Tensor._make(batch)
