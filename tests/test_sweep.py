"""examples/char_lm_sweep.py on the machinery of examples/sweep.py: the tiny grid end to
end on two local workers, a re-run, a sweep killed by SIGKILL and restarted, bad flags.

The runs read the bundled excerpt: HOME and TINYNET_DATA point at empty folders, as in
test_char_lm.py, so nothing on this machine changes the numbers.
"""
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

EXAMPLES = os.path.join(os.path.dirname(__file__), os.pardir, "examples")
SCRIPT = os.path.join(EXAMPLES, "char_lm_sweep.py")
sys.path.insert(0, os.path.abspath(EXAMPLES))

import char_lm_sweep  # noqa: E402

TINY = ["--preset", "tiny", "--workers", "2"]
TINY_RUNS = 6                                   # 3 configurations × 2 seeds


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    home, data = tmp_path_factory.mktemp("home"), tmp_path_factory.mktemp("data")
    return dict(os.environ, HOME=str(home), TINYNET_DATA=str(data))


def sweep(env, out, *extra, timeout=120):
    run = subprocess.run([sys.executable, SCRIPT, *TINY, "--out", str(out), *extra],
                         capture_output=True, text=True, env=env, timeout=timeout)
    assert run.returncode == 0, run.stdout + run.stderr
    return run.stdout


def results(out) -> dict:
    """The results of OUT/results.jsonl by key."""
    lines = (out / "results.jsonl").read_text().splitlines()
    by_key = {char_lm_sweep.key(r): r for r in map(json.loads, lines)}
    assert len(by_key) == len(lines), "a run appended twice"
    return by_key


@pytest.fixture(scope="module")
def full(tmp_path_factory, env):
    """The tiny grid, never interrupted: its directory and output."""
    out = tmp_path_factory.mktemp("full")
    return out, sweep(env, out)


def test_the_tiny_grid_runs_every_configuration_on_two_workers(full):
    out, output = full
    assert "6 runs of the 'tiny' grid on bundled excerpt: 0 already done, 6 to run with " \
           "2 worker(s)" in output
    assert output.count("  done: ") == TINY_RUNS
    runs = results(out)
    assert sorted((r["model"], r["norm"], r["placement"], r["seed"]) for r in runs.values()) == [
        ("gpt", "layer", "pre", 0), ("gpt", "layer", "pre", 1), ("gpt", "rms", "post", 0),
        ("gpt", "rms", "post", 1), ("ln-lstm", "layer", "pre", 0), ("ln-lstm", "layer", "pre", 1)]
    for r in runs.values():
        assert r["preset"] == "tiny" and r["data"] == "bundled excerpt" and r["device"] == "cpu"
        assert [row[0] for row in r["curve"]] == [0, 4, 8, 12]           # one row per eval
        assert [r["final_train_loss"], r["final_val_loss"]] == r["curve"][-1][1:3]
        assert r["best_val_loss"] == min(row[2] for row in r["curve"])
        assert r["final_val_loss"] < r["curve"][0][2] < math.log(61) + 0.1     # it trains
        assert 0 < r["median_iteration_ms"] < 1000 * r["train_seconds"]
    gpt, lstm = (next(r["params"] for r in runs.values() if r["model"] == m)
                 for m in ("gpt", "ln-lstm"))
    assert abs(lstm - gpt) <= 0.1 * gpt                                    # matched sizes

    lines = (out / "summary.csv").read_text().splitlines()
    assert lines[0].startswith("model,norm,placement,norm_axis,n_layer,warmup_iters,seeds,params")
    assert [line.split(",")[:3] + [line.split(",")[6]] for line in lines[1:]] == [
        ["gpt", "layer", "pre", "2"], ["gpt", "rms", "post", "2"], ["ln-lstm", "layer", "-", "2"]]


def test_a_rerun_skips_the_finished_runs(full, env, tmp_path):
    out = tmp_path / "out"
    shutil.copytree(full[0], out)
    before = (out / "results.jsonl").read_bytes()
    output = sweep(env, out)
    assert "6 already done, 0 to run" in output and "  done: " not in output
    assert (out / "results.jsonl").read_bytes() == before
    assert (out / "summary.csv").read_text() == (full[0] / "summary.csv").read_text()


