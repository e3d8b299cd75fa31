"""Data-parallel communication with torch.distributed's names, over MPI (mpi4py).

::

    import tinynet
    import tinynet.distributed as dist

    dist.init_process_group("mpi")      # mpiexec -n 4 python train.py; plain python: 1 rank
    t = tinynet.tensor([float(dist.get_rank())])
    dist.all_reduce(t)                  # in place: 0 + 1 + 2 + 3 on every rank
    dist.destroy_process_group()

The launcher (``mpiexec -n W``, or any MPI launcher on a cluster) decides the
ranks; ``python script.py`` alone is a world of one process. mpi4py is imported
by :func:`init_process_group`, never by ``import tinynet``.

How it differs from PyTorch, and why:

* **One group, synchronous.** Every collective runs on the default group and
  has finished when it returns; ``async_op=True`` returns a :class:`Work`
  that is already complete.
* **Checked first.** Each tensor collective first all-gathers a description
  of its arguments (shape, dtype, op, source rank) from every rank: when the
  ranks disagree, every rank raises the same ValueError naming the ranks and
  the difference, where MPI would wait forever or exchange garbage.
* **Writes are writes.** A collective writes into its tensors' arrays in place
  and counts the write in ``_version``, as tinynet's in-place methods do
  (:mod:`tinynet.inplace`), so a backward pass that needs the old values
  refuses to run (PyTorch's all_reduce and broadcast leave the version as it
  is). As in PyTorch, it is allowed on a leaf that requires grad (DDP
  broadcasts parameters this way) and autograd does not record it.
* **CuPy tensors travel through the host**: copied to NumPy, communicated,
  copied back. The MPI library is not assumed to be CUDA-aware.
* **A failing rank stops them all.** :func:`init_process_group` installs a
  ``sys.excepthook`` that prints an uncaught exception's traceback, each line
  prefixed with ``[rank R]``, then aborts the whole MPI job, so that no rank
  waits forever in a collective for a rank that has died. (An exception in
  another thread than the main one is not covered: ``threading.excepthook``.)

:func:`all_reduce_array`, :func:`broadcast_array`, :func:`all_gather_array` and
:func:`check_same_shapes`
work on arrays and small Python objects: the library's own layers (DDP's gradient buckets,
SyncBatchNorm's statistics) check their shapes once, then communicate many
times without a check. :data:`traffic` counts every message the library
sends, by label (calls, bytes, seconds), for experiments that report what
communication costs.
"""
from __future__ import annotations

import enum
import numbers

import numpy as np

from . import _process_group
from . import backend as _backend
from . import inplace as _inplace
from ._process_group import (
    ProcessGroupStateError,
    destroy_process_group,
    get_backend,
    get_rank,
    get_world_size,
    init_process_group,
    is_available,
    is_initialized,
)
from .lacking import lacking
from .runtime.traffic import Traffic, traffic
from .tensor import Tensor

__all__ = ["ReduceOp", "Work", "ProcessGroupStateError", "is_available", "init_process_group",
           "is_initialized", "destroy_process_group", "get_rank", "get_world_size",
           "get_backend", "barrier", "all_reduce", "broadcast", "all_gather",
           "all_reduce_array", "broadcast_array", "all_gather_array", "check_same_shapes",
           "Traffic", "traffic"]


class ReduceOp(enum.Enum):
    """How :func:`all_reduce` combines the ranks' values, element by element.

    ``AVG`` is ``SUM`` divided by the world size in the tensor's dtype
    (floating point and complex tensors only). On bool tensors ``SUM`` and
    ``MAX`` are a logical or, ``PRODUCT`` and ``MIN`` a logical and.
    """
    SUM = "sum"
    PRODUCT = "product"
    MIN = "min"
    MAX = "max"
    AVG = "avg"


class Work:
    """What a collective returns with ``async_op=True``: it is already complete."""

    def wait(self, timeout=None) -> bool:
        """Return True at once: the collective has completed (``timeout`` is ignored)."""
        return True

    def is_completed(self) -> bool:
        """Always True: tinynet's collectives complete before they return."""
        return True


def barrier(group=None, async_op: bool = False, device_ids=None):
    """Wait until every rank has called ``barrier``."""
    _process_group.require_world("barrier()", group).comm.Barrier()
    return Work() if async_op else None


