"""Optimizers (``tinynet.optim``), with PyTorch's update rules."""
from .adam import Adam
from .clip import clip_grad_norm_
from .optimizer import Optimizer
from .sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "clip_grad_norm_"]
