"""Whether operations are recorded for backward: ``no_grad``, ``enable_grad``,
``set_grad_enabled`` and ``inference_mode``, as in PyTorch.

One flag, read by ``Function.apply`` (core.py) each time an op runs.
"""
from __future__ import annotations

import contextlib

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "inference_mode", "is_grad_enabled"]

enabled = True


def is_grad_enabled() -> bool:
    """Whether operations are recorded for backward now: True by default, False
    inside ``no_grad()`` (as ``torch.is_grad_enabled``).
    """
    return enabled


class set_grad_enabled(contextlib.ContextDecorator):
    """Turn graph recording on or off, as a context manager or a decorator."""

    def __init__(self, mode: bool):
        self.mode = bool(mode)
        self._previous = []

    def __enter__(self):
        global enabled
        self._previous.append(enabled)
        enabled = self.mode
        return self

    def __exit__(self, *exc):
        global enabled
        enabled = self._previous.pop()
        return False


class no_grad(set_grad_enabled):
    """Disable graph recording: ``with tinynet.no_grad(): ...`` or ``@no_grad``.

    Like PyTorch, it can decorate a function with or without parentheses.
    """

    def __new__(cls, func=None):
        self = super().__new__(cls)
        if callable(func):
            self.__init__()
            return self(func)
        return self

    def __init__(self, func=None):
        super().__init__(False)


class inference_mode(set_grad_enabled):
    """``torch.inference_mode``: no graph recording, as :class:`no_grad` (tinynet has
    no other autograd bookkeeping to skip). ``inference_mode(False)`` changes
    nothing. A context manager, or a decorator with or without parentheses."""

    def __new__(cls, mode=True):
        self = super().__new__(cls)
        if callable(mode):
            self.__init__()
            return self(mode)
        return self

    def __init__(self, mode=True):
        super().__init__(False)
        self.active = bool(mode)

    def __enter__(self):
        if not self.active:
            self.mode = enabled
        return super().__enter__()


class enable_grad(set_grad_enabled):
    """Re-enable graph recording inside a ``no_grad`` region."""

    def __init__(self):
        super().__init__(True)
