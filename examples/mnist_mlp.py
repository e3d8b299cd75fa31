"""Train the paper's permutation-invariant MNIST MLP with LN, BN or no normalization.

    python examples/mnist_mlp.py --norm layer --batch-size 4 --examples 55000 --out runs/ln4

784-1000-1000-10 ReLU net, normalization on the two hidden layers only, Adam
(lr 1e-3), pixels in [0, 1]; 55,000 training images (the last 5,000 of the
60,000 are held out for validation; with the bundled 10,000-image sample, the
last 1/12 likewise), evaluated on the 10,000 test images with BN in eval mode.

``--optimizer adamw`` and ``--schedule step|cosine`` (an lr schedule fitted to
the training budget) depart from the paper's setup.

``--out DIR`` writes ``DIR/result.json`` and, while training, an atomic
``DIR/checkpoint.npz`` (model, optimizer and schedule) that ``--resume`` continues from.

``--device cuda`` trains on the GPU (CuPy): the images go there once, before
training, and every batch is gathered there. The script prints the median
step time (forward, backward, update) and records it in the result.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

import tinynet
from tinynet.data import DataLoader, TensorDataset, load_mnist
from tinynet.models import CONV_NORMS, MLP, NORMS, ConvNet
from tinynet.nn import functional as F
from tinynet.serialization import atomic_write

HELD_OUT_FRACTION = 1 / 12          # 5,000 of MNIST's 60,000 training images
TRAIN_EXAMPLES = 55_000
OPTIMIZERS = {"adam": tinynet.optim.Adam, "adamw": tinynet.optim.AdamW}
SCHEDULES = ("none", "step", "cosine")
MODELS = {"mlp": (MLP, NORMS), "cnn": (ConvNet, CONV_NORMS)}   # class(norm), its norms


def build_parser(model="mlp", description=__doc__) -> argparse.ArgumentParser:
    """The options of one MNIST training run of ``model`` (a key of ``MODELS``)."""
    parser = argparse.ArgumentParser(description=description.splitlines()[0])
    parser.set_defaults(model=model)
    norms = MODELS[model][1]
    parser.add_argument("--norm", choices=norms, default="layer")
    parser.add_argument("--batch-size", type=int, default=128)
    budget = parser.add_mutually_exclusive_group()
    budget.add_argument("--examples", type=int, help="training budget in examples seen "
                        "(default: one epoch)")
    budget.add_argument("--epochs", type=float, help="training budget in epochs")
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--optimizer", choices=sorted(OPTIMIZERS), default="adam",
                        help="adamw: PyTorch's default weight decay, 0.01")
    parser.add_argument("--schedule", choices=SCHEDULES, default="none",
                        help="lr schedule over the budget: step (x0.1 at 1/2 and 3/4 of "
                        "it) or cosine (down to 0 at its end)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--data", help="directory holding the four MNIST .gz files "
                        "(default: $TINYNET_DATA/mnist, ~/.cache/tinynet/mnist, else the "
                        "bundled sample)")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                        help="cuda: train on the GPU, which needs CuPy "
                        "(pip install 'tinynet[cuda12]')")
    parser.add_argument("--out", help="directory for result.json and the checkpoint")
    parser.add_argument("--resume", action="store_true", help="continue from --out's checkpoint")
    parser.add_argument("--curve-points", type=int, default=8,
                        help="test NLL evaluations during training (for the learning curve)")
    parser.add_argument("--checkpoint-every", type=float, default=60.0, help="seconds")
    parser.add_argument("--no-progress", action="store_true")
    return parser


def check_device(parser, device) -> None:
    """Exit at once, before any data is read, when ``device`` cannot be used: the
    backend's error says what is missing (CuPy, or a GPU)."""
    try:
        tinynet.backend.get_backend(device)
    except RuntimeError as error:
        parser.error(str(error))


