"""Matrix products: ``matmul`` (NumPy's rules, batched) and the fused ``linear``."""
from __future__ import annotations

from ..autograd import Function, unbroadcast
from ..backend import get_array_module, kernels_for
from .elementwise import operand

__all__ = ["matmul", "linear", "mm", "bmm", "mv", "dot", "outer"]

FEW_ROWS = 32


def _swap_last(a):
    return a.swapaxes(-1, -2)


class Matmul(Function):
    """a @ b with NumPy's rules: 1-D operands are promoted to a row (a) or a
    column (b) for the product, leading (batch) axes broadcast.

    With C = A B: dA = dC Bᵀ and dB = Aᵀ dC, each summed over broadcast batch axes.
    """

    @staticmethod
    def forward(ctx, a, b):
        if a.ndim == 0 or b.ndim == 0:
            raise ValueError("matmul: both operands need at least one dimension")
        inner_a = a.shape[-1]
        inner_b = b.shape[0] if b.ndim == 1 else b.shape[-2]
        if inner_a != inner_b:
            raise ValueError(
                f"matmul: shapes {tuple(a.shape)} and {tuple(b.shape)} are not aligned "
                f"({inner_a} != {inner_b})")
        ctx.save_for_backward(a, b)
        try:
            return a @ b
        except ValueError:
            raise ValueError(
                f"matmul: batch dimensions of {tuple(a.shape)} and {tuple(b.shape)} "
                "cannot be broadcast together") from None

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved
        if a.ndim == 1 and b.ndim == 1:                 # a dot product
            return grad * b, grad * a
        a2 = a[None, :] if a.ndim == 1 else a          # (…, n, k)
        b2 = b[:, None] if b.ndim == 1 else b          # (…, k, m)
        if a.ndim == 1:
            grad = grad[..., None, :]
        if b.ndim == 1:
            grad = grad[..., None]
        grad_a = grad_b = None
        if ctx.needs_input_grad(0):
            grad_a = unbroadcast(grad @ _swap_last(b2), a2.shape).reshape(a.shape)
        if ctx.needs_input_grad(1):
            grad_b = unbroadcast(_swap_last(a2) @ grad, b2.shape).reshape(b.shape)
        return grad_a, grad_b


class Linear(Function):
    """y = x Wᵀ + b in one node (W has shape (out, in), as in PyTorch).

    dx = dy W, dW = dyᵀ x, db = Σ_rows dy; leading axes of x are batch axes.
    """

    backward_reads_output = False

    @staticmethod
    def forward(ctx, x, weight, bias):
        if x.ndim == 0 or x.shape[-1] != weight.shape[1]:
            raise ValueError(
                f"linear: input of shape {tuple(x.shape)} does not match weight of "
                f"shape {tuple(weight.shape)} (expected last input dimension "
                f"{weight.shape[1]})")
        ctx.save_for_backward(x, weight)
        ctx.has_bias = bias is not None
        rows = x.reshape(-1, x.shape[-1])
        if rows.shape[0] <= FEW_ROWS:      # BLAS runs x Wᵀ at half speed for few rows;
            out = (weight @ rows.T).T      # (W xᵀ)ᵀ is the same product, untransposed W
        else:
            out = rows @ weight.T
        if bias is not None:
            out = kernels_for(out).add_bias(out, bias)
        return out.reshape(x.shape[:-1] + (weight.shape[0],))

    @staticmethod
    def backward(ctx, grad):
        x, weight = ctx.saved
        grad, x, order = _leading_axes_as_stored(grad, x)
        grad2 = grad.reshape(-1, grad.shape[-1])
        grad_x = None
        if ctx.needs_input_grad(0):      # one 2-D product: NumPy loops a 3-D one over its batch
            grad_x = (grad2 @ weight).reshape(x.shape)
            grad_x = grad_x if order is None else grad_x.transpose(order)
        grad_w = grad2.T @ x.reshape(-1, x.shape[-1]) if ctx.needs_input_grad(1) else None
        grad_b = None
        if ctx.has_bias and ctx.needs_input_grad(2):
            # Σ_rows dy as 1ᵀ dy: BLAS's matrix-vector product is faster than sum(axis=0)
            grad_b = get_array_module(grad2).ones(grad2.shape[0], grad2.dtype) @ grad2
        return grad_x, grad_w, grad_b


def _leading_axes_as_stored(grad, x):
    """``(grad, x, order)``, where ``grad``'s rows lie in memory in another order of its
    leading axes than its shape's and it is the wider of the two (an RNN's input gates
    come back time-major for a batch-first input): both with their leading axes in that
    order, so that ``grad`` reshapes to rows without a copy and ``x``, the narrower,
    is copied instead; ``order`` puts a gradient of x back. Otherwise ``order`` is None."""
    if grad.ndim < 3 or grad.flags.c_contiguous or grad.shape[-1] <= x.shape[-1]:
        return grad, x, None
    leading = sorted(range(grad.ndim - 1), key=lambda axis: -grad.strides[axis])
    axes = (*leading, grad.ndim - 1)
    stored = grad.transpose(axes)
    if not stored.flags.c_contiguous:
        return grad, x, None
    return stored, x.transpose(axes), tuple(sorted(range(len(axes)), key=axes.__getitem__))


def matmul(a, b):
    """The matrix product ``a @ b`` with ``torch.matmul``'s rules: 1-D · 1-D is a dot
    product, a 1-D operand is a row (or column) that is dropped from the result, and
    leading dims broadcast as a batch: (*, n, k) @ (*, k, m) -> (*, n, m).
    """
    return Matmul.apply(operand(a), operand(b))


def linear(x, weight, bias=None):
    """``x @ weight.T + bias``, as ``torch.nn.functional.linear``."""
    return Linear.apply(x, weight, bias)


def _check_dims(name, tensors, dims):
    for which, (x, n) in zip(("self", "other"), zip(tensors, dims, strict=True), strict=True):
        if x.ndim != n:
            raise ValueError(f"{name}: {which} must have {n} dims, got shape {tuple(x.shape)}")


def mm(input, mat2):
    """The product of two matrices, (n, m) @ (m, p) -> (n, p), as ``torch.mm`` (no
    broadcasting: both must be 2-D)."""
    _check_dims("mm", (input, mat2), (2, 2))
    return matmul(input, mat2)


def bmm(input, mat2):
    """Batched matrix products, (b, n, m) @ (b, m, p) -> (b, n, p), as ``torch.bmm``
    (no broadcasting: both 3-D, one batch size)."""
    _check_dims("bmm", (input, mat2), (3, 3))
    if input.shape[0] != mat2.shape[0]:
        raise ValueError(f"bmm: batch sizes {input.shape[0]} and {mat2.shape[0]} differ")
    return matmul(input, mat2)


def mv(input, vec):
    """A matrix times a vector, (n, m) @ (m,) -> (n,), as ``torch.mv``."""
    _check_dims("mv", (input, vec), (2, 1))
    return matmul(input, vec)


def dot(input, other):
    """The dot product of two 1-D tensors of one length (a 0-d tensor), as ``torch.dot``."""
    _check_dims("dot", (input, other), (1, 1))
    return matmul(input, other)


def outer(input, vec2):
    """The outer product of two 1-D tensors, (n,) and (m,) -> (n, m): each pair's
    product, as ``torch.outer``."""
    _check_dims("outer", (input, vec2), (1, 1))
    return input.reshape(-1, 1) * vec2.reshape(1, -1)
