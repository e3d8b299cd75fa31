"""The paper's and the examples' models, one file each, built from :mod:`tinynet.nn`.

* :mod:`~tinynet.models.mlp`: ``MLP``, the permutation-invariant MNIST net;
* :mod:`~tinynet.models.sequence`: ``SequenceClassifier``, an LSTM classifier;
* :mod:`~tinynet.models.gpt`: ``GPT`` and ``GPTConfig``, nanoGPT's character model.
"""
from .gpt import GPT, GPTConfig
from .mlp import MLP, NORMS, norm_layer
from .sequence import SequenceClassifier

__all__ = ["MLP", "NORMS", "norm_layer", "SequenceClassifier", "GPT", "GPTConfig"]
