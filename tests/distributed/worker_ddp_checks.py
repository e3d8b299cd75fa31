"""DDP's behaviour beyond exactness (run under mpiexec, or plain python for one rank).

    mpiexec -n W python tests/distributed/worker_ddp_checks.py CHECK

CHECK: buckets (messages go out during backward), accumulate (no_sync),
unused (a parameter outside the loss), mismatch (rank 1's model differs).
Prints ``rank R ok`` when a check passes; raises (and so aborts the job) when not.
"""
import sys

import numpy as np

import tinynet
import tinynet.distributed as dist
from tinynet.models import MLP
from tinynet.nn.parallel import DistributedDataParallel

from mpi_checks import report


def batch(seed, rows):
    rng = np.random.default_rng(seed)
    return tinynet.tensor(rng.standard_normal((rows, 5))), tinynet.tensor(rng.integers(0, 3, rows))


def loss_of(model, x, y):
    return tinynet.nn.functional.cross_entropy(model(x), y)


def check_buckets():
    """With small buckets, messages have gone out by the time the input layer's
    weight (one of the last gradients backward computes) arrives."""
    module = MLP("layer", sizes=(5, 7, 6, 3)).double()
    arrivals = []
    first_weight = module[0].weight
    first_weight.register_post_accumulate_grad_hook(          # runs before DDP's hook
        lambda p: arrivals.append(dist.traffic.calls("gradients")))
    model = DistributedDataParallel(module, bucket_cap_mb=100 / 2 ** 20)   # 100 bytes
    buckets = len(model._buckets)
    assert buckets >= 4, buckets
    loss_of(model, *batch(0, 4)).backward()
    assert len(arrivals) == 1 and 1 <= arrivals[0] < buckets, (arrivals, buckets)
    assert dist.traffic.calls("gradients") == buckets


def check_accumulate():
    """Two micro-batches, the first under no_sync: the grads are the average over
    ranks of the sum of both micro-batches' grads, as one process on both."""
    rank, world = dist.get_rank(), dist.get_world_size()
    model = DistributedDataParallel(MLP("none", sizes=(5, 7, 3)).double())
    reference = MLP("none", sizes=(5, 7, 3)).double()
    reference.load_state_dict(model.module.state_dict())
    shards = []
    for micro in range(2):
        x, y = batch(10 + micro, 2 * world)
        shard = slice(2 * rank, 2 * rank + 2)
        shards.append((tinynet.tensor(x.array[shard]), tinynet.tensor(y.array[shard])))
        loss_of(reference, x, y).backward()
    with model.no_sync():
        loss_of(model, *shards[0]).backward()
    assert dist.traffic.calls("gradients") == 0
    loss_of(model, *shards[1]).backward()
    assert dist.traffic.calls("gradients") == 1
    for p, q in zip(model.module.parameters(), reference.parameters(), strict=True):
        np.testing.assert_allclose(p.grad.array, q.grad.array, rtol=1e-12, atol=1e-14)


def check_unused():
    model = DistributedDataParallel(tinynet.nn.Sequential(tinynet.nn.Linear(5, 3),
                                                          tinynet.nn.Linear(3, 2)).double())
    x, _ = batch(0, 4)
    model.module[0](x).sum().backward()      # the second Linear takes no part
    try:
        model(x)
    except RuntimeError as error:
        assert "1.weight" in str(error) and "1.bias" in str(error), error
        assert "0.weight" not in str(error), error
    else:
        raise AssertionError("a forward after an unfinished reduction was not refused")
    loss = model(x).sum()                    # refused once; the next iteration runs
    loss.backward()
    assert dist.traffic.calls("gradients") == 1


def check_mismatch():
    hidden = 7 if dist.get_rank() == 0 else 8
    DistributedDataParallel(MLP("layer", sizes=(5, hidden, 3)))


def main():
    dist.init_process_group("mpi")
    {"buckets": check_buckets, "accumulate": check_accumulate, "unused": check_unused,
     "mismatch": check_mismatch}[sys.argv[1]]()
    report(f"rank {dist.get_rank()} ok")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
