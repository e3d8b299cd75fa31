"""tinynet.save / tinynet.load: what a damaged or foreign file gives, and atomic writes."""
import os
import re

import numpy as np
import pytest

import tinynet
from tinynet import serialization, torch_writer


@pytest.fixture
def checkpoint(tmp_path):
    """(path, bytes) of a small checkpoint holding tensors, numbers and strings."""
    path = tmp_path / "model.npz"
    tinynet.save({"weight": tinynet.ones(2, 3), "step": 7, "names": ["a", "b"]}, path)
    return path, path.read_bytes()


def expect_checkpoint_error(path, *patterns):
    """A CheckpointError that names ``path`` and matches each of ``patterns``."""
    pattern = "".join(f"(?=.*{p})" for p in (re.escape(str(path)),) + patterns)
    return pytest.raises(tinynet.CheckpointError, match=pattern)


def test_checkpoint_error_is_a_value_error_exported_at_the_top():
    assert issubclass(tinynet.CheckpointError, ValueError)
    assert tinynet.CheckpointError is serialization.CheckpointError
    assert "CheckpointError" in serialization.__all__


def test_a_whole_checkpoint_round_trips(checkpoint):
    path, _ = checkpoint
    loaded = tinynet.load(path)
    np.testing.assert_array_equal(loaded["weight"].numpy(), np.ones((2, 3), np.float32))
    assert loaded["step"] == 7 and loaded["names"] == ["a", "b"]


@pytest.mark.parametrize("keep", ["none", "one byte", "three bytes", "header", "half",
                                  "all but the end record", "all but one"])
def test_a_truncated_checkpoint_is_named_and_called_truncated(tmp_path, checkpoint, keep):
    _, data = checkpoint
    size = {"none": 0, "one byte": 1, "three bytes": 3, "header": 30, "half": len(data) // 2,
            "all but the end record": len(data) - 22, "all but one": len(data) - 1}[keep]
    path = tmp_path / "cut.npz"
    path.write_bytes(data[:size])
    with expect_checkpoint_error(path, "truncated"):
        tinynet.load(path)


def test_every_truncation_raises_a_checkpoint_error(tmp_path, checkpoint):
    _, data = checkpoint
    path = tmp_path / "cut.npz"
    for size in range(len(data)):
        path.write_bytes(data[:size])
        with expect_checkpoint_error(path, "truncated"):
            tinynet.load(path)


def test_a_flipped_byte_in_the_data_is_reported_as_corrupt(tmp_path, checkpoint):
    _, data = checkpoint
    damaged = bytearray(data)
    where = data.index(np.ones(6, np.float32).tobytes())   # the weight's values
    damaged[where] ^= 0xFF
    path = tmp_path / "damaged.npz"
    path.write_bytes(bytes(damaged))
    with expect_checkpoint_error(path, "corrupt", "CRC"):
        tinynet.load(path)


def test_random_bytes_are_not_a_checkpoint(tmp_path):
    path = tmp_path / "noise.npz"
    path.write_bytes(np.random.default_rng(0).integers(0, 256, 1000, np.uint8).tobytes())
    with expect_checkpoint_error(path, "not a tinynet checkpoint", "not a zip archive"):
        tinynet.load(path)


def test_a_text_file_is_not_a_checkpoint(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("learning rate 1e-3, batch size 32\n")
    with expect_checkpoint_error(path, "not a tinynet checkpoint"):
        tinynet.load(path)


def test_an_npz_from_numpy_is_not_a_checkpoint(tmp_path):
    path = tmp_path / "arrays.npz"
    np.savez(path, weight=np.ones(3))
    with expect_checkpoint_error(path, "not a tinynet checkpoint", "numpy.savez"):
        tinynet.load(path)


def test_an_npy_from_numpy_is_not_a_checkpoint(tmp_path):
    path = tmp_path / "weight.npy"
    np.save(path, np.ones(3))
    with expect_checkpoint_error(path, "not a tinynet checkpoint", r"\.npy"):
        tinynet.load(path)


def test_a_missing_file_is_file_not_found_naming_it(tmp_path):
    path = tmp_path / "absent.npz"
    with pytest.raises(FileNotFoundError, match=re.escape(str(path))):
        tinynet.load(path)


def test_save_renames_a_temporary_file_from_the_same_directory(tmp_path, monkeypatch):
    renames = []
    real_replace = os.replace

    def recording_replace(source, target):
        renames.append((source, target, open(source, "rb").read()))
        real_replace(source, target)

    monkeypatch.setattr(os, "replace", recording_replace)
    path = tmp_path / "model.npz"
    tinynet.save({"w": tinynet.ones(3)}, path)
    (source, target, written), = renames
    assert target == str(path) and source != target
    assert os.path.dirname(source) == str(tmp_path)
    assert written == path.read_bytes()


def test_an_error_mid_save_leaves_the_old_checkpoint_whole(tmp_path, monkeypatch, checkpoint):
    path, before = checkpoint

    def write_then_disk_full(obj, file, folder):
        file.write(before[:100])                 # part of an archive reaches the disk
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(torch_writer, "write_zip", write_then_disk_full)
    with pytest.raises(OSError, match="No space left"):
        tinynet.save({"weight": tinynet.zeros(2, 3)}, path)
    assert path.read_bytes() == before
    assert os.listdir(path.parent) == [path.name]          # no temporary file left
    np.testing.assert_array_equal(tinynet.load(path)["weight"].numpy(), np.ones((2, 3)))
