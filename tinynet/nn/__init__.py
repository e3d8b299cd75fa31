"""Layers with PyTorch's names, shapes and defaults (``tinynet.nn``)."""
from . import functional, init, parallel, utils
from .activation import GELU, LogSoftmax, SiLU, Softmax
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
from .module import Module, ModuleList, Parameter, Sequential
from .normalization import BatchNorm1d, LayerNorm, RMSNorm, StepwiseBatchNorm
from .recurrent import LSTM, GateNorms, LSTMCell
from .sync_batchnorm import SyncBatchNorm

__all__ = ["functional", "init", "Module", "Parameter", "Sequential", "ModuleList", "Linear",
           "ReLU", "Tanh", "Sigmoid", "Identity", "Flatten", "Dropout", "CrossEntropyLoss",
           "NLLLoss", "MSELoss", "LayerNorm", "RMSNorm", "BatchNorm1d", "StepwiseBatchNorm",
           "SyncBatchNorm",
           "LSTMCell", "LSTM", "GateNorms",
           "utils", "parallel", "Softmax", "LogSoftmax", "GELU", "SiLU", "Embedding"]
