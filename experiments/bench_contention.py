"""Benchmark: how mlnb's fits degrade when another CPU-bound process shares the cores.

    python experiments/bench_contention.py                    # 200k RCV1-shaped training documents
    python experiments/bench_contention.py --scale 0.25       # 50k documents, quicker
    python experiments/bench_contention.py --baseline /tmp/old  # also an older checkout, same run

Three workloads — an LR fit (one pass of the all-categories engine), an NB fit (multinomial,
103 categories) and the quickstart end to end (``mlnb run configs/quickstart.toml``) — each
timed alone and beside one busy process (a Python busy loop that this script starts and stops),
with numba's default number of threads and with NUMBA_NUM_THREADS=1. Every measurement runs in
a fresh subprocess (so that NUMBA_NUM_THREADS takes effect), after a warm-up fit that loads the
compiled kernels; the conditions alternate in rounds, and each time is the median over rounds.
The load average is printed beside every number: other jobs on the machine make it noisy.

Targets (issue 14): with one busy process the default is never slower than one thread, and its
slowdown against running alone is at most 1.5×. The script prints whether each is met.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
TARGET_SLOWDOWN = 1.5


def worker(kind: str, data: str, fits: int) -> None:
    """In a subprocess: load the data, warm up, time ``fits`` fits; print their seconds as JSON."""
    import scipy.sparse as sp

    X = sp.load_npz(f"{data}/X.npz").tocsr()
    Y = sp.load_npz(f"{data}/Y.npz").tocsr()
    if kind == "lr":
        from mlnb.models.logistic import LogisticRegression

        def fit(rows=slice(None)):
            LogisticRegression(npasses=1).fit(X[rows], Y[rows])
    else:
        from mlnb.models.naive_bayes import NaiveBayes

        def fit(rows=slice(None)):
            NaiveBayes(event_model="multinomial").fit(X[rows], Y[rows])
    fit(slice(0, 2000))  # compile or load the kernels, start numba's threads
    seconds = []
    for _ in range(fits):
        started = time.perf_counter()
        fit()
        seconds.append(time.perf_counter() - started)
    print(json.dumps(seconds))


def measure(kind: str, data: str, threads: int | None, baseline: str | None, out: str) -> float:
    """Seconds of one run of ``kind`` in a subprocess with the given NUMBA_NUM_THREADS (None = default)."""
    env = dict(os.environ)
    env.pop("NUMBA_NUM_THREADS", None)
    if threads is not None:
        env["NUMBA_NUM_THREADS"] = str(threads)
    root = Path(baseline) if baseline else ROOT
    env["PYTHONPATH"] = str(root) + os.pathsep + env.get("PYTHONPATH", "")
    if kind == "quickstart":
        target = Path(out) / f"run-{time.monotonic_ns()}"
        command = [sys.executable, "-m", "mlnb.cli", "run", str(root / "configs" / "quickstart.toml"),
                   "--out", str(target), "--quiet"]
        started = time.perf_counter()
        done = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True, check=False)
        seconds = time.perf_counter() - started
        shutil.rmtree(target, ignore_errors=True)
        if done.returncode != 0:
            raise SystemExit(f"quickstart failed ({done.returncode}): {done.stderr.strip()[-500:]}")
        return seconds
    command = [sys.executable, str(Path(__file__).resolve()), "--worker", kind, "--data", data, "--fits", "1"]
    done = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{kind} worker failed: {done.stderr.strip()[-1000:]}")
    return float(json.loads(done.stdout.strip().splitlines()[-1])[0])


class BusyProcess:
    """One CPU-bound Python busy loop, for the duration of a ``with``."""

    def __enter__(self):
        self.process = subprocess.Popen([sys.executable, "-c", "while True: pass"])
        time.sleep(0.3)
        return self

    def __exit__(self, *exc):
        self.process.kill()
        self.process.wait()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale", type=float, default=1.0, help="fraction of the 200k training documents")
    parser.add_argument("--features", type=int, default=47_236)
    parser.add_argument("--rounds", type=int, default=3, help="measurements per condition (median; >= 3)")
    parser.add_argument("--workloads", nargs="+", default=["lr", "nb", "quickstart"],
                        choices=["lr", "nb", "quickstart"])
    parser.add_argument("--baseline", help="another checkout (e.g. a git worktree of an older commit) to "
                                           "time the same way in the same run")
    parser.add_argument("--worker", choices=["lr", "nb"], help=argparse.SUPPRESS)
    parser.add_argument("--data", help=argparse.SUPPRESS)
    parser.add_argument("--fits", type=int, default=1, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(args.worker, args.data, args.fits)

    import numba
    import scipy.sparse as sp

    from mlnb.data.synthetic import make_rcv1_like

    n_train = max(1000, int(200_000 * args.scale))
    print(f"machine: {os.cpu_count()} cores, numba {numba.__version__} (default threads "
          f"{numba.config.NUMBA_NUM_THREADS}, layer {numba.config.THREADING_LAYER}), load {load()}")
    work = tempfile.mkdtemp(prefix="mlnb-contention-")
    try:
        if {"lr", "nb"} & set(args.workloads):
            data = make_rcv1_like(n_documents=int(n_train / 0.8), n_features=args.features, n_categories=103,
                                  test_fraction=0.2, seed=0)
            sp.save_npz(f"{work}/X.npz", data.X_train, compressed=False)
            sp.save_npz(f"{work}/Y.npz", data.Y_train, compressed=False)
            print(f"data: {data.X_train.shape[0]:,} training documents, {args.features:,} features, 103 categories, "
                  f"{data.X_train.nnz:,} non-zeros")
            del data
        versions = [("new", None)] + ([("baseline", args.baseline)] if args.baseline else [])
        conditions = [(busy, threads) for busy in (False, True) for threads in (None, 1)]
        times = {}  # (version, workload, busy, threads) -> [(seconds, load)]
        for workload in args.workloads:  # numba compiles (or loads) each version's kernels once first
            for _, root in versions:
                measure(workload, work, None, root, work)
        for round_ in range(1, max(3, args.rounds) + 1):
            for workload in args.workloads:
                for version, root in versions:
                    for busy, threads in conditions:
                        if busy:
                            with BusyProcess():
                                seconds = measure(workload, work, threads, root, work)
                        else:
                            seconds = measure(workload, work, threads, root, work)
                        times.setdefault((version, workload, busy, threads), []).append((seconds, load()))
            print(f"round {round_} done, load {load()}", flush=True)
        report(times, versions, args.workloads)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def load() -> str:
    return f"{os.getloadavg()[0]:.2f}"


def report(times, versions, workloads) -> None:
    def median(key):
        return float(np.median([seconds for seconds, _ in times[key]]))

    def loads(key):
        return "/".join(f"{float(value):.1f}" for _, value in times[key])

    print("\nmedian seconds (load averages at each measurement; the busy process adds 1)")
    print(f"{'version':9s} {'workload':10s} {'condition':22s} {'seconds':>8s}  {'× alone':>7s}  loads")
    verdicts = []
    for version, _ in versions:
        for workload in workloads:
            for busy in (False, True):
                for threads in (None, 1):
                    key = (version, workload, busy, threads)
                    alone = median((version, workload, False, threads))
                    label = f"{'busy' if busy else 'alone'}, {'default' if threads is None else '1'} thread" \
                            + ("s" if threads is None else "")
                    print(f"{version:9s} {workload:10s} {label:22s} {median(key):8.2f}  {median(key) / alone:7.2f}  "
                          f"{loads(key)}")
            default_busy = median((version, workload, True, None))
            one_busy = median((version, workload, True, 1))
            slowdown = default_busy / median((version, workload, False, None))
            verdicts.append(f"{version} {workload}: busy default {default_busy:.2f} s vs busy one thread "
                            f"{one_busy:.2f} s -> default {'not slower: MET' if default_busy <= one_busy else 'SLOWER: NOT met'}"
                            f"; slowdown against alone {slowdown:.2f}× -> "
                            f"{'MET' if slowdown <= TARGET_SLOWDOWN else 'NOT met'} (target ≤ {TARGET_SLOWDOWN}×)")
    print("\ntargets:")
    for line in verdicts:
        print("  " + line)


if __name__ == "__main__":
    main()
