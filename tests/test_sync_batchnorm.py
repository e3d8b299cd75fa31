"""nn.SyncBatchNorm: BatchNorm1d bit for bit in one process, the statistics merge,
convert_sync_batchnorm and the errors here; on 1, 2 and 3 MPI ranks against
BatchNorm1d on the global batch in tests/distributed/worker_sync_batchnorm.py.

No test here joins a process group: the worker runs in its own processes.
"""
import re
from pathlib import Path

import numpy as np
import pytest

import tinynet
from tinynet import nn
from tinynet.nn.sync_batchnorm import (
    SyncStepwiseBatchNorm,
    merge_statistics,
    shard_statistics,
)
from tinynet.testing import gradcheck

from mpi_launch import requires_mpi, run_mpi, run_python

WORKER = Path(__file__).parent / "distributed" / "worker_sync_batchnorm.py"
DTYPES = {"float32": tinynet.float32, "float64": tinynet.float64}


def twins(make, seed=0):
    """Two modules from ``make`` with the same (random) parameters and buffers."""
    first, second = make(), make()
    rng = np.random.default_rng(seed)
    for param in first.parameters():
        param.data[...] = rng.uniform(0.5, 2.0, param.shape)
    second.load_state_dict(first.state_dict())
    return first, second


def train_and_eval(layer, shape, dtype, steps=3, forward=lambda layer, x, step: layer(x)):
    """Outputs, input gradients, parameter gradients and buffers of ``steps``
    training steps (loss Σ y·w) and one eval step, as a list of arrays."""
    rng = np.random.default_rng(1)
    results = []
    for step in range(steps + 1):
        layer.train(step < steps)
        x = tinynet.tensor(rng.standard_normal(shape).astype(dtype) * 3 + 1, requires_grad=True)
        y = forward(layer, x, step)
        (y * tinynet.tensor(rng.standard_normal(y.shape).astype(dtype))).sum().backward()
        results += [y.numpy(), x.grad.numpy()]
    results += [p.grad.numpy() for p in layer.parameters()]
    results += [b.numpy() for b in layer.buffers()]
    return results


def assert_all_equal(ours, theirs):
    assert len(ours) == len(theirs)
    for index, (a, b) in enumerate(zip(ours, theirs, strict=True)):
        assert a.dtype == b.dtype and np.array_equal(a, b), f"result {index} differs"


@pytest.mark.parametrize("shape", [(6, 4), (5, 4, 3)])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("options", [{}, {"affine": False}, {"track_running_stats": False}],
                         ids=["affine", "no-affine", "no-running-stats"])
def test_without_a_process_group_it_is_batchnorm1d_bit_for_bit(shape, dtype, options):
    def make(cls):
        return cls(4, momentum=0.2, eps=1e-3, dtype=DTYPES[dtype], **options)

    reference, _ = twins(lambda: make(nn.BatchNorm1d))
    ours = make(nn.SyncBatchNorm)
    ours.load_state_dict(reference.state_dict())
    assert_all_equal(train_and_eval(ours, shape, dtype), train_and_eval(reference, shape, dtype))


def test_stepwise_without_a_process_group_is_stepwise_batch_norm_bit_for_bit():
    def make(cls):
        return cls(3, max_steps=2, momentum=0.3, dtype=tinynet.float64)

    reference, _ = twins(lambda: make(nn.StepwiseBatchNorm))
    ours = make(SyncStepwiseBatchNorm)
    ours.load_state_dict(reference.state_dict())
    forward = lambda layer, x, step: layer(x, step)       # noqa: E731
    assert_all_equal(train_and_eval(ours, (5, 3), "float64", 4, forward),
                     train_and_eval(reference, (5, 3), "float64", 4, forward))


