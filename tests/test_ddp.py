"""DistributedDataParallel: exact against one process on the global batch, under mpiexec."""
import re
from pathlib import Path

import pytest

import tinynet
from tinynet.nn.parallel import DistributedDataParallel

from mpi_launch import requires_mpi, run_mpi, run_python

WORKERS = Path(__file__).parent / "distributed"
EXACT = WORKERS / "worker_ddp.py"
CHECKS = WORKERS / "worker_ddp_checks.py"


def rank_reports(result, ranks):
    """{rank: (max parameter difference, all-reduces)} from worker_ddp's lines."""
    assert result.returncode == 0, result.stdout + result.stderr
    found = re.findall(r"rank (\d+) ok (\S+) (\d+)", result.stdout)
    assert sorted(int(r) for r, _, _ in found) == list(range(ranks)), result.stdout
    return {int(r): (float(diff), int(count)) for r, diff, count in found}


@requires_mpi
@pytest.mark.parametrize("model", ["mlp-layer", "mlp-none", "lstm-layer", "mlp-syncbatch"])
def test_ddp_on_two_ranks_equals_one_process_on_the_global_batch(model):
    reports = rank_reports(run_mpi(EXACT, 2, args=(model, 20)), 2)
    for difference, all_reduces in reports.values():
        assert difference <= 1e-12
        assert all_reduces == 20                  # one bucket (25 MB) per step


@requires_mpi
@pytest.mark.parametrize("model", ["mlp-layer", "mlp-syncbatch"])
def test_ddp_on_three_ranks_with_small_buckets(model):
    reports = rank_reports(run_mpi(EXACT, 3, args=(model, 20, 0.0005)), 3)
    for difference, all_reduces in reports.values():
        assert difference <= 1e-12
        assert all_reduces > 20 and all_reduces % 20 == 0    # several buckets per step


@requires_mpi
def test_plain_batchnorm_under_ddp_differs_from_the_global_batch():
    """Each rank normalizes by its own 3 samples' statistics, not the global batch's:
    where SyncBatchNorm is exact (above), plain BatchNorm1d is off by O(1)."""
    reports = rank_reports(run_mpi(EXACT, 2, args=("mlp-batch", 20)), 2)
    assert all(difference > 0.1 for difference, _ in reports.values())


@requires_mpi
def test_ddp_runs_as_one_rank_without_mpiexec():
    reports = rank_reports(run_python(EXACT, args=("lstm-layer", 5)), 1)
    assert reports[0][0] <= 1e-12


@requires_mpi
@pytest.mark.parametrize("check", ["buckets", "accumulate", "unused"])
def test_ddp_behaviour(check):
    result = run_mpi(CHECKS, 2, args=(check,))
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count(" ok") == 2


@requires_mpi
def test_ddp_refuses_models_that_differ_across_ranks():
    result = run_mpi(CHECKS, 2, args=("mismatch",), timeout=30)
    assert result.returncode != 0
    assert "the ranks disagree on 0.weight: rank 1 has ((8, 5)" in result.stderr
    assert "rank 0 has ((7, 5)" in result.stderr


def test_ddp_needs_a_process_group():
    with pytest.raises(Exception, match="init_process_group"):
        DistributedDataParallel(tinynet.nn.Linear(2, 2))
