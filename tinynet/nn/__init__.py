"""Layers with PyTorch's names, shapes and defaults (``tinynet.nn``)."""
from ..lacking import lacking
from . import functional, init, parallel, utils
from .activation import ELU, GELU, LeakyReLU, LogSoftmax, PReLU, SiLU, Softmax, Softplus
from .attention import MultiheadAttention
from .containers import ModuleDict, ModuleList, Sequential
from .conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from .dropout import Dropout1d, Dropout2d, Dropout3d
from .embedding import Embedding
from .layers import (
    BCELoss,
    BCEWithLogitsLoss,
    CrossEntropyLoss,
    Dropout,
    Flatten,
    HuberLoss,
    Identity,
    L1Loss,
    Linear,
    MSELoss,
    NLLLoss,
    ReLU,
    Sigmoid,
    SmoothL1Loss,
    Tanh,
    Unflatten,
)
from .module import Module, Parameter
from .normalization import (
    BatchNorm1d,
    BatchNorm2d,
    GroupNorm,
    InstanceNorm1d,
    InstanceNorm2d,
    LayerNorm,
    RMSNorm,
    StepwiseBatchNorm,
)
from .pooling import (
    AdaptiveAvgPool1d,
    AdaptiveAvgPool2d,
    AdaptiveAvgPool3d,
    AvgPool1d,
    AvgPool2d,
    AvgPool3d,
    MaxPool1d,
    MaxPool2d,
    MaxPool3d,
)
from .recurrent import LSTM, GateNorms, LSTMCell
from .rnn import GRU, RNN, GRUCell, RNNCell
from .sync_batchnorm import SyncBatchNorm
from .transformer import TransformerEncoder, TransformerEncoderLayer
from .transformer_decoder import Transformer, TransformerDecoder, TransformerDecoderLayer

__all__ = [
    "functional", "init", "utils", "parallel",
    # modules and containers
    "Module", "Parameter", "Sequential", "ModuleList", "ModuleDict",
    # layers
    "Linear", "Identity", "Flatten", "Unflatten", "Dropout", "Dropout1d", "Dropout2d", "Dropout3d",
    "Embedding",
    "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d",
    "MaxPool1d", "MaxPool2d", "MaxPool3d",
    "AvgPool1d", "AvgPool2d", "AvgPool3d",
    "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d",
    "LayerNorm", "RMSNorm", "GroupNorm", "InstanceNorm1d", "InstanceNorm2d",
    "BatchNorm1d", "BatchNorm2d", "StepwiseBatchNorm", "SyncBatchNorm",
    "LSTMCell", "LSTM", "GateNorms", "RNNCell", "GRUCell", "RNN", "GRU",
    "MultiheadAttention", "TransformerEncoderLayer", "TransformerEncoder",
    "TransformerDecoderLayer", "TransformerDecoder", "Transformer",
    # activations
    "ReLU", "Tanh", "Sigmoid", "Softmax", "LogSoftmax", "GELU", "SiLU", "Softplus", "ELU",
    "LeakyReLU", "PReLU",
    # losses
    "CrossEntropyLoss", "NLLLoss", "MSELoss", "BCELoss", "BCEWithLogitsLoss", "L1Loss",
    "SmoothL1Loss", "HuberLoss",
]

from . import modules  # noqa: E402, F401  (PyTorch's files of layers, from the names above)

__getattr__ = lacking("torch.nn")
