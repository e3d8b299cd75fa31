"""LN-LSTM vs LSTM vs BN-LSTM: sequential MNIST, and the adding problem's length test.

    python examples/ln_lstm.py --norm all --steps 1000 --out runs/lstm
    python examples/ln_lstm.py --task adding --norm all --length 30 --out runs/adding

``--task mnist`` reads each image as 28 steps of 28 pixels (rows), LSTM hidden
128, classifies from the last hidden state; Adam 1e-3, batch 64. Test accuracy
is measured every ``--eval-every`` steps on the first ``--eval-images`` test
images, and on all 10,000 at the end; the BN-LSTM's final weights are also
scored with the statistics of each test batch of 1,000 (train mode) instead of
its running averages (``test_accuracy_batch_statistics``). The paper's claim:
the LN-LSTM converges faster than the plain LSTM.

``--task adding`` (Hochreiter & Schmidhuber, 1997): a sequence of T random
numbers, two of them marked; the target is their sum. Models train at length
T and are evaluated at T, 2T and 4T. The BN-LSTM keeps batch statistics per
time step up to T and must reuse the last ones beyond it; the LN-LSTM has no
such state, by design.

``--norm all`` trains the three cells one after another and plots their curves.
Each result (``OUT/NORM/result.json``) holds the settings, the final scores,
the curve, the step times and the wall time of the cell (``wall_seconds``,
training and evaluations); examples/experiments_report.py makes the tables of
docs/experiments.md from them.

``--device cuda`` trains on the GPU (CuPy): the MNIST images go there once,
and the adding problem's sequences are drawn there, from CuPy's generator
(other numbers than the CPU's). The script prints each model's median step
time (forward, backward, update) and records it in the result.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

import numpy as np

import tinynet
from tinynet.data import DataLoader, TensorDataset, load_mnist
from tinynet.models import NORMS, SequenceClassifier
from tinynet.nn import functional as F
from tinynet.serialization import atomic_write

import mnist_mlp  # examples/: check_device


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", choices=("mnist", "adding"), default="mnist")
    parser.add_argument("--norm", choices=NORMS + ("all",), default="layer")
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--eval-every", type=int, default=100)
    parser.add_argument("--eval-images", type=int, default=2000,
                        help="test images used for the accuracy curve (mnist)")
    parser.add_argument("--length", type=int, default=30, help="training length T (adding)")
    parser.add_argument("--data", help="MNIST directory (default: as the MNIST loader)")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                        help="cuda: train on the GPU, which needs CuPy "
                        "(pip install 'tinynet[cuda12]')")
    parser.add_argument("--out", help="directory for result.json (and curves.png with --norm all)")
    parser.add_argument("--no-progress", action="store_true")
    return parser


# ------------------------------------------------------------------------ tasks

class SequentialMNIST:
    """Images as sequences of 28 rows; the score is test accuracy."""

    def __init__(self, args):
        train = load_mnist(args.data, train=True, flatten=False)
        test = load_mnist(args.data, train=False, flatten=False)
        self.source = "bundled sample" if train.is_sample else "full MNIST"
        # On the device once (on the CPU, the arrays themselves): the loader gathers
        # each batch there.
        self.train = TensorDataset(*(tinynet.from_numpy(a).to(args.device)
                                     for a in train.arrays))
        self.test_images, self.test_labels = (tinynet.from_numpy(a).to(args.device)
                                              for a in test.arrays)
        self.loader = DataLoader(self.train, batch_size=args.batch_size, shuffle=True,
                                 drop_last=True, seed=args.seed)
        self.eval_images = args.eval_images
        self.batches = iter(())

    def model(self, norm, hidden):
        return SequenceClassifier(28, hidden, 10, norm=norm, max_steps=28)

    def batch(self):
        try:
            return next(self.batches)
        except StopIteration:
            self.batches = iter(self.loader)
            return next(self.batches)

    def loss(self, output, target):
        return F.cross_entropy(output, target.array)

    @tinynet.no_grad()
    def score(self, model, count=None):
        count = self.test_labels.shape[0] if count is None else count
        correct = 0
        for start in range(0, count, 1000):
            stop = min(start + 1000, count)
            logits = model(self.test_images[start:stop])
            correct += (logits.argmax(dim=1) == self.test_labels[start:stop]).sum().item()
        return correct / count

    def curve_point(self, model):
        return self.score(model, self.eval_images)

    def final(self, model, norm):
        result = {"test_accuracy": self.score(model)}
        if norm == "batch":
            # The same weights with the statistics of each test batch of 1,000 (train
            # mode) instead of the running averages: what batch statistics cost at test time.
            model.train()
            result["test_accuracy_batch_statistics"] = self.score(model)
            model.eval()
        return result


class AddingProblem:
    """Sum of the two marked numbers of a sequence; the score is the mean squared error.

    The sequences are drawn on the device, by its array module's generator.
    """

    def __init__(self, args):
        self.source = "random sequences"
        self.length = args.length
        self.batch_size = args.batch_size
        self.device = args.device
        self.xp = tinynet.backend.get_backend(args.device).xp      # numpy or cupy
        self.rng = self.xp.random.default_rng(args.seed)

    def model(self, norm, hidden):
        return SequenceClassifier(2, hidden, 1, norm=norm, max_steps=self.length)

    def sequences(self, count, length, rng):
        xp = self.xp
        values = rng.random((count, length)).astype(np.float32)
        marks = xp.zeros((count, length), np.float32)
        rows = xp.arange(count)
        first = rng.integers(0, length // 2, count)
        second = rng.integers(length // 2, length, count)
        marks[rows, first] = marks[rows, second] = 1
        target = values[rows, first] + values[rows, second]
        return (tinynet.tensor(xp.stack([values, marks], axis=2), device=self.device),
                tinynet.tensor(target[:, None], device=self.device))

    def batch(self):
        return self.sequences(self.batch_size, self.length, self.rng)

    def loss(self, output, target):
        return F.mse_loss(output, target)

    @tinynet.no_grad()
    def mse(self, model, length, count=1000):
        x, y = self.sequences(count, length, self.xp.random.default_rng(length))
        return F.mse_loss(model(x), y).item()

    def curve_point(self, model):
        return self.mse(model, self.length)

    def final(self, model, norm):
        scores = {("mse_at_T" if k == 1 else f"mse_at_{k}T"): self.mse(model, k * self.length)
                  for k in (1, 2, 4)}
        # Always answering 1, the mean, scores the variance of a sum of two U(0, 1): 1/6.
        return scores | {"baseline_mse": 1 / 6}


TASKS = {"mnist": SequentialMNIST, "adding": AddingProblem}


# ---------------------------------------------------------------------- training

def train(args, norm, task) -> dict:
    tinynet.manual_seed(args.seed)
    model = task.model(norm, args.hidden).to(args.device)
    optimizer = tinynet.optim.Adam(model.parameters(), lr=args.lr)
    from tqdm import tqdm
    bar = tqdm(total=args.steps, desc=f"{norm}-LSTM", disable=args.no_progress,
               dynamic_ncols=True, mininterval=0.5)
    curve, step_seconds, started_training = [], [], time.perf_counter()
    for step in range(1, args.steps + 1):
        x, y = task.batch()                             # on args.device
        started = time.perf_counter()
        optimizer.zero_grad()
        loss = task.loss(model(x), y)
        loss.backward()
        optimizer.step()
        # On a GPU, the host's time: it queues the kernels without waiting for them.
        step_seconds.append(time.perf_counter() - started)
        bar.update(1)
        if step % 20 == 0 and not bar.disable:          # item(): waits for a GPU
            bar.set_postfix(loss=f"{loss.item():.3f}")
        if step % args.eval_every == 0 or step == args.steps:
            model.eval()
            curve.append([step, task.curve_point(model)])
            model.train()
    bar.close()
    model.eval()
    setup = {"task": args.task, "norm": norm, "steps": args.steps, "seed": args.seed,
             "batch_size": args.batch_size, "hidden": args.hidden, "lr": args.lr,
             "device": args.device, "data": task.source, "eval_every": args.eval_every}
    setup |= {"length": args.length} if args.task == "adding" else {
        "eval_images": args.eval_images}
    final = task.final(model, norm)
    return {**setup, **final, "seconds_per_step": sum(step_seconds) / args.steps,
            "median_step_seconds": statistics.median(step_seconds),
            "wall_seconds": time.perf_counter() - started_training, "curve": curve}


def write_json(path, data) -> None:
    with atomic_write(path, "w") as f:
        json.dump(data, f, indent=2)


def plot(path, results, task_name) -> None:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plot (pip install 'tinynet[plot]')")
        return
    fig, ax = plt.subplots(figsize=(6, 4))
    for r in results:
        ax.plot(*zip(*r["curve"], strict=True), marker=".", label=f"{r['norm']}-LSTM")
    ylabel = "test accuracy" if task_name == "mnist" else "MSE at training length"
    ax.set(xlabel="training steps", ylabel=ylabel,
           title="sequential MNIST" if task_name == "mnist" else "adding problem")
    ax.legend()
    fig.tight_layout()
    with atomic_write(path, "wb") as f:
        fig.savefig(f, format="png", dpi=100)


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    mnist_mlp.check_device(parser, args.device)
    task = TASKS[args.task](args)
    norms = NORMS if args.norm == "all" else (args.norm,)
    results = []
    for norm in norms:
        result = train(args, norm, task)
        results.append(result)
        summary = {k: v for k, v in result.items() if k.startswith(("test_", "mse_at"))}
        print(f"{norm}-LSTM: " + ", ".join(f"{k} {v:.4f}" for k, v in summary.items())
              + f", median step {1000 * result['median_step_seconds']:.2f} ms", flush=True)
        if args.out:
            out = os.path.join(args.out, norm) if args.norm == "all" else args.out
            write_json(os.path.join(out, "result.json"), result)
    if args.out and args.norm == "all":
        plot(os.path.join(args.out, "curves.png"), results, args.task)
    return 0


if __name__ == "__main__":
    sys.exit(main())
