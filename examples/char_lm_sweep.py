"""Grids of character-LM trainings (examples/char_lm.py), run in parallel and resumably.

    python examples/char_lm_sweep.py --preset placement            # pre/post × warm-up × depth
    python examples/char_lm_sweep.py --preset norm --seeds 3       # layer / rms / none
    python examples/char_lm_sweep.py --preset tiny --workers 2 --out runs/tiny   # seconds
    mpiexec -n N python -m mpi4py.futures examples/char_lm_sweep.py --executor mpi ...

Each run is one training of examples/char_lm.py in a worker process (one
thread each), on the settings of its ``char_lm.py`` preset with the grid's
changes over them. The grids (``--preset``), each for seeds 0 .. ``--seeds``-1:

* ``placement``: the GPT with pre- or post-norm LayerNorm, 0 or 100 warm-up
  iterations, 6 or 12 layers;
* ``norm``: LayerNorm, RMSNorm or no normalization, pre-norm;
* ``time-axis``: LayerNorm's statistics over the features, or over time (the
  mistake that reads the future);
* ``lstm``: LSTM, LN-LSTM and GPT of matched parameter counts;
* ``tiny``: three tiny runs (seconds each) that check the machinery.

The real grids train ``char_lm.py --preset cpu`` (2,000 iterations a run).
A run's result is its configuration, its curve (``[iteration, train loss, val
loss, lr]`` at each evaluation), its final and best losses, its median
iteration time and its parameter count. The machinery is examples/sweep.py:
each finished run is appended to ``OUT/results.jsonl`` by the parent alone, a
re-run skips the runs already there (an interrupted sweep loses only the runs
in flight), and a run depends on its configuration alone, so its losses are
the same, bit for bit, whichever worker ran it and whatever ran before. At the
end it prints a table (mean over seeds) and writes it to ``OUT/summary.csv``.
"""
from __future__ import annotations

import argparse
import itertools
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import sweep  # noqa: E402  (examples/)


def product(**axes) -> list[dict]:
    """Every combination of the values of ``axes``: product(a=[1, 2]) == [{a: 1}, {a: 2}]."""
    return [dict(zip(axes, values, strict=True)) for values in itertools.product(*axes.values())]


# Each grid: the char_lm.py preset its runs start from, the changes over it shared by
# every run, and the list of runs (each the changes of its own).
PRESETS = {
    "placement": dict(preset="cpu", runs=product(placement=["pre", "post"],
                                                 warmup_iters=[0, 100], n_layer=[6, 12])),
    "norm": dict(preset="cpu", runs=product(norm=["layer", "rms", "none"], placement=["pre"])),
    "time-axis": dict(preset="cpu", runs=product(norm_axis=["features", "time"])),
    "lstm": dict(preset="cpu", runs=product(model=["lstm", "ln-lstm", "gpt"])),
    "tiny": dict(preset="tiny", common=dict(max_iters=12, lr_decay_iters=12, eval_interval=4,
                                                  eval_iters=2),
                 runs=[{}, dict(norm="rms", placement="post"), dict(model="ln-lstm")]),
}
# What identifies a run: every setting a grid or a flag of this script changes.
KEY_FIELDS = ("preset", "model", "norm", "placement", "norm_axis", "n_layer", "warmup_iters",
              "max_iters", "lr_decay_iters", "eval_interval", "eval_iters", "seed", "data",
              "device")
MPI_USAGE = sweep.mpi_usage("examples/char_lm_sweep.py")
SUMMARY_FIELDS = ("model", "norm", "placement", "norm_axis", "n_layer", "warmup_iters")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog=MPI_USAGE,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--preset", choices=list(PRESETS), default="tiny", help="the grid")
    parser.add_argument("--seeds", type=int, default=2, help="seeds 0 .. SEEDS-1 (default 2)")
    parser.add_argument("--max-iters", type=int, help="iterations of every run (the cosine "
                        "decay ends there too; default: the char_lm.py preset's)")
    parser.add_argument("--data", help="Tiny Shakespeare: as char_lm.py --data")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                        help="where every run trains (cuda: the local workers share one GPU)")
    sweep.add_executor_arguments(parser, None, out_help="runs/char_lm_sweep/PRESET")
    return parser


def _argv(config: dict) -> list[str]:
    """``config`` as the command line of char_lm.py."""
    argv = ["--no-progress", "--sample", "0"]
    for name, value in config.items():
        if name not in ("data", "data_dir", "out"):
            argv += ["--" + name.replace("_", "-"), str(value)]
    if config.get("data_dir"):
        argv += ["--data", config["data_dir"]]
    return argv


def plan(args, data: str) -> list[dict]:
    """The configurations of ``args.preset`` for ``args.seeds`` seeds, every value
    of ``KEY_FIELDS`` filled in (from the char_lm.py preset where the grid is silent);
    ``data`` names the corpus."""
    import char_lm
    grid = PRESETS[args.preset]
    parser = char_lm.build_parser()
    configs = []
    for changes, seed in itertools.product(grid["runs"], range(args.seeds)):
        wanted = dict(preset=grid["preset"], **grid.get("common", {}), **changes, seed=seed)
        if args.max_iters is not None:
            wanted.update(max_iters=args.max_iters, lr_decay_iters=args.max_iters)
        s = vars(char_lm.settings(parser.parse_args(_argv(dict(wanted, device=args.device)))))
        configs.append(dict({k: s[k] for k in KEY_FIELDS if k != "data"}, data=data,
                            data_dir=args.data, out=args.out))
    return configs


