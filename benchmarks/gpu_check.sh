#!/usr/bin/env bash
# The GPU checks in one go (under 10 minutes): the CUDA kernel tests on the GPU
# (simulator off), then the kernel ladder's GPU table, the GPU benchmark, a
# profile of the host side of a small call, the five training scripts' median
# step times on the GPU and on the CPU, a PyTorch program run through
# tinynet.as_torch on both, and a profile of GPU training; a short
# summary table comes last, one line per part and per measurement. A part that
# fails is marked there, and the parts after it still run.
#
# Time, estimated for an H200 machine: the parts before the training runs take
# at most their limits, 90 + 150 + 120 + 150 + 60 s, and usually less; the
# seventeen training runs take 10-30 s each (start-up, data, compiling the kernels,
# then a few seconds of steps): 7-10 minutes in all. Every part after the tests gets at
# most what is left of 9.5 minutes from the start, and is skipped when that is
# spent, so that the whole stays under 10 minutes.
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
deadline=$((SECONDS + 570))              # 9.5 minutes from now
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
if ! "$PYTHON" -c 'import tinynet.kernels.ladder.cuda_3_held'; then
    echo "gpu_check: tinynet.kernels.ladder.cuda_3_held does not import (see above); nothing checked" >&2
    exit 1
fi

# The CPU kernels (one end-to-end test compares the GPU with them) are
# compiled when first imported, about 30 s without Numba's cache: done here,
# so that the tests' time limit is spent on the GPU. Should this fail, the
# test that needs them will say why.
start=$SECONDS
cpu_kernels='import tinynet.kernels.ladder.cpu_2_vectorized, tinynet.kernels.ladder.cpu_3_pipelined'
if timeout 90 "$PYTHON" -c "$cpu_kernels"; then
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

summary=("| CUDA kernel tests | ${tests:-did not finish} |")

# part NAME SECONDS COMMAND...: run COMMAND for at most SECONDS (fewer when the
# deadline is near), its output shown and kept in $work/NAME.log. A failure is
# recorded in the summary and the exit status; the next parts run all the same.
part() {
    local name=$1 seconds=$2 rc=0
    shift 2
    local left=$((deadline - SECONDS))
    if (( left < seconds )); then seconds=$left; fi
    if (( seconds < 10 )); then
        summary+=("| $name | skipped: no time left |")
        status=1
        return
    fi
    printf '\ngpu_check: %s\n' "$name"
    timeout -k 10 "$seconds" "$@" 2>&1 | tee "$work/$name.log" || rc=$?
    if (( rc == 124 )); then
        summary+=("| $name | timed out after $seconds s |")
    elif (( rc != 0 )); then
        summary+=("| $name | failed (exit status $rc) |")
    fi
    if (( rc != 0 )); then status=$rc; fi
}

part kernel-ladder 150 "$PYTHON" "$repo/benchmarks/kernel_ladder.py" --gpu-only
part layernorm-benchmark 120 "$PYTHON" "$repo/benchmarks/layernorm.py"
# Where a small call's host time goes (the wall times above exceed the kernel times).
part host-profile 60 "$PYTHON" "$repo/benchmarks/host_profile.py" --device cuda \
    --shape 64 1024 --top 10
if (( sweep )); then
    part launch-sweep 120 "$PYTHON" "$repo/benchmarks/gpu_launch_sweep.py"
fi

# The median step that a training run prints ("median step 1.23 ms", or the GPT's
# "median iteration 1.23 ms"), in ms.
median_ms() {
    { grep -oE 'median (step|iteration) [0-9.]* ms' "$work/$1.log" 2>/dev/null || true; } \
        | tail -n 1 | cut -d' ' -f3
}

