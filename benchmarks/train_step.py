"""Training-step time (forward, backward, Adam) of the paper's models, tinynet vs PyTorch.

    python benchmarks/train_step.py [--rounds 3] [--kernels RUNG]

The headline table is what a user gets: no thread settings, every core, each
library at its defaults. The second runs both on one thread
(``tinynet.set_num_threads(1)``, ``torch.set_num_threads(1)``). Each library
is timed in processes of its own, the rounds alternating between them: two
thread pools in one process take the cores from each other (an OpenMP pool
that has just finished still spins for a while), which is what a user of one
library never sees. Rows: the 784-1000-1000-10 MLP with LayerNorm at batch 4
and 128, and the LN-LSTM (sequential MNIST rows: 28 steps of 28 pixels,
hidden 128) at batch 64, the MNIST convnet (tinynet.models.ConvNet) with
BatchNorm at batch 128 and GroupNorm at batch 4; the PyTorch models are the same architectures (the
LN-LSTM written as the same per-step loop), and nanoGPT's GPT at its CPU recipe
(benchmarks/torch_gpt.py: one iteration is forward, backward, clipping and
AdamW; PyTorch runs nanoGPT's model.py with its fused attention). A cell is the median over rounds
of each process's median step, with the spread over rounds; ratio = tinynet /
PyTorch. Targets at the defaults: ratio ≤ 0.8 (MLP, LSTM), ≤ 0.9 (GPT), ≤ 1.0 (ConvNet,
against PyTorch's oneDNN convolutions).
``--kernels`` runs tinynet on another rung of the kernel ladder (kernels/ladder/).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from torch_gpt import gpt_iteration  # noqa: E402

from common import print_table, timing_rounds  # noqa: E402

HERE = os.path.abspath(__file__)
# Thread settings of the user's environment (and glibc's MALLOC_* variables), left
# out of every measured process.
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                    "NUMBA_NUM_THREADS", "OMP_WAIT_POLICY", "GOMP_SPINCOUNT",
                    "NUMBA_THREADING_LAYER", "OPENBLAS_THREAD_TIMEOUT",
                    "TINYNET_SHARE_BLAS_POOL")

CASES = [("MLP+LN 784-1000-1000-10, batch 4", "mlp", (4, 784)),
         ("MLP+LN 784-1000-1000-10, batch 128", "mlp", (128, 784)),
         ("LN-LSTM 28x28 steps, hidden 128, batch 64", "lstm", (64, 28, 28)),
         ("GPT 4x128, context 64, batch 12 (+ clipping, AdamW)", "gpt", None),
         ("ConvNet+BN 16-32 channels, MNIST, batch 128", "cnn-batch", (128, 784)),
         ("ConvNet+GN 16-32 channels, MNIST, batch 4", "cnn-group", (4, 784))]


def torch_models(torch):
    nn = torch.nn

    def mlp():
        return nn.Sequential(nn.Linear(784, 1000), nn.LayerNorm(1000), nn.ReLU(),
                             nn.Linear(1000, 1000), nn.LayerNorm(1000), nn.ReLU(),
                             nn.Linear(1000, 10))

    class LNLSTM(nn.Module):
        def __init__(self, input_size=28, hidden=128, classes=10):
            super().__init__()
            self.w_ih = nn.Linear(input_size, 4 * hidden, bias=False)
            self.w_hh = nn.Linear(hidden, 4 * hidden, bias=False)
            self.bias = nn.Parameter(torch.zeros(4 * hidden))
            self.ln_ih, self.ln_hh = nn.LayerNorm(4 * hidden), nn.LayerNorm(4 * hidden)
            self.ln_cell = nn.LayerNorm(hidden)
            self.head = nn.Linear(hidden, classes)
            self.hidden = hidden

        def forward(self, x):
            h = c = x.new_zeros(x.shape[0], self.hidden)
            for t in range(x.shape[1]):
                gates = self.ln_ih(self.w_ih(x[:, t])) + self.ln_hh(self.w_hh(h)) + self.bias
                i, f, g, o = gates.chunk(4, 1)
                c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
                h = torch.sigmoid(o) * torch.tanh(self.ln_cell(c))
            return self.head(h)

    def convnet(norm):
        def norm_layer(channels):
            return (nn.BatchNorm2d(channels) if norm == "batch"
                    else nn.GroupNorm(channels // 4, channels))
        return lambda: nn.Sequential(
            nn.Unflatten(1, (1, 28, 28)),
            nn.Conv2d(1, 16, 3, padding=1), norm_layer(16), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), norm_layer(32), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(), nn.Linear(32 * 7 * 7, 10))

    return {"mlp": mlp, "lstm": LNLSTM, "cnn-batch": convnet("batch"),
            "cnn-group": convnet("group")}


def make_step(lib, model, x, y):
    opt = lib.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = lib.nn.functional.cross_entropy

    def step():
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()
    return step


def training_steps(kind, shape, torch=None, seed=0):
    """{'tinynet': step, 'torch': step} for one case (torch's only if given)."""
    import numpy as np

    import tinynet
    from tinynet.models import MLP, ConvNet, SequenceClassifier

    rng = np.random.default_rng(seed)
    x = rng.random(shape, dtype=np.float32)
    y = rng.integers(0, 10, shape[0])
    if kind.startswith("cnn-"):
        model = ConvNet(kind.removeprefix("cnn-"))
    else:
        model = MLP("layer") if kind == "mlp" else SequenceClassifier(norm="layer")
    steps = {"tinynet": make_step(tinynet, model, tinynet.tensor(x), tinynet.tensor(y))}
    if torch is not None:
        steps["torch"] = make_step(torch, torch_models(torch)[kind](), torch.tensor(x),
                                   torch.tensor(y))
    return steps


def child(library: str, repeat: int, threads) -> None:
    """Time every case with one library; print {case: median seconds} as JSON."""
    torch = None
    if library == "torch":
        import torch
        if threads:
            torch.set_num_threads(threads)
    elif threads:
        import tinynet
        tinynet.set_num_threads(threads)
    times = {}
    for name, kind, shape in CASES:
        if kind == "gpt":
            step = gpt_iteration(library)
        else:
            step = training_steps(kind, shape, torch)[library]
        times[name] = timing_rounds({library: step}, repeat=repeat).median(library)
    print(json.dumps(times))


def run_clean(command: list, variables: dict, what: str) -> dict:
    """Run ``command`` in a fresh process with a clean environment plus ``variables``;
    return the JSON its last line of output holds."""
    env = {k: v for k, v in os.environ.items()
           if k not in THREAD_VARIABLES and not k.startswith("MALLOC_")}
    env.update(variables)
    result = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"{what} failed:\n{result.stderr[-2000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def run_child(library: str, variables=None, repeat: int = 5, threads=None) -> dict:
    """:func:`child` in a fresh process with a clean environment plus ``variables``."""
    command = [sys.executable, HERE, "--child", library, "--repeat", str(repeat)]
    if threads:
        command += ["--threads", str(threads)]
    return run_clean(command, variables or {}, f"{library} with {variables or 'no settings'}")


def median_and_spread(runs, case):
    times = [run[case] * 1e3 for run in runs]
    return statistics.median(times), f"{min(times):.3g}-{max(times):.3g}"


def step_table(title, libraries, rounds, threads, variables):
    runs = {library: [] for library in libraries}
    for _ in range(rounds):
        for library in libraries:
            runs[library].append(run_child(library, variables, threads=threads))
    rows = []
    for name, _, _ in CASES:
        ours, ours_spread = median_and_spread(runs["tinynet"], name)
        row = [name, ours, ours_spread]
        if "torch" in runs:
            ref, ref_spread = median_and_spread(runs["torch"], name)
            row += [ref, ref_spread, ours / ref]
        rows.append(row)
    headers = ["model", "tinynet ms", "spread"]
    if "torch" in runs:
        headers += ["PyTorch ms", "spread", "ratio"]
    print_table(title, headers, rows)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="processes per library")
    parser.add_argument("--kernels", help="the kernel-ladder rung tinynet runs on")
    parser.add_argument("--child", choices=("tinynet", "torch"), help=argparse.SUPPRESS)
    parser.add_argument("--repeat", type=int, default=5, help=argparse.SUPPRESS)
    parser.add_argument("--threads", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args.child, args.repeat, args.threads)

    try:
        import torch  # noqa: F401
        libraries = ("tinynet", "torch")
    except ImportError:
        libraries = ("tinynet",)
    variables = {"TINYNET_KERNELS": args.kernels} if args.kernels else {}
    step_table(f"training step (forward + backward + Adam), no thread settings "
               f"({os.cpu_count()} cores), median ms over {args.rounds} processes",
               libraries, args.rounds, None, variables)
    step_table("training step, 1 thread each, median ms", libraries, args.rounds, 1, variables)


if __name__ == "__main__":
    main()