def _group_left(pgid: int) -> list[int]:
    """The live (not zombie) processes of process group ``pgid``."""
    left = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            left.append(int(pid))
    return left


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads the process table in /proc")
def test_a_sweep_killed_after_its_first_result_completes_the_rest_bit_for_bit(
        full, env, tmp_path):
    out = tmp_path / "out"
    parent = subprocess.Popen([sys.executable, SCRIPT, *TINY, "--out", str(out)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                              start_new_session=True)        # its own group: its workers too
    try:
        for line in parent.stdout:
            if line.startswith("  done: "):
                parent.send_signal(signal.SIGKILL)
                break
        parent.wait(timeout=60)
        deadline = time.monotonic() + 20          # the orphaned workers stop by themselves
        while _group_left(parent.pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not _group_left(parent.pid), "workers outlived the parent"
    finally:
        if _group_left(parent.pid):
            os.killpg(parent.pid, signal.SIGKILL)
        parent.stdout.close()
    assert parent.returncode == -signal.SIGKILL
    finished = (out / "results.jsonl").read_text().splitlines()
    assert 1 <= len(finished) < TINY_RUNS

    output = sweep(env, out)
    left = TINY_RUNS - len(finished)
    assert f"{len(finished)} already done, {left} to run" in output
    assert output.count("  done: ") == left
    assert (out / "results.jsonl").read_text().splitlines()[:len(finished)] == finished
    resumed, uninterrupted = results(out), results(full[0])
    assert resumed.keys() == uninterrupted.keys()
    for k, r in resumed.items():
        for field in ("curve", "final_train_loss", "final_val_loss", "best_val_loss", "params"):
            assert r[field] == uninterrupted[k][field], (k, field)


@pytest.mark.parametrize("argv, message", [
    (["--preset", "nope"], "argument --preset: invalid choice: 'nope'"),
    (["--seeds", "0"], "--seeds 0: at least one seed"),
    (["--max-iters", "0"], "--max-iters 0: at least one iteration"),
    (["--norm", "layer"], "unrecognized arguments: --norm layer"),
])
def test_a_bad_preset_or_flag_is_an_error_naming_it(tmp_path, capsys, argv, message):
    with pytest.raises(SystemExit) as stop:
        char_lm_sweep.main([*argv, "--out", str(tmp_path / "out")])
    assert stop.value.code == 2 and message in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("argv, message", [
    (["--workers", "0"], "--workers 0: a pool needs at least one worker"),
    (["--executor", "mpi", "--workers", "2"], "the MPI launcher sizes the pool"),
])
def test_a_bad_pool_is_an_error_naming_it(tmp_path, argv, message):
    with pytest.raises(SystemExit, match=message):
        char_lm_sweep.main([*argv, "--out", str(tmp_path / "out")])
    assert not (tmp_path / "out").exists()


def test_the_grids_are_the_planned_experiments():
    def plan(preset, *extra):
        args = char_lm_sweep.build_parser().parse_args(["--preset", preset, *extra])
        return char_lm_sweep.plan(args, "Tiny Shakespeare")

    placement = plan("placement")
    assert len(placement) == 8 * 2 and {c["preset"] for c in placement} == {"cpu"}
    assert {(c["placement"], c["warmup_iters"], c["n_layer"]) for c in placement} == {
        (p, w, n) for p in ("pre", "post") for w in (0, 100) for n in (6, 12)}
    norm = plan("norm", "--seeds", "3")
    assert [(c["norm"], c["seed"]) for c in norm] == [
        (n, s) for n in ("layer", "rms", "none") for s in range(3)]
    assert {c["placement"] for c in norm} == {"pre"}
    assert [c["norm_axis"] for c in plan("time-axis")] == ["features"] * 2 + ["time"] * 2
    lstm = plan("lstm", "--max-iters", "500")
    assert [c["model"] for c in lstm] == ["lstm"] * 2 + ["ln-lstm"] * 2 + ["gpt"] * 2
    assert {(c["max_iters"], c["lr_decay_iters"], c["n_layer"]) for c in lstm} == {(500, 500, 4)}
    # the configurations every grid shares are the same runs (one key)
    shared = {char_lm_sweep.key(c) for c in plan("norm")} & {
        char_lm_sweep.key(c) for c in plan("time-axis")} & {
        char_lm_sweep.key(c) for c in lstm + plan("lstm")}
    assert len(shared) == 2                                   # the pre-norm LN GPT, 2 seeds
