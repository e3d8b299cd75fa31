"""Character corpora: Tiny Shakespeare's vocabulary, split and batches, the excerpt, errors.

Most tests use small texts written in tmp_path and the bundled excerpt. The
full Tiny Shakespeare is used when it is found, in ``$TINYNET_DATA`` (as set
when the tests start) or in ``../shared/data`` next to the repository; those
tests skip otherwise.
"""
import configparser
import fnmatch
import hashlib
import os
import re
from pathlib import Path

import numpy as np
import pytest

import tinynet
from tinynet.data import CharCorpus, ChecksumError, load_tinyshakespeare
from tinynet.data import text as text_module
from tinynet.data.text import (
    SAMPLE_PATH,
    TINYSHAKESPEARE_CHARS,
    TINYSHAKESPEARE_SHA256,
    default_path,
)

REPO_ROOT = Path(__file__).resolve().parents[1]
# Read now: the tests themselves run with TINYNET_DATA unset.
_CANDIDATES = ([Path(os.environ["TINYNET_DATA"]) / "tinyshakespeare" / "input.txt"]
               if os.environ.get("TINYNET_DATA") else [])
_CANDIDATES.append(REPO_ROOT.parent / "shared" / "data" / "tinyshakespeare" / "input.txt")
FULL_PATH = next((p for p in _CANDIDATES if p.is_file()), None)

# Published facts about char-rnn's input.txt (its README, nanoGPT's prepare.py output).
FULL_LENGTH, FULL_TRAIN, FULL_VAL, FULL_VOCAB = 1_115_394, 1_003_854, 111_540, 65


@pytest.fixture(autouse=True)
def _hermetic_locations(tmp_path, monkeypatch):
    """No test sees the user's cache or the real TINYNET_DATA."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("TINYNET_DATA", raising=False)


@pytest.fixture(scope="module")
def full():
    """The full Tiny Shakespeare, or a skip."""
    if FULL_PATH is None:
        pytest.skip("Tiny Shakespeare not available (set TINYNET_DATA to the directory "
                    "holding tinyshakespeare/input.txt)")
    return CharCorpus(FULL_PATH)


@pytest.fixture(scope="module")
def excerpt():
    return CharCorpus(SAMPLE_PATH)


def write_text(path: Path, content) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)
    return path


def nanogpt_prepare(text: str):
    """nanoGPT's data/shakespeare_char/prepare.py, written out: (chars, train, val)."""
    chars = sorted(list(set(text)))
    stoi = {ch: i for i, ch in enumerate(chars)}
    n = len(text)
    train, val = text[:int(n * 0.9)], text[int(n * 0.9):]
    return chars, [stoi[c] for c in train], [stoi[c] for c in val]


@pytest.fixture
def small(tmp_path):
    """A short corpus with non-ASCII characters (so codepoint order matters)."""
    content = "To be, or not to be: é, ü, ☃ — that is the question.\nWhether 'tis\n" * 3
    return CharCorpus(write_text(tmp_path / "small.txt", content))


# -------------------------------------------------------------- the full file
def test_the_full_file_has_the_published_size_vocabulary_and_split(full):
    assert len(full) == len(full.text) == FULL_LENGTH
    assert full.vocab_size == FULL_VOCAB and "".join(full.chars) == TINYSHAKESPEARE_CHARS
    assert len(full.train) == FULL_TRAIN and len(full.val) == FULL_VAL
    assert full.sha256 == TINYSHAKESPEARE_SHA256 and not full.is_sample


def test_the_full_file_matches_nanogpts_prepare(full):
    chars, train, val = nanogpt_prepare(full.text)
    assert list(full.chars) == chars
    np.testing.assert_array_equal(full.val, val)
    np.testing.assert_array_equal(full.train[-5000:], train[-5000:])
    assert full.train.dtype == full.val.dtype == np.int64
    assert full.decode(full.val) == full.text[FULL_TRAIN:]


def test_the_excerpt_is_the_documented_start_of_the_full_file(full, excerpt):
    raw = SAMPLE_PATH.read_bytes()
    assert len(raw) <= 100_000
    assert excerpt.text == full.text[:full.text.rfind("\n\n", 0, 100_000) + 1]
    assert full.text.startswith(excerpt.text) and excerpt.text.endswith("\n")


