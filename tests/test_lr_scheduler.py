"""Learning-rate schedulers: PyTorch's lr after every step, state dicts, argument checks."""
import math

import numpy as np
import pytest

import tinynet
from tinynet import nn, optim
from tinynet.optim import lr_scheduler

torch = pytest.importorskip("torch")

STEPS = 40
LRS = (0.1, 0.03)


def make_optimizer(lib):
    """SGD with two parameter groups of different learning rates."""
    if lib is tinynet:
        a, b = nn.Parameter(tinynet.ones(2)), nn.Parameter(tinynet.ones(3))
    else:
        a, b = torch.nn.Parameter(torch.ones(2)), torch.nn.Parameter(torch.ones(3))
    return lib.optim.SGD([{"params": [a]}, {"params": [b], "lr": LRS[1]}], lr=LRS[0])


def resumed_by_last_epoch(make, last_epoch):
    """Build with ``last_epoch`` given, the groups already holding their initial_lr."""
    def build(S, opt):
        for group in opt.param_groups:
            group["initial_lr"] = group["lr"]
        return make(S, opt, last_epoch)
    return build


class Warmup:
    """A callable object with state, which LambdaLR's state dict keeps."""

    def __init__(self, epochs):
        self.epochs = epochs

    def __call__(self, epoch):
        return min(1.0, (epoch + 1) / self.epochs)


SCHEDULERS = {
    "step": lambda S, opt: S.StepLR(opt, step_size=7, gamma=0.5),
    "step_default_gamma": lambda S, opt: S.StepLR(opt, 3),
    "multistep": lambda S, opt: S.MultiStepLR(opt, milestones=[5, 12, 20], gamma=0.3),
    "exponential": lambda S, opt: S.ExponentialLR(opt, gamma=0.9),
    "cosine_restarts_past_T_max": lambda S, opt: S.CosineAnnealingLR(opt, T_max=10,
                                                                     eta_min=0.001),
    "cosine": lambda S, opt: S.CosineAnnealingLR(opt, T_max=STEPS),
    "lambda": lambda S, opt: S.LambdaLR(opt, lambda epoch: 0.95 ** epoch),
    "lambda_per_group": lambda S, opt: S.LambdaLR(
        opt, [lambda epoch: 1 / (1 + epoch), Warmup(8)]),
    "linear_defaults": lambda S, opt: S.LinearLR(opt),
    "linear_warmup": lambda S, opt: S.LinearLR(opt, start_factor=0.1, end_factor=0.9,
                                               total_iters=8),
    "linear_decay": lambda S, opt: S.LinearLR(opt, start_factor=1.0, end_factor=0.2,
                                              total_iters=30),
    "warmup_then_cosine": lambda S, opt: S.SequentialLR(
        opt, [S.LinearLR(opt, start_factor=0.1, total_iters=5),
              S.CosineAnnealingLR(opt, T_max=30, eta_min=1e-4)], milestones=[5]),
    "three_phases": lambda S, opt: S.SequentialLR(
        opt, [S.ExponentialLR(opt, 0.8), S.StepLR(opt, 3, gamma=0.7),
              S.MultiStepLR(opt, [4, 9])], milestones=[6, 15]),
    "sequential_lambda": lambda S, opt: S.SequentialLR(
        opt, [S.StepLR(opt, 2), S.LambdaLR(opt, lambda epoch: 0.9 ** epoch)],
        milestones=[10]),
    "step_last_epoch": resumed_by_last_epoch(
        lambda S, opt, e: S.StepLR(opt, 4, gamma=0.5, last_epoch=e), 6),
    "cosine_last_epoch": resumed_by_last_epoch(
        lambda S, opt, e: S.CosineAnnealingLR(opt, 12, last_epoch=e), 7),
}


