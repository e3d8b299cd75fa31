"""What the compiled kernels share: the dtypes they take and the size from which
they share out their loops over the worker threads."""
from __future__ import annotations

import numpy as np

__all__ = ["FLOAT_DTYPES", "PARALLEL_MIN_ELEMENTS"]

FLOAT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))

# Below this many elements a kernel loops on one thread. Handing work to the
# worker threads costs time, more where they sleep than where they spin
# (tinynet/runtime/threads.py). Timed alone, one thread wins up to some hundreds
# of thousands of elements; inside training steps, where each pass comes after a
# product, sharing out wins from 64 K (benchmarks/train_step.py).
PARALLEL_MIN_ELEMENTS = 1 << 16
