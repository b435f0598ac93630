"""NB fit time: mlnb's all-categories NaiveBayes against scikit-learn's one-vs-rest MultinomialNB.

    python experiments/bench_nb_fit.py                         # 23,149 / 300,000 / 781,265 documents
    python experiments/bench_nb_fit.py --sizes 23149 --rounds 5
    python experiments/bench_nb_fit.py --skip-ovr              # the loop baseline only (faster)

Data: RCV1-shaped synthetic word counts (47,236 words, 103 categories, mlnb.data.synthetic.make_rcv1_like),
the first n documents of one 781,265-document corpus: 23,149 (LYRL2004's training size), 300,000 and
781,265 (LYRL2004's test size); then, when ../shared/data/rcv1subset is present, each real 6,000-document
RCV1 subset (LYRL2004 TF-IDF values, 101 labels).

What is timed, each "fit" ending with weights one can score with:

    mlnb          NaiveBayes(alpha=0.5).fit(X, Y) and its weights_ (counts → log-odds, built lazily)
    mlnb 1 thread the same with numba.set_num_threads(1)
    sklearn loop  [MultinomialNB(alpha=0.5).fit(X, Y[:, k]) for k in range(K)]: the loop over categories
                  scikit-learn users write (Y a dense int8 array)
    sklearn OvR   OneVsRestClassifier(MultinomialNB(alpha=0.5)).fit(X, Y) (Y dense int64)

The contenders alternate within each round (mlnb ``--mlnb-repeats`` times per round, as its fit is
milliseconds long and the machine is shared); every time is the minimum over the rounds, and the load
average is printed with each round. The ratio is (fastest scikit-learn way) / mlnb and the target is
≥ 30×. Before timing, the script checks that mlnb's weights equal scikit-learn's
feature_log_prob_[1] − feature_log_prob_[0] (to 1e-5 of the largest) and are identical with one thread.
Results also go to results/bench/nb-fit-<time>.csv.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
import warnings
from pathlib import Path

import numba
import numpy as np
import pandas as pd
from sklearn.multiclass import OneVsRestClassifier
from sklearn.naive_bayes import MultinomialNB

from mlnb.data.svmlight import load_svmlight_dataset
from mlnb.data.synthetic import make_rcv1_like
from mlnb.models import NaiveBayes

RCV1_SUBSETS = Path(__file__).resolve().parents[2] / "shared" / "data" / "rcv1subset"
SIZES = (23_149, 300_000, 781_265)
ALPHA = 0.5
TARGET = 30.0


def seconds(run) -> float:
    started = time.perf_counter()
    run()
    return time.perf_counter() - started


def fit_mlnb(X, Y, threads: int | None = None) -> NaiveBayes:
    default = numba.get_num_threads()
    numba.set_num_threads(threads or default)
    try:
        model = NaiveBayes(alpha=ALPHA).fit(X, Y)
        model.weights_  # noqa: B018  (W and b are built on first use: part of the fit)
        return model
    finally:
        numba.set_num_threads(default)


def sklearn_loop(X, Y_dense):
    return [MultinomialNB(alpha=ALPHA).fit(X, Y_dense[:, k]) for k in range(Y_dense.shape[1])]


def sklearn_ovr(X, Y_int64):
    return OneVsRestClassifier(MultinomialNB(alpha=ALPHA)).fit(X, Y_int64)


def check(X, Y, Y_dense) -> str:
    """mlnb's W against scikit-learn's, on the 5 largest trainable categories, and with one thread."""
    model = fit_mlnb(X, Y)
    if not np.array_equal(model.weights_, fit_mlnb(X, Y, threads=1).weights_):
        raise AssertionError("the weights differ between the default thread count and one thread")
    positives = Y_dense.sum(axis=0)
    trainable = np.flatnonzero((positives > 0) & (positives < Y_dense.shape[0]))
    worst = 0.0
    for k in trainable[np.argsort(-positives[trainable])][:5]:
        log_prob = MultinomialNB(alpha=ALPHA).fit(X, Y_dense[:, k]).feature_log_prob_
        expected = log_prob[1] - log_prob[0]
        worst = max(worst, np.abs(model.weights_[:, k] - expected).max() / np.abs(expected).max())
    if worst > 1e-5:
        raise AssertionError(f"mlnb's weights are {worst:.2g} (of the largest) from scikit-learn's")
    return f"W = sklearn's to {worst:.1e} of the largest; identical with 1 thread"


def bench(name: str, X, Y, rounds: int, mlnb_repeats: int, skip_ovr: bool) -> dict:
    Y_dense = Y.toarray().astype(np.int8)
    Y_int64 = None if skip_ovr else Y_dense.astype(np.int64)  # int8 trips OvR's LabelBinarizer past 128 columns
    print(f"\n{name}: {X.shape[0]:,} documents, {X.shape[1]:,} features, {Y.shape[1]} categories, {X.nnz:,} "
          f"non-zeros; {check(X, Y, Y_dense)}", flush=True)
    times: dict[str, list[float]] = {"mlnb": [], "mlnb 1 thread": [], "sklearn loop": [], "sklearn OvR": []}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # categories without positives, in either library
        for r in range(rounds):
            times["mlnb"].append(min(seconds(lambda: fit_mlnb(X, Y)) for _ in range(mlnb_repeats)))
            times["mlnb 1 thread"].append(min(seconds(lambda: fit_mlnb(X, Y, 1)) for _ in range(mlnb_repeats)))
            times["sklearn loop"].append(seconds(lambda: sklearn_loop(X, Y_dense)))
            if not skip_ovr:
                times["sklearn OvR"].append(seconds(lambda: sklearn_ovr(X, Y_int64)))
            print(f"  round {r + 1}: " + "  ".join(f"{key} {value[-1]:.4f} s" for key, value in times.items()
                                                    if value) + f"  (load {os.getloadavg()[0]:.2f})", flush=True)
    best = {key: min(value) for key, value in times.items() if value}
    baseline = min(best["sklearn loop"], best.get("sklearn OvR", np.inf))
    row = {"data": name, "documents": X.shape[0], "nnz": X.nnz, **{f"{key} s": value for key, value in best.items()},
           "ratio loop": best["sklearn loop"] / best["mlnb"],
           "ratio OvR": best.get("sklearn OvR", np.nan) / best["mlnb"],
           "ratio 1 thread": baseline / best["mlnb 1 thread"]}
    ratio = baseline / best["mlnb"]
    print(f"  min of {rounds}: mlnb {best['mlnb'] * 1e3:.1f} ms (1 thread {best['mlnb 1 thread'] * 1e3:.1f} ms), "
          f"sklearn loop {best['sklearn loop']:.3f} s ({row['ratio loop']:.1f}×)"
          + (f", OvR {best['sklearn OvR']:.3f} s ({row['ratio OvR']:.1f}×)" if not skip_ovr else "")
          + f"; against the faster: {ratio:.1f}× (1 thread {row['ratio 1 thread']:.1f}×): target ≥ {TARGET:g}× "
          + ("met" if ratio >= TARGET else "NOT met"), flush=True)
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES), help="training documents")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds (minimum taken)")
    parser.add_argument("--mlnb-repeats", type=int, default=3, help="mlnb fits per round")
    parser.add_argument("--skip-ovr", action="store_true", help="time the sklearn loop only")
    parser.add_argument("--out", default="results/bench")
    args = parser.parse_args()
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, numba threads {numba.get_num_threads()}, "
          f"Python {platform.python_version()}, numpy {np.__version__}; load {os.getloadavg()[0]:.2f}")
    warm = make_rcv1_like(n_documents=3000, n_features=2000, n_categories=5, seed=1)
    fit_mlnb(warm.X, warm.Y)  # numba: compile or load the cache
    started = time.perf_counter()
    corpus = make_rcv1_like(n_documents=max(args.sizes), n_features=47_236, n_categories=103,
                            test_fraction=0.5, seed=0)  # the split is not used
    X_all, Y_all = corpus.X, corpus.Y
    del corpus
    print(f"generated {X_all.shape[0]:,} documents in {time.perf_counter() - started:.1f} s")
    rows = []
    for n in sorted(args.sizes):
        rows.append(bench(f"synthetic {n:,}", X_all[:n], Y_all[:n], args.rounds, args.mlnb_repeats, args.skip_ovr))
    del X_all, Y_all
    for path in sorted(RCV1_SUBSETS.glob("rcv1subset*.svm.gz")):
        data = load_svmlight_dataset(path, n_features=47_236, seed=0)
        rows.append(bench(path.name.split(".")[0], data.X, data.Y, args.rounds, args.mlnb_repeats, args.skip_ovr))
    if not RCV1_SUBSETS.is_dir():
        print(f"\nRCV1 subsets: skipped, {RCV1_SUBSETS} not found")
    table = pd.DataFrame(rows)
    print("\n" + table.to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    met = (np.fmin(table["ratio loop"], table["ratio OvR"]) >= TARGET).all()
    print(f"\n≥ {TARGET:g}× scikit-learn (its faster way) on every data set: {'met' if met else 'NOT met'}")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"nb-fit-{time.strftime('%Y%m%d-%H%M%S')}.csv"
    table.to_csv(path, index=False)
    print(f"written: {path}")


if __name__ == "__main__":
    warnings.simplefilter("ignore")  # categories without training positives: counted, not warned
    main()
