"""How every stage of a study scales with threads, beside the machine's memory-bandwidth ceiling.

    python experiments/bench_threads.py                    # 200k/50k documents; 1, 2, 4, …, all threads
    python experiments/bench_threads.py --quick            # the prepared 16-core run: < 4 minutes there
    python experiments/bench_threads.py --documents 50000 --no-study   # a quick look at the stages

Data: RCV1-shaped synthetic word counts (``mlnb.data.synthetic.make_rcv1_like``: 47,236 words, 103
categories, ~77 distinct words and ~3.2 labels per document), ``--documents`` training documents
and a quarter as many test documents (200,000 and 50,000 by default, as issue 26 measured).

Stages, each timed in this process at 1, 2, 4, …, all of numba's threads (``numba.set_num_threads``;
the thread counts alternate within each round, so that other work on the machine slows them alike;
the minimum over ``--repeats`` rounds; one untimed run first compiles or loads the kernels):

    NB fit          NaiveBayes(alpha=0.5).fit(X, Y) and its weights (counts -> log-odds)
    scoring         the NB model's decision_function on the test documents, X·W + b
    LR pass         LogisticRegression(npasses=1, batch_size=1000).fit(X, Y): one AdaGrad pass
    roc_auc         the exact AUC of each of the 103 categories (``roc_auc``, 2-D)
    evaluate()      every metric of one model (``evaluate``)
    DeLong tests    the paired test per category of NB against LR (``delong_tests``)
    DeLong intervals the interval of each category's AUC (``auc_confidence_intervals``)
    bootstrap       ``bootstrap_intervals`` with ``--resamples`` resamples

and the memory-bandwidth ceiling at each thread count, measured in the same rounds: a compiled
parallel sum (read) and copy (read + write) over ``--bandwidth-mib`` MiB arrays. For each stage the
table prints time, speed-up over one thread and efficiency (speed-up / threads), and, where the
bytes a stage must move at least once are known (its inputs and outputs), that lower bound of its
data rate against the read ceiling: a stage at ≥ 50 % of the ceiling is marked bandwidth-bound (more
threads cannot help it much more than they help the sum).

Then the whole RCV1-scale study (``mlnb run configs/quickstart.toml`` on 781,265 documents, 47,236
words, 20 % test: ``--study-documents``), in fresh processes with NUMBA_NUM_THREADS = each thread count
(``--study-threads``: by default 1, 2 and all), with its ``--profile`` table: the wall time and the
seconds of every stage at each thread count, and the speed-up of all cores over 2.

Results also go to results/bench/threads-<time>.csv. Always read the load average printed with each
round: on a shared machine the minimum is the estimate of the quiet machine's time.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numba
import numpy as np
import pandas as pd
from numba import njit, prange

from mlnb.data.synthetic import make_rcv1_like
from mlnb.metrics.evaluation import evaluate
from mlnb.metrics.ranking import roc_auc
from mlnb.metrics.significance import delong_tests
from mlnb.metrics.uncertainty import auc_confidence_intervals, bootstrap_intervals
from mlnb.models import LogisticRegression, NaiveBayes

ROOT = Path(__file__).resolve().parents[1]
RCV1_WORDS, RCV1_CATEGORIES, RCV1_DOCUMENTS = 47_236, 103, 781_265
BANDWIDTH_BOUND = 0.5  # share of the read ceiling from which a stage is called bandwidth-bound


@njit(parallel=True, cache=True, fastmath=True)  # reassociated: vector adds, so memory is the limit
def _stream_sum(a):
    total = 0.0
    for i in prange(a.size):
        total += a[i]
    return total


@njit(parallel=True, cache=True)
def _stream_copy(a, b):
    for i in prange(a.size):
        b[i] = a[i]


def thread_counts(most: int) -> list[int]:
    """1, 2, 4, … below ``most``, then ``most``."""
    counts, t = [], 1
    while t < most:
        counts.append(t)
        t *= 2
    return counts + [most]


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _thread_cpu() -> dict:
    """{thread id: nanoseconds on a CPU} of every thread of this process (Linux schedstat; {} elsewhere)."""
    found = {}
    try:
        for tid in os.listdir("/proc/self/task"):
            with open(f"/proc/self/task/{tid}/schedstat") as stat:
                found[tid] = int(stat.read().split()[0])
    except OSError:
        return {}
    return found


def seconds(run, threads: int) -> tuple[float, float]:
    """(wall seconds, CPU critical path) of run() on ``threads`` threads. The second, the larger of the
    busiest thread's CPU seconds and all threads' CPU seconds / threads (a pool's threads end before
    they can be read), is what the wall time would be on a quiet machine if no thread ever waited
    for another (a lower bound of it): other processes' load inflates the wall time, not the CPU
    time the threads need."""
    before, cpu = _thread_cpu(), time.process_time()
    started = time.perf_counter()
    run()
    wall = time.perf_counter() - started
    after, cpu = _thread_cpu(), time.process_time() - cpu
    busiest = max((ns - before.get(tid, 0) for tid, ns in after.items()), default=0) / 1e9
    return wall, max(busiest, cpu / threads) if after else wall


def make_data(n_train: int, n_test: int, seed: int = 0):
    data = make_rcv1_like(n_documents=n_train + n_test, n_features=RCV1_WORDS, n_categories=RCV1_CATEGORIES,
                          test_fraction=0.5, seed=seed)
    # the first n_train documents train, the next n_test test (exact sizes, not the hash split's)
    X, Y = data.X, data.Y
    return X[:n_train], Y[:n_train], X[n_train:], Y[n_train:]


def stages(X, Y, X_test, Y_test, resamples: int) -> dict:
    """name -> (run, bytes it must move at least once or None), on prepared data."""
    nb = NaiveBayes(alpha=0.5).fit(X, Y)
    S_nb = nb.decision_function(X_test)  # (n_test, K) float32
    lr = LogisticRegression(npasses=1, batch_size=1000).fit(X, Y)
    S_lr = lr.decision_function(X_test)
    n, K = S_nb.shape
    V = X.shape[1]
    scores_bytes = S_nb.nbytes

    def nb_fit():
        model = NaiveBayes(alpha=0.5).fit(X, Y)
        model.weights_  # noqa: B018  (built on first use: part of the fit)

    return {
        "NB fit": (nb_fit, X.data.nbytes + X.indices.nbytes + Y.indices.nbytes + V * K * 4),
        "scoring": (lambda: nb.decision_function(X_test),
                    X_test.data.nbytes + X_test.indices.nbytes + scores_bytes),
        "LR pass": (lambda: LogisticRegression(npasses=1, batch_size=1000).fit(X, Y), None),
        "roc_auc": (lambda: roc_auc(Y_test, S_nb), scores_bytes),
        "evaluate()": (lambda: evaluate(Y_test, S_nb), scores_bytes),
        "DeLong tests": (lambda: delong_tests(Y_test, S_nb, S_lr), 2 * scores_bytes),
        "DeLong intervals": (lambda: auc_confidence_intervals(Y_test, S_nb), scores_bytes),
        "bootstrap": (lambda: bootstrap_intervals(Y_test, S_nb, n_boot=resamples), scores_bytes),
    }, (n, K)


def bandwidth_stages(mib: int) -> dict:
    a = np.ones(mib * 2**20 // 8)
    b = np.empty_like(a)
    _stream_sum(a[:1024])
    _stream_copy(a[:1024], b[:1024])
    return {"bandwidth: sum (read)": (lambda: _stream_sum(a), a.nbytes),
            "bandwidth: copy (read + write)": (lambda: _stream_copy(a, b), 2 * a.nbytes)}


def time_stages(work: dict, threads: list[int], repeats: int) -> tuple[dict, dict]:
    """({(stage, threads): minimum wall seconds}, the same of the busiest thread's CPU seconds) over
    ``repeats`` rounds, thread counts alternating."""
    best, busiest = {}, {}
    most = max(threads)
    for name, (run, _) in work.items():  # compile / load every kernel, untimed
        numba.set_num_threads(most)
        run()
    for r in range(repeats):
        print(f"round {r + 1}/{repeats}: load {load()}", flush=True)
        for name, (run, _) in work.items():
            for t in threads:
                numba.set_num_threads(t)
                took, path = seconds(run, t)
                best[name, t] = min(best.get((name, t), np.inf), took)
                busiest[name, t] = min(busiest.get((name, t), np.inf), path)
    numba.set_num_threads(most)
    return best, busiest


def stage_table(work: dict, best: dict, busiest: dict, threads: list[int]) -> pd.DataFrame:
    rows = []
    ceiling = {t: work["bandwidth: sum (read)"][1] / best["bandwidth: sum (read)", t] for t in threads}
    for name, (_, moved) in work.items():
        one = best[name, 1]
        for t in threads:
            took = best[name, t]
            rate = moved / took if moved else np.nan
            rows.append({"stage": name, "threads": t, "seconds": took, "speed_up": one / took,
                         "efficiency": one / took / t, "busiest_thread_cpu": busiest[name, t],
                         "cpu_path_speed_up": busiest[name, 1] / busiest[name, t], "min_GB_per_s": rate / 1e9,
                         "read_ceiling_GB_per_s": ceiling[t] / 1e9,
                         "bandwidth_bound": bool(moved) and not name.startswith("bandwidth")
                         and rate >= BANDWIDTH_BOUND * ceiling[t]})
    return pd.DataFrame(rows)


def print_stages(table: pd.DataFrame, threads: list[int]) -> None:
    width = max(table["stage"].str.len())
    head = f"{'stage':<{width}}  " + "  ".join(f"{t:>3} thr: s (×, eff)".rjust(24) for t in threads)
    print(head)
    print("-" * len(head))
    for name, rows in table.groupby("stage", sort=False):
        cells = []
        for t in threads:
            row = rows[rows["threads"] == t].iloc[0]
            mark = " B" if row["bandwidth_bound"] else ""
            cells.append(f"{row['seconds']:.3f} ({row['speed_up']:.2f}×, {100 * row['efficiency']:.0f}%){mark}"
                         .rjust(24))
        print(f"{name:<{width}}  " + "  ".join(cells))
    print("(× = speed-up over 1 thread, eff = speed-up / threads; B = at ≥ 50 % of the read ceiling at that "
          "thread count: bandwidth-bound)")
    print("\nthe same from the busiest thread's CPU seconds (what other processes' load does not inflate; the wall "
          "time of a quiet machine if the threads never waited for each other):\n")
    for name, rows in table.groupby("stage", sort=False):
        cells = [f"{r['busiest_thread_cpu']:.3f} ({r['cpu_path_speed_up']:.2f}×)".rjust(24) for _, r in rows.iterrows()]
        print(f"{name:<{width}}  " + "  ".join(cells))
    rates = table[table["min_GB_per_s"].notna() & ~table["stage"].str.startswith("bandwidth")]
    if len(rates):
        print("\nlower bound of each stage's data rate (inputs + outputs once / time) against the read ceiling, "
              "GB/s, at " + ", ".join(f"{t}" for t in threads) + " threads:")
        for name, rows in rates.groupby("stage", sort=False):
            print(f"  {name:<{width}}  " + "  ".join(f"{r:6.2f} of {c:6.2f}" for r, c in
                                                    zip(rows["min_GB_per_s"], rows["read_ceiling_GB_per_s"])))


_ROW = re.compile(r"^(?P<stage>\S.*?)\s+(?P<seconds>\d+\.\d+)\s+(?P<share>\d+\.\d)%\s+(?P<busy>\d+\.\d+)$")


def run_study(threads: int, documents: int, out: Path) -> dict:
    """{stage: seconds} of `mlnb run configs/quickstart.toml --profile` at RCV1 scale in a fresh process
    with NUMBA_NUM_THREADS = threads, plus 'process wall' (start-up and imports included)."""
    env = {**os.environ, "NUMBA_NUM_THREADS": str(threads), "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "mlnb_entry", "run", "configs/quickstart.toml", "--quiet", "--profile",
               "--out", str(out), "--set", f"data.synthetic.n_documents={documents}",
               "--set", f"data.synthetic.n_features={RCV1_WORDS}", "--set", "data.test_fraction=0.2"]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    if done.returncode != 0:  # said, and the other thread counts still run
        print(f"  the study failed with {threads} threads (exit {done.returncode}): {done.stderr.strip()[-1500:]}",
              flush=True)
        return {}
    found = {"process wall": wall}
    for line in done.stdout.split("where the time went (--profile):")[-1].splitlines():
        match = _ROW.match(line.strip())
        if match:
            found[match["stage"]] = float(match["seconds"])
            if match["stage"] == "total":
                found["busy cores"] = float(match["busy"])
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--documents", type=int, default=200_000, help="training documents (test: a quarter)")
    parser.add_argument("--threads", default="", help="thread counts, e.g. 1,2,4 (default: 1, 2, 4, …, all)")
    parser.add_argument("--repeats", type=int, default=3, help="rounds of the stages; the minimum is kept")
    parser.add_argument("--resamples", type=int, default=200, help="bootstrap resamples (eval.bootstrap's default)")
    parser.add_argument("--bandwidth-mib", type=int, default=512, help="size of each array of the bandwidth ceiling")
    parser.add_argument("--study-documents", type=int, default=RCV1_DOCUMENTS,
                        help="documents of the whole study (20 %% test); 0: no study")
    parser.add_argument("--study-threads", default="", help="thread counts of the whole study (default: 1, 2, all)")
    parser.add_argument("--no-study", action="store_true", help="the stages only")
    parser.add_argument("--quick", action="store_true",
                        help="the prepared run for a large machine (< 4 minutes on 16 cores): 2 rounds, 100 "
                             "resamples, the whole study at 2 and all threads")
    options = parser.parse_args()
    most = numba.config.NUMBA_NUM_THREADS
    if options.quick:
        options.repeats, options.resamples = 2, 100
        options.study_threads = options.study_threads or ",".join(map(str, sorted({2, most})))
    threads = [int(t) for t in options.threads.split(",")] if options.threads else thread_counts(most)
    study_threads = ([int(t) for t in options.study_threads.split(",")] if options.study_threads
                     else sorted({1, 2, most}))
    if 1 not in threads:
        threads = [1] + threads
    print(f"{platform.node()}: {os.cpu_count()} CPUs, numba {numba.__version__} ({most} threads), Python "
          f"{platform.python_version()}; load {load()}", flush=True)
    started = time.perf_counter()
    n_test = max(options.documents // 4, 1)
    X, Y, X_test, Y_test = make_data(options.documents, n_test)
    print(f"data: {X.shape[0]:,} training and {X_test.shape[0]:,} test documents, {X.shape[1]:,} words, "
          f"{Y.shape[1]} categories, {X.nnz / X.shape[0]:.1f} words per document "
          f"({time.perf_counter() - started:.1f} s to generate)", flush=True)
    work, _ = stages(X, Y, X_test, Y_test, options.resamples)
    work = {**bandwidth_stages(options.bandwidth_mib), **work}
    best, busiest = time_stages(work, threads, options.repeats)
    table = stage_table(work, best, busiest, threads)
    print(f"\nstages, minimum of {options.repeats} rounds (load now {load()}):\n")
    print_stages(table, threads)
    frames = [table.assign(part="stage")]

    if not options.no_study and options.study_documents:
        print(f"\nthe whole study (`mlnb run configs/quickstart.toml --profile`, {options.study_documents:,} "
              f"documents, {RCV1_WORDS:,} words, 20 % test) at {', '.join(map(str, study_threads))} threads; "
              f"load {load()}", flush=True)
        runs = {}
        with tempfile.TemporaryDirectory(prefix="bench_threads_") as scratch:
            for t in study_threads:
                found = run_study(t, options.study_documents, Path(scratch))
                if not found:
                    continue
                runs[t] = found
                print(f"  {t:>3} threads: {runs[t]['total']:.1f} s study ({runs[t]['process wall']:.1f} s with "
                      f"start-up), {runs[t].get('busy cores', float('nan')):.2f} busy cores; load {load()}",
                      flush=True)
    if not options.no_study and options.study_documents and runs:
        study = pd.DataFrame(runs)
        study.columns = [f"{t} threads" for t in runs]
        print("\nseconds per stage of the study (--profile):\n")
        print(study.to_string(float_format=lambda v: f"{v:.2f}"))
        if 2 in runs and most in runs and most != 2:
            print(f"\nall {most} threads against 2: {runs[2]['total'] / runs[most]['total']:.2f}× (the target on a "
                  f"16-core machine is ≥ 4×)")
        if 1 in runs and 2 in runs:
            print(f"2 threads against 1: {runs[1]['total'] / runs[2]['total']:.2f}×")
        long = study.reset_index(names="stage").melt(id_vars="stage", var_name="threads", value_name="seconds")
        frames.append(long.assign(part="study", threads=long["threads"].str.split().str[0].astype(int)))
    folder = ROOT / "results" / "bench"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"threads-{time.strftime('%Y%m%d-%H%M%S')}.csv"
    pd.concat(frames, ignore_index=True).to_csv(path, index=False)
    print(f"\n{time.perf_counter() - started:.0f} s in all; results: {path.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
