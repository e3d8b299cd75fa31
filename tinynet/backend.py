"""Backends: which array module (NumPy or CuPy) holds a tensor's data.

Op code is written once against ``xp = get_array_module(array)`` (the pattern of
DeZero and Chainer). What differs per device lives in a :class:`Backend`:
its array module, its random generator, and its *kernel table*, the place
where fused kernels (LayerNorm, RMSNorm, the Adam update, the GELU, the
attention's softmax) plug in. The NumPy
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
import weakref

import numpy as np

from . import threads

__all__ = [
    "Backend", "get_backend", "get_array_module", "device_of", "as_numpy", "scatter_add",
    "add_rows",
    "cuda_is_available", "use_kernels", "use_reference_kernels",
    "reference_kernels_forced",
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


def add_rows(target, rows, values) -> None:
    """``target[rows[i]] += values[i]`` for each i, rows repeating: the gradient of
    reading rows (an embedding). A kernel of the device's table (the spec in
    kernels/reference.py)."""
    kernels_for(target).add_rows(target, rows, values)


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

_KERNELS_ENV = "TINYNET_KERNELS"
_COMPILED_CPU_KERNELS = "tinynet.kernels.cpu_"   # the Numba modules


def _kernels(cpu_module, spec_module, *names):
    return {name: (cpu_module, spec_module) for name in names}


# The kernels beside the norms' ladder: name -> (CPU module, spec module), both in
# tinynet.kernels. The CPU's table runs the first; the CUDA table and
# use_kernels("reference") run the second, plain NumPy/CuPy array code.
FUSED_KERNELS = {
    **_kernels("cpu_adam", "reference", "adam_step"),
    **_kernels("cpu_gelu", "reference", "gelu_forward", "gelu_backward"),
    **_kernels("cpu_softmax", "reference", "attention_softmax_forward",
               "attention_softmax_backward"),
    **_kernels("cpu_attention", "reference", "attention_heads_forward",
               "attention_heads_backward"),
    **_kernels("cpu_pointwise", "reference", "sigmoid_forward", "sigmoid_backward",
               "silu_forward", "silu_backward", "tanh_backward", "relu_forward",
               "relu_backward", "gelu_tanh_forward", "gelu_tanh_backward"),
    **_kernels("cpu_rows", "reference", "softmax_forward", "softmax_backward",
               "log_softmax_forward", "log_softmax_backward", "cross_entropy_forward",
               "cross_entropy_backward", "sum_last_axis", "sum_last_axis_backward",
               "add_bias"),
    **_kernels("cpu_scatter", "reference", "add_rows"),
    **_kernels("cpu_pooling", "reference_pooling", "max_pool_forward", "max_pool_backward"),
    **_kernels("cpu_batch_norm", "reference_batch_norm", "batch_norm_statistics",
               "batch_norm_forward", "batch_norm_backward"),
    **_kernels("cpu_conv", "reference_conv", "im2col", "col2im", "swap_leading_axes"),
}
_chosen_rung = os.environ.get(_KERNELS_ENV) or None    # None: each device's default


def reference_kernels_forced() -> bool:
    """Whether the reference kernels (``kernels/reference.py``) are chosen now, by
    ``use_kernels("reference")`` or ``TINYNET_KERNELS=reference``.
    """
    return _chosen_rung == "reference"


def _check_rung(name):
    from tinynet.kernels import ladder
    known = {rung for device in ladder.LADDERS for rung in ladder.rung_names(device)}
    if name is not None and name not in known:
        raise ValueError(f"unknown kernel rung {name!r}; the rungs are "
                         + "; ".join(f"{device}: {', '.join(ladder.rung_names(device))}"
                                     for device in ladder.LADDERS))
    return name


@contextlib.contextmanager
def use_kernels(rung):
    """Run the normalization kernels of ladder rung ``rung`` (kernels/ladder.py),
    for study and A/B comparison; ``None`` for each device's default::

        with tinynet.use_kernels("reference"):    # kernels/reference.py, the spec
            y = layer_norm(x)

    The environment variable ``TINYNET_KERNELS=name`` does the same for a whole
    process. "reference" also runs the optimizers' reference update.
    """
    global _chosen_rung
    previous = _chosen_rung
    _chosen_rung = _check_rung(rung)
    _forget_lookups()
    try:
        yield
    finally:
        _chosen_rung = previous
        _forget_lookups()


def _forget_lookups():
    for table in list(KernelTable.tables):
        table.forget()


def use_reference_kernels(enabled: bool = True):
    """``use_kernels("reference")`` (or the defaults, when ``enabled`` is false)."""
    return use_kernels("reference" if enabled else None)


class KernelTable:
    """The fused kernels of one device, looked up by name on first use.

    The normalization kernels come from the device's kernel ladder: the rung
    chosen by :func:`use_kernels`, else the device's default. The others (the
    Adam update, the activations, the softmaxes, the convnet's) come from
    ``entries``, a map of name to ``"module:function"`` (FUSED_KERNELS), and so
    does a kernel plugged in with :meth:`register` when no rung is chosen; under
    ``use_kernels("reference")`` they come from their spec module. Modules are
    imported on first use, so that ``import tinynet`` compiles nothing. A kernel
    found with no rung chosen is kept as an attribute of the table, so that
    later lookups cost what any attribute does.
    """

    tables = weakref.WeakSet()      # every table, for use_kernels to reset

    def __init__(self, device: str, entries: dict[str, str]):
        self._device = device
        self._entries = dict(entries)
        self._loaded: dict[tuple, object] = {}
        KernelTable.tables.add(self)

    def names(self):
        from tinynet.kernels.ladder import NORM_KERNELS
        return sorted(set(self._entries) | set(NORM_KERNELS))

    def register(self, name: str, target) -> None:
        """Plug in a kernel: a callable or a ``"module:function"`` string."""
        self._entries[name] = target
        self._loaded.clear()
        self.forget()

    def forget(self) -> None:
        """Drop the kernels kept as attributes (the chosen rung changed)."""
        for name in [key for key in vars(self) if not key.startswith("_")]:
            delattr(self, name)

    def _target(self, name, rung):
        from tinynet.kernels import ladder
        if rung is None and name in self._entries:
            return self._entries[name]
        if name in ladder.NORM_KERNELS:
            return ladder.kernel_target(self._device, rung or ladder.DEFAULT[self._device],
                                        name)
        if rung == "reference" and name in FUSED_KERNELS:
            return f"tinynet.kernels.{FUSED_KERNELS[name][1]}:{name}"
        if name in self._entries:
            return self._entries[name]
        raise AttributeError(f"no kernel named {name!r} in this backend")

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        key = (name, _chosen_rung)
        try:
            return self._loaded[key]
        except KeyError:
            pass
        target = self._target(name, _chosen_rung)
        if callable(target):
            fn = target
        else:
            module, _, function = target.partition(":")
            if module.startswith(_COMPILED_CPU_KERNELS):
                threads.share_pool_with_blas()     # once: before Numba's pool first runs
            fn = getattr(importlib.import_module(module), function)
        self._loaded[key] = fn
        if _chosen_rung is None:
            setattr(self, name, fn)
        return fn


class Backend:
    """One device: its name, array module, random generator and kernel table."""

    def __init__(self, name: str, xp, kernels: KernelTable, make_rng):
        self.name = name
        self.xp = xp
        self.kernels = kernels
        self._make_rng = make_rng
        self.rng = make_rng(None)

    def seed(self, seed) -> None:
        """Restart this device's generator from ``seed`` (``tinynet.manual_seed`` seeds all)."""
        self.rng = self._make_rng(seed)

    def asarray(self, data, dtype=None):
        """``data`` as an array of this device (NumPy or CuPy), copied only when needed."""
        if self.name == "cpu":
            return np.asarray(as_numpy(data), dtype=dtype)
        return self.xp.asarray(data, dtype=dtype)

    def __repr__(self):
        return f"Backend({self.name!r})"


_backends: dict[str, Backend] = {}
_seed = None


def _make_cpu_backend() -> Backend:
    kernels = KernelTable("cpu", {name: f"tinynet.kernels.{cpu}:{name}"
                                  for name, (cpu, _) in FUSED_KERNELS.items()})
    return Backend("cpu", np, kernels, np.random.default_rng)


def _make_cuda_backend() -> Backend:
    cupy = _require_cuda()
    kernels = KernelTable("cuda", {name: f"tinynet.kernels.{spec}:{name}"
                                   for name, (_, spec) in FUSED_KERNELS.items()})
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


def kernels_for(array) -> KernelTable:
    """The kernel table of the device that holds ``array``."""
    return get_backend(device_of(array)).kernels


def manual_seed(seed: int) -> None:
    """Seed the random generators of every backend (as ``torch.manual_seed``)."""
    global _seed
    _seed = int(seed)
    for backend in _backends.values():
        backend.seed(_seed)
