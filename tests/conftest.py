import os

import numpy as np
import pytest

import tinynet

# The CUDA kernels run under Numba's CUDA simulator unless a real GPU is present.
# The switch must be set before anything imports numba, hence here, first.
if "NUMBA_ENABLE_CUDASIM" not in os.environ and not tinynet.cuda_is_available():
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"


@pytest.fixture(autouse=True)
def _seed():
    """Every test starts from the same random state."""
    tinynet.manual_seed(0)
    np.random.seed(0)
