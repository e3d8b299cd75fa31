"""Backends: which array module (NumPy or CuPy) holds a tensor's data.

Op code is written once against ``xp = get_array_module(array)`` (the pattern of
DeZero and Chainer). What differs per device lives in a :class:`Backend`:
its array module, its random generator, and its *kernel table*, the place
where fused kernels (LayerNorm, RMSNorm, the Adam update) plug in. The NumPy
reference implementations in ``tinynet.kernels.reference`` are the spec every
table entry must agree with.

CuPy is optional: ``import tinynet`` never needs it, and asking for the
``cuda`` device without it (or without a GPU) raises a ``RuntimeError`` that
says which one is missing.
"""
from __future__ import annotations

import contextlib
import importlib
import os

import numpy as np

__all__ = [
    "Backend", "get_backend", "get_array_module", "device_of", "as_numpy", "scatter_add",
    "cuda_is_available", "use_reference_kernels", "reference_kernels_forced",
]

_cupy = None          # the cupy module, once it has been imported successfully
_cupy_checked = False


def _try_import_cupy():
    """Import CuPy if it is installed; never raise."""
    global _cupy, _cupy_checked
    if not _cupy_checked:
        _cupy_checked = True
        try:
            import cupy
            _cupy = cupy
        except Exception:  # ImportError, or a broken CUDA installation
            _cupy = None
    return _cupy


def cuda_is_available() -> bool:
    """True when CuPy is installed *and* can reach a CUDA GPU."""
    cupy = _try_import_cupy()
    if cupy is None:
        return False
    try:
        return bool(cupy.cuda.is_available())
    except Exception:
        return False


def _require_cuda():
    cupy = _try_import_cupy()
    if cupy is None:
        raise RuntimeError(
            "device 'cuda' needs CuPy, which is not installed "
            "(pip install 'tinynet[cuda12]' or 'tinynet[cuda13]')")
    if not cuda_is_available():
        raise RuntimeError(
            "device 'cuda' was requested: CuPy is installed but no CUDA GPU is "
            "available on this machine")
    return cupy


def device_of(array) -> str:
    """'cpu' for a NumPy array (or a scalar), 'cuda' for a CuPy array."""
    if isinstance(array, (np.ndarray, np.generic)):
        return "cpu"
    if _cupy is not None and isinstance(array, _cupy.ndarray):
        return "cuda"
    return "cpu"


def get_array_module(*arrays):
    """Return ``cupy`` if any argument is a CuPy array, else ``numpy``."""
    if _cupy is not None:
        for a in arrays:
            if isinstance(a, _cupy.ndarray):
                return _cupy
    return np


def as_numpy(array) -> np.ndarray:
    """A NumPy copy (or view) of a NumPy or CuPy array."""
    if isinstance(array, np.ndarray):
        return array
    if _cupy is not None and isinstance(array, _cupy.ndarray):
        return _cupy.asnumpy(array)
    return np.asarray(array)


def scatter_add(target, index, values) -> None:
    """``target[index] += values``, adding once per occurrence of a repeated index."""
    if isinstance(target, np.ndarray):
        np.add.at(target, index, values)
    else:
        import cupyx
        cupyx.scatter_add(target, index, values)


def _parse_device(device) -> str:
    name = str(device)
    if name == "cpu":
        return "cpu"
    if name == "cuda" or name.startswith("cuda:"):
        return "cuda"
    raise ValueError(f"unknown device {device!r}: expected 'cpu' or 'cuda'")


# ----------------------------------------------------------------------------
# Kernel tables
# ----------------------------------------------------------------------------

_FORCE_REFERENCE_ENV = "TINYNET_REFERENCE_KERNELS"
_force_reference = os.environ.get(_FORCE_REFERENCE_ENV, "") not in ("", "0")


def reference_kernels_forced() -> bool:
    return _force_reference


@contextlib.contextmanager
def use_reference_kernels(enabled: bool = True):
    """Force the plain NumPy reference kernels (for teaching and A/B checks).

    The environment variable ``TINYNET_REFERENCE_KERNELS=1`` does the same for a
    whole process::

        with tinynet.use_reference_kernels():
            y = layer_norm(x)          # runs kernels/reference.py
    """
    global _force_reference
    previous = _force_reference
    _force_reference = enabled
    try:
        yield
    finally:
        _force_reference = previous