def run_one(config: dict) -> dict:
    """Train one configuration with char_lm.py (in a worker process); its result."""
    import char_lm

    import tinynet
    from tinynet.data import load_tinyshakespeare
    s = char_lm.settings(char_lm.build_parser().parse_args(_argv(config)))
    corpus = load_tinyshakespeare(s.data, notice=False)
    run = char_lm.Run(s, corpus)
    started = time.perf_counter()
    char_lm.train(run, corpus, s, None)
    _, train_loss, val_loss, _ = run.curve[-1]
    # The final weights, for what the curves cannot tell (how the model generates).
    checkpoint = os.path.join("checkpoints", "-".join(str(v) for v in key(config)) + ".npz")
    tinynet.save({"model": run.model.state_dict(), "config": run.config},
                 os.path.join(config["out"], checkpoint))
    return dict({k: v for k, v in config.items() if k not in ("data_dir", "out")},
                params=run.model.get_num_params(), curve=run.curve, checkpoint=checkpoint,
                final_train_loss=train_loss, final_val_loss=val_loss, best_val_loss=run.best_val,
                median_iteration_ms=1000 * statistics.median(run.iteration_seconds),
                train_seconds=time.perf_counter() - started, description=run.description)


def key(record: dict) -> tuple:
    return tuple(record[k] for k in KEY_FIELDS)


def describe(r: dict) -> str:
    axis = ", statistics over time" if r["norm_axis"] == "time" else ""
    model = (f"GPT {r['norm']} {r['placement']}-norm{axis}, {r['n_layer']} layers"
             if r["model"] == "gpt" else f"{r['model']} the size of a {r['n_layer']}-layer GPT")
    return (f"{model}, warm-up {r['warmup_iters']}, seed {r['seed']}: "
            f"val loss {r['final_val_loss']:.4f}, {r['median_iteration_ms']:.1f} ms/iteration")


def _summary_fields(r: dict) -> tuple:
    """``SUMMARY_FIELDS`` of a result; an LSTM's norm is its model's, the GPT's
    placement and axis do not apply to it ("-")."""
    if r["model"] != "gpt":
        r = dict(r, norm="layer" if r["model"] == "ln-lstm" else "none", placement="-",
                 norm_axis="-")
    return tuple(r[k] for k in SUMMARY_FIELDS)


def summarize(results: list[dict]) -> list[dict]:
    """One row per configuration (all but the seed): means over its seeds."""
    groups: dict = {}
    for r in results:
        groups.setdefault(_summary_fields(r), []).append(r)

    def mean(runs, field):
        return sum(r[field] for r in runs) / len(runs)

    rows = []
    for fields, runs in groups.items():
        vals = [r["final_val_loss"] for r in runs]
        rows.append(dict(zip(SUMMARY_FIELDS, fields, strict=True), seeds=len(runs),
                         params=runs[0]["params"], train_loss=mean(runs, "final_train_loss"),
                         val_loss=mean(runs, "final_val_loss"), val_spread=max(vals) - min(vals),
                         best_val_loss=mean(runs, "best_val_loss"),
                         median_iteration_ms=mean(runs, "median_iteration_ms")))
    return rows


def print_table(rows: list[dict]) -> None:
    print("\n| model | norm | placement | axis | layers | warm-up | seeds | params | "
          "train loss | val loss | spread | best val | ms/iter |")
    print("|---" * 13 + "|")
    for r in rows:
        print(f"| {r['model']} | {r['norm']} | {r['placement']} | {r['norm_axis']} | "
              f"{r['n_layer']} | {r['warmup_iters']} | {r['seeds']} | {r['params']:,} | "
              f"{r['train_loss']:.4f} | {r['val_loss']:.4f} | {r['val_spread']:.4f} | "
              f"{r['best_val_loss']:.4f} | {r['median_iteration_ms']:.1f} |")


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.seeds < 1:
        parser.error(f"--seeds {args.seeds}: at least one seed")
    if args.max_iters is not None and args.max_iters < 1:
        parser.error(f"--max-iters {args.max_iters}: at least one iteration")
    import mnist_mlp
    mnist_mlp.check_device(parser, args.device)           # before any worker starts
    args.out = args.out or os.path.join("runs", "char_lm_sweep", args.preset)
    executor, workers = sweep.make_executor(args, MPI_USAGE)    # a wrong launch fails first
    from tinynet.data import load_tinyshakespeare
    try:
        corpus = load_tinyshakespeare(args.data)
    except FileNotFoundError as error:
        parser.error(str(error))
    data = "bundled excerpt" if corpus.is_sample else "Tiny Shakespeare"
    configs = plan(args, data)
    results = sweep.run_plan(configs, key, run_one, args.out, executor, workers, describe,
                             what=f"runs of the {args.preset!r} grid on {data}")
    order = {key(c): i for i, c in enumerate(configs)}
    rows = summarize(sorted(results, key=lambda r: order[key(r)]))
    print_table(rows)
    sweep.write_csv(os.path.join(args.out, "summary.csv"), rows)
    print(f"\nwrote {os.path.join(args.out, 'results.jsonl')}, "
          f"{os.path.join(args.out, 'summary.csv')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
