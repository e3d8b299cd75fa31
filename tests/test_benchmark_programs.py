"""The PyTorch programs of benchmarks/programs/ run unmodified on tinynet and on PyTorch.

Each program of benchmarks/programs.py trains for 2 steps in a process of its own
through ``python -m tinynet.as_torch``, and, where PyTorch is installed, as a plain
``python`` program too. Each run must print its JSON line with a finite loss, and
its loss before the first update must be near ln(classes), the loss of a uniform guess:
a loss averaged over the wrong rows (the ignored targets counted) or over the wrong
axis falls outside [0.92, 1.35] x ln(classes). A program whose data folder
(``$TINYNET_DATA`` or ``../shared/data``) is missing is skipped.
"""
import importlib.util
import json
import math
import os
import subprocess
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = REPO_ROOT / "benchmarks"
_spec = importlib.util.spec_from_file_location("benchmark_programs", BENCHMARKS / "programs.py")
benchmark_programs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(benchmark_programs)

DATA = (Path(os.environ["TINYNET_DATA"]) if os.environ.get("TINYNET_DATA")
        else REPO_ROOT.parent / "shared" / "data")
# The data folder each script needs (makemore falls back to a built-in list of names).
NEEDS = {"gpt.py": "tinyshakespeare", "char_gru.py": "tinyshakespeare", "mnist_rnn.py": "mnist"}
HAS_TORCH = importlib.util.find_spec("torch") is not None
ARGUMENTS = ["--steps", "2", "--warmup", "0", "--seed", "0"]


def start(library, script, own):
    return subprocess.Popen(benchmark_programs.command(library, script, own + ARGUMENTS),
                            cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def result(process, what) -> dict:
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, f"{what} failed:\n{err[-3000:]}"
    return json.loads(out.strip().splitlines()[-1])


@pytest.mark.slow
@pytest.mark.parametrize("name, script, own", benchmark_programs.PROGRAMS,
                         ids=[name for name, _, _ in benchmark_programs.PROGRAMS])
def test_program_runs_on_tinynet_and_pytorch(name, script, own):
    if script in NEEDS and not (DATA / NEEDS[script]).is_dir():
        pytest.skip(f"no {DATA / NEEDS[script]} (set TINYNET_DATA)")
    processes = {"tinynet": start("tinynet", script, own)}
    if HAS_TORCH:
        processes["torch"] = start("torch", script, own)
    for library, process in processes.items():
        out = result(process, f"{name} on {library}")
        assert math.isfinite(out["loss"]), (library, out)
        assert math.isfinite(out["ms_per_step"]) and out["ms_per_step"] > 0, (library, out)
        low, high = 0.92 * out["ln_classes"], 1.35 * out["ln_classes"]
        assert low <= out["first_loss"] <= high, (library, out)
