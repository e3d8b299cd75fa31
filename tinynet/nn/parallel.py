"""Data-parallel training: ``DistributedDataParallel``, PyTorch's DDP over MPI.

Each of W ranks holds a replica of the model and runs forward and backward on
its own share of the batch; DDP makes every parameter's ``.grad`` the average
of the ranks' gradients, so that an optimizer step is the same on every rank,
and the same as one process's step on the whole batch (the loss a mean over
samples: the mean of the ranks' means is the mean over the global batch)::

    dist.init_process_group("mpi")
    model = DistributedDataParallel(MLP("layer"))
    loss_fn(model(x_shard), y_shard).backward()   # .grad: averaged over ranks
    optimizer.step()

How (the design of PyTorch's DDP):

* at construction, the ranks check that their models have the same parameter
  names, shapes and dtypes, and copy rank 0's parameters and buffers;
* the parameters are grouped into *buckets* of about ``bucket_cap_mb``, in the
  reverse of ``module.parameters()``'s order, which is about the order in which
  backward finishes their gradients (the output layer's first);
* a hook on each parameter (:mod:`tinynet.hooks`) notes when backward has
  finished its gradient; when a bucket's last one is in, the bucket is copied
  into one flat buffer and its all-reduce starts (``MPI_Iallreduce``) while
  backward goes on with the layers below: one message per bucket, not one per
  parameter, and not one big one at the end;
* when the last bucket has started, DDP waits for all of them and writes the
  averages back into the ``.grad`` arrays, before ``backward()`` returns.

Its messages are counted in ``tinynet.distributed.traffic`` under
"gradients" (and "parameters", "buffers" for the broadcasts).

LayerNorm needs nothing more: its statistics are per sample. BatchNorm's are
per batch, and each rank's batch is only its share: see
:class:`~tinynet.nn.SyncBatchNorm`.
"""
from __future__ import annotations

import contextlib
import time

import numpy as np

from .. import _process_group
from .. import distributed as dist
from ..autograd import no_grad
from ..hyperparameters import check_real
from ..tensor import Tensor
from .module import Module

__all__ = ["DistributedDataParallel"]


class _Bucket:
    """Parameters whose gradients travel in one message."""

    def __init__(self, params):
        self.params = params
        self.buffer = np.empty(sum(p.array.size for p in params), dtype=params[0].array.dtype)
        self.request = None
        self.waiting = len(params)

    def start(self, world):
        """Copy the gradients into the buffer and start its all-reduce."""
        offset = 0
        for p in self.params:
            size = p.array.size
            self.buffer[offset:offset + size] = p.grad.array.reshape(-1)
            offset += size
        self.request = world.comm.Iallreduce(world.MPI.IN_PLACE, self.buffer,
                                             op=world.MPI.SUM)

    def finish(self, world_size):
        """Wait for the all-reduce; the averages become the gradients (new arrays:
        backward may still read the arrays it handed to ``.grad``)."""
        self.request.Wait()
        offset = 0
        for p in self.params:
            size = p.array.size
            p.grad = Tensor._make(self.buffer[offset:offset + size].reshape(p.grad.shape)
                                  / world_size)
            offset += size
        self.request = None
        self.waiting = len(self.params)


def _buckets(params, cap_bytes):
    """Consecutive runs of ``params`` of one dtype and at most ``cap_bytes`` (a
    parameter larger than that gets a bucket of its own)."""
    buckets, current, size = [], [], 0
    for p in params:
        if current and (size + p.array.nbytes > cap_bytes
                        or p.array.dtype != current[0].array.dtype):
            buckets.append(_Bucket(current))
            current, size = [], 0
        current.append(p)
        size += p.array.nbytes
    if current:
        buckets.append(_Bucket(current))
    return buckets


