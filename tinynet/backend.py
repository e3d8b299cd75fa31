"""Backends: which array module (NumPy or CuPy) holds a tensor's data.

Op code is written once against ``xp = get_array_module(array)`` (the pattern of
DeZero and Chainer). What differs per device lives in a :class:`Backend`:
its array module, its random generator, and its *kernel table*, the place
where fused kernels (LayerNorm, RMSNorm, the Adam update, the GELU, the
attention's softmax) plug in. The NumPy
reference implementations in ``tinynet.kernels.ladder.reference`` are the spec every
table entry must agree with.

CuPy is optional: ``import tinynet`` never needs it, and asking for the
``cuda`` device without it (or without a GPU) raises a ``RuntimeError`` that
says which one is missing.
"""
from __future__ import annotations

import contextlib
import os
import weakref

import numpy as np

from .runtime import threads

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
    """``target[index] += values``, adding once per occurrence of a repeated index.

    Where ``index`` is one integer array of rows (``W[idx]``'s gradient, an
    embedding written as indexing) this is :func:`add_rows`: NumPy's ``add.at``
    adds element by element, several times slower."""
    if _reads_rows(target, index, values):
        if index.size:
            # a negative row counts from the end, as in the forward's indexing
            rows = get_array_module(index).remainder(index.reshape(-1), target.shape[0])
            columns = target.size // target.shape[0]
            add_rows(target.reshape(target.shape[0], columns), rows,
                     values.reshape(rows.size, columns))
    elif isinstance(target, np.ndarray):
        np.add.at(target, index, values)
    else:
        import cupyx
        cupyx.scatter_add(target, index, values)


def _reads_rows(target, index, values) -> bool:
    """Whether ``target[index]`` reads whole rows by one integer array ``index``, into
    a C-ordered ``target``, with ``values`` of exactly that result's shape."""
    return (getattr(index, "dtype", None) is not None and index.dtype.kind in "iu"
            and target.ndim >= 1 and target.flags.c_contiguous
            and getattr(values, "shape", None) == index.shape + target.shape[1:])


def add_rows(target, rows, values) -> None:
    """``target[rows[i]] += values[i]`` for each i, rows repeating: the gradient of
    reading rows (an embedding). A kernel of the device's table (the spec in
    kernels/ops/scatter_spec.py)."""
    kernels_for(target).add_rows(target, rows, values)


def _parse_device(device) -> str:
    """"cpu" or "cuda" for a device's name or ``tinynet.device``; None is the default
    device, the CPU (as PyTorch's ``device=None``)."""
    name = "cpu" if device is None else str(device)
    if name == "cpu":
        return "cpu"
    if name == "cuda" or name.startswith("cuda:"):
        return "cuda"
    raise ValueError(f"unknown device {device!r}: expected 'cpu' or 'cuda'")


# ----------------------------------------------------------------------------
# Kernel tables
# ----------------------------------------------------------------------------

_KERNELS_ENV = "TINYNET_KERNELS"
_chosen_rung = os.environ.get(_KERNELS_ENV) or None    # None: each device's default


def reference_kernels_forced() -> bool:
    """Whether the reference kernels (the specs: ``kernels/ladder/reference.py``,
    ``kernels/ops/*_spec.py``) are chosen now, by ``use_kernels("reference")`` or
    ``TINYNET_KERNELS=reference``.
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
    """Run the normalization kernels of ladder rung ``rung`` (kernels/ladder/),
    for study and A/B comparison; ``None`` for each device's default::

        with tinynet.use_kernels("reference"):    # the specs
            y = layer_norm(x)

    The environment variable ``TINYNET_KERNELS=name`` does the same for a whole
    process. "reference" also runs every other kernel's spec (the optimizers'
    update, the activations...). The kernel tables are built again on entry and exit.
    """
    global _chosen_rung
    previous = _chosen_rung
    _chosen_rung = _check_rung(rung)
    _rebuild_tables()
    try:
        yield
    finally:
        _chosen_rung = previous
        _rebuild_tables()


def _rebuild_tables():
    for table in list(KernelTable.tables):
        table.rebuild()


def use_reference_kernels(enabled: bool = True):
    """``use_kernels("reference")`` (or the defaults, when ``enabled`` is false)."""
    return use_kernels("reference" if enabled else None)


class KernelTable:
    """The kernels of one device, each an attribute: ``table.layer_norm_forward`` is the
    function that runs (``tinynet.kernels.tables.build`` says which, in one place).

    Built when the device's backend is made, and again by :func:`use_kernels`; a
    lookup is a plain attribute read. A kernel plugged in with :meth:`register`
    replaces the built one while no rung is chosen.
    """

    tables = weakref.WeakSet()      # every table, for use_kernels to rebuild

    def __init__(self, device: str):
        self._device = device
        self._registered = {}
        self._missing_rung = None
        KernelTable.tables.add(self)
        self.rebuild()

    def rebuild(self) -> None:
        """Fill the table for the chosen rung, else the device's default."""
        from tinynet.kernels import ladder, tables
        for name in self.names():
            delattr(self, name)
        self._missing_rung = None
        try:
            functions = tables.build(self._device, _chosen_rung)
        except ValueError as error:            # a rung of the other device's ladder
            self._missing_rung = str(error)
            functions = {name: fn for name, fn in tables.build(self._device).items()
                         if name not in ladder.NORM_KERNELS}
        if _chosen_rung is None:
            functions.update(self._registered)
        vars(self).update(functions)

    def names(self) -> list:
        """The kernels' names."""
        return sorted(name for name in vars(self) if not name.startswith("_"))

    def register(self, name: str, function) -> None:
        """Plug in a kernel: ``function`` runs as ``name`` while no rung is chosen."""
        self._registered[name] = function
        self.rebuild()

    def __getattr__(self, name):                # only for names the table lacks
        from tinynet.kernels.ladder import NORM_KERNELS
        if name in NORM_KERNELS and self._missing_rung:
            raise ValueError(self._missing_rung)
        raise AttributeError(f"no kernel named {name!r} in this backend")


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
    threads.share_pool_with_blas()     # once: before Numba's pool first runs a kernel
    return Backend("cpu", np, KernelTable("cpu"), np.random.default_rng)


def _make_cuda_backend() -> Backend:
    cupy = _require_cuda()
    return Backend("cuda", cupy, KernelTable("cuda"), cupy.random.default_rng)


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
    cpu = _backends.get("cpu")
    if cpu is not None and type(array) is np.ndarray:      # every op asks: the short way
        return cpu.kernels
    return get_backend(device_of(array)).kernels


def manual_seed(seed: int) -> None:
    """Seed the random generators of every backend (as ``torch.manual_seed``)."""
    global _seed
    _seed = int(seed)
    for backend in _backends.values():
        backend.seed(_seed)
