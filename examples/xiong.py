"""Xiong et al. (2020), *On Layer Normalization in the Transformer Architecture*, in
their own setting: an encoder–decoder Transformer at initialisation, and trained.

    python examples/xiong.py --out runs/xiong                 # every part, resumable
    python examples/xiong.py --out runs/xiong --parts grad    # one part
    python examples/xiong_report.py --runs runs --page docs/transformers.md

The model is ``tinynet.models.Seq2SeqTransformer`` (Xiong et al.'s IWSLT14
model: d_model 512, 4 heads, FFN 1024, 6 + 6 layers, ReLU, Xavier), the task
``tinynet.data.ReversedWords`` (Tiny Shakespeare's lines, their words reversed).
Four parts, each appending records to ``OUT/PART.jsonl`` and skipping those
already there (so a stopped run goes on where it stopped):

``grad``
    Xiong et al.'s Figure 3(a)(b): :func:`ffn_grad_norms` of the 6 + 6 model at
    initialisation, Post-LN and Pre-LN, ReLU, for each seed.
``depth``
    Their Figure 3(c)(d): the same at 12 + 12 layers, whose last layer's
    gradient the report sets against that of 6 + 6.
``gpt``
    What flattens the Post-LN profile of docs/transformers.md's decoder-only
    GPT: ``tinynet.models.GPT`` (512 channels, 6 layers, on Tiny Shakespeare
    text) with GELU (its own) or ReLU, GPT-2's initialisation (its own) or
    Xavier on the block matrices; and the encoder–decoder with GELU.
``train``
    The warm-up claim (Xiong et al., Figure 2): a smaller
    encoder–decoder (``--train-*``) trained with Adam, Post-LN with and without
    a learning-rate warm-up, Pre-LN without, two seeds each.

Each part draws seeds 0..N-1, N from :data:`SEEDS` (``--seeds N`` for every
part). Every record keeps its settings and its wall time (``seconds``).
``--device cuda`` runs on the GPU (with CuPy), and stops at once, naming what
is missing, where there is none.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time

import numpy as np

import tinynet
from tinynet import nn
from tinynet.data import ReversedWords, load_tinyshakespeare
from tinynet.data.text import TINYSHAKESPEARE_CHARS
from tinynet.models import GPT, GPTConfig, Seq2SeqTransformer
from tinynet.serialization import atomic_write

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mnist_mlp  # noqa: E402  (examples/: check_device)

PARTS = ("grad", "depth", "gpt", "train")
SEEDS = {"grad": 5, "depth": 3, "gpt": 3, "train": 2}      # seeds 0..N-1 of each part
# Xiong et al.'s model (their Figure 3), and the batches of the gradient measurement.
MODEL = dict(d_model=512, nhead=4, dim_feedforward=1024, layers=6)
GRAD = dict(batch_size=16, batches=4, dtype="float32")
GPT_SIZE = dict(n_embd=512, n_head=8, n_layer=6, block_size=64)
# The trained model: smaller than Xiong et al.'s, for two cores (docs/transformers.md).
TRAIN = dict(d_model=128, nhead=4, dim_feedforward=256, layers=6, batch_size=16,
             steps=250, lr=1e-3, betas=(0.9, 0.98), warmup=50, eval_every=25,
             eval_lines=128)


# ------------------------------------------------------------ the measurement

def ffn_weights(model) -> dict:
    """Each stack's FFN W¹ and W² (layer 0 nearest the input): an encoder–decoder's
    ``encoder`` and ``decoder``, a GPT's blocks as ``decoder`` (``mlp.c_fc``, ``mlp.c_proj``)."""
    if isinstance(model, GPT):
        return {"decoder": [(b.mlp.c_fc.weight, b.mlp.c_proj.weight)
                            for b in model.transformer["h"]]}
    return model.ffn_layers()


def ffn_grad_norms(model, batches) -> dict:
    """Xiong et al.'s Figure 3 measurement, for one initialised model.

    Each batch is a tuple of tensors, ``model(*batch)`` returning ``(logits, loss)``
    with the loss the mean over the batch's tokens. The gradient of each FFN's W¹
    and W² at the weights as they are, averaged over the batches (the expected
    gradient, estimated as Xiong et al. do from several mini-batches), and its
    2-norm (Frobenius). Returns ``{stack: [[|∇W¹|, |∇W²|] of layer 0, …]}``
    (floats), the stacks of :func:`ffn_weights`. No parameter changes; the averaged
    gradients are left in ``.grad``.
    """
    weights = ffn_weights(model)
    model.zero_grad()
    for batch in batches:
        (model(*batch)[1] / len(batches)).backward()      # .grad accumulates the mean
    return {stack: [[float(np.linalg.norm(tinynet.backend.as_numpy(w.grad.array).ravel()))
                     for w in pair] for pair in layers]
            for stack, layers in weights.items()}


