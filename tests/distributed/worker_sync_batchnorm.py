"""SyncBatchNorm on W ranks against BatchNorm1d on the global batch in one process.

    mpiexec -n W python tests/distributed/worker_sync_batchnorm.py    (plain python: W = 1)

Every rank draws the same global batch from a seed and runs SyncBatchNorm on its
own shard (unequal shard sizes, one rank with a single sample when W = 3), and
BatchNorm1d on the whole batch. The loss is a sum, Σ_r Σ (y_r · w_r) with
fixed weights w: the global loss is the sum of the ranks' losses, so each
rank's dx is exactly the global dx on its rows, and the ranks' dγ, dβ sum to
the global ones. With W = 1 the layer must be BatchNorm1d bit for bit.
Run by tests/test_sync_batchnorm.py; prints ``rank R of W: sync batchnorm OK``.
"""
import numpy as np

import tinynet
import tinynet.distributed as dist
from tinynet import nn
from tinynet._process_group import require_world
from tinynet.nn.sync_batchnorm import (
    TRAFFIC_LABEL,
    SyncBatchNorm,
    SyncStepwiseBatchNorm,
    sync_batch_norm,
)
from tinynet.testing import gradcheck

from mpi_checks import raises, report

SHARDS = {1: (6,), 2: (3, 5), 3: (1, 4, 2)}
TOLERANCE = 1e-12


class CountingComm:
    """The world's communicator, counting the collectives called on it."""

    def __init__(self, comm):
        self.comm, self.calls = comm, []

    def __getattr__(self, name):
        attribute = getattr(self.comm, name)
        if name[0].isupper() or name in ("allgather", "allreduce", "bcast"):
            self.calls.append(name)
        return attribute




def shard_rows(rank, world_size):
    sizes = SHARDS[world_size]
    start = sum(sizes[:rank])
    return slice(start, start + sizes[rank])


def close(ours, theirs, what):
    error = float(np.max(np.abs(np.asarray(ours) - np.asarray(theirs)), initial=0.0))
    assert error <= TOLERANCE, f"{what}: differs by {error:.3g}"


def summed_over_ranks(tensor):
    return dist.all_reduce_array(tensor.numpy().copy())


def make_pair(shape, seed, **options):
    """A SyncBatchNorm converted from a BatchNorm1d, and a BatchNorm1d with the same
    options and the same random gain and bias."""
    rng = np.random.default_rng(seed)
    ours, reference = (nn.BatchNorm1d(shape[1], momentum=0.3, dtype=tinynet.float64,
                                      **options) for _ in range(2))
    ours = SyncBatchNorm.convert_sync_batchnorm(ours)
    if ours.affine:
        weight, bias = rng.uniform(0.5, 2.0, shape[1]), rng.standard_normal(shape[1])
        for module in (ours, reference):
            module.weight.array[:], module.bias.array[:] = weight, bias
    return ours, reference


def step_tensors(shape, step, rows):
    """The global batch and loss weights of one step, and this rank's share of them."""
    rng = np.random.default_rng(100 + step)
    x = rng.standard_normal(shape) * rng.uniform(0.5, 3.0, shape[1]).reshape(
        (1, -1) + (1,) * (len(shape) - 2)) + 2.0
    weights = rng.standard_normal(shape)
    return ((tinynet.tensor(x, requires_grad=True), tinynet.tensor(weights)),
            (tinynet.tensor(x[rows].copy(), requires_grad=True), tinynet.tensor(weights[rows])))


