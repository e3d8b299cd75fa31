"""The paper's and the examples' models, one file each, built from :mod:`tinynet.nn`.

* :mod:`~tinynet.models.mlp`: ``MLP``, the permutation-invariant MNIST net;
* :mod:`~tinynet.models.sequence`: ``SequenceClassifier``, an LSTM classifier;
* :mod:`~tinynet.models.gpt`: ``GPT`` and ``GPTConfig``, nanoGPT's character model;
* :mod:`~tinynet.models.char_lstm`: ``CharLSTM``, char-rnn's LSTM (plain or LN) model;
* :mod:`~tinynet.models.seq2seq`: ``Seq2SeqTransformer``, an encoder–decoder Transformer
  set up as Xiong et al. (2020) study Pre-LN and Post-LN;
* :mod:`~tinynet.models.convnet`: ``ConvNet``, a small MNIST convnet with a choice of norm;
* :mod:`~tinynet.models.generation`: what the language models share (sampling, AdamW);
* :func:`language_model`: the character model of a checkpoint's configuration.
"""
from .char_lstm import CharLSTM
from .convnet import CONV_NORMS, ConvNet, conv_norm_layer
from .gpt import GPT, GPTConfig
from .mlp import MLP, NORMS, norm_layer
from .seq2seq import Seq2SeqTransformer
from .sequence import SequenceClassifier

__all__ = ["MLP", "NORMS", "norm_layer", "SequenceClassifier", "GPT", "GPTConfig", "CharLSTM",
           "ConvNet", "CONV_NORMS", "conv_norm_layer", "Seq2SeqTransformer", "language_model"]


def language_model(config: dict):
    """The character model a checkpoint's configuration describes (as
    examples/char_lm.py stores it): ``{"model": "gpt", **GPTConfig fields}`` or
    ``{"model": "lstm" | "ln-lstm", **CharLSTM arguments}``, weights freshly initialised."""
    options = dict(config)
    kind = options.pop("model", "gpt")
    if kind == "gpt":
        return GPT(GPTConfig(**options))
    if kind in ("lstm", "ln-lstm"):
        return CharLSTM(**options)
    raise ValueError(f"language_model: unknown model {kind!r} (expected 'gpt', 'lstm' or "
                     "'ln-lstm')")