def test_the_full_vocabulary_gives_the_excerpt_the_full_files_ids(full):
    shared = CharCorpus(SAMPLE_PATH, chars=TINYSHAKESPEARE_CHARS)
    assert shared.vocab_size == FULL_VOCAB
    np.testing.assert_array_equal(shared.data, full.data[:len(shared)])


# ---------------------------------------------------------------- the excerpt
def test_the_excerpt_has_its_own_sorted_vocabulary_and_the_same_split_rule(excerpt):
    chars, train, val = nanogpt_prepare(excerpt.text)
    assert excerpt.is_sample and list(excerpt.chars) == chars
    assert set(excerpt.chars) < set(TINYSHAKESPEARE_CHARS)     # a subset: its own
    np.testing.assert_array_equal(excerpt.train, train)
    np.testing.assert_array_equal(excerpt.val, val)
    assert excerpt.decode(excerpt.data) == excerpt.text
    assert excerpt.stoi == {ch: i for i, ch in enumerate(chars)}
    assert excerpt.itos == dict(enumerate(chars))


def test_the_excerpt_is_shipped_as_package_data():
    config = configparser.ConfigParser()
    config.read(REPO_ROOT / "setup.cfg")
    patterns = [p.strip() for p in config["options.package_data"]["tinynet.data"].split(",")]
    relative = SAMPLE_PATH.relative_to(REPO_ROOT / "tinynet" / "data").as_posix()
    assert any(fnmatch.fnmatch(relative, p) for p in patterns)


# ------------------------------------------------------------ encode / decode
def test_encode_decode_round_trip_with_codepoint_order(small):
    assert list(small.chars) == sorted(set(small.text))
    assert small.chars.index("☃") == small.vocab_size - 1      # the highest codepoint
    ids = small.encode("né ☃ to")
    assert ids.dtype == np.int64 and ids.shape == (7,)
    assert ids.tolist() == [small.stoi[c] for c in "né ☃ to"]
    for given in (ids, ids.tolist(), ids.astype(np.int32), tinynet.tensor(ids)):
        assert small.decode(given) == "né ☃ to"
    assert small.decode(np.int64(small.stoi["☃"])) == "☃"
    assert small.decode([]) == "" and small.encode("").shape == (0,)
    assert small.decode(small.data) == small.text


def test_encode_names_an_unknown_character_and_its_position(small):
    with pytest.raises(ValueError, match=r"character 'Z' at position 3 is not in the "
                       r"vocabulary of \d+"):
        small.encode("to Zed")
    with pytest.raises(TypeError, match="str"):
        small.encode([1, 2])


@pytest.mark.parametrize("ids, error, pattern", [
    ([0, 1, 99], ValueError, "id 99 at position 2 is out of range"),
    ([0, -1], ValueError, "id -1 at position 1 is out of range"),
    ([[0, 1], [1, 0]], ValueError, r"shape \(2, 2\).*each row"),
    ([0.0, 1.0], TypeError, "integer ids"),
])
def test_decode_rejects_bad_ids(small, ids, error, pattern):
    with pytest.raises(error, match=pattern):
        small.decode(np.array(ids))


def test_a_given_vocabulary_is_used_and_checked(tmp_path):
    path = write_text(tmp_path / "abc.txt", "abcab")
    corpus = CharCorpus(path, chars="cba!")
    assert corpus.chars == ("c", "b", "a", "!") and corpus.encode("abc!").tolist() == [2, 1, 0, 3]
    assert corpus.decode([3, 0]) == "!c"
    with pytest.raises(ValueError, match=re.escape(str(path)) + ": character 'c' at "
                       "position 2"):
        CharCorpus(path, chars="ab")
    with pytest.raises(ValueError, match="'a' more than once"):
        CharCorpus(path, chars="abca")
    with pytest.raises(ValueError, match="single characters"):
        CharCorpus(path, chars=["ab", "c"])


