"""Adadelta, RMSprop, Adagrad, AMSGrad and maximize: PyTorch's trajectories step by
step in float64, their state, parameter groups, state dicts and hyper-parameter checks."""
import math

import numpy as np
import pytest

import tinynet
from tinynet import nn, optim

try:
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="needs torch")

STEPS = 50
SHAPES = {"weight": (3, 5), "bias": (3,), "c": (4,), "frozen": (2,)}


def problem():
    """Fixed data and starting weights: a tanh layer fit to targets, plus a quartic in c."""
    rng = np.random.default_rng(0)
    data = dict(x=rng.standard_normal((16, 5)), y=rng.uniform(-0.8, 0.8, (16, 3)),
                v=rng.standard_normal(4))
    start = {name: rng.standard_normal(shape) * 0.5 for name, shape in SHAPES.items()}
    return data, start


def make_params(lib, start):
    if lib is tinynet:
        params = {k: nn.Parameter(tinynet.tensor(a.copy())) for k, a in start.items()}
    else:
        params = {k: torch.nn.Parameter(torch.tensor(a.copy())) for k, a in start.items()}
    params["frozen"].requires_grad_(False)      # in a group, never given a gradient
    return params


def backward(lib, params, data, step, sign):
    """sign · loss, backward; c gets a gradient at even steps only (None at odd ones)."""
    x, y, v = (lib.tensor(data[k]) for k in ("x", "y", "v"))
    w, b, c = params["weight"], params["bias"], params["c"]
    r = (x @ w.T + b).tanh() - y
    loss = (r * r).mean() + 0.05 * (c * c * c * c).sum() - (c * v).sum()
    for p in params.values():
        p.grad = None
    (loss * sign).backward()
    if step % 2:
        c.grad = None


def groups(params, override):
    """Two groups: the weight with the defaults; bias, c and a frozen one with ``override``."""
    return [{"params": [params["weight"]]},
            {"params": [params["bias"], params["c"], params["frozen"]], **override}]


def run(lib, config, steps=STEPS, params=None, saved=None, first_step=0):
    """The parameters after every step, the optimizer and its parameters."""
    name, kwargs, override = config
    data, start = problem()
    params = make_params(lib, start) if params is None else params
    opt = getattr(lib.optim, name)(groups(params, override), **kwargs)
    if saved is not None:
        opt.load_state_dict(saved)
    sign = -1 if kwargs.get("maximize", override.get("maximize", False)) else 1
    path = []
    for step in range(first_step, first_step + steps):
        backward(lib, params, data, step, sign)
        opt.step()
        path.append({k: np.array(p.detach().numpy()) for k, p in params.items()})
    return path, opt, params


CONFIGS = {
    "adadelta": ("Adadelta", {}, {"lr": 0.5}),
    "adadelta_rho_eps_wd": ("Adadelta", dict(lr=2.0, rho=0.8, eps=1e-4, weight_decay=0.1),
                            {"rho": 0.95, "weight_decay": 0.0}),
    "adadelta_maximize": ("Adadelta", dict(maximize=True), {"eps": 1e-3}),
    "rmsprop": ("RMSprop", {}, {"lr": 0.003}),
    "rmsprop_momentum": ("RMSprop", dict(momentum=0.9, lr=1e-3), {"momentum": 0.5}),
    "rmsprop_centered": ("RMSprop", dict(centered=True), {"alpha": 0.9}),
    # α ≤ 0.5: lerp's other branch. With lr = 1e-3 the gradient would hardly move, its
    # centered variance would cancel to rounding noise and the paths drift apart by 1e-13.
    "rmsprop_centered_small_alpha": ("RMSprop", dict(centered=True, alpha=0.3, lr=1e-2,
                                                     eps=1e-2), {"alpha": 0.5}),
    "rmsprop_all": ("RMSprop", dict(centered=True, momentum=0.8, weight_decay=0.05, lr=1e-3,
                                    eps=1e-6), {"centered": False, "weight_decay": 0.2}),
    "rmsprop_maximize": ("RMSprop", dict(maximize=True, momentum=0.3), {"centered": True}),
    "adagrad": ("Adagrad", {}, {"lr": 0.1}),
    "adagrad_lr_decay": ("Adagrad", dict(lr=0.1, lr_decay=0.05), {"lr_decay": 0.5}),
    "adagrad_wd_eps": ("Adagrad", dict(weight_decay=0.1, eps=1e-3), {"weight_decay": 0.0}),
    "adagrad_initial_accumulator": ("Adagrad", dict(lr=0.2, initial_accumulator_value=0.5),
                                    {"lr": 0.5}),
    "adagrad_maximize": ("Adagrad", dict(maximize=True, lr_decay=0.01), {}),
    "adam_amsgrad": ("Adam", dict(lr=0.02, amsgrad=True), {"lr": 0.05}),
    "adam_amsgrad_wd": ("Adam", dict(lr=0.02, amsgrad=True, weight_decay=0.1),
                        {"betas": (0.8, 0.99)}),
    "adam_amsgrad_small_beta1": ("Adam", dict(lr=0.01, betas=(0.3, 0.9), amsgrad=True),
                                 {"amsgrad": False}),
    "adam_maximize": ("Adam", dict(lr=0.02, maximize=True, weight_decay=0.05), {}),
    "adam_amsgrad_maximize": ("Adam", dict(lr=0.02, maximize=True, amsgrad=True), {}),
    "adam_decoupled_amsgrad": ("Adam", dict(lr=0.02, amsgrad=True, weight_decay=0.1,
                                            decoupled_weight_decay=True), {}),
    "adamw_amsgrad": ("AdamW", dict(lr=0.02, amsgrad=True), {"weight_decay": 0.5}),
    "adamw_maximize": ("AdamW", dict(lr=0.02, maximize=True), {"amsgrad": True}),
    "sgd_default_lr": ("SGD", {}, {"lr": 0.05}),
    "sgd_maximize": ("SGD", dict(lr=0.05, maximize=True), {}),
    "sgd_maximize_nesterov": ("SGD", dict(lr=0.05, momentum=0.9, nesterov=True,
                                          weight_decay=0.01, maximize=True), {}),
}


