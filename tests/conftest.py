import os

import numpy as np
import pytest
from hypothesis import settings

import tinynet

# Property tests draw new examples on every run, which is how they find bugs.
# CI (.ci/run sets CI=1) runs the same examples every time instead, so that a
# rare draw cannot stop a change from landing; local runs keep drawing new ones.
settings.register_profile("ci", derandomize=True, database=None)
if os.environ.get("CI"):
    settings.load_profile("ci")

# The tests' thread counts do not follow the machine's load (tinynet/runtime/load.py:
# under pytest -n 2 each worker would see the other as a busy process);
# tests/test_busy_machine.py turns it on where it tests it.
os.environ.setdefault("TINYNET_ADAPT_THREADS", "0")

# The CUDA kernels run under Numba's CUDA simulator unless a real GPU is present.
# The switch must be set before anything imports numba, hence here, first.
if "NUMBA_ENABLE_CUDASIM" not in os.environ and not tinynet.cuda_is_available():
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"


@pytest.fixture(autouse=True)
def _seed():
    """Every test starts from the same random state."""
    tinynet.manual_seed(0)
    np.random.seed(0)