@pytest.mark.parametrize("n", [2, 10, 25, 29, 101])
def test_the_split_is_the_first_90_percent_and_the_rest(tmp_path, n):
    content = "".join(chr(ord("a") + i % 26) for i in range(n))
    corpus = CharCorpus(write_text(tmp_path / "t.txt", content))
    _, train, val = nanogpt_prepare(content)
    assert corpus.train.tolist() == train and corpus.val.tolist() == val
    np.testing.assert_array_equal(np.concatenate([corpus.train, corpus.val]), corpus.data)
    assert corpus.split("train") is corpus.train and corpus.split("val") is corpus.val


def test_the_token_arrays_are_read_only(small):
    with pytest.raises(ValueError, match="read-only"):
        small.train[0] = 1


# ---------------------------------------------------------------------- batches
def expected_batch(data, generator, batch_size, block_size):
    """nanoGPT's get_batch, written out with a NumPy generator."""
    ix = generator.integers(0, len(data) - block_size, size=batch_size)
    x = np.stack([data[i:i + block_size].astype(np.int64) for i in ix])
    y = np.stack([data[i + 1:i + 1 + block_size].astype(np.int64) for i in ix])
    return x, y


def test_batches_are_nanogpts_windows_shifted_by_one(excerpt):
    x, y = excerpt.get_batch("train", 4, 16, np.random.default_rng(7))
    assert isinstance(x, tinynet.Tensor) and isinstance(y, tinynet.Tensor)
    assert x.shape == y.shape == (4, 16) and x.dtype == y.dtype == np.int64
    np.testing.assert_array_equal(x.numpy()[:, 1:], y.numpy()[:, :-1])
    want_x, want_y = expected_batch(excerpt.train, np.random.default_rng(7), 4, 16)
    np.testing.assert_array_equal(x.numpy(), want_x)
    np.testing.assert_array_equal(y.numpy(), want_y)
    for row_x, row_y in zip(x.numpy(), y.numpy(), strict=True):
        text = excerpt.decode(row_x) + excerpt.decode(row_y[-1:])
        assert text in excerpt.text[:len(excerpt.train)]


def test_batches_repeat_with_a_seed_and_differ_across_seeds(excerpt):
    def batch(generator):
        return excerpt.get_batch("val", 8, 32, generator, as_numpy=True)
    first, again = batch(np.random.default_rng(1)), batch(np.random.default_rng(1))
    np.testing.assert_array_equal(first[0], again[0])
    np.testing.assert_array_equal(first[1], again[1])
    np.testing.assert_array_equal(batch(1)[0], first[0])          # an int seed, the same
    assert not np.array_equal(batch(2)[0], first[0])
    generator = np.random.default_rng(1)
    batch(generator)
    assert not np.array_equal(batch(generator)[0], first[0])      # the generator advances


def test_batches_without_a_generator_follow_manual_seed(excerpt):
    tinynet.manual_seed(3)
    first = excerpt.get_batch("train", 2, 8)[0].numpy().copy()
    tinynet.manual_seed(3)
    np.testing.assert_array_equal(excerpt.get_batch("train", 2, 8)[0].numpy(), first)
    tinynet.manual_seed(4)
    assert not np.array_equal(excerpt.get_batch("train", 2, 8)[0].numpy(), first)


def test_the_longest_context_is_one_less_than_the_split(tmp_path):
    corpus = CharCorpus(write_text(tmp_path / "t.txt", "abcdefghijklmnopqrst"))  # val: 2
    x, y = corpus.get_batch("val", 3, len(corpus.val) - 1, 0, as_numpy=True)
    assert x.tolist() == [corpus.val[:-1].tolist()] * 3
    assert y.tolist() == [corpus.val[1:].tolist()] * 3
    with pytest.raises(ValueError, match=r"block_size 2 .*'val' split holds only 2"):
        corpus.get_batch("val", 1, 2)
    with pytest.raises(ValueError, match=r"block_size 50 .*'train' split holds only 18"):
        corpus.get_batch("train", 1, 50)


@pytest.mark.parametrize("kwargs, error, pattern", [
    (dict(split="test"), ValueError, "unknown split 'test'.*'train' or 'val'"),
    (dict(split="validation"), ValueError, "unknown split"),
    (dict(batch_size=0), ValueError, "batch_size must be at least 1, got 0"),
    (dict(batch_size=-2), ValueError, "batch_size must be at least 1, got -2"),
    (dict(block_size=0), ValueError, "block_size must be at least 1, got 0"),
    (dict(block_size=2.5), TypeError, "block_size must be an integer"),
    (dict(generator="seed"), TypeError, "generator"),
])
def test_bad_batch_arguments_are_clear_errors(small, kwargs, error, pattern):
    arguments = dict(split="train", batch_size=2, block_size=4, generator=0) | kwargs
    with pytest.raises(error, match=pattern):
        small.get_batch(**arguments)


