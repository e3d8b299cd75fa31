"""The normalizations of convolutional nets against PyTorch: GroupNorm,
InstanceNorm1d/2d, BatchNorm2d and LayerNorm over (C, H, W).

Oracles: PyTorch (outputs, input and parameter gradients to 1e-10 in float64,
running buffers), float64 finite differences, the identities GroupNorm(1, C) =
LayerNorm over (C, H, W) and GroupNorm(C, C) = InstanceNorm, the batch
independence of every norm but BatchNorm, and the reference kernels (group_norm
on every kernel rung, CPU and, under Numba's simulator, CUDA).
"""
import importlib

import numba
import numpy as np
import pytest

import tinynet
from tinynet import nn
from tinynet.backend import KernelTable, get_backend
from tinynet.kernels import ladder
from tinynet.kernels.ladder import reference
from tinynet.nn import functional as F
from tinynet.ops import normalization as norm_ops
from tinynet.testing import gradcheck

from test_kernel_ladder import assert_results_match
from test_kernels_cpu import RTOL

torch = pytest.importorskip("torch")

TOL64 = dict(rtol=1e-10, atol=1e-10)
TOL32 = dict(rtol=2e-5, atol=2e-5)


def inputs(shape, seed=0, dtype=np.float64, offset=0.5, scale=2.0):
    rng = np.random.default_rng(seed)
    x = (offset + scale * rng.standard_normal(shape)).astype(dtype)
    dy = rng.standard_normal(shape).astype(dtype)
    return x, dy


def randomize_affine(ours, theirs, seed=1):
    """Random weight and bias in ours, copied into torch's."""
    if getattr(ours, "weight", None) is None:
        return
    rng = np.random.default_rng(seed)
    ours.weight.data[...] = rng.uniform(0.5, 1.5, ours.weight.shape)
    ours.bias.data[...] = rng.standard_normal(ours.bias.shape)
    with torch.no_grad():
        theirs.weight.copy_(torch.tensor(ours.weight.numpy()))
        theirs.bias.copy_(torch.tensor(ours.bias.numpy()))


def step(ours, theirs, x_np, dy_np, tol=TOL64):
    """One forward and backward of both modules: output, input grad, parameter grads."""
    for module in (ours, theirs):
        for p in module.parameters():
            p.grad = None
    x, xt = tinynet.tensor(x_np, requires_grad=True), torch.tensor(x_np, requires_grad=True)
    y, yt = ours(x), theirs(xt)
    assert tuple(y.shape) == tuple(yt.shape) and y.dtype == x_np.dtype
    np.testing.assert_allclose(y.numpy(), yt.detach().numpy(), err_msg="output", **tol)
    (y * tinynet.tensor(dy_np)).sum().backward()
    yt.backward(torch.tensor(dy_np))
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), err_msg="d input", **tol)
    ours_params, their_params = dict(ours.named_parameters()), dict(theirs.named_parameters())
    assert set(ours_params) == set(their_params)
    for name, p in ours_params.items():
        np.testing.assert_allclose(p.grad.numpy(), their_params[name].grad.numpy(),
                                   err_msg=f"d {name}", **tol)
    return y, x.grad


def assert_same_buffers(ours, theirs):
    theirs_buffers = dict(theirs.named_buffers())
    ours_buffers = dict(ours.named_buffers())
    assert set(ours_buffers) == set(theirs_buffers)
    for name, b in ours_buffers.items():
        np.testing.assert_allclose(b.numpy(), theirs_buffers[name].numpy(), err_msg=name,
                                   **TOL64)


# -------------------------------------------------------------------------- GroupNorm

GROUP_SHAPES = [(2, 6, 5, 3), (1, 6, 3, 7), (3, 6, 1, 1), (2, 6, 7), (2, 6, 2, 3, 3), (4, 6)]


@pytest.mark.parametrize("shape", GROUP_SHAPES, ids=str)
@pytest.mark.parametrize("groups", [1, 2, 3, 6])
@pytest.mark.parametrize("affine", [True, False])
def test_group_norm_matches_torch(shape, groups, affine):
    ours = nn.GroupNorm(groups, shape[1], affine=affine, dtype=tinynet.float64)
    theirs = torch.nn.GroupNorm(groups, shape[1], affine=affine).double()
    randomize_affine(ours, theirs)
    step(ours, theirs, *inputs(shape, seed=groups))


