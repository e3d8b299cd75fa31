"""Layer, RMS and batch normalization as single fused graph nodes.

LayerNorm and BatchNorm normalize x to x̂ = (x − μ)/σ and return y = γ x̂ + β;
they differ only in *which* elements share μ and σ (Ba, Kiros & Hinton, 2016, Eqs. 2-4):

* LayerNorm: the H features of one sample (a row) — each sample on its own;
* BatchNorm: one feature across the samples of the batch (a column).

Their backward passes are the same formula along the normalized axis,
with g = dy · γ and m values sharing one mean::

    dx = (1/σ) · (g − mean(g) − x̂ · Σ(g x̂) / (m − correction))

(correction = 0 for the biased variance of the paper; 1 for the unbiased one).
RMSNorm (Zhang & Sennrich, 2019) is LayerNorm without the mean: x̂ = x / rms(x),
so its backward loses the mean(g) term. LayerNorm and RMSNorm run through the
device's kernel table, whose NumPy reference is ``tinynet.kernels.ladder.reference``;
BatchNorm too, whose spec is ``tinynet.kernels.ops.batch_norm_spec``.

GroupNorm (Wu & He, 2018) is LayerNorm on other rows: sample n's channels split
into G groups, and each group's C/G·H·W values are one row of the LayerNorm
kernel. G = 1 is LayerNorm over (C, H, W), G = C is InstanceNorm. The affine
step is per channel (γ_c, β_c), not per element, so it is applied after the
kernel, and its gradient g = dy · γ_c goes into the kernel's backward.
"""
from __future__ import annotations

import math

from ..autograd import Function
from ..backend import get_array_module, kernels_for

__all__ = ["LayerNormFunction", "RMSNormFunction", "GroupNormFunction", "BatchNormFunction"]


def _nothing_to_normalize(ctx, xp, x, dtype, *parameters):
    """The output of an input with no elements, which PyTorch returns too: an empty
    array; ``ctx.empty`` makes the backward give x's and the parameters' zeros."""
    ctx.empty = (x.shape,) + tuple(None if p is None else p.shape for p in parameters)
    return xp.empty(x.shape, dtype)


def _zero_gradients(ctx, xp, grad, trailing):
    """The backward of :func:`_nothing_to_normalize`: zeros of each input's shape,
    then ``trailing`` Nones for the non-tensor arguments."""
    zeros = tuple(None if shape is None else xp.zeros(shape, grad.dtype) for shape in ctx.empty)
    return zeros + (None,) * trailing


class LayerNormFunction(Function):
    """y = γ · (x − μ)/σ + β with μ, σ over the trailing ``size`` elements of x.

    Inputs of different float dtypes are computed in the wider one, as every
    other op promotes (a float64 batch through a float32 layer gives float64);
    the engine casts each gradient back to its input's dtype.
    """

    @staticmethod
    def forward(ctx, x, gain, bias, size, eps):
        kernels = kernels_for(x)
        xp = get_array_module(x)
        dtype = xp.result_type(*(a for a in (x, gain, bias) if a is not None))
        ctx.empty = None
        if x.size == 0:
            return _nothing_to_normalize(ctx, xp, x, dtype, gain, bias)
        rows = xp.ascontiguousarray(x.reshape(-1, size), dtype=dtype)
        flat_gain = None if gain is None else gain.reshape(size).astype(dtype, copy=False)
        flat_bias = None if bias is None else bias.reshape(size).astype(dtype, copy=False)
        y, mean, rstd = kernels.layer_norm_forward(rows, flat_gain, flat_bias, eps)
        ctx.save_for_backward(rows, mean, rstd, flat_gain)
        ctx.shapes = (x.shape, None if gain is None else gain.shape,
                      None if bias is None else bias.shape)
        return y.reshape(x.shape)

    @staticmethod
    def backward(ctx, grad):
        if ctx.empty:
            return _zero_gradients(ctx, get_array_module(grad), grad, 2)
        rows, mean, rstd, gain = ctx.saved
        x_shape, gain_shape, bias_shape = ctx.shapes
        kernels = kernels_for(rows)
        grad_rows = get_array_module(grad).ascontiguousarray(grad.reshape(rows.shape))
        dx, dgain, dbias = kernels.layer_norm_backward(grad_rows, rows, mean, rstd, gain)
        return (dx.reshape(x_shape),
                None if gain_shape is None else dgain.reshape(gain_shape),
                None if bias_shape is None else dbias.reshape(bias_shape),
                None, None)


