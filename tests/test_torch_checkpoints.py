"""tinynet.save / tinynet.load of any picklable object, weights_only, and PyTorch's format.

The tests that need PyTorch (files written by ``torch.save``, read by ``torch.load``)
skip without it; the rest run everywhere.
"""
import io
import pickle
import re
import zipfile
from collections import OrderedDict

import numpy as np
import pytest

import tinynet
from tinynet import nn, serialization, torch_format

FORMATS = ["tinynet", "torch"]


class Config:
    """A class of the user's: weights_only must refuse it until it is allowed."""

    def __init__(self, width):
        self.width = width


calls = []


def record_call(*args):
    calls.append(args)


class Exploit:
    """Pickles as a call of ``record_call``, as a malicious file would call os.system."""

    def __reduce__(self):
        return record_call, ("ran",)


@pytest.fixture(autouse=True)
def no_safe_globals():
    serialization.clear_safe_globals()
    yield
    serialization.clear_safe_globals()


def model():
    return nn.Sequential(nn.Linear(4, 8), nn.LayerNorm(8), nn.ReLU(), nn.Linear(8, 3))


def round_trip(obj, fmt, where, tmp_path, **load_args):
    """``obj`` saved in ``fmt`` to a path or a BytesIO (``where``) and loaded back."""
    if where == "path":
        tinynet.save(obj, tmp_path / "checkpoint.pt", format=fmt)
        return tinynet.load(tmp_path / "checkpoint.pt", **load_args)
    buffer = io.BytesIO()
    tinynet.save(obj, buffer, format=fmt)
    buffer.seek(0)
    return tinynet.load(buffer, **load_args)


def assert_same_tensor(ours, expected):
    assert isinstance(ours, tinynet.Tensor)
    assert ours.dtype == expected.dtype and ours.shape == expected.shape
    np.testing.assert_array_equal(ours.numpy(), expected.numpy())


# ------------------------------------------------------------------ round trips
@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("where", ["path", "bytesio"])
def test_a_state_dict_round_trips_into_a_model_with_the_same_outputs(tmp_path, fmt, where):
    source, target = model(), model()
    loaded = round_trip(source.state_dict(), fmt, where, tmp_path)
    assert isinstance(loaded, OrderedDict) and list(loaded) == list(source.state_dict())
    target.load_state_dict(loaded)
    x = tinynet.randn(5, 4)
    np.testing.assert_array_equal(target(x).numpy(), source(x).numpy())


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_whole_module_round_trips_with_weights_only_false(tmp_path, fmt):
    source = model()
    loaded = round_trip(source, fmt, "path", tmp_path, weights_only=False)
    assert type(loaded) is nn.Sequential and isinstance(loaded[0], nn.Linear)
    assert all(isinstance(p, nn.Parameter) for p in loaded.parameters())
    x = tinynet.randn(2, 4)
    np.testing.assert_array_equal(loaded(x).numpy(), source(x).numpy())


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_whole_module_is_refused_by_weights_only_naming_its_class(tmp_path, fmt):
    tinynet.save(model(), tmp_path / "model.pt", format=fmt)
    with pytest.raises(pickle.UnpicklingError, match=r"(?s)(?=.*GLOBAL tinynet\.nn\.containers"
                       r"\.Sequential was not an allowed global)(?=.*add_safe_globals)"
                       r"(?=.*weights_only=False)(?=.*model\.pt)"):
        tinynet.load(tmp_path / "model.pt")


@pytest.mark.parametrize("fmt", FORMATS)
def test_an_optimizer_state_round_trips_and_training_continues_identically(tmp_path, fmt):
    def train(net, optimizer, steps):
        for _ in range(steps):
            optimizer.zero_grad()
            (net(tinynet.ones(3, 4)) ** 2).sum().backward()
            optimizer.step()

    net = model()
    optimizer = tinynet.optim.Adam(net.parameters(), lr=1e-2)
    train(net, optimizer, 2)
    saved = round_trip({"model": net.state_dict(), "optimizer": optimizer.state_dict()},
                       fmt, "bytesio", tmp_path)
    resumed = model()
    resumed.load_state_dict(saved["model"])
    resumed_optimizer = tinynet.optim.Adam(resumed.parameters(), lr=1e-2)
    resumed_optimizer.load_state_dict(saved["optimizer"])
    assert saved["optimizer"]["param_groups"] == optimizer.state_dict()["param_groups"]
    train(net, optimizer, 2)
    train(resumed, resumed_optimizer, 2)
    for ours, theirs in zip(resumed.parameters(), net.parameters(), strict=True):
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


