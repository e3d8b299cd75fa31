"""MNIST: the IDX reader's checks, the downloader, the bundled sample, the full data.

Everything runs offline: the IDX files are synthetic, written in tmp_path by
the helpers below (independently of tinynet's writer), and downloads come
from an HTTP server on 127.0.0.1. The full MNIST is used when ``$TINYNET_DATA``
points at a directory holding ``mnist/``.
"""
import contextlib
import functools
import gzip
import hashlib
import http.server
import importlib.util
import os
import re
import socket
import threading
from pathlib import Path

import numpy as np
import pytest

from tinynet.data import (
    MNIST,
    ChecksumError,
    DataLoader,
    DownloadError,
    MNISTFormatError,
    Subset,
    download_mnist,
    load_mnist,
    read_idx,
    write_idx,
)
from tinynet.data import mnist as mnist_module
from tinynet.data.mnist import MNIST_FILES, SAMPLE_ROOT, default_root

TRAIN_IMAGES, TRAIN_LABELS, TEST_IMAGES, TEST_LABELS = MNIST_FILES
REPO_ROOT = Path(__file__).resolve().parents[1]
# Read now: the tests themselves run with TINYNET_DATA unset.
FULL_MNIST_ROOT = (Path(os.environ["TINYNET_DATA"]) / "mnist"
                   if os.environ.get("TINYNET_DATA") else None)


# ------------------------------------------------------------ synthetic IDX files
def idx_bytes(array, magic=None, dims=None) -> bytes:
    """An uncompressed IDX file of unsigned bytes; ``magic`` and ``dims`` may lie."""
    array = np.asarray(array, dtype=np.uint8)
    magic = 0x0800 + array.ndim if magic is None else magic
    dims = array.shape if dims is None else dims
    header = magic.to_bytes(4, "big") + b"".join(d.to_bytes(4, "big") for d in dims)
    return header + array.tobytes()


def write_gz(path: Path, raw: bytes) -> Path:
    path.write_bytes(gzip.compress(raw))
    return path


def write_mnist_dir(directory: Path, n_train=12, n_test=5, seed=0) -> dict:
    """Four synthetic MNIST files; returns their uncompressed contents by name."""
    directory.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    contents = {}
    for (images_name, labels_name), n in (((TRAIN_IMAGES, TRAIN_LABELS), n_train),
                                          ((TEST_IMAGES, TEST_LABELS), n_test)):
        contents[images_name] = idx_bytes(rng.integers(0, 256, (n, 28, 28)))
        contents[labels_name] = idx_bytes(np.arange(n) % 10)
    for name, raw in contents.items():
        write_gz(directory / name, raw)
    return contents


def sha256s(contents: dict) -> dict:
    return {name: hashlib.sha256(raw).hexdigest() for name, raw in contents.items()}


def leftovers(directory: Path) -> list:
    """Temporary files left in ``directory`` (there should be none)."""
    return [p.name for p in directory.iterdir() if p.name.startswith(".")]