# steps NAME SCRIPT ARGS...: the script's median step on cuda, then on cpu, and the ratio.
steps() {
    local name=$1 script=$2 gpu cpu ratio
    shift 2
    part "$name-cuda" 90 "$PYTHON" "$repo/examples/$script" "$@" --device cuda
    part "$name-cpu" 90 "$PYTHON" "$repo/examples/$script" "$@" --device cpu
    gpu=$(median_ms "$name-cuda")
    cpu=$(median_ms "$name-cpu")
    ratio=$(awk -v c="$cpu" -v g="$gpu" \
        'BEGIN { if (c > 0 && g > 0) printf "%.1f", c / g; else print "-" }')
    summary+=("| $name median step | cuda ${gpu:-?} ms, cpu ${cpu:-?} ms, cpu/cuda $ratio |")
}

# Training end to end, briefly: the data goes to the device once, then the steps are
# timed. LN everywhere; 50 steps, but 500 at batch 4.
mlp=(--norm layer --curve-points 1 --no-progress)
steps mnist_mlp-batch128 mnist_mlp.py "${mlp[@]}" --batch-size 128 --examples 6400
steps mnist_mlp-batch4 mnist_mlp.py "${mlp[@]}" --batch-size 4 --examples 2000
steps mnist_cnn-batch128 mnist_cnn.py --norm batch --curve-points 1 --no-progress \
    --batch-size 128 --examples 6400
steps mnist_cnn-batch4 mnist_cnn.py --norm group --curve-points 1 --no-progress \
    --batch-size 4 --examples 2000
steps ln_lstm-batch64 ln_lstm.py --task mnist --norm layer --steps 50 --eval-every 50 \
    --eval-images 1000 --no-progress
# One configuration in one worker process, which computes on one thread (the cpu column).
steps sweep-batch128 batch_size_sweep.py --norms layer --batch-sizes 128 --seeds 0 \
    --examples 6400 --workers 1 --out "$work/sweep"
# nanoGPT's GPT, its CPU recipe (4 layers, 128 channels, context 64, batch 12) for 100
# iterations: one evaluation at the start and one at the end, on 2 batches each.
steps char_lm-gpt char_lm.py --preset cpu --max-iters 100 --eval-interval 100 \
    --eval-iters 2 --sample 0 --no-progress
# The LN-LSTM language model of the GPT's size (0.80 M parameters), the same 100 iterations.
steps char_lm-ln-lstm char_lm.py --model ln-lstm --preset cpu --max-iters 100 \
    --eval-interval 100 --eval-iters 2 --sample 0 --no-progress

# A PyTorch program run unmodified on tinynet (python -m tinynet.as_torch): its
# torch.cuda.is_available() must say True here, and its steps run on the GPU.
torch_program() {
    local device=$1
    part "torch-program-$device" 90 "$PYTHON" -m tinynet.as_torch \
        "$repo/examples/torch_char_gpt.py" --steps 100 --device "$device"
}
torch_program cuda
torch_program cpu
summary+=("| torch program (as_torch) median step | cuda $(median_ms torch-program-cuda) ms, \
cpu $(median_ms torch-program-cpu) ms |")

# Where GPU training spends the host's time, 500 steps at batch 4. The second table
# counts the calls that bring values to the host (item, get, asnumpy, tolist) or wait
# for the device: with the data on the GPU, compare their counts with the 500 steps.
part training-profile 90 "$PYTHON" -m cProfile -o "$work/training.prof" \
    "$repo/examples/mnist_mlp.py" "${mlp[@]}" --batch-size 4 --examples 2000 --device cuda
if [[ -s $work/training.prof ]]; then
    part training-profile-table 30 "$PYTHON" -c 'import pstats, sys
stats = pstats.Stats(sys.argv[1]).sort_stats("tottime")
stats.print_stats(25)
stats.print_stats("asnumpy|tolist|synchronize|.item.|.get.")' "$work/training.prof"
fi

echo
printf '| GPU check | result |\n|-----------|--------|\n'
printf '%s\n' "${summary[@]}"
printf '| exit status | %s |\n' "$status"
exit "$status"
