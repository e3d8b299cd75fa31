"""Warp shuffles for Numba's CUDA simulator.

The simulator (``NUMBA_ENABLE_CUDASIM=1``) runs each CUDA thread of a block
as a Python thread but has no ``cuda.shfl_*_sync``. :func:`install` adds them
to its fake ``cuda`` module, so that the kernels' warp reductions run without
a GPU; ``tinynet.kernels.ladder._cuda_rung`` calls it at import when the simulator is on.

A shuffle is emulated as on the hardware, one warp at a time: every lane
writes its value into the warp's slots, waits at a barrier of the warp's 32
lanes, reads the slot of its source lane, and waits again (so that the next
shuffle cannot overwrite a slot still being read). All 32 lanes of the warp
must therefore reach every shuffle, as ``FULL_MASK`` promises on a GPU; a
warp that skips a shuffle as a whole is fine. Blocks must be whole warps.
"""
from __future__ import annotations

import threading

WARP = 32
BARRIER_TIMEOUT_S = 60.0       # a lane that never arrives fails the test instead of hanging


def _warp_state(thread):
    """The slots and barrier shared by the lanes of ``thread``'s warp in its block."""
    per_block = thread._manager.__dict__.setdefault("_shuffle_warps", {})
    # setdefault is atomic under the GIL: all lanes get the same entry.
    return per_block.setdefault(thread.thread_id // WARP,
                                ({}, threading.Barrier(WARP, timeout=BARRIER_TIMEOUT_S)))


def _shuffle(value, source_lane):
    """``value`` as held by ``source_lane(lane)`` of this warp; own value if out of range."""
    thread = threading.current_thread()
    lane = thread.thread_id % WARP
    slots, barrier = _warp_state(thread)
    slots[lane] = value
    barrier.wait()
    source = source_lane(lane)
    result = slots[source] if 0 <= source < WARP else value
    barrier.wait()
    return result


def shfl_sync(self, mask, value, src_lane):
    return _shuffle(value, lambda lane: src_lane)


def shfl_up_sync(self, mask, value, delta):
    return _shuffle(value, lambda lane: lane - delta)


def shfl_down_sync(self, mask, value, delta):
    return _shuffle(value, lambda lane: lane + delta)


def shfl_xor_sync(self, mask, value, lane_mask):
    return _shuffle(value, lambda lane: lane ^ lane_mask)


def install() -> None:
    """Add the shuffles to the simulator's fake ``cuda`` module (idempotent)."""
    from numba.cuda.simulator.kernelapi import FakeCUDAModule
    for shuffle in (shfl_sync, shfl_up_sync, shfl_down_sync, shfl_xor_sync):
        setattr(FakeCUDAModule, shuffle.__name__, shuffle)
