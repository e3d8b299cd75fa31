"""Character-level text corpora: Tiny Shakespeare, its vocabulary, split and batches.

The data is one UTF-8 text file, modelled one character at a time. Tiny
Shakespeare is char-rnn's ``data/tinyshakespeare/input.txt`` (karpathy/char-rnn),
used unchanged by nanoGPT's ``data/shakespeare_char`` recipe: 1,115,394
characters of Shakespeare's plays, 65 distinct characters, SHA-256
:data:`TINYSHAKESPEARE_SHA256`.

Everything follows nanoGPT's ``data/shakespeare_char/prepare.py``:

* the vocabulary is the sorted set of the text's characters,
  ``chars = sorted(set(text))``; character ``chars[i]`` has id ``i``
  (``stoi``/``itos`` map one to the other);
* the split is by position, never shuffled: with ``n = len(text)``, the first
  ``int(n * 0.9)`` tokens train and the rest validate (for Tiny Shakespeare
  1,003,854 and 111,540);
* a batch is ``batch_size`` windows of ``block_size`` tokens at random offsets
  ``i`` in ``[0, len(split) - block_size)``, the inputs ``x = split[i:i + T]``
  and the targets ``y = split[i + 1:i + 1 + T]``, the next character of each.

The file is looked for in ``$TINYNET_DATA/tinyshakespeare/input.txt`` when the
environment variable ``TINYNET_DATA`` is set, then in
``~/.cache/tinynet/tinyshakespeare/input.txt``. The package bundles an excerpt,
``sample/tinyshakespeare-excerpt.txt``: the start of the file up to the last
speech that ends within its first 100,000 bytes,
``text[:text.rfind("\\n\\n", 0, 100_000) + 1]`` (99,843 characters).
:func:`load_tinyshakespeare` falls back on it when the full file is not found,
so that examples run offline. The excerpt's vocabulary is its own: it lacks
``$``, ``3``, ``X`` and ``Z``, so it has 61 characters and most ids differ from
the full text's. Pass ``chars=TINYSHAKESPEARE_CHARS`` to give it (or any text)
the full vocabulary instead, e.g. to evaluate a model trained on the full file.
"""
from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

import numpy as np

from .. import backend as _backend
from ..hyperparameters import check_count
from ..tensor import Tensor
from .dataset import shuffle_generator
from .files import ChecksumError
from .sampler import as_generator

__all__ = ["CharCorpus", "load_tinyshakespeare", "default_path", "TINYSHAKESPEARE_SHA256",
           "TINYSHAKESPEARE_CHARS", "SAMPLE_PATH", "TRAIN_FRACTION"]