def assert_same_path(ours, ref, rtol=1e-12, atol=1e-12):
    for step, (a, b) in enumerate(zip(ours, ref, strict=True)):
        for k in a:
            np.testing.assert_allclose(a[k], b[k], rtol=rtol, atol=atol,
                                       err_msg=f"{k} after step {step + 1}")


@needs_torch
@pytest.mark.parametrize("reference_kernels", [False, True])
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_matches_torch_every_step(name, reference_kernels):
    with tinynet.use_reference_kernels(reference_kernels):
        ours, opt, params = run(tinynet, CONFIGS[name])
    ref, ref_opt, ref_params = run(torch, CONFIGS[name])
    assert_same_path(ours, ref)
    assert not np.allclose(ours[-1]["weight"], problem()[1]["weight"])   # it did move
    np.testing.assert_array_equal(ours[-1]["frozen"], problem()[1]["frozen"])
    # The same state as PyTorch's, by name and value, for every parameter that has one.
    for k, p in params.items():
        state, ref_state = opt.state.get(p, {}), ref_opt.state.get(ref_params[k], {})
        assert sorted(state) == sorted(ref_state), k
        for key, value in ref_state.items():
            value = value.numpy()       # to 1e-10 of the largest entry (v is ~g², tiny)
            np.testing.assert_allclose(np.asarray(state[key]), value, rtol=1e-10,
                                       atol=1e-10 * np.abs(value).max(),
                                       err_msg=f"state[{k}][{key!r}]")


def test_a_parameter_without_grad_keeps_its_state_and_its_step_count():
    """c has a gradient every other step: its step count is half the weight's."""
    for name in ("adadelta", "rmsprop_all", "adagrad", "adam_amsgrad"):
        _, opt, params = run(tinynet, CONFIGS[name], steps=6)
        assert opt.state[params["weight"]]["step"] == 6
        assert opt.state[params["c"]]["step"] == 3
        assert opt.state.get(params["frozen"], {}).get("step", 0) == 0


@needs_torch
@pytest.mark.parametrize("name", ["Adadelta", "RMSprop", "Adagrad", "SGD", "Adam", "AdamW"])
def test_defaults_are_torchs(name):
    ours = getattr(optim, name)([nn.Parameter(tinynet.ones(2))]).defaults
    ref = getattr(torch.optim, name)([torch.nn.Parameter(torch.ones(2))]).defaults
    assert set(ours) <= set(ref)
    for key, value in ours.items():
        assert value == ref[key], key


def test_adagrad_makes_its_state_when_a_parameter_joins():
    """With each group's own initial_accumulator_value (PyTorch takes the constructor's)."""
    a, b = nn.Parameter(tinynet.ones(2)), nn.Parameter(tinynet.ones(3))
    opt = optim.Adagrad([a], initial_accumulator_value=0.25)
    opt.add_param_group({"params": [b], "initial_accumulator_value": 1.5})
    assert opt.state[a]["step"] == 0 and opt.state[b]["step"] == 0
    np.testing.assert_array_equal(opt.state[a]["sum"], 0.25)
    np.testing.assert_array_equal(opt.state[b]["sum"], 1.5)