def check_same_shapes(shapes, what: str, problem: str | None = None) -> None:
    """Raise ValueError on every rank unless every rank passed an equal ``shapes``.

    ``shapes`` is a small picklable description of a call's arguments (a dict
    of names to shapes and dtypes reads best in the message); ``what`` names
    the call in the message (``"all_reduce()"``, ``"DistributedDataParallel"``).
    ``problem``: this rank's own objection to its arguments, or None; when any
    rank has one, every rank raises it, so that a mistake on one rank never
    leaves the others waiting. For the library's layers, and the check that
    every tensor collective makes first.
    """
    world = _process_group.require_world(what)
    gathered = world.comm.allgather((shapes, problem))
    objecting = [rank for rank, (_, objection) in enumerate(gathered) if objection is not None]
    if objecting:
        also = ", ".join(f"rank {rank}" for rank in objecting[1:])
        raise ValueError(f"{what}: on rank {objecting[0]}: {gathered[objecting[0]][1]}"
                         + (f" (also on {also})" if also else ""))
    reference = gathered[0][0]
    differing = [rank for rank, (theirs, _) in enumerate(gathered) if theirs != reference]
    if differing:
        where, ours, theirs = _first_difference(reference, gathered[differing[0]][0])
        raise ValueError(
            f"{what}: the ranks disagree{where}: rank {differing[0]} has {theirs!r} where "
            f"rank 0 has {ours!r} (ranks differing from rank 0: "
            f"{', '.join(map(str, differing))})")


def _first_difference(ours, theirs):
    """(" on <key or item>", ours, theirs) at the first difference of two descriptions."""
    if isinstance(ours, dict) and isinstance(theirs, dict):
        missing = "(missing)"
        for key in list(ours) + [key for key in theirs if key not in ours]:
            if ours.get(key, missing) != theirs.get(key, missing):
                return f" on {key}", ours.get(key, missing), theirs.get(key, missing)
    if (isinstance(ours, (list, tuple)) and isinstance(theirs, (list, tuple))
            and len(ours) == len(theirs)):
        for index, (mine, other) in enumerate(zip(ours, theirs, strict=True)):
            if mine != other:
                return f" on item {index}", mine, other
    return "", ours, theirs


def _mpi_op(MPI, op: ReduceOp, dtype):
    if dtype.kind == "b":
        return MPI.LOR if op in (ReduceOp.SUM, ReduceOp.MAX) else MPI.LAND
    return {ReduceOp.SUM: MPI.SUM, ReduceOp.AVG: MPI.SUM, ReduceOp.PRODUCT: MPI.PROD,
            ReduceOp.MIN: MPI.MIN, ReduceOp.MAX: MPI.MAX}[op]


def _check_op(what: str, op) -> None:
    if not isinstance(op, ReduceOp):
        raise TypeError(f"{what}: op must be a tinynet.distributed.ReduceOp, got {op!r}")


def _check_op_fits(what: str, op: ReduceOp, dtype) -> None:
    if op is ReduceOp.AVG and dtype.kind not in "fc":
        raise RuntimeError(f"{what}: ReduceOp.AVG divides by the world size, and the "
                           f"result can't be cast to the tensor's dtype {dtype}")


def _host_buffer(array) -> np.ndarray:
    """``array`` itself when MPI can write into it (a writeable C-contiguous NumPy
    array), else a C-contiguous NumPy copy of it, to be copied back with _copy_back."""
    if (isinstance(array, np.ndarray) and array.flags.c_contiguous
            and array.flags.writeable):
        return array
    return np.array(_backend.as_numpy(array), order="C")


def _copy_back(array, buffer) -> None:
    if buffer is not array:
        xp = _backend.get_array_module(array)
        xp.copyto(array, xp.asarray(buffer))


def all_reduce_array(array, op: ReduceOp = ReduceOp.SUM, label: str = "all_reduce"):
    """Reduce ``array`` (NumPy or CuPy) over every rank in place and return it,
    with no check that the ranks' shapes agree: for the library's layers, which
    check once with :func:`check_same_shapes`. A writeable C-contiguous NumPy
    array is reduced where it lies (``MPI.IN_PLACE``); any other is copied.
    Counted in :data:`traffic` under ``label``."""
    world = _process_group.require_world("all_reduce_array()")
    _check_op("all_reduce_array()", op)
    _check_op_fits("all_reduce_array()", op, array.dtype)
    with traffic.timed(label, array.nbytes):
        buffer = _host_buffer(array)
        world.comm.Allreduce(world.MPI.IN_PLACE, buffer,
                             op=_mpi_op(world.MPI, op, buffer.dtype))
        if op is ReduceOp.AVG:
            np.true_divide(buffer, world.size, out=buffer)
        _copy_back(array, buffer)
    return array


def broadcast_array(array, src: int = 0, label: str = "broadcast"):
    """Copy rank ``src``'s ``array`` (NumPy or CuPy) into ``array`` on every other
    rank, in place, and return it; the ranks' shapes are not checked (see
    :func:`all_reduce_array`). Rank ``src``'s array is only read."""
    world = _process_group.require_world("broadcast_array()")
    with traffic.timed(label, array.nbytes):
        buffer = _host_buffer(array)
        world.comm.Bcast(buffer, root=int(src))
        if world.rank != src:
            _copy_back(array, buffer)
    return array


