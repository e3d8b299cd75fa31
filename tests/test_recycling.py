"""Recycled output memory (tinynet.kernels.ladder._recycling): reused only once unseen."""
import gc
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

from tinynet.kernels.ladder import _recycling
from tinynet.kernels.ladder import cpu_4_recycled as cpu

BIG = (512, 1024)          # 2 MiB of float32: above MIN_BYTES


@pytest.fixture(autouse=True)
def empty_pool(monkeypatch):
    """Each test starts with an empty pool of its own."""
    monkeypatch.setattr(_recycling, "_idle", {})
    monkeypatch.setattr(_recycling, "_idle_bytes", 0)


def address(a):
    return a.__array_interface__["data"][0]


def test_a_large_array_is_an_ordinary_writable_c_array():
    a = _recycling.empty(BIG, np.float32)
    assert a.shape == BIG and a.dtype == np.float32
    assert a.flags.c_contiguous and a.flags.writeable and a.flags.aligned
    a[:] = 3.0
    assert float(a.sum()) == 3.0 * a.size


def test_a_small_array_comes_straight_from_numpy():
    a = _recycling.empty((4, 5), np.float64)
    assert a.base is None and a.shape == (4, 5) and a.dtype == np.float64
    assert _recycling.idle_bytes() == 0


def test_memory_returns_to_the_pool_only_when_the_last_view_dies():
    a = _recycling.empty(BIG, np.float32)
    nbytes, where = a.nbytes, address(a)
    view = a[1:, ::2]
    del a
    gc.collect()
    assert _recycling.idle_bytes() == 0          # the view still sees the memory
    del view
    assert _recycling.idle_bytes() == nbytes
    b = _recycling.empty(BIG, np.float32)
    assert address(b) == where                   # the same memory, lent again
    assert _recycling.idle_bytes() == 0


def test_live_arrays_never_share_memory():
    arrays = [_recycling.empty(BIG, np.float32) for _ in range(3)]
    for i, a in enumerate(arrays):
        a[:] = i
    for i, a in enumerate(arrays):
        assert np.all(a == i)


def test_memory_is_recycled_across_shapes_of_the_same_size():
    a = _recycling.empty(BIG, np.float32)
    where = address(a)
    del a
    b = _recycling.empty((BIG[0] * BIG[1] // 2,), np.float64)
    assert address(b) == where and b.shape == (BIG[0] * BIG[1] // 2,)


def test_the_pool_keeps_at_most_its_limit(monkeypatch):
    monkeypatch.setattr(_recycling, "MAX_POOLED_BYTES", 3 << 20)
    arrays = [_recycling.empty(BIG, np.float32) for _ in range(4)]    # 2 MiB each
    del arrays
    assert _recycling.idle_bytes() == 2 << 20    # one kept, three freed


def test_loans_dying_on_other_threads():
    arrays = [_recycling.empty(BIG, np.float32) for _ in range(8)]
    nbytes = arrays[0].nbytes

    def drop(i):
        arrays[i] = None
    threads = [threading.Thread(target=drop, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert _recycling.idle_bytes() == 8 * nbytes


def test_kernel_outputs_stay_intact_while_held():
    """Two forward results held at once: the second call must not reuse the first's memory."""
    rng = np.random.default_rng(0)
    x1, x2 = (rng.standard_normal(BIG).astype(np.float32) for _ in range(2))
    y1, _, _ = cpu.layer_norm_forward(x1, None, None, 1e-5)
    copy = y1.copy()
    y2, _, _ = cpu.layer_norm_forward(x2, None, None, 1e-5)
    np.testing.assert_array_equal(y1, copy)
    assert not np.shares_memory(y1, y2)
    dx, _, _ = cpu.layer_norm_backward(x2, x1, *cpu.layer_norm_forward(x1, None, None, 1e-5)[1:],
                                       None)
    np.testing.assert_array_equal(y1, copy)
    assert not np.shares_memory(dx, y1) and not np.shares_memory(dx, y2)


def test_a_loan_alive_at_interpreter_shutdown_dies_quietly():
    """The interpreter empties this module's globals at exit before the last
    loans die (here one that a Numba-compiled call has seen); they must not
    print errors on their way out."""
    script = textwrap.dedent("""
        import numpy as np
        from numba import njit
        from tinynet.kernels.ladder import _recycling
        x = _recycling.empty((1024, 1024), np.float32)
        x[:] = 1
        total = njit(lambda a: a.sum())
        calls = {"sum": lambda: total(x)}
        assert calls["sum"]() == x.size
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert "Exception ignored" not in done.stderr, done.stderr
