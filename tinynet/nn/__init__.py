"""Layers with PyTorch's names, shapes and defaults (``tinynet.nn``)."""
from . import functional, init, parallel, utils
from .activation import GELU, LogSoftmax, SiLU, Softmax
from .attention import MultiheadAttention
from .containers import ModuleDict, ModuleList, Sequential
from .embedding import Embedding
from .layers import (
    CrossEntropyLoss,
    Dropout,
    Flatten,
    Identity,
    Linear,
    MSELoss,
    NLLLoss,
    ReLU,
    Sigmoid,
    Tanh,
)
from .module import Module, Parameter
from .normalization import BatchNorm1d, LayerNorm, RMSNorm, StepwiseBatchNorm
from .recurrent import LSTM, GateNorms, LSTMCell
from .sync_batchnorm import SyncBatchNorm
from .transformer import TransformerEncoder, TransformerEncoderLayer

__all__ = [
    "functional", "init", "utils", "parallel",
    # modules and containers
    "Module", "Parameter", "Sequential", "ModuleList", "ModuleDict",
    # layers
    "Linear", "Identity", "Flatten", "Dropout", "Embedding",
    "LayerNorm", "RMSNorm", "BatchNorm1d", "StepwiseBatchNorm", "SyncBatchNorm",
    "LSTMCell", "LSTM", "GateNorms",
    "MultiheadAttention", "TransformerEncoderLayer", "TransformerEncoder",
    # activations
    "ReLU", "Tanh", "Sigmoid", "Softmax", "LogSoftmax", "GELU", "SiLU",
    # losses
    "CrossEntropyLoss", "NLLLoss", "MSELoss",
]
