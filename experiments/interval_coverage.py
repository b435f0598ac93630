"""Coverage of the bootstrap intervals a report states, by simulation against a known population.

    python experiments/interval_coverage.py [--repetitions 400] [--documents 2000] [--boot 200]

A population of 200,000 documents × 20 categories (prevalences log-spaced from 0.3 to 0.003, so a
test set of 2,000 holds ~600 down to ~6 positives of a category) is scored by two models: each
category's score is d_k·y + noise − c, the noise of model b correlated with a's (ρ = 0.7), so
their per-category AUCs differ by a known amount. The population's own micro AUC, macro F1 (the
decision: score ≥ 0) and macro AUC difference a − b are the true values. Each repetition draws a
test set of ``--documents`` documents from the population without replacement and computes
``bootstrap_intervals`` (micro AUC, macro F1, macro AUC) and ``paired_bootstrap_intervals`` (macro
AUC a − b) at 95 %; a test set with a category of fewer than 2 positives is drawn again (the
intervals' fixed category set is then the population's). It prints each interval's coverage with
its standard error, √(c(1 − c)/R), then that of each category's AUC interval against the
population's AUC of that category, by band of its test positives: the score interval that
``metrics.csv`` reports (``mlnb.metrics.auc_intervals``) and the DeLong Wald one it replaced.

``--corpus FILE.svm[.gz]`` takes a real population instead: the corpus's split, LR (model a) and NB
(model b) of configs/quickstart.toml fitted on its training part, and its test part's labels and
scores as the population — the categories with at least 20 positives there — from which each test
set of ``--documents`` is drawn with replacement (the population is then exactly the empirical
distribution the bootstrap assumes).

What docs/guide/statistics.md says each interval covers is this script's output
(experiments/README.md, *Interval coverage*).
"""

from __future__ import annotations

import argparse

import numpy as np

from mlnb.metrics import auc_confidence_intervals, evaluate
from mlnb.metrics.auc_intervals import category_auc_intervals
from mlnb.metrics.uncertainty import bootstrap_intervals, paired_bootstrap_intervals

#: bands of a category's test positives for the coverage of its AUC interval
POSITIVE_BANDS = ((2, 5), (6, 20), (21, None))
POPULATION = 200_000
CATEGORIES = 20
CORRELATION = 0.7


def population(rng):
    """(Y (N, K) bool, scores_a, scores_b (N, K) float64)."""
    prevalence = np.geomspace(0.3, 0.003, CATEGORIES)
    Y = rng.random((POPULATION, CATEGORIES)) < prevalence
    separation_a = np.linspace(1.0, 3.0, CATEGORIES)
    separation_b = separation_a - np.linspace(0.0, 0.6, CATEGORIES)
    noise_a = rng.normal(size=Y.shape)
    noise_b = CORRELATION * noise_a + np.sqrt(1 - CORRELATION**2) * rng.normal(size=Y.shape)
    offset = np.log((1 - prevalence) / prevalence) / 2  # so that score ≥ 0 decides yes for a few
    return Y, separation_a * Y + noise_a - offset, separation_b * Y + noise_b - offset


def corpus_population(path: str):
    """(Y, scores of LR, scores of NB) on the test part of a corpus, both fitted on its training part."""
    import warnings

    from mlnb.config import load_config
    from mlnb.data.svmlight import load_svmlight_dataset
    from mlnb.study import run_models

    data = load_svmlight_dataset(path, seed=0)
    train, test = data.train_index, data.test_index
    config = load_config("configs/quickstart.toml", ["eval.bootstrap=0"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # untrainable categories: not kept below
        runs = {run.name: run for run in run_models(config, data.X[train], data.Y[train], data.X[test], data.Y[test],
                                                    data.category_names, wanted=["nb", "lr"])}
    Y = data.Y[test].toarray().astype(bool)
    kept = Y.sum(axis=0) >= 20
    return Y[:, kept], runs["lr"].scores[:, kept].astype(np.float64), runs["nb"].scores[:, kept].astype(np.float64)


def truth(Y, a, b) -> dict:
    ev_a, ev_b = evaluate(Y, a).summary, evaluate(Y, b).summary
    return {"micro_auc": ev_a["micro_auc"], "macro_f1": ev_a["macro_f1"], "macro_auc": ev_a["macro_auc"],
            "paired macro_auc a − b": ev_a["macro_auc"] - ev_b["macro_auc"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repetitions", type=int, default=400)
    parser.add_argument("--documents", type=int, default=2000)
    parser.add_argument("--boot", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--corpus", help="an svmlight corpus whose test part is the population")
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    Y, a, b = corpus_population(args.corpus) if args.corpus else population(rng)
    replace = bool(args.corpus)
    true = truth(Y, a, b)
    covered = {name: 0 for name in true}
    category_auc = evaluate(Y, a).per_category["auc"].to_numpy()
    per_category = {(method, band): [0, 0, 0.0] for method in ("score", "wald") for band in POSITIVE_BANDS}
    redrawn = 0
    for r in range(args.repetitions):
        while True:
            rows = rng.choice(Y.shape[0], args.documents, replace=replace)
            if (Y[rows].sum(axis=0) >= 2).all():
                break
            redrawn += 1
        y, s_a, s_b = Y[rows], a[rows], b[rows]
        single = bootstrap_intervals(y, s_a, decisions=s_a >= 0, metrics=("micro_auc", "macro_f1", "macro_auc"),
                                     n_boot=args.boot, seed=r)
        paired = paired_bootstrap_intervals(y, s_a, s_b, n_boot=args.boot, seed=r)
        intervals = {**single, "paired macro_auc a − b": paired["macro_auc"]}
        for name, (low, high) in intervals.items():
            covered[name] += low <= true[name] <= high
        count_per_category(per_category, y, s_a, category_auc)
    R = args.repetitions
    print(f"{args.corpus or 'synthetic'}: population {Y.shape[0]} × {Y.shape[1]}; {R} test sets of {args.documents} "
          f"documents ({redrawn} redrawn), {args.boot} resamples, nominal 95 %")
    for name, count in covered.items():
        c = count / R
        print(f"{name:24s} true {true[name]:.4f}  coverage {100 * c:.1f} % ± {100 * np.sqrt(c * (1 - c) / R):.1f}")
    print("one category's AUC interval (model a), by test positives:")
    for (method, (low, high)), (hits, total, width) in per_category.items():
        c = hits / max(total, 1)
        print(f"  {method:5s} {low}–{high or ''} positives: {total:6d} intervals, coverage {100 * c:.1f} % "
              f"± {100 * np.sqrt(c * (1 - c) / max(total, 1)):.1f}, mean width {width / max(total, 1):.3f}")


def count_per_category(tally: dict, y, scores, category_auc) -> None:
    """Add each category's hits and counts, by band of its test positives, for the score interval
    (``category_auc_intervals``, the report's) and the DeLong Wald one it replaced."""
    positives = y.sum(axis=0)
    for method, intervals in (("score", category_auc_intervals(y, scores)),
                              ("wald", auc_confidence_intervals(y, scores))):
        hit = (intervals[:, 0] <= category_auc) & (category_auc <= intervals[:, 1])
        for low, high in POSITIVE_BANDS:
            band = (positives >= low) & (positives <= (high or positives.max())) & np.isfinite(intervals[:, 0])
            tally[method, (low, high)][0] += int(hit[band].sum())
            tally[method, (low, high)][1] += int(band.sum())
            tally[method, (low, high)][2] += float(np.sum(intervals[band, 1] - intervals[band, 0]))


if __name__ == "__main__":
    main()
