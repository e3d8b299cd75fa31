"""Character-level language models on Tiny Shakespeare: nanoGPT's GPT, or an LSTM.

    python examples/char_lm.py                          # nanoGPT's CPU recipe
    python examples/char_lm.py --model ln-lstm          # an LN-LSTM of the same size
    python examples/char_lm.py --preset tiny --out runs/tiny   # a minute or less
    python examples/char_lm.py --out runs/gpt --resume  # go on from runs/gpt/last.npz

``--preset cpu`` is the recipe of nanoGPT's README for a CPU
(``config/train_shakespeare_char.py`` with its command-line overrides): 4
layers, 4 heads, 128 channels, context 64, batch 12, 2,000 iterations, AdamW
(betas 0.9, 0.99; weight decay 0.1 on the matrices), learning rate 1e-3 with
100 warm-up iterations and a cosine decay to 1e-4 at 2,000, gradient clipping
at 1.0, no dropout, no biases. nanoGPT's README reports a validation loss of
about 1.88 for it. Every hyper-parameter is also a flag, which wins over the
preset.

``--model lstm`` and ``--model ln-lstm`` train ``tinynet.models.CharLSTM``
(char-rnn's model; ``ln-lstm`` is the paper's LN-LSTM) instead, with the hidden
size chosen so that its parameter count matches, within 10 %, that of the GPT
the same flags describe (``--hidden-size`` sets it instead; ``--lstm-layers``
stacks layers). Everything else is the same: data, schedule, AdamW with the
same grouping, clipping, evaluations, checkpoints and sampling. A checkpoint
names its model type; ``--resume`` refuses one of another type.
``--norm-axis time`` gives the GPT the deliberately wrong LayerNorm over the
sequence (``tinynet.models.gpt.TimeAxisLayerNorm``), which reads the future.

Every ``--eval-interval`` iterations (and at the end) the train and
validation losses are estimated on ``--eval-iters`` batches of each split
(nanoGPT's ``estimate_loss``) and written to ``OUT/curves.csv`` and
``OUT/curves.png``. ``OUT/last.npz`` holds everything needed to go on
(weights, optimizer, generators, curves); ``OUT/best.npz`` the weights of the
best validation loss. Both are written atomically. A run stopped at any
moment, even by SIGKILL, and continued with ``--resume`` gives the same losses,
bit for bit, as one never interrupted. The run ends with a sample of
``--sample`` characters and the median iteration time (forward, backward,
clipping, AdamW).
"""
from __future__ import annotations

import argparse
import csv
import io
import math
import os
import statistics
import sys
import time
from dataclasses import asdict

import numpy as np

import tinynet
from tinynet.data import load_tinyshakespeare
from tinynet.models import GPT, CharLSTM, GPTConfig
from tinynet.models.char_lstm import match_hidden_size
from tinynet.models.gpt import GPT_NORMS, NORM_AXES, PLACEMENTS
from tinynet.serialization import atomic_write

import mnist_mlp  # examples/: check_device

