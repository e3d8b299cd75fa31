"""A character-level sequence-to-sequence task made from Tiny Shakespeare's lines.

Each source is one line of the play (its words joined by single spaces), the
target the same words in the reverse order::

    "First Citizen:"                  ->  "Citizen: First"
    "Before we proceed any further,"  ->  "further, any proceed we Before"

The decoder cannot produce its next character from the characters it has
written so far: which word comes next, and how it is spelt, is only in the
source, so every target character needs the decoder's attention over the
encoder's output (the memory), as a translation does. The words move as
wholes, so the attention has to jump, not to walk along the source.

Ids: 0 pads, 1 starts a target, 2 ends a sequence, then the 65 characters of
Tiny Shakespeare (:data:`~tinynet.data.text.TINYSHAKESPEARE_CHARS`), so the
full text and the bundled excerpt share one vocabulary of 68 ids. A batch is
three int64 arrays, each padded with 0 at the end to its longest row:
``src`` (N, S) the line's ids and the end id, ``tgt_in`` (N, T) the start id
and the reversed line's ids (the decoder's input), ``tgt_out`` (N, T) the
reversed line's ids and the end id (what the decoder should predict: each
row of ``tgt_in`` is its row of ``tgt_out`` shifted right by one).

The lines are those of :attr:`CharCorpus.text` with at least ``min_words``
words and at most ``max_len`` characters, in the play's order; the first 90 %
of them train, the rest validate (by position, never shuffled, as the
character split). Batches draw lines at random, with replacement, from a
``numpy.random.Generator`` or an int seed: the same seed gives the same batches.
"""
from __future__ import annotations

import numpy as np

from ..hyperparameters import check_count
from ..tensor import Tensor
from .dataset import shuffle_generator
from .sampler import as_generator
from .text import TINYSHAKESPEARE_CHARS, TRAIN_FRACTION, CharCorpus

__all__ = ["ReversedWords", "reverse_words"]

PAD, BOS, EOS = 0, 1, 2
SPECIALS = 3


def reverse_words(line: str) -> str:
    """The words of ``line`` (split at white space) in the reverse order, joined by spaces."""
    return " ".join(reversed(line.split()))


class ReversedWords:
    """Tiny Shakespeare's lines, and each with its words in the reverse order (see the
    module docstring): a character-level translation task for an encoder–decoder.

    ``corpus`` is a :class:`CharCorpus` whose characters are Tiny Shakespeare's (the
    full text or the bundled excerpt, :func:`~tinynet.data.load_tinyshakespeare`).
    Attributes: ``vocab_size`` (68), ``pad_idx``/``bos_idx``/``eos_idx`` (0, 1, 2),
    ``lines`` (``{"train": [...], "val": [...]}``, each line's words joined by single
    spaces).
    """

    pad_idx, bos_idx, eos_idx = PAD, BOS, EOS

    def __init__(self, corpus: CharCorpus, max_len: int = 64, min_words: int = 2):
        self.max_len = check_count("ReversedWords", "max_len", max_len)
        self.min_words = check_count("ReversedWords", "min_words", min_words)
        self.chars = TINYSHAKESPEARE_CHARS
        self.stoi = {ch: SPECIALS + i for i, ch in enumerate(self.chars)}
        lines = [" ".join(words) for words in map(str.split, corpus.text.splitlines())
                 if len(words) >= min_words and len(" ".join(words)) <= max_len]
        missing = sorted({ch for line in lines for ch in line} - set(self.chars))
        if missing:
            raise ValueError(f"ReversedWords: characters {missing} are not Tiny "
                             "Shakespeare's")
        if len(lines) < 2:
            raise ValueError(f"ReversedWords: {len(lines)} line(s) of {min_words} or more "
                             f"words and at most {max_len} characters; it needs two")
        cut = min(max(int(len(lines) * TRAIN_FRACTION), 1), len(lines) - 1)
        self.lines = {"train": lines[:cut], "val": lines[cut:]}

    @property
    def vocab_size(self) -> int:
        """The number of ids: the three special ones and the 65 characters."""
        return SPECIALS + len(self.chars)

    def encode(self, text: str) -> list[int]:
        """The ids of the characters of ``text`` (no start or end id)."""
        return [self.stoi[ch] for ch in text]

    def decode(self, ids) -> str:
        """The text of ``ids``, stopping at the first end id; padding and start ids are
        skipped."""
        out = []
        for i in np.asarray(ids).reshape(-1).tolist():
            if i == EOS:
                break
            if i >= SPECIALS:
                out.append(self.chars[i - SPECIALS])
        return "".join(out)

    def pair(self, line: str) -> tuple[list[int], list[int]]:
        """The source ids (the line, then the end id) and the target's (the reversed
        line, then the end id)."""
        return self.encode(line) + [EOS], self.encode(reverse_words(line)) + [EOS]

    def batch(self, lines) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(src, tgt_in, tgt_out)`` of the given lines, int64 (N, S), (N, T), (N, T),
        padded with 0 at the end (see the module docstring)."""
        pairs = [self.pair(line) for line in lines]
        if not pairs:
            raise ValueError("ReversedWords.batch: no lines")
        src = np.full((len(pairs), max(len(s) for s, _ in pairs)), PAD, dtype=np.int64)
        steps = max(len(t) for _, t in pairs)
        tgt_in = np.full((len(pairs), steps), PAD, dtype=np.int64)
        tgt_out = np.full((len(pairs), steps), PAD, dtype=np.int64)
        for row, (s, t) in enumerate(pairs):
            src[row, :len(s)] = s
            tgt_in[row, :len(t)] = [BOS] + t[:-1]
            tgt_out[row, :len(t)] = t
        return src, tgt_in, tgt_out

    def get_batch(self, split: str, batch_size: int, generator=None, *, device="cpu",
                  as_numpy: bool = False):
        """``batch_size`` lines of ``split`` (``'train'`` or ``'val'``) drawn at random
        (``generator``: a ``numpy.random.Generator``, an int seed, or None for tinynet's
        seeded CPU generator, as :meth:`CharCorpus.get_batch`), as :meth:`batch` makes
        them: tinynet Tensors on ``device``, or NumPy arrays with ``as_numpy=True``."""
        if split not in self.lines:
            raise ValueError(f"unknown split {split!r}: use 'train' or 'val'")
        batch_size = check_count("get_batch", "batch_size", batch_size)
        generator = as_generator("get_batch", generator)
        if generator is None:
            generator = shuffle_generator(None)
        lines = self.lines[split]
        arrays = self.batch([lines[i] for i in generator.integers(0, len(lines), batch_size)])
        if as_numpy:
            return arrays
        return tuple(Tensor._make(a).to(device) for a in arrays)
