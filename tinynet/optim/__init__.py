"""Optimizers (``tinynet.optim``), with PyTorch's update rules."""
from . import lr_scheduler
from .adam import Adam
from .adamw import AdamW
from .clip import clip_grad_norm_
from .optimizer import Optimizer
from .sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "clip_grad_norm_", "lr_scheduler"]
