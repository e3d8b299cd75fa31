import numpy as np
import pytest

import tinynet


@pytest.fixture(autouse=True)
def _seed():
    """Every test starts from the same random state."""
    tinynet.manual_seed(0)
    np.random.seed(0)
