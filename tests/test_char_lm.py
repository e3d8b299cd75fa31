"""examples/char_lm.py (nanoGPT's GPT on Tiny Shakespeare) end to end, on tiny budgets.

The runs read the bundled excerpt: HOME and TINYNET_DATA point at empty folders, so
nothing on this machine (a full Tiny Shakespeare in ../shared or the cache) changes
the numbers.
"""
import csv
import importlib.util
import math
import os
import re
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import tinynet
from tinynet.data.text import SAMPLE_PATH, CharCorpus

EXAMPLES = os.path.join(os.path.dirname(__file__), os.pardir, "examples")
SCRIPT = os.path.join(EXAMPLES, "char_lm.py")
sys.path.insert(0, os.path.abspath(EXAMPLES))

import char_lm  # noqa: E402

TINY = ["--preset", "tiny", "--max-iters", "12", "--eval-interval", "4", "--eval-iters", "2",
        "--no-progress"]
FINAL_LINE = re.compile(r"iteration (\d+): train loss ([0-9.]+), val loss ([0-9.]+), "
                        r"best val ([0-9.]+); median iteration ([0-9.]+) ms")
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    """The environment of the runs: no Tiny Shakespeare anywhere, so the excerpt.
    One HOME for the module, so that matplotlib builds its font cache once."""
    home, data = tmp_path_factory.mktemp("home"), tmp_path_factory.mktemp("data")
    return dict(os.environ, HOME=str(home), TINYNET_DATA=str(data))


@pytest.fixture
def no_data_here(tmp_path, monkeypatch):
    """The same for a call of char_lm.main in this process."""
    for name in ("home", "data"):
        (tmp_path / name).mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("TINYNET_DATA", str(tmp_path / "data"))


def run_script(env, *argv, timeout=120):
    return subprocess.run([sys.executable, SCRIPT, *argv], capture_output=True, text=True,
                          env=env, timeout=timeout)


def succeeded(run):
    assert run.returncode == 0, run.stdout + run.stderr
    return run


