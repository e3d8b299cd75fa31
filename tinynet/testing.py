"""Checking gradients against finite differences, and causality of sequence models.

``gradcheck`` compares the gradients that backward() computes with central
differences, (f(x + ε) − f(x − ε)) / 2ε, element by element, in float64. A
non-scalar output is reduced to a scalar with fixed random weights, so the
check covers the whole vector-Jacobian product, not only the sum.

``check_causal`` changes every input after a position t and checks that the
outputs at positions 0..t stay the same: a sequence model that passes never
reads the future, so it can be trained on whole sequences and run one token at
a time.
"""
from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np

from .autograd import no_grad
from .backend import as_numpy, get_array_module
from .creation import tensor
from .tensor import Tensor

__all__ = ["gradcheck", "GradcheckError", "check_causal", "assert_causal", "CausalityReport"]


class GradcheckError(AssertionError):
    """Analytic and numeric gradients disagree."""


def _as_tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _scalarize(outputs, weights):
    """Σ_k Σ (output_k · w_k): one scalar from any outputs."""
    total = None
    for out, w in zip(outputs, weights, strict=True):
        term = (out * w).sum()
        total = term if total is None else total + term
    return total


def gradcheck(fn, inputs, eps=1e-6, atol=1e-5, rtol=1e-3, seed=0) -> bool:
    """Check ``fn``'s gradients with respect to every input that requires grad.

    ``inputs`` is a Tensor or a sequence of them; the ones with
    ``requires_grad=True`` must be float64. Raises :class:`GradcheckError`
    naming the worst element (input, index, analytic and numeric values) when
    ``|analytic − numeric| > atol + rtol·|numeric|`` anywhere; returns True.
    """
    inputs = _as_tuple(inputs)
    checked = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]
    if not checked:
        raise ValueError("gradcheck: no input has requires_grad=True")
    for i in checked:
        if inputs[i].dtype != np.float64:
            raise TypeError(
                f"gradcheck: input {i} is {inputs[i].dtype}; finite differences need "
                "float64 inputs")

    outputs = _as_tuple(fn(*inputs))
    rng = np.random.default_rng(seed)
    weights = [Tensor._make(get_array_module(o.array).asarray(
        rng.standard_normal(o.shape))) for o in outputs]
    for i in checked:
        inputs[i].grad = None
    _scalarize(outputs, weights).backward()

    failures = []
    for i in checked:
        x = inputs[i]
        analytic = np.zeros(x.shape) if x.grad is None else as_numpy(x.grad.array)
        numeric = np.zeros(x.shape)
        flat = x.array.reshape(-1)           # a view: perturbs x in place
        with no_grad():
            for k in range(flat.size):
                original = flat[k].item()
                flat[k] = original + eps
                plus = _scalarize(_as_tuple(fn(*inputs)), weights).item()
                flat[k] = original - eps
                minus = _scalarize(_as_tuple(fn(*inputs)), weights).item()
                flat[k] = original
                numeric.reshape(-1)[k] = (plus - minus) / (2 * eps)
        error = np.abs(analytic - numeric)
        bad = error > atol + rtol * np.abs(numeric)
        if bad.any():
            score = error / (atol + rtol * np.abs(numeric))
            worst = np.unravel_index(np.argmax(score), x.shape)
            failures.append(
                f"input {i} (shape {tuple(x.shape)}): {int(bad.sum())} of {x.array.size} "
                f"elements differ; worst at index {tuple(int(j) for j in worst)}: "
                f"analytic {analytic[worst]:.8g}, numeric {numeric[worst]:.8g}, "
                f"|difference| {error[worst]:.3g}")
    if failures:
        raise GradcheckError("gradcheck failed:\n  " + "\n  ".join(failures))
    return True


# ------------------------------------------------------------------------ causality

@dataclass(frozen=True)
class CausalityReport:
    """What :func:`check_causal` found; true (``bool(report)``) when causal.

    ``changed_at`` is the first checked position t whose perturbation (new
    inputs at every position after t) changed an output at a position ≤ t, and
    ``first_position`` the earliest position whose output changed then; both
    are None for a causal model. ``max_change`` is the largest |Δ| of the
    outputs at positions ≤ t: for that perturbation when the model leaks,
    over every checked t when it does not (then it is at most ``atol``).
    """

    causal: bool
    first_position: int | None
    max_change: float
    changed_at: int | None

    def __bool__(self) -> bool:
        return self.causal


