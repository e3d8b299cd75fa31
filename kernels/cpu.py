"""Placeholder until the Numba CPU kernels land: the reference, re-exported."""
from .reference import adam_step, layer_norm_backward, layer_norm_forward  # noqa: F401