NESTED = {"step": 7, "lr": 1e-3, "name": "run-1", "flags": [True, False, None],
          "shape": (2, 3), "nested": {"deeper": [1, [2.5, "three"]], 4: "int key"},
          "bytes": b"\x00\xff", "tags": {"a", "b"}, "complex": 1 + 2j,
          "ordered": OrderedDict([("b", 1), ("a", 2)])}


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("where", ["path", "bytesio"])
def test_nested_containers_of_numbers_and_strings_round_trip(tmp_path, fmt, where):
    obj = dict(NESTED, tensors=[tinynet.ones(2), {"t": tinynet.arange(3)}])
    loaded = round_trip(obj, fmt, where, tmp_path)
    tensors = loaded.pop("tensors")
    assert loaded == NESTED and type(loaded["ordered"]) is OrderedDict
    assert type(loaded["shape"]) is tuple and type(loaded["tags"]) is set
    assert_same_tensor(tensors[0], tinynet.ones(2))
    assert_same_tensor(tensors[1]["t"], tinynet.arange(3))


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int8", "int16", "int32",
                                   "int64", "uint8", "uint16", "bool", "complex64"])
def test_each_dtype_round_trips(tmp_path, fmt, dtype):
    values = np.array([[0, 1, 2], [3, 4, 5]]).astype(dtype)
    loaded = round_trip({"x": tinynet.from_numpy(values)}, fmt, "bytesio", tmp_path)["x"]
    assert_same_tensor(loaded, tinynet.from_numpy(values))


@pytest.mark.parametrize("fmt", FORMATS)
def test_views_of_one_array_come_back_sharing_memory(tmp_path, fmt):
    base = np.arange(12, dtype=np.float32).reshape(3, 4)
    views = {"base": base, "t": base.T, "row": base[1], "column": base[:, 2],
             "every_other": base[:, ::2], "reversed": base[::-1]}
    loaded = round_trip({k: tinynet.from_numpy(v) for k, v in views.items()}, fmt, "bytesio",
                        tmp_path)
    for key, view in views.items():
        np.testing.assert_array_equal(loaded[key].numpy(), view)
    if fmt == "torch":      # a view is a view of one storage; tinynet's format stores copies
        loaded["base"].numpy()[1, 2] = -1.0
        assert loaded["t"].numpy()[2, 1] == loaded["row"].numpy()[2] == -1.0
        assert loaded["column"].numpy()[1] == loaded["every_other"].numpy()[1, 1] == -1.0


@pytest.mark.parametrize("fmt", FORMATS)
def test_one_tensor_in_two_places_is_saved_once_and_comes_back_shared(tmp_path, fmt):
    weight = nn.Parameter(tinynet.randn(3, 3))
    loaded = round_trip({"a": weight, "b": weight, "c": weight.detach()}, fmt, "bytesio",
                        tmp_path)
    assert loaded["a"] is loaded["b"] and isinstance(loaded["a"], nn.Parameter)
    assert np.shares_memory(loaded["a"].numpy(), loaded["c"].numpy())


def test_numpy_values_stay_numpy_in_tinynets_format_and_become_tensors_in_torchs(tmp_path):
    obj = {"array": np.arange(3.0), "scalar": np.float32(2.5), "dtype": np.float16}
    ours = round_trip(obj, "tinynet", "bytesio", tmp_path)
    assert type(ours["array"]) is np.ndarray and ours["scalar"].dtype == np.float32
    assert ours["dtype"] is np.float16
    torchs = round_trip(obj, "torch", "bytesio", tmp_path)
    assert_same_tensor(torchs["array"], tinynet.arange(3.0, dtype=tinynet.float64))
    assert torchs["scalar"] == 2.5 and type(torchs["scalar"]) is float
    assert torchs["dtype"] is np.float16


