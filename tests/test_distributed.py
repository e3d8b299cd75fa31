"""tinynet.distributed: collectives under mpiexec, faults, one process, and the errors.

The worker scripts in tests/distributed/ check the collectives' results on
every rank; here each job's exit status and output are checked. The checks are
gathered into few launches: starting a job costs about half a second.
"""
import sys
from pathlib import Path

import pytest

import tinynet
import tinynet.distributed as dist
from tinynet.data import DistributedSampler

from mpi_launch import requires_mpi, run_mpi, run_python

WORKERS = Path(__file__).parent / "distributed"
INSTALL_HINT = "pip install 'tinynet[mpi]'"
NOT_INITIALIZED = "Default process group has not been initialized"


def assert_succeeded(job, world_size):
    assert job.returncode == 0, f"stdout:\n{job.stdout}\nstderr:\n{job.stderr}"
    for rank in range(world_size):
        assert f"rank {rank} of {world_size}: collectives OK" in job.stdout


@requires_mpi
@pytest.mark.parametrize("world_size", [2, 3])
def test_collectives_under_mpiexec(world_size):
    assert_succeeded(run_mpi(WORKERS / "worker_collectives.py", world_size), world_size)


@requires_mpi
def test_world_of_one_without_mpiexec():
    assert_succeeded(run_python(WORKERS / "worker_collectives.py"), 1)


@requires_mpi
def test_a_failing_rank_stops_the_job_with_its_message():
    # A job that outlives the timeout is killed and the test fails: without the
    # abort, rank 0 would wait in its next all-reduce forever.
    job = run_mpi(WORKERS / "worker_faults.py", 2, timeout=15, args=["boom"])
    assert job.returncode != 0
    output = job.stdout + job.stderr
    assert "[rank 1] RuntimeError: boom at step 3" in output
    assert "[rank 1] Traceback (most recent call last):" in output
    assert "the job was expected to fail" not in output


@requires_mpi
def test_ranks_that_disagree_on_a_shape_stop_with_the_difference():
    job = run_mpi(WORKERS / "worker_faults.py", 2, timeout=30, args=["mismatch"])
    assert job.returncode != 0
    output = job.stdout + job.stderr
    assert ("ValueError: all_reduce(): the ranks disagree on shape: rank 1 has (3,) "
            "where rank 0 has (2,)") in output
    assert "the job was expected to fail" not in output


def test_import_tinynet_does_not_import_mpi4py_and_a_missing_mpi4py_names_the_extra():
    code = "\n".join([
        "import sys",
        "import tinynet",
        "assert 'mpi4py' not in sys.modules, 'import tinynet imported mpi4py'",
        "sys.modules['mpi4py'] = None     # as if it were not installed",
        "assert not tinynet.distributed.is_available()",
        "try:",
        "    tinynet.distributed.init_process_group('mpi')",
        "except RuntimeError as error:",
        "    print(error)",
        "assert not tinynet.distributed.is_initialized()",
    ])
    job = run_python(code)
    assert job.returncode == 0, job.stderr
    assert INSTALL_HINT in job.stdout and "mpi4py" in job.stdout


@requires_mpi
def test_tinynet_distributed_is_an_attribute_of_tinynet():
    assert tinynet.distributed is dist
    assert dist.is_available()


@pytest.mark.parametrize("call", [
    dist.get_rank, dist.get_world_size, dist.get_backend, dist.barrier,
    dist.destroy_process_group,
    lambda: dist.all_reduce(tinynet.ones(2)),
    lambda: dist.broadcast(tinynet.ones(2), 0),
    lambda: dist.all_gather([tinynet.ones(2)], tinynet.ones(2)),
    lambda: dist.all_reduce_array(tinynet.ones(2).numpy()),
    lambda: dist.check_same_shapes({"shape": (2,)}, "DistributedDataParallel"),
    lambda: DistributedSampler(range(4)),
    lambda: DistributedSampler(range(4), num_replicas=2),
])
def test_using_the_group_before_init_process_group_is_an_error(call):
    assert not dist.is_initialized()
    with pytest.raises(RuntimeError, match=NOT_INITIALIZED) as raised:
        call()
    assert isinstance(raised.value, ValueError)      # PyTorch 2 raises a ValueError


@pytest.mark.parametrize("backend", ["gloo", "nccl", "MPICH"])
def test_other_backends_are_refused_by_name(backend):
    with pytest.raises(ValueError, match=f"backend '{backend}' is not supported.*'mpi'"):
        dist.init_process_group(backend)
    assert not dist.is_initialized()


def test_only_the_default_group_exists():
    with pytest.raises(ValueError, match="only the default process group"):
        dist.get_rank(group="workers")


# Rank 0 prints every rank's line: the ranks' own prints could interleave.
SHOW_THREADS = ("import tinynet, tinynet.distributed as dist; from mpi4py import MPI; "
                "dist.init_process_group(); "
                "rows = MPI.COMM_WORLD.gather(('threads', dist.get_rank(), "
                "tinynet.get_num_threads(), tinynet.threads._cores())); "
                "dist.get_rank() == 0 and print('\\n'.join(' '.join(map(str, r)) for r in rows))")


@requires_mpi
@pytest.mark.parametrize("user_setting", [None, "2"])
def test_ranks_on_one_machine_share_its_cores_unless_the_user_says(user_setting):
    import os
    import subprocess

    from tinynet.runtime.threads import THREAD_COUNT_VARIABLES

    from mpi_launch import REPO_ROOT, find_mpiexec
    env = {k: v for k, v in os.environ.items() if k not in THREAD_COUNT_VARIABLES}
    if user_setting:
        env["OMP_NUM_THREADS"] = user_setting
    job = subprocess.run([find_mpiexec(), "-n", "2", sys.executable, "-c", SHOW_THREADS],
                         cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert job.returncode == 0, job.stderr
    lines = [line.split() for line in job.stdout.splitlines() if line.startswith("threads")]
    assert len(lines) == 2
    for _, _, threads, cores in lines:
        expected = int(user_setting) if user_setting else max(1, int(cores) // 2)
        assert int(threads) == expected
