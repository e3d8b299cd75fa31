"""Optimizers (``tinynet.optim``), with PyTorch's update rules."""
from ..lacking import lacking
from . import lr_scheduler
from .adadelta import Adadelta
from .adagrad import Adagrad
from .adam import Adam
from .adamw import AdamW
from .clip import clip_grad_norm_
from .optimizer import Optimizer
from .rmsprop import RMSprop
from .sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "Adadelta", "Adagrad", "RMSprop",
           "clip_grad_norm_", "lr_scheduler"]

__getattr__ = lacking("torch.optim")
