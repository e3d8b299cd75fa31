"""Batch normalization whose training statistics are those of every rank's batch.

Under data parallelism each of W ranks holds a shard of the batch, and
BatchNorm1d normalizes by its shard's statistics: noisier with small shards,
and not the model that one process would train on the whole batch.
SyncBatchNorm (PyTorch's name; ChainerMN's multi-node batch normalization)
normalizes by the statistics of the global batch instead. LayerNorm needs none
of this: its statistics are per sample (Ba, Kiros & Hinton, 2016).

Forward, per channel. Each rank takes, in float64, its count n_r, mean μ_r and
sum of squared deviations M2_r = Σ (x − μ_r)² (two passes over its own values).
One all-gather gives every rank all W triples, which it merges with the
parallel variance formula of Chan, Golub & LeVeque (1979) applied to all W
parts at once::

    N = Σ_r n_r        μ = Σ_r n_r μ_r / N        M2 = Σ_r (M2_r + n_r (μ_r − μ)²)

Every term of M2 is non-negative, so nothing cancels, where the global
E[x²] − E[x]² loses every digit once the mean is large against σ. Two
all-reduces (of n and n·μ, then of Σ (x − μ)²) would also be exact, but take
two round trips and a second pass over the data; the gathered triples are
small (W rows of 2C + 1 numbers), and every rank merges the same numbers in
the same order, so the statistics are bit for bit the same on every rank.

Backward, with g = dy · γ and x̂ = (x − μ)/σ, the sums over the global batch::

    dx = (1/σ) (g − Σ g / N − x̂ Σ (g x̂) / N)

each rank all-reduces its two per-channel sums, Σ g and Σ g x̂, in one message
(N − 1 divides Σ g x̂ for a BatchNorm1d with ``unbiased_batch_var``, which
:meth:`SyncBatchNorm.convert_sync_batchnorm` keeps).
dγ = Σ dy x̂ and dβ = Σ dy stay this rank's sums: DistributedDataParallel
averages parameter gradients afterwards, as in PyTorch. Both messages are
counted in ``tinynet.distributed.traffic`` under "batch statistics".

In eval mode, on a world of one, or without a process group, the layers run
BatchNorm1d's code and communicate nothing (in eval mode without running
statistics each rank normalizes by its own batch, as in PyTorch). Every rank
must run the same training forward and backward passes: each is a collective.
"""
from __future__ import annotations

import numpy as np

from .. import distributed as dist
from ..autograd import Function
from ..backend import as_numpy, get_array_module
from ..hyperparameters import check_real
from .normalization import BatchNorm1d, StepwiseBatchNorm, _BatchNormBase

__all__ = ["SyncBatchNorm", "SyncStepwiseBatchNorm", "SyncBatchNormFunction", "sync_batch_norm",
           "shard_statistics", "merge_statistics"]

#: The label of SyncBatchNorm's messages in ``tinynet.distributed.traffic``.
TRAFFIC_LABEL = "batch statistics"


def _layout(x):
    """The axes that share a channel's statistics, and the shape that broadcasts (C,)."""
    return ((0,), (1, -1)) if x.ndim == 2 else ((0, 2), (1, -1, 1))


def shard_statistics(x) -> np.ndarray:
    """This rank's statistics of array ``x`` (N, C[, L]) as one float64 NumPy row:
    [n, μ_r (C values), M2_r (C values)], n the values per channel."""
    channels = x.shape[1]
    count = x.size // channels
    row = np.zeros(1 + 2 * channels)
    row[0] = count
    if count:
        axes, view = _layout(x)
        x64 = x.astype(np.float64, copy=False)
        mean = x64.mean(axis=axes)
        centered = x64 - mean.reshape(view)
        row[1:1 + channels] = as_numpy(mean)
        row[1 + channels:] = as_numpy((centered * centered).sum(axis=axes))
    return row


