"""The thread policy (tinynet/runtime/threads.py), checked where users meet it: a fresh
process with a clean environment, then with the user's own settings."""
import json
import os
import re
import subprocess
import sys
import threading

import numpy as np
import pytest

import tinynet

VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS",
             "OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "NUMBA_THREADING_LAYER")

# What the process's OpenMP runtime runs with, after a parallel kernel: GNU
# OpenMP prints its settings to stderr when OMP_DISPLAY_ENV=verbose, among them
# OMP_WAIT_POLICY and GOMP_SPINCOUNT, how long an idle worker spins before it
# sleeps (0 when passive, 300,000 by default, 3e10 when active).
PROBE = """
import json, os
import numpy as np
import tinynet
tinynet.nn.functional.gelu(tinynet.ones(4))     # the first compiled kernel starts Numba's pool
from tinynet.kernels.ops import adam_cpu
from tinynet.runtime import blas_pool as cpu_blas_pool
report = {"policy": os.environ.get("OMP_WAIT_POLICY"), "threads": tinynet.get_num_threads()}
p = np.zeros(1 << 20, np.float32)
g, m, v = np.ones_like(p), np.zeros_like(p), np.zeros_like(p)
for step in (1, 2):                                  # a parallel region (> 65,536 elements)
    adam_cpu.adam_step(p, g, m, v, step, 1e-3, 0.9, 0.999, 1e-8, 0.0)
import numba
from threadpoolctl import threadpool_info
report["threading_layer"] = numba.threading_layer()
report["numba_threads"] = numba.get_num_threads()
report["blas_threads"] = [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]
report["shared_pool"] = cpu_blas_pool.joined()
report["environment"] = [os.environ.get(n) for n in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")]
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


def test_clean_environment_shares_one_pool_whose_idle_workers_spin_a_while():
    report = run_probe()
    assert report["threads"] == len(os.sched_getaffinity(0))
    # whatever OpenMP runtime loads later (PyTorch's) is told to sleep at once
    assert report["environment"] == ["PASSIVE", None]
    settings = openmp_runtime_settings(report)
    if report["shared_pool"]:       # Numba's workers run OpenBLAS's work too: they spin
        assert settings["GOMP_SPINCOUNT"] == tinynet.threads.SPIN_COUNT
    else:                           # two pools: Numba's workers sleep at once
        assert settings == {"OMP_WAIT_POLICY": "PASSIVE", "GOMP_SPINCOUNT": "0"}


def test_numpys_openblas_shares_the_pool():
    from threadpoolctl import threadpool_info
    openblas = [i for i in threadpool_info() if i.get("internal_api") == "openblas"]
    if not openblas or tuple(map(int, openblas[0]["version"].split(".")[:3])) < (0, 3, 27):
        pytest.skip("NumPy's BLAS is not an OpenBLAS with a threads callback (0.3.27+)")
    assert run_probe()["shared_pool"]


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


# The shared pool (tinynet/runtime/blas_pool.py): OpenBLAS's work on Numba's workers.
def shared_pool():
    from tinynet.runtime import blas_pool as cpu_blas_pool
    tinynet.nn.functional.gelu(tinynet.ones(4))      # the first compiled kernel joins the pools
    if not cpu_blas_pool.joined():
        pytest.skip("OpenBLAS's work does not run on Numba's pool here")
    return cpu_blas_pool


def big_product_operands(seed=0):
    rng = np.random.default_rng(seed)         # large enough for OpenBLAS to use every thread
    return rng.random((512, 384), dtype=np.float32), rng.random((384, 640), dtype=np.float32)


def test_products_on_the_shared_pool_keep_their_bits():
    pool = shared_pool()
    a, b = big_product_operands()
    shared = [a @ b, a.astype(np.float64) @ b.astype(np.float64), a[:, :300] @ b[:300].T.T]
    pool.leave()
    try:
        own = [a @ b, a.astype(np.float64) @ b.astype(np.float64), a[:, :300] @ b[:300].T.T]
    finally:
        tinynet.threads._rejoin()
    assert pool.joined()
    for x, y in zip(shared, own, strict=True):
        assert x.tobytes() == y.tobytes()


def test_products_from_several_python_threads_at_once():
    shared_pool()
    a, b = big_product_operands()
    expected = a @ b
    results = []

    def work():
        results.extend((a @ b).tobytes() == expected.tobytes() for _ in range(20))

    workers = [threading.Thread(target=work) for _ in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
    assert not any(worker.is_alive() for worker in workers), "a product hung"
    assert results == [True] * 80


POOL_PROBE = """
import json, os, numpy as np, numba, tinynet
from tinynet.runtime import blas_pool as cpu_blas_pool
tinynet.nn.functional.gelu(tinynet.ones(4))
a = np.random.default_rng(0).random((512, 512), dtype=np.float32)
report = {"joined": cpu_blas_pool.joined()}
"""


def run_pool_probe(code, **variables):
    env = {k: v for k, v in os.environ.items() if k not in VARIABLES}
    program = POOL_PROBE + code + "\nprint(json.dumps(report))"
    result = subprocess.run([sys.executable, "-c", program], env={**env, **variables},
                            capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_more_blas_threads_than_numbas_gives_openblas_its_own_back():
    report = run_pool_probe("""
tinynet.set_num_threads(8)            # OpenBLAS may run 8 pieces; Numba has 2 threads
report["above"] = cpu_blas_pool.joined()
report["product"] = bool(np.allclose(a @ a, a.astype(np.float64) @ a, rtol=1e-4))
tinynet.set_num_threads(2)
report["back"] = cpu_blas_pool.joined()
""", NUMBA_NUM_THREADS="2")
    if not report["joined"]:
        pytest.skip("OpenBLAS's work does not run on Numba's pool here")
    assert report == {"joined": True, "above": False, "product": True, "back": True}


def test_a_user_who_lowers_numbas_threads_still_gets_every_product():
    report = run_pool_probe("""
numba.set_num_threads(1)              # fewer Numba threads than OpenBLAS's pieces
report["product"] = bool(np.allclose(a @ a, a.astype(np.float64) @ a, rtol=1e-4))
report["numba_threads"] = numba.get_num_threads()
""", NUMBA_NUM_THREADS="2", OPENBLAS_NUM_THREADS="2")
    if not report["joined"]:
        pytest.skip("OpenBLAS's work does not run on Numba's pool here")
    assert report == {"joined": True, "product": True, "numba_threads": 1}


def test_a_forked_child_computes_its_products_on_openblas_threads():
    report = run_pool_probe("""
expected = a @ a
child = os.fork()
if child == 0:
    ok = (a @ a).tobytes() == expected.tobytes() and not cpu_blas_pool.joined()
    os._exit(0 if ok else 1)
_, status = os.waitpid(child, 0)
report["child_status"] = os.waitstatus_to_exitcode(status)
report["parent"] = cpu_blas_pool.joined()
""")
    if not report["joined"]:
        pytest.skip("OpenBLAS's work does not run on Numba's pool here")
    assert report == {"joined": True, "child_status": 0, "parent": True}
