"""The example scripts end to end, on tiny budgets."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import tinynet

from mpi_launch import find_mpiexec, requires_mpi, run_command

EXAMPLES = os.path.join(os.path.dirname(__file__), os.pardir, "examples")
sys.path.insert(0, os.path.abspath(EXAMPLES))

import char_lm  # noqa: E402
import mnist_cnn  # noqa: E402

import batch_size_sweep  # noqa: E402
import ln_lstm  # noqa: E402
import mnist_mlp  # noqa: E402


def _mlp_args(tmp_path, *extra):
    return mnist_mlp.build_parser().parse_args(
        ["--norm", "batch", "--batch-size", "32", "--examples", "256", "--curve-points", "2",
         "--out", str(tmp_path), "--no-progress", *extra])


def test_mnist_mlp_writes_its_result(tmp_path):
    result = mnist_mlp.train(_mlp_args(tmp_path))
    saved = json.loads((tmp_path / "result.json").read_text())
    for field in ("norm", "batch_size", "seed", "examples", "test_error", "test_nll",
                  "train_seconds", "examples_per_second", "median_step_seconds", "device"):
        assert saved[field] == result[field]
    assert saved["examples"] == 256 and 0 <= saved["test_error"] <= 1
    assert saved["device"] == "cpu" and 0 < saved["median_step_seconds"] < saved["train_seconds"]
    assert [point[0] for point in saved["curve"]] == [128, 256]
    assert (tmp_path / "checkpoint.npz").exists()


def test_mnist_mlp_resumes_exactly_after_a_crash(tmp_path, monkeypatch):
    uninterrupted = mnist_mlp.train(_mlp_args(tmp_path / "a"))

    real_step = tinynet.optim.Adam.step
    calls = {"n": 0}

    def crashing_step(self):
        calls["n"] += 1
        if calls["n"] == 6:
            raise KeyboardInterrupt("simulated crash")
        real_step(self)

    monkeypatch.setattr(tinynet.optim.Adam, "step", crashing_step)
    with pytest.raises(KeyboardInterrupt):
        mnist_mlp.train(_mlp_args(tmp_path / "b", "--checkpoint-every", "0"))
    monkeypatch.setattr(tinynet.optim.Adam, "step", real_step)
    assert not (tmp_path / "b" / "result.json").exists()
    assert tinynet.load(tmp_path / "b" / "checkpoint.npz")["state"]["step"] == 5

    resumed = mnist_mlp.train(_mlp_args(tmp_path / "b", "--resume"))
    assert resumed["test_nll"] == uninterrupted["test_nll"]
    assert resumed["test_error"] == uninterrupted["test_error"]


def test_resume_refuses_a_different_configuration(tmp_path):
    mnist_mlp.train(_mlp_args(tmp_path))
    args = _mlp_args(tmp_path, "--resume", "--seed", "3")
    with pytest.raises(ValueError, match="checkpoint was made with"):
        mnist_mlp.train(args)


@pytest.mark.parametrize("extra", [["--schedule", "step"],
                                   ["--schedule", "cosine", "--optimizer", "adamw"]])
def test_mnist_mlp_resumes_its_lr_schedule_exactly(tmp_path, monkeypatch, extra):
    mnist_mlp.train(_mlp_args(tmp_path / "a", *extra))

    real_step = tinynet.optim.Adam.step              # AdamW's step too
    calls = {"n": 0}

    def crashing_step(self):
        calls["n"] += 1
        if calls["n"] == 6:                          # of 8; the step schedule decays at 4 and 6
            raise KeyboardInterrupt("simulated crash")
        real_step(self)

    monkeypatch.setattr(tinynet.optim.Adam, "step", crashing_step)
    with pytest.raises(KeyboardInterrupt):
        mnist_mlp.train(_mlp_args(tmp_path / "b", "--checkpoint-every", "0", *extra))
    monkeypatch.setattr(tinynet.optim.Adam, "step", real_step)
    assert tinynet.load(tmp_path / "b" / "checkpoint.npz")["scheduler"]["last_epoch"] == 5
    mnist_mlp.train(_mlp_args(tmp_path / "b", "--resume", *extra))

    uninterrupted, resumed = (tinynet.load(tmp_path / run / "checkpoint.npz") for run in "ab")
    lrs = [[g["lr"] for g in c["optimizer"]["param_groups"]] for c in (uninterrupted, resumed)]
    assert lrs[0] == lrs[1] and lrs[0][0] < 1e-3 / 50          # the schedule ran to its end
    assert resumed["scheduler"] == uninterrupted["scheduler"]
    for name, weight in uninterrupted["model"].items():
        np.testing.assert_array_equal(resumed["model"][name], weight, err_msg=name)


def test_sweep_runs_in_workers_appends_and_skips_done_runs(tmp_path, capsys):
    argv = ["--norms", "layer", "none", "--batch-sizes", "8", "--seeds", "0",
            "--examples", "64", "--workers", "2", "--out", str(tmp_path)]
    assert batch_size_sweep.main(argv) == 0
    lines = (tmp_path / "results.jsonl").read_text().splitlines()
    assert sorted(json.loads(line)["norm"] for line in lines) == ["layer", "none"]
    assert all(json.loads(line)["median_step_seconds"] > 0 for line in lines)
    assert (tmp_path / "sweep.csv").read_text().startswith("norm,batch_size,seeds,test_error_pct")
    assert (tmp_path / "figure6.png").stat().st_size > 1000
    capsys.readouterr()
    assert batch_size_sweep.main(argv) == 0
    assert "2 already done, 0 to run" in capsys.readouterr().out
    assert len((tmp_path / "results.jsonl").read_text().splitlines()) == 2


def test_sweep_summary_means_over_seeds():
    runs = [dict(norm="layer", batch_size=4, test_error=e, test_nll=n, examples_per_second=10.0)
            for e, n in ((0.04, 0.2), (0.06, 0.4))]
    (row,) = batch_size_sweep.summarize(runs)
    assert row["seeds"] == 2 and row["test_error_pct"] == pytest.approx(5.0)
    assert row["test_error_spread_pct"] == pytest.approx(2.0)
    assert row["test_nll"] == pytest.approx(0.3)


def test_sweep_workers_compute_on_one_thread(monkeypatch):
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "8")
    args = batch_size_sweep.build_parser().parse_args(["--workers", "1"])
    executor, workers = batch_size_sweep.make_executor(args)
    with executor:
        assert workers == 1 and executor.submit(os.getenv, "OPENBLAS_NUM_THREADS").result() == "1"
    assert os.environ["OPENBLAS_NUM_THREADS"] == "8"            # the parent keeps its own


TINY_SWEEP = ["--norms", "layer", "none", "--batch-sizes", "8", "--seeds", "0", "--examples", "64"]


def _sweep_on_three_ranks(out) -> str:
    """The tiny sweep under ``mpiexec -n 3 python -m mpi4py.futures``: its output."""
    run = run_command([find_mpiexec(), "-n", "3", sys.executable, "-m", "mpi4py.futures",
                       "examples/batch_size_sweep.py", "--executor", "mpi", *TINY_SWEEP,
                       "--out", str(out)], timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    return run.stdout


@requires_mpi
def test_sweep_on_mpi_writes_in_the_parent_alone_and_reruns_only_what_had_not_finished(tmp_path):
    results = tmp_path / "results.jsonl"
    output = _sweep_on_three_ranks(tmp_path)
    assert "0 already done, 2 to run with 2 worker(s)" in output and output.count("done:") == 2
    finished = results.read_text().splitlines()
    # one line a run, each written once: a worker writing too would duplicate them
    assert sorted(json.loads(line)["norm"] for line in finished) == ["layer", "none"]
    assert "2 already done, 0 to run" in _sweep_on_three_ranks(tmp_path)
    assert results.read_text().splitlines() == finished

    results.write_text(finished[0] + "\n")                      # interrupted after one run
    output = _sweep_on_three_ranks(tmp_path)
    assert "1 already done, 1 to run" in output and output.count("done:") == 1
    rerun = results.read_text().splitlines()
    assert len(rerun) == 2 and rerun[0] == finished[0]
    assert json.loads(rerun[1])["norm"] == json.loads(finished[1])["norm"]


def test_the_mpi_executor_without_mpi4py_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "mpi4py", None)             # as if it were not installed
    args = batch_size_sweep.build_parser().parse_args(["--executor", "mpi"])
    with pytest.raises(SystemExit, match=r"pip install 'tinynet\[mpi\]'"):
        batch_size_sweep.make_executor(args)


def test_the_mpi_executor_leaves_the_pool_size_to_the_launcher():
    args = batch_size_sweep.build_parser().parse_args(["--executor", "mpi", "--workers", "2"])
    with pytest.raises(SystemExit, match="the MPI launcher sizes the pool"):
        batch_size_sweep.make_executor(args)


@requires_mpi
@pytest.mark.parametrize("ranks, module", [(None, []), (2, []), (1, ["-m", "mpi4py.futures"])],
                         ids=["python", "mpiexec-without-mpi4py.futures", "one-rank"])
def test_the_mpi_executor_without_workers_prints_the_launch_line(tmp_path, ranks, module):
    """No spawning of workers (it hangs under MPICH's singletons), no sweep on every rank."""
    mpiexec = [] if ranks is None else [find_mpiexec(), "-n", str(ranks)]
    run = run_command([*mpiexec, sys.executable, *module, "examples/batch_size_sweep.py",
                       "--executor", "mpi", *TINY_SWEEP, "--out", str(tmp_path / "out")],
                      timeout=60)
    assert run.returncode != 0
    assert "found no workers" in run.stderr
    assert "mpiexec -n N python -m mpi4py.futures examples/batch_size_sweep.py" in run.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("task", ["mnist", "adding"])
def test_ln_lstm_script(tmp_path, task):
    argv = ["--task", task, "--norm", "all", "--steps", "4", "--eval-every", "2",
            "--eval-images", "100", "--hidden", "16", "--length", "8", "--out", str(tmp_path),
            "--no-progress"]
    assert ln_lstm.main(argv) == 0
    for norm in ("none", "layer", "batch"):
        result = json.loads((tmp_path / norm / "result.json").read_text())
        assert result["norm"] == norm and result["steps"] == 4 and result["seconds_per_step"] > 0
        assert result["device"] == "cpu" and result["median_step_seconds"] > 0
        assert [p[0] for p in result["curve"]] == [2, 4]
        if task == "mnist":
            assert 0 <= result["test_accuracy"] <= 1
        else:
            assert np.isfinite([result["mse_at_T"], result["mse_at_2T"], result["mse_at_4T"]]).all()
    assert (tmp_path / "curves.png").exists()


@pytest.mark.parametrize("script, argv", [
    ("mnist_mlp.py", ["--examples", "64", "--no-progress"]),
    ("mnist_cnn.py", ["--examples", "64", "--no-progress"]),
    ("ln_lstm.py", ["--task", "mnist", "--steps", "1", "--no-progress"]),
    ("batch_size_sweep.py", ["--norms", "layer", "--batch-sizes", "8", "--seeds", "0",
                             "--examples", "64", "--workers", "1"]),
])
def test_a_data_directory_without_mnist_is_an_error_naming_it(tmp_path, script, argv):
    """An explicit --data never falls back on the bundled sample."""
    missing = tmp_path / "no-mnist-here"
    env = {k: v for k, v in os.environ.items() if k != "TINYNET_DATA"}
    run = subprocess.run([sys.executable, os.path.join(EXAMPLES, script), *argv,
                          "--data", str(missing), "--out", str(tmp_path / "out")],
                         capture_output=True, text=True, env=env, timeout=120)
    assert run.returncode != 0
    assert f"no training set in {missing}" in run.stderr or \
        f"no test set in {missing}" in run.stderr
    assert "train-images-idx3-ubyte.gz" in run.stderr
    assert "bundled sample" not in run.stdout
    assert not (tmp_path / "out").exists()


def test_sweep_results_from_before_the_device_option_count_as_cpu_runs():
    run = dict(norm="layer", batch_size=4, seed=0, budget=64, data="bundled sample")
    assert batch_size_sweep._key(run) == batch_size_sweep._key(dict(run, device="cpu"))
    assert batch_size_sweep._key(run) != batch_size_sweep._key(dict(run, device="cuda"))
    assert batch_size_sweep._key(run) == batch_size_sweep._key(dict(run, model="mlp"))
    assert batch_size_sweep._key(run) != batch_size_sweep._key(dict(run, model="cnn"))


requires_no_gpu = pytest.mark.skipif(tinynet.cuda_is_available(),
                                     reason="a GPU is here: --device cuda would train")


@requires_no_gpu
@pytest.mark.parametrize("script, argv", [
    (mnist_mlp, ["--examples", "64", "--no-progress"]),
    (mnist_cnn, ["--examples", "64", "--no-progress"]),
    (ln_lstm, ["--task", "mnist", "--steps", "1", "--no-progress"]),
    (batch_size_sweep, ["--norms", "layer", "--batch-sizes", "8", "--seeds", "0",
                        "--examples", "64", "--workers", "1"]),
    (char_lm, ["--preset", "tiny", "--max-iters", "2", "--no-progress"]),
    (char_lm, ["--model", "ln-lstm", "--preset", "tiny", "--max-iters", "2", "--no-progress"]),
], ids=["mnist_mlp", "mnist_cnn", "ln_lstm", "batch_size_sweep", "char_lm", "char_lm-ln-lstm"])
def test_device_cuda_without_cupy_or_a_gpu_stops_before_any_data_naming_what_is_missing(
        tmp_path, capsys, script, argv):
    missing = tmp_path / "no-mnist-here"      # read before the device check, it would fail
    with pytest.raises(SystemExit) as stop:
        script.main([*argv, "--device", "cuda", "--data", str(missing),
                     "--out", str(tmp_path / "out")])
    assert stop.value.code == 2
    error = capsys.readouterr().err
    assert "device 'cuda' needs CuPy" in error or "no CUDA GPU is available" in error
    if "needs CuPy" in error:
        assert "pip install 'tinynet[cuda12]'" in error
    assert not (tmp_path / "out").exists()


@requires_no_gpu
def test_sweep_workers_train_on_the_device_of_the_sweep():
    job = dict(norm="layer", batch_size=8, seed=0, budget=64, curve_points=1, device="cuda")
    with pytest.raises(RuntimeError, match="device 'cuda'"):
        batch_size_sweep.run_one(job)
