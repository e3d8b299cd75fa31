"""The main process's side of ``DataLoader(num_workers > 0)``: starting the
worker processes, handing them batches, reordering what comes back, noticing a
worker that died, and stopping them (the mechanism: :mod:`tinynet.data.workers`).
"""
from __future__ import annotations

import atexit
import itertools
import os
import pickle
import queue
import signal
import time
import weakref

from .workers import (
    SHUTDOWN_WAIT,
    STATUS_CHECK_INTERVAL,
    WorkerError,
    _Resume,
    _WorkerExhausted,
    default_context,
    worker_loop,
)

__all__ = ["MultiProcessingDataLoaderIter"]


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
