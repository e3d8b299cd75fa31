"""Validation loss of char_lm.py checkpoints on one fixed set of batches, and of
nanoGPT's checkpoints on the same batches.

    python benchmarks/char_lm_eval.py runs/gpt-seed1337/last.npz runs/gpt-seed1338/last.npz
    python benchmarks/char_lm_eval.py runs/gpt-*/last.npz \\
        --nanogpt ~/nanoGPT --nanogpt-out out-seed0 out-seed1

The training runs estimate their loss on 20 random batches, an estimate whose
noise is about that of the seed-to-seed spread. Here every model is scored on
the same ``--batches`` batches (200 by default: 153,600 characters) of Tiny
Shakespeare's validation split, drawn once from a fixed seed, so that two
models' numbers differ only by the models. ``--nanogpt`` is a checkout of
nanoGPT (its ``model.py`` is imported from there, with PyTorch) and
``--nanogpt-out`` its ``out_dir`` folders, each holding a ``ckpt.pt``.
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

import tinynet
from tinynet.data import load_tinyshakespeare
from tinynet.models import language_model


def fixed_batches(corpus, count, batch_size, block_size, seed=2026):
    """``count`` (x, y) pairs of int64 arrays (batch_size, block_size) of the validation split."""
    offsets = np.random.default_rng(seed).integers(0, len(corpus.val) - block_size,
                                                   size=(count, batch_size))
    index = offsets[..., None] + np.arange(block_size)
    return [(corpus.val[i], corpus.val[i + 1]) for i in index]


@tinynet.no_grad()
def tinynet_loss(path, batches) -> tuple:
    state = tinynet.load(path)
    model = language_model(state["config"])
    model.load_state_dict(state["model"])
    model.eval()
    losses = [model(tinynet.tensor(x), tinynet.tensor(y))[1].item() for x, y in batches]
    return float(np.mean(losses)), state["iteration"]


def nanogpt_loss(checkout, out_dir, batches) -> tuple:
    import torch
    sys.path.insert(0, os.path.expanduser(checkout))
    from model import GPT as NanoGPT
    from model import GPTConfig as NanoConfig
    checkpoint = torch.load(os.path.join(out_dir, "ckpt.pt"), map_location="cpu",
                            weights_only=False)
    model = NanoGPT(NanoConfig(**checkpoint["model_args"]))
    model.load_state_dict({k.removeprefix("_orig_mod."): v
                           for k, v in checkpoint["model"].items()})
    model.eval()
    with torch.no_grad():
        losses = [model(torch.tensor(x), torch.tensor(y))[1].item() for x, y in batches]
    return float(np.mean(losses)), checkpoint["iter_num"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkpoints", nargs="*", help="char_lm.py checkpoints (.npz)")
    parser.add_argument("--data", help="the directory holding Tiny Shakespeare's input.txt")
    parser.add_argument("--batches", type=int, default=200)
    parser.add_argument("--batch-size", type=int, default=12)
    parser.add_argument("--block-size", type=int, default=64)
    parser.add_argument("--nanogpt", help="a nanoGPT checkout (for its model.py)")
    parser.add_argument("--nanogpt-out", nargs="*", default=[], help="nanoGPT out_dir folders")
    args = parser.parse_args()
    if args.nanogpt_out and not args.nanogpt:
        parser.error("--nanogpt-out needs --nanogpt, the checkout whose model.py reads them")
    corpus = load_tinyshakespeare(args.data, allow_sample=False)
    batches = fixed_batches(corpus, args.batches, args.batch_size, args.block_size)
    print(f"validation loss on {args.batches} fixed batches of {args.batch_size} x "
          f"{args.block_size} characters\n")
    print("| model | checkpoint | iteration | validation loss |\n|---|---|---|---|")
    for path in args.checkpoints:
        loss, iteration = tinynet_loss(path, batches)
        print(f"| tinynet | {path} | {iteration} | {loss:.4f} |")
    for out_dir in args.nanogpt_out:
        loss, iteration = nanogpt_loss(args.nanogpt, out_dir, batches)
        print(f"| nanoGPT | {out_dir} | {iteration} | {loss:.4f} |")


if __name__ == "__main__":
    main()
