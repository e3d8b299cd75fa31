"""Embedding: a learned table of vectors, looked up by integer index."""
from __future__ import annotations

from .. import creation
from ..hyperparameters import check_count
from ..ops.embedding import normalize_padding_idx
from ..tensor import Tensor
from . import functional as F
from .module import Module, Parameter

__all__ = ["Embedding"]


class Embedding(Module):
    """Row ``i`` of ``weight`` (num_embeddings, embedding_dim) is the vector of index ``i``.

    As ``torch.nn.Embedding``: weight ~ N(0, 1); the row ``padding_idx`` (a
    negative one counts from the end) starts at zero and receives no gradient,
    so it stays a fixed "pad" vector. Input: integer indices of any shape;
    output: ``input.shape + (embedding_dim,)``.
    """

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx=None, *,
                 _weight=None, _freeze: bool = False, dtype=None, device="cpu"):
        super().__init__()
        self.num_embeddings = check_count("Embedding", "num_embeddings", num_embeddings, low=0)
        self.embedding_dim = check_count("Embedding", "embedding_dim", embedding_dim, low=0)
        self.padding_idx = normalize_padding_idx("Embedding", padding_idx, num_embeddings)
        if _weight is None:
            self.weight = Parameter(creation.empty(num_embeddings, embedding_dim, dtype=dtype,
                                                   device=device), requires_grad=not _freeze)
            self.reset_parameters()
        else:
            if tuple(_weight.shape) != (num_embeddings, embedding_dim):
                raise ValueError(f"Embedding: weight of shape {tuple(_weight.shape)} does not "
                                 f"match ({num_embeddings}, {embedding_dim})")
            self.weight = Parameter(_weight, requires_grad=not _freeze)

    def reset_parameters(self) -> None:
        """Draw the weight from N(0, 1) again, with the padding row zero."""
        weight = self.weight
        weight.array[...] = creation.randn(*weight.shape, dtype=weight.dtype,
                                          device=weight.device).array
        if self.padding_idx is not None:
            weight.array[self.padding_idx] = 0

    @classmethod
    def from_pretrained(cls, embeddings, freeze: bool = True, padding_idx=None) -> "Embedding":
        """An Embedding whose weight is ``embeddings`` (shared, not copied), frozen
        unless ``freeze=False``. The padding row is left as given."""
        if not isinstance(embeddings, Tensor) or embeddings.ndim != 2:
            raise ValueError("Embedding.from_pretrained: embeddings must be a 2-D tensor, got "
                             f"{getattr(embeddings, 'shape', type(embeddings).__name__)}")
        rows, columns = embeddings.shape
        return cls(rows, columns, padding_idx, _weight=embeddings, _freeze=freeze)

    def forward(self, input):
        """The rows of ``weight`` at the integer indices ``input`` (a tensor of any
        shape): output ``input.shape + (embedding_dim,)``, in the weight's dtype.
        """
        return F.embedding(input, self.weight, self.padding_idx)

    def extra_repr(self):
        padding = "" if self.padding_idx is None else f", padding_idx={self.padding_idx}"
        return f"{self.num_embeddings}, {self.embedding_dim}{padding}"