PRESETS = {
    "cpu": dict(n_layer=4, n_head=4, n_embd=128, block_size=64, batch_size=12, max_iters=2000,
                lr_decay_iters=2000, eval_interval=250, eval_iters=20, learning_rate=1e-3,
                min_lr=1e-4, warmup_iters=100, beta1=0.9, beta2=0.99, weight_decay=0.1,
                grad_clip=1.0, dropout=0.0, bias=False),
    "tiny": dict(n_layer=2, n_head=2, n_embd=32, block_size=32, batch_size=8, max_iters=60,
                 lr_decay_iters=60, eval_interval=20, eval_iters=4, learning_rate=3e-3,
                 min_lr=3e-4, warmup_iters=5, beta1=0.9, beta2=0.99, weight_decay=0.1,
                 grad_clip=1.0, dropout=0.0, bias=False),
}
CURVE_FIELDS = ("iter", "train_loss", "val_loss", "lr")
MODELS = {"gpt": "GPT", "lstm": "LSTM", "ln-lstm": "LN-LSTM"}     # --model: its name


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=list(MODELS), default="gpt")
    parser.add_argument("--preset", choices=sorted(PRESETS), default="cpu")
    for name, value in PRESETS["cpu"].items():
        flag = "--" + name.replace("_", "-")
        if isinstance(value, bool):
            parser.add_argument(flag, type=lambda s: s.lower() in ("1", "true", "yes"),
                                default=None, metavar="BOOL")
        else:
            parser.add_argument(flag, type=type(value), default=None)
    parser.add_argument("--norm", choices=GPT_NORMS, default="layer")
    parser.add_argument("--placement", choices=PLACEMENTS, default="pre")
    parser.add_argument("--norm-axis", choices=NORM_AXES, default="features",
                        help="GPT: time takes LayerNorm's statistics over the sequence")
    parser.add_argument("--hidden-size", type=int, help="LSTM: the hidden size (default: "
                        "matched to the GPT's parameter count)")
    parser.add_argument("--lstm-layers", type=int, default=1, help="LSTM: the layers")
    parser.add_argument("--seed", type=int, default=1337)
    parser.add_argument("--data", help="a directory holding input.txt, or the file "
                        "(default: $TINYNET_DATA/tinyshakespeare, else the bundled excerpt)")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                        help="cuda: train on the GPU, which needs CuPy")
    parser.add_argument("--out", help="directory for curves, checkpoints and the sample")
    parser.add_argument("--resume", action="store_true", help="continue from OUT/last.npz")
    parser.add_argument("--sample", type=int, default=500, help="characters to generate")
    parser.add_argument("--temperature", type=float, default=0.8)
    parser.add_argument("--top-k", type=int, default=200)
    parser.add_argument("--no-progress", action="store_true")
    return parser


def settings(args) -> argparse.Namespace:
    """The preset's values, with every flag given on the command line over them."""
    values = dict(PRESETS[args.preset])
    values.update({k: v for k, v in vars(args).items() if v is not None or k not in values})
    return argparse.Namespace(**values)


def learning_rate(it: int, s) -> float:
    """nanoGPT's schedule: linear warm-up, cosine decay to min_lr, then min_lr."""
    if it < s.warmup_iters:
        return s.learning_rate * (it + 1) / (s.warmup_iters + 1)
    if it > s.lr_decay_iters:
        return s.min_lr
    ratio = (it - s.warmup_iters) / (s.lr_decay_iters - s.warmup_iters)
    return s.min_lr + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (s.learning_rate - s.min_lr)


@tinynet.no_grad()
def estimate_loss(model, corpus, s, generator) -> dict:
    """The mean loss over ``eval_iters`` random batches of each split, in eval mode."""
    model.eval()
    losses = {}
    for split in ("train", "val"):
        total = 0.0
        for _ in range(s.eval_iters):
            x, y = corpus.get_batch(split, s.batch_size, s.block_size, generator,
                                    device=s.device)
            total += model(x, y)[1].item()
        losses[split] = total / s.eval_iters
    model.train()
    return losses


# ---------------------------------------------------------------------- models

def gpt_config(s, vocab_size) -> GPTConfig:
    return GPTConfig(block_size=s.block_size, vocab_size=vocab_size, n_layer=s.n_layer,
                     n_head=s.n_head, n_embd=s.n_embd, dropout=s.dropout, bias=s.bias,
                     norm=s.norm, placement=s.placement, norm_axis=s.norm_axis)


def gpt_summary(s) -> str:
    axis = ", statistics over time" if s.norm_axis == "time" else ""
    return (f"{s.n_layer} layers, {s.n_head} heads, {s.n_embd} channels, context "
            f"{s.block_size}; norm {s.norm}, {s.placement}-norm{axis}")


def build_gpt(s, vocab_size):
    """The model, its configuration as a checkpoint stores it, and a line about it."""
    config = gpt_config(s, vocab_size)
    model = GPT(config)
    return model, {"model": "gpt", **asdict(config)}, \
        f"GPT: {model.get_num_params() / 1e6:.2f}M parameters ({gpt_summary(s)})"