def all_gather_array(array, label: str = "all_gather") -> np.ndarray:
    """Every rank's ``array`` (the same shape on every rank, not checked: see
    :func:`all_reduce_array`) stacked in rank order, as a new NumPy array of
    shape (world size, *array.shape)."""
    world = _process_group.require_world("all_gather_array()")
    sent = np.ascontiguousarray(_backend.as_numpy(array))
    received = np.empty((world.size,) + sent.shape, sent.dtype)
    with traffic.timed(label, sent.nbytes):
        world.comm.Allgather(sent, received)
    return received


def _check_tensor(what: str, name: str, value) -> None:
    if not isinstance(value, Tensor):
        raise TypeError(f"{what}: {name} must be a tinynet Tensor, got "
                        f"{type(value).__name__}")


def _description(tensor: Tensor, **more) -> dict:
    return {"shape": tuple(tensor.shape), "dtype": str(tensor.dtype), **more}


def all_reduce(tensor: Tensor, op: ReduceOp = ReduceOp.SUM, group=None, async_op: bool = False):
    """Combine ``tensor`` over every rank with ``op``, in place: afterwards every
    rank holds the same values. Same shape and dtype on every rank."""
    _process_group.require_world("all_reduce()", group)
    _check_tensor("all_reduce()", "tensor", tensor)
    _check_op("all_reduce()", op)
    check_same_shapes(_description(tensor, op=op.name), "all_reduce()")
    _check_op_fits("all_reduce()", op, tensor.dtype)     # the dtype is now the same on all ranks
    _inplace._written("all_reduce", tensor, lambda array: all_reduce_array(array, op))
    return Work() if async_op else None


def broadcast(tensor: Tensor, src: int | None = None, group=None, async_op: bool = False,
              group_src: int | None = None):
    """Copy rank ``src``'s ``tensor`` into ``tensor`` on every other rank (in place).
    ``group_src`` is the same rank (tinynet's only group is the world)."""
    world = _process_group.require_world("broadcast()", group)
    _check_tensor("broadcast()", "tensor", tensor)
    if (src is None) == (group_src is None):
        raise ValueError("broadcast(): give src or group_src, not both and not neither")
    root = src if group_src is None else group_src
    problem = None
    if isinstance(root, bool) or not isinstance(root, numbers.Integral):
        problem = f"src must be an integer rank, got {root!r}"
    elif not 0 <= root < world.size:
        problem = f"src {root} is not a rank of a world of {world.size}"
    check_same_shapes(_description(tensor, src=root), "broadcast()", problem)
    if world.rank == root:
        broadcast_array(tensor.array, root)
    else:
        _inplace._written("broadcast", tensor, lambda array: broadcast_array(array, root))
    return Work() if async_op else None


def _all_gather_problem(tensor_list, tensor, world_size):
    if len(tensor_list) != world_size:
        return (f"tensor_list has {len(tensor_list)} tensors, but it needs one per rank "
                f"(the world size, {world_size})")
    for index, output in enumerate(tensor_list):
        if output.shape != tensor.shape or output.dtype != tensor.dtype:
            return (f"tensor_list[{index}] is {output.dtype} of shape {tuple(output.shape)}, "
                    f"but tensor is {tensor.dtype} of shape {tuple(tensor.shape)}")
    return None


def all_gather(tensor_list, tensor: Tensor, group=None, async_op: bool = False):
    """Fill ``tensor_list[r]`` with rank r's ``tensor``, on every rank (in place).

    ``tensor_list``: one tensor per rank, each of ``tensor``'s shape and dtype
    (which are the same on every rank).
    """
    world = _process_group.require_world("all_gather()", group)
    _check_tensor("all_gather()", "tensor", tensor)
    if not isinstance(tensor_list, (list, tuple)):
        raise TypeError(f"all_gather(): tensor_list must be a list of Tensors, got "
                        f"{type(tensor_list).__name__}")
    for index, output in enumerate(tensor_list):
        _check_tensor("all_gather()", f"tensor_list[{index}]", output)
    check_same_shapes(_description(tensor), "all_gather()",
                      _all_gather_problem(tensor_list, tensor, world.size))
    sent = np.ascontiguousarray(_backend.as_numpy(tensor.array))
    received = np.empty((world.size,) + sent.shape, sent.dtype)
    world.comm.Allgather(sent, received)
    for output, part in zip(tensor_list, received, strict=True):
        _inplace._written("all_gather", output, lambda array, part=part: _copy_back(array, part))
    return Work() if async_op else None

__getattr__ = lacking("torch.distributed")
