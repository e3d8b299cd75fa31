"""DDP over W ranks against one process on the global batch (run under mpiexec).

    mpiexec -n W python tests/distributed/worker_ddp.py MODEL [STEPS] [BUCKET_MB]

Every rank trains a DDP replica on its shard of each global batch (W * 3 rows)
and, alongside, the same model in one process on the whole batch; both float64
with Adam (SGD for batch norms: see make_optimizer). The replicas start from
different weights (each rank its own seed): DDP's broadcast must make them
rank 0's. MAXDIFF is the largest difference between the two of any parameter
after any step, of the buffers (running statistics) and of the eval-mode
outputs on a further batch at the end. Prints one line per rank:
``rank R ok MAXDIFF ALLREDUCES``.
MODEL: mlp-layer, mlp-none, mlp-batch (plain BatchNorm1d: expected to differ),
mlp-syncbatch (SyncBatchNorm), lstm-layer.
"""
import sys

import numpy as np

import tinynet
import tinynet.distributed as dist
from tinynet.models import MLP, SequenceClassifier
from tinynet.nn.parallel import DistributedDataParallel

from mpi_checks import report

PER_RANK = 3


def make_model(kind, seed):
    tinynet.manual_seed(seed)
    arch, norm = kind.split("-")
    if arch == "lstm":
        model = SequenceClassifier(input_size=4, hidden_size=6, classes=3, norm=norm,
                                   max_steps=5)
    else:
        model = MLP("batch" if norm == "syncbatch" else norm, sizes=(5, 7, 6, 3))
        if norm == "syncbatch":
            model = tinynet.nn.SyncBatchNorm.convert_sync_batchnorm(model)
    return model.double()


def global_batch(kind, step, world):
    rng = np.random.default_rng(1000 + step)
    shape = (world * PER_RANK, 5, 4) if kind.startswith("lstm") else (world * PER_RANK, 5)
    return rng.standard_normal(shape), rng.integers(0, 3, world * PER_RANK)


def max_difference(a, b):
    return max(float(np.max(np.abs(p.array - q.array))) for p, q in
               zip(a.parameters(), b.parameters(), strict=True))


def make_optimizer(kind, model):
    """Adam, except for batch norms: the bias of the Linear layer before a batch
    norm has a zero gradient in exact arithmetic (the norm subtracts the mean),
    so backward gives it rounding noise, which Adam, dividing by its size, turns
    into steps of about lr, different in two computations. SGD keeps noise noise."""
    if "batch" in kind:
        return tinynet.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    return tinynet.optim.Adam(model.parameters(), lr=1e-2)


def main():
    kind = sys.argv[1]
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    bucket_mb = float(sys.argv[3]) if len(sys.argv) > 3 else 25
    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    reference = make_model(kind.replace("syncbatch", "batch"), seed=0)
    replica = DistributedDataParallel(make_model(kind, seed=rank), bucket_cap_mb=bucket_mb)
    assert max_difference(replica.module, reference) == 0, "DDP did not copy rank 0's weights"
    optimizers = [make_optimizer(kind, m) for m in (reference, replica)]
    loss_fn = tinynet.nn.functional.cross_entropy
    worst = 0.0
    for step in range(steps):
        x, y = global_batch(kind, step, world)
        shard = slice(rank * PER_RANK, (rank + 1) * PER_RANK)
        for model, opt, inputs, labels in ((reference, optimizers[0], x, y),
                                           (replica, optimizers[1], x[shard], y[shard])):
            opt.zero_grad()
            loss_fn(model(tinynet.tensor(inputs)), tinynet.tensor(labels)).backward()
            opt.step()
        worst = max(worst, max_difference(replica.module, reference))
    for mine, theirs in zip(replica.module.buffers(), reference.buffers(), strict=True):
        worst = max(worst, float(np.max(np.abs(mine.array - theirs.array))))
    with tinynet.no_grad():                       # the trained functions, in eval mode
        probe = tinynet.tensor(global_batch(kind, steps, world)[0])
        outputs = [model.eval()(probe).array for model in (replica.module, reference)]
    worst = max(worst, float(np.max(np.abs(outputs[0] - outputs[1]))))
    report(f"rank {rank} ok {worst:.3e} {dist.traffic.calls('gradients')}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
