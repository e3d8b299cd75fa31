"""Gradient clipping by global norm: ``tinynet.nn.utils.clip_grad_norm_``, also
reachable as ``tinynet.optim.clip_grad_norm_``."""
from ..nn.utils import clip_grad_norm_

__all__ = ["clip_grad_norm_"]
