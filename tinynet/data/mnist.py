"""MNIST, the handwritten digits: the dataset, where its files live, and the sample.

The data is the four standard IDX files, gzip-compressed, in one directory::

    train-images-idx3-ubyte.gz  train-labels-idx1-ubyte.gz    60,000 examples
    t10k-images-idx3-ubyte.gz   t10k-labels-idx1-ubyte.gz     10,000 examples

The default directory is ``$TINYNET_DATA/mnist`` when the environment variable
``TINYNET_DATA`` is set, else ``~/.cache/tinynet/mnist``. The package also
bundles a sample in the same format, the first 10,000 training examples and
the whole test set; :func:`load_mnist` falls back on it when given no directory,
so that examples run offline.
"""
from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import numpy as np

from .dataset import TensorDataset
from .files import download_files
from .idx import read_mnist

__all__ = ["MNIST", "load_mnist", "download_mnist", "default_root", "MNIST_FILES",
           "MNIST_SHA256", "MNIST_MIRRORS", "SAMPLE_ROOT"]

TRAIN_FILES = ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz")
TEST_FILES = ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz")
MNIST_FILES = TRAIN_FILES + TEST_FILES

# SHA-256 of each file's *uncompressed* content, the same bytes as the original
# distribution: the mirrors' .gz files and recompressed copies all verify.
MNIST_SHA256 = {
    "train-images-idx3-ubyte.gz":
        "ba891046e6505d7aadcbbe25680a0738ad16aec93bde7f9b65e87a2fc25776db",
    "train-labels-idx1-ubyte.gz":
        "65a50cbbf4e906d70832878ad85ccda5333a97f0f4c3dd2ef09a8a9eef7101c5",
    "t10k-images-idx3-ubyte.gz":
        "0fa7898d509279e482958e8ce81c8e77db3f2f8254e26661ceb7762c4d494ce7",
    "t10k-labels-idx1-ubyte.gz":
        "ff7bcfd416de33731a308c3f266cc351222c34898ecbeaf847f06e48f7ec33f2",
}

MNIST_MIRRORS = (
    "https://ossci-datasets.s3.amazonaws.com/mnist/",
    "https://storage.googleapis.com/cvdf-datasets/mnist/",
)
MIRROR_ENV = "TINYNET_MNIST_MIRROR"   # one or more base URLs, separated by spaces or commas
DATA_ENV = "TINYNET_DATA"             # a directory holding mnist/
SAMPLE_ROOT = Path(__file__).resolve().parent / "sample"


def default_root() -> Path:
    """``$TINYNET_DATA/mnist`` if ``TINYNET_DATA`` is set, else ``~/.cache/tinynet/mnist``."""
    return _search_roots()[0]


def _search_roots() -> list[Path]:
    """Where :func:`load_mnist` looks: ``$TINYNET_DATA/mnist`` first, then the cache."""
    roots = [Path.home() / ".cache" / "tinynet" / "mnist"]
    if os.environ.get(DATA_ENV):
        roots.insert(0, Path(os.environ[DATA_ENV]).expanduser() / "mnist")
    return roots


def _split_files(train: bool) -> tuple[str, str]:
    return TRAIN_FILES if train else TEST_FILES


def _has_split(root: Path, train: bool) -> bool:
    return all((root / name).is_file() for name in _split_files(train))


def _split_name(train: bool) -> str:
    return "training" if train else "test"


def download_mnist(root=None, mirrors=None, checksums=None, progress: bool = True) -> Path:
    """Download the four MNIST files into ``root`` (default: :func:`default_root`).

    Files already there are kept. ``mirrors`` are base URLs tried in order; by
    default those of ``$TINYNET_MNIST_MIRROR`` if set, else :data:`MNIST_MIRRORS`.
    ``checksums`` maps each file name to the SHA-256 of its uncompressed
    content (default :data:`MNIST_SHA256`). Each file is checked, then
    renamed into place: an interrupted or wrong download leaves nothing behind.

    Raises :class:`~tinynet.data.DownloadError` (an ``OSError``) naming the
    file, the URLs tried and the directory to fill by hand, and
    :class:`~tinynet.data.ChecksumError` when a mirror serves other data.
    Returns the directory.
    """
    root = default_root() if root is None else Path(root).expanduser()
    if mirrors is None:
        mirrors = re.split(r"[\s,]+", os.environ.get(MIRROR_ENV, "").strip())
        mirrors = [m for m in mirrors if m] or MNIST_MIRRORS
    download_files(root, MNIST_SHA256 if checksums is None else checksums, mirrors, progress)
    return root