def merge_statistics(rows: np.ndarray):
    """``(N, μ, M2)`` of the union of the shards whose :func:`shard_statistics`
    are the rows of ``rows`` (Chan et al.'s merge, see the module docstring);
    μ = 0 when every shard is empty."""
    channels = (rows.shape[1] - 1) // 2
    counts = rows[:, :1]
    means, squares = rows[:, 1:1 + channels], rows[:, 1 + channels:]
    count = int(counts.sum())
    mean = (counts * means).sum(axis=0) / max(count, 1)
    m2 = squares.sum(axis=0) + (counts * (means - mean) ** 2).sum(axis=0)
    return count, mean, m2


class SyncBatchNormFunction(Function):
    """y = γ (x − μ)/σ + β, with μ and σ² = M2/dof the global batch's (float64)
    statistics over ``count`` values per channel; the backward all-reduces."""

    @staticmethod
    def forward(ctx, x, gain, bias, mean, var, eps, count, dof):
        xp = get_array_module(x)
        dtype = xp.result_type(*(a for a in (x, gain, bias) if a is not None))
        axes, view = _layout(x)
        rstd = 1.0 / xp.sqrt(var + eps)
        # The float64 statistics enter before rounding to x's dtype, as in the kernels.
        x_hat = ((x - mean.reshape(view)) * rstd.reshape(view)).astype(dtype, copy=False)
        ctx.save_for_backward(x_hat, rstd.astype(dtype, copy=False), gain)
        ctx.meta = (axes, view, count, dof, bias is not None)
        y = x_hat if gain is None else x_hat * gain.reshape(view)
        return y if bias is None else y + bias.reshape(view)

    @staticmethod
    def backward(ctx, grad):
        x_hat, rstd, gain = ctx.saved
        axes, view, count, dof, has_bias = ctx.meta
        xp = get_array_module(grad)
        g = grad if gain is None else grad * gain.reshape(view)
        sums = xp.concatenate([g.sum(axis=axes, dtype=np.float64),
                               (g * x_hat).sum(axis=axes, dtype=np.float64)])
        dist.all_reduce_array(sums, label=TRAFFIC_LABEL)
        sum_g, sum_g_x_hat = (s.astype(x_hat.dtype).reshape(view) for s in xp.split(sums, 2))
        dx = rstd.reshape(view) * (g - sum_g / count - x_hat * sum_g_x_hat / dof)
        dgain = None if gain is None else (grad * x_hat).sum(axis=axes)
        dbias = grad.sum(axis=axes) if has_bias else None
        return dx, dgain, dbias, None, None, None, None, None


def _update_running(running, momentum, batch_value):
    running.array *= 1 - momentum
    running.array += (momentum * batch_value).astype(running.array.dtype, copy=False)


def sync_batch_norm(x, running_mean, running_var, weight=None, bias=None,
                    momentum: float = 0.1, eps: float = 1e-5, unbiased_batch_var: bool = False):
    """``F.batch_norm(..., training=True)`` over the global batch: the union of
    every rank's ``x``. Running buffers, when given, are updated as BatchNorm1d
    on the global batch would update them (the unbiased variance, N − 1)."""
    eps = check_real("batch_norm", "eps", eps, low=0)
    momentum = check_real("batch_norm", "momentum", momentum, 0, 1)
    rows = dist.all_gather_array(shard_statistics(x.array), label=TRAFFIC_LABEL)
    count, mean, m2 = merge_statistics(rows)
    if count <= 1:
        raise ValueError(
            f"batch_norm: expected more than 1 value per channel when training, got {count} "
            f"over all {len(rows)} ranks (input of shape {tuple(x.shape)} on this rank)")
    xp = get_array_module(x.array)
    mean, m2 = xp.asarray(mean), xp.asarray(m2)
    if running_mean is not None:
        _update_running(running_mean, momentum, mean)
        _update_running(running_var, momentum, m2 / (count - 1))
    dof = count - 1 if unbiased_batch_var else count
    return SyncBatchNormFunction.apply(x, weight, bias, mean, m2 / dof, eps, count, dof)


def _check_group(process_group):
    if process_group is not None:
        raise ValueError(f"SyncBatchNorm: tinynet has only the default process group: pass "
                         f"process_group=None, not {process_group!r}")