def load_splits(data_dir=None, notice=True, device="cpu") -> dict:
    """The training and validation images (the training set, split) and the test set,
    as datasets of tensors on ``device``."""
    train_full = load_mnist(data_dir, train=True, notice=notice)
    test = load_mnist(data_dir, train=False, notice=notice)
    held_out = round(len(train_full) * HELD_OUT_FRACTION)
    boundary = len(train_full) - held_out
    images, labels = train_full.arrays
    return {"train": on_device(device, images[:boundary], labels[:boundary]),
            "valid": on_device(device, images[boundary:], labels[boundary:]),
            "test": on_device(device, *test.arrays),
            "source": "bundled sample" if train_full.is_sample else "full MNIST"}


def on_device(device, *arrays) -> TensorDataset:
    """A dataset of ``arrays`` copied to ``device`` once (on the CPU: the arrays
    themselves). A DataLoader over it gathers each batch on that device."""
    return TensorDataset(*(tinynet.from_numpy(a).to(device) for a in arrays))


@tinynet.no_grad()
def evaluate(model, dataset, batch_size=1000) -> tuple[float, float]:
    """(error rate, mean negative log-likelihood) with the model in eval mode."""
    was_training = model.training
    model.eval()
    errors, nll = 0, 0.0
    for images, labels in DataLoader(dataset, batch_size=batch_size):
        logits = model(images)
        nll += F.cross_entropy(logits, labels, reduction="sum").item()
        errors += (logits.argmax(dim=1) != labels).sum().item()
    model.train(was_training)
    return errors / len(dataset), nll / len(dataset)


def median_step_seconds(durations) -> float | None:
    """The median of the steps' durations; None when no step ran.

    On a GPU the host queues the kernels without waiting for them: a step's
    duration is the host's, held back by the device only when it is the slower side.
    """
    return statistics.median(durations) if durations else None


def write_json(path, data) -> None:
    with atomic_write(path, "w") as f:
        json.dump(data, f, indent=2)


def _budget(args, train_size) -> int:
    if args.examples is not None:
        return args.examples
    return round((args.epochs if args.epochs is not None else 1) * train_size)


