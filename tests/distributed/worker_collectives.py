"""Every collective of tinynet.distributed, on as many ranks as the launcher starts
(plain ``python`` too: a world of one). Each rank computes the expected results
itself from the inputs every rank would have; any failure aborts the job.

Run by tests/test_distributed.py: ``mpiexec -n 3 python tests/distributed/worker_collectives.py``.
"""
import sys
from functools import partial

import numpy as np

import tinynet
import tinynet.distributed as dist
from tinynet.data import DataLoader, DistributedSampler, TensorDataset

from mpi_checks import raises, report

ReduceOp = dist.ReduceOp
DTYPES = (np.float32, np.float64, np.int64)


def rank_input(rank, shape, dtype):
    """What rank ``rank`` contributes: small integers from 1 to rank + 3, so that
    sums and products are exact in every dtype and every order of reduction."""
    count = int(np.prod(shape, dtype=np.int64))
    return (np.arange(count).reshape(shape) % 3 + 1 + rank).astype(dtype)


def tensors_of(array):
    """A C-contiguous tensor and a non-contiguous one (a transposed view) holding ``array``."""
    contiguous = tinynet.tensor(array.copy())
    if array.ndim < 2:
        return [contiguous]
    transposed = tinynet.tensor(np.ascontiguousarray(array.T)).transpose(0, 1)
    assert not transposed.array.flags.c_contiguous
    return [contiguous, transposed]


def expected_reduction(op, inputs, dtype, world_size):
    stacked = np.stack(inputs)
    if op is ReduceOp.AVG:
        return np.true_divide(stacked.sum(axis=0), world_size, dtype=dtype)
    reduce = {ReduceOp.SUM: np.sum, ReduceOp.PRODUCT: np.prod, ReduceOp.MIN: np.min,
              ReduceOp.MAX: np.max}[op]
    return reduce(stacked, axis=0).astype(dtype)




def check_all_reduce(rank, world_size):
    for dtype in DTYPES:
        for shape in ((), (5,), (3, 4)):
            inputs = [rank_input(r, shape, dtype) for r in range(world_size)]
            for op in ReduceOp:
                if op is ReduceOp.AVG and dtype is np.int64:
                    raises(RuntimeError, partial(dist.all_reduce, tinynet.tensor(inputs[rank]),
                                                 op=op), "AVG", "int64")
                    continue
                expected = expected_reduction(op, inputs, dtype, world_size)
                for tensor in tensors_of(inputs[rank]):
                    dist.all_reduce(tensor, op=op)
                    assert tensor.dtype == dtype and tuple(tensor.shape) == shape
                    assert np.array_equal(tensor.numpy(), expected), (op, dtype, shape)
                    assert tensor._version == 1
    for op, expected in ((ReduceOp.SUM, True), (ReduceOp.MAX, True),
                         (ReduceOp.PRODUCT, world_size == 1), (ReduceOp.MIN, world_size == 1)):
        flags = tinynet.tensor(np.array([rank == 0, True, False]))
        dist.all_reduce(flags, op=op)       # bool: SUM, MAX are "any"; PRODUCT, MIN "all"
        assert flags.numpy().tolist() == [expected, True, False], op


def check_autograd_interplay(rank, world_size):
    """Allowed on a leaf that requires grad, as in PyTorch; counted as a write."""
    weight = tinynet.ones(3, requires_grad=True)
    dist.all_reduce(weight)
    assert weight.numpy().tolist() == [float(world_size)] * 3 and weight.requires_grad
    (weight * 2.0).sum().backward()
    assert weight.grad.numpy().tolist() == [2.0] * 3
    scale = tinynet.ones(3) * 2.0
    loss = (weight * scale).sum()
    dist.all_reduce(scale)              # the product saved the old scale
    raises(RuntimeError, loss.backward, "modified by an inplace operation")


def check_broadcast(rank, world_size):
    for dtype in DTYPES:
        for shape in ((), (2, 3)):
            for src in range(world_size):
                for tensor in tensors_of(rank_input(rank, shape, dtype)):
                    dist.broadcast(tensor, src)
                    assert np.array_equal(tensor.numpy(), rank_input(src, shape, dtype))
                    assert tensor._version == (0 if rank == src else 1)
    tensor = tinynet.tensor([float(rank)])
    assert dist.broadcast(tensor, group_src=world_size - 1, async_op=True).wait()
    assert tensor.numpy().tolist() == [float(world_size - 1)]


def check_all_gather(rank, world_size):
    for dtype in DTYPES:
        for shape in ((), (2, 3)):
            for tensor in tensors_of(rank_input(rank, shape, dtype)):
                outputs = [tinynet.tensor(np.zeros(shape, dtype)) for _ in range(world_size)]
                if len(shape) == 2:      # a non-contiguous output as well
                    outputs[-1] = tinynet.tensor(np.zeros(shape[::-1], dtype)).transpose(0, 1)
                dist.all_gather(outputs, tensor)
                for source, output in enumerate(outputs):
                    assert np.array_equal(output.numpy(), rank_input(source, shape, dtype))
                    assert output._version == 1


