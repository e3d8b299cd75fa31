"""examples/mnist_cnn.py and the convnet sweep, on tiny budgets."""
import json
import os
import sys

import numpy as np
import pytest

import tinynet
from tinynet.models import CONV_NORMS, ConvNet

EXAMPLES = os.path.join(os.path.dirname(__file__), os.pardir, "examples")
sys.path.insert(0, os.path.abspath(EXAMPLES))

import mnist_cnn  # noqa: E402

import batch_size_sweep  # noqa: E402
import mnist_mlp  # noqa: E402


def _args(tmp_path, norm="group", *extra):
    return mnist_cnn.build_parser().parse_args(
        ["--norm", norm, "--batch-size", "16", "--examples", "96", "--curve-points", "2",
         "--out", str(tmp_path), "--no-progress", *extra])


@pytest.mark.parametrize("norm", CONV_NORMS)
def test_every_norm_trains_and_writes_its_result(tmp_path, norm):
    result = mnist_mlp.train(_args(tmp_path, norm))
    saved = json.loads((tmp_path / "result.json").read_text())
    assert saved["model"] == "cnn" and saved["norm"] == norm
    assert saved["examples"] == 96 and 0 <= saved["test_error"] <= 1
    assert np.isfinite(saved["test_nll"]) and saved["test_nll"] == result["test_nll"]
    assert [point[0] for point in saved["curve"]] == [48, 96]


def test_the_convnet_has_the_norm_it_was_asked_for():
    kinds = {norm: {type(m).__name__ for m in ConvNet(norm).modules()} for norm in CONV_NORMS}
    assert "BatchNorm2d" in kinds["batch"] and "GroupNorm" in kinds["group"]
    assert "InstanceNorm2d" in kinds["instance"] and "LayerNorm" in kinds["layer"]
    assert not kinds["none"] & {"BatchNorm2d", "GroupNorm", "InstanceNorm2d", "LayerNorm"}
    layer_norms = [m for m in ConvNet("layer").modules() if type(m).__name__ == "LayerNorm"]
    assert [m.normalized_shape for m in layer_norms] == [(16, 28, 28), (32, 14, 14)]
    out = ConvNet("group")(tinynet.randn(3, 784))
    assert out.shape == (3, 10)
    with pytest.raises(ValueError, match="norm must be one of"):
        ConvNet("batchnorm")


def test_resumes_exactly_after_a_crash(tmp_path, monkeypatch):
    uninterrupted = mnist_mlp.train(_args(tmp_path / "a", "batch"))
    real_step = tinynet.optim.Adam.step
    calls = {"n": 0}

    def crashing_step(self):
        calls["n"] += 1
        if calls["n"] == 4:
            raise KeyboardInterrupt("simulated crash")
        real_step(self)

    monkeypatch.setattr(tinynet.optim.Adam, "step", crashing_step)
    with pytest.raises(KeyboardInterrupt):
        mnist_mlp.train(_args(tmp_path / "b", "batch", "--checkpoint-every", "0"))
    monkeypatch.setattr(tinynet.optim.Adam, "step", real_step)
    assert tinynet.load(tmp_path / "b" / "checkpoint.npz")["state"]["step"] == 3
    resumed = mnist_mlp.train(_args(tmp_path / "b", "batch", "--resume"))
    assert resumed["test_nll"] == uninterrupted["test_nll"]
    assert resumed["test_error"] == uninterrupted["test_error"]


def test_an_mlp_checkpoint_does_not_resume_as_a_convnet(tmp_path):
    mnist_mlp.train(mnist_mlp.build_parser().parse_args(
        ["--norm", "layer", "--batch-size", "16", "--examples", "32", "--curve-points", "1",
         "--out", str(tmp_path), "--no-progress"]))
    with pytest.raises(ValueError, match="checkpoint was made with"):
        mnist_mlp.train(_args(tmp_path, "layer", "--resume"))


def test_the_mlp_refuses_the_convnet_norms(capsys):
    with pytest.raises(SystemExit):
        mnist_mlp.build_parser().parse_args(["--norm", "group"])
    assert "invalid choice: 'group'" in capsys.readouterr().err


def test_the_sweep_runs_the_convnet_and_keys_its_results_by_model(tmp_path, capsys):
    argv = ["--model", "cnn", "--norms", "group", "instance", "--batch-sizes", "8",
            "--seeds", "0", "--examples", "32", "--workers", "2", "--out", str(tmp_path)]
    assert batch_size_sweep.main(argv) == 0
    results = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text()
               .splitlines()]
    assert sorted((r["model"], r["norm"]) for r in results) == [("cnn", "group"),
                                                                ("cnn", "instance")]
    assert (tmp_path / "convnet.png").stat().st_size > 1000
    capsys.readouterr()
    assert batch_size_sweep.main(argv) == 0
    assert "2 already done, 0 to run" in capsys.readouterr().out


def test_the_sweep_refuses_a_norm_its_model_lacks(tmp_path):
    with pytest.raises(SystemExit, match="the mlp takes none, batch, layer, not group"):
        batch_size_sweep.main(["--norms", "group", "--batch-sizes", "8", "--seeds", "0",
                               "--examples", "32", "--out", str(tmp_path)])
    assert not (tmp_path / "results.jsonl").exists()
