"""The loss curves of docs/transformers.md: tinynet's GPT and nanoGPT's, three seeds each.

    python docs/figures/gpt_curves.py [RUN_DIR ...]

Reads each run's curves.csv (char_lm.py writes it; by default the copies beside this
script, gpt_curves_seed*.csv) and nanoGPT's evaluations of the same recipe from
nanogpt_curves.csv (the ``step N: train loss …, val loss …`` lines of its train.py logs),
and writes gpt_curves.png beside this script (or ``out``), atomically.
examples/gpt_report.py calls it with the runs of its table.
"""
from __future__ import annotations

import csv
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from tinynet.serialization import atomic_write  # noqa: E402

HERE = Path(__file__).resolve().parent


def read(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def main(run_dirs, out=HERE / "gpt_curves.png", reference=HERE / "nanogpt_curves.csv"):
    ours = ([Path(d) / "curves.csv" for d in run_dirs] if run_dirs
            else sorted(HERE.glob("gpt_curves_seed*.csv")))
    theirs = read(reference)
    fig, ax = plt.subplots(figsize=(6.4, 4))
    for i, path in enumerate(ours):
        rows = read(path)
        ax.plot([int(r["iter"]) for r in rows], [float(r["val_loss"]) for r in rows],
                color="C0", alpha=0.8, label="tinynet" if i == 0 else None)
    for i, seed in enumerate(sorted({r["seed"] for r in theirs})):
        rows = [r for r in theirs if r["seed"] == seed]
        ax.plot([int(r["iter"]) for r in rows], [float(r["val_loss"]) for r in rows],
                color="C1", alpha=0.8, linestyle="--", label="nanoGPT" if i == 0 else None)
    ax.set(xlabel="iteration", ylabel="validation loss (nats per character)", ylim=(1.8, 2.6),
           title="GPT on Tiny Shakespeare, nanoGPT's CPU recipe, 3 seeds each")
    ax.legend()
    fig.tight_layout()
    with atomic_write(out, "wb") as f:
        fig.savefig(f, format="png", dpi=100)
    plt.close(fig)


if __name__ == "__main__":
    main(sys.argv[1:])
