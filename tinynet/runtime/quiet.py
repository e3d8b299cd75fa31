"""NumPy's floating-point warnings off for the length of one op, cheaply.

``with np.errstate(all="ignore")`` costs about a microsecond, several times a
small op's own arithmetic. NumPy 2 keeps its error state in a context variable;
setting that variable to a state that ignores everything, and resetting it after,
is what ``errstate`` does underneath, without building the state each time. (On
a NumPy that keeps it elsewhere, :func:`ignore_fp_errors` enters an
``np.errstate``.) tinynet/ops/elementwise.py's ``no_fp_warnings`` and the backward
pass (tinynet/autograd/engine.py) use it.
"""
from __future__ import annotations

import numpy as np

__all__ = ["ignore_fp_errors", "restore_fp_errors"]

try:
    from numpy._core._ufunc_config import _extobj_contextvar, _make_extobj
except ImportError:             # pragma: no cover - a NumPy without the context variable
    _extobj_contextvar = None

_last = [None, None]            # the last state seen, and the same state ignoring errors


def ignore_fp_errors():
    """Turn NumPy's floating-point errors off in this thread; returns what
    :func:`restore_fp_errors` takes to turn them back."""
    if _extobj_contextvar is None:
        state = np.errstate(all="ignore")
        state.__enter__()
        return state
    current = _extobj_contextvar.get()
    if current is not _last[0] and current is not _last[1]:    # _last[1]: a nested call
        _last[:] = current, _make_extobj(all="ignore")
    return _extobj_contextvar.set(_last[1])


def restore_fp_errors(token) -> None:
    """Undo :func:`ignore_fp_errors`."""
    if _extobj_contextvar is None:
        token.__exit__(None, None, None)
    else:
        _extobj_contextvar.reset(token)
