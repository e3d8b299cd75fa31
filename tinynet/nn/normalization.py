"""LayerNorm, RMSNorm, GroupNorm, InstanceNorm, BatchNorm1d/2d, and batch norm with
per-time-step statistics."""
from __future__ import annotations

import numbers

from .. import creation
from ..hyperparameters import check_count, check_real
from . import functional as F
from .module import Module, Parameter

__all__ = ["LayerNorm", "RMSNorm", "GroupNorm", "InstanceNorm1d", "InstanceNorm2d",
           "BatchNorm1d", "BatchNorm2d", "StepwiseBatchNorm"]


class LayerNorm(Module):
    """Layer normalization (Ba, Kiros & Hinton, 2016, Eq. 4).

    Each sample is normalized over its trailing ``normalized_shape`` dims by
    its own mean and (biased) variance, ε inside the square root, then
    scaled by ``weight`` (init 1) and shifted by ``bias`` (init 0; none with
    ``bias=False``, as GPT-style models often use). The
    computation never looks across the batch: training and inference agree,
    and batch size 1 works.
    """

    def __init__(self, normalized_shape, eps: float = 1e-5, elementwise_affine: bool = True,
                 bias: bool = True, dtype=None, device="cpu"):
        super().__init__()
        if isinstance(normalized_shape, numbers.Integral):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(int(n) for n in normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            shape = self.normalized_shape
            self.weight = Parameter(creation.ones(shape, dtype=dtype, device=device))
        else:
            self.register_parameter("weight", None)
        if elementwise_affine and bias:
            self.bias = Parameter(creation.zeros(shape, dtype=dtype, device=device))
        else:
            self.register_parameter("bias", None)

    def forward(self, x):
        """The paper's Eq. 4 on each sample: over the trailing ``normalized_shape`` dims,
        μ = mean(x) and σ² = mean((x − μ)²) (biased), y = (x − μ) / √(σ² + ε) · weight +
        bias. Input (*, *normalized_shape), output the same shape and dtype.
        """
        return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}")


class RMSNorm(Module):
    """Root mean square layer normalization (Zhang & Sennrich, 2019), as PyTorch's.

    Each sample is divided by the root mean square of its trailing
    ``normalized_shape`` dims, ε inside the square root (``eps=None``: the
    machine epsilon of the input's dtype), then scaled by ``weight`` (init 1).
    LayerNorm without the mean: no re-centering, no bias.
    """

    def __init__(self, normalized_shape, eps=None, elementwise_affine: bool = True,
                 device=None, dtype=None):
        super().__init__()
        if not isinstance(normalized_shape, (tuple, list)):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(check_count("RMSNorm", "normalized_shape", n)
                                      for n in normalized_shape)
        self.eps = None if eps is None else check_real("RMSNorm", "eps", eps, low=0)
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(creation.ones(self.normalized_shape, dtype=dtype,
                                                  device=device))
        else:
            self.register_parameter("weight", None)

    def forward(self, x):
        """y = x / √(mean(x²) + ε) · weight over the trailing ``normalized_shape`` dims of each
        sample. Input (*, *normalized_shape), output the same shape and dtype.
        """
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self):
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}")


class GroupNorm(Module):
    """Group normalization (Wu & He, 2018) of (N, C, *spatial), as PyTorch's.

    Each sample's channels split into ``num_groups`` groups, each normalized
    over its own C/G·H·W values (the LayerNorm row kernel), then a per-channel
    ``weight`` (init 1) and ``bias`` (init 0). Like LayerNorm it never looks
    across the batch: ``GroupNorm(1, C)`` is LayerNorm over (C, H, W) with a
    per-channel affine, ``GroupNorm(C, C)`` is InstanceNorm.
    """

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5,
                 affine: bool = True, device="cpu", dtype=None):
        super().__init__()
        self.num_groups = check_count("GroupNorm", "num_groups", num_groups)
        self.num_channels = check_count("GroupNorm", "num_channels", num_channels)
        if num_channels % num_groups:
            raise ValueError(f"GroupNorm: num_channels ({num_channels}) must be divisible "
                             f"by num_groups ({num_groups})")
        self.eps = check_real("GroupNorm", "eps", eps, low=0)
        self.affine = affine
        if affine:
            self.weight = Parameter(creation.ones(num_channels, dtype=dtype, device=device))
            self.bias = Parameter(creation.zeros(num_channels, dtype=dtype, device=device))
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def forward(self, x):
        """Input (N, C, *spatial), output the same shape: each sample's C channels in
        ``num_groups`` groups, each group normalized by its own mean and biased variance,
        then ``weight`` and ``bias`` per channel.
        """
        if x.ndim < 2 or x.shape[1] != self.num_channels:
            raise ValueError(f"GroupNorm({self.num_groups}, {self.num_channels}): expected "
                             f"input (N, {self.num_channels}, *spatial), got shape "
                             f"{tuple(x.shape)}")
        return F.group_norm(x, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}"


