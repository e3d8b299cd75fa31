"""Optimizers: PyTorch's trajectories, in-place updates, clipping, state dicts."""
import numpy as np
import pytest

import tinynet
from tinynet import nn, optim

torch = pytest.importorskip("torch")


def quadratic_problem(seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((8, 5)), rng.standard_normal(8), rng.standard_normal(5)


def trajectory(lib, make_opt, steps=20, dtype=np.float32):
    a, b, x0 = quadratic_problem()
    if lib is tinynet:
        x = nn.Parameter(tinynet.tensor(x0.astype(dtype)))
        A, B = tinynet.tensor(a.astype(dtype)), tinynet.tensor(b.astype(dtype))
    else:
        x = torch.nn.Parameter(torch.tensor(x0.astype(dtype)))
        A, B = torch.tensor(a.astype(dtype)), torch.tensor(b.astype(dtype))
    opt = make_opt(lib, [x])
    path = []
    for _ in range(steps):
        opt.zero_grad()
        r = A @ x - B
        ((r * r).sum() + (x * x * x).sum() * 0.01).backward()
        opt.step()
        path.append(np.array(x.detach().numpy()))
    return np.array(path)


OPTIMIZERS = {
    "sgd": lambda lib, p: lib.optim.SGD(p, lr=0.01),
    "sgd_momentum": lambda lib, p: lib.optim.SGD(p, lr=0.01, momentum=0.9),
    "sgd_nesterov_wd": lambda lib, p: lib.optim.SGD(p, lr=0.01, momentum=0.8, nesterov=True,
                                                    weight_decay=0.1),
    "sgd_dampening": lambda lib, p: lib.optim.SGD(p, lr=0.01, momentum=0.5, dampening=0.3),
    "adam": lambda lib, p: lib.optim.Adam(p, lr=0.05),
    "adam_betas_wd": lambda lib, p: lib.optim.Adam(p, lr=0.02, betas=(0.8, 0.99), eps=1e-6,
                                                   weight_decay=0.05),
}


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_trajectory_matches_torch(name, dtype):
    ours = trajectory(tinynet, OPTIMIZERS[name], dtype=dtype)
    ref = trajectory(torch, OPTIMIZERS[name], dtype=dtype)
    np.testing.assert_allclose(ours, ref, rtol=1e-6 if dtype == np.float64 else 2e-5, atol=1e-6)


@pytest.mark.parametrize("name", ["adam", "sgd_momentum"])
def test_updates_are_in_place(name):
    p = nn.Parameter(tinynet.randn(1000))
    opt = OPTIMIZERS[name](tinynet, [p])
    data = p.array
    for _ in range(3):
        p.grad = tinynet.randn(1000)
        opt.step()
    buffers = [id(v) for v in opt.state[p].values() if hasattr(v, "shape")]
    p.grad = tinynet.randn(1000)
    opt.step()
    assert p.array is data
    assert buffers == [id(v) for v in opt.state[p].values() if hasattr(v, "shape")]


def test_reference_and_fast_adam_agree():
    rng = np.random.default_rng(1)
    results = []
    for forced in (False, True):
        p = nn.Parameter(tinynet.tensor(rng.standard_normal(300).astype(np.float32) * 0 + 1))
        opt = optim.Adam([p], lr=0.01, weight_decay=0.01)
        grads = np.random.default_rng(2).standard_normal((5, 300)).astype(np.float32)
        with tinynet.use_reference_kernels(forced):
            for g in grads:
                p.grad = tinynet.tensor(g)
                opt.step()
        results.append(p.numpy().copy())
    np.testing.assert_allclose(results[0], results[1], rtol=1e-6, atol=1e-7)


def test_param_groups_have_their_own_hyperparameters():
    a, b = nn.Parameter(tinynet.ones(2)), nn.Parameter(tinynet.ones(2))
    opt = optim.SGD([{"params": [a]}, {"params": [b], "lr": 1.0}], lr=0.1)
    a.grad, b.grad = tinynet.ones(2), tinynet.ones(2)
    opt.step()
    np.testing.assert_allclose(a.numpy(), 0.9)
    np.testing.assert_allclose(b.numpy(), 0.0)


def test_optimizer_argument_errors():
    with pytest.raises(ValueError, match="empty parameter list"):
        optim.Adam([])
    with pytest.raises(TypeError, match="can only optimize Tensors"):
        optim.SGD([np.ones(2)], lr=0.1)
    with pytest.raises(ValueError, match="non-leaf"):
        optim.SGD([nn.Parameter(tinynet.ones(2)) * 2], lr=0.1)
    with pytest.raises(ValueError, match="nesterov"):
        optim.SGD([nn.Parameter(tinynet.ones(2))], lr=0.1, nesterov=True)


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW"])
def test_a_tensor_where_an_iterable_of_parameters_belongs_is_refused(name):
    """Iterating a tensor gives its rows: SGD(model.weight) would train nothing."""
    weight = nn.Parameter(tinynet.ones(3, 2))
    with pytest.raises(TypeError, match="iterable of Tensors or dicts, but got a Tensor"):
        getattr(optim, name)(weight, lr=0.1)
    group = getattr(optim, name)([{"params": weight}], lr=0.1).param_groups[0]
    assert group["params"] == [weight]


def test_a_frozen_parameter_is_kept_and_never_updated():
    """Fine-tuning hands every parameter to the optimizer, the frozen ones too."""
    frozen, trained = nn.Parameter(tinynet.ones(2)), nn.Parameter(tinynet.ones(2))
    frozen.requires_grad_(False)
    opt = optim.SGD([frozen, trained], lr=0.5)
    trained.grad = tinynet.ones(2)
    opt.step()
    np.testing.assert_array_equal(frozen.numpy(), 1.0)
    np.testing.assert_array_equal(trained.numpy(), 0.5)


def test_optimizer_zero_grad():
    p = nn.Parameter(tinynet.ones(2))
    opt = optim.SGD([p], lr=0.1)
    p.grad = tinynet.ones(2)
    opt.zero_grad(set_to_none=False)
    np.testing.assert_array_equal(p.grad.numpy(), 0)
    opt.zero_grad()
    assert p.grad is None


@pytest.mark.parametrize("norm_type", [2.0, 1.0, float("inf")])
def test_clip_grad_norm_matches_torch(norm_type):
    rng = np.random.default_rng(3)
    grads = [rng.standard_normal((3, 4)) * 5, rng.standard_normal(4)]
    ours = [nn.Parameter(tinynet.zeros(*g.shape, dtype=tinynet.float64)) for g in grads]
    ref = [torch.nn.Parameter(torch.zeros(g.shape, dtype=torch.float64)) for g in grads]
    for p, q, g in zip(ours, ref, grads, strict=True):
        p.grad, q.grad = tinynet.tensor(g), torch.tensor(g)
    total = optim.clip_grad_norm_(ours, 1.5, norm_type)
    total_ref = torch.nn.utils.clip_grad_norm_(ref, 1.5, norm_type)
    assert total.item() == pytest.approx(total_ref.item(), rel=1e-12)
    for p, q in zip(ours, ref, strict=True):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-12)


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta"])
def test_pytorchs_implementation_switches_are_taken(name):
    """foreach/fused/capturable choose among PyTorch's implementations of one rule; a
    program passes them (nanoGPT's fused=True), and tinynet's one implementation runs."""
    p = nn.Parameter(tinynet.ones(2))
    plain = getattr(optim, name)([p], lr=0.1)
    switched = getattr(optim, name)([p], lr=0.1, foreach=True, fused=True, capturable=False)
    assert plain.param_groups[0].keys() == switched.param_groups[0].keys()
    with pytest.raises(NotImplementedError, match="differentiable=True"):
        getattr(optim, name)([p], lr=0.1, differentiable=True)
    with pytest.raises(TypeError, match="fused must be None, True or False"):
        getattr(optim, name)([p], lr=0.1, fused="yes")