def test_requires_grad_is_kept(tmp_path):
    loaded = round_trip({"w": tinynet.ones(2, requires_grad=True), "b": tinynet.ones(2)},
                        "torch", "bytesio", tmp_path)
    assert loaded["w"].requires_grad and not loaded["b"].requires_grad


def test_an_unknown_format_is_refused(tmp_path):
    with pytest.raises(ValueError, match="unknown checkpoint format 'onnx'"):
        tinynet.save({}, tmp_path / "x", format="onnx")


def test_a_file_saved_in_tinynets_earlier_json_format_still_loads(tmp_path):
    structure = '{"__dict__": [["weight", {"__tensor__": 0}], ["step", 7]]}'
    path = tmp_path / "old.npz"
    np.savez(path, a0=np.ones((2, 3), np.float32), __tinynet_structure__=np.array(structure))
    loaded = tinynet.load(path)
    assert loaded["step"] == 7
    assert_same_tensor(loaded["weight"], tinynet.ones(2, 3))


# ------------------------------------------------------------------ weights_only
@pytest.mark.parametrize("fmt", FORMATS)
def test_weights_only_refuses_a_class_of_the_users_naming_it_and_how_to_allow_it(tmp_path, fmt):
    tinynet.save({"config": Config(3)}, tmp_path / "run.pt", format=fmt)
    name = f"{Config.__module__}.Config"
    with pytest.raises(pickle.UnpicklingError) as refused:
        tinynet.load(tmp_path / "run.pt")
    message = str(refused.value)
    assert f"Unsupported global: GLOBAL {name} was not an allowed global" in message
    assert f"add_safe_globals([{name}])" in message and f"safe_globals([{name}])" in message
    assert "weights_only=False" in message and str(tmp_path / "run.pt") in message
    with pytest.raises(pickle.UnpicklingError, match="Config"):
        tinynet.load(tmp_path / "run.pt", weights_only=None)      # None means True
    assert tinynet.load(tmp_path / "run.pt", weights_only=False)["config"].width == 3


@pytest.mark.parametrize("fmt", FORMATS)
def test_add_safe_globals_allows_a_class(tmp_path, fmt):
    tinynet.save({"config": Config(3)}, tmp_path / "run.pt", format=fmt)
    serialization.add_safe_globals([Config])
    assert serialization.get_safe_globals() == [Config]
    assert tinynet.load(tmp_path / "run.pt")["config"].width == 3
    serialization.clear_safe_globals()
    with pytest.raises(pickle.UnpicklingError, match="Config"):
        tinynet.load(tmp_path / "run.pt")


def test_a_safe_global_can_be_allowed_under_the_name_the_file_gives_it(tmp_path):
    tinynet.save({"config": Config(3)}, tmp_path / "run.pt")
    entry = (Config, f"{Config.__module__}.Config")
    serialization.add_safe_globals([entry])
    assert serialization.get_safe_globals() == [entry]
    assert tinynet.load(tmp_path / "run.pt")["config"].width == 3


def test_safe_globals_allows_a_class_within_its_block_only(tmp_path):
    tinynet.save([Config(5)], tmp_path / "run.pt")
    with serialization.safe_globals([Config]):
        assert tinynet.load(tmp_path / "run.pt")[0].width == 5
    assert serialization.get_safe_globals() == []
    with pytest.raises(pickle.UnpicklingError, match="Config"):
        tinynet.load(tmp_path / "run.pt")


@pytest.mark.parametrize("fmt", FORMATS)
def test_weights_only_never_calls_a_function_the_file_names(tmp_path, fmt):
    calls.clear()
    tinynet.save({"payload": Exploit()}, tmp_path / "evil.pt", format=fmt)
    with pytest.raises(pickle.UnpicklingError, match="record_call"):
        tinynet.load(tmp_path / "evil.pt")
    assert calls == []
    tinynet.load(tmp_path / "evil.pt", weights_only=False)      # trusted: it runs
    assert calls == [("ran",)]