def build_lstm(s, vocab_size):
    """A CharLSTM with as many parameters as the GPT of these settings."""
    norm = "layer" if s.model == "ln-lstm" else None
    target = GPT(gpt_config(s, vocab_size)).get_num_params()
    hidden = s.hidden_size or match_hidden_size(target, vocab_size, s.lstm_layers, norm)
    tinynet.manual_seed(s.seed)             # the same draws as if no GPT had been built
    model = CharLSTM(vocab_size, hidden, s.lstm_layers, norm=norm, dropout=s.dropout)
    count = model.get_num_params()
    return model, {"model": s.model, **model.get_config()}, (
        f"{MODELS[s.model]}: {count / 1e6:.2f}M parameters ({count:,}; hidden size {hidden}, "
        f"{s.lstm_layers} layers); the GPT it matches: {target / 1e6:.2f}M ({target:,}; "
        f"{gpt_summary(s)})")


BUILDERS = {"gpt": build_gpt, "lstm": build_lstm, "ln-lstm": build_lstm}


# ------------------------------------------------------------------ run state

class Run:
    """Model, optimizer, generators and curves: what a checkpoint holds."""

    def __init__(self, s, corpus):
        self.s = s
        tinynet.manual_seed(s.seed)
        model, self.config, self.description = BUILDERS[s.model](s, corpus.vocab_size)
        self.model = model.to(s.device)
        self.optimizer = self.model.configure_optimizers(s.weight_decay, s.learning_rate,
                                                         (s.beta1, s.beta2))
        self.batches = np.random.default_rng(s.seed)
        self.eval_batches = np.random.default_rng(s.seed + 1)
        self.iteration = 0
        self.best_val = math.inf
        self.curve = []
        self.iteration_seconds = []

    def state(self) -> dict:
        device_rng = tinynet.backend.get_backend(self.s.device).rng
        return {"model": self.model.state_dict(), "optimizer": self.optimizer.state_dict(),
                "config": self.config, "iteration": self.iteration,
                "best_val": self.best_val, "curve": self.curve,
                "iteration_seconds": self.iteration_seconds,
                "generators": {"batches": self.batches.bit_generator.state,
                               "eval_batches": self.eval_batches.bit_generator.state,
                               "device": _generator_state(device_rng)}}

    def restore(self, state: dict) -> None:
        kind = state["config"].get("model", "gpt")
        if kind != self.config["model"]:
            raise SystemExit(f"--resume: the checkpoint is of a {kind!r} model, not this "
                             f"run's {self.config['model']!r} (--model {kind} to go on)")
        if kind == "gpt":     # fields added to GPTConfig since take their defaults
            state["config"] = {"model": "gpt", **asdict(GPTConfig(
                **{k: v for k, v in state["config"].items() if k != "model"}))}
        if state["config"] != self.config:
            raise SystemExit(f"--resume: the checkpoint's model {state['config']} is not "
                             f"this run's {self.config}")
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.iteration, self.best_val = state["iteration"], state["best_val"]
        self.curve = [list(row) for row in state["curve"]]
        self.iteration_seconds = list(state["iteration_seconds"])
        self.batches.bit_generator.state = state["generators"]["batches"]
        self.eval_batches.bit_generator.state = state["generators"]["eval_batches"]
        _set_generator_state(tinynet.backend.get_backend(self.s.device).rng,
                             state["generators"]["device"])


def _generator_state(rng):
    return rng.bit_generator.state if hasattr(rng, "bit_generator") else None


def _set_generator_state(rng, state):
    if state is not None and hasattr(rng, "bit_generator"):
        rng.bit_generator.state = state


# -------------------------------------------------------------------- training