def check_against_global_batch(rank, world_size, shape, world, **options):
    rows = shard_rows(rank, world_size)
    ours, reference = make_pair(shape, 7, **options)
    for step in range(3):
        (x, w), (x_r, w_r) = step_tensors(shape, step, rows)
        world.comm.calls.clear()
        dist.traffic.reset()
        y_r = ours(x_r)
        forward_calls = list(world.comm.calls)
        (y_r * w_r).sum().backward()
        statistics = (dist.traffic.calls(TRAFFIC_LABEL), dist.traffic.bytes(TRAFFIC_LABEL))
        y = reference(x)
        (y * w).sum().backward()
        if world_size == 1:
            assert world.comm.calls == [], world.comm.calls
            assert np.array_equal(y_r.numpy(), y.numpy())
            assert np.array_equal(x_r.grad.numpy(), x.grad.numpy())
        else:       # one all-gather (and the first step's check), then one all-reduce
            assert forward_calls == ["allgather"] * (step == 0) + ["Allgather"], forward_calls
            assert world.comm.calls[len(forward_calls):] == ["Allreduce"], world.comm.calls
            assert statistics == (2, 8 * (1 + 2 * shape[1] + 2 * shape[1])), statistics
        close(y_r.numpy(), y.numpy()[rows], f"{shape} output")
        close(x_r.grad.numpy(), x.grad.numpy()[rows], f"{shape} dx")
        if ours.affine:
            close(summed_over_ranks(ours.weight.grad), reference.weight.grad.numpy(), "dgain")
            close(summed_over_ranks(ours.bias.grad), reference.bias.grad.numpy(), "dbias")
            ours.zero_grad()
            reference.zero_grad()
    if ours.track_running_stats:
        close(ours.running_mean.numpy(), reference.running_mean.numpy(), "running_mean")
        close(ours.running_var.numpy(), reference.running_var.numpy(), "running_var")
        assert int(ours.num_batches_tracked.numpy()) == 3
    (x, _), (x_r, _) = step_tensors(shape, 9, rows)
    ours.eval()
    reference.eval()
    world.comm.calls.clear()
    if ours.track_running_stats:
        close(ours(x_r).numpy(), reference(x).numpy()[rows], "eval output")
    elif x_r.shape[0] > 1:      # no running statistics: the shard's own, as in PyTorch
        close(ours(x_r).numpy(), reference(x_r).numpy(), "eval output of the shard")
    assert world.comm.calls == [], f"eval mode communicated: {world.comm.calls}"


def shard_statistics_matter(rank, world_size, shape):
    """BatchNorm1d on the shards is far from the global batch's: the size of the effect."""
    rows = shard_rows(rank, world_size)
    plain, reference = (nn.BatchNorm1d(shape[1], dtype=tinynet.float64) for _ in range(2))
    (x, _), (x_r, _) = step_tensors(shape, 0, rows)
    difference = np.zeros(1)
    if x_r.shape[0] > 1:
        difference[0] = np.abs(plain(x_r).numpy() - reference(x).numpy()[rows]).max()
    dist.all_reduce_array(difference, dist.ReduceOp.MAX)
    assert world_size == 1 or difference[0] > 0.1, difference
    return difference[0]


def check_float32_stability(rank, world_size):
    """x = 10⁴ + 0.01·N(0, 1) in float32: the merged statistics keep x̂ accurate."""
    rows = shard_rows(rank, world_size)
    rng = np.random.default_rng(5)
    x = (1e4 + 0.01 * rng.standard_normal((sum(SHARDS[world_size]), 3))).astype(np.float32)
    running_mean, running_var = tinynet.zeros(3), tinynet.ones(3)
    y_r = sync_batch_norm(tinynet.tensor(x[rows]), running_mean, running_var)
    exact = nn.BatchNorm1d(3, affine=False, dtype=tinynet.float64)
    expected = exact(tinynet.tensor(x.astype(np.float64))).numpy()[rows]
    assert y_r.dtype == np.float32
    assert np.abs(y_r.numpy() - expected).max() < 1e-4     # 0.5 float32 ulp of 10⁴ is 5 % of σ
    np.testing.assert_allclose(running_mean.numpy(), exact.running_mean.numpy(), rtol=1e-6)
    np.testing.assert_allclose(running_var.numpy(), exact.running_var.numpy(), rtol=1e-6)


def check_lstm(rank, world_size):
    """The BN-LSTM converted: per-step statistics of the global batch, rows reused past
    max_steps."""
    rows = shard_rows(rank, world_size)
    tinynet.manual_seed(3)
    reference = nn.LSTM(3, 4, norm="batch", max_steps=2, dtype=tinynet.float64)
    ours = nn.LSTM(3, 4, norm="batch", max_steps=2, dtype=tinynet.float64)
    ours.load_state_dict(reference.state_dict())
    ours = SyncBatchNorm.convert_sync_batchnorm(ours)
    assert isinstance(ours.norms_l0.ih, SyncStepwiseBatchNorm)
    rng = np.random.default_rng(11)
    x = rng.standard_normal((3, sum(SHARDS[world_size]), 3))
    w = rng.standard_normal((3, x.shape[1], 4))
    x_all, x_r = tinynet.tensor(x, requires_grad=True), tinynet.tensor(x[:, rows].copy(),
                                                                        requires_grad=True)
    out, _ = reference(x_all)
    (out * tinynet.tensor(w)).sum().backward()
    out_r, _ = ours(x_r)
    (out_r * tinynet.tensor(w[:, rows])).sum().backward()
    if world_size == 1:
        assert np.array_equal(out_r.numpy(), out.numpy())
    close(out_r.numpy(), out.numpy()[:, rows], "LSTM output")
    close(x_r.grad.numpy(), x_all.grad.numpy()[:, rows], "LSTM dx")
    theirs = dict(reference.named_parameters())
    for name, param in ours.named_parameters():
        close(summed_over_ranks(param.grad), theirs[name].grad.numpy(), f"LSTM d{name}")
    buffers = dict(reference.named_buffers())
    for name, buffer in ours.named_buffers():
        close(buffer.numpy(), buffers[name].numpy(), f"LSTM {name}")