def test_weights_only_refuses_setting_the_state_of_a_class_itself(tmp_path):
    # GLOBAL collections.OrderedDict, then BUILD with {"x": 1} on the class object
    pickled = b"\x80\x02ccollections\nOrderedDict\n}X\x01\x00\x00\x00xK\x01sb."
    path = tmp_path / "crafted.pt"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("archive/data.pkl", pickled)
    with pytest.raises(pickle.UnpicklingError, match="not an allowed class"):
        tinynet.load(path)


# -------------------------------------------------------------- map_location, mmap
def saved_on(location: str) -> io.BytesIO:
    """A PyTorch-format checkpoint of one tensor whose storage says it lives on ``location``."""
    buffer = io.BytesIO()
    tinynet.save({"w": tinynet.arange(4.0)}, buffer, format="torch")
    with zipfile.ZipFile(buffer) as archive:
        records = {name: archive.read(name) for name in archive.namelist()}
    cpu = b"X\x03\x00\x00\x00cpu"
    records["archive/data.pkl"] = records["archive/data.pkl"].replace(
        cpu, b"X" + len(location).to_bytes(4, "little") + location.encode())
    moved = io.BytesIO()
    with zipfile.ZipFile(moved, "w") as archive:
        for name, data in records.items():
            archive.writestr(name, data)
    moved.seek(0)
    return moved


@pytest.mark.parametrize("map_location", ["cpu", {"cuda:0": "cpu"},
                                          lambda storage, location: storage],
                         ids=["device", "dict", "function"])
def test_map_location_puts_tensors_saved_on_a_gpu_onto_the_cpu(map_location):
    loaded = tinynet.load(saved_on("cuda:0"), map_location=map_location)
    assert loaded["w"].device == "cpu"
    np.testing.assert_array_equal(loaded["w"].numpy(), np.arange(4.0, dtype=np.float32))


def test_a_map_location_function_sees_each_storage_and_its_location():
    seen = []

    def where(storage, location):
        seen.append((storage.numpy().copy(), location))

    loaded = tinynet.load(saved_on("cpu"), map_location=where)     # None: stays where saved
    assert loaded["w"].device == "cpu"
    (storage, location), = seen
    assert location == "cpu"
    np.testing.assert_array_equal(storage, np.arange(4.0, dtype=np.float32))


@pytest.mark.skipif(tinynet.cuda_is_available(), reason="a GPU is present")
def test_tensors_saved_on_a_gpu_need_map_location_without_one():
    with pytest.raises(tinynet.CheckpointError, match=r"cuda:0.*map_location='cpu'"):
        tinynet.load(saved_on("cuda:0"))


@pytest.mark.gpu
@pytest.mark.skipif(not tinynet.cuda_is_available(), reason="needs CuPy and a GPU")
@pytest.mark.parametrize("fmt", FORMATS)
def test_gpu_tensors_come_back_on_the_gpu_or_where_map_location_says(tmp_path, fmt):
    obj = {"w": tinynet.arange(6.0).reshape(2, 3).cuda(), "b": tinynet.ones(2)}
    loaded = round_trip(obj, fmt, "bytesio", tmp_path)
    assert loaded["w"].device == "cuda" and loaded["b"].device == "cpu"
    np.testing.assert_array_equal(loaded["w"].cpu().numpy(), obj["w"].cpu().numpy())
    assert round_trip(obj, fmt, "bytesio", tmp_path, map_location="cpu")["w"].device == "cpu"
    assert round_trip(obj, fmt, "bytesio", tmp_path, map_location="cuda")["b"].device == "cuda"


@pytest.mark.parametrize("fmt", FORMATS)
def test_mmap_is_accepted_and_reads_the_same(tmp_path, fmt):
    path = tmp_path / "weights.pt"
    tinynet.save({"w": tinynet.arange(6.0).reshape(2, 3)}, path, format=fmt)
    loaded = tinynet.load(path, mmap=True)
    np.testing.assert_array_equal(loaded["w"].numpy(), np.arange(6.0).reshape(2, 3))