def train(run, corpus, s, out) -> None:
    from tqdm import tqdm
    model, optimizer = run.model, run.optimizer
    bar = tqdm(total=s.max_iters, initial=run.iteration, desc=s.model, dynamic_ncols=True,
               disable=s.no_progress, mininterval=0.5)
    first = run.iteration
    for it in range(first, s.max_iters + 1):
        lr = learning_rate(it, s)
        for group in optimizer.param_groups:
            group["lr"] = lr
        if (it % s.eval_interval == 0 or it == s.max_iters) and not (it == first and run.curve):
            losses = estimate_loss(model, corpus, s, run.eval_batches)
            run.curve.append([it, losses["train"], losses["val"], lr])
            bar.set_postfix(train=f"{losses['train']:.4f}", val=f"{losses['val']:.4f}")
            run.iteration = it
            improved = losses["val"] < run.best_val
            run.best_val = min(run.best_val, losses["val"])
            if out:
                save_progress(run, out, improved)
        if it == s.max_iters:
            break
        x, y = corpus.get_batch("train", s.batch_size, s.block_size, run.batches,
                                device=s.device)
        started = time.perf_counter()
        _, loss = model(x, y)
        loss.backward()
        tinynet.nn.utils.clip_grad_norm_(model.parameters(), s.grad_clip)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        run.iteration_seconds.append(time.perf_counter() - started)
        bar.update(1)
    run.iteration = s.max_iters
    bar.close()


def save_progress(run, out, improved: bool) -> None:
    """The curves (CSV, PNG), the best weights if ``improved``, then the state to go on
    from; each file replaced atomically."""
    write_curves(os.path.join(out, "curves.csv"), run.curve)
    plot(os.path.join(out, "curves.png"), run.curve, MODELS[run.s.model])
    if improved:
        tinynet.save({"model": run.model.state_dict(), "config": run.config,
                      "iteration": run.iteration}, os.path.join(out, "best.npz"))
    tinynet.save(run.state(), os.path.join(out, "last.npz"))


def write_curves(path, curve) -> None:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(CURVE_FIELDS)
    writer.writerows([[it, repr(train), repr(val), repr(lr)] for it, train, val, lr in curve])
    with atomic_write(path, "w") as f:
        f.write(buffer.getvalue())


def plot(path, curve, name="GPT") -> None:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    its, train, val, _ = zip(*curve, strict=True)
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(its, train, marker=".", label="train")
    ax.plot(its, val, marker=".", label="validation")
    ax.set(xlabel="iteration", ylabel="cross-entropy (nats per character)",
           title=f"{name} on Tiny Shakespeare")
    ax.legend()
    fig.tight_layout()
    with atomic_write(path, "wb") as f:
        fig.savefig(f, format="png", dpi=100)
    plt.close(fig)


def sample_text(model, corpus, s) -> str:
    start = tinynet.tensor(corpus.encode("\n")[None, :], device=s.device)
    generator = tinynet.Generator(s.device).manual_seed(s.seed)
    model.eval()
    ids = model.generate(start, s.sample, temperature=s.temperature, top_k=s.top_k,
                         generator=generator)
    return corpus.decode(ids[0])


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    mnist_mlp.check_device(parser, args.device)
    if args.resume and not args.out:
        parser.error("--resume needs --out, the directory of the run to continue")
    s = settings(args)
    corpus = load_tinyshakespeare(s.data)
    run = Run(s, corpus)
    print(f"{corpus!r}\n{run.description}", flush=True)
    if args.resume:
        last = os.path.join(s.out, "last.npz")
        if not os.path.exists(last):
            parser.error(f"--resume: no checkpoint at {last}")
        run.restore(tinynet.load(last))
        print(f"resumed at iteration {run.iteration}", flush=True)
    if s.out:
        os.makedirs(s.out, exist_ok=True)
    train(run, corpus, s, s.out)
    it, train_loss, val_loss, _ = run.curve[-1]
    median_ms = 1000 * statistics.median(run.iteration_seconds) if run.iteration_seconds \
        else float("nan")
    print(f"iteration {it}: train loss {train_loss:.4f}, val loss {val_loss:.4f}, "
          f"best val {run.best_val:.4f}; median iteration {median_ms:.1f} ms", flush=True)
    if s.sample > 0:
        text = sample_text(run.model, corpus, s)
        print("---\n" + text + "\n---")
        if s.out:
            with atomic_write(os.path.join(s.out, "sample.txt"), "w") as f:
                f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
