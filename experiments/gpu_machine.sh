#!/usr/bin/env bash
# The prepared run for a lent 16-core machine with a GPU (issues 26 and 30), in one call of < 10 minutes:
#
#   OUT=folder bash experiments/gpu_machine.sh                    # on the machine, in the repository's root
#   OUT=folder PARTS="tests gpu study16" bash experiments/gpu_machine.sh    # some parts only
#
# tests    the array engine's tests on CuPy (tests/engine/test_array_engine.py, its GPU cases)
# gpu      experiments/bench_gpu.py: NB fit, scoring, LR pass (and its parts), AUC, ROC/lift and the whole
#          RCV1-scale quickstart on the GPU beside the CPU engine on every core and the naive GPU reference
# threads  experiments/bench_threads.py --quick: every stage at 1, 2, 4, 8, 16 threads and the whole study
#          at 2 and 16 threads
# study16  the whole RCV1-scale quickstart once, on every core, with its --profile table
# regions  experiments/bench_lr_floor.py at 1, 4 and 16 threads: each parallel region of the LR pass
# serial   experiments/bench_serial.py: each stage's one-thread seconds outside its parallel regions there
# profile  experiments/bench_serial.py --study at 2 and 16 threads: the whole study's seconds with at most one
#          thread wanting a core, per stage and function (its parallelism profile), and Amdahl's bound
# stream   the same profile, at 2 and 16 threads, of bench_scale.py's streamed study of 1M documents
#          (shards generated first, ~1 minute)
# Each part has its own time limit, so that one that hangs leaves the others their time; everything
# printed goes to $OUT/log.txt as well, with the JSON and CSV results beside it.
set -u
OUT=${OUT:-results/bench}
PARTS=${PARTS:-tests gpu threads}
mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
exec > >(tee "$OUT/log.txt") 2>&1
has() { [[ " $PARTS " == *" $1 "* ]]; }

echo "== the machine ($(date -u +%FT%TZ)): parts $PARTS"
nproc
free -g | head -2
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.mem --format=csv
python3 -V
python3 -m pip list 2>/dev/null | grep -iE '^(numpy|scipy|numba|llvmlite|cupy-cuda[0-9x]+|pandas|scikit-learn|typer|rich|matplotlib|pytest) '
uptime

if has tests; then
    echo "== the array engine's tests on the GPU"
    # every line to log.txt (a failure's detail included); only the reply's tail is cut
    timeout 150 python3 -m pytest -q -p no:cacheprovider --tb=short tests/engine/test_array_engine.py -k gpu -rfs
fi
if has gpu; then
    echo "== bench_gpu.py"
    timeout 200 python3 experiments/bench_gpu.py --out "$OUT/gpu.json"
fi
if has threads; then
    echo "== bench_threads.py --quick"
    timeout 230 python3 experiments/bench_threads.py --quick
    cp results/bench/threads-*.csv "$OUT/" 2>/dev/null
fi
if has study16; then
    echo "== the whole RCV1-scale quickstart on every core (--profile)"
    # first a small study, untimed, so that numba's compilation of every stage stays out of the profile
    python3 -m mlnb_entry run configs/quickstart.toml --quiet --out /tmp/warm --set data.synthetic.n_documents=20000 \
        > /dev/null 2>&1
    timeout 120 python3 -m mlnb_entry run configs/quickstart.toml --quiet --profile --out /tmp/study16 \
        --set data.synthetic.n_documents=781265 --set data.synthetic.n_features=47236 --set data.test_fraction=0.2 \
        2>&1 | tail -25
fi
if has serial; then
    echo "== bench_serial.py (one thread: the seconds outside the parallel regions, Amdahl's bound)"
    timeout 150 python3 experiments/bench_serial.py --repeats 3
fi
if has profile; then
    python3 -m mlnb_entry run configs/quickstart.toml --quiet --out /tmp/warm --set data.synthetic.n_documents=20000 \
        > /dev/null 2>&1  # numba's compilation out of the profile
    for t in 2 16; do
        echo "== bench_serial.py --study, $t threads (the study's parallelism profile)"
        timeout 120 python3 experiments/bench_serial.py --study --study-threads $t --places 25
    done
fi
if has stream; then
    echo "== the streamed study of 1M documents (bench_scale.py), then its parallelism profile"
    timeout 200 python3 experiments/bench_scale.py --documents 1000000 --engines local --folder /tmp/scale
    python3 -c "import sys; sys.path.insert(0, 'experiments'); import bench_scale; open('/tmp/scale1m.toml', 'w').write(
        bench_scale.CONFIG.format(path='/tmp/scale/1000000', engine='local', workers=2))"
    for t in 2 16; do
        echo "== bench_serial.py --study --study-config (streamed, 1M documents), $t threads"
        timeout 120 python3 experiments/bench_serial.py --study --study-config /tmp/scale1m.toml --study-threads $t \
            --places 25
    done
fi
if has regions; then
    for t in 1 4 16; do
        echo "== bench_lr_floor.py, $t threads"
        NUMBA_NUM_THREADS=$t timeout 100 python3 experiments/bench_lr_floor.py --fits 2 2>&1 | tail -16
    done
fi
echo "== done ($(date -u +%FT%TZ))"
