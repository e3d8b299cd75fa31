"""PyTorch programs as a learner writes them, timed on tinynet and on PyTorch.

    python benchmarks/programs.py [--rounds 5] [--one-thread] [--quick] [--only WORD ...]
                                  [--json OUT]

The programs are the plain PyTorch scripts of benchmarks/programs/: a makemore-like
character model of names in its six kinds (bigram, MLP, RNN, GRU, bag of words,
Transformer), a small GPT with its attention and GELU written out and a GRU (nn.GRU)
character model of Tiny Shakespeare, and an MNIST classifier running an LSTM over the
28 rows of each image. Each runs unmodified on both libraries: on tinynet through
``python -m tinynet.as_torch SCRIPT``, on PyTorch as ``python SCRIPT``. A run trains
for ``--warmup`` untimed steps, then ``--steps`` timed ones (a step is everything the
loop does: getting the batch, forward, backward, the optimizer's step and zero_grad),
and reports the median milliseconds per step.

Every run is a fresh process, the two libraries alternating (tinynet, PyTorch,
tinynet, PyTorch...) for ``--rounds`` rounds, so that a slow spell of a shared
machine hits both alike. By default no thread setting is made (each library at its
defaults, every core); ``--one-thread`` sets OMP_NUM_THREADS=1 and the like, and
``--threads 1`` in the programs, for both. A row: each library's median over rounds,
ratio = tinynet / PyTorch of those medians (< 1: tinynet is faster), and the spread of
the ratio over the rounds (min-max of tinynet / PyTorch of the same round). A program
that fails on tinynet shows the last line of its error instead. The data is looked for
in ``$TINYNET_DATA`` when set, else in ``../shared/data`` next to the repository.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from common import print_table  # noqa: E402
from train_step import THREAD_VARIABLES  # noqa: E402

FOLDER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "programs")
# (row name, script in benchmarks/programs/, its own arguments)
PROGRAMS = [(f"makemore {kind}", "makemore.py", ["--type", kind])
            for kind in ("bigram", "mlp", "rnn", "gru", "bow", "transformer")]
PROGRAMS += [("GPT, attention written out", "gpt.py", []),
             ("GRU characters (nn.GRU)", "char_gru.py", []),
             ("MNIST rows, nn.LSTM", "mnist_rnn.py", [])]
NAMES = {"tinynet": "tinynet", "torch": "PyTorch"}
ONE_THREAD = {var: "1" for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                                   "MKL_NUM_THREADS", "NUMBA_NUM_THREADS")}


def command(library: str, script: str, arguments: list) -> list:
    path = os.path.join(FOLDER, script)
    if library == "tinynet":
        return [sys.executable, "-m", "tinynet.as_torch", path, *arguments]
    return [sys.executable, path, *arguments]


def run_program(library, script, arguments, variables, timeout) -> dict:
    """One run in a fresh process with a clean environment plus ``variables``: the JSON
    line the program prints, or {"error": the last line of its error output}."""
    env = {k: v for k, v in os.environ.items()
           if k not in THREAD_VARIABLES and not k.startswith("MALLOC_")}
    env.update(variables)
    try:
        result = subprocess.run(command(library, script, arguments), env=env, timeout=timeout,
                                capture_output=True, text=True, check=False)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout} s"}
    if result.returncode != 0:
        lines = [line for line in result.stderr.splitlines() if line.strip()]
        return {"error": lines[-1].strip() if lines else f"exit status {result.returncode}"}
    try:
        return json.loads(result.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        return {"error": f"no JSON line in its output: {result.stdout[-200:]!r}"}


def measure(libraries, args) -> list[dict]:
    """Every program, ``args.rounds`` rounds of each library in turn; one dict a program."""
    arguments = ["--steps", str(args.steps), "--warmup", str(args.warmup),
                 "--seed", str(args.seed)]
    variables = {}
    if args.one_thread:
        arguments += ["--threads", "1"]
        variables = ONE_THREAD
    results = []
    for name, script, own in PROGRAMS:
        if args.only and not any(word.lower() in name.lower() for word in args.only):
            continue
        runs = {library: [] for library in libraries}
        errors = {}
        for _ in range(args.rounds):
            for library in libraries:
                if library in errors:         # a failure repeats; the other library goes on
                    continue
                out = run_program(library, script, own + arguments, variables, args.timeout)
                if "error" in out:
                    errors[library] = out["error"]
                else:
                    runs[library].append(out)
            print(".", end="", file=sys.stderr, flush=True)
        results.append({"program": name, "command": [script, *own, *arguments],
                        "runs": runs, "errors": errors})
    print(file=sys.stderr)
    return results


def summary(result: dict) -> dict:
    """Medians, ratio of the medians and the spread of the pairwise ratios."""
    ms = {lib: [run["ms_per_step"] for run in runs] for lib, runs in result["runs"].items()}
    loss = {lib: statistics.median(run["loss"] for run in runs)
            for lib, runs in result["runs"].items() if runs}
    out = {lib: statistics.median(times) for lib, times in ms.items() if times}
    if "tinynet" in out and "torch" in out:
        pairs = [a / b for a, b in zip(ms["tinynet"], ms["torch"], strict=False)]
        out.update(ratio=out["tinynet"] / out["torch"], ratio_min=min(pairs),
                   ratio_max=max(pairs))
    out["loss"] = loss
    return out


def table_row(result: dict, libraries) -> list:
    s = summary(result)
    row = [result["program"]]
    for library in libraries:
        error = result["errors"].get(library)
        row.append(f"fails: {error}" if error and library not in s else s.get(library, "-"))
    if "torch" in libraries:
        row += [s["ratio"], f"{s['ratio_min']:.2f}-{s['ratio_max']:.2f}"] if "ratio" in s \
            else ["-", "-"]
    row.append(" / ".join(f"{s['loss'][lib]:.3f}" if lib in s["loss"] else "-"
                          for lib in libraries))
    return row


def write_json(path: str, report: dict) -> None:
    """Write ``report`` to ``path`` atomically (a temporary file, then a rename)."""
    folder = os.path.dirname(os.path.abspath(path))
    with tempfile.NamedTemporaryFile("w", dir=folder, suffix=".tmp", delete=False) as f:
        json.dump(report, f, indent=1)
    os.replace(f.name, path)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="processes per library")
    parser.add_argument("--steps", type=int, default=50, help="timed steps per process")
    parser.add_argument("--warmup", type=int, default=5, help="untimed steps first")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--one-thread", action="store_true",
                        help="one thread for both (OMP_NUM_THREADS=1 ..., --threads 1)")
    parser.add_argument("--quick", action="store_true",
                        help="a smoke run: 2 rounds of 5 steps after 1 warm-up step")
    parser.add_argument("--timeout", type=float, default=300, help="seconds per process")
    parser.add_argument("--json", metavar="OUT", help="also write the results as JSON")
    parser.add_argument("--only", nargs="+", metavar="WORD",
                        help="only the programs whose name contains one of these words")
    args = parser.parse_args()
    if args.quick:
        args.rounds, args.steps, args.warmup = 2, 5, 1

    libraries = ["tinynet"]
    if importlib.util.find_spec("torch") is not None:
        libraries.append("torch")
    results = measure(libraries, args)
    threads = "1 thread each" if args.one_thread else \
        f"no thread settings ({os.cpu_count()} cores)"
    headers = ["program", "tinynet ms", *(["PyTorch ms", "ratio", "ratio spread"]
                                          if "torch" in libraries else []),
               "final loss " + " / ".join(NAMES[lib] for lib in libraries)]
    print_table(f"PyTorch programs, ms per training step, {threads}; median over "
                f"{args.rounds} processes of {args.steps} steps each",
                headers, [table_row(r, libraries) for r in results])
    if args.json:
        write_json(args.json, {"settings": vars(args), "libraries": libraries,
                               "programs": [{**r, "summary": summary(r)} for r in results]})
    if any(r["errors"] for r in results):
        print("\nfailures:", file=sys.stderr)
        for r in results:
            for library, error in r["errors"].items():
                print(f"  {r['program']} on {library}: {error}", file=sys.stderr)


if __name__ == "__main__":
    main()
