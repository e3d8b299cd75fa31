"""The allocator policy (tinynet/runtime/allocator.py), checked where users meet it: a fresh
process with a clean environment, then with the user's own malloc settings. The
probe asks where a freshly allocated 24 MiB array lives: inside the heap (the
policy: kept there when freed) or in a mapping of its own (glibc's default for
large blocks: unmapped when freed, faulted in again next time)."""
import json
import os
import platform
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc",
    reason="the policy is glibc's mallopt")

PROBE = """
import json, sys
import numpy as np
applied = None
if sys.argv[1] == "tinynet":
    import tinynet
    applied = tinynet.allocator.apply_allocator_policy()
array = np.ones(24 << 18, np.float32)          # 24 MiB, below the policy's 32 MiB
address = array.ctypes.data
with open("/proc/self/maps") as maps:
    heap = [line.split()[0] for line in maps if line.rstrip().endswith("[heap]")]
in_heap = any(int(a, 16) <= address < int(b, 16) for a, b in (h.split("-") for h in heap))
print(json.dumps({"in_heap": in_heap, "applied": applied}))
"""


def run_probe(library, **variables):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("MALLOC_") and k != "GLIBC_TUNABLES"}
    env.update(variables)
    result = subprocess.run([sys.executable, "-c", PROBE, library], env=env,
                            capture_output=True, text=True, timeout=120, check=True)
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_without_tinynet_a_large_array_gets_a_mapping_of_its_own():
    assert run_probe("numpy")["in_heap"] is False


def test_after_import_tinynet_large_arrays_come_from_the_heap():
    report = run_probe("tinynet")
    assert report["in_heap"] is True
    assert report["applied"] is True


@pytest.mark.parametrize("variable", ["MALLOC_MMAP_THRESHOLD_=131072",
                                      "GLIBC_TUNABLES=glibc.malloc.mmap_threshold=131072"])
def test_a_users_own_malloc_setting_is_respected(variable):
    name, value = variable.split("=", 1)
    report = run_probe("tinynet", **{name: value})
    assert report["in_heap"] is False
    assert report["applied"] is False