class KernelTable:
    """Fused kernels of one backend, looked up by name on first use.

    ``entries`` maps a kernel name to ``"module:function"``; the module is
    imported lazily, so that ``import tinynet`` does not compile anything.
    When the reference path is forced, every lookup returns the reference.
    """

    def __init__(self, entries: dict[str, str]):
        self._entries = dict(entries)
        self._loaded: dict[str, object] = {}

    def names(self):
        return sorted(self._entries)

    def register(self, name: str, target) -> None:
        """Plug in a kernel: a callable or a ``"module:function"`` string."""
        self._entries[name] = target
        self._loaded.pop(name, None)

    def _resolve(self, target):
        if callable(target):
            return target
        module, _, function = target.partition(":")
        return getattr(importlib.import_module(module), function)

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        if name not in self._entries:
            raise AttributeError(f"no kernel named {name!r} in this backend")
        if _force_reference and name in _REFERENCE_ENTRIES:
            return self._resolve(_REFERENCE_ENTRIES[name])
        try:
            return self._loaded[name]
        except KeyError:
            pass
        fn = self._resolve(self._entries[name])
        self._loaded[name] = fn
        return fn


_REFERENCE_ENTRIES = {
    "layer_norm_forward": "tinynet.kernels.reference:layer_norm_forward",
    "layer_norm_backward": "tinynet.kernels.reference:layer_norm_backward",
    "rms_norm_forward": "tinynet.kernels.reference:rms_norm_forward",
    "rms_norm_backward": "tinynet.kernels.reference:rms_norm_backward",
    "adam_step": "tinynet.kernels.reference:adam_step",
}


class Backend:
    """One device: its name, array module, random generator and kernel table."""

    def __init__(self, name: str, xp, kernels: KernelTable, make_rng):
        self.name = name
        self.xp = xp
        self.kernels = kernels
        self._make_rng = make_rng
        self.rng = make_rng(None)

    def seed(self, seed) -> None:
        self.rng = self._make_rng(seed)

    def asarray(self, data, dtype=None):
        if self.name == "cpu":
            return np.asarray(as_numpy(data), dtype=dtype)
        return self.xp.asarray(data, dtype=dtype)

    def __repr__(self):
        return f"Backend({self.name!r})"


_backends: dict[str, Backend] = {}
_seed = None


def _make_cpu_backend() -> Backend:
    kernels = KernelTable({
        "layer_norm_forward": "tinynet.kernels.cpu:layer_norm_forward",
        "layer_norm_backward": "tinynet.kernels.cpu:layer_norm_backward",
        "rms_norm_forward": "tinynet.kernels.reference:rms_norm_forward",
        "rms_norm_backward": "tinynet.kernels.reference:rms_norm_backward",
        "adam_step": "tinynet.kernels.cpu:adam_step",
    })
    return Backend("cpu", np, kernels, np.random.default_rng)


def _make_cuda_backend() -> Backend:
    cupy = _require_cuda()
    kernels = KernelTable({
        "layer_norm_forward": "tinynet.kernels.cuda:layer_norm_forward",
        "layer_norm_backward": "tinynet.kernels.cuda:layer_norm_backward",
        "rms_norm_forward": "tinynet.kernels.reference:rms_norm_forward",
        "rms_norm_backward": "tinynet.kernels.reference:rms_norm_backward",
        "adam_step": "tinynet.kernels.reference:adam_step",
    })
    return Backend("cuda", cupy, kernels, cupy.random.default_rng)


def get_backend(device="cpu") -> Backend:
    """The :class:`Backend` for ``'cpu'`` or ``'cuda'`` (created on first use)."""
    name = _parse_device(device)
    backend = _backends.get(name)
    if backend is None:
        backend = _make_cpu_backend() if name == "cpu" else _make_cuda_backend()
        if _seed is not None:
            backend.seed(_seed)
        _backends[name] = backend
    return backend


def manual_seed(seed: int) -> None:
    """Seed the random generators of every backend (as ``torch.manual_seed``)."""
    global _seed
    _seed = int(seed)
    for backend in _backends.values():
        backend.seed(_seed)
