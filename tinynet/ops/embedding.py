"""Integer class indices as vectors: embedding (a table lookup) and one_hot.

``embedding(indices, weight)[..., :] = weight[indices[...], :]``: the forward
reads rows of the table, and the backward adds each output gradient into the
row it was read from (a row read twice gets both gradients). ``one_hot`` is
the same lookup in the identity matrix, with no gradient.
"""
from __future__ import annotations

import numpy as np

from ..autograd import Function
from ..backend import add_rows, as_numpy, get_array_module, get_backend
from ..hyperparameters import check_count
from ..tensor import Tensor

__all__ = ["embedding", "one_hot"]


def index_array(indices, where: str, device: str = "cpu"):
    """The array of integer indices behind a Tensor or array, on ``device``."""
    array = indices.array if isinstance(indices, Tensor) else indices
    array = get_backend(device).asarray(array)
    if array.dtype.kind not in "iu":
        raise TypeError(f"{where}: expected a tensor of integer indices, got dtype {array.dtype}")
    return array


def normalize_padding_idx(where: str, padding_idx, num_embeddings: int):
    """``padding_idx`` in [0, num_embeddings) (a negative one counts from the end,
    as in PyTorch), or None."""
    if padding_idx is None:
        return None
    check_count(where, "padding_idx", padding_idx, low=-num_embeddings)
    if padding_idx >= num_embeddings:
        raise ValueError(f"{where}: padding_idx must be within num_embeddings, i.e. in "
                         f"[{-num_embeddings}, {num_embeddings - 1}], got {padding_idx}")
    return int(padding_idx) % num_embeddings


class EmbeddingFunction(Function):
    """out = weight[indices]; d weight = the output gradients summed per row read.

    The row ``padding_idx`` (if not None) gets no gradient, so it stays fixed.
    """

    @staticmethod
    def forward(ctx, weight, indices, padding_idx):
        ctx.meta = (weight.shape, weight.dtype, indices, padding_idx)
        # weight[indices], as NumPy's take of whole rows (faster than fancy indexing)
        return get_array_module(weight).take(weight, indices, axis=0)

    @staticmethod
    def backward(ctx, grad):
        shape, dtype, indices, padding_idx = ctx.meta
        grad_weight = get_array_module(grad).zeros(shape, dtype)
        add_rows(grad_weight, indices.reshape(-1), grad.reshape(indices.size, shape[1]))
        if padding_idx is not None:
            grad_weight[padding_idx] = 0
        return grad_weight, None, None


def embedding(input, weight, padding_idx=None):
    """Rows of ``weight`` (num_embeddings, embedding_dim) at the integer ``input``
    indices (any shape): the result has shape ``input.shape + (embedding_dim,)``.

    As ``torch.nn.functional.embedding``: the row ``padding_idx`` receives no
    gradient; an index outside [0, num_embeddings) is an ``IndexError``.
    """
    if not isinstance(weight, Tensor) or weight.ndim != 2:
        raise ValueError("embedding: weight must be a 2-D tensor (num_embeddings, "
                         f"embedding_dim), got {getattr(weight, 'shape', type(weight).__name__)}")
    count = weight.shape[0]
    indices = index_array(input, "embedding", weight.device)
    padding_idx = normalize_padding_idx("embedding", padding_idx, count)
    if indices.size and (int(indices.min()) < 0 or int(indices.max()) >= count):
        values = as_numpy(indices)
        bad = values[(values < 0) | (values >= count)]
        raise IndexError(f"embedding: index {int(bad.flat[0])} is out of range for "
                         f"{count} embeddings (expected 0 <= index < {count})")
    return EmbeddingFunction.apply(weight, indices, padding_idx)


def one_hot(tensor, num_classes: int = -1) -> Tensor:
    """int64 one-hot vectors of the class indices in ``tensor``: shape
    ``tensor.shape + (num_classes,)``, as ``torch.nn.functional.one_hot``.

    ``num_classes=-1`` means one more than the largest index.
    """
    device = tensor.device if isinstance(tensor, Tensor) else "cpu"
    indices = index_array(tensor, "one_hot", device)
    check_count("one_hot", "num_classes", num_classes, low=-1)
    if num_classes == -1:
        if indices.size == 0:
            raise ValueError("one_hot: cannot infer num_classes from an empty tensor; "
                             "pass num_classes")
        num_classes = int(indices.max()) + 1
    if indices.size:
        low, high = int(indices.min()), int(indices.max())
        if low < 0:
            raise ValueError(f"one_hot: class values must be non-negative, got {low}")
        if high >= num_classes:
            raise ValueError(f"one_hot: class values must be smaller than num_classes="
                             f"{num_classes}, got {high}")
    xp = get_array_module(indices)
    classes = xp.arange(num_classes)
    return Tensor._make((indices[..., None] == classes).astype(np.int64))