@pytest.fixture(autouse=True)
def _hermetic_locations(tmp_path, monkeypatch):
    """No test sees the user's cache, the real TINYNET_DATA or a mirror variable."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("TINYNET_DATA", raising=False)
    monkeypatch.delenv("TINYNET_MNIST_MIRROR", raising=False)


@pytest.fixture
def mnist_dir(tmp_path):
    directory = tmp_path / "mnist"
    write_mnist_dir(directory)
    return directory


def expect_format_error(path: Path, pattern: str):
    return pytest.raises(MNISTFormatError, match=re.escape(str(path)) + ".*" + pattern)


# -------------------------------------------------------------------- IDX reader
def test_good_files_parse_into_the_documented_arrays(mnist_dir):
    dataset = MNIST(mnist_dir, train=True, download=False)
    assert len(dataset) == 12 and dataset.train and not dataset.is_sample
    assert dataset.images.dtype == np.uint8 and dataset.images.shape == (12, 28, 28)
    assert dataset.labels.dtype == np.int64
    np.testing.assert_array_equal(dataset.labels, np.arange(12) % 10)
    image, label = dataset[3]
    assert image.dtype == np.float32 and image.shape == (784,) and label == 3
    np.testing.assert_array_equal(image, dataset.images[3].reshape(-1) / np.float32(255))
    test = MNIST(mnist_dir, train=False, download=False, flatten=False)
    assert len(test) == 5 and test[0][0].shape == (28, 28)


def test_write_idx_round_trips_reproducibly_and_atomically(tmp_path):
    array = np.random.default_rng(0).integers(0, 256, (3, 28, 28)).astype(np.uint8)
    write_idx(tmp_path / "a.gz", array)
    first = (tmp_path / "a.gz").read_bytes()
    write_idx(tmp_path / "a.gz", array)
    assert (tmp_path / "a.gz").read_bytes() == first
    np.testing.assert_array_equal(read_idx(tmp_path / "a.gz", 2051), array)
    assert gzip.decompress(first) == idx_bytes(array)
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("name, raw, pattern", [
    (TRAIN_IMAGES, idx_bytes(np.zeros((2, 28, 28)), magic=2049),
     "magic number 2049 .* expected 2051"),
    (TRAIN_LABELS, idx_bytes(np.zeros((2, 1)), magic=0x0802),
     r"magic number 2050 \(type 0x08, 2 dimensions\), expected 2049"),
    (TRAIN_IMAGES, idx_bytes(np.zeros((2, 28, 28)))[:-10], "truncated.*1558"),
    (TRAIN_IMAGES, idx_bytes(np.zeros((2, 28, 28))) + b"\0", "extra bytes"),
    (TRAIN_IMAGES, idx_bytes(np.zeros((2, 28, 27))), "28×27 pixels, expected 28×28"),
    (TRAIN_IMAGES, idx_bytes(np.zeros((2, 28, 28)))[:10], "truncated header"),
    (TRAIN_IMAGES, b"\0\0", "too short"),
    (TRAIN_LABELS, idx_bytes([1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 10, 11]),
     "label 10 at index 10"),
])
def test_bad_files_raise_a_clear_error_naming_the_file(mnist_dir, name, raw, pattern):
    write_gz(mnist_dir / name, raw)
    with expect_format_error(mnist_dir / name, pattern):
        MNIST(mnist_dir, train=True, download=False)


def test_image_and_label_counts_must_agree(mnist_dir):
    write_gz(mnist_dir / TRAIN_LABELS, idx_bytes(np.arange(11) % 10))
    pattern = (re.escape(str(mnist_dir / TRAIN_IMAGES)) + " holds 12 images but "
               + re.escape(str(mnist_dir / TRAIN_LABELS)) + " holds 11 labels")
    with pytest.raises(MNISTFormatError, match=pattern):
        MNIST(mnist_dir, train=True, download=False)


@pytest.mark.parametrize("damage, pattern", [
    (lambda gz: gz[:len(gz) // 2], "not a valid gzip file"),
    (lambda gz: gz[:-8] + b"\0" * 8, "not a valid gzip file.*CRC"),
    (lambda gz: gzip.decompress(gz), "not a valid gzip file"),
], ids=["cut short", "wrong CRC", "not compressed"])
def test_gzip_damage_raises_a_clear_error(mnist_dir, damage, pattern):
    path = mnist_dir / TRAIN_IMAGES
    path.write_bytes(damage(path.read_bytes()))
    with expect_format_error(path, pattern):
        MNIST(mnist_dir, train=True, download=False)


def test_missing_files_without_download_name_file_and_directory(tmp_path):
    with pytest.raises(FileNotFoundError, match=re.escape(str(tmp_path)) + ".*download=True"):
        MNIST(tmp_path, train=False, download=False)


def test_present_files_are_only_read(mnist_dir):
    before = {p.name: p.stat().st_mtime_ns for p in mnist_dir.iterdir()}
    MNIST(mnist_dir, train=True, download=True)
    assert {p.name: p.stat().st_mtime_ns for p in mnist_dir.iterdir()} == before


def test_batches_of_a_subset_of_mnist(mnist_dir):
    dataset = MNIST(mnist_dir, train=True, download=False)
    x, y = next(iter(DataLoader(Subset(dataset, [4, 0, 7]), batch_size=3)))
    assert x.dtype == np.float32 and x.shape == (3, 784)
    np.testing.assert_array_equal(y.numpy(), [4, 0, 7])
    np.testing.assert_array_equal(x.numpy(), dataset.arrays[0][[4, 0, 7]])


# ------------------------------------------------------------ where files are found
def test_default_root_follows_tinynet_data(tmp_path, monkeypatch):
    assert default_root() == tmp_path / "home" / ".cache" / "tinynet" / "mnist"
    monkeypatch.setenv("TINYNET_DATA", str(tmp_path / "data"))
    assert default_root() == tmp_path / "data" / "mnist"


def test_load_mnist_prefers_full_data_found_through_tinynet_data(tmp_path, monkeypatch,
                                                                   capsys):
    write_mnist_dir(tmp_path / "data" / "mnist")
    monkeypatch.setenv("TINYNET_DATA", str(tmp_path / "data"))
    dataset = load_mnist(train=True)
    assert dataset.root == tmp_path / "data" / "mnist" and len(dataset) == 12
    assert capsys.readouterr().err == ""


def test_load_mnist_falls_back_on_the_sample_with_a_notice(tmp_path, capsys, monkeypatch):
    import tinynet.data.mnist as mnist_module
    monkeypatch.setattr(mnist_module, "_sample_noticed", False)
    monkeypatch.setenv("TINYNET_DATA", str(tmp_path / "nowhere"))
    dataset = load_mnist(train=False)
    assert dataset.is_sample and len(dataset) == 10_000
    notice = capsys.readouterr().err
    assert notice.count("\n") == 1
    assert "full MNIST not found in " + str(tmp_path / "nowhere" / "mnist") in notice
    assert str(tmp_path / "home" / ".cache" / "tinynet" / "mnist") in notice
    assert "bundled sample" in notice
    assert not (tmp_path / "nowhere").exists()
    load_mnist(train=True)
    assert capsys.readouterr().err == ""            # once per process


@pytest.mark.parametrize("train", [True, False])
def test_load_mnist_from_a_directory_that_does_not_exist_is_an_error(tmp_path, train):
    given = tmp_path / "no-such-dir"
    with pytest.raises(FileNotFoundError, match=re.escape(str(given)) + r" \(the directory "
                       r"does not exist\).*" + re.escape(", ".join(MNIST_FILES))):
        load_mnist(given, train=train)
    assert not given.exists()


def test_load_mnist_from_a_directory_without_the_files_names_those_missing(tmp_path, capsys):
    given = tmp_path / "mnist"
    write_mnist_dir(given)
    (given / TEST_LABELS).unlink()
    assert len(load_mnist(given, train=True)) == 12         # the training files are there
    with pytest.raises(FileNotFoundError, match="no test set in " + re.escape(str(given))
                       + f" \\({re.escape(TEST_LABELS)} not found there\\)"):
        load_mnist(given, train=False)
    with pytest.raises(FileNotFoundError, match=re.escape(TRAIN_IMAGES)):
        load_mnist(tmp_path, train=True, allow_sample=True)  # a given root is never replaced
    assert capsys.readouterr().err == ""                     # no notice of a sample either


def test_load_mnist_without_the_sample_says_where_to_put_files(tmp_path):
    with pytest.raises(FileNotFoundError, match=re.escape(str(tmp_path / "home"))
                       + ".*" + TRAIN_IMAGES):
        load_mnist(allow_sample=False)


# ------------------------------------------------------------------- downloading
class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@contextlib.contextmanager
def serving(directory: Path):
    """An HTTP server on 127.0.0.1 serving ``directory``; yields its base URL."""
    handler = functools.partial(QuietHandler, directory=str(directory))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01},
                              daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@pytest.fixture
def mirror(tmp_path, monkeypatch):
    """(base URL, served directory, checksums) of a local mirror of synthetic files."""
    monkeypatch.setenv("no_proxy", "127.0.0.1")
    for variable in ("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(variable, raising=False)
    served = tmp_path / "served"
    checksums = sha256s(write_mnist_dir(served))
    with serving(served) as url:
        yield url, served, checksums


@pytest.fixture
def closed_port_url():
    """A URL on 127.0.0.1 where nothing listens: what "no network" looks like."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/"


