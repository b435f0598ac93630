"""DeLong tests and intervals per category: the compiled kernel (mlnb.metrics._delong) against the
code before it, in the same run.

    git worktree add /tmp/stats_old <commit before the kernel>
    python experiments/bench_delong.py --old /tmp/stats_old [--sizes 20000 1000000] [--quickstart]

Each case runs the old code in a subprocess (PYTHONPATH = the old tree) and the new one here,
alternating, and keeps the minimum of ``--repeats`` runs of each (after one warm-up that loads the
compiled kernels). The scores: a fitted NB and LR on ``make_rcv1_like`` at 20k test documents
(the quickstart's shape) and, for larger n, random scores with RCV1-like prevalences rounded to
3 decimals (ties). It checks that old and new agree to 1e-12 and prints the load and the ratios.
``--quickstart`` also times ``mlnb run configs/quickstart.toml`` end to end, old and new alternating.
``--bootstrap [N ...]`` instead times the bootstrap's sort plan and ``bootstrap_intervals`` (no --old:
the old side is the numpy stable-argsort path, the code before the radix kernels).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

ROOT = Path(__file__).resolve().parents[1]

WORKER = r"""
import json, sys, time
import numpy as np, scipy.sparse as sp
from mlnb.metrics.significance import delong_tests
from mlnb.metrics.uncertainty import auc_confidence_intervals
data = np.load(sys.argv[1])
Y, a, b = sp.csr_matrix(data["Y"]), data["a"], data["b"]
times = {"tests": [], "intervals": []}
for repeat in range(int(sys.argv[2]) + 1):  # the first run loads (or compiles) the kernels
    started = time.perf_counter()
    table = delong_tests(Y, a, b)
    times["tests"].append(time.perf_counter() - started)
    started = time.perf_counter()
    intervals = auc_confidence_intervals(Y, a)
    times["intervals"].append(time.perf_counter() - started)
np.savez(sys.argv[3], table=table.to_numpy(), intervals=intervals)
print(json.dumps({k: min(v[1:]) for k, v in times.items()}))
"""


def _scores(n: int, K: int, seed: int = 0):
    """(Y, a, b): fitted models' log-odds at the quickstart size, random tied scores otherwise."""
    if n <= 50_000:
        from mlnb.data.synthetic import make_rcv1_like
        from mlnb.models.logistic import LogisticRegression
        from mlnb.models.naive_bayes import NaiveBayes

        data = make_rcv1_like(n_documents=2 * n, n_categories=K, seed=seed)  # half of them test documents
        X_train, Y_train, X_test, Y_test = data.X_train, data.Y_train, data.X_test, data.Y_test
        a = NaiveBayes().fit(X_train, Y_train).decision_function(X_test)
        b = LogisticRegression(npasses=2).fit(X_train, Y_train).decision_function(X_test)
        return sp_dense(Y_test), np.asarray(a), np.asarray(b)
    rng = np.random.default_rng(seed)
    prevalence = np.clip(0.3 / np.arange(1, K + 1), 0.0005, 0.5)
    Y = rng.random((n, K)) < prevalence
    a = np.round(rng.normal(size=(n, K)) + 1.5 * Y, 3).astype(np.float32)
    b = np.round(0.6 * a + rng.normal(size=(n, K)) + Y, 3).astype(np.float32)
    return Y, a, b


def sp_dense(Y):
    return np.asarray(Y.toarray() != 0)


def _run(python_path: Path, data: Path, repeats: int, out: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(python_path)}
    done = subprocess.run([sys.executable, "-c", WORKER, str(data), str(repeats), str(out)], env=env, cwd=python_path,
                          capture_output=True, text=True, check=False)  # cwd: "-c" puts it first on sys.path
    if done.returncode:
        sys.exit(done.stderr)
    return json.loads(done.stdout.strip().splitlines()[-1])


def bench_case(old: Path, n: int, K: int, repeats: int, rounds: int) -> None:
    Y, a, b = _scores(n, K)
    with tempfile.TemporaryDirectory(prefix="bench-delong-") as folder:
        data = Path(folder) / "data.npz"
        np.savez(data, Y=Y, a=a, b=b)
        best = {"old": {}, "new": {}}
        for _ in range(rounds):  # alternate, keep each side's minimum
            for side, tree in (("old", old), ("new", ROOT)):
                times = _run(tree, data, repeats, Path(folder) / f"{side}.npz")
                for key, value in times.items():
                    best[side][key] = min(best[side].get(key, np.inf), value)
        old_out, new_out = np.load(Path(folder) / "old.npz"), np.load(Path(folder) / "new.npz")
        gap = max(np.nanmax(np.abs(old_out[k] - new_out[k])) for k in ("table", "intervals"))
        same_nan = all(np.array_equal(np.isnan(old_out[k]), np.isnan(new_out[k])) for k in ("table", "intervals"))
    print(f"n = {n:,} × K = {K}, {a.dtype}: load {os.getloadavg()[0]:.2f}; largest |old − new| {gap:.1e}, "
          f"NaNs {'identical' if same_nan else 'DIFFER'}")
    for key in ("tests", "intervals"):
        o, w = best["old"][key], best["new"][key]
        print(f"  {key:9s}  old {o:8.3f} s   new {w:8.3f} s   ratio {o / w:6.1f}×")


