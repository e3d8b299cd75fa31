"""The thread policy (tinynet/threads.py), checked where users meet it: a fresh
process with a clean environment, then with the user's own settings."""
import json
import os
import re
import subprocess
import sys

import pytest

import tinynet

VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS",
             "OMP_WAIT_POLICY", "NUMBA_THREADING_LAYER")

# What the process's OpenMP runtime runs with, after a parallel kernel: GNU
# OpenMP prints its settings to stderr when OMP_DISPLAY_ENV=verbose, among them
# OMP_WAIT_POLICY and GOMP_SPINCOUNT, how long an idle worker spins before it
# sleeps (0 when passive, 300,000 by default, 3e10 when active).
PROBE = """
import json, os
import numpy as np
import tinynet
from tinynet.kernels import cpu_adam
report = {"policy": os.environ.get("OMP_WAIT_POLICY"), "threads": tinynet.get_num_threads()}
p = np.zeros(1 << 20, np.float32)
g, m, v = np.ones_like(p), np.zeros_like(p), np.zeros_like(p)
for step in (1, 2):                                  # a parallel region (> 65,536 elements)
    cpu_adam.adam_step(p, g, m, v, step, 1e-3, 0.9, 0.999, 1e-8, 0.0)
import numba
from threadpoolctl import threadpool_info
report["threading_layer"] = numba.threading_layer()
report["numba_threads"] = numba.get_num_threads()
report["blas_threads"] = [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]
print(json.dumps(report))
"""
RUNTIME_SETTING = re.compile(r"^\s*(OMP_WAIT_POLICY|GOMP_SPINCOUNT) = '([^']*)'", re.MULTILINE)


def run_probe(code=PROBE, **variables):
    env = {k: v for k, v in os.environ.items() if k not in VARIABLES}
    env.update(variables, OMP_DISPLAY_ENV="verbose")
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                            text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout.strip().splitlines()[-1])
    report["runtime"] = RUNTIME_SETTING.findall(result.stderr)
    return report


def openmp_runtime_settings(report) -> dict:
    """{setting: value} as the OpenMP runtime reported them (every runtime loaded
    must agree); skip where Numba's threads are not GNU OpenMP's."""
    if report["threading_layer"] != "omp" or not report["runtime"]:
        pytest.skip(f"Numba's threading layer is {report['threading_layer']!r}, not GNU OpenMP")
    settings = {}
    for name, value in report["runtime"]:
        assert settings.setdefault(name, value) == value, report["runtime"]
    return settings


def test_clean_environment_gets_the_passive_wait_policy():
    report = run_probe()
    assert report["policy"] == "PASSIVE"
    assert openmp_runtime_settings(report) == {"OMP_WAIT_POLICY": "PASSIVE",
                                               "GOMP_SPINCOUNT": "0"}   # idle workers sleep
    assert report["threads"] == len(os.sched_getaffinity(0))


def test_the_users_wait_policy_wins():
    report = run_probe(OMP_WAIT_POLICY="ACTIVE")
    assert report["policy"] == "ACTIVE"
    settings = openmp_runtime_settings(report)
    assert settings["OMP_WAIT_POLICY"] == "ACTIVE"
    assert int(settings["GOMP_SPINCOUNT"]) > 0                      # idle workers spin


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