def read_curves(path):
    """The rows of curves.csv as floats (iter as int)."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    return [dict(iter=int(r["iter"]), **{k: float(r[k]) for k in ("train_loss", "val_loss", "lr")})
            for r in rows]


def excerpt():
    return CharCorpus(SAMPLE_PATH, tinyshakespeare=False)


def assert_trains(curve):
    losses = [[row["train_loss"], row["val_loss"]] for row in curve]
    assert np.isfinite(losses).all(), curve
    assert curve[-1]["train_loss"] < curve[0]["train_loss"], curve
    assert curve[-1]["val_loss"] < curve[0]["val_loss"], curve


def test_a_tiny_run_prints_its_losses_and_writes_curves_checkpoints_and_the_sample(
        tmp_path, env):
    out = tmp_path / "out"
    run = succeeded(run_script(env, *TINY, "--sample", "40", "--out", str(out)))
    assert "using the bundled excerpt" in run.stderr
    assert f"path='{SAMPLE_PATH}'" in run.stdout
    assert "GPT: 0.03M parameters (2 layers, 2 heads, 32 channels, context 32; " \
           "norm layer, pre-norm)" in run.stdout

    lines = (out / "curves.csv").read_text().splitlines()
    assert lines[0] == "iter,train_loss,val_loss,lr"
    curve = read_curves(out / "curves.csv")
    assert [row["iter"] for row in curve] == [0, 4, 8, 12]            # one row per eval
    assert_trains(curve)
    # the schedule of the preset: warm-up over 5 iterations to 3e-3
    assert curve[0]["lr"] == pytest.approx(3e-3 / 6)
    assert all(0 < row["lr"] <= 3e-3 for row in curve)

    final = FINAL_LINE.search(run.stdout)
    assert final, run.stdout
    it, train_loss, val_loss, best_val, median_ms = final.groups()
    assert int(it) == 12
    assert float(train_loss) == pytest.approx(curve[-1]["train_loss"], abs=5e-5)
    assert float(val_loss) == pytest.approx(curve[-1]["val_loss"], abs=5e-5)
    assert float(best_val) == pytest.approx(min(r["val_loss"] for r in curve), abs=5e-5)
    assert math.isfinite(float(median_ms)) and float(median_ms) > 0

    if importlib.util.find_spec("matplotlib"):
        png = (out / "curves.png").read_bytes()
        assert png.startswith(PNG_SIGNATURE) and len(png) > 1000

    last = tinynet.load(out / "last.npz")
    best = tinynet.load(out / "best.npz")
    assert last["iteration"] == 12
    assert [list(row) for row in last["curve"]] == \
        [[r["iter"], r["train_loss"], r["val_loss"], r["lr"]] for r in curve]
    best_row = min(curve, key=lambda row: row["val_loss"])
    assert best["iteration"] == best_row["iter"]
    assert best["config"] == last["config"]
    assert best["config"]["vocab_size"] == excerpt().vocab_size
    assert set(best["model"]) == set(last["model"])

    sample = (out / "sample.txt").read_text()
    assert sample.startswith("\n")                     # the prompt, then 40 new characters
    assert len(sample) == 1 + 40
    assert set(sample) <= set(excerpt().chars)
    assert f"---\n{sample}\n---" in run.stdout


def test_resume_after_sigkill_gives_the_same_losses_bit_for_bit(tmp_path, env):
    """Run A to the end; run B killed (SIGKILL) just after a checkpoint past iteration 0,
    then resumed. The 200 iterations of 1-10 ms after the checkpoint at 100 leave the
    kill far from the end; few evaluations keep the runs short (each writes a PNG)."""
    flags = ["--preset", "tiny", "--max-iters", "300", "--eval-interval", "100",
             "--eval-iters", "2", "--no-progress", "--sample", "20"]
    a, b = tmp_path / "a", tmp_path / "b"
    succeeded(run_script(env, *flags, "--out", str(a)))

    last = b / "last.npz"
    killed = False
    with open(tmp_path / "b.log", "w") as log:
        process = subprocess.Popen([sys.executable, SCRIPT, *flags, "--out", str(b)],
                                   stdout=log, stderr=subprocess.STDOUT, env=env)
        try:
            deadline = time.monotonic() + 120
            while process.poll() is None and time.monotonic() < deadline:
                # written atomically: always a whole checkpoint, the old or the new one
                if last.exists() and tinynet.load(last)["iteration"] > 0:
                    process.send_signal(signal.SIGKILL)
                    killed = True
                    break
                time.sleep(0.005)
        finally:
            if not killed and process.poll() is None:
                process.kill()
            process.wait(timeout=30)
    log = (tmp_path / "b.log").read_text()
    assert killed, log
    assert process.returncode == -signal.SIGKILL, log       # killed, not finished first
    killed_at = tinynet.load(last)["iteration"]
    assert 0 < killed_at < 300
    assert not (b / "sample.txt").exists()
    assert len(read_curves(b / "curves.csv")) < len(read_curves(a / "curves.csv"))

    resumed = succeeded(run_script(env, *flags, "--out", str(b), "--resume"))
    assert f"resumed at iteration {killed_at}" in resumed.stdout

    assert (b / "curves.csv").read_bytes() == (a / "curves.csv").read_bytes()
    assert [row["iter"] for row in read_curves(b / "curves.csv")] == [0, 100, 200, 300]
    assert (b / "sample.txt").read_text() == (a / "sample.txt").read_text()
    for name in ("last.npz", "best.npz"):
        weights_a, weights_b = (tinynet.load(d / name)["model"] for d in (a, b))
        assert set(weights_a) == set(weights_b)
        for key, weight in weights_a.items():
            np.testing.assert_array_equal(weights_b[key], weight, err_msg=f"{name}: {key}")


def test_resume_without_out_is_an_error_naming_it(capsys):
    with pytest.raises(SystemExit) as stop:
        char_lm.main(["--preset", "tiny", "--resume"])
    assert stop.value.code == 2
    assert "--resume needs --out" in capsys.readouterr().err


def test_resume_without_a_checkpoint_is_an_error_naming_the_file(tmp_path, capsys, no_data_here):
    out = tmp_path / "never-ran"
    with pytest.raises(SystemExit) as stop:
        char_lm.main([*TINY, "--out", str(out), "--resume"])
    assert stop.value.code == 2
    assert f"--resume: no checkpoint at {out / 'last.npz'}" in capsys.readouterr().err
    assert not out.exists()


def test_resume_refuses_a_checkpoint_of_another_model_naming_both(tmp_path, env):
    out = tmp_path / "out"
    succeeded(run_script(env, *TINY, "--max-iters", "4", "--sample", "0", "--out", str(out)))
    before = {name: (out / name).read_bytes() for name in ("last.npz", "curves.csv")}
    run = run_script(env, *TINY, "--max-iters", "4", "--sample", "0", "--out", str(out),
                     "--resume", "--n-embd", "16")
    assert run.returncode != 0
    assert "--resume: the checkpoint's model" in run.stderr
    assert "'n_embd': 32" in run.stderr and "'n_embd': 16" in run.stderr
    assert run.stderr.index("'n_embd': 32") < run.stderr.index("'n_embd': 16")
    assert {name: (out / name).read_bytes() for name in before} == before


def _another(value):
    """A value of the same type that is neither preset's."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    return value * 0.5 + 0.25


