"""Which function runs each kernel: one table per device, a kernel's name to its function.

The CPU runs the compiled kernels (the ``cpu_*`` modules) and the norms of its
ladder's default rung (ladder.py); CUDA runs the norms of its own ladder and, for
the other ops, their specs, plain NumPy/CuPy array code (the ``reference*``
modules). ``tinynet.use_kernels(rung)`` builds the tables again with another
rung's norms; ``use_kernels("reference")`` puts every kernel's spec in. The
backends (``tinynet.backend.KernelTable``) hold what :func:`build` returns, and
:func:`which` says which function a kernel's name runs.
"""
from __future__ import annotations

from . import ladder

__all__ = ["build", "spec_kernels", "compiled_cpu_kernels", "norm_kernels", "which"]


def spec_kernels() -> dict:
    """Every kernel's spec: what the compiled kernels are tested against."""
    from . import reference, reference_batch_norm, reference_conv, reference_pooling
    return {
        "adam_step": reference.adam_step,
        "gelu_forward": reference.gelu_forward,
        "gelu_backward": reference.gelu_backward,
        "attention_softmax_forward": reference.attention_softmax_forward,
        "attention_softmax_backward": reference.attention_softmax_backward,
        "attention_heads_forward": reference.attention_heads_forward,
        "attention_heads_backward": reference.attention_heads_backward,
        "sigmoid_forward": reference.sigmoid_forward,
        "sigmoid_backward": reference.sigmoid_backward,
        "silu_forward": reference.silu_forward,
        "silu_backward": reference.silu_backward,
        "tanh_backward": reference.tanh_backward,
        "relu_forward": reference.relu_forward,
        "relu_backward": reference.relu_backward,
        "gelu_tanh_forward": reference.gelu_tanh_forward,
        "gelu_tanh_backward": reference.gelu_tanh_backward,
        "softmax_forward": reference.softmax_forward,
        "softmax_backward": reference.softmax_backward,
        "log_softmax_forward": reference.log_softmax_forward,
        "log_softmax_backward": reference.log_softmax_backward,
        "cross_entropy_forward": reference.cross_entropy_forward,
        "cross_entropy_backward": reference.cross_entropy_backward,
        "sum_last_axis": reference.sum_last_axis,
        "sum_last_axis_backward": reference.sum_last_axis_backward,
        "add_bias": reference.add_bias,
        "add_rows": reference.add_rows,
        "max_pool_forward": reference_pooling.max_pool_forward,
        "max_pool_backward": reference_pooling.max_pool_backward,
        "batch_norm_statistics": reference_batch_norm.batch_norm_statistics,
        "batch_norm_forward": reference_batch_norm.batch_norm_forward,
        "batch_norm_backward": reference_batch_norm.batch_norm_backward,
        "im2col": reference_conv.im2col,
        "col2im": reference_conv.col2im,
        "swap_leading_axes": reference_conv.swap_leading_axes,
    }


def compiled_cpu_kernels() -> dict:
    """The CPU's compiled kernels of the ops beside the norms, by the same names."""
    from . import (
        cpu_adam,
        cpu_attention,
        cpu_batch_norm,
        cpu_conv,
        cpu_gelu,
        cpu_pointwise,
        cpu_pooling,
        cpu_rows,
        cpu_scatter,
        cpu_softmax,
    )
    return {
        "adam_step": cpu_adam.adam_step,
        "gelu_forward": cpu_gelu.gelu_forward,
        "gelu_backward": cpu_gelu.gelu_backward,
        "attention_softmax_forward": cpu_softmax.attention_softmax_forward,
        "attention_softmax_backward": cpu_softmax.attention_softmax_backward,
        "attention_heads_forward": cpu_attention.attention_heads_forward,
        "attention_heads_backward": cpu_attention.attention_heads_backward,
        "sigmoid_forward": cpu_pointwise.sigmoid_forward,
        "sigmoid_backward": cpu_pointwise.sigmoid_backward,
        "silu_forward": cpu_pointwise.silu_forward,
        "silu_backward": cpu_pointwise.silu_backward,
        "tanh_backward": cpu_pointwise.tanh_backward,
        "relu_forward": cpu_pointwise.relu_forward,
        "relu_backward": cpu_pointwise.relu_backward,
        "gelu_tanh_forward": cpu_pointwise.gelu_tanh_forward,
        "gelu_tanh_backward": cpu_pointwise.gelu_tanh_backward,
        "softmax_forward": cpu_rows.softmax_forward,
        "softmax_backward": cpu_rows.softmax_backward,
        "log_softmax_forward": cpu_rows.log_softmax_forward,
        "log_softmax_backward": cpu_rows.log_softmax_backward,
        "cross_entropy_forward": cpu_rows.cross_entropy_forward,
        "cross_entropy_backward": cpu_rows.cross_entropy_backward,
        "sum_last_axis": cpu_rows.sum_last_axis,
        "sum_last_axis_backward": cpu_rows.sum_last_axis_backward,
        "add_bias": cpu_rows.add_bias,
        "add_rows": cpu_scatter.add_rows,
        "max_pool_forward": cpu_pooling.max_pool_forward,
        "max_pool_backward": cpu_pooling.max_pool_backward,
        "batch_norm_statistics": cpu_batch_norm.batch_norm_statistics,
        "batch_norm_forward": cpu_batch_norm.batch_norm_forward,
        "batch_norm_backward": cpu_batch_norm.batch_norm_backward,
        "im2col": cpu_conv.im2col,
        "col2im": cpu_conv.col2im,
        "swap_leading_axes": cpu_conv.swap_leading_axes,
    }


def norm_kernels(device: str, rung: str) -> dict:
    """LayerNorm's and RMSNorm's four kernels on rung ``rung`` of ``device``'s ladder
    (a kernel the rung lacks is the nearest rung's below; ValueError for a rung the
    device does not have)."""
    return {name: ladder.kernel_function(device, rung, name) for name in ladder.NORM_KERNELS}


def build(device: str, rung: str | None = None) -> dict:
    """The table of ``device`` ("cpu" or "cuda") with the norms of ``rung`` (None: the
    device's default rung; "reference": every kernel's spec)."""
    rung = rung or ladder.DEFAULT[device]
    if rung == "reference":
        return {**spec_kernels(), **norm_kernels(device, rung)}
    others = compiled_cpu_kernels() if device == "cpu" else spec_kernels()
    return {**others, **norm_kernels(device, rung)}


def which(name: str, device: str = "cpu"):
    """The function that runs kernel ``name`` on ``device`` now (under the rung that
    ``tinynet.use_kernels`` chose, else the device's default)::

        >>> tinynet.kernels.which("adam_step").__module__
        'tinynet.kernels.cpu_adam'
    """
    from tinynet.backend import get_backend
    return getattr(get_backend(device).kernels, name)
