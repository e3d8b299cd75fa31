"""The thread policy (tinynet/threads.py), checked where users meet it: a fresh
process with a clean environment, then with the user's own settings."""
import json
import os
import subprocess
import sys

import pytest

import tinynet

VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS",
             "OMP_WAIT_POLICY", "NUMBA_THREADING_LAYER")

# After a parallel kernel, how much CPU time the process burns while its main
# thread sleeps: OpenMP workers that spin burn a core each, sleeping ones none.
PROBE = """
import json, os, time
import numpy as np
import tinynet
from tinynet.kernels import cpu_adam
report = {"policy": os.environ.get("OMP_WAIT_POLICY"), "threads": tinynet.get_num_threads()}
p = np.zeros(1 << 20, np.float32)
g, m, v = np.ones_like(p), np.zeros_like(p), np.zeros_like(p)
for step in (1, 2):                                  # a parallel region (> 65,536 elements)
    cpu_adam.adam_step(p, g, m, v, step, 1e-3, 0.9, 0.999, 1e-8, 0.0)
start = time.process_time()
time.sleep(0.3)
report["idle_cpu_seconds"] = time.process_time() - start
import numba
from threadpoolctl import threadpool_info
report["numba_threads"] = numba.get_num_threads()
report["blas_threads"] = [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]
print(json.dumps(report))
"""


def run_probe(code=PROBE, **variables):
    env = {k: v for k, v in os.environ.items() if k not in VARIABLES}
    env.update(variables)
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                            text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_clean_environment_gets_the_passive_wait_policy():
    report = run_probe()
    assert report["policy"] == "PASSIVE"
    assert report["idle_cpu_seconds"] < 0.1, report
    assert report["threads"] == len(os.sched_getaffinity(0))


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="spinning needs a second core")
def test_the_users_wait_policy_wins():
    report = run_probe(OMP_WAIT_POLICY="ACTIVE")
    assert report["policy"] == "ACTIVE"
    assert report["idle_cpu_seconds"] > 0.1, report       # its worker spun while idle


def test_the_users_thread_counts_win():
    report = run_probe(OPENBLAS_NUM_THREADS="1", NUMBA_NUM_THREADS="1")
    assert report["threads"] == 1
    assert report["numba_threads"] == 1
    assert report["blas_threads"] == [1]


def test_set_num_threads_governs_blas_and_numba():
    code = PROBE.replace("report = {", "tinynet.set_num_threads(1)\nreport = {", 1)
    report = run_probe(code)
    assert report["threads"] == 1
    assert report["numba_threads"] == 1
    assert report["blas_threads"] == [1]


def test_set_num_threads_above_numbas_pool_gives_numba_all_of_it():
    code = PROBE.replace("report = {", "tinynet.set_num_threads(64)\nreport = {", 1)
    report = run_probe(code, NUMBA_NUM_THREADS="1")
    assert report["threads"] == 64
    assert report["numba_threads"] == 1


@pytest.mark.parametrize("bad, error", [(0, ValueError), (-2, ValueError), ("2", TypeError),
                                        (1.5, TypeError), (True, TypeError)])
def test_set_num_threads_refuses_what_is_not_a_count(bad, error):
    with pytest.raises(error, match="set_num_threads"):
        tinynet.set_num_threads(bad)