class _Synced:
    """What makes a batch-norm layer synced: ``_normalize`` over the global batch
    when training on more than one rank, else the layer's own."""

    _ranks_checked = False

    def _normalize(self, x, running_mean, running_var):
        if not (self.training and dist.is_initialized() and dist.get_world_size() > 1):
            return super()._normalize(x, running_mean, running_var)
        problem = self._input_problem(x)
        if problem is None and x.ndim > 3:
            problem = (f"batch_norm: expected a 2-D or 3-D input (N, C[, L]), got shape "
                       f"{tuple(x.shape)}")
        if not self._ranks_checked:     # once: the gathered rows must have one length
            description = {"num_features": self.num_features, "dtype": str(x.dtype)}
            dist.check_same_shapes(description, type(self).__name__, problem)
            self._ranks_checked = True
        elif problem is not None:
            raise ValueError(problem)
        if running_mean is not None:
            self.num_batches_tracked.array += 1
        return sync_batch_norm(x, running_mean, running_var, self.weight, self.bias,
                               self.momentum, self.eps, self.unbiased_batch_var)


class SyncBatchNorm(_Synced, _BatchNormBase):
    """BatchNorm1d over (N, C) or (N, C, L) whose training statistics are those of
    the global batch of every rank, as PyTorch's ``torch.nn.SyncBatchNorm``.

    ``process_group`` must be None: tinynet has one group, every rank of the
    launcher. Build it directly, or from a model with :meth:`convert_sync_batchnorm`.
    """

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float = 0.1,
                 affine: bool = True, track_running_stats: bool = True, process_group=None,
                 dtype=None, device="cpu"):
        _check_group(process_group)
        super().__init__(num_features, eps, momentum, affine, track_running_stats, False,
                         (num_features,), dtype, device)
        self.process_group = process_group

    def forward(self, x):
        """As BatchNorm1d's, input (N, C) or (N, C, L), output the same shape; in training
        the mean and variance are those of the global batch (all ranks' samples,
        combined by an all-reduce of their sums), and the backward all-reduces too.
        """
        return self._normalize(x, self.running_mean, self.running_var)

    @classmethod
    def convert_sync_batchnorm(cls, module, process_group=None):
        """``module`` with every BatchNorm1d replaced by a SyncBatchNorm and every
        StepwiseBatchNorm (the BN-LSTM's) by a SyncStepwiseBatchNorm, recursively.
        Each carries the original's parameters and buffers (the same tensors),
        hyper-parameters and training flag. A batch-norm ``module`` is itself converted."""
        _check_group(process_group)
        output = _synced_copy(module)
        for name, child in module.named_children():
            setattr(output, name, cls.convert_sync_batchnorm(child, process_group))
        return output


class SyncStepwiseBatchNorm(_Synced, StepwiseBatchNorm):
    """StepwiseBatchNorm (per-time-step running statistics, Cooijmans et al., 2016)
    whose training statistics at each step are those of the global batch."""

    def __init__(self, num_features: int, max_steps: int, eps: float = 1e-5,
                 momentum: float = 0.1, affine: bool = True, process_group=None, dtype=None,
                 device="cpu"):
        _check_group(process_group)
        super().__init__(num_features, max_steps, eps, momentum, affine, dtype, device)
        self.process_group = process_group


def _synced_copy(module):
    """The synced counterpart of a batch-norm ``module`` (sharing its tensors), or
    ``module`` itself when there is none."""
    if isinstance(module, _Synced):
        return module
    if isinstance(module, BatchNorm1d):
        synced = SyncBatchNorm(module.num_features, module.eps, module.momentum,
                               module.affine, module.track_running_stats)
    elif isinstance(module, StepwiseBatchNorm):
        synced = SyncStepwiseBatchNorm(module.num_features, module.max_steps, module.eps,
                                       module.momentum, module.affine)
    else:
        return module
    synced.unbiased_batch_var = module.unbiased_batch_var
    for name, param in module.named_parameters(recurse=False):
        synced.register_parameter(name, param)
    for name, buffer in module.named_buffers(recurse=False):
        synced.register_buffer(name, buffer)
    synced.train(module.training)
    return synced