def test_download_verifies_renames_and_shows_progress(mirror, tmp_path, capsys):
    url, served, checksums = mirror
    target = tmp_path / "new" / "mnist"
    assert download_mnist(target, mirrors=[url], checksums=checksums) == target
    for name in MNIST_FILES:
        assert (target / name).read_bytes() == (served / name).read_bytes()
    assert leftovers(target) == []
    progress = capsys.readouterr().err
    assert all(name in progress for name in MNIST_FILES)
    assert len(MNIST(target, train=True, download=False)) == 12


def test_download_tries_the_next_mirror_and_keeps_files_already_there(
        mirror, tmp_path, closed_port_url):
    url, served, checksums = mirror
    target = tmp_path / "mnist"
    target.mkdir()
    (target / TRAIN_LABELS).write_bytes(b"kept")
    download_mnist(target, mirrors=[closed_port_url, url], checksums=checksums,
                   progress=False)
    assert (target / TRAIN_LABELS).read_bytes() == b"kept"
    assert (target / TEST_IMAGES).read_bytes() == (served / TEST_IMAGES).read_bytes()


@pytest.mark.parametrize("served_content, pattern", [
    (gzip.compress(b"something else"), "wrong content.*expected"),
    (b"not gzip at all", "not a valid gzip file"),
], ids=["other data", "not gzip"])
def test_wrong_content_raises_and_leaves_nothing(mirror, tmp_path, served_content, pattern):
    url, served, checksums = mirror
    (served / TRAIN_LABELS).write_bytes(served_content)
    target = tmp_path / "mnist"
    with pytest.raises(ChecksumError, match=re.escape(url + TRAIN_LABELS) + ".*" + pattern):
        download_mnist(target, mirrors=[url], checksums=checksums, progress=False)
    assert not (target / TRAIN_LABELS).exists()
    assert leftovers(target) == []