@pytest.mark.parametrize("preset", sorted(char_lm.PRESETS))
def test_every_preset_value_is_overridden_by_its_flag(preset):
    parser = char_lm.build_parser()
    values = char_lm.PRESETS[preset]
    assert set(values) == set(char_lm.PRESETS["cpu"])                # every one has a flag
    for name, value in values.items():
        new = _another(value)
        text = str(new).lower() if isinstance(new, bool) else str(new)
        s = char_lm.settings(parser.parse_args(
            ["--preset", preset, "--" + name.replace("_", "-"), text]))
        assert getattr(s, name) == new and type(getattr(s, name)) is type(value), name
        assert {k: getattr(s, k) for k in values if k != name} == \
            {k: v for k, v in values.items() if k != name}, name
    s = char_lm.settings(parser.parse_args(["--preset", preset]))
    assert {k: getattr(s, k) for k in values} == values


def test_flags_over_the_preset_reach_the_model_and_the_schedule(tmp_path, env):
    out = tmp_path / "out"
    run = succeeded(run_script(
        env, "--preset", "tiny", "--n-layer", "1", "--n-head", "1", "--n-embd", "16",
        "--block-size", "8", "--batch-size", "4", "--bias", "true", "--learning-rate", "0.002",
        "--warmup-iters", "1", "--lr-decay-iters", "3", "--min-lr", "0.0001",
        "--max-iters", "4", "--eval-interval", "2", "--eval-iters", "1", "--sample", "5",
        "--no-progress", "--out", str(out)))
    assert "(1 layers, 1 heads, 16 channels, context 8; norm layer, pre-norm)" in run.stdout
    last = tinynet.load(out / "last.npz")
    config = last["config"]
    assert (config["n_layer"], config["n_head"], config["n_embd"], config["block_size"],
            config["bias"]) == (1, 1, 16, 8, True)
    assert last["model"]["transformer.wpe.weight"].shape == (8, 16)
    assert last["model"]["transformer.h.0.attn.c_attn.bias"].shape == (48,)
    assert not any(".h.1." in key for key in last["model"])
    curve = read_curves(out / "curves.csv")
    assert [row["iter"] for row in curve] == [0, 2, 4]
    assert curve[0]["lr"] == pytest.approx(0.002 / 2)          # warm-up: lr (it + 1) / 2
    assert curve[-1]["lr"] == 0.0001                           # past lr_decay_iters: min_lr


@pytest.mark.parametrize("flags, described, norm, placement", [
    (["--norm", "rms"], "norm rms, pre-norm", "rms", "pre"),
    (["--placement", "post"], "norm layer, post-norm", "layer", "post"),
], ids=["rms", "post-norm"])
def test_the_norm_and_its_placement_are_options(tmp_path, env, flags, described, norm,
                                                placement):
    out = tmp_path / "out"
    run = succeeded(run_script(env, *TINY, *flags, "--sample", "10", "--out", str(out)))
    assert described in run.stdout
    config = tinynet.load(out / "last.npz")["config"]
    assert (config["norm"], config["placement"]) == (norm, placement)
    assert_trains(read_curves(out / "curves.csv"))
    assert len((out / "sample.txt").read_text()) == 1 + 10


# ------------------------------------------------------- --model lstm | ln-lstm

LSTM_LINE = re.compile(r"(LN-LSTM|LSTM): 0\.03M parameters \(([0-9,]+); hidden size (\d+), "
                       r"1 layers\); the GPT it matches: 0\.03M \(([0-9,]+); 2 layers, 2 heads, "
                       r"32 channels, context 32; norm layer, pre-norm\)")


@pytest.mark.parametrize("model, name, norm", [("lstm", "LSTM", None),
                                               ("ln-lstm", "LN-LSTM", "layer")])