@pytest.mark.parametrize("eps", [1e-5, 0.3])
def test_group_norm_functional_matches_torch_with_eps(eps):
    x_np, dy = inputs((2, 4, 3, 5), offset=3.0, scale=0.2)     # small variance: ε matters
    rng = np.random.default_rng(2)
    w_np, b_np = rng.standard_normal(4), rng.standard_normal(4)
    ours = [tinynet.tensor(a, requires_grad=True) for a in (x_np, w_np, b_np)]
    theirs = [torch.tensor(a, requires_grad=True) for a in (x_np, w_np, b_np)]
    y = F.group_norm(ours[0], 2, ours[1], ours[2], eps=eps)
    yt = torch.nn.functional.group_norm(theirs[0], 2, theirs[1], theirs[2], eps=eps)
    np.testing.assert_allclose(y.numpy(), yt.detach().numpy(), **TOL64)
    (y * tinynet.tensor(dy)).sum().backward()
    yt.backward(torch.tensor(dy))
    for a, t in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(a.grad.numpy(), t.grad.numpy(), **TOL64)


def test_group_norm_float32_and_mixed_dtypes():
    x_np, dy = inputs((2, 4, 3, 5), dtype=np.float32)
    ours = nn.GroupNorm(2, 4)
    theirs = torch.nn.GroupNorm(2, 4)
    randomize_affine(ours, theirs)
    assert ours.weight.dtype == np.float32
    step(ours, theirs, x_np, dy, tol=TOL32)
    # a float64 input through the float32 layer computes in float64
    x64 = tinynet.tensor(x_np.astype(np.float64), requires_grad=True)
    y = ours(x64)
    assert y.dtype == np.float64
    expected = torch.nn.functional.group_norm(
        torch.tensor(x_np.astype(np.float64)), 2, theirs.weight.detach().double(),
        theirs.bias.detach().double())
    np.testing.assert_allclose(y.numpy(), expected.numpy(), **TOL64)
    ours.weight.grad = None
    y.sum().backward()
    assert x64.grad.dtype == np.float64 and ours.weight.grad.dtype == np.float32


def test_group_norm_of_a_non_contiguous_view_matches_torch():
    x_np, dy = inputs((2, 4, 5, 3))
    x, xt = tinynet.tensor(x_np, requires_grad=True), torch.tensor(x_np, requires_grad=True)
    y = F.group_norm(x.transpose(1, 3).transpose(1, 3).transpose(2, 3), 2)
    yt = torch.nn.functional.group_norm(xt.transpose(2, 3), 2)
    np.testing.assert_allclose(y.numpy(), yt.detach().numpy(), **TOL64)
    (y * tinynet.tensor(dy.transpose(0, 1, 3, 2))).sum().backward()
    yt.backward(torch.tensor(dy.transpose(0, 1, 3, 2)))
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), **TOL64)


# ----------------------------------------------------------------------- InstanceNorm

@pytest.mark.parametrize("cls, shape", [("InstanceNorm1d", (2, 3, 7)),
                                        ("InstanceNorm1d", (1, 4, 5)),
                                        ("InstanceNorm2d", (2, 3, 5, 3)),
                                        ("InstanceNorm2d", (1, 2, 1, 7))])
@pytest.mark.parametrize("affine", [False, True])
def test_instance_norm_without_running_stats_matches_torch(cls, shape, affine):
    ours = getattr(nn, cls)(shape[1], affine=affine, dtype=tinynet.float64)
    theirs = getattr(torch.nn, cls)(shape[1], affine=affine).double()
    randomize_affine(ours, theirs)
    assert dict(ours.named_buffers()) == {} or all(
        b is None for b in dict(ours.named_buffers()).values())
    for seed, training in ((0, True), (1, False)):          # the same in eval mode
        ours.train(training)
        theirs.train(training)
        step(ours, theirs, *inputs(shape, seed=seed))


@pytest.mark.parametrize("cls, shape", [("InstanceNorm1d", (3, 4, 5)),
                                        ("InstanceNorm2d", (2, 3, 3, 5))])
