"""Data-parallel training on MPI: what each normalization needs when a batch is split.

    mpiexec -n W python examples/data_parallel.py --norm layer --per-worker-batch 4
    mpiexec -n 2 python examples/data_parallel.py --model lstm --norm layer --per-worker-batch 32

W ranks each take ``--per-worker-batch`` B images per step (their shard of a
global batch of W·B, from a DistributedSampler) and average their gradients
with DistributedDataParallel. ``--model mlp`` is the paper's MNIST MLP on the
sweep's budget (one epoch: 55,000 examples, Adam 1e-3); ``--model lstm`` the
LN-LSTM on sequential MNIST (28 rows of 28 pixels, hidden 128).

``--norm``: ``layer`` needs nothing beyond the gradients' all-reduce (its
statistics are per sample); ``batch`` is BatchNorm1d on each rank's own B
samples; ``syncbatch`` is SyncBatchNorm, whose statistics cover all W·B
samples, at two all-reduces per BN layer per step; ``none`` has no norm.

Rank 0 prints the result and, with ``--out DIR``, writes ``DIR/result.json``
(atomically): test error, and per step the all-reduces, bytes sent by each
rank, and the share of the step spent communicating (from
``tinynet.distributed.traffic``). Run as ``python examples/data_parallel.py``
(no mpiexec) it is one rank: the same model and data on one process.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import tinynet  # noqa: E402
import tinynet.distributed as dist  # noqa: E402
from tinynet.data import DataLoader, DistributedSampler, Subset, load_mnist  # noqa: E402
from tinynet.models import MLP, SequenceClassifier  # noqa: E402
from tinynet.nn import functional as F  # noqa: E402
from tinynet.nn.parallel import DistributedDataParallel  # noqa: E402
from tinynet.serialization import atomic_write  # noqa: E402

from mnist_mlp import HELD_OUT_FRACTION, TRAIN_EXAMPLES  # noqa: E402

NORMS = ("layer", "batch", "syncbatch", "none")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=("mlp", "lstm"), default="mlp")
    parser.add_argument("--norm", choices=NORMS, default="layer")
    parser.add_argument("--per-worker-batch", type=int, default=4)
    parser.add_argument("--examples", type=int, default=TRAIN_EXAMPLES,
                        help="training budget: examples seen by all ranks together")
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--data", help="MNIST directory (default: as the MNIST loader)")
    parser.add_argument("--out", help="directory for result.json (written by rank 0)")
    return parser


def make_model(kind: str, norm: str):
    base = "batch" if norm == "syncbatch" else norm
    if kind == "mlp":
        model = MLP(base)
    else:
        model = SequenceClassifier(28, 128, 10, norm=base, max_steps=28)
    if norm == "syncbatch":
        model = tinynet.nn.SyncBatchNorm.convert_sync_batchnorm(model)
    return model


@tinynet.no_grad()
def test_error(model, test, rank: int, world: int) -> float:
    """The error on the test set, each rank scoring every W-th image."""
    model.eval()
    errors = tinynet.tensor([0.0, 0.0], dtype=tinynet.float64)   # errors, images
    for images, labels in DataLoader(Subset(test, range(rank, len(test), world)),
                                     batch_size=1000):
        wrong = model(images).argmax(dim=1).numpy() != labels.numpy()
        errors.array += [wrong.sum(), len(wrong)]
    dist.all_reduce(errors)
    model.train()
    return float(errors.array[0] / errors.array[1])


def train(args) -> dict:
    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    batch = args.per_worker_batch
    flatten = args.model == "mlp"
    train_full = load_mnist(args.data, train=True, flatten=flatten, notice=rank == 0)
    held_out = round(len(train_full) * HELD_OUT_FRACTION)       # the validation images
    train_set = Subset(train_full, range(len(train_full) - held_out))
    test = load_mnist(args.data, train=False, flatten=flatten, notice=False)
    steps = args.examples // (world * batch)
    if steps < 1:
        raise ValueError(f"a budget of {args.examples} examples is less than one global "
                         f"batch of {world} x {batch}")

    tinynet.manual_seed(args.seed)
    model = DistributedDataParallel(make_model(args.model, args.norm))
    optimizer = tinynet.optim.Adam(model.parameters(), lr=args.lr)
    sampler = DistributedSampler(train_set, shuffle=True, seed=args.seed, drop_last=True)
    loader = DataLoader(train_set, batch_size=batch, sampler=sampler, drop_last=True)
    dist.traffic.reset()
    step, epoch, started = 0, 0, time.perf_counter()
    while step < steps:
        sampler.set_epoch(epoch)
        for images, labels in loader:
            optimizer.zero_grad()
            F.cross_entropy(model(images), labels.array).backward()
            optimizer.step()
            step += 1
            if step == steps:
                break
        epoch += 1
    seconds = time.perf_counter() - started
    traffic = {label: {"all_reduces_per_step": dist.traffic.calls(label) / steps,
                       "bytes_per_step": dist.traffic.bytes(label) / steps,
                       "seconds_per_step": dist.traffic.seconds(label) / steps}
               for label in dist.traffic.labels()}
    # The slowest rank's times: the step is as slow as the slowest rank.
    times = tinynet.tensor([seconds, dist.traffic.seconds()], dtype=tinynet.float64)
    dist.all_reduce(times, dist.ReduceOp.MAX)
    result = {"model": args.model, "norm": args.norm, "world_size": world,
              "per_worker_batch": batch, "global_batch": world * batch, "seed": args.seed,
              "steps": steps, "examples": steps * world * batch,
              "threads_per_rank": tinynet.get_num_threads(),
              "test_error": test_error(model, test, rank, world),
              "seconds_per_step": float(times.array[0]) / steps,
              "communicating": float(times.array[1] / times.array[0]),
              "traffic": traffic}
    dist.destroy_process_group()
    return result if rank == 0 else None


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    result = train(args)
    if result is None:
        return 0
    gradients = result["traffic"].get("gradients", {})
    statistics = result["traffic"].get("batch statistics", {})
    print(f"{args.model} {args.norm}, {result['world_size']} ranks x batch "
          f"{args.per_worker_batch}: test error {100 * result['test_error']:.2f}%, "
          f"{1e3 * result['seconds_per_step']:.2f} ms/step, "
          f"{gradients.get('all_reduces_per_step', 0):.0f} gradient and "
          f"{statistics.get('all_reduces_per_step', 0):.0f} BN all-reduces per step, "
          f"{100 * result['communicating']:.0f}% of the step communicating")
    if args.out:
        with atomic_write(os.path.join(args.out, "result.json"), "w") as f:
            json.dump(result, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
