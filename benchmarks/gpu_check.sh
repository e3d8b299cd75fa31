#!/usr/bin/env bash
# The GPU checks in one go (a few minutes): the CUDA kernel tests on the GPU
# (simulator off), then the kernel ladder's GPU table, the GPU benchmark and a
# profile of the host side of a small call; a short summary table comes last.
#
#   bash benchmarks/gpu_check.sh            # from anywhere; PYTHON=... to choose Python
#   bash benchmarks/gpu_check.sh --sweep    # also benchmarks/gpu_launch_sweep.py
#
# Needs numpy, numba, numba-cuda, CuPy and pytest (torch with CUDA: optional).
# numba-cuda 0.30.4 cannot compile under NumPy 2.5: with those, use numpy<2.5.
# Works with tinynet installed from this checkout or straight from the source
# tree. tinynet.kernels is the top-level kernels/ folder (setup.cfg's
# package_dir), so without an install a temporary folder of symlinks puts
# tinynet/ and kernels/ together on PYTHONPATH; nothing gets installed.
# Python runs outside the checkout, where its tinynet/ (no kernels/) would
# otherwise shadow that folder.
set -euo pipefail
sweep=0
[[ ${1:-} == --sweep ]] && sweep=1
repo=$(cd "$(dirname "$0")/.." && pwd)
PYTHON=${PYTHON:-python3}
if [[ $PYTHON == */* ]]; then                # a path: keep it valid after the cd below
    PYTHON="$(cd "$(dirname "$PYTHON")" && pwd)/$(basename "$PYTHON")"
fi
export NUMBA_ENABLE_CUDASIM=0            # the real GPU, not the simulator
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

from_this_checkout="import os, tinynet.kernels as k
assert os.path.realpath(k.__file__).startswith(os.path.realpath('$repo/kernels'))"
if ! "$PYTHON" -c "$from_this_checkout" 2>/dev/null; then
    mkdir "$work/tinynet"
    for entry in "$repo"/tinynet/*; do ln -s "$entry" "$work/tinynet/$(basename "$entry")"; done
    ln -s "$repo/kernels" "$work/tinynet/kernels"
    export PYTHONPATH="$work${PYTHONPATH:+:$PYTHONPATH}"
    if ! "$PYTHON" -c "$from_this_checkout"; then
        echo "gpu_check: cannot import tinynet from $repo with $PYTHON" >&2
        exit 1
    fi
    echo "gpu_check: using tinynet from the source tree (no install)"
fi
if ! "$PYTHON" -c 'import sys, tinynet; sys.exit(0 if tinynet.cuda_is_available() else 1)'; then
    echo "gpu_check: no GPU here (needs CuPy and a CUDA device); nothing checked" >&2
    exit 1
fi
if ! "$PYTHON" -c 'import tinynet.kernels.cuda'; then
    echo "gpu_check: tinynet.kernels.cuda does not import (see above); nothing checked" >&2
    exit 1
fi

# The CPU kernels (one end-to-end test compares the GPU with them) are
# compiled when first imported, about 30 s without Numba's cache: done here,
# so that the tests' time limit is spent on the GPU. Should this fail, the
# test that needs them will say why.
start=$SECONDS
if timeout 90 "$PYTHON" -c 'import tinynet.kernels.cpu_2_vectorized, tinynet.kernels.cpu_3_pipelined'; then
    echo "gpu_check: CPU kernels compiled or loaded in $((SECONDS - start)) s"
else
    echo "gpu_check: the CPU kernels did not compile within 90 s; going on" >&2
fi

status=0
timeout 150 "$PYTHON" -m pytest -q -p no:cacheprovider --rootdir "$repo" \
    "$repo/tests/test_kernels_cuda.py" "$repo/tests/test_kernel_ladder_cuda.py" \
    "$repo/tests/test_backend.py::test_cuda_round_trip_and_gradients" 2>&1 \
    | tee "$work/tests.log" || status=$?
tests=$(grep -E "passed|failed|error|skipped" "$work/tests.log" | tail -1 || true)

timeout 120 "$PYTHON" "$repo/benchmarks/kernel_ladder.py" --gpu-only || status=$?
timeout 150 "$PYTHON" "$repo/benchmarks/layernorm.py" || status=$?
# Where a small call's host time goes (the wall times above exceed the kernel times).
timeout 60 "$PYTHON" "$repo/benchmarks/host_profile.py" --device cuda --shape 64 1024 --top 10 \
    || status=$?
if (( sweep )); then
    timeout 120 "$PYTHON" "$repo/benchmarks/gpu_launch_sweep.py" || status=$?
fi

printf '\n| GPU check | result |\n|-----------|--------|\n'
printf '| CUDA kernel tests | %s |\n' "${tests:-did not finish}"
printf '| exit status | %s |\n' "$status"
exit "$status"
