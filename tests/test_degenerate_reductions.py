"""Reductions with nothing (or too little) to reduce, as PyTorch does them.

var and std without degrees of freedom (one value with correction=1, a
correction of n or more, an empty axis) are NaN or inf, not an error, and warn
with PyTorch's UserWarning "var(): degrees of freedom is <= 0"; over an empty
axis sum is 0, mean NaN and prod 1. Values, gradients and the warning must be
PyTorch's; NumPy's own warnings ("Mean of empty slice", division by zero)
must not escape.
"""
import math
import warnings

import numpy as np
import pytest

import tinynet

torch = pytest.importorskip("torch")

NAN = math.nan
INPUTS = {
    "one": np.array([2.0]),
    "two": np.array([1.0, 3.0]),
    "equal_pair": np.array([1.5, 1.5]),
    "0d": np.array(2.0),
    "empty": np.zeros(0),
    "empty_rows": np.zeros((2, 0)),
    "no_rows": np.zeros((0, 3)),
    "column": np.array([[1.0], [2.0], [-3.0]]),
    "with_inf": np.array([[math.inf], [1.0]]),
    "with_nan": np.array([[NAN, 1.0]]),
}
DIMS = [(), (0,), (1,), (-1, True), ((0, 1),)]
CORRECTIONS = [0, 1, 2, 3, 0.5, 1.5]


def _applies(x, args):
    dims = args[0] if args else None
    dims = (dims,) if isinstance(dims, int) else dims or ()
    return all(-max(x.ndim, 1) <= d < max(x.ndim, 1) for d in dims) and (
        x.ndim > 0 or len(dims) <= 1)


def run(lib, fn, x, upstream):
    """The output, the input's gradient and the warnings' messages."""
    t = lib.tensor(x, requires_grad=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = fn(t)
        out.backward(lib.tensor(np.full(tuple(out.shape), upstream)))
    messages = [str(w.message).split(" (Triggered internally")[0] for w in caught]
    categories = {w.category for w in caught}
    return out.detach().numpy(), t.grad.numpy(), messages, categories


def assert_like_torch(fn, x, upstream=1.0):
    ours, grad, messages, categories = run(tinynet, fn, x, upstream)
    ref, ref_grad, ref_messages, ref_categories = run(torch, fn, x, upstream)
    for what, o, r in (("forward", ours, ref), ("grad", grad, ref_grad)):
        assert o.shape == r.shape, (what, o.shape, r.shape)
        np.testing.assert_allclose(o, r, rtol=1e-10, atol=1e-12, equal_nan=True,
                                   err_msg=f"{what} of {x.tolist()}")
    assert messages == ref_messages, x.tolist()
    assert categories == ref_categories


@pytest.mark.parametrize("upstream", [1.0, math.inf])
@pytest.mark.parametrize("correction", CORRECTIONS)
@pytest.mark.parametrize("op", ["var", "std"])
@pytest.mark.parametrize("name", list(INPUTS))
def test_var_std_without_degrees_of_freedom_match_torch(name, op, correction, upstream):
    x = INPUTS[name]
    for args in DIMS:
        if not _applies(x, args):
            continue
        dim, keepdim = (args + (False,))[:2] if args else (None, False)

        def fn(t, d=dim, k=keepdim):
            return getattr(t, op)(d, keepdim=k, correction=correction)

        assert_like_torch(fn, x, upstream)


@pytest.mark.parametrize("op", ["sum", "mean", "prod"])
@pytest.mark.parametrize("name", ["empty", "empty_rows", "no_rows", "0d", "one"])
def test_sum_mean_prod_of_empty_match_torch(name, op):
    x = INPUTS[name]
    calls = [()] + [(d, k) for d in range(x.ndim) for k in (False, True)]
    for args in calls:
        assert_like_torch(lambda t, a=args: getattr(t, op)(*a), x)


def test_empty_values_are_torchs():
    empty = tinynet.zeros(2, 0)
    assert empty.sum().item() == 0 and empty.prod().item() == 1
    assert math.isnan(empty.mean().item())
    assert empty.sum(1).tolist() == [0.0, 0.0] and empty.prod(1).tolist() == [1.0, 1.0]
    assert all(math.isnan(v) for v in empty.mean(1).tolist())
    assert empty.mean(0).shape == (0,)


def test_var_of_one_value_is_nan_with_torchs_warning():
    x = tinynet.tensor([2.0], requires_grad=True)
    with pytest.warns(UserWarning, match=r"var\(\): degrees of freedom is <= 0") as caught:
        out = x.var()
    assert caught[0].filename == __file__          # pointed at the caller, as torch does
    out.backward()
    assert math.isnan(out.item()) and math.isnan(x.grad.item())
    with pytest.warns(UserWarning, match=r"std\(\): degrees of freedom"):
        assert math.isnan(tinynet.std(tinynet.ones(3, 1), dim=1)[0].item())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert x.var(correction=0).item() == 0.0    # biased: one value is enough
        assert tinynet.ones(4).std().item() == 0.0


def test_float32_stays_float32_when_degenerate():
    x = tinynet.tensor([[1.0, 2.0]], requires_grad=True)
    with pytest.warns(UserWarning):
        out = x.std(0)
    out.sum().backward()
    assert out.dtype == np.float32 and x.grad.dtype == np.float32
