"""Multiclass Naive Bayes on the fastNaiveBayes tweets DTM: fit + predict, mlnb beside scikit-learn and
beside fastNaiveBayes's published times.

    python experiments/bench_multiclass_nb.py                  # best of 300 repeats
    python experiments/bench_multiclass_nb.py --repeats 1000

Data: ../shared/data/tweets/tweetsDTM.svm.gz, 14,640 tweets × 2,213 terms (counts, ~8.5 per tweet),
three classes (negative / neutral / positive) and two (negative vs the rest: the task of
fastNaiveBayes's speed table).

Timed, per task and event model: ``fit(X, y)`` then ``predict_proba(X)`` of every document, both
libraries from the same scipy CSR float64 matrix and integer labels, alpha = 1; one untimed warm-up
first (numba compiles, or loads from its cache, its kernels then), then the best and the median of
``--repeats`` runs. mlnb is NaiveBayes(event_model=..., task="multiclass"); scikit-learn is
BernoulliNB(binarize=0.0) / MultinomialNB, measured in the same run. Each pair's posteriors are
checked to agree (max |Δ P|).

fastNaiveBayes is not run here. Its figures are quoted constants: the times its vignette publishes
for this DTM with sparse input (two classes; Bernoulli on the binarised matrix; fit + predict in R,
by microbenchmark), measured on another machine, so they give the scale only.

The load average is printed first: on a shared machine other processes inflate times, and the best
of many repeats is the least affected. Then a breakdown of mlnb's own time by stage.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import time
from pathlib import Path

import numba
import numpy as np
import scipy
import sklearn
from sklearn.datasets import load_svmlight_file
from sklearn.naive_bayes import BernoulliNB, MultinomialNB

from mlnb.models import NaiveBayes
from mlnb.models._linear import as_csr_float32
from mlnb.models.naive_bayes import NBCounts, multiclass

TWEETS = Path(__file__).resolve().parents[2] / "shared" / "data" / "tweets" / "tweetsDTM.svm.gz"
# fastNaiveBayes 2.2.1 vignette, sparse dgCMatrix input, two classes: published seconds, another machine
FASTNAIVEBAYES_PUBLISHED = {"bernoulli": 0.015, "multinomial": 0.012}
REFERENCES = {"bernoulli": lambda: BernoulliNB(alpha=1.0, binarize=0.0),
              "multinomial": lambda: MultinomialNB(alpha=1.0)}


def timed(run, repeats: int) -> tuple[float, float, object]:
    """(best, median) seconds of ``repeats`` runs after one warm-up, and the last result."""
    result = run()  # warm-up: numba kernels compile or load here, not in the timed runs
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        result = run()
        times.append(time.perf_counter() - started)
    return min(times), statistics.median(times), result


def git_sha() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              cwd=Path(__file__).parent, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def header() -> None:
    uptime = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    load = os.getloadavg()
    print(f"uptime: {uptime}")
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} (1, 5, 15 min) on {os.cpu_count()} cores "
          f"({platform.machine()})")
    print(f"Python {platform.python_version()}, numpy {np.__version__}, scipy {scipy.__version__}, "
          f"scikit-learn {sklearn.__version__}, numba {numba.__version__} ({numba.get_num_threads()} threads), "
          f"mlnb git {git_sha()}")


def fit_predict_mlnb(event_model: str, X, y):
    return NaiveBayes(event_model=event_model, task="multiclass", alpha=1.0).fit(X, y).predict_proba(X)


def fit_predict_sklearn(event_model: str, X, y):
    return REFERENCES[event_model]().fit(X, y).predict_proba(X)


def compare(X, tasks: dict, repeats: int) -> None:
    ms = 1e3
    print(f"\nfit + predict_proba of all {X.shape[0]:,} documents, milliseconds: best (median) of {repeats}")
    print(f"{'task':<10} {'model':<12} {'mlnb':>16} {'scikit-learn':>16} {'sklearn/mlnb':>13} "
          f"{'fastNaiveBayes*':>16} {'max |ΔP|':>9}")
    for task, y in tasks.items():
        for event_model in ("bernoulli", "multinomial"):
            best, median, ours = timed(lambda: fit_predict_mlnb(event_model, X, y), repeats)
            ref_best, ref_median, theirs = timed(lambda: fit_predict_sklearn(event_model, X, y), repeats)
            published = (f"{FASTNAIVEBAYES_PUBLISHED[event_model] * ms:.0f}" if task == "2 classes" else "–")
            print(f"{task:<10} {event_model:<12} {best * ms:>7.2f} ({median * ms:>6.2f}) "
                  f"{ref_best * ms:>7.2f} ({ref_median * ms:>6.2f}) {ref_best / best:>12.2f}× {published:>16} "
                  f"{np.abs(ours - theirs).max():>9.1e}")
    print("* fastNaiveBayes: published figures (its vignette; sparse input; two classes, Bernoulli on the "
          "binarised DTM), from another machine: quoted, not measured here")


def breakdown(X, y, repeats: int) -> None:
    """Where mlnb's time goes, stage by stage (best of ``repeats``), multinomial, 3 classes."""
    ms = 1e3
    X32 = as_csr_float32(X)
    Y = multiclass.one_hot(y, X.shape[0])
    model = NaiveBayes(task="multiclass", alpha=1.0).fit(X, y)
    J = model._joint_log_likelihood(X)
    stages = {
        "X to CSR float32 (fit and again in predict)": lambda: as_csr_float32(X),
        "labels to one-hot": lambda: multiclass.one_hot(y, X.shape[0]),
        "counts F = Yᵀ·X, t, N": lambda: NBCounts.from_chunk(X32, Y),
        "W, b from the counts (once, lazily)": lambda: model._update_log_odds(model.counts_, ()),
        "J = X·W + b, float64 (X to float32 included)": lambda: model._joint_log_likelihood(X),
        "log posterior J − logsumexp J": lambda: multiclass.log_posterior(J),
    }
    print("\nmlnb by stage (multinomial, 3 classes), milliseconds, best of", repeats)
    for name, run in stages.items():
        print(f"  {name:<46} {timed(run, repeats)[0] * ms:6.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=300)
    parser.add_argument("--data", type=Path, default=TWEETS)
    args = parser.parse_args()
    if not args.data.is_file():
        raise SystemExit(f"tweets DTM not found at {args.data} (../shared/data is beside the project only in "
                         "the development checkout)")
    header()
    X, y = load_svmlight_file(str(args.data), zero_based=False, n_features=2213)
    X, y = X.tocsr(), y.astype(int)
    print(f"tweets DTM: {X.shape[0]:,} × {X.shape[1]:,}, {X.nnz:,} non-zeros; classes {np.bincount(y).tolist()}")
    tasks = {"3 classes": y, "2 classes": (y != 0).astype(int)}  # class 0 is negative: negative vs the rest
    compare(X, tasks, args.repeats)
    breakdown(X, y, args.repeats)


if __name__ == "__main__":
    main()
