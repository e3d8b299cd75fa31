"""Worker processes for ``DataLoader(num_workers > 0)``, as ``torch.utils.data``'s.

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

import atexit
import itertools
import multiprocessing
import os
import pickle
import queue
import random
import signal
import sys
import time
import traceback
import weakref
from dataclasses import dataclass

import numpy as np

from ..backend import manual_seed
from .dataset import IterableDataset

__all__ = ["WorkerInfo", "get_worker_info", "worker_loop", "MultiProcessingDataLoaderIter",
           "default_context", "STATUS_CHECK_INTERVAL", "SHUTDOWN_WAIT"]

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


_live_iterators: weakref.WeakSet = weakref.WeakSet()
_exit_hook_registered = False


def _shut_down_all() -> None:
    """At exit, before multiprocessing's own hook: stop the workers of every live iterator."""
    for iterator in list(_live_iterators):
        iterator.shutdown()


class MultiProcessingDataLoaderIter:
    """One loader's worker processes and the iteration over their batches
    (see the module's docstring for the mechanism).

    ``tasks`` iterates over the batches' tasks in order (lists of indices);
    ``make_fetcher(dataset)`` runs in each worker and returns the function
    from a task to its batch. Iterating yields the batches in task order
    (``in_order=False``: as they come); with ``persistent_workers`` the end of
    the epoch leaves the workers waiting, and :meth:`reset` starts the next.
    The workers stop (:meth:`shutdown`) at the end of an epoch that is not
    persistent, on a worker's death, when the iterator is collected, and at
    exit.
    """

    def __init__(self, dataset, make_fetcher, tasks, *, num_workers: int, prefetch_factor: int,
                 persistent_workers: bool, timeout: float, worker_init_fn, context,
                 base_seed: int, in_order: bool = True):
        global _exit_hook_registered
        self._closed = True             # until there is something to shut down
        self._owner = os.getpid()
        self._workers, self._index_queues = [], []
        self._persistent = persistent_workers
        self._prefetch = prefetch_factor
        self._timeout = timeout
        self._in_order = in_order
        context = default_context() if context is None else context
        self._result_queue = context.Queue()
        self._done_event = context.Event()
        self._closed = False
        if not _exit_hook_registered:
            # Registered after multiprocessing's own exit hook (imported with the queue),
            # so that it runs before that one terminates the workers.
            atexit.register(_shut_down_all)
            _exit_hook_registered = True
        _live_iterators.add(self)
        try:
            for worker_id in range(num_workers):
                index_queue = context.Queue()
                index_queue.cancel_join_thread()
                worker = context.Process(
                    target=worker_loop, name=f"DataLoader worker {worker_id}", daemon=True,
                    args=(dataset, make_fetcher, index_queue, self._result_queue,
                          self._done_event, base_seed, worker_init_fn, worker_id,
                          num_workers, self._owner))
                self._start(worker, worker_id, context)
                self._workers.append(worker)
                self._index_queues.append(index_queue)
        except BaseException:
            self.shutdown()
            raise
        self.reset(tasks, first=True)

    @staticmethod
    def _start(worker, worker_id, context):
        try:
            worker.start()
        except (TypeError, AttributeError, pickle.PicklingError) as error:
            raise RuntimeError(
                f"DataLoader: could not start worker process {worker_id} with the "
                f"{context.get_start_method()!r} start method, which pickles the dataset, "
                f"collate_fn and worker_init_fn (define them at a module's top level, or "
                f"use multiprocessing_context='fork'): {error}") from error

    @property
    def closed(self) -> bool:
        """Whether the workers have been stopped (the iterator can give no more batches)."""
        return self._closed

    def reset(self, tasks, first: bool = False) -> None:
        """Start an epoch over ``tasks``: after the first, tell the persistent
        workers (each answers once the tasks it was given before are done, and
        those answers are dropped), then ask for the first batches."""
        workers = len(self._workers)
        self._tasks = iter(tasks)
        self._sent = 0              # the number of the next batch to ask for
        self._received = 0          # the number of the next batch to yield
        self._pending = {}          # number -> (worker,) while asked, (worker, answer) early
        self._active = [True] * workers
        self._asked = [0] * workers
        self._turn = itertools.cycle(range(workers))
        if not first:
            for index_queue in self._index_queues:
                index_queue.put(_Resume())
            resumed = 0
            while resumed < workers:
                number, _ = self._get()
                resumed += isinstance(number, _Resume)
        for _ in range(self._prefetch * workers):
            self._ask()

    def __iter__(self):
        return self

    def __next__(self):
        while True:
            while self._received < self._sent:      # skip what no one will answer
                asked = self._pending.get(self._received)
                if asked is not None and (len(asked) == 2 or self._active[asked[0]]):
                    break
                self._pending.pop(self._received, None)
                self._received += 1
            else:
                if not self._persistent:
                    self.shutdown()
                raise StopIteration
            asked = self._pending[self._received]
            if len(asked) == 2:                     # it came early and waited its turn
                del self._pending[self._received]
                self._received += 1
                return self._deliver(*asked)
            number, answer = self._get()
            if isinstance(answer, _WorkerExhausted):
                self._retire(answer.worker_id)
                self._ask()
                continue
            worker_id = self._pending[number][0]
            if number == self._received:
                del self._pending[number]
                self._received += 1
                return self._deliver(worker_id, answer)
            if not self._in_order:
                del self._pending[number]       # the skipping loop above passes its number
                return self._deliver(worker_id, answer)
            self._pending[number] = (worker_id, answer)

    def _ask(self) -> None:
        """Hand the next task to the next worker in turn, if there is a task and a worker."""
        try:
            task = next(self._tasks)
        except StopIteration:
            return
        limit = self._prefetch * len(self._workers)
        for _ in range(len(self._workers)):
            worker_id = next(self._turn)
            if self._active[worker_id] and (
                    self._in_order or self._asked[worker_id] < limit // sum(self._active)):
                break
        else:
            return
        self._index_queues[worker_id].put((self._sent, task))
        self._pending[self._sent] = (worker_id,)
        self._asked[worker_id] += 1
        self._sent += 1

    def _deliver(self, worker_id, answer):
        self._asked[worker_id] -= 1
        self._ask()
        if isinstance(answer, WorkerError):
            answer.reraise()
        return pickle.loads(answer)

    def _retire(self, worker_id) -> None:
        """A worker whose IterableDataset ran out gets no more tasks (and exits, unless
        persistent: the next epoch starts it over)."""
        self._active[worker_id] = False
        if not self._persistent:
            self._index_queues[worker_id].put(None)

    def _get(self):
        """The next ``(number, answer)`` of the result queue, checking that the workers
        live whenever it stays empty a while, and waiting at most ``timeout`` seconds."""
        deadline = time.monotonic() + self._timeout if self._timeout > 0 else None
        while True:
            wait = STATUS_CHECK_INTERVAL
            if deadline is not None:
                wait = max(0.0, min(wait, deadline - time.monotonic()))
            try:
                return self._result_queue.get(timeout=wait)
            except queue.Empty:
                pass
            self._check_alive()
            if deadline is not None and time.monotonic() >= deadline:
                raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds")

    def _check_alive(self) -> None:
        dead = [(worker_id, worker) for worker_id, worker in enumerate(self._workers)
                if self._active[worker_id] and not worker.is_alive()]
        if not dead:
            return
        what = "; ".join(f"DataLoader worker process {worker_id} (pid {worker.pid}) exited "
                         f"unexpectedly: {_exit_reason(worker.exitcode)}"
                         for worker_id, worker in dead)
        self.shutdown()
        raise RuntimeError(f"{what}. The batches it was making are lost; what it printed "
                           "above may say why")

    def shutdown(self) -> None:
        """Stop the workers: set the done event, send each None, give them
        :data:`SHUTDOWN_WAIT` seconds (in all) to exit, then terminate them.

        When the collector frees an iterator caught in a reference cycle (an
        exception's traceback holds it), it may have stopped the index queues'
        feeder threads first, and the None is never sent: the workers then see
        the done event at their next liveness check. Idempotent.
        """
        if self._closed or os.getpid() != self._owner:
            return
        self._closed = True
        _live_iterators.discard(self)
        try:
            self._done_event.set()
            for index_queue in self._index_queues:
                index_queue.put(None)
            deadline = time.monotonic() + SHUTDOWN_WAIT
            for worker in self._workers:
                worker.join(max(0.0, deadline - time.monotonic()))
        finally:
            for worker in self._workers:
                if worker.is_alive():
                    worker.terminate()
                    worker.join(SHUTDOWN_WAIT)
                if worker.is_alive():
                    worker.kill()
                    worker.join()
            for index_queue in self._index_queues:
                index_queue.close()
            self._result_queue.cancel_join_thread()
            self._result_queue.close()

    def __del__(self):
        if not getattr(self, "_closed", True):
            self.shutdown()


def _exit_reason(exitcode) -> str:
    if exitcode is not None and exitcode < 0:
        try:
            return f"killed by signal {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"killed by signal {-exitcode}"
    return f"exit code {exitcode}"
