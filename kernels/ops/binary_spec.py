"""The four arithmetic ops on arrays that broadcast: the spec of ``binary_cpu``."""
from __future__ import annotations

__all__ = ["binary"]


def binary(op, a, b):
    """``op(a, b)``, ``op`` being ``operator.add``, ``sub``, ``mul`` or ``truediv``,
    with NumPy's (or CuPy's) broadcasting."""
    return op(a, b)