# ------------------------------------------------------------ models and data

def xavier_blocks(model: GPT) -> None:
    """Xavier-uniform on the GPT's block matrices, U(±√(6 / (fan_in + fan_out)))."""
    for name, p in model.named_parameters():
        if name.startswith("transformer.h.") and p.ndim == 2:
            bound = math.sqrt(6.0 / sum(p.shape))
            nn.init.uniform_(p, -bound, bound)


def build(config: dict, vocab_size: int, device="cpu"):
    """The initialised model a record's ``config`` describes (seeded by its ``seed``)."""
    tinynet.manual_seed(config["seed"])
    dtype = config.get("dtype", "float32")
    if config["model"] == "gpt":
        size = {k: config[k] for k in GPT_SIZE}
        model = GPT(GPTConfig(vocab_size=vocab_size, **size,
                              placement="pre" if config["norm_first"] else "post"))
        if config["activation"] == "relu":
            for block in model.transformer["h"]:
                block.mlp.gelu = nn.ReLU()
        if config["init"] == "xavier":
            xavier_blocks(model)
        return model.to(device=device, dtype=np.dtype(dtype))
    return Seq2SeqTransformer(
        vocab_size, config["d_model"], config["nhead"], config["layers"], config["layers"],
        config["dim_feedforward"], activation=config["activation"],
        norm_first=config["norm_first"], device=device, dtype=dtype)


def batches_for(config: dict, task: ReversedWords, corpus, device="cpu") -> list:
    """The record's training batches (seeded by its ``seed``): lines for the
    encoder–decoder, windows of text for the GPT."""
    rng = np.random.default_rng(1000 + config["seed"])
    if config["model"] == "gpt":
        return [corpus.get_batch("train", config["batch_size"], config["block_size"], rng,
                                 device=device) for _ in range(config["batches"])]
    return [task.get_batch("train", config["batch_size"], rng, device=device)
            for _ in range(config["batches"])]


def load_task(data=None):
    """Tiny Shakespeare (``data``, else as found; the bundled excerpt without it) and the
    reversed-words task made from it, both with the full text's 65 characters."""
    corpus = load_tinyshakespeare(data, chars=TINYSHAKESPEARE_CHARS)
    return corpus, ReversedWords(corpus)


def measure(config: dict, task, corpus, device="cpu") -> dict:
    """The record of one measurement: ``config``, the norms, the wall time."""
    start = time.perf_counter()
    vocab = corpus.vocab_size if config["model"] == "gpt" else task.vocab_size
    model = build(config, vocab, device)
    norms = ffn_grad_norms(model, batches_for(config, task, corpus, device))
    return dict(config, norms=norms, seconds=time.perf_counter() - start,
                data="excerpt" if corpus.is_sample else "full")


def grad_configs(part: str, seeds) -> list[dict]:
    """The measurements of part ``grad``, ``depth`` or ``gpt``."""
    seq2seq = dict(model="seq2seq", **MODEL, **GRAD)
    if part == "grad":
        return [dict(seq2seq, norm_first=nf, activation="relu", seed=s)
                for nf in (False, True) for s in seeds]
    if part == "depth":
        return [dict(seq2seq, layers=12, norm_first=nf, activation="relu", seed=s)
                for nf in (False, True) for s in seeds]
    gpt = dict(model="gpt", **GPT_SIZE, **GRAD)
    return ([dict(gpt, norm_first=nf, activation=act, init=init, seed=s)
             for init in ("gpt2", "xavier") for act in ("gelu", "relu")
             for nf in (False, True) for s in seeds]
            + [dict(seq2seq, norm_first=nf, activation="gelu", seed=s)
               for nf in (False, True) for s in seeds])


# ------------------------------------------------------------------ training

def learning_rate(step: int, config: dict) -> float:
    """Linear warm-up from 0 over ``warmup`` steps, then the peak ``lr``, constant."""
    if step < config["warmup"]:
        return config["lr"] * (step + 1) / config["warmup"]
    return config["lr"]


@tinynet.no_grad()
def evaluate(model, batches) -> tuple[float, float]:
    """The loss (mean over target tokens) and the share of target tokens predicted
    right (the argmax, with the true previous tokens given) on fixed batches."""
    loss = right = tokens = 0.0
    for src, tgt_in, tgt_out in batches:
        logits, batch_loss = model(src, tgt_in, tgt_out)
        targets = tgt_out.cpu().numpy()
        real = targets != model.pad_idx
        count = real.sum()
        loss += batch_loss.item() * count
        right += ((logits.cpu().numpy().argmax(-1) == targets) & real).sum()
        tokens += count
    return float(loss / tokens), float(right / tokens)


