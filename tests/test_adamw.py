"""AdamW: PyTorch's decoupled weight decay, step by step, in float64."""
import numpy as np
import pytest

import tinynet
from tinynet import nn, optim

torch = pytest.importorskip("torch")

STEPS = 60


def gradient(values, seed):
    """A made-up gradient field of the current parameters, the same for both libraries."""
    noise = np.random.default_rng(seed).standard_normal(values.shape)
    return 2 * values + 0.3 * values ** 3 + noise


def groups(lib, tensors):
    """Three groups: the defaults, no weight decay, and a larger lr and decay."""
    return [{"params": [tensors[0]]},
            {"params": [tensors[1]], "weight_decay": 0.0},
            {"params": [tensors[2]], "lr": 0.05, "weight_decay": 0.3}]


def run(lib, make_optimizer, steps=STEPS):
    rng = np.random.default_rng(0)
    start = [rng.standard_normal(shape) for shape in ((4, 3), (3,), (5,))]
    if lib is tinynet:
        params = [nn.Parameter(tinynet.tensor(a)) for a in start]
    else:
        params = [torch.nn.Parameter(torch.tensor(a)) for a in start]
    opt = make_optimizer(lib, params)
    path = []
    for step in range(steps):
        for i, p in enumerate(params):
            g = gradient(p.detach().numpy(), seed=100 * step + i)
            p.grad = lib.tensor(g)
        opt.step()
        path.append([p.detach().numpy().copy() for p in params])
    return path


ADAMW = {
    "defaults": lambda lib, p: lib.optim.AdamW(p),
    "groups": lambda lib, p: lib.optim.AdamW(groups(lib, p), lr=0.01),
    "betas_eps": lambda lib, p: lib.optim.AdamW(groups(lib, p), lr=0.02, betas=(0.8, 0.95),
                                                eps=1e-4, weight_decay=0.1),
}


@pytest.mark.parametrize("reference_kernels", [False, True])
@pytest.mark.parametrize("name", sorted(ADAMW))
def test_adamw_matches_torch_every_step(name, reference_kernels):
    with tinynet.use_reference_kernels(reference_kernels):
        ours = run(tinynet, ADAMW[name])
    ref = run(torch, ADAMW[name])
    for step, (a, b) in enumerate(zip(ours, ref, strict=True)):
        for x, y in zip(a, b, strict=True):
            np.testing.assert_allclose(x, y, rtol=1e-12, atol=1e-15, err_msg=f"step {step}")


def test_adamw_defaults_are_torchs():
    ours = optim.AdamW([nn.Parameter(tinynet.ones(2))]).defaults
    ref = torch.optim.AdamW([torch.nn.Parameter(torch.ones(2))]).defaults
    for key in ("lr", "betas", "eps", "weight_decay", "decoupled_weight_decay"):
        assert ours[key] == ref[key], key


def test_adamw_without_decay_is_adam():
    adamw = run(tinynet, lambda lib, p: optim.AdamW(p, lr=0.01, weight_decay=0), steps=10)
    adam = run(tinynet, lambda lib, p: optim.Adam(p, lr=0.01), steps=10)
    for a, b in zip(adamw, adam, strict=True):
        for x, y in zip(a, b, strict=True):
            np.testing.assert_array_equal(x, y)


def test_adamw_decay_is_not_adams_l2_decay():
    adamw = run(tinynet, lambda lib, p: optim.AdamW(p, lr=0.01, weight_decay=0.5), steps=5)
    adam = run(tinynet, lambda lib, p: optim.Adam(p, lr=0.01, weight_decay=0.5), steps=5)
    assert not np.allclose(adamw[-1][0], adam[-1][0], rtol=1e-6)


def test_adamw_state_dict_round_trip_continues_the_same_path(tmp_path):
    uninterrupted = run(tinynet, ADAMW["groups"], steps=12)[-1]

    rng = np.random.default_rng(0)
    start = [rng.standard_normal(shape) for shape in ((4, 3), (3,), (5,))]

    def resume(params, saved, first_step):
        opt = ADAMW["groups"](tinynet, params)
        if saved is not None:
            opt.load_state_dict(saved)
        for step in range(first_step, first_step + 6):
            for i, p in enumerate(params):
                p.grad = tinynet.tensor(gradient(p.numpy(), seed=100 * step + i))
            opt.step()
        return opt

    params = [nn.Parameter(tinynet.tensor(a)) for a in start]
    tinynet.save(resume(params, None, 0).state_dict(), tmp_path / "adamw.npz")
    resumed = [nn.Parameter(tinynet.tensor(p.numpy().copy())) for p in params]
    resume(resumed, tinynet.load(tmp_path / "adamw.npz"), 6)
    for x, y in zip(resumed, uninterrupted, strict=True):
        np.testing.assert_array_equal(x.numpy(), y)


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(weight_decay=-0.1), ValueError, "AdamW: weight_decay must be >= 0"),
    (dict(lr=float("nan")), ValueError, "AdamW: lr is NaN"),
    (dict(betas=(0.9, 1.0)), ValueError, r"AdamW: betas\[1\] must be in \[0, 1\)"),
    (dict(betas=0.9), TypeError, "AdamW: betas must be a pair"),
    (dict(eps="1e-8"), TypeError, "AdamW: eps must be a real number"),
])
def test_adamw_rejects_bad_hyperparameters(kwargs, error, match):
    with pytest.raises(error, match=match):
        optim.AdamW([nn.Parameter(tinynet.ones(2))], **kwargs)


def test_adamw_checks_each_parameter_group():
    a, b = nn.Parameter(tinynet.ones(2)), nn.Parameter(tinynet.ones(2))
    with pytest.raises(ValueError, match="AdamW: weight_decay"):
        optim.AdamW([{"params": [a]}, {"params": [b], "weight_decay": -1.0}])
    with pytest.raises(TypeError, match="AdamW: decoupled_weight_decay"):
        optim.AdamW([{"params": [a], "decoupled_weight_decay": 1}])