def test_amsgrad_divides_by_the_largest_second_moment():
    """A large gradient, then small ones: v decays, v̂ keeps the large value."""
    p = nn.Parameter(tinynet.zeros(1, dtype=tinynet.float64))
    opt = optim.Adam([p], lr=0.1, amsgrad=True)
    for g in (10.0, 0.1, 0.1):
        p.grad = tinynet.tensor(np.array([g]))
        opt.step()
    state = opt.state[p]
    assert state["max_exp_avg_sq"][0] == pytest.approx(0.001 * 100)
    assert state["exp_avg_sq"][0] < state["max_exp_avg_sq"][0]


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW", "Adadelta", "RMSprop", "Adagrad"])
def test_maximize_is_minimizing_the_negated_gradient(name):
    def final(maximize):
        p = nn.Parameter(tinynet.tensor(np.linspace(-1.0, 1.0, 5)))
        opt = getattr(optim, name)([p], maximize=maximize)
        for step in range(5):
            g = np.cos(p.numpy() + step)
            p.grad = tinynet.tensor(-g if maximize else g)
            opt.step()
        return p.numpy()
    np.testing.assert_array_equal(final(True), final(False))


@pytest.mark.parametrize("name", ["adadelta_rho_eps_wd", "rmsprop_all", "adagrad_lr_decay",
                                  "adam_amsgrad_wd", "adamw_maximize"])
def test_float32_stays_float32_and_in_place(name):
    _, start = problem()
    params = make_params(tinynet, {k: a.astype(np.float32) for k, a in start.items()})
    arrays = {k: p.array for k, p in params.items()}
    path, opt, _ = run(tinynet, CONFIGS[name], steps=3, params=params)
    for k, p in params.items():
        assert p.array is arrays[k] and p.dtype == tinynet.float32, k
        assert all(v.dtype == np.float32 for v in opt.state.get(p, {}).values()
                   if hasattr(v, "dtype")), k
    assert np.isfinite(path[-1]["weight"]).all()


ROUND_TRIP = ["adadelta_rho_eps_wd", "rmsprop_all", "rmsprop_maximize", "adagrad_lr_decay",
              "adagrad_initial_accumulator", "adam_amsgrad_wd", "adamw_maximize",
              "sgd_maximize_nesterov"]


@pytest.mark.parametrize("name", ROUND_TRIP)
def test_state_dict_round_trip_continues_the_same_path(name, tmp_path):
    config = CONFIGS[name]
    uninterrupted, _, _ = run(tinynet, config, steps=20)
    first, opt, params = run(tinynet, config, steps=10)
    tinynet.save(opt.state_dict(), tmp_path / "opt.npz")
    resumed = {k: nn.Parameter(tinynet.tensor(p.numpy().copy())) for k, p in params.items()}
    resumed["frozen"].requires_grad_(False)
    second, _, _ = run(tinynet, config, steps=10, params=resumed,
                       saved=tinynet.load(tmp_path / "opt.npz"), first_step=10)
    for a, b in zip(first + second, uninterrupted, strict=True):
        for k in a:
            np.testing.assert_array_equal(a[k], b[k])


@needs_torch
@pytest.mark.parametrize("name", ["adadelta", "rmsprop_all", "adagrad_lr_decay",
                                  "adam_amsgrad", "sgd_maximize_nesterov"])
def test_state_dict_has_torchs_layout(name):
    _, opt, _ = run(tinynet, CONFIGS[name], steps=3)
    _, ref_opt, _ = run(torch, CONFIGS[name], steps=3)
    ours, ref = opt.state_dict(), ref_opt.state_dict()
    assert sorted(ours["state"]) == sorted(ref["state"])
    for i, state in ours["state"].items():
        ref_state = ref["state"][i]
        assert sorted(state) == sorted(ref_state)
        if "step" in ref_state:
            assert state["step"] == ref_state["step"].item()
    for group, ref_group in zip(ours["param_groups"], ref["param_groups"], strict=True):
        for key, value in group.items():
            expected = ref_group[key]
            assert tuple(value) == tuple(expected) if key == "betas" else value == expected, key

def parameters():
    return [nn.Parameter(tinynet.ones(2))]