class DistributedDataParallel(Module):
    """Average the gradients of ``module``'s replicas over every rank during backward.

    ``bucket_cap_mb``: the size of one message (PyTorch's default, 25 MB).
    ``broadcast_buffers``: copy rank 0's buffers (BatchNorm's running statistics)
    to every rank at each forward in training mode, as PyTorch does.
    ``module`` is reachable as ``.module``; ``state_dict()`` keys start with
    ``module.``, as PyTorch's.
    """

    def __init__(self, module: Module, bucket_cap_mb: float = 25,
                 broadcast_buffers: bool = True):
        super().__init__()
        world = _process_group.require_world("DistributedDataParallel()")
        cap = check_real("DistributedDataParallel", "bucket_cap_mb", bucket_cap_mb, 1e-6)
        self.module = module
        self.broadcast_buffers = bool(broadcast_buffers)
        named = [(name, p) for name, p in module.named_parameters() if p.requires_grad]
        buffers = [(name, b) for name, b in module.named_buffers() if b is not None]
        dist.check_same_shapes(
            {name: (tuple(t.shape), str(t.array.dtype)) for name, t in named + buffers},
            "DistributedDataParallel(module): the ranks' models must have the same "
            "parameters and buffers (names, shapes, dtypes)")
        with no_grad():
            for _, tensor in named + buffers:
                dist.broadcast_array(tensor.array, 0, label="parameters")
        self._world = world
        self._buckets = _buckets([p for _, p in reversed(named)], int(cap * 2 ** 20))
        self._bucket_of = {id(p): bucket for bucket in self._buckets for p in bucket.params}
        self._names = {id(p): name for name, p in named}
        self._ready = set()         # ids of the parameters whose gradient is in
        self._started = 0           # buckets whose all-reduce has started
        self._synchronize = True
        if world.size > 1:                  # one rank: its gradients are the average
            for _, p in named:
                p.register_post_accumulate_grad_hook(self._gradient_ready)

    def forward(self, *args, **kwargs):
        """``module(*args, **kwargs)``, after copying rank 0's buffers to every rank (in
        training, with ``broadcast_buffers``); the backward that follows averages the
        gradients over the ranks, bucket by bucket, as they are ready.
        """
        if self._ready:
            self._refuse_unfinished()
        if self.broadcast_buffers and self.training and self._world.size > 1:
            with no_grad():
                for buffer in self.module.buffers():
                    if buffer is not None:
                        dist.broadcast_array(buffer.array, 0, label="buffers")
        return self.module(*args, **kwargs)

    @contextlib.contextmanager
    def no_sync(self):
        """Backward passes inside keep their gradients to this rank (accumulating
        them); the first backward after it averages the sums."""
        previous, self._synchronize = self._synchronize, False
        try:
            yield
        finally:
            self._synchronize = previous

    def _gradient_ready(self, param):
        if not self._synchronize:
            return
        bucket = self._bucket_of[id(param)]
        if id(param) in self._ready:
            raise RuntimeError(
                f"DistributedDataParallel: parameter {self._names[id(param)]!r} received a "
                "gradient twice in one iteration (a second backward through the same "
                "forward); run forward again before each backward")
        self._ready.add(id(param))
        bucket.waiting -= 1
        if bucket.waiting:
            return
        with dist.traffic.timed("gradients", bucket.buffer.nbytes):
            bucket.start(self._world)
        self._started += 1
        if self._started == len(self._buckets):
            begin = time.perf_counter()
            for each in self._buckets:
                each.finish(self._world.size)
            dist.traffic.add_seconds("gradients", time.perf_counter() - begin)
            self._started = 0
            self._ready.clear()

    def _refuse_unfinished(self):
        missing = [name for name, p in self.module.named_parameters()
                   if id(p) in self._bucket_of and id(p) not in self._ready]
        for bucket in self._buckets:                 # start the next iteration afresh
            if bucket.request is not None:
                bucket.request.Wait()
            bucket.request, bucket.waiting = None, len(bucket.params)
        self._ready.clear()
        self._started = 0
        raise RuntimeError(
            "DistributedDataParallel: the previous backward did not finish reducing the "
            "gradients, so the optimizer may have stepped on gradients that were not "
            "averaged. Every parameter that requires grad must take part in the loss (set "
            "requires_grad=False on those that do not). Parameters that received no "
            f"gradient: {', '.join(missing)}")

    def extra_repr(self):
        return f"buckets={len(self._buckets)}, world_size={self._world.size}"
