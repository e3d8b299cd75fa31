"""The project's models trained for a few float32 steps: a fingerprint of every loss
and every final parameter, to show that a change of the code's layout changed no bit.

    python benchmarks/same_bits.py --steps 5 --out after.json
    python benchmarks/same_bits.py --steps 5 --compare before.json

Rows: the MLP with LayerNorm (batch 128), the LN-LSTM (batch 64), the ConvNet with
BatchNorm (batch 128) and GroupNorm (batch 4), each with Adam, and the GPT at
benchmarks/torch_gpt.py's recipe (clipping, AdamW). The fingerprint is the SHA-256
of the losses' and the parameters' bytes, so two runs agree only bit for bit. Run
both sides on the same machine and thread count (the BLAS's sums may be ordered by
its threads).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
import numpy as np  # noqa: E402
from torch_gpt import GPTRun  # noqa: E402

import tinynet  # noqa: E402
from tinynet.models import MLP, ConvNet, SequenceClassifier  # noqa: E402

CASES = {"MLP+LN, batch 128": ("mlp", (128, 784)),
         "LN-LSTM, batch 64": ("lstm", (64, 28, 28)),
         "ConvNet+BN, batch 128": ("cnn-batch", (128, 784)),
         "ConvNet+GN, batch 4": ("cnn-group", (4, 784))}


def classifier_run(kind, shape, steps, seed=0):
    """Losses and the model of ``steps`` Adam steps on fixed random data."""
    tinynet.manual_seed(seed)
    rng = np.random.default_rng(seed)
    if kind.startswith("cnn-"):
        model = ConvNet(kind.removeprefix("cnn-"))
    else:
        model = MLP("layer") if kind == "mlp" else SequenceClassifier(norm="layer")
    optimizer = tinynet.optim.Adam(model.parameters(), lr=1e-3)
    losses = []
    for _ in range(steps):
        x = tinynet.tensor(rng.random(shape, dtype=np.float32))
        y = tinynet.tensor(rng.integers(0, 10, shape[0]))
        optimizer.zero_grad()
        loss = tinynet.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses, model


def gpt_run(steps, seed=0):
    tinynet.manual_seed(seed)
    run = GPTRun("tinynet", seed)
    losses = []
    for _ in range(steps):
        loss = run.forward()
        loss.backward()
        run.clip()
        run.update()
        losses.append(loss.item())
    return losses, run.model


def fingerprint(losses, model) -> str:
    digest = hashlib.sha256(np.asarray(losses, dtype=np.float64).tobytes())
    for name, p in sorted(model.state_dict().items()):
        digest.update(name.encode())
        digest.update(np.ascontiguousarray(p.numpy()).tobytes())
    return digest.hexdigest()


def fingerprints(steps: int) -> dict:
    found = {name: fingerprint(*classifier_run(kind, shape, steps))
             for name, (kind, shape) in CASES.items()}
    found["GPT (torch_gpt.py's recipe)"] = fingerprint(*gpt_run(steps))
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--out", help="write the fingerprints here (JSON)")
    parser.add_argument("--compare", help="JSON of another checkout's run to compare with")
    args = parser.parse_args()
    found = fingerprints(args.steps)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(found, f, indent=1)
    other = json.load(open(args.compare)) if args.compare else {}
    for name, digest in found.items():
        verdict = "" if name not in other else (
            "  same bits" if other[name] == digest else "  DIFFERENT")
        print(f"{name:32s} {digest[:16]}{verdict}")
    if other and any(other.get(name) != digest for name, digest in found.items()):
        sys.exit(1)


if __name__ == "__main__":
    main()