@pytest.mark.parametrize("shape", [(5, 3), (4, 3, 2)])
def test_gradcheck_float64(shape):
    layer = nn.SyncBatchNorm(3, dtype=tinynet.float64)
    rng = np.random.default_rng(0)
    layer.weight.data[:] = rng.uniform(0.5, 2.0, 3)
    x = tinynet.tensor(rng.standard_normal(shape), requires_grad=True)
    assert gradcheck(lambda x, w, b: layer(x), (x, layer.weight, layer.bias))


def test_merged_statistics_are_those_of_the_union_for_any_shard_sizes():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((13, 4, 3)) * rng.uniform(0.1, 10.0, (1, 4, 1)) + 5.0
    for sizes in ((13,), (1, 12), (0, 6, 7), (3, 1, 0, 4, 5)):
        ends = np.cumsum(sizes)
        rows = np.stack([shard_statistics(x[end - size:end]) for size, end in
                         zip(sizes, ends, strict=True)])
        count, mean, m2 = merge_statistics(rows)
        assert count == 13 * 3
        np.testing.assert_allclose(mean, x.mean(axis=(0, 2)), rtol=1e-14)
        np.testing.assert_allclose(m2 / count, x.var(axis=(0, 2)), rtol=1e-13)


def test_the_merge_is_stable_where_mean_of_squares_minus_squared_mean_is_not():
    rng = np.random.default_rng(3)
    offset = 1e8
    x = offset + rng.standard_normal((40, 2))
    exact = (x - offset).var(axis=0)       # x − 10⁸ is exact in float64 here
    naive = (x * x).mean(axis=0) - x.mean(axis=0) ** 2
    assert np.abs(naive / exact - 1).max() > 0.1      # the cancellation this avoids
    rows = np.stack([shard_statistics(x[a:b]) for a, b in ((0, 1), (1, 17), (17, 40))])
    count, _, m2 = merge_statistics(rows)
    np.testing.assert_allclose(m2 / count, exact, rtol=1e-7)


def test_shard_statistics_of_float32_are_taken_in_float64():
    x = (1e4 + 0.01 * np.random.default_rng(4).standard_normal((50, 3))).astype(np.float32)
    row = shard_statistics(x)
    assert row.dtype == np.float64 and row[0] == 50
    np.testing.assert_allclose(row[1:4], x.astype(np.float64).mean(axis=0), rtol=1e-15)
    np.testing.assert_allclose(row[4:] / 50, x.astype(np.float64).var(axis=0), rtol=1e-9)


def test_convert_sync_batchnorm_carries_parameters_buffers_flags_and_hyperparameters():
    def make():
        tinynet.manual_seed(5)
        inner = nn.Sequential(nn.ReLU(), nn.BatchNorm1d(4, affine=False, unbiased_batch_var=True))
        return nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4, momentum=0.2, eps=1e-3), inner,
                             nn.BatchNorm1d(4, track_running_stats=False), nn.LayerNorm(4))

    model, twin = make(), make()
    model[2][1].eval()
    twin[2][1].eval()
    before = {name: (type(m), m.training) for name, m in model.named_modules()}
    tensors = {name: t for name, t in [*model.named_parameters(), *model.named_buffers()]}
    converted = nn.SyncBatchNorm.convert_sync_batchnorm(model)
    assert converted is model       # a container is converted in place
    for name, module in converted.named_modules():
        kind, training = before[name]
        expected = nn.SyncBatchNorm if kind is nn.BatchNorm1d else kind
        assert type(module) is expected and module.training == training, name
    carried = [*converted.named_parameters(), *converted.named_buffers()]
    assert [name for name, _ in carried] == list(tensors)
    assert all(tensors[name] is t for name, t in carried)
    first, hidden = converted[1], converted[2][1]
    assert (first.eps, first.momentum, first.affine, first.track_running_stats) == (
        1e-3, 0.2, True, True)
    assert (hidden.affine, hidden.unbiased_batch_var) == (False, True)
    assert converted[3].running_mean is None and not converted[3].track_running_stats
    assert_all_equal(train_and_eval(converted, (6, 3), "float32"),
                     train_and_eval(twin, (6, 3), "float32"))
    assert nn.SyncBatchNorm.convert_sync_batchnorm(converted[1]) is converted[1]


