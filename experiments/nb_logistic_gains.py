"""What NB features add to logistic regression (Wang & Manning 2012's NBSVM, with the log loss).

    python experiments/nb_logistic_gains.py                 # Reuters-21578 + both RCV1 subsets
    python experiments/nb_logistic_gains.py reuters         # one of: reuters, rcv1subset, rcv1subset2
    python experiments/nb_logistic_gains.py --no-tuned      # the default rows only

On each data set, on the same features and with the study's engine settings:

  * NB     multinomial Naive Bayes on word presence, alpha 1: exactly the log-count
           ratios R that NB-LR starts from, plus each category's prior;
  * LR     mlnb's all-categories logistic regression (AdaGrad);
  * NB-LR  the same engine on the NB-scaled features: mlnb's defaults (alpha 1, beta 1,
           binarized), and Wang & Manning's (alpha 1, beta 0.25, binarized);
  * NB-LR tuned (unless --no-tuned): beta in {0.25, 0.5, 0.75, 1} and binarize in {True,
           False} (False: R from the summed feature values, LR on R ∘ x) chosen by macro AUC
           on a seeded 80/20 validation split of the training part (never the test part),
           then refitted on the whole training part; everything else as the default row.

Engine settings: Reuters batch_size 200, npasses 10 (configs/reuters21578.toml); RCV1 subsets
the defaults (batch_size 1000, npasses 2). Metrics on the test part with mlnb.metrics.evaluate:
macro AUC, micro F1 and macro F1 (threshold 0.5). Fit seconds are the best of --repeats fits
(3) and exclude numba's one-off compilation (warmed up first). Writes
results/reference/nb_logistic.csv.

The data sets are built as the configs build them (written out here so that this script does
not depend on the config schema):
  reuters21578   configs/reuters21578.toml: ModApte-90, count vectorizer, English stop words,
                 min_df 2 (vocabulary and min_df from the training part)
  rcv1subset*    configs/rcv1subset*.toml: LYRL2004 log TF-IDF, seeded (0) 50/50 split
"""

from __future__ import annotations

import argparse
import itertools
import os
import platform
import subprocess
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

import mlnb
from mlnb.data.reuters import load_reuters21578
from mlnb.data.svmlight import load_svmlight_dataset
from mlnb.data.synthetic import make_rcv1_like
from mlnb.data.text import TextOptions
from mlnb.features import FeatureTransform
from mlnb.metrics import evaluate
from mlnb.models import LogisticRegression, NaiveBayes
from mlnb.models.nb_logistic import NBLogisticOptions, NBLogisticRegression

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
SEED = 0
BETAS = (0.25, 0.5, 0.75, 1.0)
DATASETS = ("reuters", "rcv1subset", "rcv1subset2")


def load(name: str):
    """(label, X_train, Y_train, X_test, Y_test, engine settings) as the study's config builds them."""
    if name == "reuters":
        data = load_reuters21578(DATA / "reuters21578", min_train_per_topic=1, min_test_per_topic=1,
                                 text_options=TextOptions(vectorizer="count", stop_words="english"))
        features = FeatureTransform("none", min_df=2).fit(data.X_train)
        engine = dict(batch_size=200, npasses=10)
        label = "reuters21578"
    else:
        path = DATA / "rcv1subset" / f"{'rcv1subset1' if name == 'rcv1subset' else name}.svm.gz"
        data = load_svmlight_dataset(path, n_features=47236, index_base=1, test_fraction=0.5, seed=SEED)
        features = FeatureTransform("none").fit(data.X_train)
        engine = {}  # the engine's defaults
        label = name
    return (label, features.transform(data.X_train), data.Y_train, features.transform(data.X_test),
            data.Y_test, engine)