@pytest.mark.parametrize("affine", [False, True])
def test_instance_norm_with_running_stats_train_then_eval_matches_torch(cls, shape, affine):
    ours = getattr(nn, cls)(shape[1], affine=affine, track_running_stats=True, momentum=0.3,
                            dtype=tinynet.float64)
    theirs = getattr(torch.nn, cls)(shape[1], affine=affine, track_running_stats=True,
                                    momentum=0.3).double()
    randomize_affine(ours, theirs)
    assert_same_buffers(ours, theirs)
    for seed in (0, 1):
        step(ours, theirs, *inputs(shape, seed=seed, offset=seed + 1.0))
        assert_same_buffers(ours, theirs)
    assert not np.allclose(ours.running_mean.numpy(), 0)
    ours.eval()
    theirs.eval()
    y, _ = step(ours, theirs, *inputs(shape, seed=2))
    assert_same_buffers(ours, theirs)                    # eval leaves them alone
    # eval normalizes by the running statistics, not the input's own
    view = (1, -1) + (1,) * (len(shape) - 2)
    x_np, _ = inputs(shape, seed=2)
    x_hat = ((x_np - ours.running_mean.numpy().reshape(view))
             / np.sqrt(ours.running_var.numpy().reshape(view) + ours.eps))
    if affine:
        x_hat = x_hat * ours.weight.numpy().reshape(view) + ours.bias.numpy().reshape(view)
    np.testing.assert_allclose(y.numpy(), x_hat, **TOL64)


# ------------------------------------------------------------------------ BatchNorm2d

@pytest.mark.parametrize("shape", [(4, 3, 5, 3), (1, 2, 3, 7), (3, 2, 1, 1)], ids=str)
@pytest.mark.parametrize("affine", [True, False])
def test_batch_norm_2d_train_twice_then_eval_matches_torch(shape, affine):
    ours = nn.BatchNorm2d(shape[1], affine=affine, momentum=0.25, dtype=tinynet.float64)
    theirs = torch.nn.BatchNorm2d(shape[1], affine=affine, momentum=0.25).double()
    randomize_affine(ours, theirs)
    for seed in (0, 1):
        step(ours, theirs, *inputs(shape, seed=seed, offset=2.0 * seed))
        assert_same_buffers(ours, theirs)
    assert int(ours.num_batches_tracked.item()) == 2
    ours.eval()
    theirs.eval()
    step(ours, theirs, *inputs(shape, seed=3))
    assert_same_buffers(ours, theirs)


def test_batch_norm_2d_without_running_stats_uses_batch_stats_in_eval():
    ours = nn.BatchNorm2d(3, track_running_stats=False, dtype=tinynet.float64)
    theirs = torch.nn.BatchNorm2d(3, track_running_stats=False).double()
    ours.eval()
    theirs.eval()
    step(ours, theirs, *inputs((2, 3, 4, 3)))


def test_functional_batch_norm_on_5d_input_matches_torch():
    x_np, dy = inputs((2, 3, 2, 3, 2))
    rm, rv = np.zeros(3), np.ones(3)
    ours_rm, ours_rv = tinynet.tensor(rm.copy()), tinynet.tensor(rv.copy())
    theirs_rm, theirs_rv = torch.tensor(rm.copy()), torch.tensor(rv.copy())
    x, xt = tinynet.tensor(x_np, requires_grad=True), torch.tensor(x_np, requires_grad=True)
    y = F.batch_norm(x, ours_rm, ours_rv, training=True, momentum=0.2)
    yt = torch.nn.functional.batch_norm(xt, theirs_rm, theirs_rv, training=True, momentum=0.2)
    np.testing.assert_allclose(y.numpy(), yt.detach().numpy(), **TOL64)
    (y * tinynet.tensor(dy)).sum().backward()
    yt.backward(torch.tensor(dy))
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), **TOL64)
    np.testing.assert_allclose(ours_rm.numpy(), theirs_rm.numpy(), **TOL64)
    np.testing.assert_allclose(ours_rv.numpy(), theirs_rv.numpy(), **TOL64)


# ------------------------------------------------------------------ LayerNorm([C, H, W])

@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (1, 2, 3, 7), (3, 1, 1, 5)], ids=str)
@pytest.mark.parametrize("affine", [True, False])
def test_layer_norm_over_c_h_w_matches_torch(shape, affine):
    ours = nn.LayerNorm(list(shape[1:]), elementwise_affine=affine, dtype=tinynet.float64)
    theirs = torch.nn.LayerNorm(list(shape[1:]), elementwise_affine=affine).double()
    randomize_affine(ours, theirs)
    if affine:
        assert ours.weight.shape == shape[1:]
    step(ours, theirs, *inputs(shape))