def train(args, progress=True) -> dict:
    """Train one configuration; return (and write, with --out) its result."""
    tinynet.backend.get_backend(args.device)    # without CuPy or a GPU: fails here, at once
    splits = load_splits(args.data, notice=progress, device=args.device)
    train_set = splits["train"]
    examples = _budget(args, len(train_set))
    steps = examples // args.batch_size
    if steps < 1:
        raise ValueError(f"a budget of {examples} examples is less than one batch of "
                         f"{args.batch_size}")
    config = {"model": args.model, "norm": args.norm, "batch_size": args.batch_size,
              "seed": args.seed, "budget": examples, "examples": steps * args.batch_size,
              "lr": args.lr, "data": splits["source"]}
    config.update(optimizer=args.optimizer, schedule=args.schedule)
    checkpoint_path = os.path.join(args.out, "checkpoint.npz") if args.out else None

    tinynet.manual_seed(args.seed)
    model = MODELS[args.model][0](args.norm).to(args.device)
    optimizer = OPTIMIZERS[args.optimizer](model.parameters(), lr=args.lr)
    scheduler = make_scheduler(args.schedule, optimizer, steps)
    loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True, drop_last=True,
                        seed=args.seed)
    state = {"step": 0, "epoch_start_rng": loader.generator_state(), "seconds": 0.0,
             "curve": []}
    if args.resume:
        if not checkpoint_path or not os.path.exists(checkpoint_path):
            raise FileNotFoundError(f"--resume: no checkpoint at {checkpoint_path}")
        saved = tinynet.load(checkpoint_path)
        if saved["config"] != config:
            raise ValueError(f"--resume: the checkpoint was made with {saved['config']}, "
                             f"not {config}")
        model.load_state_dict(saved["model"])
        optimizer.load_state_dict(saved["optimizer"])
        if scheduler is not None:
            scheduler.load_state_dict(saved["scheduler"])
        state = saved["state"]

    points = args.curve_points
    curve_at = sorted({round(steps * (k + 1) / points) for k in range(points)})
    per_epoch = len(loader)
    bar = _progress(steps, state["step"], enabled=progress and not args.no_progress)
    last_save = time.perf_counter()
    step_seconds = []                                   # this process's steps
    while state["step"] < steps:
        loader.set_generator_state(state["epoch_start_rng"])
        batches = iter(loader)
        for _ in range(state["step"] % per_epoch):       # resume inside an epoch
            next(batches)
        started = time.perf_counter()
        for images, labels in batches:                  # already on args.device
            step_started = time.perf_counter()
            optimizer.zero_grad()
            loss = F.cross_entropy(model(images), labels)
            loss.backward()
            optimizer.step()
            if scheduler is not None:
                scheduler.step()
            step_seconds.append(time.perf_counter() - step_started)
            state["step"] += 1
            bar.update(1)
            if state["step"] % 50 == 0 and not bar.disable:   # item(): waits for a GPU
                bar.set_postfix(loss=f"{loss.item():.3f}")
            if state["step"] in curve_at:
                state["seconds"] += time.perf_counter() - started
                _, test_nll = evaluate(model, splits["test"])
                state["curve"].append([state["step"] * args.batch_size, test_nll])
                started = time.perf_counter()
            if state["step"] >= steps:
                break
            if checkpoint_path and time.perf_counter() - last_save > args.checkpoint_every:
                state["seconds"] += time.perf_counter() - started
                _save_checkpoint(checkpoint_path, model, optimizer, scheduler, state, config)
                last_save = started = time.perf_counter()
        state["seconds"] += time.perf_counter() - started
        if state["step"] % per_epoch == 0:
            state["epoch_start_rng"] = loader.generator_state()
    bar.close()

    test_error, test_nll = evaluate(model, splits["test"])
    valid_error, _ = evaluate(model, splits["valid"])
    result = dict(config, test_error=test_error, test_nll=test_nll, valid_error=valid_error,
                  train_seconds=state["seconds"],
                  examples_per_second=config["examples"] / max(state["seconds"], 1e-9),
                  median_step_seconds=median_step_seconds(step_seconds),
                  device=args.device, curve=state["curve"])
    if args.out:
        _save_checkpoint(checkpoint_path, model, optimizer, scheduler, state, config)
        write_json(os.path.join(args.out, "result.json"), result)
    return result


def make_scheduler(schedule: str, optimizer, steps: int):
    """The ``--schedule`` over a budget of ``steps`` optimizer steps (None for none)."""
    schedulers = tinynet.optim.lr_scheduler
    if schedule == "step":
        milestones = sorted({max(1, steps // 2), max(1, 3 * steps // 4)})
        return schedulers.MultiStepLR(optimizer, milestones, gamma=0.1)
    if schedule == "cosine":
        return schedulers.CosineAnnealingLR(optimizer, T_max=steps)
    return None


def _save_checkpoint(path, model, optimizer, scheduler, state, config) -> None:
    tinynet.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                  "scheduler": None if scheduler is None else scheduler.state_dict(),
                  "state": state, "config": config}, path)


def _progress(total, initial, enabled):
    from tqdm import tqdm
    return tqdm(total=total, initial=initial, disable=not enabled, unit="step",
                dynamic_ncols=True, mininterval=0.5)


def format_step(seconds) -> str:
    """``median step 1.23 ms`` (what benchmarks/gpu_check.sh looks for)."""
    return "no step run" if seconds is None else f"median step {1000 * seconds:.2f} ms"


def main(argv=None, model="mlp", description=__doc__) -> dict:
    parser = build_parser(model, description)
    args = parser.parse_args(argv)
    check_device(parser, args.device)
    result = train(args)
    print(f"{args.model}, {args.norm} norm, batch {args.batch_size}, seed {args.seed}, "
          f"{result['examples']:,} examples ({result['data']}) on {args.device}: test error "
          f"{100 * result['test_error']:.2f}%, test NLL {result['test_nll']:.4f}, "
          f"{result['examples_per_second']:.0f} examples/s, "
          f"{format_step(result['median_step_seconds'])}")
    return result


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