def lr_history(lib, name, steps=STEPS):
    """[group lrs, get_last_lr()] after building the scheduler and after each step."""
    S = lr_scheduler if lib is tinynet else torch.optim.lr_scheduler
    opt = make_optimizer(lib)
    scheduler = SCHEDULERS[name](S, opt)
    history = []
    for _ in range(steps + 1):
        history.append(([g["lr"] for g in opt.param_groups], scheduler.get_last_lr()))
        opt.step()
        scheduler.step()
    return history


@pytest.mark.parametrize("name", sorted(SCHEDULERS))
def test_lr_after_every_step_matches_torch(name):
    ours, ref = lr_history(tinynet, name), lr_history(torch, name)
    for step, ((lrs, last), (ref_lrs, ref_last)) in enumerate(zip(ours, ref, strict=True)):
        np.testing.assert_allclose(lrs, ref_lrs, rtol=1e-12, atol=0, err_msg=f"step {step}")
        np.testing.assert_allclose(last, ref_last, rtol=1e-12, atol=0, err_msg=f"step {step}")
        assert lrs == last
    assert len({tuple(lrs) for lrs, _ in ours}) > 2          # the schedule does move


@pytest.mark.parametrize("name", sorted(SCHEDULERS))
def test_state_dict_round_trip_continues_the_schedule(name, tmp_path):
    uninterrupted = lr_history(tinynet, name)

    opt = make_optimizer(tinynet)
    scheduler = SCHEDULERS[name](lr_scheduler, opt)
    for _ in range(13):
        opt.step()
        scheduler.step()
    tinynet.save({"optimizer": opt.state_dict(), "scheduler": scheduler.state_dict()},
                 tmp_path / "checkpoint.npz")
    saved = tinynet.load(tmp_path / "checkpoint.npz")

    opt = make_optimizer(tinynet)                # rebuilt as at the start, then loaded
    scheduler = SCHEDULERS[name](lr_scheduler, opt)
    opt.load_state_dict(saved["optimizer"])
    scheduler.load_state_dict(saved["scheduler"])
    for step in range(13, STEPS + 1):
        assert [g["lr"] for g in opt.param_groups] == uninterrupted[step][0], f"step {step}"
        assert scheduler.get_last_lr() == uninterrupted[step][1]
        opt.step()
        scheduler.step()


def test_lambda_state_dict_keeps_callable_objects_not_functions():
    opt = make_optimizer(tinynet)
    warmup = Warmup(8)
    scheduler = lr_scheduler.LambdaLR(opt, [lambda epoch: 1.0, warmup])
    ref = torch.optim.lr_scheduler.LambdaLR(make_optimizer(torch), [lambda epoch: 1.0, Warmup(8)])
    assert scheduler.state_dict()["lr_lambdas"] == ref.state_dict()["lr_lambdas"]
    assert scheduler.state_dict()["lr_lambdas"] == [None, {"epochs": 8}]
    state = scheduler.state_dict()
    state["lr_lambdas"][1]["epochs"] = 4
    scheduler.load_state_dict(state)
    assert warmup.epochs == 4


def test_state_dict_is_a_copy_and_get_last_lr_too():
    opt = make_optimizer(tinynet)
    scheduler = lr_scheduler.StepLR(opt, 2)
    scheduler.state_dict()["base_lrs"][0] = 5.0
    scheduler.get_last_lr()[0] = 5.0
    assert scheduler.base_lrs[0] == LRS[0] and scheduler.get_last_lr()[0] == LRS[0]


def test_scheduler_sets_the_lr_that_the_optimizer_uses():
    p = nn.Parameter(tinynet.zeros(1, dtype=tinynet.float64))
    opt = optim.SGD([p], lr=1.0)
    scheduler = lr_scheduler.ExponentialLR(opt, gamma=0.5)
    for _ in range(3):
        p.grad = tinynet.ones(1, dtype=tinynet.float64)
        opt.step()
        scheduler.step()
    assert p.item() == pytest.approx(-(1.0 + 0.5 + 0.25), rel=1e-15)