# ----------------------------------------------------------------------- gradcheck

def x64(*shape, seed=0):
    return tinynet.tensor(np.random.default_rng(seed).uniform(-2, 2, shape), requires_grad=True)


@pytest.mark.parametrize("shape, groups", [((2, 4, 3, 2), 2), ((1, 3, 5), 1), ((2, 3, 2, 2), 3)])
def test_gradcheck_group_norm(shape, groups):
    w = tinynet.tensor(np.random.default_rng(1).uniform(0.5, 1.5, shape[1]),
                       requires_grad=True)
    b = x64(shape[1], seed=2)
    assert gradcheck(lambda x, w, b: F.group_norm(x, groups, w, b), [x64(*shape), w, b])
    assert gradcheck(lambda x: F.group_norm(x, groups), [x64(*shape, seed=3)])


@pytest.mark.parametrize("make, shape", [
    (lambda: nn.InstanceNorm2d(3, affine=True, dtype=tinynet.float64), (2, 3, 3, 2)),
    (lambda: nn.InstanceNorm1d(2, dtype=tinynet.float64), (2, 2, 5)),
    (lambda: nn.BatchNorm2d(3, dtype=tinynet.float64), (2, 3, 2, 3)),
    (lambda: nn.LayerNorm([2, 3, 2], dtype=tinynet.float64), (2, 2, 3, 2)),
    (lambda: nn.GroupNorm(2, 4, dtype=tinynet.float64), (1, 4, 3, 1)),
], ids=["InstanceNorm2d", "InstanceNorm1d", "BatchNorm2d", "LayerNorm", "GroupNorm"])
def test_gradcheck_layers(make, shape):
    layer = make()
    params = list(layer.parameters())
    rng = np.random.default_rng(4)
    for p in params:
        p.data[...] = rng.uniform(0.5, 1.5, p.shape)
    assert gradcheck(lambda x, *_: layer(x), [x64(*shape)] + params)


# ------------------------------------------------------------------------ identities

