"""The comparison the convolution tests share: a functional convolution of
tinynet against PyTorch's on the same arrays, output and every gradient."""
import warnings

import numpy as np

import tinynet


def compare_with_torch(torch, ours_fn, torch_fn, x_np, w_np, b_np, dy_seed, tol, **kwargs):
    """``ours_fn(x, w, b, **kwargs)`` against ``torch_fn`` on the same arrays: the
    output, its dtype and shape, and the gradients of x, w and b (b may be None)
    for a random upstream gradient; returns tinynet's output."""
    ours = [None if a is None else tinynet.tensor(a, requires_grad=True)
            for a in (x_np, w_np, b_np)]
    theirs = [None if a is None else torch.tensor(a, requires_grad=True)
              for a in (x_np, w_np, b_np)]
    with warnings.catch_warnings():
        # torch warns that 'same' with an even kernel copies the input; so do we
        warnings.simplefilter("ignore", UserWarning)
        yt = torch_fn(*theirs, **kwargs)
    y = ours_fn(*ours, **kwargs)
    assert tuple(y.shape) == tuple(yt.shape), (y.shape, tuple(yt.shape))
    assert y.dtype == x_np.dtype
    np.testing.assert_allclose(y.numpy(), yt.detach().numpy(), err_msg="output", **tol)
    dy = np.random.default_rng(dy_seed).standard_normal(tuple(yt.shape)).astype(x_np.dtype)
    (y * tinynet.tensor(dy)).sum().backward()
    yt.backward(torch.tensor(dy))
    for name, a, t in zip(("input", "weight", "bias"), ours, theirs, strict=True):
        if a is None:
            continue
        assert a.grad is not None, name
        assert a.grad.shape == tuple(t.shape) and a.grad.dtype == a.dtype, name
        np.testing.assert_allclose(a.grad.numpy(), t.grad.numpy(), err_msg=f"d {name}",
                                   **tol)
    return y