class RMSNormFunction(Function):
    """y = γ · x / sqrt(mean(x²) + ε) over the trailing ``size`` elements of x.

    Rows, dtype promotion and saved statistics as in :class:`LayerNormFunction`.
    """

    @staticmethod
    def forward(ctx, x, gain, size, eps):
        kernels = kernels_for(x)
        xp = get_array_module(x)
        dtype = xp.result_type(*(a for a in (x, gain) if a is not None))
        ctx.empty = None
        if x.size == 0:
            return _nothing_to_normalize(ctx, xp, x, dtype, gain)
        rows = xp.ascontiguousarray(x.reshape(-1, size), dtype=dtype)
        flat_gain = None if gain is None else gain.reshape(size).astype(dtype, copy=False)
        y, rstd = kernels.rms_norm_forward(rows, flat_gain, eps)
        ctx.save_for_backward(rows, rstd, flat_gain)
        ctx.shapes = (x.shape, None if gain is None else gain.shape)
        return y.reshape(x.shape)

    @staticmethod
    def backward(ctx, grad):
        if ctx.empty:
            return _zero_gradients(ctx, get_array_module(grad), grad, 2)
        rows, rstd, gain = ctx.saved
        x_shape, gain_shape = ctx.shapes
        kernels = kernels_for(rows)
        grad_rows = get_array_module(grad).ascontiguousarray(grad.reshape(rows.shape))
        dx, dgain = kernels.rms_norm_backward(grad_rows, rows, rstd, gain)
        return (dx.reshape(x_shape),
                None if gain_shape is None else dgain.reshape(gain_shape),
                None, None)


class GroupNormFunction(Function):
    """y = γ_c · x̂ + β_c, x̂ normalized over each of the ``groups`` channel groups
    of each sample of x (N, C, *spatial), by the LayerNorm row kernel.

    A group of equal values has σ = 0, and with eps = 0 its x̂ = 0/0 is NaN, as
    in PyTorch's group_norm; ``constant_to_zero`` makes it 0 with a zero
    gradient instead (1/σ taken as 0), as PyTorch's instance_norm does.
    """

    @staticmethod
    def forward(ctx, x, gain, bias, groups, eps, constant_to_zero):
        kernels = kernels_for(x)
        xp = get_array_module(x)
        dtype = xp.result_type(*(a for a in (x, gain, bias) if a is not None))
        ctx.empty = None
        if x.size == 0:
            return _nothing_to_normalize(ctx, xp, x, dtype, gain, bias)
        n, channels = x.shape[:2]
        positions = math.prod(x.shape[2:])
        rows = xp.ascontiguousarray(x.reshape(n * groups, channels // groups * positions),
                                    dtype=dtype)
        x_hat, mean, rstd = kernels.layer_norm_forward(rows, None, None, eps)
        if constant_to_zero:
            constant = xp.isinf(rstd)                      # σ = 0, and eps = 0
            rstd[constant] = 0
            x_hat[constant] = 0
        per_channel = x_hat.reshape(n, channels, positions)
        y = per_channel if gain is None else per_channel * gain.reshape(-1, 1)
        y = y if bias is None else y + bias.reshape(-1, 1)
        ctx.save_for_backward(rows, mean, rstd, per_channel, gain)
        ctx.has_bias = bias is not None
        return y.reshape(x.shape)

    @staticmethod
    def backward(ctx, grad):
        if ctx.empty:
            return _zero_gradients(ctx, get_array_module(grad), grad, 3)
        rows, mean, rstd, x_hat, gain = ctx.saved
        kernels = kernels_for(rows)
        xp = get_array_module(grad)
        dy = grad.reshape(x_hat.shape)
        dgain = None if gain is None else (dy * x_hat).sum(axis=(0, 2))
        dbias = dy.sum(axis=(0, 2)) if ctx.has_bias else None
        g = dy if gain is None else dy * gain.reshape(-1, 1)
        dx, _, _ = kernels.layer_norm_backward(
            xp.ascontiguousarray(g.reshape(rows.shape), dtype=rows.dtype), rows, mean, rstd,
            None)
        return dx.reshape(grad.shape), dgain, dbias, None, None, None


class BatchNormFunction(Function):
    """Normalize each channel (axis 1 of (N, C, *spatial)) by ``mean``/``var``, by
    the backend's kernels (``batch_norm_forward``, ``batch_norm_backward``; the spec
    in kernels/ops/batch_norm_spec.py, compiled loops on the CPU in
    kernels/ops/batch_norm_cpu.py).

    ``dof`` says where the statistics came from. ``None``: they are constants
    (running statistics in eval mode), and the op is a per-channel affine map.
    A number: they are this batch's statistics, ``var`` = Σ(x − μ)² / dof, and
    the backward differentiates through them.
    """

    @staticmethod
    def forward(ctx, x, gain, bias, mean, var, eps, dof):
        y, rstd = kernels_for(x).batch_norm_forward(x, gain, bias, mean,
                                                                       var, eps)
        ctx.save_for_backward(x, mean.copy(), rstd, gain)   # mean may be a running buffer
        ctx.meta = (dof, bias is not None)
        return y

    @staticmethod
    def backward(ctx, grad):
        x, mean, rstd, gain = ctx.saved
        dof, has_bias = ctx.meta
        dx, dgain, dbias = kernels_for(x).batch_norm_backward(
            grad, x, mean, rstd, gain, has_bias, dof)
        return dx, dgain, dbias, None, None, None, None
