"""One AUC per category: mlnb.roc_auc on 2-D input against a loop of sklearn's roc_auc_score, and
the error bounds of the binned (histogram) AUC on realistic scores.

    python experiments/bench_roc_auc.py                      # 100,000 × 103, 3 repeats (~1 min)
    python experiments/bench_roc_auc.py --documents 20000 --repeats 2
    python experiments/bench_roc_auc.py --skip-bounds        # the speed part only

Part 1, speed. RCV1-shaped labels and scores: n documents × 103 categories, prevalences log-spaced
over four decades from 47 % (RCV1: CCAT 47 %, the rarest topics a few in 800k), about 3 labels
per document; scores are float32 log-odds, Gaussian per class with a per-category separation
(AUC 0.75–0.99), rounded to float32 so some tie. For Y sparse (CSR int8) and dense (bool), scores
float32 and float64, mlnb's ``roc_auc(Y, S)`` (one AUC per column, numba threads) is timed against
``[roc_auc_score(Y[:, k], S[:, k]) for k]`` on the dense labels (its cheapest input), and against
mlnb's own 1-D ``roc_auc`` in a loop. The runs alternate within each repeat; each figure is the
minimum over ``--repeats``; the ratio is sklearn loop / mlnb, measured in the same run. The load
average is printed before and after (the machine is shared).

Part 2, bounds (skipped with --skip-bounds). Naive Bayes and logistic regression fitted on a
``make_rcv1_like`` corpus (47,236 words, 103 categories) score its test half. For their scores: the
binned AUC per category with its stated largest error ½ Σ pos_b·neg_b / (P N) and the actual error
against the exact AUC, on the default grid (2^16 bins asinh-spaced over ±1e4 log-odds) and on a
linear one (2^16 bins over ±32); the pooled (micro) AUC and AP on both and on the grid
``evaluate_spilled`` uses (2^20 equal bins over the observed range), with their bounds and actual
errors. The same for the RCV1 subset in ../shared/data when it is there.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from sklearn.metrics import roc_auc_score

from mlnb.metrics import roc_auc
from mlnb.metrics.binned import (BinnedScores, Grid, auc_from_histograms, average_precision_from_histograms,
                                 count_column)
from mlnb.metrics.evaluation import pooled_rank_metrics
from mlnb.metrics.ranking import auc_from_curve, rank_curve
from mlnb.metrics.streaming import MICRO_BINS

RCV1_SUBSET = Path(__file__).resolve().parents[2] / "shared" / "data" / "rcv1subset" / "rcv1subset1.svm.gz"


def load() -> str:
    return "load average " + " ".join(f"{v:.2f}" for v in os.getloadavg())


def rcv1_shaped(n: int, K: int = 103, seed: int = 0):
    """Labels (dense bool) and float32 log-odds of n documents × K categories (module docstring)."""
    rng = np.random.default_rng(seed)
    prevalence = np.logspace(np.log10(0.47), np.log10(0.47e-4), K)
    rng.shuffle(prevalence)
    Y = rng.random((n, K)) < prevalence
    separation = rng.uniform(1.0, 3.5, K)  # AUC Φ(d/√2): 0.76 .. 0.99
    S = (rng.normal(size=(n, K)) + separation * Y + np.log(prevalence / (1 - prevalence))).astype(np.float32)
    return Y, S


def min_seconds(run, repeats_done: dict, key: str):
    started = time.perf_counter()
    result = run()
    seconds = time.perf_counter() - started
    repeats_done[key] = min(repeats_done.get(key, np.inf), seconds)
    return result


def speed(n: int, repeats: int) -> None:
    Y, S32 = rcv1_shaped(n)
    S64 = S32.astype(np.float64)
    Y_csr = sp.csr_matrix(Y.astype(np.int8))
    defined = [k for k in range(Y.shape[1]) if 0 < Y[:, k].sum() < n]
    print(f"Part 1: {n:,} documents × {Y.shape[1]} categories, {Y.sum() / n:.2f} labels per document, "
          f"{len(defined)} categories with a positive and a negative")
    print(load())
    roc_auc(Y_csr[:1000], S32[:1000])  # numba: compile or load the cache before timing
    roc_auc(Y[:1000], S64[:1000])
    times: dict = {}
    checks = {}
    for _ in range(repeats):
        for name, scores in (("float32", S32), ("float64", S64)):
            reference = min_seconds(lambda s=scores: np.array([roc_auc_score(Y[:, k], s[:, k]) for k in defined]),
                                    times, f"sklearn loop {name}")
            for labels_name, labels in (("sparse Y", Y_csr), ("dense Y", Y)):
                got = min_seconds(lambda y=labels, s=scores: roc_auc(y, s), times, f"mlnb {labels_name} {name}")
                min_seconds(lambda y=labels, s=scores: roc_auc(y, s, n_threads=1), times,
                            f"mlnb 1 thread {labels_name} {name}")
                checks[f"{labels_name} {name}"] = float(np.max(np.abs(got[defined] - reference)))
            min_seconds(lambda s=scores: [auc_from_curve(rank_curve(Y[:, k], s[:, k])) for k in defined], times,
                        f"mlnb 1-D loop {name}")
    print(load())
    print(f"\n{'':34s}{'seconds':>9s}{'sklearn loop / this':>22s}{'max |Δ| vs sklearn':>20s}")
    for name in ("float32", "float64"):
        baseline = times[f"sklearn loop {name}"]
        print(f"{'sklearn roc_auc_score loop ' + name:34s}{baseline:9.3f}{1.0:22.1f}")
        print(f"{'mlnb 1-D roc_auc loop ' + name:34s}{times[f'mlnb 1-D loop {name}']:9.3f}"
              f"{baseline / times[f'mlnb 1-D loop {name}']:22.1f}")
        for labels_name in ("sparse Y", "dense Y"):
            for threads in ("", "1 thread "):
                key = f"mlnb {threads}{labels_name} {name}"
                error = checks[f"{labels_name} {name}"]
                print(f"{'roc_auc(Y, S) ' + threads + labels_name + ' ' + name:34s}{times[key]:9.3f}"
                      f"{baseline / times[key]:22.1f}{error:20.1e}")
    print("(minimum of", repeats, "runs each; the mlnb rows use numba's threads unless '1 thread')")


def bounds_of(title: str, Y, S, exact_per_category: np.ndarray) -> None:
    """Print the binned bounds and actual errors of scores S (n × K) against Y."""
    Y = sp.csr_matrix(Y)
    S = np.asarray(S, dtype=np.float32)
    # categories scored by their prior alone (untrainable) tie every score: exact AUC ½, bound ½
    constant = np.nanmin(S, axis=0) == np.nanmax(S, axis=0)
    defined = np.isfinite(exact_per_category) & ~constant
    exact_micro_auc, exact_micro_ap = pooled_rank_metrics(Y, S)
    finite = S[np.isfinite(S)]
    print(f"\n{title}: {S.shape[0]:,} test documents, scores in [{finite.min():.1f}, {finite.max():.1f}], "
          f"{np.mean((finite < -32) | (finite > 32)):.2%} beyond ±32; {int(constant.sum())} categories with one "
          f"score for every document left out of the per-category figures")
    for name, grid in (("default grid (2^16 bins, asinh-spaced over ±1e4)", Grid()),
                       ("linear grid (2^16 bins over ±32)", Grid(-32.0, 32.0, 1 << 16, "linear"))):
        counts = BinnedScores.from_scores(Y, S, grid)
        bound = counts.auc_max_error()
        error = np.abs(counts.auc() - exact_per_category)
        micro_auc, micro_bound = counts.micro_auc()
        micro_ap, micro_ap_bound = counts.micro_average_precision()
        print(f"  {name}:\n    per category AUC bound: median {np.median(bound[defined]):.1e}, 90th percentile "
              f"{np.quantile(bound[defined], 0.9):.1e}, max {np.max(bound[defined]):.1e}; actual error max "
              f"{np.max(error[defined]):.1e}; exact within bound everywhere: "
              f"{bool(np.all(error[defined] <= bound[defined] + 1e-12))}\n"
              f"    micro AUC bound {micro_bound:.1e} (actual error {abs(micro_auc - exact_micro_auc):.1e}); "
              f"micro AP bound {micro_ap_bound:.1e} (actual {abs(micro_ap - exact_micro_ap):.1e})")
    grid = Grid(float(finite.min()), float(finite.max()), MICRO_BINS, "linear")  # as evaluate_spilled builds it
    pos, neg = np.zeros(MICRO_BINS + 2, np.int64), np.zeros(MICRO_BINS + 2, np.int64)
    Y_csc = Y.tocsc()
    for k in range(S.shape[1]):  # one pooled histogram, column by column, as evaluate_spilled does
        count_column(pos, neg, grid, np.ascontiguousarray(S[:, k]), Y_csc.indices[Y_csc.indptr[k]:Y_csc.indptr[k + 1]])
    spilled_auc, spilled_bound = auc_from_histograms(pos, neg)
    spilled_ap, spilled_ap_bound = average_precision_from_histograms(pos, neg)
    print(f"  evaluate_spilled's micro grid (2^20 bins over the observed range):\n"
          f"    micro AUC bound {spilled_bound:.1e} (actual error {abs(spilled_auc - exact_micro_auc):.1e}); "
          f"micro AP bound {spilled_ap_bound:.1e} (actual {abs(spilled_ap - exact_micro_ap):.1e})")


def bounds(n: int) -> None:
    from mlnb.data.synthetic import make_rcv1_like
    from mlnb.models import LogisticRegression, NaiveBayes

    print(f"\nPart 2: binned AUC bounds on model scores ({load()})")
    data = make_rcv1_like(n_documents=n, n_features=47_236, n_categories=103, seed=1)
    X_train, Y_train = data.X[data.train_index], data.Y[data.train_index]
    X_test, Y_test = data.X[data.test_index], data.Y[data.test_index]
    for name, model in (("NaiveBayes", NaiveBayes()), ("LogisticRegression (2 passes)", LogisticRegression(npasses=2))):
        S = model.fit(X_train, Y_train).decision_function(X_test)
        bounds_of(f"make_rcv1_like, {name}", Y_test, S, roc_auc(Y_test, S))
    if RCV1_SUBSET.is_file():
        from mlnb.data.svmlight import load_svmlight_dataset

        data = load_svmlight_dataset(RCV1_SUBSET, n_features=47236, seed=0)
        X_train, Y_train = data.X[data.train_index], data.Y[data.train_index]
        X_test, Y_test = data.X[data.test_index], data.Y[data.test_index]
        for name, model in (("NaiveBayes", NaiveBayes()), ("LogisticRegression (2 passes)",
                                                           LogisticRegression(npasses=2))):
            S = model.fit(X_train, Y_train).decision_function(X_test)
            bounds_of(f"RCV1 subset, {name}", Y_test, S, roc_auc(Y_test, S))
    else:
        print(f"\n(RCV1 subset not found at {RCV1_SUBSET}: skipped)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--documents", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--bound-documents", type=int, default=100_000,
                        help="documents of the synthetic corpus of part 2 (half of them test)")
    parser.add_argument("--skip-bounds", action="store_true")
    args = parser.parse_args()
    speed(args.documents, args.repeats)
    if not args.skip_bounds:
        bounds(args.bound_documents)


if __name__ == "__main__":
    main()
