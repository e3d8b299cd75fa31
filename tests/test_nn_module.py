"""Module system: registration, traversal, modes, state dicts, save/load."""
import os

import numpy as np
import pytest

import tinynet
from tinynet import nn, torch_writer


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 4)
        self.norm = nn.BatchNorm1d(4)
        self.scale = nn.Parameter(tinynet.ones(1))
        self.register_buffer("counter", tinynet.zeros(1))
        self.register_buffer("scratch", tinynet.zeros(2), persistent=False)
        self.plain = 5

    def forward(self, x):
        return self.norm(self.fc(x)) * self.scale


def test_registration_and_traversal():
    block = Block()
    assert [n for n, _ in block.named_parameters()] == [
        "scale", "fc.weight", "fc.bias", "norm.weight", "norm.bias"]
    assert [n for n, _ in block.named_buffers()] == [
        "counter", "scratch", "norm.running_mean", "norm.running_var", "norm.num_batches_tracked"]
    assert [type(m).__name__ for m in block.children()] == ["Linear", "BatchNorm1d"]
    assert [type(m).__name__ for m in block.modules()] == ["Block", "Linear", "BatchNorm1d"]
    assert block.plain == 5 and "plain" not in dict(block.named_parameters())


def test_reassigning_moves_between_registries_and_shared_parameters_count_once():
    block = Block()
    block.fc = None
    assert "fc.weight" not in dict(block.named_parameters())
    shared = nn.Linear(2, 2)
    model = nn.Sequential(shared, shared)
    assert len(list(model.parameters())) == 2
    with pytest.raises(TypeError, match="Parameter or None"):
        block.scale = tinynet.ones(1)


def test_assigning_before_init_is_a_clear_error():
    class Forgetful(nn.Module):
        def __init__(self):
            self.fc = nn.Linear(2, 2)

    with pytest.raises(AttributeError, match="Module.__init__"):
        Forgetful()


def test_train_eval_return_self_and_propagate():
    block = Block()
    assert block.eval() is block
    assert not block.training and not block.norm.training
    assert block.train() is block and block.norm.training


def test_zero_grad():
    block = Block()
    block(tinynet.randn(5, 3)).sum().backward()
    assert block.fc.weight.grad is not None
    block.zero_grad(set_to_none=False)
    assert np.all(block.fc.weight.grad.numpy() == 0)
    block.zero_grad()
    assert block.fc.weight.grad is None


def test_state_dict_round_trip_and_persistence():
    a, b = Block(), Block()
    state = a.state_dict()
    assert "scratch" not in state and "norm.running_var" in state
    b.load_state_dict(state)
    for key, value in b.state_dict().items():
        np.testing.assert_array_equal(value.numpy(), state[key].numpy())
    # loading copies: later changes to a do not leak into b
    a.fc.weight.data[...] = 0
    assert not np.all(b.fc.weight.numpy() == 0)


def test_load_state_dict_lists_every_problem():
    block = Block()
    state = block.state_dict()
    del state["fc.bias"]
    state["extra.weight"] = tinynet.zeros(1)
    state["fc.weight"] = tinynet.zeros(5, 5)
    with pytest.raises(ValueError) as info:
        block.load_state_dict(state)
    message = str(info.value)
    assert "missing keys: fc.bias" in message
    assert "unexpected keys: extra.weight" in message
    assert "fc.weight: checkpoint (5, 5), model (4, 3)" in message
    del state["extra.weight"]
    state["fc.weight"] = tinynet.zeros(4, 3)
    missing, unexpected = block.load_state_dict(state, strict=False)
    assert missing == ["fc.bias"] and unexpected == []
    with pytest.raises(TypeError,
                       match="for Block: expected a mapping of names to arrays, got list"):
        block.load_state_dict(list(state.values()))


def test_repr_shows_the_tree():
    text = repr(nn.Sequential(nn.Linear(2, 3), nn.ReLU()))
    assert text == ("Sequential(\n  (0): Linear(in_features=2, out_features=3, bias=True)\n"
                    "  (1): ReLU()\n)")


def test_module_list_and_sequential_indexing():
    layers = nn.ModuleList([nn.Linear(2, 2) for _ in range(3)])
    assert len(layers) == 3 and len(list(layers.parameters())) == 6
    seq = nn.Sequential(nn.Linear(2, 3), nn.Tanh())
    assert isinstance(seq[0], nn.Linear) and len(seq) == 2
    assert seq(tinynet.randn(4, 2)).shape == (4, 3)


def test_to_casts_parameters_in_place():
    fc = nn.Linear(2, 3)
    weight = fc.weight
    fc.to(dtype=tinynet.float64)
    assert fc.weight is weight and weight.dtype == np.float64


def test_save_and_load_nested_checkpoint(tmp_path):
    model = Block()
    opt = tinynet.optim.Adam(model.parameters())
    model(tinynet.randn(4, 3)).sum().backward()
    opt.step()
    path = tmp_path / "checkpoint.npz"
    tinynet.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "step": 7,
                  "history": [0.5, 0.25], "name": "run"}, path)
    loaded = tinynet.load(path)
    assert loaded["step"] == 7 and loaded["history"] == [0.5, 0.25] and loaded["name"] == "run"
    other = Block()
    other.load_state_dict(loaded["model"])
    np.testing.assert_array_equal(other.fc.weight.numpy(), model.fc.weight.numpy())
    opt2 = tinynet.optim.Adam(other.parameters())
    opt2.load_state_dict(loaded["optimizer"])
    key = other.fc.weight
    np.testing.assert_array_equal(opt2.state[key]["exp_avg"], opt.state[model.fc.weight]["exp_avg"])
    assert opt2.state[key]["step"] == 1