@pytest.mark.gpu
@pytest.mark.skipif(not tinynet.cuda_is_available(), reason="needs CuPy and a CUDA GPU")
def test_batches_on_the_gpu_are_the_cpu_batches(excerpt):
    x, y = excerpt.get_batch("train", 4, 16, 5, device="cuda")
    assert x.device == y.device == "cuda" and x.dtype == np.int64
    cpu_x, cpu_y = excerpt.get_batch("train", 4, 16, 5)
    np.testing.assert_array_equal(x.cpu().numpy(), cpu_x.numpy())
    np.testing.assert_array_equal(y.cpu().numpy(), cpu_y.numpy())
    assert excerpt.decode(x[0]) == excerpt.decode(cpu_x.numpy()[0])


# ---------------------------------------------------------------- file errors
def test_a_missing_file_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match=re.escape(str(tmp_path / "nope.txt"))
                       + " does not exist"):
        CharCorpus(tmp_path / "nope.txt")
    with pytest.raises(FileNotFoundError, match="is not a file"):
        CharCorpus(tmp_path)


def test_a_corrupted_tinyshakespeare_names_the_file_and_both_digests(tmp_path):
    source = FULL_PATH if FULL_PATH is not None else SAMPLE_PATH
    raw = bytearray(source.read_bytes())
    raw[1000] ^= 0x20                                  # one letter's case flipped
    path = write_text(tmp_path / "tinyshakespeare" / "input.txt", bytes(raw))
    found = hashlib.sha256(bytes(raw)).hexdigest()
    with pytest.raises(ChecksumError, match=re.escape(str(path)) + ".*" + found + ".*"
                       + TINYSHAKESPEARE_SHA256):
        CharCorpus(path)
    assert isinstance(ChecksumError("x"), OSError)
    assert len(CharCorpus(path, tinyshakespeare=False)) == len(raw)   # told it is not


def test_the_checksum_applies_when_asked_or_given(tmp_path):
    path = write_text(tmp_path / "play.txt", "Exeunt.\n")
    assert len(CharCorpus(path)) == 8                        # not the known file's name
    with pytest.raises(ChecksumError, match=TINYSHAKESPEARE_SHA256):
        CharCorpus(path, tinyshakespeare=True)
    digest = hashlib.sha256(b"Exeunt.\n").hexdigest()
    assert CharCorpus(path, sha256=digest.upper()).sha256 == digest
    with pytest.raises(ChecksumError, match=re.escape(str(path)) + ".*" + digest
                       + ".*expected digest is " + "0" * 64):
        CharCorpus(path, sha256="0" * 64)


@pytest.mark.parametrize("raw, offset", [
    (b"Hamlet\n\xff the Dane", 7),
    (b"caf\xc3", 3),                                 # cut inside a two-byte character
    ("Ophélie".encode("latin-1"), 3),           # Latin-1, not UTF-8
])
def test_text_that_is_not_utf8_names_the_file_and_the_byte_offset(tmp_path, raw, offset):
    path = write_text(tmp_path / "bad.txt", raw)
    with pytest.raises(ValueError, match=re.escape(str(path)) + " is not UTF-8 text: byte "
                       f"0x{raw[offset]:02x} at byte offset {offset}"):
        CharCorpus(path)


def test_an_empty_file_is_an_error(tmp_path):
    path = write_text(tmp_path / "empty.txt", b"")
    with pytest.raises(ValueError, match=re.escape(str(path)) + " is empty"):
        CharCorpus(path)


# ------------------------------------------------------ where the file is found
def test_default_path_follows_tinynet_data(tmp_path, monkeypatch):
    home_path = tmp_path / "home" / ".cache" / "tinynet" / "tinyshakespeare" / "input.txt"
    assert default_path() == home_path
    monkeypatch.setenv("TINYNET_DATA", str(tmp_path / "data"))
    assert default_path() == tmp_path / "data" / "tinyshakespeare" / "input.txt"


