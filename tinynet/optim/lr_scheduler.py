"""Learning-rate schedules (``tinynet.optim.lr_scheduler``), with PyTorch's numbers.

A scheduler sets its optimizer's ``group["lr"]``: building it records each group's
``initial_lr`` and sets the lr of epoch 0; each ``step()``, after ``optimizer.step()``,
sets the next from the current lr (as PyTorch, rounding included). To resume, build
both as at the start, then load their state dicts.
"""
from __future__ import annotations

import bisect
import copy
import math
import types
from itertools import pairwise

from ..hyperparameters import check_count, check_real
from ..lacking import lacking
from .optimizer import Optimizer

__all__ = ["LRScheduler", "StepLR", "MultiStepLR", "ExponentialLR", "CosineAnnealingLR",
           "LambdaLR", "LinearLR", "SequentialLR"]


def _check_positive(where: str, name: str, value, high: float = math.inf) -> float:
    if check_real(where, name, value, 0, high) == 0:
        raise ValueError(f"{where}: {name} must be above 0, got {value}")
    return float(value)


def _check_increasing(where: str, name: str, milestones) -> list[int]:
    if not isinstance(milestones, (list, tuple)):
        raise TypeError(f"{where}: {name} must be a list of step numbers, "
                        f"got {type(milestones).__name__}")
    milestones = [check_count(where, f"{name}[{i}]", m) for i, m in enumerate(milestones)]
    if any(a >= b for a, b in pairwise(milestones)):
        raise ValueError(f"{where}: {name} must be increasing, got {milestones}")
    return milestones


class LRScheduler:
    """Base class: subclasses define :meth:`get_lr` and, where one exists, the
    closed form ``_get_closed_form_lr`` of the lr at ``last_epoch`` (0 once built, one
    more at each ``step()``). ``base_lrs``: the groups' ``initial_lr``.
    """

    _unsaved = ("optimizer",)      # attributes that state_dict() leaves out

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1):
        where = type(self).__name__
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{where}: optimizer must be a tinynet.optim.Optimizer, "
                            f"got {type(optimizer).__name__}")
        self.optimizer = optimizer
        last_epoch = check_count(where, "last_epoch", last_epoch, low=-1)
        for i, group in enumerate(optimizer.param_groups):
            if last_epoch == -1:
                group.setdefault("initial_lr", group["lr"])
            elif "initial_lr" not in group:
                raise KeyError(f"{where}: param_groups[{i}] has no 'initial_lr'; resuming "
                               f"with last_epoch={last_epoch} needs the optimizer's saved state")
        self.base_lrs = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        self._initial_step()

    def _initial_step(self) -> None:
        self._is_initial = True
        self.step()
        self._is_initial = False

    def get_lr(self) -> list[float]:
        """The lr of each group at ``last_epoch``, for ``step()`` (see get_last_lr)."""
        raise NotImplementedError

    def _scaled(self, factor: float) -> list[float]:
        """Each group's current lr times ``factor`` (times 1.0: unchanged, exactly)."""
        return [group["lr"] * factor for group in self.optimizer.param_groups]

    def get_last_lr(self) -> list[float]:
        """The lr of each group that the last ``step()`` set."""
        return list(self._last_lr)

    def step(self) -> None:
        """Advance one epoch (``last_epoch += 1``) and set each group's lr to the
        schedule's value there; call it after ``optimizer.step()``, as in PyTorch.
        """
        self._update_lr()

    def _update_lr(self, epoch: int | None = None) -> None:
        """Advance one epoch, or jump to ``epoch`` with the closed form."""
        if epoch is None:
            self.last_epoch += 1
            values = self.get_lr()
        else:
            self.last_epoch = epoch
            values = getattr(self, "_get_closed_form_lr", self.get_lr)()
        for group, lr in zip(self.optimizer.param_groups, values, strict=True):
            group["lr"] = lr
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def state_dict(self) -> dict:
        """A copy of every attribute but the optimizer (as PyTorch's)."""
        return {key: copy.deepcopy(value) for key, value in vars(self).items()
                if key not in self._unsaved}

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore the scheduler from :meth:`state_dict`'s output (the same keys)."""
        expected, given = set(self.state_dict()), set(state_dict)
        if given != expected:
            raise ValueError(f"{type(self).__name__}.load_state_dict: the state has keys "
                             f"{sorted(given)}, expected {sorted(expected)}")
        vars(self).update({key: copy.deepcopy(value) for key, value in state_dict.items()
                           if key not in self._unsaved})