def test_group_norm_with_one_group_is_layer_norm_over_c_h_w():
    x_np, dy = inputs((3, 4, 5, 3))
    results = []
    for layer in (nn.GroupNorm(1, 4, affine=False), nn.LayerNorm((4, 5, 3),
                                                                  elementwise_affine=False)):
        x = tinynet.tensor(x_np, requires_grad=True)
        y = layer(x)
        (y * tinynet.tensor(dy)).sum().backward()
        results.append((y.numpy(), x.grad.numpy()))
    for a, b in zip(*results, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_group_norm_with_a_group_per_channel_is_instance_norm():
    x_np, dy = inputs((2, 3, 4, 5))
    gn = nn.GroupNorm(3, 3, dtype=tinynet.float64)
    inorm = nn.InstanceNorm2d(3, affine=True, dtype=tinynet.float64)
    rng = np.random.default_rng(5)
    for name in ("weight", "bias"):
        value = rng.standard_normal(3)
        getattr(gn, name).data[...] = value
        getattr(inorm, name).data[...] = value
    results = []
    for layer in (gn, inorm):
        x = tinynet.tensor(x_np, requires_grad=True)
        y = layer(x)
        (y * tinynet.tensor(dy)).sum().backward()
        results.append((y.numpy(), x.grad.numpy(), layer.weight.grad.numpy(),
                        layer.bias.grad.numpy()))
    for a, b in zip(*results, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_group_norm_with_one_value_per_group_gives_the_bias_as_torch():
    ours = nn.GroupNorm(4, 4, dtype=tinynet.float64)
    theirs = torch.nn.GroupNorm(4, 4).double()
    randomize_affine(ours, theirs)
    y, _ = step(ours, theirs, *inputs((3, 4)))
    np.testing.assert_allclose(y.numpy(), np.broadcast_to(ours.bias.numpy(), (3, 4)),
                               atol=1e-12)


@pytest.mark.parametrize("make", [
    lambda: nn.GroupNorm(2, 4, dtype=tinynet.float64),
    lambda: nn.GroupNorm(1, 4, dtype=tinynet.float64),
    lambda: nn.InstanceNorm2d(4, affine=True, dtype=tinynet.float64),
    lambda: nn.LayerNorm([4, 3, 5], dtype=tinynet.float64),
], ids=["GroupNorm2", "GroupNorm1", "InstanceNorm2d", "LayerNorm"])
def test_a_sample_does_not_depend_on_the_others(make):
    layer = make()
    x_np, _ = inputs((3, 4, 3, 5))
    alone = layer(tinynet.tensor(x_np[1:2])).numpy()
    batch = layer(tinynet.tensor(x_np)).numpy()
    other = x_np.copy()
    other[[0, 2]] = 10 * other[[0, 2]] + 3
    changed = layer(tinynet.tensor(other)).numpy()
    np.testing.assert_allclose(batch[1:2], alone, rtol=1e-13, atol=1e-13)
    np.testing.assert_array_equal(changed[1], batch[1])
    # and no gradient crosses from one sample to another
    x = tinynet.tensor(x_np, requires_grad=True)
    layer(x)[1].sum().backward()
    assert np.all(x.grad.numpy()[[0, 2]] == 0)


def test_batch_norm_in_training_does_depend_on_the_other_samples():
    """The control for the test above: the same check catches a norm across the batch."""
    layer = nn.BatchNorm2d(4, dtype=tinynet.float64)
    x_np, _ = inputs((3, 4, 3, 5))
    alone = layer(tinynet.tensor(x_np[1:3])).numpy()
    batch = layer(tinynet.tensor(x_np)).numpy()
    assert np.abs(batch[1:3] - alone).max() > 1e-3


# -------------------------------------------------------------- the kernel ladder: CPU

CPU_RUNGS = ladder.rung_names("cpu")        # "reference" included
GROUP_NORM_CASES = [((2, 6, 5, 3), 3), ((1, 4, 7), 1), ((3, 8, 2, 3, 2), 8), ((5, 4), 2),
                    ((1, 2, 1, 1), 2), ((2, 16, 128, 128), 4)]   # the last: parallel rows


def group_norm_results(shape, groups, dtype, offset=0.0):
    x_np, dy = inputs(shape, dtype=dtype, offset=offset)
    rng = np.random.default_rng(7)
    w_np = rng.uniform(0.5, 1.5, shape[1]).astype(dtype)
    b_np = rng.standard_normal(shape[1]).astype(dtype)
    x, w, b = (tinynet.tensor(a, requires_grad=True) for a in (x_np, w_np, b_np))
    y = F.group_norm(x, groups, w, b)
    (y * tinynet.tensor(dy)).sum().backward()
    return [a.numpy() for a in (y, x.grad, w.grad, b.grad)]


def cancelling_scale(shape, groups, dtype, offset):
    """max rstd·|dy·γ|: the size of the terms that cancel in dx (for a row of two
    values dx is ~0 while its terms are not)."""
    x_np, dy = inputs(shape, dtype=dtype, offset=offset)
    w_np = np.random.default_rng(7).uniform(0.5, 1.5, shape[1])
    rows = x_np.astype(np.float64).reshape(shape[0] * groups, -1)
    rstd = 1 / np.sqrt(rows.var(axis=1) + 1e-5)
    g = (dy * w_np.reshape((1, -1) + (1,) * (len(shape) - 2))).reshape(rows.shape)
    return np.max(np.abs(g) * rstd[:, None])


@pytest.mark.parametrize("rung", CPU_RUNGS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_group_norm_on_every_cpu_rung_matches_the_reference(rung, dtype):
    with tinynet.use_kernels("reference"):
        expected = {case: group_norm_results(*case, dtype, offset=3.0)
                    for case in GROUP_NORM_CASES}
    with tinynet.use_kernels(rung):
        module, _, name = ladder.kernel_target("cpu", rung, "layer_norm_forward").partition(":")
        assert get_backend("cpu").kernels.layer_norm_forward is getattr(
            importlib.import_module(module), name)
        actual = {case: group_norm_results(*case, dtype, offset=3.0)
                  for case in GROUP_NORM_CASES}
    for case in GROUP_NORM_CASES:
        dx_scale = cancelling_scale(*case, dtype, offset=3.0)
        for what, a, e in zip(("y", "dx", "dweight", "dbias"), actual[case], expected[case],
                              strict=True):
            assert a.dtype == e.dtype == dtype, (case, what)
            scale = dx_scale if what == "dx" else np.abs(e).max()
            np.testing.assert_allclose(a, e, rtol=RTOL[dtype], atol=RTOL[dtype] * scale * 10,
                                       err_msg=f"{case} {what}")


def test_group_norm_reference_matches_torch_float32():
    with tinynet.use_kernels("reference"):
        y, dx, dw, db = group_norm_results((2, 6, 5, 3), 3, np.float32)
    x_np, dy = inputs((2, 6, 5, 3), dtype=np.float32)
    rng = np.random.default_rng(7)
    w_np = rng.uniform(0.5, 1.5, 6).astype(np.float32)
    b_np = rng.standard_normal(6).astype(np.float32)
    theirs = [torch.tensor(a, requires_grad=True) for a in (x_np, w_np, b_np)]
    yt = torch.nn.functional.group_norm(theirs[0], 3, theirs[1], theirs[2])
    yt.backward(torch.tensor(dy))
    for a, t in zip((y, dx, dw, db), [yt] + [p.grad for p in theirs], strict=True):
        np.testing.assert_allclose(a, t.detach().numpy(), rtol=1e-4, atol=1e-4)


# ------------------------------------------------------------ the kernel ladder: CUDA

SIMULATED = bool(numba.config.ENABLE_CUDASIM)
ON_GPU = not SIMULATED and tinynet.cuda_is_available()
CUDA_RUNGS = [rung for rung in ladder.LADDERS["cuda"] if rung.name != "reference"]
# GroupNorm's rows (N·G, C/G·H·W), tiny under the simulator
CUDA_CASES = [((2, 4, 3, 3), 2), ((1, 2, 1, 1), 2), ((2, 6, 5), 1)]
needs_cuda = pytest.mark.skipif(not (SIMULATED or ON_GPU),
                                reason="needs CuPy and a CUDA GPU, or the CUDA simulator")


def on_device(*arrays):
    if not ON_GPU:
        return arrays
    import cupy
    return tuple(None if a is None else cupy.asarray(a) for a in arrays)


@needs_cuda
@pytest.mark.filterwarnings("ignore:.*Grid size")
@pytest.mark.parametrize("rung", CUDA_RUNGS, ids=lambda r: r.name)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", CUDA_CASES, ids=str)
def test_cuda_rung_layer_norm_kernels_on_group_norm_rows(rung, dtype, case):
    """The rows GroupNormFunction hands the kernel: no gain, no bias."""
    shape, groups = case
    x_np, dy_np = inputs(shape, dtype=dtype, offset=2.0)
    rows = np.ascontiguousarray(x_np.reshape(shape[0] * groups, -1))
    dy = np.ascontiguousarray(dy_np.reshape(rows.shape))
    results = []
    for kernels in (importlib.import_module(rung.module), reference):
        x, g = on_device(rows, dy)
        y, mean, rstd = kernels.layer_norm_forward(x, None, None, 1e-5)
        out = (y, mean, rstd) + tuple(kernels.layer_norm_backward(g, x, mean, rstd, None))
        results.append([None if a is None else tinynet.backend.as_numpy(a) for a in out])
    assert_results_match(results[0], results[1], rows, RTOL[dtype])


@pytest.mark.skipif(not SIMULATED, reason="the CUDA kernels on host arrays: simulator only")
@pytest.mark.filterwarnings("ignore:.*Grid size")
@pytest.mark.parametrize("rung", CUDA_RUNGS, ids=lambda r: r.name)
def test_group_norm_op_on_the_cuda_rungs_matches_the_reference(rung, monkeypatch):
    """F.group_norm end to end with the CUDA rung's kernels: the simulator runs them
    on NumPy arrays, so the op is pointed at the CUDA kernel table."""
    case = ((2, 4, 3, 1), 2)
    with tinynet.use_kernels("reference"):
        expected = group_norm_results(*case, np.float64)
    cuda_table = KernelTable("cuda")
    monkeypatch.setattr(norm_ops, "kernels_for", lambda array: cuda_table)
    with tinynet.use_kernels(rung.name):
        module, _, name = ladder.kernel_target("cuda", rung.name,
                                               "layer_norm_forward").partition(":")
        assert cuda_table.layer_norm_forward is getattr(
            importlib.import_module(module), name)
        actual = group_norm_results(*case, np.float64)
    for what, a, e in zip(("y", "dx", "dweight", "dbias"), actual, expected, strict=True):
        np.testing.assert_allclose(a, e, rtol=1e-12, atol=1e-12, err_msg=what)


# ------------------------------------------------------------------------ errors

def t(*shape):
    return tinynet.tensor(np.random.default_rng(0).standard_normal(shape))


@pytest.mark.parametrize("call, message", [
    # num_groups not dividing the channels
    (lambda: nn.GroupNorm(3, 4), r"GroupNorm: num_channels \(4\) must be divisible by "
                                 r"num_groups \(3\)"),
    (lambda: F.group_norm(t(2, 4, 3), 3),
     r"group_norm: expected the number of channels \(4\) to be divisible by num_groups, "
     r"got num_groups=3"),
    (lambda: F.group_norm(t(2, 4, 3), 0), r"divisible by num_groups, got num_groups=0"),
    # the wrong number of channels
    (lambda: nn.GroupNorm(2, 4)(t(2, 6, 3, 3)),
     r"GroupNorm\(2, 4\): expected input \(N, 4, \*spatial\), got shape \(2, 6, 3, 3\)"),
    (lambda: F.group_norm(t(2, 4, 3), 2, tinynet.ones(3)),
     r"group_norm: weight has shape \(3,\), but the input of shape \(2, 4, 3\) has 4 channels"),
    (lambda: nn.InstanceNorm2d(4)(t(2, 3, 3, 3)),
     r"InstanceNorm2d\(4\): expected a 4-D input \(N, 4, ...\), got shape \(2, 3, 3, 3\)"),
    (lambda: nn.InstanceNorm1d(4)(t(2, 3, 5)), r"InstanceNorm1d\(4\): expected a 3-D input"),
    (lambda: nn.BatchNorm2d(4)(t(2, 3, 3, 3)),
     r"BatchNorm2d\(4\): expected a 4-D input \(N, 4, ...\), got shape \(2, 3, 3, 3\)"),
    (lambda: nn.LayerNorm([3, 4, 4])(t(2, 3, 4, 5)), r"normalized_shape \(3, 4, 4\)"),
    # the wrong number of dims
    (lambda: nn.GroupNorm(2, 4)(t(4)), r"GroupNorm\(2, 4\): expected input \(N, 4"),
    (lambda: F.group_norm(t(4), 2), r"group_norm: expected an input \(N, C, \*spatial\)"),
    (lambda: nn.InstanceNorm1d(3)(t(2, 3, 4, 4)), r"InstanceNorm1d\(3\): expected a 3-D"),
    (lambda: nn.InstanceNorm2d(3)(t(2, 3, 4, 4, 4)), r"InstanceNorm2d\(3\): expected a 4-D"),
    (lambda: F.instance_norm(t(2, 3)), r"instance_norm: expected an input \(N, C, \*spatial\)"),
    (lambda: nn.BatchNorm2d(3)(t(2, 3, 5)),
     r"BatchNorm2d\(3\): expected a 4-D input \(N, 3, ...\), got shape \(2, 3, 5\)"),
    (lambda: F.batch_norm(t(3), None, None, training=True), r"batch_norm: expected an input"),
    # one value per channel in a training batch
    (lambda: nn.BatchNorm2d(3)(t(1, 3, 1, 1)),
     r"more than 1 value per channel when training, got input of shape \(1, 3, 1, 1\)"),
    (lambda: nn.InstanceNorm2d(3)(t(2, 3, 1, 1)),
     r"more than 1 spatial element when training, got input of shape \(2, 3, 1, 1\)"),
    (lambda: nn.InstanceNorm1d(3, track_running_stats=True)(t(4, 3, 1)),
     r"more than 1 spatial element"),
])
def test_bad_input_raises_a_clear_value_error(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_one_value_per_channel_is_fine_in_eval():
    layer = nn.BatchNorm2d(3, dtype=tinynet.float64)
    layer.eval()
    x = t(1, 3, 1, 1)
    np.testing.assert_allclose(layer(x).numpy(), x.numpy() / np.sqrt(1 + 1e-5), rtol=1e-12)
