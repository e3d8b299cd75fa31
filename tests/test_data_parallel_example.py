"""examples/data_parallel.py on a tiny budget: under mpiexec, and as one plain process."""
import json

import pytest

from mpi_launch import REPO_ROOT, requires_mpi, run_mpi, run_python

SCRIPT = REPO_ROOT / "examples" / "data_parallel.py"


def result_of(completed, out):
    assert completed.returncode == 0, completed.stdout + completed.stderr
    return json.loads((out / "result.json").read_text())


@requires_mpi
@pytest.mark.parametrize("norm, bn_messages", [("layer", 0), ("syncbatch", 2 * 2),
                                               ("batch", 0)])
def test_each_norm_on_two_ranks_reports_its_traffic(tmp_path, norm, bn_messages):
    """LayerNorm and local BatchNorm send only the gradients; SyncBatchNorm also
    sends two messages (forward, backward) per BN layer (two) per step."""
    args = ("--norm", norm, "--per-worker-batch", "8", "--examples", "320", "--out", tmp_path)
    result = result_of(run_mpi(SCRIPT, 2, args=args, timeout=90), tmp_path)
    assert result["world_size"] == 2 and result["global_batch"] == 16
    assert result["steps"] == 20 and result["examples"] == 320
    assert result["traffic"]["gradients"]["all_reduces_per_step"] == 1
    model_bytes = 4 * (784 * 1000 + 1000 + 1000 * 1000 + 1000 + 1000 * 10 + 10
                       + (0 if norm == "none" else 4 * 1000))
    assert result["traffic"]["gradients"]["bytes_per_step"] == model_bytes
    statistics = result["traffic"].get("batch statistics", {}).get("all_reduces_per_step", 0)
    assert statistics == bn_messages
    assert 0 < result["communicating"] < 1
    assert 0 <= result["test_error"] <= 1


def test_one_plain_process_is_a_world_of_one(tmp_path):
    pytest.importorskip("mpi4py")
    args = ("--norm", "layer", "--per-worker-batch", "16", "--examples", "320",
            "--out", tmp_path)
    result = result_of(run_python(SCRIPT, args=args, timeout=90), tmp_path)
    assert result["world_size"] == 1 and result["steps"] == 20
    assert "gradients" not in result["traffic"]         # nothing to average