def test_no_network_names_the_file_the_mirrors_and_where_to_put_files(
        tmp_path, closed_port_url):
    target = tmp_path / "mnist"
    with pytest.raises(DownloadError) as error:
        download_mnist(target, mirrors=[closed_port_url], progress=False)
    message = str(error.value)
    assert isinstance(error.value, OSError)
    assert f"could not download {TRAIN_IMAGES}" in message
    assert closed_port_url + TRAIN_IMAGES in message
    assert f"put these files into {target}" in message
    assert all(name in message for name in MNIST_FILES)
    assert leftovers(target) == []


def test_a_missing_file_on_the_mirror_is_reported(mirror, tmp_path):
    url, served, checksums = mirror
    (served / TEST_LABELS).unlink()
    with pytest.raises(DownloadError, match=re.escape(url + TEST_LABELS) + ".*404"):
        download_mnist(tmp_path / "mnist", mirrors=[url], checksums=checksums,
                       progress=False)


def test_mnist_downloads_from_the_mirror_of_the_environment(mirror, tmp_path, monkeypatch):
    url, served, checksums = mirror
    monkeypatch.setenv("TINYNET_MNIST_MIRROR", url)
    monkeypatch.setattr(mnist_module, "MNIST_SHA256", checksums)
    dataset = MNIST(tmp_path / "mnist", train=False, download=True)
    assert len(dataset) == 5