def check_mismatches(rank, world_size):
    """Arguments that differ across ranks: the same clear error on every rank."""
    if world_size == 1:
        return
    last = world_size - 1
    raises(ValueError, lambda: dist.all_reduce(tinynet.zeros(2 + rank)),
           "all_reduce()", "ranks disagree on shape", "rank 1 has (3,)", "rank 0 has (2,)")
    dtype = np.float64 if rank == last else np.float32
    raises(ValueError, lambda: dist.all_reduce(tinynet.tensor(np.zeros(2, dtype))),
           "disagree on dtype", f"rank {last} has 'float64'")
    op = ReduceOp.MAX if rank == 1 else ReduceOp.SUM
    raises(ValueError, lambda: dist.all_reduce(tinynet.zeros(2), op=op), "disagree on op")
    raises(ValueError, lambda: dist.broadcast(tinynet.zeros(2), src=rank), "disagree on src")
    raises(ValueError, lambda: dist.broadcast(tinynet.zeros(2), src=world_size),
           "broadcast()", f"src {world_size} is not a rank")
    outputs = [tinynet.zeros(2) for _ in range(world_size - (rank == last))]
    raises(ValueError, lambda: dist.all_gather(outputs, tinynet.zeros(2)),
           "all_gather()", f"on rank {last}", f"the world size, {world_size}")
    outputs = [tinynet.zeros(3) for _ in range(world_size)]
    raises(ValueError, lambda: dist.all_gather(outputs, tinynet.zeros(2)),
           "tensor_list[0] is float32 of shape (3,)", "(also on rank 1")
    total = tinynet.ones(1)
    dist.all_reduce(total)              # the group still works after the errors
    assert total.numpy().tolist() == [float(world_size)]


def check_array_level(rank, world_size):
    """The functions for the library's layers: arrays in place, descriptions by name."""
    gradients = np.full(4, float(rank + 1), np.float32)
    assert dist.all_reduce_array(gradients, ReduceOp.AVG) is gradients
    assert gradients.tolist() == [(world_size + 1) / 2] * 4
    weights = np.broadcast_to(np.float64(rank), (3,))        # read-only
    if rank == world_size - 1:
        dist.broadcast_array(weights, world_size - 1)        # the source is only read
    else:
        raises(ValueError, lambda: dist.broadcast_array(weights, world_size - 1), "read-only")
    copied = np.zeros((2, 3)).T                               # not contiguous
    copied[:] = rank
    dist.broadcast_array(copied, 0)
    assert not copied.any()
    names = {"linear.weight": (2, 3), "linear.bias": (2 + (rank == world_size - 1),)}
    if world_size > 1:
        raises(ValueError, lambda: dist.check_same_shapes(names, "DistributedDataParallel"),
               "DistributedDataParallel: the ranks disagree on linear.bias",
               f"rank {world_size - 1} has (3,) where rank 0 has (2,)")
    dist.check_same_shapes({"linear.weight": (2, 3)}, "DistributedDataParallel")


def check_sampler(rank, world_size):
    """Shards drawn on every rank independently: disjoint, covering, one order everywhere."""
    dataset = TensorDataset(np.arange(11, dtype=np.float32)[:, None], np.arange(11))
    sampler = DistributedSampler(dataset, seed=3)
    assert (sampler.num_replicas, sampler.rank) == (world_size, rank)
    for epoch in range(2):
        sampler.set_epoch(epoch)
        mine = list(sampler)
        loaded = [int(i) for _, labels in DataLoader(dataset, batch_size=2, sampler=sampler)
                  for i in labels.numpy()]
        assert loaded == mine
        shards = [tinynet.tensor(np.zeros(len(sampler), np.int64)) for _ in range(world_size)]
        dist.all_gather(shards, tinynet.tensor(np.array(mine, np.int64)))
        for other, shard in enumerate(shards):
            local = DistributedSampler(dataset, world_size, other, seed=3)
            local.set_epoch(epoch)
            assert shard.numpy().tolist() == list(local)
        gathered = np.concatenate([shard.numpy() for shard in shards])
        assert sorted(set(gathered.tolist())) == list(range(11))
        assert len(gathered) == -(-11 // world_size) * world_size


def check_life_cycle(rank, world_size):
    assert dist.is_initialized() and dist.get_backend() == "mpi"
    error = raises(RuntimeError, dist.init_process_group, "twice")
    assert isinstance(error, ValueError)
    assert dist.barrier(async_op=True).wait()
    dist.destroy_process_group()
    assert not dist.is_initialized() and sys.excepthook is sys.__excepthook__
    raises(ValueError, lambda: dist.init_process_group(world_size=world_size + 1),
           f"world_size={world_size + 1}", f"world_size {world_size}")
    assert not dist.is_initialized()
    dist.init_process_group("mpi", rank=rank, world_size=world_size)
    assert sys.excepthook is not sys.__excepthook__
    assert dist.get_rank() == rank


def main():
    assert not dist.is_initialized() and sys.excepthook is sys.__excepthook__
    dist.init_process_group("mpi")
    rank, world_size = dist.get_rank(), dist.get_world_size()
    for check in (check_all_reduce, check_autograd_interplay, check_broadcast,
                  check_all_gather, check_mismatches, check_array_level, check_sampler,
                  check_life_cycle):
        check(rank, world_size)
    dist.barrier()
    dist.destroy_process_group()
    report(f"rank {rank} of {world_size}: collectives OK")


if __name__ == "__main__":
    main()