# ------------------------------------------------------------- damaged checkpoints
def expect_checkpoint_error(path, *patterns):
    """A CheckpointError that names ``path`` and matches each of ``patterns``."""
    pattern = "(?s)" + "".join(f"(?=.*{p})" for p in (re.escape(str(path)),) + patterns)
    return pytest.raises(tinynet.CheckpointError, match=pattern)


@pytest.fixture
def torch_checkpoint(tmp_path):
    """The bytes of a PyTorch-format checkpoint written by tinynet."""
    path = tmp_path / "source.pt"
    tinynet.save({"weight": tinynet.ones(2, 3), "step": 7}, path, format="torch")
    return path.read_bytes()


def test_every_truncation_of_a_torch_format_file_is_a_checkpoint_error(tmp_path,
                                                                        torch_checkpoint):
    path = tmp_path / "cut.pt"
    for size in range(0, len(torch_checkpoint), 7):
        path.write_bytes(torch_checkpoint[:size])
        with expect_checkpoint_error(path, "truncated"):
            tinynet.load(path)


def test_a_flipped_byte_in_a_torch_format_storage_is_reported_as_corrupt(tmp_path,
                                                                         torch_checkpoint):
    damaged = bytearray(torch_checkpoint)
    damaged[torch_checkpoint.index(np.ones(6, np.float32).tobytes())] ^= 0xFF
    path = tmp_path / "damaged.pt"
    path.write_bytes(bytes(damaged))
    with expect_checkpoint_error(path, "corrupt", "CRC"):
        tinynet.load(path)


def test_a_torch_format_file_without_a_storage_record_is_corrupt(tmp_path, torch_checkpoint):
    path = tmp_path / "incomplete.pt"
    with zipfile.ZipFile(io.BytesIO(torch_checkpoint)) as source, \
            zipfile.ZipFile(path, "w") as target:
        for name in source.namelist():
            if "/data/" not in name:
                target.writestr(name, source.read(name))
    with expect_checkpoint_error(path, "corrupt", "data/0"):
        tinynet.load(path)


def test_a_tensor_reaching_outside_its_storage_is_refused():
    storage = torch_format.Storage(np.arange(4.0))
    with pytest.raises(torch_format.UnsupportedCheckpoint, match="reaches element 5"):
        storage.view(2, (2,), (3,))


def test_a_file_object_is_named_in_errors(tmp_path):
    with expect_checkpoint_error("<BytesIO>", "empty"):
        tinynet.load(io.BytesIO(b""))
    path = tmp_path / "notes.txt"
    path.write_text("not a checkpoint")
    with open(path, "rb") as file, expect_checkpoint_error(path, "not a tinynet checkpoint"):
        tinynet.load(file)


class ReadOnlyStream:
    """A file object that can only be read, as a pipe or a network stream."""

    def __init__(self, data: bytes):
        self.read = io.BytesIO(data).read


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_stream_that_cannot_seek_loads(fmt):
    buffer = io.BytesIO()
    tinynet.save({"w": tinynet.ones(3)}, buffer, format=fmt)
    loaded = tinynet.load(ReadOnlyStream(buffer.getvalue()))
    assert_same_tensor(loaded["w"], tinynet.ones(3))


def test_a_zip_that_is_neither_format_is_not_a_checkpoint(tmp_path):
    path = tmp_path / "other.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("readme.txt", "hello")
    with expect_checkpoint_error(path, "not a tinynet checkpoint", "data.pkl"):
        tinynet.load(path)


def test_an_error_mid_save_in_torch_format_leaves_the_old_checkpoint_whole(tmp_path):
    path = tmp_path / "model.pt"
    tinynet.save({"w": tinynet.ones(2)}, path, format="torch")
    before = path.read_bytes()
    with pytest.raises(TypeError, match="PyTorch's format has no dtype"):
        tinynet.save({"w": tinynet.ones(2), "s": np.array(["text"])}, path, format="torch")
    assert path.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == [
        "model.pt"]


# ------------------------------------------------------------------ with PyTorch
@pytest.fixture
def torch():
    torch = pytest.importorskip("torch")
    if not hasattr(torch, "_utils"):
        pytest.skip("`torch` is not PyTorch here")
    return torch


