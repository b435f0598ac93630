#!/usr/bin/env bash
# The prepared run for a lent 16-core machine with a GPU (issues 26 and 30), in one call of < 10 minutes:
#
#   OUT=folder bash experiments/gpu_machine.sh          # on the machine, in the repository's root
#
# 1. the array engine's tests on CuPy (tests/engine/test_array_engine.py, its "gpu" cases),
# 2. experiments/bench_gpu.py: NB fit, scoring, LR pass, AUC, ROC/lift and the whole RCV1-scale
#    quickstart on the GPU beside the CPU engine on every core and the naive GPU reference,
# 3. experiments/bench_threads.py --quick: every stage at 1, 2, 4, 8, 16 threads and the whole study
#    at 2 and 16 threads.
# Each part has its own time limit, so that one that hangs leaves the others their time; everything
# printed goes to $OUT/log.txt as well, with the JSON and CSV results beside it.
set -u
OUT=${OUT:-results/bench}
mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
exec > >(tee "$OUT/log.txt") 2>&1

echo "== the machine ($(date -u +%FT%TZ))"
nproc
free -g | head -2
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.mem --format=csv
python3 -V
python3 -m pip list 2>/dev/null | grep -iE '^(numpy|scipy|numba|llvmlite|cupy-cuda[0-9x]+|pandas|scikit-learn|typer|rich|matplotlib|pytest) '
uptime

echo "== 1. the array engine's tests on the GPU"
timeout 150 python3 -m pytest -q -p no:cacheprovider tests/engine/test_array_engine.py -k "gpu or fused" -rfs \
    2>&1 | tail -40

echo "== 2. bench_gpu.py"
timeout 200 python3 experiments/bench_gpu.py --out "$OUT/gpu.json"

echo "== 3. bench_threads.py --quick"
timeout 230 python3 experiments/bench_threads.py --quick
cp results/bench/threads-*.csv "$OUT/" 2>/dev/null
echo "== done ($(date -u +%FT%TZ))"
