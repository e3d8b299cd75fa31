"""An embedding's gradient, rows added into a table: the spec of ``scatter_cpu``."""
from __future__ import annotations

import numpy as np

__all__ = ["add_rows", "sorted_runs"]


def sorted_runs(rows):
    """``(order, sorted_rows, starts)``: the stable order that sorts ``rows``, the
    sorted rows, and where each run of equal rows starts in them."""
    order = np.argsort(rows, kind="stable")
    sorted_rows = rows[order]
    starts = np.flatnonzero(np.diff(sorted_rows, prepend=sorted_rows[0] - 1))
    return order, sorted_rows, starts


def add_rows(target, rows, values):
    """``target[rows[i]] += values[i]`` for each i, rows repeating, in place: the
    gradient of reading rows (an embedding). In NumPy the rows are sorted
    (stably) and each run of equal rows summed at once (``add.reduceat``, which
    adds a run's values by NumPy's pairwise summation): ``add.at`` goes element
    by element, several times slower."""
    if not isinstance(target, np.ndarray):
        import cupyx
        cupyx.scatter_add(target, rows, values)
        return
    if rows.size == 0:
        return
    order, sorted_rows, starts = sorted_runs(rows)
    target[sorted_rows[starts]] += np.add.reduceat(values[order], starts, axis=0)
