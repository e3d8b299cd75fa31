"""Worker processes for ``DataLoader(num_workers > 0)``, as ``torch.utils.data``'s:
what runs in each worker (:func:`worker_loop`); the main process's side is
:mod:`tinynet.data.worker_pool`.

The **main process** keeps the sampler. It numbers the batches in the
sampler's order and hands them out round-robin, ``(number, indices)``, each
worker through an **index queue** of its own. A **worker**
(:func:`worker_loop`) holds its own copy of the dataset (inherited by
'fork', pickled over by 'spawn' and 'forkserver'); it makes each batch it is
asked for and puts ``(number, pickled batch)`` on the one **result queue**
that all workers share. Batches arrive in whatever order the workers finish
them, so the main process **reorders by batch number**: one that comes early
waits in a dict until its turn, and the loader yields the batches in the
sampler's order. Each batch yielded asks for one more, which keeps
``prefetch_factor`` batches per worker on the way.

For an :class:`~tinynet.data.IterableDataset` a task only says "your next
batch": each worker iterates over its copy of the dataset, and a worker that
runs out says so and is asked for nothing more; the epoch ends when all have.

Failures come back to the main process, never a hang: an exception in a worker
travels back as its traceback's text and is raised again there, naming the
worker ("Caught ValueError in DataLoader worker process 0"); a worker that
dies (killed, out of memory) is noticed by a liveness check whenever the
result queue stays empty for :data:`STATUS_CHECK_INTERVAL` seconds, and
raises RuntimeError naming it; ``timeout`` bounds the wait for one batch.

The workers stop at the end of the epoch (unless ``persistent_workers``),
when the iterator is garbage-collected, and when the program exits: each is
sent None, given :data:`SHUTDOWN_WAIT` seconds, then terminated. A worker
whose main process has gone stops by itself.
"""
from __future__ import annotations

import multiprocessing
import os
import pickle
import queue
import random
import sys
import traceback
from dataclasses import dataclass

import numpy as np

from ..backend import manual_seed
from .dataset import IterableDataset

__all__ = ["WorkerInfo", "get_worker_info", "worker_loop", "WorkerError", "default_context",
           "STATUS_CHECK_INTERVAL", "SHUTDOWN_WAIT"]

STATUS_CHECK_INTERVAL = 0.5
"""Seconds between the liveness checks of a process waiting on a queue."""
SHUTDOWN_WAIT = 5.0
"""Seconds that stopping workers are given to exit before they are terminated."""


@dataclass(frozen=True, eq=False)
class WorkerInfo:
    """Which worker process is running, as :func:`get_worker_info` returns it:
    ``id`` (0 to ``num_workers - 1``), ``num_workers``, ``seed`` (the one that
    ``random``, NumPy and tinynet were seeded from) and ``dataset``, the
    worker's own copy of the dataset."""

    id: int
    num_workers: int
    seed: int
    dataset: object


_worker_info: WorkerInfo | None = None


def get_worker_info() -> WorkerInfo | None:
    """In a DataLoader worker process, its :class:`WorkerInfo`; None in the main
    process. An :class:`~tinynet.data.IterableDataset` uses it to share its
    items out between the workers; a ``worker_init_fn`` can use it to set up
    the worker's copy of the dataset (open a file of its own, say)."""
    return _worker_info


def default_context():
    """How workers start when the loader does not say: 'fork' on Linux, as in
    PyTorch (no pickling, the workers start at once), else the platform's
    default ('spawn' on macOS and Windows, where 'fork' is unsafe or absent).

    A worker forked from a process that has run tinynet's compiled kernels on
    Numba's OpenMP threads cannot run them itself (Numba stops it, and the
    loader reports the worker's death): a dataset that computes with those
    kernels needs ``multiprocessing_context='spawn'`` or ``'forkserver'``."""
    if sys.platform.startswith("linux"):
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context()