class MNIST(TensorDataset):
    """The MNIST training set (``train=True``, 60,000 images) or test set (10,000).

    ``root`` is the directory that holds the four files (default:
    :func:`default_root`). Missing files are downloaded when ``download=True``
    (see :func:`download_mnist`); the directory is only written to then.

    Item ``i`` is ``(image, label)``: the image as float32 in [0, 1], of shape
    (784,) when ``flatten=True``, else (28, 28) (rows first, ready to be read
    row by row as a sequence), and the label as an int64 digit. The arrays::

        mnist.images    uint8, (N, 28, 28), as stored (read-only)
        mnist.labels    int64, (N,)
        mnist.arrays    (float32 images, labels): what items and batches are made of
    """

    def __init__(self, root=None, train: bool = True, download: bool = True,
                 flatten: bool = True):
        self.root = default_root() if root is None else Path(root).expanduser()
        self.train = bool(train)
        if not _has_split(self.root, train):
            if not download:
                missing = [n for n in _split_files(train) if not (self.root / n).is_file()]
                raise FileNotFoundError(f"MNIST: {', '.join(missing)} not found in "
                                        f"{self.root}; use download=True, or "
                                        + _by_hand(self.root))
            download_mnist(self.root)
        images_path, labels_path = (self.root / name for name in _split_files(train))
        self.images, self.labels = read_mnist(images_path, labels_path)
        pixels = self.images.astype(np.float32)
        pixels /= np.float32(255)
        super().__init__(pixels.reshape(-1, 28 * 28) if flatten else pixels, self.labels)

    @property
    def is_sample(self) -> bool:
        """True for the sample bundled with tinynet."""
        return self.root == SAMPLE_ROOT

    def __repr__(self):
        return (f"MNIST({_split_name(self.train)} set, {len(self):,} examples, "
                f"root='{self.root}')")


_sample_noticed = False      # the notice is printed once per process


def load_mnist(root=None, train: bool = True, allow_sample: bool = True,
               flatten: bool = True, notice: bool = True) -> MNIST:
    """MNIST from ``root`` if given, else found on this machine, else the bundled sample.

    Never downloads. A ``root`` given must hold the split's files: ``FileNotFoundError``
    naming the directory and the files otherwise, never the sample in their
    place. With ``root=None`` it looks in ``$TINYNET_DATA/mnist`` (when set)
    and ``~/.cache/tinynet/mnist``; when neither holds the files it returns the
    bundled sample (10,000 training examples, the full test set) with a
    one-line notice on stderr (once per process; ``notice=False`` silences
    it), or raises ``FileNotFoundError`` if ``allow_sample`` is false. Check
    ``dataset.is_sample`` to know which one you got::

        train = load_mnist(train=True)
        test = load_mnist(train=False)
    """
    if root is not None:
        root = Path(root).expanduser()
        if not _has_split(root, train):
            raise FileNotFoundError(_missing_from_given_root(root, train))
        return MNIST(root, train, download=False, flatten=flatten)
    roots = _search_roots()
    for candidate in roots:
        if _has_split(candidate, train):
            return MNIST(candidate, train, download=False, flatten=flatten)
    where = ", ".join(str(r) for r in roots)
    if not allow_sample:
        raise FileNotFoundError(f"full MNIST not found in {where}; " + _by_hand(roots[0]))
    sample = MNIST(SAMPLE_ROOT, train, download=False, flatten=flatten)
    global _sample_noticed
    if notice and not _sample_noticed:
        _sample_noticed = True
        print(f"tinynet: full MNIST not found in {where}; using the bundled sample "
              "(10,000 training and 10,000 test images)", file=sys.stderr)
    return sample


def _missing_from_given_root(root: Path, train: bool) -> str:
    """What is missing from a directory given for MNIST, and what to do."""
    if not root.is_dir():
        found = "the directory does not exist"
    else:
        missing = [name for name in _split_files(train) if not (root / name).is_file()]
        found = f"{', '.join(missing)} not found there"
    return (f"MNIST: no {_split_name(train)} set in {root} ({found}); a directory given "
            f"must hold {', '.join(MNIST_FILES)} (download_mnist(root) fetches them); "
            "give none to search the default directories and fall back on the bundled "
            "sample")


def _by_hand(directory: Path) -> str:
    """Where to put the files when they cannot be downloaded."""
    return (f"put {', '.join(MNIST_FILES)} into {directory} (or set {DATA_ENV} to a "
            "directory holding mnist/ with them)")
