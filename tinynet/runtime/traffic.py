"""What this rank's collectives exchanged: ``tinynet.distributed.traffic``.

Every message the library sends (DDP's gradient buckets, SyncBatchNorm's
statistics, the array collectives) is counted here under a label, so that an
experiment can report, per step, how many all-reduces it made, how many bytes
it sent and how long it spent communicating::

    dist.traffic.reset()
    train_one_step()
    dist.traffic.calls("gradients"), dist.traffic.bytes(), dist.traffic.seconds()

Bytes are the message's size as this rank hands it to MPI; seconds are the
time spent in the MPI calls and the copies around them on this rank.
"""
from __future__ import annotations

import contextlib
import time

__all__ = ["Traffic", "traffic"]


class Traffic:
    """Counts of this rank's messages by label: calls, bytes and seconds (the module
    docstring); ``tinynet.distributed.traffic`` is the one the library records in."""

    def __init__(self):
        self._totals = {}           # label -> [calls, bytes, seconds]

    def reset(self) -> None:
        """Forget every count, to measure from here (e.g. the start of a step)."""
        self._totals.clear()

    def record(self, label: str, nbytes: int, seconds: float = 0.0, calls: int = 1) -> None:
        """Count ``calls`` messages of ``nbytes`` bytes in all, taking ``seconds``, under
        ``label`` (``"gradients"``, ``"parameters"``, ``"sync_batchnorm"``...).
        """
        totals = self._totals.setdefault(label, [0, 0, 0.0])
        totals[0] += calls
        totals[1] += int(nbytes)
        totals[2] += seconds

    @contextlib.contextmanager
    def timed(self, label: str, nbytes: int):
        """Record one call of ``nbytes`` that takes as long as the ``with`` block."""
        start = time.perf_counter()
        try:
            yield
        finally:
            self.record(label, nbytes, time.perf_counter() - start)

    def add_seconds(self, label: str, seconds: float) -> None:
        """Time spent on ``label``'s messages outside a call (waiting for them)."""
        self.record(label, 0, seconds, calls=0)

    def _sum(self, index, label):
        if label is not None:
            return self._totals.get(label, [0, 0, 0.0])[index]
        return sum(totals[index] for totals in self._totals.values())

    def calls(self, label: str | None = None) -> int:
        """Messages sent under ``label`` (all labels: None)."""
        return self._sum(0, label)

    def bytes(self, label: str | None = None) -> int:
        """Bytes handed to MPI under ``label`` (all labels: None) since the last reset."""
        return self._sum(1, label)

    def seconds(self, label: str | None = None) -> float:
        """Seconds spent in MPI calls under ``label`` (all labels: None) since the last reset."""
        return self._sum(2, label)

    def labels(self) -> list[str]:
        """The labels that have been counted since the last reset, sorted."""
        return sorted(self._totals)

    def __repr__(self):
        parts = [f"{label}: {c} calls, {b} bytes, {s * 1e3:.2f} ms"
                 for label, (c, b, s) in sorted(self._totals.items())]
        return f"Traffic({'; '.join(parts) or 'nothing'})"


traffic = Traffic()
"""The counts of every message the library sends on this rank."""
