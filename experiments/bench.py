"""Benchmark of the NB pipeline at RCV1 scale: each stage against its baseline, in one run.

    python experiments/bench.py                 # full RCV1 shape: 804,414 documents (~8 min)
    python experiments/bench.py --scale 0.1     # a tenth of it
    python experiments/bench.py --repeats 5

Synthetic data of RCV1-v2's shape (47,236 words, 103 categories, ~60 million non-zeros at
scale 1) with the LYRL2004 split: the first 23,149 × scale documents train, the rest test.
Then, on ../shared/data/rcv1subset when present, the same stages. Each stage is timed as the
median of ``--repeats`` runs (baselines that take minutes: ``--baseline-repeats``, default 1),
and the ratio baseline / mlnb is printed:

    NB fit       mlnb NaiveBayes.fit (one Yᵀ·X)        vs OneVsRestClassifier(MultinomialNB()).fit
                 (on the training part, and again on the large test part; experiments/bench_nb_fit.py
                 also times the faster per-category MultinomialNB loop, alternating, at 23k/300k/781k)
    scoring      mlnb predict_proba (X·W + b, sigmoid) vs OvR predict_proba, and vs scipy X @ W + b
    evaluation   mlnb evaluate (AUC, ROC grid, lift,    vs a loop of sklearn roc_curve +
                 F1 and the rest, every category)          roc_auc_score + f1_score per category
    end to end   fit + score + evaluate

Peak memory of each mlnb stage is measured in a separate untimed run with tracemalloc (numpy
reports its buffers to it); it counts every live array, inputs included, and is compared with
1.5 × (test CSR + dense float32 score matrix). Results also go to results/bench/bench-<time>.csv.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import statistics
import time
import tracemalloc
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.metrics import f1_score, roc_auc_score, roc_curve
from sklearn.multiclass import OneVsRestClassifier
from sklearn.naive_bayes import MultinomialNB

from mlnb.data.dataset import Dataset
from mlnb.data.svmlight import load_svmlight_dataset
from mlnb.data.synthetic import make_rcv1_like
from mlnb.metrics import evaluate
from mlnb.models import NaiveBayes

RCV1_SUBSET = Path(__file__).resolve().parents[2] / "shared" / "data" / "rcv1subset" / "rcv1subset1.svm.gz"
MiB = 2**20


def median_seconds(run, repeats: int):
    times, result = [], None
    for _ in range(repeats):
        started = time.perf_counter()
        result = run()
        times.append(time.perf_counter() - started)
    return statistics.median(times), result


def peak_bytes(run) -> int:
    """Peak traced allocation while ``run`` runs, counting what was already live."""
    tracemalloc.start()
    tracemalloc.reset_peak()
    try:
        run()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def sklearn_evaluation_loop(Y: np.ndarray, scores: np.ndarray) -> None:
    for k in range(Y.shape[1]):
        y = Y[:, k]
        if 0 < y.sum() < y.size:
            roc_curve(y, scores[:, k])
            roc_auc_score(y, scores[:, k])
        f1_score(y, scores[:, k] >= 0, zero_division=0)


def bench_dataset(name: str, data: Dataset, repeats: int, baseline_repeats: int) -> list[dict]:
    X_train, Y_train, X_test, Y_test = data.X_train, data.Y_train, data.X_test, data.Y_test
    K = Y_train.shape[1]
    csr_bytes = X_test.data.nbytes + X_test.indices.nbytes + X_test.indptr.nbytes
    scores_bytes = X_test.shape[0] * K * 4
    bound = 1.5 * (csr_bytes + scores_bytes)
    print(f"\n{name}: {X_train.shape[0]:,} train / {X_test.shape[0]:,} test documents, {X_test.shape[1]:,} "
          f"features, {K} categories, {X_test.nnz:,} test non-zeros; memory bound 1.5 × (CSR "
          f"{csr_bytes / MiB:,.0f} MiB + scores {scores_bytes / MiB:,.0f} MiB) = {bound / MiB:,.0f} MiB",
          flush=True)
    rows = []

    def record(stage, mlnb_seconds, baseline, baseline_seconds, peak=None, extra=""):
        ratio = baseline_seconds / mlnb_seconds if baseline_seconds else float("nan")
        rows.append({"data": name, "stage": stage, "mlnb_seconds": mlnb_seconds, "baseline": baseline,
                     "baseline_seconds": baseline_seconds, "ratio": ratio,
                     "peak_MiB": peak / MiB if peak else float("nan"), "bound_MiB": bound / MiB,
                     "note": extra})
        peak_text = f", peak {peak / MiB:,.0f} MiB ({peak / bound:.2f} of bound)" if peak else ""
        print(f"  {stage:22s} mlnb {mlnb_seconds:8.3f} s | {baseline:34s} {baseline_seconds:8.3f} s | "
              f"ratio {ratio:6.1f}×{peak_text} {extra}", flush=True)

    def fit_nb(X, Y):
        """Counts and log-odds: NaiveBayes builds W and b lazily, on first use after fit."""
        model = NaiveBayes().fit(X, Y)
        model.weights_
        return model

    Y_train_int = Y_train.toarray().astype(np.int64)  # int8 trips sklearn's LabelBinarizer past 128 columns
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        nb_seconds, nb = median_seconds(lambda: fit_nb(X_train, Y_train), repeats)
        ovr_seconds, ovr = median_seconds(lambda: OneVsRestClassifier(MultinomialNB()).fit(X_train, Y_train_int),
                                          baseline_repeats)
        record("NB fit", nb_seconds, "OvR(MultinomialNB()).fit", ovr_seconds,
               peak_bytes(lambda: fit_nb(X_train, Y_train)))
        # the count product only dominates on many documents: fit on the large part too
        Y_test_int = Y_test.toarray().astype(np.int64)
        big_seconds, _ = median_seconds(lambda: fit_nb(X_test, Y_test), repeats)
        big_ovr_seconds, _ = median_seconds(lambda: OneVsRestClassifier(MultinomialNB()).fit(X_test, Y_test_int),
                                            baseline_repeats)
        del Y_test_int
        record("NB fit, test-size data", big_seconds, "OvR(MultinomialNB()).fit", big_ovr_seconds,
               peak_bytes(lambda: fit_nb(X_test, Y_test)))

        score_seconds, proba = median_seconds(lambda: nb.predict_proba(X_test, dtype=np.float32), repeats)
        del proba
        ovr_score_seconds, ovr_proba = median_seconds(lambda: ovr.predict_proba(X_test), baseline_repeats)
        del ovr_proba
        scipy_seconds, _ = median_seconds(lambda: X_test @ nb.weights_ + nb.bias_, repeats)
        gflops = 2 * X_test.nnz * K / score_seconds / 1e9
        peak = peak_bytes(lambda: nb.predict_proba(X_test, dtype=np.float32))
        record("scoring", score_seconds, "OvR predict_proba", ovr_score_seconds, peak,
               f"({gflops:.1f} GFLOP/s incl. sigmoid)")
        kernel_seconds, scores = median_seconds(lambda: nb.decision_function(X_test), repeats)
        record("scoring kernel X·W+b", kernel_seconds, "scipy X @ W + b", scipy_seconds, None,
               f"({2 * X_test.nnz * K / kernel_seconds / 1e9:.1f} GFLOP/s)")

    eval_seconds, _ = median_seconds(lambda: evaluate(Y_test, scores, curve_categories=[]), repeats)
    Y_dense = Y_test.toarray().astype(bool)
    loop_seconds, _ = median_seconds(lambda: sklearn_evaluation_loop(Y_dense, scores), baseline_repeats)
    del Y_dense
    record("evaluation", eval_seconds, "sklearn roc_curve+auc+f1 loop", loop_seconds,
           peak_bytes(lambda: evaluate(Y_test, scores, curve_categories=[])))
    del scores

    def end_to_end():
        model = NaiveBayes().fit(X_train, Y_train)
        return evaluate(Y_test, model.decision_function(X_test), curve_categories=[6 % K])

    e2e_seconds, result = median_seconds(end_to_end, 1)
    record("end to end", e2e_seconds, "target", 60.0, peak_bytes(end_to_end),
           f"(macro AUC {result.summary['macro_auc']:.4f})")
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale", type=float, default=1.0, help="share of RCV1's 804,414 documents")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--baseline-repeats", type=int, default=1)
    parser.add_argument("--out", default="results/bench")
    args = parser.parse_args()
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"numpy {np.__version__}")
    warm = make_rcv1_like(n_documents=2000, n_features=1000, n_categories=5, seed=1)
    NaiveBayes().fit(warm.X_train, warm.Y_train).decision_function(warm.X)  # numba: compile / load cache
    n = int(round(804_414 * args.scale))
    n_train = int(round(23_149 * args.scale))
    started = time.perf_counter()
    full = make_rcv1_like(n_documents=n, n_features=47_236, n_categories=103, seed=0)
    data = Dataset(X=full.X, Y=full.Y, category_names=full.category_names, train_index=np.arange(n_train),
                   test_index=np.arange(n_train, n), name="synthetic")
    del full
    print(f"generated {n:,} documents in {time.perf_counter() - started:.1f} s")
    rows = bench_dataset(f"synthetic x{args.scale:g}", data, args.repeats, args.baseline_repeats)
    del data
    if RCV1_SUBSET.is_file():
        rows += bench_dataset("rcv1subset1", load_svmlight_dataset(RCV1_SUBSET, n_features=47_236, seed=0),
                              args.repeats, max(args.baseline_repeats, args.repeats))
    print(f"\nprocess peak resident memory: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:,.0f} MiB")
    table = pd.DataFrame(rows)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"bench-{time.strftime('%Y%m%d-%H%M%S')}.csv"
    table.to_csv(path, index=False, float_format="%.4f")
    print(f"written: {path}")


if __name__ == "__main__":
    warnings.simplefilter("ignore")  # categories without training positives: reported, not warned
    main()
