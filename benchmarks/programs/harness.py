"""What the programs of this folder share: their command line, where their data is, and
the timed training loop that prints the one JSON line benchmarks/programs.py reads.

Plain Python over ``torch``: under ``python -m tinynet.as_torch`` that is tinynet.
"""
import argparse
import json
import math
import os
import statistics
import time
from pathlib import Path

import torch

DATA_ENV = "TINYNET_DATA"          # a folder holding makemore-names/, tinyshakespeare/, mnist/
REPO_ROOT = Path(__file__).resolve().parents[2]


def data_dir(name: str) -> Path:
    """``$TINYNET_DATA/name`` when that variable is set, else ``../shared/data/name``
    next to the repository."""
    if os.environ.get(DATA_ENV):
        return Path(os.environ[DATA_ENV]).expanduser() / name
    return REPO_ROOT.parent / "shared" / "data" / name


def shakespeare_characters(script: str):
    """Tiny Shakespeare as a long tensor of character indices, and the number of
    distinct characters; exits naming the folder looked in when it is missing."""
    path = data_dir("tinyshakespeare") / "input.txt"
    if not path.is_file():
        raise SystemExit(f"{script}: no Tiny Shakespeare at {path} (set {DATA_ENV})")
    text = path.read_text(encoding="utf-8")
    chars = sorted(set(text))
    stoi = {ch: i for i, ch in enumerate(chars)}
    return torch.tensor([stoi[c] for c in text], dtype=torch.long), len(chars)


def arguments(description: str, parser: argparse.ArgumentParser = None):
    """The common options (``--steps --warmup --seed --threads``), parsed; the seed set."""
    parser = parser or argparse.ArgumentParser(description=description)
    parser.add_argument("--steps", type=int, default=30, help="timed steps")
    parser.add_argument("--warmup", type=int, default=5, help="untimed steps first")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, help="torch.set_num_threads")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    return args


def train(step, args, classes: int) -> None:
    """Run ``step()`` (one whole training step: batch, forward, backward, update;
    it returns the loss) ``warmup + steps`` times, timing each, and print
    {"ms_per_step": median of the timed steps, "loss": the last loss,
    "first_loss": the loss before any update, "ln_classes": ln of the classes}."""
    times, first = [], None
    for i in range(args.warmup + args.steps):
        start = time.perf_counter()
        loss = step()
        elapsed = time.perf_counter() - start
        if i == 0:
            first = loss.item()
        if i >= args.warmup:
            times.append(elapsed)
    print(json.dumps({"ms_per_step": 1e3 * statistics.median(times) if times else None,
                      "loss": loss.item(), "first_loss": first,
                      "ln_classes": math.log(classes)}))
