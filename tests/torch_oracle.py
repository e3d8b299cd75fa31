"""Comparing a tinynet result with PyTorch's, for the differential fuzz tests."""
import numpy as np
import torch

TOLERANCE = dict(rtol=1e-9, atol=1e-9)


def as_numpy(t):
    if t is None:
        return None
    return np.asarray(t.detach().numpy() if isinstance(t, torch.Tensor) else t.numpy())


def assert_same(ours, ref, what):
    """Both None, or the same shape and values to TOLERANCE; ``what`` names it."""
    ours, ref = as_numpy(ours), as_numpy(ref)
    assert (ours is None) == (ref is None), f"{what}: tinynet {ours}, torch {ref}"
    if ref is not None:
        assert ours.shape == ref.shape, f"{what}: shape {ours.shape}, torch {ref.shape}"
        np.testing.assert_allclose(ours, ref, err_msg=what, **TOLERANCE)
