"""Benchmark: all-categories LR (mlnb) against scikit-learn's one-vs-rest SGD, in one run.

    python experiments/bench_lr.py                      # 250k synthetic docs (200k train) + RCV1 subset
    python experiments/bench_lr.py --documents 1000000  # ~800k training documents (RCV1 scale)

For each data set, times the fit of
  * sklearn: OneVsRestClassifier(SGDClassifier(loss="log_loss", max_iter=P, tol=None))
  * mlnb (numba kernel) and mlnb (scipy kernel): LogisticRegression(npasses=P)
with the same number of passes P, and prints the time ratio against sklearn and
each macro AUC on the held-out test part. numba's one-off compilation is timed
separately (it is cached on disk after the first run). Results go to
results/bench/lr-<timestamp>.csv as well.
"""

from __future__ import annotations

import argparse
import platform
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.linear_model import SGDClassifier
from sklearn.multiclass import OneVsRestClassifier

from mlnb.data.svmlight import load_svmlight_dataset
from mlnb.data.synthetic import make_rcv1_like
from mlnb.metrics import evaluate
from mlnb.models import LogisticRegression

RCV1_SUBSET = Path(__file__).resolve().parents[2] / "shared" / "data" / "rcv1subset" / "rcv1subset1.svm.gz"


def timed(fit):
    started = time.perf_counter()
    model = fit()
    return model, time.perf_counter() - started


def bench(name, data, passes, lrate, batch_size, skip_sklearn):
    X, Y, X_test, Y_test = data.X_train, data.Y_train, data.X_test, data.Y_test
    rows = []
    print(f"\n{name}: {X.shape[0]:,} train / {X_test.shape[0]:,} test documents, {X.shape[1]:,} features, "
          f"{Y.shape[1]} categories, {X.nnz:,} non-zeros, {passes} passes", flush=True)
    engines = [("mlnb numba", lambda: LogisticRegression(lrate=lrate, batch_size=batch_size, npasses=passes,
                                                         kernel="numba").fit(X, Y)),
               ("mlnb scipy", lambda: LogisticRegression(lrate=lrate, batch_size=batch_size, npasses=passes,
                                                         kernel="scipy").fit(X, Y))]
    if not skip_sklearn:
        engines.insert(0, ("sklearn OvR SGD", lambda: OneVsRestClassifier(SGDClassifier(
            loss="log_loss", max_iter=passes, tol=None, random_state=0)).fit(X, Y.toarray().astype(np.int64))))
    for engine, fit in engines:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # OvR warns about categories without positives
            model, seconds = timed(fit)
        scores = model.decision_function(X_test)
        auc = evaluate(Y_test, scores).summary["macro_auc"]
        rows.append({"data": name, "engine": engine, "passes": passes, "fit_seconds": seconds,
                     "macro_auc": auc, "train_documents": X.shape[0]})
        print(f"  {engine:16s} fit {seconds:8.2f} s   macro AUC {auc:.4f}", flush=True)
    frame = pd.DataFrame(rows)
    if not skip_sklearn:
        base = frame.iloc[0]
        frame["speedup_vs_sklearn"] = base["fit_seconds"] / frame["fit_seconds"]
        frame["auc_minus_sklearn"] = frame["macro_auc"] - base["macro_auc"]
    return frame


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--documents", type=int, default=250_000, help="synthetic documents (80%% train)")
    parser.add_argument("--passes", type=int, default=2)
    parser.add_argument("--lrate", type=float, default=LogisticRegression().lrate)
    parser.add_argument("--batch-size", type=int, default=LogisticRegression().batch_size)
    parser.add_argument("--skip-sklearn", action="store_true", help="time mlnb only (for RCV1 scale)")
    parser.add_argument("--out", default="results/bench")
    args = parser.parse_args()

    print(f"machine: {platform.processor() or platform.machine()}, {__import__('os').cpu_count()} cores, "
          f"Python {platform.python_version()}")
    warm = make_rcv1_like(n_documents=500, n_features=1000, n_categories=5, seed=1)
    _, compile_seconds = timed(lambda: LogisticRegression(npasses=1).fit(warm.X_train, warm.Y_train))
    print(f"numba compile / cache load: {compile_seconds:.2f} s (excluded below)")
    frames = []
    synthetic = make_rcv1_like(n_documents=args.documents, n_features=47_236, n_categories=103,
                               test_fraction=0.2, seed=0)
    frames.append(bench("synthetic", synthetic, args.passes, args.lrate, args.batch_size, args.skip_sklearn))
    del synthetic
    if RCV1_SUBSET.is_file():
        subset = load_svmlight_dataset(RCV1_SUBSET, n_features=47_236, seed=0)
        frames.append(bench("rcv1subset1", subset, args.passes, args.lrate, args.batch_size, args.skip_sklearn))
    else:
        print(f"\nrcv1subset1: skipped, {RCV1_SUBSET} not found")
    table = pd.concat(frames, ignore_index=True)
    print("\n" + table.to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"lr-{time.strftime('%Y%m%d-%H%M%S')}.csv"
    table.to_csv(path, index=False)
    print(f"\nwritten: {path}")


if __name__ == "__main__":
    main()