def _output_array(out):
    """The per-position outputs as a NumPy array: a tuple's first element (as
    ``nn.LSTM``'s ``output, (h_n, c_n)`` and ``GPT``'s ``logits, loss``)."""
    if isinstance(out, (tuple, list)):
        out = out[0]
    return as_numpy(out.array) if isinstance(out, Tensor) else np.asarray(out)


def _changes(before, after):
    """|after − before| element by element, with NaN and ±inf compared as values:
    the same NaN or the same infinity is no change, a NaN or inf appearing is ∞."""
    same = (before == after) | (np.isnan(before) & np.isnan(after))
    with np.errstate(invalid="ignore"):
        change = np.where(same, 0.0, np.abs(after.astype(np.float64) - before))
    return np.where(np.isnan(change), np.inf, change)


def _vocabulary(model, tokens, vocab_size):
    if vocab_size is None:
        vocab_size = getattr(getattr(model, "config", None), "vocab_size", None)
    if vocab_size is None:
        vocab_size = getattr(model, "vocab_size", None)
    if vocab_size is None:          # the ids the input already uses are valid ones
        vocab_size = int(tokens.max()) + 1
    vocab_size = int(vocab_size)
    if vocab_size < 2 or tokens.min() < 0 or tokens.max() >= vocab_size:
        raise ValueError(
            f"check_causal: token ids must lie in [0, vocab_size) with vocab_size ≥ 2 (so a "
            f"token can be changed); got ids in [{tokens.min()}, {tokens.max()}] and "
            f"vocab_size={vocab_size} (pass vocab_size=...)")
    return vocab_size


