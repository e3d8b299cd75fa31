"""Which function runs each kernel: one table per device, a kernel's name to its function.

The CPU runs the other ops' compiled kernels (``ops/*_cpu.py``) and the norms of
its ladder's default rung (``ladder/__init__.py``); CUDA runs the norms of its own
ladder and, for the other ops, their specs, plain NumPy/CuPy array code
(``ops/*_spec.py``). ``tinynet.use_kernels(rung)`` builds the tables again with another
rung's norms; ``use_kernels("reference")`` puts every kernel's spec in. The
backends (``tinynet.backend.KernelTable``) hold what :func:`build` returns, and
:func:`which` says which function a kernel's name runs.
"""
from __future__ import annotations

from . import ladder

__all__ = ["build", "spec_kernels", "compiled_cpu_kernels", "norm_kernels", "which"]


def spec_kernels() -> dict:
    """Every kernel's spec: what the compiled kernels are tested against."""
    from .ops import (
        adam_spec,
        attention_heads_spec,
        attention_softmax_spec,
        batch_norm_spec,
        binary_spec,
        conv_spec,
        gelu_spec,
        lstm_spec,
        pointwise_spec,
        pooling_spec,
        rows_spec,
        scatter_spec,
    )
    return {
        "adam_step": adam_spec.adam_step,
        "gelu_forward": gelu_spec.gelu_forward,
        "gelu_backward": gelu_spec.gelu_backward,
        "attention_softmax_forward": attention_softmax_spec.attention_softmax_forward,
        "attention_softmax_backward": attention_softmax_spec.attention_softmax_backward,
        "attention_heads_forward": attention_heads_spec.attention_heads_forward,
        "attention_heads_backward": attention_heads_spec.attention_heads_backward,
        "sigmoid_forward": pointwise_spec.sigmoid_forward,
        "sigmoid_backward": pointwise_spec.sigmoid_backward,
        "silu_forward": pointwise_spec.silu_forward,
        "silu_backward": pointwise_spec.silu_backward,
        "tanh_backward": pointwise_spec.tanh_backward,
        "relu_forward": pointwise_spec.relu_forward,
        "relu_backward": pointwise_spec.relu_backward,
        "gelu_tanh_forward": pointwise_spec.gelu_tanh_forward,
        "gelu_tanh_backward": pointwise_spec.gelu_tanh_backward,
        "softmax_forward": rows_spec.softmax_forward,
        "softmax_backward": rows_spec.softmax_backward,
        "log_softmax_forward": rows_spec.log_softmax_forward,
        "log_softmax_backward": rows_spec.log_softmax_backward,
        "cross_entropy_forward": rows_spec.cross_entropy_forward,
        "cross_entropy_backward": rows_spec.cross_entropy_backward,
        "sum_last_axis": rows_spec.sum_last_axis,
        "sum_last_axis_of_product": rows_spec.sum_last_axis_of_product,
        "sum_last_axis_backward": rows_spec.sum_last_axis_backward,
        "add_bias": rows_spec.add_bias,
        "add_rows": scatter_spec.add_rows,
        "binary": binary_spec.binary,
        "lstm_cell_forward": lstm_spec.lstm_cell_forward,
        "lstm_output_backward": lstm_spec.lstm_output_backward,
        "lstm_cell_backward": lstm_spec.lstm_cell_backward,
        "lstm_columns_forward": lstm_spec.lstm_columns_forward,
        "lstm_columns_backward": lstm_spec.lstm_columns_backward,
        "max_pool_forward": pooling_spec.max_pool_forward,
        "max_pool_backward": pooling_spec.max_pool_backward,
        "batch_norm_statistics": batch_norm_spec.batch_norm_statistics,
        "batch_norm_forward": batch_norm_spec.batch_norm_forward,
        "batch_norm_backward": batch_norm_spec.batch_norm_backward,
        "im2col": conv_spec.im2col,
        "col2im": conv_spec.col2im,
        "swap_leading_axes": conv_spec.swap_leading_axes,
    }


def compiled_cpu_kernels() -> dict:
    """The CPU's compiled kernels of the ops beside the norms, by the same names."""
    from .ops import (
        adam_cpu,
        attention_heads_cpu,
        attention_softmax_cpu,
        batch_norm_cpu,
        binary_cpu,
        conv_cpu,
        gelu_cpu,
        lstm_cpu,
        pointwise_cpu,
        pooling_cpu,
        rows_cpu,
        scatter_cpu,
    )
    return {
        "adam_step": adam_cpu.adam_step,
        "gelu_forward": gelu_cpu.gelu_forward,
        "gelu_backward": gelu_cpu.gelu_backward,
        "attention_softmax_forward": attention_softmax_cpu.attention_softmax_forward,
        "attention_softmax_backward": attention_softmax_cpu.attention_softmax_backward,
        "attention_heads_forward": attention_heads_cpu.attention_heads_forward,
        "attention_heads_backward": attention_heads_cpu.attention_heads_backward,
        "sigmoid_forward": pointwise_cpu.sigmoid_forward,
        "sigmoid_backward": pointwise_cpu.sigmoid_backward,
        "silu_forward": pointwise_cpu.silu_forward,
        "silu_backward": pointwise_cpu.silu_backward,
        "tanh_backward": pointwise_cpu.tanh_backward,
        "relu_forward": pointwise_cpu.relu_forward,
        "relu_backward": pointwise_cpu.relu_backward,
        "gelu_tanh_forward": pointwise_cpu.gelu_tanh_forward,
        "gelu_tanh_backward": pointwise_cpu.gelu_tanh_backward,
        "softmax_forward": rows_cpu.softmax_forward,
        "softmax_backward": rows_cpu.softmax_backward,
        "log_softmax_forward": rows_cpu.log_softmax_forward,
        "log_softmax_backward": rows_cpu.log_softmax_backward,
        "cross_entropy_forward": rows_cpu.cross_entropy_forward,
        "cross_entropy_backward": rows_cpu.cross_entropy_backward,
        "sum_last_axis": rows_cpu.sum_last_axis,
        "sum_last_axis_of_product": rows_cpu.sum_last_axis_of_product,
        "sum_last_axis_backward": rows_cpu.sum_last_axis_backward,
        "add_bias": rows_cpu.add_bias,
        "add_rows": scatter_cpu.add_rows,
        "binary": binary_cpu.binary,
        "lstm_cell_forward": lstm_cpu.lstm_cell_forward,
        "lstm_output_backward": lstm_cpu.lstm_output_backward,
        "lstm_cell_backward": lstm_cpu.lstm_cell_backward,
        "lstm_columns_forward": lstm_cpu.lstm_columns_forward,
        "lstm_columns_backward": lstm_cpu.lstm_columns_backward,
        "max_pool_forward": pooling_cpu.max_pool_forward,
        "max_pool_backward": pooling_cpu.max_pool_backward,
        "batch_norm_statistics": batch_norm_cpu.batch_norm_statistics,
        "batch_norm_forward": batch_norm_cpu.batch_norm_forward,
        "batch_norm_backward": batch_norm_cpu.batch_norm_backward,
        "im2col": conv_cpu.im2col,
        "col2im": conv_cpu.col2im,
        "swap_leading_axes": conv_cpu.swap_leading_axes,
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
        'tinynet.kernels.ops.adam_cpu'
    """
    from tinynet.backend import get_backend
    return getattr(get_backend(device).kernels, name)
