"""The default process group of :mod:`tinynet.distributed`: MPI's world, how a
program joins and leaves it, and what happens when a rank fails.

A process joins with :func:`init_process_group`, which imports mpi4py (and so
starts MPI) and installs the fault policy: an uncaught exception's traceback
is printed with every line prefixed by ``[rank R]``, then the whole MPI job is
aborted, so that no rank waits forever in a collective for a rank that died.
:func:`destroy_process_group` puts the previous ``sys.excepthook`` back.
"""
from __future__ import annotations

import importlib.util
import sys
import traceback

from .runtime import threads

__all__ = ["ProcessGroupStateError", "is_available", "init_process_group", "is_initialized",
           "destroy_process_group", "get_rank", "get_world_size", "get_backend",
           "require_world"]

_INSTALL_HINT = "pip install 'tinynet[mpi]'"


class ProcessGroupStateError(RuntimeError, ValueError):
    """The process group is used before :func:`init_process_group`, or initialized
    twice. PyTorch 2 raises a ValueError here, PyTorch 1 a RuntimeError: this is both."""


class _World:
    """The default process group: MPI's world, duplicated so that tinynet's
    messages never meet those of the program's own mpi4py calls."""

    def __init__(self, MPI):
        self.MPI = MPI
        self.comm = MPI.COMM_WORLD.Dup()
        self.rank = self.comm.Get_rank()
        self.size = self.comm.Get_size()
        self.previous_excepthook = sys.excepthook
        self.excepthook = self._abort_on_uncaught

    def _abort_on_uncaught(self, kind, value, tb):
        text = "".join(traceback.format_exception(kind, value, tb))
        prefix = f"[rank {self.rank}] "
        sys.stderr.write("".join(prefix + line for line in text.splitlines(keepends=True)))
        sys.stderr.flush()
        self.MPI.COMM_WORLD.Abort(1)


_world: _World | None = None


def is_available() -> bool:
    """True when mpi4py is installed (it is not imported here)."""
    return importlib.util.find_spec("mpi4py") is not None


def init_process_group(backend: str | None = "mpi", init_method=None, timeout=None,
                       world_size: int = -1, rank: int = -1) -> None:
    """Join the default process group: every rank the launcher started.

    ``backend`` must be ``"mpi"`` (or None). ``world_size`` and ``rank``, when
    given, must be those the launcher gave this process. ``init_method`` and
    ``timeout`` are accepted for PyTorch's code and not used: the MPI launcher
    does the rendezvous, and a failing rank aborts the job instead of a timeout.
    """
    global _world
    if backend is not None and str(backend).lower() != "mpi":
        raise ValueError(f"init_process_group(): backend {backend!r} is not supported; "
                         "tinynet.distributed supports 'mpi' (over mpi4py)")
    if _world is not None:
        raise ProcessGroupStateError("trying to initialize the default process group twice!")
    try:
        from mpi4py import MPI
    except ImportError as error:
        raise RuntimeError(f"init_process_group(): tinynet.distributed needs mpi4py, which "
                           f"could not be imported ({error}): {_INSTALL_HINT}") from error
    world = _World(MPI)
    for name, given, actual in (("world_size", world_size, world.size),
                                ("rank", rank, world.rank)):
        if given != -1 and given != actual:
            world.comm.Free()
            raise ValueError(f"init_process_group(): {name}={given}, but the MPI launcher "
                             f"started this process with {name} {actual}")
    sys.excepthook = world.excepthook
    _world = world
    on_this_machine = MPI.COMM_WORLD.Split_type(MPI.COMM_TYPE_SHARED)
    threads.share_cores(on_this_machine.Get_size())
    on_this_machine.Free()


def is_initialized() -> bool:
    """True between :func:`init_process_group` and :func:`destroy_process_group`."""
    return _world is not None


def require_world(what: str, group=None) -> _World:
    """The default group, for ``what`` (the caller, as "all_reduce()") to use."""
    if group is not None:
        raise ValueError(f"{what}: tinynet has only the default process group: pass "
                         f"group=None, not {group!r}")
    if _world is None:
        raise ProcessGroupStateError(
            f"{what}: Default process group has not been initialized, please make sure "
            "to call init_process_group.")
    return _world


def destroy_process_group(group=None) -> None:
    """Leave the process group and put back the ``sys.excepthook`` it replaced.
    MPI itself stays up until the program ends, so a new group can be initialized."""
    global _world
    world = require_world("destroy_process_group()", group)
    if sys.excepthook is world.excepthook:
        sys.excepthook = world.previous_excepthook
    world.comm.Free()
    _world = None


def get_rank(group=None) -> int:
    """This process's rank, 0 to world size - 1."""
    return require_world("get_rank()", group).rank


def get_world_size(group=None) -> int:
    """The number of processes in the group."""
    return require_world("get_world_size()", group).size


def get_backend(group=None) -> str:
    """The communication backend of the process group: ``"mpi"``, as
    ``torch.distributed.get_backend`` (an error outside a process group).
    """
    require_world("get_backend()", group)
    return "mpi"