def torch_model(torch):
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.LayerNorm(8), torch.nn.ReLU(),
                               torch.nn.Linear(8, 3))


@pytest.mark.parametrize("where", ["path", "bytesio"])
def test_a_torch_state_dict_loads_into_the_same_tinynet_model(tmp_path, torch, where):
    reference = torch_model(torch)
    with torch.no_grad():
        reference[1].weight.uniform_(0.5, 1.5)     # not LayerNorm's initial 1 and 0
        reference[1].bias.uniform_(-0.5, 0.5)
    target = tmp_path / "model.pt" if where == "path" else io.BytesIO()
    torch.save(reference.state_dict(), target)
    if where == "bytesio":
        target.seek(0)
    ours = model()
    ours.load_state_dict(tinynet.load(target))
    x = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)
    expected = reference(torch.from_numpy(x)).detach().numpy()
    np.testing.assert_allclose(ours(tinynet.from_numpy(x)).numpy(), expected, rtol=1e-6,
                               atol=1e-6)


def test_a_tinynet_state_dict_in_torch_format_loads_into_the_same_torch_model(tmp_path, torch):
    ours = model()
    tinynet.save(ours.state_dict(), tmp_path / "model.pt", format="torch")
    reference = torch_model(torch)
    reference.load_state_dict(torch.load(tmp_path / "model.pt", weights_only=True))
    x = np.random.default_rng(1).standard_normal((5, 4)).astype(np.float32)
    np.testing.assert_allclose(reference(torch.from_numpy(x)).detach().numpy(),
                               ours(tinynet.from_numpy(x)).numpy(), rtol=1e-6, atol=1e-6)


TORCH_DTYPES = ["float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8",
                "uint16", "uint32", "bool", "complex64", "complex128"]


@pytest.mark.parametrize("dtype", TORCH_DTYPES)
def test_tinynet_tensors_reach_torch_with_their_values_dtypes_and_shapes(torch, dtype):
    values = {"matrix": np.arange(6).reshape(2, 3).astype(dtype),
              "scalar": np.array(1).astype(dtype), "empty": np.zeros((0, 4), dtype)}
    buffer = io.BytesIO()
    tinynet.save({"tensors": {k: tinynet.from_numpy(v) for k, v in values.items()},
                  "numbers": [1, 2.5, "three", None, True]}, buffer, format="torch")
    buffer.seek(0)
    loaded = torch.load(buffer, weights_only=True)
    assert loaded["numbers"] == [1, 2.5, "three", None, True]
    for key, expected in values.items():
        tensor = loaded["tensors"][key]
        assert tensor.dtype == getattr(torch, dtype) and tuple(tensor.shape) == expected.shape
        np.testing.assert_array_equal(tensor.numpy(), expected)


@pytest.mark.parametrize("dtype", TORCH_DTYPES + ["bfloat16"])
def test_torch_tensors_of_each_dtype_load(torch, dtype):
    tensor = (torch.arange(6) % 2 == 0 if dtype == "bool" else
              torch.arange(6).to(getattr(torch, dtype))).reshape(2, 3)
    buffer = io.BytesIO()
    torch.save({"x": tensor, "x_t": tensor.t()}, buffer)
    buffer.seek(0)
    loaded = tinynet.load(buffer)
    expected = (tensor.float() if dtype == "bfloat16" else tensor).numpy()
    assert_same_tensor(loaded["x"], tinynet.from_numpy(expected))
    assert_same_tensor(loaded["x_t"], tinynet.from_numpy(expected.T))


def test_non_contiguous_and_shared_torch_tensors_load_as_views_of_one_storage(torch):
    base = torch.arange(24.0).reshape(4, 6)
    views = {"base": base, "t": base.t(), "row": base[2], "column": base[:, 3],
             "strided": base[1::2, ::3], "expanded": base[0, :2].unsqueeze(0).expand(3, 2),
             "permuted": base.reshape(2, 3, 4).permute(2, 0, 1)}
    buffer = io.BytesIO()
    torch.save(views, buffer)
    buffer.seek(0)
    loaded = tinynet.load(buffer)
    for key, view in views.items():
        np.testing.assert_array_equal(loaded[key].numpy(), view.numpy(), err_msg=key)
    loaded["base"].numpy()[2, 3] = -1.0
    assert loaded["t"].numpy()[3, 2] == loaded["row"].numpy()[3] == loaded["column"].numpy()[2]
    assert loaded["column"].numpy()[2] == -1.0