def test_a_tiny_lstm_run_matches_the_gpts_size_and_trains(tmp_path, env, model, name, norm):
    out = tmp_path / "out"
    run = succeeded(run_script(env, *TINY, "--model", model, "--sample", "30",
                               "--out", str(out)))
    line = LSTM_LINE.search(run.stdout)
    assert line and line.group(1) == name, run.stdout
    count, hidden, target = (int(g.replace(",", "")) for g in line.groups()[1:])
    assert abs(count - target) <= 0.1 * target
    curve = read_curves(out / "curves.csv")
    assert [row["iter"] for row in curve] == [0, 4, 8, 12]
    assert_trains(curve)
    assert curve[0]["lr"] == pytest.approx(3e-3 / 6)          # the same schedule
    last, best = tinynet.load(out / "last.npz"), tinynet.load(out / "best.npz")
    assert last["config"] == best["config"] == dict(
        model=model, vocab_size=excerpt().vocab_size, hidden_size=hidden, num_layers=1,
        norm=norm, embedding_dim=hidden, dropout=0.0)
    assert last["model"]["lstm.weight_hh_l0"].shape == (4 * hidden, hidden)
    assert any(key.startswith("lstm.norms_l0.") for key in last["model"]) == (norm == "layer")
    assert sum(int(np.prod(v.shape)) for v in last["model"].values()) == count
    sample = (out / "sample.txt").read_text()
    assert len(sample) == 1 + 30 and set(sample) <= set(excerpt().chars)
    assert FINAL_LINE.search(run.stdout)


def test_an_ln_lstm_run_resumed_gives_the_same_curves_and_weights(tmp_path, env):
    flags = [*TINY, "--model", "ln-lstm", "--sample", "12"]
    a, b = tmp_path / "a", tmp_path / "b"
    succeeded(run_script(env, *flags, "--max-iters", "8", "--out", str(a)))
    succeeded(run_script(env, *flags, "--max-iters", "4", "--out", str(b)))
    resumed = succeeded(run_script(env, *flags, "--max-iters", "8", "--out", str(b),
                                   "--resume"))
    assert "resumed at iteration 4" in resumed.stdout
    assert (b / "curves.csv").read_bytes() == (a / "curves.csv").read_bytes()
    assert (b / "sample.txt").read_text() == (a / "sample.txt").read_text()
    weights_a, weights_b = (tinynet.load(d / "last.npz")["model"] for d in (a, b))
    assert set(weights_a) == set(weights_b)
    for key, weight in weights_a.items():
        np.testing.assert_array_equal(weights_b[key], weight, err_msg=key)


@pytest.mark.parametrize("saved, resumed", [("gpt", "lstm"), ("lstm", "ln-lstm"),
                                            ("ln-lstm", "gpt")])
def test_resume_refuses_a_checkpoint_of_another_model_type(tmp_path, env, saved, resumed):
    out = tmp_path / "out"
    succeeded(run_script(env, *TINY, "--model", saved, "--max-iters", "4", "--sample", "0",
                         "--out", str(out)))
    before = {name: (out / name).read_bytes() for name in ("last.npz", "curves.csv")}
    run = run_script(env, *TINY, "--model", resumed, "--max-iters", "8", "--sample", "0",
                     "--out", str(out), "--resume")
    assert run.returncode != 0
    assert f"--resume: the checkpoint is of a {saved!r} model, not this run's {resumed!r}" \
        in run.stderr
    assert f"--model {saved} to go on" in run.stderr
    assert {name: (out / name).read_bytes() for name in before} == before


def test_the_lstm_flags_and_the_norm_axis_reach_the_models():
    parser = char_lm.build_parser()
    s = char_lm.settings(parser.parse_args(["--preset", "tiny", "--model", "ln-lstm",
                                            "--hidden-size", "20", "--lstm-layers", "2"]))
    model, config, line = char_lm.BUILDERS[s.model](s, 61)
    assert (config["model"], config["hidden_size"], config["num_layers"], config["norm"]) == \
        ("ln-lstm", 20, 2, "layer")
    assert model.lstm.num_layers == 2 and "hidden size 20, 2 layers" in line
    s = char_lm.settings(parser.parse_args(["--preset", "tiny", "--norm-axis", "time"]))
    model, config, line = char_lm.BUILDERS[s.model](s, 61)
    assert config["model"] == "gpt" and config["norm_axis"] == "time"
    assert line.endswith("norm layer, pre-norm, statistics over time)")
    assert char_lm.settings(parser.parse_args([])).norm_axis == "features"