def other_optimizer_scheduler(S, opt):
    return S.SequentialLR(opt, [S.StepLR(opt, 2), S.StepLR(make_optimizer(tinynet), 2)], [3])


@pytest.mark.parametrize("build, error, match", [
    (lambda S, opt: S.StepLR(opt, 0), ValueError, "StepLR: step_size must be at least 1"),
    (lambda S, opt: S.StepLR(opt, 2.5), TypeError, "StepLR: step_size must be an integer"),
    (lambda S, opt: S.StepLR(opt, 3, gamma=0), ValueError, "StepLR: gamma must be above 0"),
    (lambda S, opt: S.StepLR(opt, 3, gamma=-0.5), ValueError, "StepLR: gamma must be >= 0"),
    (lambda S, opt: S.ExponentialLR(opt, 0.0), ValueError, "ExponentialLR: gamma must be above"),
    (lambda S, opt: S.ExponentialLR(opt, math.nan), ValueError, "ExponentialLR: gamma is NaN"),
    (lambda S, opt: S.MultiStepLR(opt, [5, 3]), ValueError, "MultiStepLR: milestones must be "
     "increasing"),
    (lambda S, opt: S.MultiStepLR(opt, [3, 3]), ValueError, "milestones must be increasing"),
    (lambda S, opt: S.MultiStepLR(opt, [0, 3]), ValueError, r"milestones\[0\] must be at least"),
    (lambda S, opt: S.MultiStepLR(opt, 5), TypeError, "MultiStepLR: milestones must be a list"),
    (lambda S, opt: S.CosineAnnealingLR(opt, 0), ValueError, "CosineAnnealingLR: T_max"),
    (lambda S, opt: S.CosineAnnealingLR(opt, 10, eta_min=-1e-3), ValueError, "eta_min"),
    (lambda S, opt: S.LinearLR(opt, start_factor=0), ValueError, "start_factor must be above 0"),
    (lambda S, opt: S.LinearLR(opt, start_factor=1.5), ValueError, "LinearLR: start_factor"),
    (lambda S, opt: S.LinearLR(opt, end_factor=-0.1), ValueError, "LinearLR: end_factor"),
    (lambda S, opt: S.LinearLR(opt, total_iters=0), ValueError, "LinearLR: total_iters"),
    (lambda S, opt: S.LambdaLR(opt, [lambda e: 1.0]), ValueError, "expected 2 lr_lambdas"),
    (lambda S, opt: S.LambdaLR(opt, 0.5), TypeError, "LambdaLR: lr_lambda must be a function"),
    (lambda S, opt: S.SequentialLR(opt, [S.StepLR(opt, 2), S.StepLR(opt, 3)], [2, 4]),
     ValueError, "2 schedulers need 1 milestones, got 2"),
    (lambda S, opt: S.SequentialLR(opt, [], []), ValueError, "SequentialLR: schedulers must"),
    (other_optimizer_scheduler, ValueError, r"schedulers\[1\] \(StepLR\) is not a scheduler "
     "of this optimizer"),
    (lambda S, opt: S.StepLR("sgd", 2), TypeError, "StepLR: optimizer must be"),
    (lambda S, opt: S.StepLR(opt, 2, last_epoch=-2), ValueError, "StepLR: last_epoch"),
    (lambda S, opt: S.StepLR(opt, 2, last_epoch=5), KeyError, "initial_lr"),
])
def test_bad_arguments_are_named(build, error, match):
    with pytest.raises(error, match=match):
        build(lr_scheduler, make_optimizer(tinynet))


def test_load_state_dict_refuses_another_schedulers_state():
    opt = make_optimizer(tinynet)
    cosine = lr_scheduler.CosineAnnealingLR(opt, 10)
    with pytest.raises(ValueError, match="CosineAnnealingLR.load_state_dict: the state has keys"):
        cosine.load_state_dict(lr_scheduler.StepLR(make_optimizer(tinynet), 2).state_dict())