def check_causal(model, idx, *, positions=None, atol=0.0, seed=0,
                 vocab_size=None) -> CausalityReport:
    """Check that a sequence model's output at position t depends only on its
    inputs at positions 0..t. Returns a :class:`CausalityReport`; never raises
    for a model that leaks (see :func:`assert_causal`).

    ``model`` is any callable from a batch of sequences to per-position outputs:
    token ids (B, T) or float inputs (B, T, F, …) to outputs (B, T, …), batch
    first. A tuple result counts by its first element, so a batch-first
    ``nn.LSTM`` can be passed as it is; a time-major one needs a wrapper,
    ``lambda x: lstm(x.transpose(0, 1))[0].transpose(0, 1)``. ``GPT(idx)``
    returns only the last position's logits; check the logits of every
    position, which it returns when given targets (any valid ones)::

        check_causal(lambda idx: gpt(idx, targets=idx)[0], idx,
                     vocab_size=gpt.config.vocab_size)

    For each position t (all of them, or those in ``positions``; the last one
    has no future and is skipped) the inputs at t+1..T−1 of every sample are
    replaced, and the outputs at 0..t compared with the original ones: a
    change larger than ``atol`` is a leak. Token ids are replaced by different
    ids drawn uniformly from ``range(vocab_size)`` (by default the model's
    ``config.vocab_size`` or ``vocab_size`` if it has one, else one more than
    the largest id in ``idx``); float inputs by normal draws with the input's
    mean and standard deviation. ``seed`` fixes those draws. The default
    ``atol=0`` asks for bitwise-identical outputs, which a causal model built
    from per-position operations and masked attention gives: the masked keys
    add exact zeros.

    The model runs under ``no_grad`` and in the mode it is in: the check never
    calls ``train()`` or ``eval()``, since which computation is checked is the
    caller's choice and the answers differ:

    * in eval mode a BatchNorm uses its running statistics, a fixed affine map
      per channel applied position by position: a BN model is causal exactly
      when the rest of it is. This is the mode to check for inference;
    * in training mode a BatchNorm uses the statistics of the batch. The
      BN-LSTM's (``nn.StepwiseBatchNorm``) are taken per time step, over the
      samples at step t only, so output t depends on every sample's inputs at
      steps ≤ t: it mixes samples (the outputs are not batch-independent) but
      not positions, and it passes this check, which changes the future of
      every sample at once. A BatchNorm whose statistics pool the time steps
      (``BatchNorm1d`` over (B, C, T), or over the B·T rows) mixes positions
      in training and fails it. Each training-mode call also updates the
      running statistics: check a ``copy.deepcopy`` if they matter;
    * in training mode dropout draws a new mask at every call, which changes
      the outputs at every position: the check reports that as a change,
      though it is noise, not a leak. Check models with dropout in eval mode.

    Each checked position costs one forward pass (one more for the original
    input); the passes are not batched together, since a batch statistic
    would then mix them.
    """
    if not callable(model):
        raise TypeError(f"check_causal: model must be callable, got {type(model).__name__}")
    device = idx.device if isinstance(idx, Tensor) else "cpu"
    x = as_numpy(idx.array) if isinstance(idx, Tensor) else np.asarray(idx)
    tokens = np.issubdtype(x.dtype, np.integer)
    if not (tokens or np.issubdtype(x.dtype, np.floating)):
        raise TypeError(f"check_causal: idx must hold integer token ids or floats, got "
                        f"dtype {x.dtype}")
    if x.ndim < 2 or x.shape[0] < 1 or x.shape[1] < 2:
        raise ValueError(
            f"check_causal: idx must be a batch of sequences, (B, T) token ids or (B, T, F) "
            f"inputs with B ≥ 1 and T ≥ 2 (a position with a future to change); got shape "
            f"{tuple(x.shape)}")
    batch, steps = x.shape[:2]
    positions = list(range(steps) if positions is None else positions)
    if not all(isinstance(t, numbers.Integral) and not isinstance(t, bool)
               and 0 <= t < steps for t in positions):
        raise ValueError(f"check_causal: positions must be integers in [0, {steps}), got "
                         f"{positions}")
    checked = sorted(set(int(t) for t in positions))
    atol = float(atol)
    if not atol >= 0:
        raise ValueError(f"check_causal: atol must be ≥ 0, got {atol}")
    rng = np.random.default_rng(seed)
    if tokens:
        vocab = _vocabulary(model, x, vocab_size)
    else:
        centre, spread = float(x.mean()), float(x.std()) or 1.0

    def run(inputs):
        out = _output_array(model(tensor(inputs, device=device)))
        if out.ndim < 2 or out.shape[:2] != (batch, steps):
            raise ValueError(
                f"check_causal: the model must return an output per position, (B, T, …) = "
                f"({batch}, {steps}, …), got shape {tuple(out.shape)}; for a GPT check "
                "lambda idx: gpt(idx, targets=idx)[0], the logits of every position")
        return out

    with no_grad():
        reference = run(x)
        worst = 0.0
        for t in checked:
            if t == steps - 1:
                continue
            changed = x.copy()
            future = changed[:, t + 1:]
            if tokens:      # a different id at every later position
                shift = rng.integers(1, vocab, size=future.shape)
                changed[:, t + 1:] = (future + shift) % vocab
            else:
                changed[:, t + 1:] = rng.normal(centre, spread, size=future.shape)
            out = run(changed)
            if out.shape != reference.shape:
                raise ValueError(f"check_causal: the output's shape changed from "
                                 f"{reference.shape} to {out.shape} with the input")
            change = _changes(reference[:, :t + 1], out[:, :t + 1])
            per_position = change.reshape(batch, t + 1, -1).max(axis=(0, 2), initial=0.0)
            largest = float(per_position.max())
            if largest > atol:
                first = int(np.flatnonzero(per_position > atol)[0])
                return CausalityReport(False, first, largest, t)
            worst = max(worst, largest)
    return CausalityReport(True, None, worst, None)


def assert_causal(model, idx, **options) -> CausalityReport:
    """:func:`check_causal`, raising AssertionError when the model leaks: the
    message names the first position whose output changed, by how much, and the
    position after which the inputs were changed. Returns the report."""
    report = check_causal(model, idx, **options)
    if not report:
        atol = float(options.get("atol", 0.0))
        raise AssertionError(
            f"not causal: the output at position {report.first_position} changed by "
            f"{report.max_change:.3g} (atol {atol:g}) when the inputs after position "
            f"{report.changed_at} were changed; an output sees later inputs")
    return report
