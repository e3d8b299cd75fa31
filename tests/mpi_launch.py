"""Running Python under ``mpiexec`` from a test: ``run_mpi`` and the ``requires_mpi`` mark.

The ranks run in the repository's root with the interpreter that runs the
tests. A job that outlives its timeout is killed whole (mpiexec and every
rank, one process group) and the test fails with what the ranks printed.
"""
from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent

# One thread per rank: the ranks share the machine's cores.
_RANK_ENVIRONMENT = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
                     "MKL_NUM_THREADS": "1", "NUMBA_NUM_THREADS": "1"}


def find_mpiexec() -> str | None:
    """The ``mpiexec`` beside the running interpreter (the mpich wheel puts it
    there), else the first on PATH, else None."""
    beside = Path(sys.executable).with_name("mpiexec")
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("mpiexec")


requires_mpi = pytest.mark.skipif(
    importlib.util.find_spec("mpi4py") is None or find_mpiexec() is None,
    reason="skipped: needs the mpi extra (pip install 'tinynet[mpi]': mpi4py and mpiexec)")


def python_command(script_or_code, args=()) -> list[str]:
    """``python script.py args...`` for a path to a ``.py`` file, else ``python -c code``."""
    if isinstance(script_or_code, Path) or str(script_or_code).endswith(".py"):
        return [sys.executable, str(script_or_code), *map(str, args)]
    return [sys.executable, "-c", script_or_code, *map(str, args)]


def run_command(command, timeout: float) -> subprocess.CompletedProcess:
    """Run ``command`` in the repository's root and return its CompletedProcess
    (text output captured); kill its whole process group if it runs past ``timeout``."""
    process = subprocess.Popen(command, cwd=REPO_ROOT, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, start_new_session=True,
                               env={**os.environ, **_RANK_ENVIRONMENT})
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        stdout, stderr = process.communicate()
        pytest.fail(f"{' '.join(command)} ran past {timeout} s and was killed\n"
                    f"stdout:\n{stdout}\nstderr:\n{stderr}")
    return subprocess.CompletedProcess(command, process.returncode, stdout, stderr)


def run_mpi(script_or_code, n: int, timeout: float = 60,
            args=()) -> subprocess.CompletedProcess:
    """``mpiexec -n N python script_or_code args...`` (a ``.py`` path, or code for
    ``python -c``), in the repository's root; returns the CompletedProcess."""
    mpiexec = find_mpiexec()
    if mpiexec is None:
        pytest.skip("skipped: needs the mpi extra (no mpiexec found)")
    return run_command([mpiexec, "-n", str(n), *python_command(script_or_code, args)], timeout)


def run_python(script_or_code, timeout: float = 60, args=()) -> subprocess.CompletedProcess:
    """The same as :func:`run_mpi`, as one plain process without ``mpiexec``."""
    return run_command(python_command(script_or_code, args), timeout)