@pytest.mark.parametrize("name, kwargs, error, match", [
    ("Adadelta", dict(lr=-1.0), ValueError, "Adadelta: lr must be >= 0, got -1.0"),
    ("Adadelta", dict(rho=1.5), ValueError, r"Adadelta: rho must be in \[0, 1\], got 1.5"),
    ("Adadelta", dict(eps=-1e-6), ValueError, "Adadelta: eps must be >= 0, got -1e-06"),
    ("Adadelta", dict(weight_decay=-0.1), ValueError, "Adadelta: weight_decay must be >= 0"),
    ("Adadelta", dict(rho=math.nan), ValueError, "Adadelta: rho is NaN"),
    ("Adadelta", dict(maximize=1), TypeError, "Adadelta: maximize must be True or False"),
    ("RMSprop", dict(lr=-0.1), ValueError, "RMSprop: lr must be >= 0, got -0.1"),
    ("RMSprop", dict(alpha=-0.5), ValueError, r"RMSprop: alpha must be in \[0, 1\], got -0.5"),
    ("RMSprop", dict(alpha=1.5), ValueError, r"RMSprop: alpha must be in \[0, 1\], got 1.5"),
    ("RMSprop", dict(eps=-1.0), ValueError, "RMSprop: eps must be >= 0, got -1.0"),
    ("RMSprop", dict(momentum=-0.9), ValueError, "RMSprop: momentum must be >= 0, got -0.9"),
    ("RMSprop", dict(weight_decay=-1), ValueError, "RMSprop: weight_decay must be >= 0"),
    ("RMSprop", dict(centered="yes"), TypeError, "RMSprop: centered must be True or False"),
    ("RMSprop", dict(alpha="0.9"), TypeError, "RMSprop: alpha must be a real number"),
    ("Adagrad", dict(lr=-0.01), ValueError, "Adagrad: lr must be >= 0, got -0.01"),
    ("Adagrad", dict(lr_decay=-1), ValueError, "Adagrad: lr_decay must be >= 0, got -1"),
    ("Adagrad", dict(weight_decay=-1), ValueError, "Adagrad: weight_decay must be >= 0"),
    ("Adagrad", dict(initial_accumulator_value=-0.1), ValueError,
     "Adagrad: initial_accumulator_value must be >= 0, got -0.1"),
    ("Adagrad", dict(eps=-1e-10), ValueError, "Adagrad: eps must be >= 0"),
    ("Adagrad", dict(maximize=None), TypeError, "Adagrad: maximize must be True or False"),
    ("Adam", dict(amsgrad=1), TypeError, "Adam: amsgrad must be True or False, got 1"),
    ("Adam", dict(maximize="no"), TypeError, "Adam: maximize must be True or False"),
    ("AdamW", dict(amsgrad=None), TypeError, "AdamW: amsgrad must be True or False"),
    ("SGD", dict(lr=-1e-3), ValueError, "SGD: lr must be >= 0, got -0.001"),
    ("SGD", dict(maximize=0), TypeError, "SGD: maximize must be True or False"),
])
def test_bad_hyperparameters_are_named(name, kwargs, error, match):
    with pytest.raises(error, match=match):
        getattr(optim, name)(parameters(), **kwargs)


@pytest.mark.parametrize("name, bad", [
    ("Adadelta", {"rho": -0.1}), ("RMSprop", {"momentum": -1.0}),
    ("RMSprop", {"centered": 1}), ("Adagrad", {"lr_decay": -0.5}),
    ("Adagrad", {"initial_accumulator_value": -1.0}), ("Adam", {"amsgrad": "yes"}),
])
def test_each_parameter_group_is_checked(name, bad):
    key = next(iter(bad))
    with pytest.raises((TypeError, ValueError), match=f"{name}: {key}"):
        getattr(optim, name)([{"params": parameters()}, {"params": parameters(), **bad}])
    opt = getattr(optim, name)(parameters())
    saved = opt.state_dict()
    saved["param_groups"][0].update(bad)
    with pytest.raises((TypeError, ValueError), match=f"{name}: {key}"):
        opt.load_state_dict(saved)


def test_good_edge_values_are_taken():
    """The other side of the checks above: they fail where a check refuses too much."""
    optim.Adadelta(parameters(), lr=0, rho=1, eps=0)
    optim.Adadelta(parameters(), rho=np.float32(0))
    optim.RMSprop(parameters(), alpha=1, momentum=0, eps=0, centered=True)
    optim.Adagrad(parameters(), lr_decay=0, initial_accumulator_value=0, eps=0)
    optim.Adam(parameters(), amsgrad=True, maximize=True)
    optim.SGD(parameters())