class _BatchNormBase(Module):
    """Parameters and buffers shared by the batch- and instance-norm modules."""

    spatial_dims = (0, 1)       # the input's dims after (N, C) that the layer accepts

    def __init__(self, num_features, eps, momentum, affine, track_running_stats,
                 unbiased_batch_var, stats_shape, dtype, device):
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        self.unbiased_batch_var = unbiased_batch_var
        if affine:
            self.weight = Parameter(creation.ones(num_features, dtype=dtype, device=device))
            self.bias = Parameter(creation.zeros(num_features, dtype=dtype, device=device))
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean",
                                 creation.zeros(stats_shape, dtype=dtype, device=device))
            self.register_buffer("running_var",
                                 creation.ones(stats_shape, dtype=dtype, device=device))
            self.register_buffer("num_batches_tracked",
                                 creation.tensor(0, dtype="int64", device=device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)

    def _input_problem(self, x):
        """What is wrong with input ``x`` for this layer, or None."""
        if x.ndim - 2 not in self.spatial_dims or x.shape[1] != self.num_features:
            expected = " or ".join(f"{2 + d}-D" for d in self.spatial_dims)
            return (f"{type(self).__name__}({self.num_features}): expected a {expected} "
                    f"input (N, {self.num_features}, ...), got shape {tuple(x.shape)}")
        return None

    def _normalize(self, x, running_mean, running_var):
        problem = self._input_problem(x)
        if problem is not None:
            raise ValueError(problem)
        use_batch_stats = self.training or running_mean is None
        if self.training and running_mean is not None:
            self.num_batches_tracked.array += 1
        return F.batch_norm(x, running_mean, running_var, self.weight, self.bias,
                            training=use_batch_stats, momentum=self.momentum, eps=self.eps,
                            unbiased_batch_var=self.unbiased_batch_var)

    def extra_repr(self):
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, track_running_stats={self.track_running_stats}")


class BatchNorm1d(_BatchNormBase):
    """Batch normalization over (N, C) or (N, C, L) inputs, as PyTorch's.

    Training normalizes each channel by the batch's mean and biased variance
    (``unbiased_batch_var=True`` uses the unbiased one, as the LayerNorm paper
    did for its small-batch runs) and keeps running averages, with the
    unbiased variance, for eval mode.
    """

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float = 0.1,
                 affine: bool = True, track_running_stats: bool = True,
                 unbiased_batch_var: bool = False, dtype=None, device="cpu"):
        super().__init__(num_features, eps, momentum, affine, track_running_stats,
                         unbiased_batch_var, (num_features,), dtype, device)

    def forward(self, x):
        """y = (x − E[x]) / √(Var[x] + ε) · weight + bias per channel, input (N, C) or (N, C,
        L) (BatchNorm2d: (N, C, H, W)), output the same shape (the paper's Eq. 3 for batch
        norm). Training: the batch's statistics over every dim but C, and running_stat ←
        (1 − momentum) · running_stat + momentum · batch_stat; eval: the running ones.
        """
        return self._normalize(x, self.running_mean, self.running_var)


class BatchNorm2d(BatchNorm1d):
    """Batch normalization of (N, C, H, W), as PyTorch's: each channel normalized
    over the batch and the image positions, N·H·W values."""

    spatial_dims = (2,)


class _InstanceNorm(_BatchNormBase):
    """Instance normalization (Ulyanov et al., 2016), PyTorch's defaults: no affine
    and no running statistics, so training and eval agree. (As PyTorch,
    ``num_batches_tracked`` stays 0: the running averages use ``momentum`` only.)"""

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float = 0.1,
                 affine: bool = False, track_running_stats: bool = False, device="cpu",
                 dtype=None):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, False,
                         (num_features,), dtype, device)

    def forward(self, x):
        """Input (N, C, L) (InstanceNorm1d) or (N, C, H, W) (InstanceNorm2d), output the same
        shape: each channel of each sample normalized by its own mean and biased variance
        over its positions.
        """
        problem = self._input_problem(x)
        if problem is not None:
            raise ValueError(problem)
        use_input_stats = self.training or self.running_mean is None
        return F.instance_norm(x, self.running_mean, self.running_var, self.weight,
                               self.bias, use_input_stats, self.momentum, self.eps)


class InstanceNorm1d(_InstanceNorm):
    """Instance normalization of (N, C, L): each channel of each sample over its L values."""

    spatial_dims = (1,)


class InstanceNorm2d(_InstanceNorm):
    """Instance normalization of (N, C, H, W): each channel of each sample over its
    H·W values (``GroupNorm(C, C)`` without the affine)."""

    spatial_dims = (2,)


class StepwiseBatchNorm(_BatchNormBase):
    """Batch norm with separate running statistics for each time step.

    Recurrent batch normalization (Cooijmans et al., 2016) keeps statistics
    per step t < ``max_steps`` (buffers of shape (max_steps, C)); later steps
    reuse the last step's statistics. Gain and bias are shared over time.
    """

    def __init__(self, num_features: int, max_steps: int, eps: float = 1e-5,
                 momentum: float = 0.1, affine: bool = True, dtype=None, device="cpu"):
        max_steps = check_count("StepwiseBatchNorm", "max_steps", max_steps)
        super().__init__(num_features, eps, momentum, affine, True, False,
                         (max_steps, num_features), dtype, device)
        self.max_steps = max_steps

    def forward(self, x, step: int):
        """Batch norm of the (N, C) input of time step ``step``, with that step's running
        statistics (the last ones for steps past ``max_steps``); output (N, C).
        """
        row = min(step, self.max_steps - 1)
        return self._normalize(x, self.running_mean[row], self.running_var[row])

    def extra_repr(self):
        return super().extra_repr() + f", max_steps={self.max_steps}"