def bench_quickstart(old: Path, rounds: int) -> None:
    times = {"old": [], "new": []}
    for _ in range(rounds):
        for side, tree in (("old", old), ("new", ROOT)):
            with tempfile.TemporaryDirectory(prefix="bench-qs-") as out:
                env = {**os.environ, "PYTHONPATH": str(tree)}
                started = time.perf_counter()
                subprocess.run([sys.executable, "-m", "mlnb_entry", "run", str(ROOT / "configs/quickstart.toml"),
                                "--out", out], env=env, cwd=tree, check=True, capture_output=True)
                times[side].append(time.perf_counter() - started)
    o, w = min(times["old"]), min(times["new"])
    print(f"quickstart end to end (min of {rounds}, alternating): load {os.getloadavg()[0]:.2f}; "
          f"old {o:.2f} s   new {w:.2f} s   ratio {o / w:.2f}×")


def bench_bootstrap_plan(sizes, K: int, repeats: int = 5) -> None:
    """The bootstrap's sort plan (_AucPlan) and whole bootstrap_intervals, old (the numpy stable argsorts,
    kept as the fallback without numba) against the radix-sort kernels, alternating in this process."""
    from mlnb.metrics import uncertainty

    compiled = uncertainty._sorted_compiled
    for n in sizes:
        rng = np.random.default_rng(0)
        Y = rng.random((n, K)) < np.clip(0.3 / np.arange(1, K + 1), 0.0005, 0.5)
        scores = rng.normal(size=(n, K)) + 1.5 * Y
        Yc = sp.csc_matrix(Y, dtype=np.float64)
        pooled = np.ones(K, dtype=bool)
        uncertainty._AucPlan(Yc, scores, pooled, True)  # loads the kernels
        best = {}
        for _ in range(repeats if n <= 50_000 else 2):
            for side in ("old", "new"):
                uncertainty._sorted_compiled = uncertainty._sorted_numpy if side == "old" else compiled
                started = time.perf_counter()
                uncertainty._AucPlan(Yc, scores, pooled, True)
                best[side, "plan"] = min(best.get((side, "plan"), np.inf), time.perf_counter() - started)
                started = time.perf_counter()
                uncertainty.bootstrap_intervals(Y, scores, n_boot=200)
                best[side, "intervals"] = min(best.get((side, "intervals"), np.inf), time.perf_counter() - started)
        uncertainty._sorted_compiled = compiled
        print(f"bootstrap, n = {n:,} × K = {K}: load {os.getloadavg()}")
        for key in ("plan", "intervals"):
            o, w = best["old", key], best["new", key]
            print(f"  {key:9s}  old {o:8.3f} s   new {w:8.3f} s   ratio {o / w:6.1f}×")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--old", type=Path, help="a git worktree of the code before the kernel")
    parser.add_argument("--sizes", type=int, nargs="+", default=[20_000, 1_000_000])
    parser.add_argument("--categories", type=int, default=103)
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per process")
    parser.add_argument("--rounds", type=int, default=2, help="old/new processes, alternating")
    parser.add_argument("--quickstart", action="store_true")
    parser.add_argument("--bootstrap", type=int, nargs="*", metavar="N",
                        help="only time the bootstrap's sort plan at these sizes (default 20000 200000)")
    args = parser.parse_args()
    if args.bootstrap is not None:
        bench_bootstrap_plan(args.bootstrap or [20_000, 200_000], args.categories)
        return
    if args.old is None:
        parser.error("--old is required (except with --bootstrap)")
    print(f"numba threads: {os.environ.get('NUMBA_NUM_THREADS', os.cpu_count())}, cores: {os.cpu_count()}")
    for n in args.sizes:
        bench_case(args.old, n, args.categories, args.repeats if n <= 50_000 else 1, args.rounds)
    if args.quickstart:
        bench_quickstart(args.old, 3)


if __name__ == "__main__":
    main()
