"""LayerNorm, RMSNorm, BatchNorm1d, and batch norm with per-time-step statistics."""
from __future__ import annotations

import numbers

from .. import creation
from ..hyperparameters import check_count, check_real
from . import functional as F
from .module import Module, Parameter

__all__ = ["LayerNorm", "RMSNorm", "BatchNorm1d", "StepwiseBatchNorm"]


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
                                                  device="cpu" if device is None else device))
        else:
            self.register_parameter("weight", None)

    def forward(self, x):
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self):
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}")


class _BatchNormBase(Module):
    """Parameters and buffers shared by the batch-norm modules."""

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
        if x.ndim < 2 or x.shape[1] != self.num_features:
            return (f"{type(self).__name__}({self.num_features}): expected input (N, "
                    f"{self.num_features}[, L]), got shape {tuple(x.shape)}")
        return None

    def _normalize(self, x, running_mean, running_var):
        problem = self._input_problem(x)
        if problem is not None:
            raise ValueError(problem)
        use_batch_stats = self.training or running_mean is None
        if self.training and running_mean is not None:
            self.num_batches_tracked.data += 1
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
        return self._normalize(x, self.running_mean, self.running_var)


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
        row = min(step, self.max_steps - 1)
        return self._normalize(x, self.running_mean[row], self.running_var[row])

    def extra_repr(self):
        return super().extra_repr() + f", max_steps={self.max_steps}"
