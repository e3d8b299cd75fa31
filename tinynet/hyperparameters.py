"""Checks of the numbers that configure layers, optimizers and loaders (eps,
lr, p, sizes, ...).

A hyper-parameter of the wrong kind would otherwise fail late and far away (a
string eps in a batch norm fails inside NumPy's addition, at the first forward
pass) or not at all (a NaN learning rate silently turns every weight into NaN).
So each is checked where it comes in, with an error that names it.
"""
from __future__ import annotations

import math
import numbers

__all__ = ["check_real", "check_count"]


def check_real(where: str, name: str, value, low: float = -math.inf,
               high: float = math.inf, *, high_included: bool = True) -> float:
    """``value`` as a float, if it is a real number (not a bool) in [low, high]
    (in [low, high) if not ``high_included``).

    Raises TypeError for anything that is not a number, ValueError for a number
    outside the range; NaN lies outside every range. ``where`` and ``name``
    say whose parameter it is: ``check_real("Adam", "lr", lr, low=0)``.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{where}: {name} must be a real number, got "
                        f"{type(value).__name__} {value!r}")
    if math.isnan(value):
        raise ValueError(f"{where}: {name} is NaN")
    if not (low <= value < high or value == high and high_included):
        raise ValueError(f"{where}: {name} must be {_describe(low, high, high_included)}, "
                         f"got {value}")
    return float(value)


def _describe(low, high, high_included) -> str:
    if high == math.inf:
        return f">= {low}"
    return f"in [{low}, {high}{']' if high_included else ')'}"


def check_count(where: str, name: str, value, low: int = 1) -> int:
    """``value`` as an int, if it is an integer (not a bool) of at least ``low``:
    a size, a number of layers or steps. TypeError or ValueError otherwise."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{where}: {name} must be an integer, got "
                        f"{type(value).__name__} {value!r}")
    if value < low:
        raise ValueError(f"{where}: {name} must be at least {low}, got {value}")
    return int(value)


def check_flag(where: str, name: str, value) -> bool:
    """``value`` if it is True or False (a switch such as ``maximize``); TypeError
    otherwise, so that ``maximize="no"`` is not read as true."""
    if not isinstance(value, bool):
        raise TypeError(f"{where}: {name} must be True or False, got {value!r}")
    return value