def check_sync_function_gradients():
    """The synced op itself (not BatchNorm1d's path): float64 gradcheck, world of one."""
    rng = np.random.default_rng(2)
    for shape in ((5, 3), (4, 3, 2)):
        x = tinynet.tensor(rng.standard_normal(shape), requires_grad=True)
        gain = tinynet.tensor(rng.uniform(0.5, 2, 3), requires_grad=True)
        bias = tinynet.tensor(rng.standard_normal(3), requires_grad=True)
        for unbiased in (False, True):
            assert gradcheck(lambda x, g, b, u=unbiased: sync_batch_norm(
                x, None, None, g, b, unbiased_batch_var=u), (x, gain, bias))


def check_mismatches(rank, world_size):
    """Ranks that disagree: the same clear error on every rank, then the group still works."""
    last = world_size - 1
    raises(ValueError, lambda: SyncBatchNorm(4 + rank)(tinynet.randn(3, 4 + rank)),
           "SyncBatchNorm: the ranks disagree on num_features", "rank 1 has 5 where rank 0 has 4")
    channels = 5 if rank == last else 4
    raises(ValueError, lambda: SyncBatchNorm(4)(tinynet.randn(3, channels)),
           f"SyncBatchNorm: on rank {last}: SyncBatchNorm(4): expected a 2-D or 3-D "
           "input (N, 4, ...), got shape (3, 5)")
    dtype = tinynet.float64 if rank == last else tinynet.float32
    raises(ValueError, lambda: SyncBatchNorm(4)(tinynet.randn(3, 4, dtype=dtype)),
           "disagree on dtype", f"rank {last} has 'float64'")
    one_value = tinynet.randn(1 if rank == 0 else 0, 4)
    raises(ValueError, lambda: SyncBatchNorm(4)(one_value),
           "expected more than 1 value per channel when training, got 1 over all "
           f"{world_size} ranks")
    # The group still works after the errors, and a rank may have no samples.
    x = np.random.default_rng(4).standard_normal((2 * last + 1, 2))
    rows = slice(0, 0) if rank == 0 else slice(2 * rank - 2, 2 * rank + (rank == last))
    y_r = SyncBatchNorm(2, dtype=tinynet.float64)(tinynet.tensor(x[rows].copy()))
    y = nn.BatchNorm1d(2, dtype=tinynet.float64)(tinynet.tensor(x))
    close(y_r.numpy(), y.numpy()[rows], "output with an empty shard")


def main():
    dist.init_process_group("mpi")
    rank, world_size = dist.get_rank(), dist.get_world_size()
    world = require_world("the test")
    world.comm = CountingComm(world.comm)
    for shape in ((sum(SHARDS[world_size]), 4), (sum(SHARDS[world_size]), 3, 5)):
        check_against_global_batch(rank, world_size, shape, world)
        check_against_global_batch(rank, world_size, shape, world, affine=False)
    for options in ({"track_running_stats": False}, {"unbiased_batch_var": True}):
        check_against_global_batch(rank, world_size, (sum(SHARDS[world_size]), 3), world,
                                   **options)
    difference = shard_statistics_matter(rank, world_size, (sum(SHARDS[world_size]), 4))
    check_float32_stability(rank, world_size)
    check_lstm(rank, world_size)
    if world_size == 1:
        check_sync_function_gradients()
    else:
        check_mismatches(rank, world_size)
    if rank == 0:
        print(f"plain BatchNorm1d on the shards differs from the global batch by {difference:.3g}",
              flush=True)
    report(f"rank {rank} of {world_size}: sync batchnorm OK")
    world.comm = world.comm.comm
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