def validation_split(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """A seeded 80/20 split of the training rows (as experiments/reference_results.py)."""
    order = np.random.default_rng([seed, 7]).permutation(n)
    cut = int(0.8 * n)
    return np.sort(order[:cut]), np.sort(order[cut:])


def tuned_settings(X, Y, engine: dict) -> tuple[dict, dict]:
    """(β, binarize) with the best macro AUC on the validation rows, fitted on the other training rows."""
    fit_rows, check_rows = validation_split(X.shape[0], SEED)
    scores = {}
    for beta, binarize in itertools.product(BETAS, (True, False)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a rare category may lose its only positive to the split
            model = NBLogisticRegression(beta=beta, binarize=binarize, random_state=SEED, **engine)
            model.fit(X[fit_rows], Y[fit_rows])
        scores[beta, binarize] = evaluate(Y[check_rows],
                                          model.decision_function(X[check_rows])).summary["macro_auc"]
    beta, binarize = max(scores, key=scores.get)
    return dict(beta=beta, binarize=binarize), scores


def run(name: str, tuned: bool, repeats: int) -> pd.DataFrame:
    label, X, Y, X_test, Y_test, engine = load(name)
    print(f"\n{label}: {X.shape[0]:,} train / {X_test.shape[0]:,} test documents, {X.shape[1]:,} features, "
          f"{Y.shape[1]} categories; engine {engine or 'defaults'}", flush=True)
    defaults = NBLogisticOptions()
    models = [("NB multinomial binarized (alpha 1)",
               lambda: NaiveBayes(event_model="multinomial", alpha=defaults.alpha, binarize=True)),
              ("LR", lambda: LogisticRegression(random_state=SEED, **engine)),
              (f"NB-LR defaults (alpha {defaults.alpha:g}, beta {defaults.beta:g})",
               lambda: NBLogisticRegression(random_state=SEED, **engine)),
              ("NB-LR Wang & Manning (alpha 1, beta 0.25)",
               lambda: NBLogisticRegression(beta=0.25, random_state=SEED, **engine))]
    if tuned:
        chosen, scores = tuned_settings(X, Y, engine)
        print("  validation macro AUC by (beta, binarize): "
              + ", ".join(f"({b:g}, {z}) {s:.4f}" for (b, z), s in scores.items()))
        models.append((f"NB-LR tuned (beta {chosen['beta']:g}, binarize {chosen['binarize']})",
                       lambda: NBLogisticRegression(random_state=SEED, **chosen, **engine)))
    rows = []
    for model_label, build in models:
        seconds = []  # the best of a few fits: the machine is shared, and one slow thread stalls numba
        for _ in range(repeats):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # NB's note on categories without training positives, if any
                started = time.perf_counter()
                model = build().fit(X, Y)  # seeded: every repeat fits the same model
                seconds.append(time.perf_counter() - started)
        seconds = min(seconds)
        summary = evaluate(Y_test, model.decision_function(X_test)).summary
        rows.append({"corpus": label, "model": model_label, "macro_auc": summary["macro_auc"],
                     "micro_f1": summary["micro_f1"], "macro_f1": summary["macro_f1"], "fit_seconds": seconds,
                     "n_evaluable": summary["n_evaluable"],
                     "engine": " ".join(f"{k}={v}" for k, v in engine.items()) or "defaults", "seed": SEED})
        print(f"  {model_label:44s} macro AUC {summary['macro_auc']:.4f}  "
              f"micro F1 {summary['micro_f1']:.4f}  "
              f"macro F1 {summary['macro_f1']:.4f}  ({seconds:.2f} s)", flush=True)
    return pd.DataFrame(rows)


def git_sha() -> str:
    try:
        sha = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                             text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                               capture_output=True, text=True).stdout.strip()
        return sha + ("-dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("datasets", nargs="*", help=f"any of {', '.join(DATASETS)} (default: all)")
    parser.add_argument("--no-tuned", action="store_true", help="skip the validation-tuned NB-LR row")
    parser.add_argument("--repeats", type=int, default=3, help="fits per model; the fastest is reported")
    parser.add_argument("--out", default=str(ROOT / "results" / "reference" / "nb_logistic.csv"))
    args = parser.parse_args()
    unknown = sorted(set(args.datasets) - set(DATASETS))
    if unknown:
        parser.error(f"unknown data set(s) {', '.join(unknown)}: choose from {', '.join(DATASETS)}")
    print(f"mlnb {mlnb.__version__} (git {git_sha()}), numpy {np.__version__}, Python "
          f"{platform.python_version()}, {os.cpu_count()} cores, seed {SEED}")
    warm = make_rcv1_like(n_documents=500, n_features=1000, n_categories=5, seed=1)
    started = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        LogisticRegression(npasses=1).fit(warm.X_train, warm.Y_train)
        NBLogisticRegression(npasses=1).fit(warm.X_train, warm.Y_train)
    print(f"numba compile / cache load: {time.perf_counter() - started:.2f} s (excluded below)")
    table = pd.concat([run(name, not args.no_tuned, args.repeats) for name in args.datasets or DATASETS],
                      ignore_index=True)
    shown = table.drop(columns=["engine", "seed"])
    print("\n" + shown.to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(out, index=False, float_format="%.4f")
    print(f"\nwritten: {out}")


if __name__ == "__main__":
    main()