TINYSHAKESPEARE_SHA256 = "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed"
# The 65 characters of the full file, sorted: its vocabulary, id i for the i-th.
TINYSHAKESPEARE_CHARS = ("\n !$&',-.3:;?ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                         "abcdefghijklmnopqrstuvwxyz")
TRAIN_FRACTION = 0.9                  # the first 90 % trains, the rest validates
DATA_ENV = "TINYNET_DATA"             # a directory holding tinyshakespeare/input.txt
FOLDER, FILE_NAME = "tinyshakespeare", "input.txt"
SAMPLE_PATH = Path(__file__).resolve().parent / "sample" / "tinyshakespeare-excerpt.txt"
SPLITS = ("train", "val")


def default_path() -> Path:
    """``$TINYNET_DATA/tinyshakespeare/input.txt`` if ``TINYNET_DATA`` is set, else
    ``~/.cache/tinynet/tinyshakespeare/input.txt``."""
    return _search_paths()[0]


def _search_paths() -> list[Path]:
    """Where :func:`load_tinyshakespeare` looks: ``$TINYNET_DATA`` first, then the cache."""
    paths = [Path.home() / ".cache" / "tinynet" / FOLDER / FILE_NAME]
    if os.environ.get(DATA_ENV):
        paths.insert(0, Path(os.environ[DATA_ENV]).expanduser() / FOLDER / FILE_NAME)
    return paths


def _is_tinyshakespeare_path(path: Path) -> bool:
    return path.name == FILE_NAME and path.parent.name == FOLDER


class CharCorpus:
    """A UTF-8 text file as a sequence of character ids, split 90/10, in batches.

    ``path`` is the file. Its SHA-256 must be ``sha256`` when given; else, when
    the file is Tiny Shakespeare (``tinyshakespeare=True``, or by default a file
    named ``input.txt`` in a folder ``tinyshakespeare``), it must be the
    published :data:`TINYSHAKESPEARE_SHA256`. ``chars`` fixes the vocabulary
    (a string or sequence of distinct characters, id ``i`` for ``chars[i]``);
    by default it is the sorted set of the text's characters.

    Attributes::

        corpus.text         str, the whole file
        corpus.chars        tuple of str, the vocabulary; vocab_size = len(chars)
        corpus.stoi         dict str -> int; corpus.itos: dict int -> str
        corpus.data         int64 (len(text),), every character's id (read-only)
        corpus.train        int64 (int(n * 0.9),), the first 90 % of data (a view)
        corpus.val          int64 (n - int(n * 0.9),), the rest (a view)

    Raises ``FileNotFoundError`` for a missing file, :class:`ChecksumError`
    for a wrong digest, ``ValueError`` for a file that is not UTF-8 (naming the
    byte offset), is empty, or holds a character missing from ``chars``.
    """

    def __init__(self, path, *, tinyshakespeare: bool | None = None,
                 sha256: str | None = None, chars=None):
        self.path = Path(path).expanduser()
        if not self.path.is_file():
            found = "is not a file" if self.path.exists() else "does not exist"
            raise FileNotFoundError(f"CharCorpus: {self.path} {found}")
        raw = self.path.read_bytes()
        self.sha256 = hashlib.sha256(raw).hexdigest()
        if tinyshakespeare is None:
            tinyshakespeare = _is_tinyshakespeare_path(self.path)
        expected = sha256 if sha256 is not None else (
            TINYSHAKESPEARE_SHA256 if tinyshakespeare else None)
        if expected is not None and self.sha256 != expected.lower():
            what = "Tiny Shakespeare's published" if sha256 is None else "the expected"
            raise ChecksumError(f"{self.path} has the wrong content: its SHA-256 is "
                                f"{self.sha256}, {what} digest is {expected}")
        try:
            self.text = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            raise ValueError(f"{self.path} is not UTF-8 text: byte "
                             f"0x{raw[error.start]:02x} at byte offset {error.start} "
                             f"({error.reason})") from None
        if not self.text:
            raise ValueError(f"{self.path} is empty: there is no text to model")
        self.chars = _vocabulary(self.text if chars is None else chars, given=chars is not None)
        self.stoi = {ch: i for i, ch in enumerate(self.chars)}
        self.itos = dict(enumerate(self.chars))
        self._codepoints = np.array([ord(ch) for ch in self.chars], dtype=np.int64)
        self._sorter = np.argsort(self._codepoints, kind="stable")
        try:
            data = self.encode(self.text)
        except ValueError as error:
            raise ValueError(f"{self.path}: {error}") from None
        data.flags.writeable = False
        n = len(data)
        self.data = data
        self.train = data[:int(n * TRAIN_FRACTION)]
        self.val = data[int(n * TRAIN_FRACTION):]

    @property
    def vocab_size(self) -> int:
        """The number of distinct characters (ids run from 0 to vocab_size - 1)."""
        return len(self.chars)

    @property
    def is_sample(self) -> bool:
        """True for the excerpt bundled with tinynet."""
        return self.path == SAMPLE_PATH

    def __len__(self) -> int:
        """The number of characters (tokens) in the whole text."""
        return len(self.data)

    def __repr__(self):
        return (f"CharCorpus({len(self):,} characters, vocab_size={self.vocab_size}, "
                f"train={len(self.train):,}, val={len(self.val):,}, path='{self.path}')")

    def encode(self, text: str) -> np.ndarray:
        """The ids of the characters of ``text``: int64, shape (len(text),).

        ``ValueError`` naming the first character not in the vocabulary and
        its position in ``text``.
        """
        if not isinstance(text, str):
            raise TypeError(f"encode expects a str, got {type(text).__name__}")
        codes = np.frombuffer(text.encode("utf-32-le", "surrogatepass"),
                              dtype="<u4").astype(np.int64)
        ordered = self._codepoints[self._sorter]
        found = np.minimum(np.searchsorted(ordered, codes), len(ordered) - 1)
        unknown = np.flatnonzero(ordered[found] != codes)
        if unknown.size:
            at = int(unknown[0])
            raise ValueError(f"character {text[at]!r} at position {at} is not in the "
                             f"vocabulary of {self.vocab_size} characters")
        return self._sorter[found].astype(np.int64, copy=False)

    def decode(self, ids) -> str:
        """The text of a sequence of ids: a list, a 0-d or 1-d integer NumPy array,
        or a tinynet Tensor (on any device). ``ValueError`` naming an id out of
        range and its position."""
        array = _backend.as_numpy(ids.array) if isinstance(ids, Tensor) else np.asarray(ids)
        if array.size == 0:
            return ""
        if array.dtype.kind not in "iu":
            raise TypeError(f"decode expects integer ids, got dtype {array.dtype}")
        if array.ndim > 1:
            raise ValueError(f"decode expects one sequence of ids, got shape {array.shape}; "
                             "decode each row of a batch on its own")
        array = array.reshape(-1)
        bad = np.flatnonzero((array < 0) | (array >= self.vocab_size))
        if bad.size:
            at = int(bad[0])
            raise ValueError(f"id {int(array[at])} at position {at} is out of range for a "
                             f"vocabulary of {self.vocab_size} characters")
        return self._codepoints[array].astype("<u4").tobytes().decode("utf-32-le",
                                                                       "surrogatepass")

    def split(self, split: str) -> np.ndarray:
        """The ids of ``'train'`` (the first 90 %) or ``'val'`` (the rest): int64, 1-d."""
        if split not in SPLITS:
            raise ValueError(f"unknown split {split!r}: use 'train' or 'val'")
        return self.train if split == "train" else self.val

    def get_batch(self, split: str, batch_size: int, block_size: int, generator=None, *,
                  device="cpu", as_numpy: bool = False):
        """``(x, y)``: ``batch_size`` random windows of ``block_size`` ids of a split.

        Both are int64 of shape (batch_size, block_size); ``y[b, t]`` is the
        character after ``x[b, t]`` (``y[:, :-1] == x[:, 1:]``). The offsets are
        nanoGPT's, ``generator.integers(0, len(data) - block_size, size=batch_size)``
        over the split's ids ``data``. ``generator`` is a
        ``numpy.random.Generator``, an int seed, or None for tinynet's seeded CPU
        generator (:func:`tinynet.manual_seed` makes the batches repeatable).

        Returns tinynet Tensors on ``device``, or NumPy arrays with
        ``as_numpy=True``. ``ValueError`` when the split holds no more than
        ``block_size`` ids.
        """
        data = self.split(split)
        batch_size = check_count("get_batch", "batch_size", batch_size)
        block_size = check_count("get_batch", "block_size", block_size)
        if block_size >= len(data):
            raise ValueError(f"get_batch: block_size {block_size} needs more than "
                             f"{block_size} ids, and the {split!r} split holds only "
                             f"{len(data)}; use a block_size below {len(data)}")
        generator = as_generator("get_batch", generator)
        if generator is None:
            generator = shuffle_generator(None)
        offsets = generator.integers(0, len(data) - block_size, size=batch_size)
        index = offsets[:, None] + np.arange(block_size)
        x, y = data[index], data[index + 1]          # fresh int64 arrays
        if as_numpy:
            if _backend._parse_device(device) != "cpu":
                raise ValueError(f"get_batch: as_numpy=True makes CPU arrays, not {device!r}")
            return x, y
        if _backend._parse_device(device) == "cpu":
            return Tensor._make(x), Tensor._make(y)
        xp_backend = _backend.get_backend(device)
        return Tensor._make(xp_backend.asarray(x)), Tensor._make(xp_backend.asarray(y))


def _vocabulary(source, given: bool) -> tuple:
    """The vocabulary: the sorted characters of a text, or those given (checked)."""
    if not given:
        return tuple(sorted(set(source)))
    chars = tuple(source)
    if not chars:
        raise ValueError("chars is empty: a vocabulary needs at least one character")
    for ch in chars:
        if not isinstance(ch, str) or len(ch) != 1:
            raise ValueError(f"chars must be single characters, got {ch!r}")
    if len(set(chars)) != len(chars):
        repeated = next(ch for i, ch in enumerate(chars) if ch in chars[:i])
        raise ValueError(f"chars holds {repeated!r} more than once")
    return chars


_sample_noticed = False      # the notice is printed once per process


def load_tinyshakespeare(root=None, allow_sample: bool = True, notice: bool = True,
                         chars=None) -> CharCorpus:
    """Tiny Shakespeare from ``root`` if given, else found on this machine, else the excerpt.

    ``root`` is the directory holding ``input.txt`` (or the file itself); it
    must hold it (``FileNotFoundError`` naming the path otherwise, never the
    excerpt in its place). With ``root=None`` it looks for
    ``$TINYNET_DATA/tinyshakespeare/input.txt`` (when set) and
    ``~/.cache/tinynet/tinyshakespeare/input.txt``; when neither exists it
    returns the bundled excerpt (99,843 characters, its own 61-character
    vocabulary) with a one-line notice on stderr (once per process;
    ``notice=False`` silences it), or raises ``FileNotFoundError`` if
    ``allow_sample`` is false. Check ``corpus.is_sample`` to know which one you
    got. A file found is checked against :data:`TINYSHAKESPEARE_SHA256`
    (:class:`ChecksumError` otherwise). ``chars`` is passed to
    :class:`CharCorpus`::

        corpus = load_tinyshakespeare()
        x, y = corpus.get_batch("train", batch_size=12, block_size=64)
    """
    if root is not None:
        root = Path(root).expanduser()
        path = root / FILE_NAME if root.is_dir() else root
        if not path.is_file():
            raise FileNotFoundError(_missing_from_given_root(root, path))
        return CharCorpus(path, tinyshakespeare=True, chars=chars)
    paths = _search_paths()
    for candidate in paths:
        if candidate.is_file():
            return CharCorpus(candidate, tinyshakespeare=True, chars=chars)
    where = ", ".join(str(p) for p in paths)
    if not allow_sample:
        raise FileNotFoundError(f"Tiny Shakespeare not found: looked for {where}; "
                                + _by_hand(paths[0]))
    sample = CharCorpus(SAMPLE_PATH, tinyshakespeare=False, chars=chars)
    global _sample_noticed
    if notice and not _sample_noticed:
        _sample_noticed = True
        print(f"tinynet: Tiny Shakespeare not found at {where}; using the bundled excerpt "
              f"({len(sample):,} characters)", file=sys.stderr)
    return sample


def _missing_from_given_root(root: Path, path: Path) -> str:
    """What is missing from a path given for Tiny Shakespeare, and what to do."""
    found = "it does not exist" if not root.exists() else f"{FILE_NAME} not found there"
    return (f"Tiny Shakespeare: no {path} ({found}); give the directory holding "
            f"{FILE_NAME} or the file itself, or give none to search the default "
            "locations and fall back on the bundled excerpt")


def _by_hand(path: Path) -> str:
    """Where to put the file."""
    return (f"put char-rnn's data/tinyshakespeare/{FILE_NAME} (1,115,394 characters) at "
            f"{path} (or set {DATA_ENV} to a directory holding {FOLDER}/{FILE_NAME})")
