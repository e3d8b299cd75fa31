"""``torch.nn.modules``: PyTorch's files of layers, each a namespace of tinynet's.

Programs name a layer by the file PyTorch defines it in, to allow its class when
loading a whole pickled model (``torch.nn.modules.rnn.LSTM`` in a list given to
``torch.serialization.safe_globals``): each name here is the tinynet layer of the
same name (``linear.NonDynamicallyQuantizableLinear`` is the Linear of the
attention's output projection, as PyTorch names it).
"""
from __future__ import annotations

import types

from .. import nn
from .attention import NonDynamicallyQuantizableLinear

__all__ = ["activation", "batchnorm", "container", "conv", "dropout", "flatten",
           "instancenorm", "linear", "loss", "module", "normalization", "pooling", "rnn",
           "sparse", "transformer"]


def _file(name, *names, **aliases):
    namespace = types.ModuleType(f"torch.nn.modules.{name}",
                                 f"torch.nn.modules.{name}: tinynet's layers of that name")
    vars(namespace).update({n: getattr(nn, n) for n in names}, **aliases)
    return namespace


activation = _file("activation", "ReLU", "Tanh", "Sigmoid", "Softmax", "LogSoftmax", "GELU",
                   "SiLU", "Softplus", "ELU", "LeakyReLU", "MultiheadAttention")
batchnorm = _file("batchnorm", "BatchNorm1d", "BatchNorm2d", "SyncBatchNorm")
container = _file("container", "Sequential", "ModuleList", "ModuleDict")
conv = _file("conv", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
             "ConvTranspose3d")
dropout = _file("dropout", "Dropout", "Dropout1d", "Dropout2d", "Dropout3d")
flatten = _file("flatten", "Flatten", "Unflatten")
instancenorm = _file("instancenorm", "InstanceNorm1d", "InstanceNorm2d")
linear = _file("linear", "Linear", "Identity",
               NonDynamicallyQuantizableLinear=NonDynamicallyQuantizableLinear)
loss = _file("loss", "CrossEntropyLoss", "NLLLoss", "MSELoss", "BCELoss", "BCEWithLogitsLoss",
             "L1Loss", "SmoothL1Loss", "HuberLoss")
module = _file("module", "Module")
normalization = _file("normalization", "LayerNorm", "GroupNorm", "RMSNorm")
pooling = _file("pooling", "MaxPool1d", "MaxPool2d", "MaxPool3d", "AvgPool1d", "AvgPool2d",
                "AvgPool3d", "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d")
rnn = _file("rnn", "RNN", "GRU", "LSTM", "RNNCell", "GRUCell", "LSTMCell")
sparse = _file("sparse", "Embedding")
transformer = _file("transformer", "Transformer", "TransformerEncoder",
                    "TransformerEncoderLayer", "TransformerDecoder", "TransformerDecoderLayer")