def test_the_search_tries_tinynet_data_then_the_cache(tmp_path, monkeypatch):
    # A wrong file where the search looks first is reported, never skipped.
    cached = write_text(default_path(), "not Shakespeare\n")
    with pytest.raises(ChecksumError, match=re.escape(str(cached))):
        load_tinyshakespeare()
    monkeypatch.setenv("TINYNET_DATA", str(tmp_path / "data"))
    first = write_text(default_path(), "nor this\n")
    with pytest.raises(ChecksumError, match=re.escape(str(first))):
        load_tinyshakespeare()


def test_the_real_file_is_found_through_tinynet_data_or_home(full, tmp_path, monkeypatch,
                                                              capsys):
    data = tmp_path / "data" / "tinyshakespeare"
    data.mkdir(parents=True)
    (data / "input.txt").symlink_to(FULL_PATH)
    monkeypatch.setenv("TINYNET_DATA", str(tmp_path / "data"))
    corpus = load_tinyshakespeare()
    assert corpus.path == data / "input.txt" and not corpus.is_sample
    assert len(corpus) == FULL_LENGTH
    monkeypatch.delenv("TINYNET_DATA")
    cache = tmp_path / "home" / ".cache" / "tinynet" / "tinyshakespeare"
    cache.mkdir(parents=True)
    (cache / "input.txt").symlink_to(FULL_PATH)
    assert load_tinyshakespeare().path == cache / "input.txt"
    assert load_tinyshakespeare(FULL_PATH.parent).path == FULL_PATH      # a directory
    assert load_tinyshakespeare(FULL_PATH).vocab_size == FULL_VOCAB      # or the file
    assert capsys.readouterr().err == ""


def test_without_the_file_the_excerpt_comes_with_one_notice(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(text_module, "_sample_noticed", False)
    monkeypatch.setenv("TINYNET_DATA", str(tmp_path / "nowhere"))
    corpus = load_tinyshakespeare()
    assert corpus.is_sample and corpus.path == SAMPLE_PATH
    notice = capsys.readouterr().err
    assert notice.count("\n") == 1 and "bundled excerpt" in notice
    assert str(tmp_path / "nowhere" / "tinyshakespeare" / "input.txt") in notice
    assert str(tmp_path / "home" / ".cache" / "tinynet" / "tinyshakespeare") in notice
    assert not (tmp_path / "nowhere").exists()
    assert load_tinyshakespeare(chars=TINYSHAKESPEARE_CHARS).vocab_size == FULL_VOCAB
    assert capsys.readouterr().err == ""                           # once per process


def test_without_the_file_and_the_excerpt_the_error_says_where_to_put_it(tmp_path,
                                                                       monkeypatch):
    monkeypatch.setenv("TINYNET_DATA", str(tmp_path / "data"))
    with pytest.raises(FileNotFoundError) as error:
        load_tinyshakespeare(allow_sample=False)
    message = str(error.value)
    assert str(tmp_path / "data" / "tinyshakespeare" / "input.txt") in message
    assert str(tmp_path / "home" / ".cache" / "tinynet" / "tinyshakespeare") in message
    assert "TINYNET_DATA" in message


def test_a_given_root_must_hold_the_file_and_is_never_replaced(tmp_path, capsys):
    missing = tmp_path / "no-such-dir"
    with pytest.raises(FileNotFoundError, match=re.escape(str(missing))
                       + r" \(it does not exist\)"):
        load_tinyshakespeare(missing)
    with pytest.raises(FileNotFoundError, match=re.escape(str(tmp_path / "input.txt"))
                       + r" \(input.txt not found there\)"):
        load_tinyshakespeare(tmp_path, allow_sample=True)
    assert not missing.exists() and capsys.readouterr().err == ""
    given = write_text(tmp_path / "mine" / "input.txt", "short\n")
    with pytest.raises(ChecksumError, match=re.escape(str(given))):
        load_tinyshakespeare(given.parent)                # a given file is Tiny Shakespeare


def test_repr_names_the_sizes_and_the_file(small):
    text = repr(small)
    assert f"{len(small):,} characters" in text and f"vocab_size={small.vocab_size}" in text
    assert str(small.path) in text
