"""Data loading, with PyTorch's names: datasets, a DataLoader, MNIST, Tiny Shakespeare.

::

    from tinynet.data import DataLoader, Subset, load_mnist

    mnist = load_mnist(train=True)            # full MNIST if found, else the bundled sample
    train = Subset(mnist, range(len(mnist) - 5000))
    for images, labels in DataLoader(train, batch_size=32, shuffle=True):
        ...                                   # float32 (32, 784), int64 (32,)

* :mod:`~tinynet.data.dataset`: ``Dataset``, ``IterableDataset``, ``TensorDataset``,
  ``Subset``, ``random_split``;
* :mod:`~tinynet.data.loader`: ``DataLoader``;
* :mod:`~tinynet.data.workers`: its worker processes, ``get_worker_info``;
* :mod:`~tinynet.data.sampler`: ``Sampler``, ``SequentialSampler``, ``RandomSampler``,
  ``SubsetRandomSampler``, ``BatchSampler``, ``DistributedSampler``;
* :mod:`~tinynet.data.mnist`: ``MNIST``, ``load_mnist``, ``download_mnist``;
* :mod:`~tinynet.data.text`: ``CharCorpus``, ``load_tinyshakespeare``: character-level
  text, its vocabulary, the 90/10 split and random (B, T) batches;
* :mod:`~tinynet.data.transduction`: ``ReversedWords``, ``reverse_words``: Tiny
  Shakespeare's lines and the same words in the reverse order, a sequence-to-sequence task;
* :mod:`~tinynet.data.idx`: reading and writing MNIST's IDX files;
* :mod:`~tinynet.data.files`: atomic writes and verified downloads.
"""
from ..lacking import lacking
from .dataset import (
    Dataset,
    IterableDataset,
    Subset,
    TensorDataset,
    default_collate,
    random_split,
)
from .files import ChecksumError, DownloadError
from .idx import MNISTFormatError, read_idx, write_idx
from .loader import DataLoader
from .mnist import MNIST, download_mnist, load_mnist
from .sampler import (
    BatchSampler,
    DistributedSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
)
from .text import CharCorpus, load_tinyshakespeare
from .transduction import ReversedWords, reverse_words
from .workers import get_worker_info

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "get_worker_info", "Subset",
           "random_split", "default_collate",
           "DataLoader", "Sampler", "SequentialSampler", "RandomSampler",
           "SubsetRandomSampler", "BatchSampler", "DistributedSampler", "MNIST", "load_mnist",
           "download_mnist", "MNISTFormatError", "DownloadError", "ChecksumError", "read_idx",
           "write_idx", "CharCorpus", "load_tinyshakespeare", "ReversedWords", "reverse_words"]

__getattr__ = lacking("torch.utils.data")