class WorkerError:
    """The exception being handled in a worker, as it crosses to the main process:
    where its type is defined, its name and its traceback's text (plain strings,
    which always pickle)."""

    def __init__(self, worker_id: int):
        kind, error, trace = sys.exc_info()
        self.module, self.name = kind.__module__, kind.__qualname__
        self.text = "".join(traceback.format_exception(kind, error, trace))
        self.where = f"in DataLoader worker process {worker_id}"

    def reraise(self):
        """Raise it again, of its own type where the main process has that type and it
        takes a message, else as RuntimeError."""
        message = f"Caught {self.name} {self.where}.\nOriginal {self.text}"
        kind = sys.modules.get(self.module)
        for part in self.name.split("."):
            kind = getattr(kind, part, None)
        if kind is KeyError:
            message = _KeyErrorMessage(message)
        try:
            error = kind(message)
        except Exception:
            error = None
        if not isinstance(error, BaseException):
            raise RuntimeError(message)
        try:
            raise error
        finally:
            error = None    # else error -> traceback -> this frame -> error: a cycle


class _KeyErrorMessage(str):
    """A KeyError prints the repr of its message: this one's repr keeps the lines."""

    def __repr__(self):
        return self


class _WorkerExhausted:
    """A worker's answer when its copy of an IterableDataset has run out."""

    def __init__(self, worker_id: int):
        self.worker_id = worker_id


class _Resume:
    """Start the next epoch (persistent workers): answered once the tasks before it are."""


def _seed_worker(base_seed: int, worker_id: int) -> int:
    """Seed ``random``, tinynet and NumPy's global generator in a worker, as PyTorch:
    ``base_seed + worker_id``, and for NumPy PyTorch's hash of the two."""
    seed = base_seed + worker_id
    random.seed(seed)
    manual_seed(seed)
    np.random.seed(np.random.SeedSequence(
        [worker_id, base_seed & 0xFFFF_FFFF, base_seed >> 32, 0]).generate_state(4))
    return seed


def worker_loop(dataset, make_fetcher, index_queue, result_queue, done_event, base_seed: int,
                worker_init_fn, worker_id: int, num_workers: int, parent_pid: int) -> None:
    """The life of worker ``worker_id``: seed, set :func:`get_worker_info`, run
    ``worker_init_fn``, make the fetcher (``make_fetcher(dataset)``), then
    answer the tasks of its index queue on the result queue until it reads
    None or its main process has gone. Errors are answers: after a failed
    start-up, every task is answered with that failure."""
    global _worker_info
    try:
        seed = _seed_worker(base_seed, worker_id)
        _worker_info = WorkerInfo(worker_id, num_workers, seed, dataset)
        failure = fetch = None          # a failure to start answers every task
        try:
            if worker_init_fn is not None:
                worker_init_fn(worker_id)
            fetch = make_fetcher(dataset)
        except Exception:
            failure = WorkerError(worker_id)
        exhausted = False
        while True:
            try:
                task = index_queue.get(timeout=STATUS_CHECK_INTERVAL)
            except queue.Empty:     # the None may never come: see shutdown()
                if done_event.is_set() or os.getppid() != parent_pid:
                    break
                continue
            if task is None:
                break
            if isinstance(task, _Resume):
                exhausted = False
                if failure is None:
                    try:
                        fetch = make_fetcher(dataset)
                    except Exception:
                        failure = WorkerError(worker_id)
                result_queue.put((task, None))
                continue
            if exhausted or done_event.is_set():
                continue
            number, indices = task
            if failure is not None:
                answer = failure
            else:
                answer, exhausted = _answer(fetch, indices, dataset, worker_id)
            result_queue.put((number, answer))
            del answer, indices, task
    except KeyboardInterrupt:
        pass                            # the main process gets it too, and stops us
    if done_event.is_set() or os.getppid() != parent_pid:
        result_queue.cancel_join_thread()   # exit now, even with answers no one will read


def _answer(fetch, indices, dataset, worker_id):
    """``(answer, exhausted)``: the pickled batch, a WorkerError, or for an
    IterableDataset that has run out a _WorkerExhausted. Pickling here, not in
    the queue's thread, turns a batch that cannot be pickled into an error
    that reaches the main process."""
    try:
        return pickle.dumps(fetch(indices), protocol=pickle.HIGHEST_PROTOCOL), False
    except StopIteration:
        if isinstance(dataset, IterableDataset):
            return _WorkerExhausted(worker_id), True
        return WorkerError(worker_id), False
    except Exception:
        return WorkerError(worker_id), False