def test_convert_sync_batchnorm_of_a_batchnorm1d_itself():
    bn = nn.BatchNorm1d(3, momentum=0.4).eval()
    synced = nn.SyncBatchNorm.convert_sync_batchnorm(bn)
    assert type(synced) is nn.SyncBatchNorm and not synced.training
    assert synced.weight is bn.weight and synced.running_var is bn.running_var
    assert synced.momentum == 0.4


def test_convert_sync_batchnorm_of_the_bn_lstm():
    def make():
        tinynet.manual_seed(6)
        return nn.LSTM(3, 4, norm="batch", max_steps=2, dtype=tinynet.float64)

    lstm, twin = make(), make()
    keys = list(lstm.state_dict())
    converted = nn.SyncBatchNorm.convert_sync_batchnorm(lstm)
    stepwise = [m for m in converted.modules() if isinstance(m, nn.StepwiseBatchNorm)]
    assert len(stepwise) == 3 and all(type(m) is SyncStepwiseBatchNorm for m in stepwise)
    assert list(converted.state_dict()) == keys
    forward = lambda layer, x, step: layer(x)[0]      # noqa: E731
    assert_all_equal(train_and_eval(converted, (3, 5, 3), "float64", 2, forward),
                     train_and_eval(twin, (3, 5, 3), "float64", 2, forward))
    layer_norm = nn.LSTM(3, 4, norm="layer")
    nn.SyncBatchNorm.convert_sync_batchnorm(layer_norm)
    assert [type(m) for m in layer_norm.modules()] == [
        type(m) for m in nn.LSTM(3, 4, norm="layer").modules()]


@pytest.mark.parametrize("call, error, message", [
    (lambda: nn.SyncBatchNorm(4)(tinynet.randn(3, 5)), ValueError,
     r"SyncBatchNorm\(4\): expected a 2-D or 3-D input \(N, 4, ...\), got shape \(3, 5\)"),
    (lambda: nn.SyncBatchNorm(4)(tinynet.randn(4)), ValueError, r"got shape \(4,\)"),
    (lambda: nn.SyncBatchNorm(4)(tinynet.randn(2, 4, 3, 3)), ValueError, r"2-D or 3-D"),
    (lambda: nn.SyncBatchNorm(4)(tinynet.randn(1, 4)), ValueError,
     r"more than 1 value per channel.*\(1, 4\)"),
    (lambda: nn.SyncBatchNorm(4, momentum=None)(tinynet.randn(2, 4)), TypeError,
     "momentum must be a real number, got NoneType"),
    (lambda: nn.SyncBatchNorm(4, process_group="world"), ValueError,
     "only the default process group: pass process_group=None, not 'world'"),
    (lambda: nn.SyncBatchNorm.convert_sync_batchnorm(nn.BatchNorm1d(4), process_group=1),
     ValueError, "process_group=None, not 1"),
])
def test_bad_input_is_named(call, error, message):
    with pytest.raises(error, match=message):
        call()


def assert_ranks_succeeded(job, world_size):
    assert job.returncode == 0, f"stdout:\n{job.stdout}\nstderr:\n{job.stderr}"
    for rank in range(world_size):
        assert f"rank {rank} of {world_size}: sync batchnorm OK" in job.stdout
    found = re.search(r"differs from the global batch by ([0-9.e+-]+)", job.stdout)
    return float(found.group(1))


@requires_mpi
@pytest.mark.parametrize("world_size", [2, 3])
def test_under_mpiexec_it_is_batchnorm1d_on_the_global_batch(world_size):
    difference = assert_ranks_succeeded(run_mpi(WORKER, world_size, timeout=30), world_size)
    assert difference > 0.1       # while BatchNorm1d on the shards is not


@requires_mpi
def test_a_world_of_one_is_batchnorm1d_bit_for_bit():
    assert assert_ranks_succeeded(run_python(WORKER, timeout=30), 1) == 0