def test_views_saved_by_tinynet_share_one_storage_in_torch(torch):
    base = np.arange(12, dtype=np.float32).reshape(3, 4)
    buffer = io.BytesIO()
    tinynet.save({"base": tinynet.from_numpy(base), "t": tinynet.from_numpy(base.T),
                  "row": tinynet.from_numpy(base[1])}, buffer, format="torch")
    buffer.seek(0)
    loaded = torch.load(buffer, weights_only=True)
    assert loaded["t"].stride() == (1, 4) and loaded["row"].storage_offset() == 4
    pointers = {t.untyped_storage().data_ptr() for t in loaded.values()}
    assert len(pointers) == 1


def test_a_torch_optimizer_state_and_parameters_load_with_weights_only(torch):
    net = torch_model(torch)
    optimizer = torch.optim.Adam(net.parameters(), lr=1e-3)
    net(torch.ones(2, 4)).sum().backward()
    optimizer.step()
    buffer = io.BytesIO()
    torch.save({"optimizer": optimizer.state_dict(), "param": torch.nn.Parameter(torch.ones(2)),
                "dtype": torch.float16, "device": torch.device("cpu"), "size": torch.Size([2, 3]),
                "epoch": 3}, buffer)
    buffer.seek(0)
    loaded = tinynet.load(buffer)
    state = loaded["optimizer"]
    assert state["param_groups"][0]["lr"] == 1e-3 and state["param_groups"][0]["params"] == list(
        range(6))
    np.testing.assert_array_equal(state["state"][0]["exp_avg"].numpy(),
                                  optimizer.state_dict()["state"][0]["exp_avg"].numpy())
    assert isinstance(loaded["param"], nn.Parameter) and loaded["param"].requires_grad
    assert loaded["dtype"] is np.float16 and loaded["device"] == "cpu"
    assert loaded["size"] == (2, 3) and loaded["epoch"] == 3


@pytest.mark.parametrize("weights_only", [True, False])
def test_a_whole_torch_module_is_refused_with_a_reason(torch, weights_only):
    buffer = io.BytesIO()
    torch.save(torch_model(torch), buffer)
    buffer.seek(0)
    with pytest.raises(tinynet.CheckpointError,
                       match=r"torch\.nn\.modules\.container\.Sequential.*save a state_dict"):
        tinynet.load(buffer, weights_only=weights_only)


def test_torchs_legacy_format_loads(torch, tmp_path):
    base = torch.arange(12.0).reshape(3, 4)
    obj = {"base": base, "t": base.t(), "row": base[1], "long": torch.arange(5)[2:],
           "half": torch.ones(3, dtype=torch.float16), "flag": torch.tensor([True, False]),
           "epoch": 2}
    path = tmp_path / "legacy.pt"
    torch.save(obj, path, _use_new_zipfile_serialization=False)
    loaded = tinynet.load(path)
    assert loaded["epoch"] == 2
    for key in ("base", "t", "row", "long", "half", "flag"):
        assert_same_tensor(loaded[key], tinynet.from_numpy(obj[key].numpy()))
    data = path.read_bytes()
    for size in range(0, len(data), 11):
        path.write_bytes(data[:size])
        with expect_checkpoint_error(path, "truncated"):
            tinynet.load(path)


def test_torch_reads_tinynets_torch_format_with_mmap(torch, tmp_path):
    path = tmp_path / "model.pt"
    tinynet.save({"w": tinynet.arange(8.0), "i": tinynet.arange(3)}, path, format="torch")
    loaded = torch.load(path, weights_only=True, mmap=True)
    np.testing.assert_array_equal(loaded["w"].numpy(), np.arange(8.0, dtype=np.float32))
    np.testing.assert_array_equal(loaded["i"].numpy(), np.arange(3))
