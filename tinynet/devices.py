"""Devices, as PyTorch names them: ``tinynet.device``, and the queries of
``torch.cuda``, ``torch.backends`` and ``torch.accelerator`` that programs ask
before they choose one (:mod:`tinynet.cuda`, :mod:`tinynet.backends`,
:mod:`tinynet.accelerator`).

tinynet has two devices: the CPU (NumPy arrays) and one CUDA GPU (CuPy arrays,
when CuPy is installed and finds a GPU). Every answer is the truth about this
machine: ``tinynet.cuda.is_available()`` is True only where tinynet can compute
on the GPU, and there is no MPS or XPU device.
"""
from __future__ import annotations

__all__ = ["device"]

_TYPES = ("cpu", "cuda")


class device(str):
    """A device, as ``torch.device``: ``device("cpu")``, ``device("cuda")``,
    ``device("cuda:0")`` or ``device("cuda", 0)``; ``.type`` and ``.index``.

    It is also its name, a string (``"cpu"``, ``"cuda"``, ``"cuda:0"``), so it goes
    wherever tinynet takes one, and compares equal to it.
    """

    def __new__(cls, type, index=None):
        if isinstance(type, device) and index is None:
            return type
        name = str(type)
        kind, _, number = name.partition(":")
        if kind not in _TYPES:
            raise ValueError(f"unknown device {name!r}: tinynet has the devices 'cpu' and "
                             f"'cuda' (tinynet has no {kind!r} device)")
        if number:
            if index is not None:
                raise ValueError(f"device {name!r} already has an index; got index={index!r}")
            if not number.isdigit():
                raise ValueError(f"device {name!r}: the index after ':' must be a number")
            index = int(number)
        if index is not None and (kind == "cpu" and index != 0 or index < 0):
            raise ValueError(f"device {name!r}: no device {kind}:{index}")
        self = super().__new__(cls, kind if index is None else f"{kind}:{index}")
        self.type, self.index = kind, index
        return self

    def __repr__(self):
        index = "" if self.index is None else f", index={self.index}"
        return f"device(type='{self.type}'{index})"

    def __eq__(self, other):
        if isinstance(other, str):
            try:
                other = device(other)
            except ValueError:
                return False
            return (self.type, self.index) == (other.type, other.index)
        return NotImplemented

    def __ne__(self, other):
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    __hash__ = str.__hash__