def train(config: dict, task: ReversedWords, device="cpu", log=print) -> dict:
    """Train one encoder–decoder as ``config`` says (Adam, no clipping, no dropout);
    the record: ``config``, ``curve`` ([step, mean training loss of the last
    ``eval_every`` steps, validation loss, validation token accuracy] every
    ``eval_every`` steps, from step 0), ``final`` (the last row) and ``seconds``."""
    start = time.perf_counter()
    model = build(dict(config, model="seq2seq"), task.vocab_size, device)
    optimizer = tinynet.optim.Adam(model.parameters(), lr=learning_rate(0, config),
                                   betas=tuple(config["betas"]))
    lines = task.lines["val"][:config["eval_lines"]]
    val = [tuple(tinynet.tensor(a).to(device) for a in task.batch(lines[i:i + 64]))
           for i in range(0, len(lines), 64)]
    rng = np.random.default_rng(2000 + config["seed"])
    curve, recent = [[0, None, *evaluate(model, val)]], []
    for step in range(config["steps"]):
        for group in optimizer.param_groups:
            group["lr"] = learning_rate(step, config)
        loss = model(*task.get_batch("train", config["batch_size"], rng, device=device))[1]
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        recent.append(loss.item())
        if (step + 1) % config["eval_every"] == 0 or step + 1 == config["steps"]:
            curve.append([step + 1, float(np.mean(recent)), *evaluate(model, val)])
            recent = []
            log(f"  step {step + 1}: train {curve[-1][1]:.3f}, val {curve[-1][2]:.3f}, "
                f"accuracy {curve[-1][3]:.3f}")
    return dict(config, curve=curve, final=curve[-1], seconds=time.perf_counter() - start)


def train_configs(seeds=(0, 1), **overrides) -> list[dict]:
    """Post-LN with and without warm-up, Pre-LN without, for each seed."""
    base = dict(TRAIN, **overrides, dtype="float32", activation="relu")
    return [dict(base, norm_first=nf, warmup=warmup, seed=s)
            for nf, warmup in ((False, base["warmup"]), (False, 0), (True, 0)) for s in seeds]


# ----------------------------------------------------------------- the runner

def read_records(path) -> list[dict]:
    """The records of a part's jsonl file (none if it is missing)."""
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def key(config: dict) -> str:
    """What identifies a record: its configuration, without the results."""
    results = ("norms", "seconds", "curve", "final", "data")
    return json.dumps({k: v for k, v in config.items() if k not in results}, sort_keys=True)


def run_part(part: str, configs: list[dict], out: str, work, log=print) -> list[dict]:
    """Run each configuration of ``part`` not yet in ``OUT/PART.jsonl``; all its records."""
    path = os.path.join(out, f"{part}.jsonl")
    records = read_records(path)
    done = {key(r) for r in records}
    for config in configs:
        if key(config) in done:
            continue
        record = work(config)
        records.append(record)
        with atomic_write(path, "w") as f:
            f.writelines(json.dumps(r) + "\n" for r in records)
        log(f"{part}: {len(records)} records, the last in {record['seconds']:.1f} s")
    return records


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="runs/xiong")
    parser.add_argument("--parts", nargs="+", choices=PARTS, default=list(PARTS))
    parser.add_argument("--seeds", type=int, help="seeds 0..N-1 of every part (default: "
                        + ", ".join(f"{k} {v}" for k, v in SEEDS.items()) + ")")
    parser.add_argument("--data", help="Tiny Shakespeare's directory (default: "
                        "$TINYNET_DATA/tinyshakespeare, else the bundled excerpt)")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    for name in ("steps", "lr", "warmup", "d_model", "layers"):
        parser.add_argument("--train-" + name.replace("_", "-"), dest=name,
                            type=type(TRAIN[name]), default=TRAIN[name])
    args = parser.parse_args(argv)
    mnist_mlp.check_device(parser, args.device)
    os.makedirs(args.out, exist_ok=True)
    corpus, task = load_task(args.data)
    for part in args.parts:
        start = time.perf_counter()
        seeds = range(args.seeds or SEEDS[part])
        if part == "train":
            overrides = {k: getattr(args, k) for k in ("steps", "lr", "warmup", "d_model",
                                                       "layers")}
            run_part(part, train_configs(seeds, **overrides), args.out,
                     lambda c: train(c, task, args.device))
        else:
            run_part(part, grad_configs(part, seeds), args.out,
                     lambda c: measure(c, task, corpus, args.device))
        print(f"{part}: done in {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