def test_mirrors_come_from_the_argument_then_the_environment_then_the_constant(
        tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(mnist_module, "download_files",
                        lambda root, checksums, mirrors, progress: calls.append(list(mirrors)))
    download_mnist(tmp_path)
    monkeypatch.setenv("TINYNET_MNIST_MIRROR", "http://a/, http://b/")
    download_mnist(tmp_path)
    download_mnist(tmp_path, mirrors=["http://c/"])
    assert calls == [list(mnist_module.MNIST_MIRRORS), ["http://a/", "http://b/"],
                     ["http://c/"]]


# ----------------------------------------------------------------------- sample
@pytest.fixture(scope="module")
def sample():
    return {train: MNIST(SAMPLE_ROOT, train=train, download=False) for train in (True, False)}


@pytest.fixture(scope="module")
def full_mnist():
    """The full MNIST of ``$TINYNET_DATA/mnist``, or a skip."""
    if FULL_MNIST_ROOT is None or not all((FULL_MNIST_ROOT / n).is_file() for n in MNIST_FILES):
        pytest.skip("full MNIST not available (set TINYNET_DATA to the directory holding mnist/)")
    return {train: MNIST(FULL_MNIST_ROOT, train=train, download=False)
            for train in (True, False)}


def test_the_sample_is_10000_plausible_examples_per_split(sample):
    for dataset in sample.values():
        assert dataset.is_sample and len(dataset) == 10_000
        counts = np.bincount(dataset.labels, minlength=10)
        assert len(counts) == 10 and counts.min() > 800 and counts.max() < 1200
        pixels = dataset.arrays[0]
        assert pixels.dtype == np.float32 and pixels.min() == 0.0 and pixels.max() == 1.0


def test_the_sample_is_the_start_of_the_full_training_set_and_the_test_set(sample, full_mnist):
    np.testing.assert_array_equal(sample[True].images, full_mnist[True].images[:10_000])
    np.testing.assert_array_equal(sample[True].labels, full_mnist[True].labels[:10_000])
    np.testing.assert_array_equal(sample[False].images, full_mnist[False].images)
    np.testing.assert_array_equal(sample[False].labels, full_mnist[False].labels)


def test_the_full_mnist_has_the_known_label_counts(full_mnist):
    train, test = full_mnist[True], full_mnist[False]
    assert len(train) == 60_000 and len(test) == 10_000
    assert np.bincount(train.labels).tolist() == [5923, 6742, 5958, 6131, 5842, 5421,
                                                  5918, 6265, 5851, 5949]
    assert np.bincount(test.labels).tolist() == [980, 1135, 1032, 1010, 982, 892,
                                                 958, 1028, 974, 1009]


# --------------------------------------------------------------- the sample tool
def load_tool():
    spec = importlib.util.spec_from_file_location(
        "make_mnist_sample", REPO_ROOT / "tools" / "make_mnist_sample.py")
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    return tool


def test_sample_tool_copies_the_first_examples_reproducibly(mnist_dir, tmp_path):
    tool = load_tool()
    for out in (tmp_path / "a", tmp_path / "b"):
        out.mkdir()
        tool.copy_split(mnist_dir, out, (TRAIN_IMAGES, TRAIN_LABELS), 4)
    assert (tmp_path / "a" / TRAIN_IMAGES).read_bytes() == \
        (tmp_path / "b" / TRAIN_IMAGES).read_bytes()
    source = MNIST(mnist_dir, train=True, download=False)
    copy = MNIST(tmp_path / "a", train=True, download=False)
    np.testing.assert_array_equal(copy.images, source.images[:4])
    np.testing.assert_array_equal(copy.labels, source.labels[:4])


def test_sample_tool_refuses_data_that_is_not_mnist(mnist_dir):
    with pytest.raises(SystemExit, match="not the MNIST data"):
        load_tool().main([str(mnist_dir), "--out", str(mnist_dir / "out")])
    assert not (mnist_dir / "out").exists()
