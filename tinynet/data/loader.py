"""DataLoader: a dataset in (shuffled) mini-batches of tinynet Tensors."""
from __future__ import annotations

import numpy as np

from ..hyperparameters import check_count
from ..tensor import Tensor
from .dataset import batch_getter, shuffle_generator

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

    ``shuffle=True`` draws a new order every epoch (every ``iter``). With
    ``seed=None`` the order comes from tinynet's seeded CPU generator, so
    :func:`tinynet.manual_seed` makes it repeatable; an int ``seed`` (or a
    ``numpy.random.Generator``) gives the loader a generator of its own: the
    same sequence of epochs for the same seed, whatever else draws numbers.
    """

    def __init__(self, dataset, batch_size: int = 1, shuffle: bool = False,
                 drop_last: bool = False, seed=None):
        self.dataset = dataset
        self.batch_size = check_count("DataLoader", "batch_size", batch_size)
        self.shuffle = bool(shuffle)
        self.drop_last = bool(drop_last)
        self._generator = None if seed is None else shuffle_generator(seed)

    def __len__(self) -> int:
        """The number of batches in one epoch."""
        full_batches, rest = divmod(len(self.dataset), self.batch_size)
        return full_batches + (1 if rest and not self.drop_last else 0)

    def __iter__(self):
        get_batch = batch_getter(self.dataset)
        order = self._epoch_order(len(self.dataset))
        size = self.batch_size
        for start in range(0, len(self) * size, size):
            yield _as_tensors(get_batch(order[start:start + size]))

    @property
    def generator(self) -> np.random.Generator:
        """The generator that shuffles: the loader's own, or tinynet's CPU generator."""
        return shuffle_generator(None) if self._generator is None else self._generator

    def generator_state(self) -> dict:
        """The shuffling generator's state: save it to resume an epoch's order later."""
        return self.generator.bit_generator.state

    def set_generator_state(self, state: dict) -> None:
        """Restore a state from :meth:`generator_state`; the next epoch repeats that order."""
        self.generator.bit_generator.state = state

    def _epoch_order(self, n: int) -> np.ndarray:
        if not self.shuffle:
            return np.arange(n)
        return self.generator.permutation(n)


def _as_tensors(batch):
    """Wrap a batch's arrays in Tensors, without copying: gathering made them fresh."""
    if isinstance(batch, tuple):
        return tuple(Tensor._make(array) for array in batch)
    return Tensor._make(batch)