class StepLR(LRScheduler):
    """lr ← lr · gamma every ``step_size`` epochs."""

    def __init__(self, optimizer, step_size: int, gamma: float = 0.1, last_epoch: int = -1):
        self.step_size = check_count("StepLR", "step_size", step_size)
        self.gamma = _check_positive("StepLR", "gamma", gamma)
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        decays = self.last_epoch > 0 and self.last_epoch % self.step_size == 0
        return self._scaled(self.gamma if decays else 1.0)

    def _get_closed_form_lr(self):
        return [base * self.gamma ** (self.last_epoch // self.step_size)
                for base in self.base_lrs]


class MultiStepLR(LRScheduler):
    """lr ← lr · gamma at each epoch of the increasing list ``milestones``."""

    def __init__(self, optimizer, milestones, gamma: float = 0.1, last_epoch: int = -1):
        self.milestones = _check_increasing("MultiStepLR", "milestones", milestones)
        self.gamma = _check_positive("MultiStepLR", "gamma", gamma)
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        return self._scaled(self.gamma if self.last_epoch in self.milestones else 1.0)

    def _get_closed_form_lr(self):
        return [base * self.gamma ** bisect.bisect_right(self.milestones, self.last_epoch)
                for base in self.base_lrs]


class ExponentialLR(LRScheduler):
    """lr ← lr · gamma every epoch."""

    def __init__(self, optimizer, gamma: float, last_epoch: int = -1):
        self.gamma = _check_positive("ExponentialLR", "gamma", gamma)
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        return self._scaled(1.0 if self._is_initial else self.gamma)

    def _get_closed_form_lr(self):
        return [base * self.gamma ** self.last_epoch for base in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    """Cosine annealing without restarts (Loshchilov & Hutter, SGDR, 2017),
    lr_t = eta_min + (base_lr − eta_min) (1 + cos(π t / T_max)) / 2, computed as PyTorch
    does, by the recursion lr_t − eta_min = (lr_{t−1} − eta_min) (1 + cos(π t / T_max))
    / (1 + cos(π (t−1) / T_max)). Past T_max the lr climbs back."""

    def __init__(self, optimizer, T_max: int, eta_min: float = 0.0, last_epoch: int = -1):
        self.T_max = check_count("CosineAnnealingLR", "T_max", T_max)
        self.eta_min = check_real("CosineAnnealingLR", "eta_min", eta_min, low=0)
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        groups, t, T = self.optimizer.param_groups, self.last_epoch, self.T_max
        if self._is_initial:
            return self._scaled(1.0)
        if (t - 1 - T) % (2 * T) == 0:     # leaving the minimum, where the ratio is 0 / 0
            return [group["lr"] + (base - self.eta_min) * (1 - math.cos(math.pi / T)) / 2
                    for base, group in zip(self.base_lrs, groups, strict=True)]
        return [(1 + math.cos(math.pi * t / T)) / (1 + math.cos(math.pi * (t - 1) / T))
                * (group["lr"] - self.eta_min) + self.eta_min for group in groups]

    def _get_closed_form_lr(self):
        return [self.eta_min + (base - self.eta_min)
                * (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2
                for base in self.base_lrs]


class LambdaLR(LRScheduler):
    """lr = initial_lr · lr_lambda(epoch), one function for all groups or one per
    group. ``state_dict()`` holds None for each function or lambda (they cannot be
    saved) and the attributes of each callable object."""

    _unsaved = ("optimizer", "lr_lambdas")

    def __init__(self, optimizer, lr_lambda, last_epoch: int = -1):
        count = len(optimizer.param_groups) if isinstance(optimizer, Optimizer) else 1
        lambdas = list(lr_lambda) if isinstance(lr_lambda, (list, tuple)) else [lr_lambda] * count
        if len(lambdas) != count:
            raise ValueError(f"LambdaLR: expected {count} lr_lambdas (one per parameter "
                             f"group), got {len(lambdas)}")
        if not all(callable(fn) for fn in lambdas):
            raise TypeError(f"LambdaLR: lr_lambda must be a function or a list of functions, "
                            f"got {lr_lambda!r}")
        self.lr_lambdas = lambdas
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        return [base * fn(self.last_epoch)
                for fn, base in zip(self.lr_lambdas, self.base_lrs, strict=True)]

    def state_dict(self):
        state = super().state_dict()
        state["lr_lambdas"] = [None if isinstance(fn, types.FunctionType)
                               else copy.deepcopy(vars(fn)) for fn in self.lr_lambdas]
        return state

    def load_state_dict(self, state_dict):
        super().load_state_dict(state_dict)
        for fn, saved in zip(self.lr_lambdas, state_dict["lr_lambdas"], strict=True):
            if saved is not None:
                vars(fn).update(copy.deepcopy(saved))


class LinearLR(LRScheduler):
    """The lr factor goes linearly from ``start_factor`` to ``end_factor`` over
    ``total_iters`` epochs, then stays (a warm-up when start_factor < end_factor)."""

    def __init__(self, optimizer, start_factor: float = 1.0 / 3, end_factor: float = 1.0,
                 total_iters: int = 5, last_epoch: int = -1):
        self.start_factor = _check_positive("LinearLR", "start_factor", start_factor, high=1)
        self.end_factor = check_real("LinearLR", "end_factor", end_factor, 0, 1)
        self.total_iters = check_count("LinearLR", "total_iters", total_iters)
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        t, slope = self.last_epoch, self.end_factor - self.start_factor
        if t == 0:
            return self._scaled(self.start_factor)
        if self._is_initial or t > self.total_iters:
            return self._scaled(1.0)
        return self._scaled(1.0 + slope / (self.total_iters * self.start_factor
                                           + (t - 1) * slope))

    def _get_closed_form_lr(self):
        slope = self.end_factor - self.start_factor
        factor = self.start_factor + slope * min(self.total_iters, self.last_epoch) \
            / self.total_iters
        return [base * factor for base in self.base_lrs]


class SequentialLR(LRScheduler):
    """``schedulers[i]`` runs from ``milestones[i - 1]`` (restarting at its own
    epoch 0 there) to ``milestones[i]``: e.g. a LinearLR warm-up, then a cosine."""

    _unsaved = ("optimizer", "_schedulers")

    def __init__(self, optimizer, schedulers, milestones, last_epoch: int = -1):
        if not isinstance(schedulers, (list, tuple)) or not schedulers:
            raise ValueError("SequentialLR: schedulers must be a non-empty list of schedulers")
        for i, scheduler in enumerate(schedulers):
            if not isinstance(scheduler, LRScheduler) or scheduler.optimizer is not optimizer:
                raise ValueError(f"SequentialLR: schedulers[{i}] ({type(scheduler).__name__}) "
                                 "is not a scheduler of this optimizer")
        milestones = _check_increasing("SequentialLR", "milestones", milestones)
        if len(milestones) != len(schedulers) - 1:
            raise ValueError(f"SequentialLR: {len(schedulers)} schedulers need "
                             f"{len(schedulers) - 1} milestones, got {len(milestones)}")
        self.optimizer = optimizer
        self._schedulers = list(schedulers)
        self._milestones = milestones
        self.last_epoch = check_count("SequentialLR", "last_epoch", last_epoch, low=-1) + 1
        # Undo the first step that building each scheduler took, then take the first one's.
        for group in optimizer.param_groups:
            group["lr"] = group["initial_lr"]
        self._undo_initial_steps(self)
        self._schedulers[0]._initial_step()
        self._last_lr = self._schedulers[0].get_last_lr()

    @staticmethod
    def _undo_initial_steps(scheduler) -> None:
        if isinstance(scheduler, SequentialLR):
            for inner in scheduler._schedulers:
                SequentialLR._undo_initial_steps(inner)
        else:
            scheduler.last_epoch -= 1

    def step(self) -> None:
        """Advance one epoch: the scheduler whose milestones hold this epoch steps (one that
        starts here restarts at its own epoch 0).
        """
        self.last_epoch += 1
        index = bisect.bisect_right(self._milestones, self.last_epoch)
        scheduler = self._schedulers[index]
        if index > 0 and self._milestones[index - 1] == self.last_epoch:
            scheduler._update_lr(0)
        else:
            scheduler.step()
        self._last_lr = scheduler.get_last_lr()

    def state_dict(self):
        state = super().state_dict()
        state["_schedulers"] = [scheduler.state_dict() for scheduler in self._schedulers]
        return state

    def load_state_dict(self, state_dict):
        super().load_state_dict(state_dict)
        for scheduler, saved in zip(self._schedulers, state_dict["_schedulers"], strict=True):
            scheduler.load_state_dict(saved)

__getattr__ = lacking("torch.optim.lr_scheduler")