def test_save_is_atomic(tmp_path, monkeypatch):
    path = tmp_path / "model.npz"
    tinynet.save({"w": tinynet.ones(3)}, path)
    before = path.read_bytes()

    def crash(*args, **kwargs):
        raise KeyboardInterrupt("simulated crash mid-write")

    monkeypatch.setattr(torch_writer, "write_zip", crash)
    with pytest.raises(KeyboardInterrupt):
        tinynet.save({"w": tinynet.zeros(3)}, path)
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["model.npz"]


def test_load_rejects_a_corrupt_file(tmp_path):
    path = tmp_path / "broken.npz"
    path.write_bytes(b"not a zip file at all")
    with pytest.raises(ValueError, match="cannot read checkpoint .*broken.npz: it is not a "):
        tinynet.load(path)


def test_saved_files_get_the_usual_permissions(tmp_path):
    path = tmp_path / "model.npz"
    tinynet.save({"w": tinynet.ones(2)}, path)
    umask = os.umask(0)
    os.umask(umask)
    assert (path.stat().st_mode & 0o777) == 0o666 & ~umask


def test_dropout_module_is_the_identity_in_eval_mode():
    layer = nn.Dropout(0.5)
    x = tinynet.ones(1000)
    assert layer.eval()(x) is x
    y = layer.train()(x).numpy()
    assert set(np.unique(y)) == {0.0, 2.0} and 0.4 < (y == 0).mean() < 0.6
    with pytest.raises(ValueError, match="Dropout: p must be in"):
        nn.Dropout(1.5)


@pytest.mark.parametrize("make", [lambda: nn.Linear(4, 3), lambda: nn.LayerNorm(4),
                                  lambda: nn.BatchNorm1d(4)], ids=["Linear", "LayerNorm",
                                                                   "BatchNorm1d"])
def test_a_float64_batch_through_a_float32_layer_is_computed_in_float64(make):
    """As NumPy promotes, and every op here with it: the output is float64 and
    equals that of a float64 copy of the layer; the gradients keep the
    parameters' float32, so that an optimizer can step."""
    tinynet.manual_seed(0)
    layer = make()
    twin = make().to(dtype="float64")
    twin.load_state_dict(layer.state_dict())
    x = tinynet.randn(5, 4, dtype="float64", requires_grad=True)
    x_twin = tinynet.tensor(x.numpy(), requires_grad=True)
    weights = tinynet.randn(5, layer(x).shape[1], dtype="float64")
    y, y_twin = layer(x), twin(x_twin)
    assert y.dtype == np.float64
    np.testing.assert_allclose(y.numpy(), y_twin.numpy(), rtol=1e-12, atol=1e-12)
    (y * weights).sum().backward()
    (y_twin * weights).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), x_twin.grad.numpy(), rtol=1e-12, atol=1e-12)
    for p, p_twin in zip(layer.parameters(), twin.parameters(), strict=True):
        assert p.grad.dtype == np.float32
        np.testing.assert_allclose(p.grad.numpy(), p_twin.grad.numpy(), rtol=1e-6, atol=1e-6)
    tinynet.optim.Adam(layer.parameters()).step()


def test_double_float_and_positional_to_cast_only_floating_point_state():
    block = Block()
    weight = block.fc.weight
    assert block.double() is block and weight.dtype == np.float64 and block.fc.weight is weight
    assert block.norm.running_var.dtype == np.float64
    assert block.norm.num_batches_tracked.dtype == np.int64      # integers stay integers
    assert block.float() is block and weight.dtype == np.float32
    assert block.to(tinynet.float64) is block and weight.dtype == np.float64
    assert block.to("cpu", tinynet.float32) is block and weight.dtype == np.float32
    with pytest.raises(TypeError, match="Block.to: only floating-point dtypes"):
        block.to(tinynet.int64)


def test_double_matches_torch_module_double():
    torch = pytest.importorskip("torch")
    ours, ref = nn.Linear(3, 2), torch.nn.Linear(3, 2)
    ours.weight.grad = tinynet.ones(2, 3)
    ref.weight.grad = torch.ones(2, 3)
    ours.double(), ref.double()
    assert str(ours.weight.dtype) == str(ref.weight.dtype).replace("torch.", "")
    assert str(ours.weight.grad.dtype) == str(ref.weight.grad.dtype).replace("torch.", "")


def test_apply_visits_children_before_parents_and_returns_self():
    torch = pytest.importorskip("torch")

    def visit_order(lib):
        shared = lib.nn.Linear(2, 2)
        model = lib.nn.Sequential(lib.nn.Sequential(shared, lib.nn.Tanh()), shared,
                                  lib.nn.ReLU())
        seen = []
        assert model.apply(lambda m: seen.append(type(m).__name__)) is model
        return seen

    assert visit_order(tinynet) == visit_order(torch) == [
        "Linear", "Tanh", "Sequential", "Linear", "ReLU", "Sequential"]


def test_apply_initializes_weights():
    def init_weights(module):
        if isinstance(module, nn.Linear):
            nn.init.constant_(module.weight, 0.5)

    model = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Sequential(nn.Linear(3, 1)))
    model.apply(init_weights)
    assert all((m.weight.numpy() == 0.5).all() for m in model.modules()
               if isinstance(m, nn.Linear))


def test_a_child_registered_twice_is_one_child():
    torch = pytest.importorskip("torch")
    for lib in (tinynet, torch):
        parent, child = lib.nn.Module(), lib.nn.Linear(2, 2)
        parent.a, parent.b = child, child
        assert [name for name, _ in parent.named_children()] == ["a"]
