"""Reference results on the real corpora beside the project (../shared/data).

    python experiments/reference_results.py            # all corpora found
    python experiments/reference_results.py reuters    # one of: reuters, rcv1subset, sms, mulan

For each corpus: Naive Bayes (multinomial and Bernoulli, alpha chosen from a small grid by macro
AUC on a validation split carved from the training part — never the test part), mlnb's
all-categories logistic regression, and scikit-learn's LinearSVC (one-vs-rest, C = 1) as a
sanity anchor, all on the same features. Prints micro/macro F1 (threshold 0.5, or decision 0
for the SVM) and macro AUC on the test part; for the SMS collection also accuracy and the
confusion matrix. Writes results/reference/<corpus>.csv.
"""

from __future__ import annotations

import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.multiclass import OneVsRestClassifier
from sklearn.svm import LinearSVC

from mlnb.config import load_config
from mlnb.metrics import evaluate
from mlnb.models import LogisticRegression, NaiveBayes
from mlnb.study import prepare_data

ROOT = Path(__file__).resolve().parents[1]
ALPHAS = (0.01, 0.03, 0.1, 0.3, 1.0)
CORPORA = {"reuters": ["reuters21578.toml"], "rcv1subset": ["rcv1subset.toml", "rcv1subset2.toml"],
           "sms": ["smsspam.toml"], "mulan": ["mulan_bibtex.toml", "mulan_enron.toml", "mulan_medical.toml"]}


def validation_split(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """A seeded 80/20 split of the training rows: alpha is chosen here, not on the test set."""
    order = np.random.default_rng([seed, 7]).permutation(n)
    cut = int(0.8 * n)
    return np.sort(order[:cut]), np.sort(order[cut:])


def best_alpha(event_model: str, X, Y, seed: int, binarize: bool) -> float:
    fit_rows, check_rows = validation_split(X.shape[0], seed)
    scores = {}
    for alpha in ALPHAS:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = NaiveBayes(event_model=event_model, alpha=alpha, binarize=binarize)
            model.fit(X[fit_rows], Y[fit_rows])
        scores[alpha] = evaluate(Y[check_rows], model.decision_function(X[check_rows])).summary["macro_auc"]
    return max(scores, key=scores.get)


def run_corpus(config_name: str) -> pd.DataFrame:
    config = load_config(ROOT / "configs" / config_name)
    dataset, features = prepare_data(config)
    X, Y = features.transform(dataset.X_train), dataset.Y_train
    X_test, Y_test = features.transform(dataset.X_test), dataset.Y_test
    print(f"\n{config.name}: {X.shape[0]:,} train / {X_test.shape[0]:,} test documents, {X.shape[1]:,} "
          f"features, {Y.shape[1]} categories", flush=True)
    lr = config.models["lr"].options
    nb_options = config.models["nb"].options
    models = []
    for event_model in ("multinomial", "bernoulli"):
        alpha = best_alpha(event_model, X, Y, config.seed, nb_options.binarize)
        models.append((f"NB {event_model} (alpha {alpha:g})",
                       NaiveBayes(event_model=event_model, alpha=alpha, binarize=nb_options.binarize)))
    models.append((f"LR mlnb {lr.updater} ({lr.npasses} passes)",
                   LogisticRegression(updater=lr.updater, lrate=lr.lrate, batch_size=lr.batch_size,
                                      npasses=lr.npasses, l2=lr.l2, random_state=config.seed)))
    models.append(("LinearSVC (C=1, sklearn OvR)", OneVsRestClassifier(LinearSVC(C=1.0))))
    rows = []
    for label, model in models:
        started = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            # int64 labels: scikit-learn 1.9's LabelBinarizer scrambles the columns of an int8
            # indicator matrix with more than 128 columns (seen on bibtex's 159 labels)
            model.fit(X, Y if not isinstance(model, OneVsRestClassifier) else Y.toarray().astype(np.int64))
        seconds = time.perf_counter() - started
        scores = np.asarray(model.decision_function(X_test), dtype=np.float64).reshape(X_test.shape[0], -1)
        if isinstance(model, OneVsRestClassifier):
            # OvR's stand-in for a category without training positives "decides" exactly 0, which
            # the ≥ 0 cut would count as positive; its own predict() says negative: score it so
            untrainable = np.asarray(Y.sum(axis=0)).ravel() == 0
            scores[:, untrainable] = -1.0
        ev = evaluate(Y_test, scores, dataset.category_names)
        s = ev.summary
        row = {"corpus": config.name, "model": label, "micro_f1": s["micro_f1"], "macro_f1": s["macro_f1"],
               "macro_auc": s["macro_auc"], "mean_accuracy": s["mean_accuracy"], "fit_seconds": seconds,
               "n_evaluable": s["n_evaluable"]}
        if Y.shape[1] == 1:
            t = ev.per_category.iloc[0]
            row.update(tp=int(t.tp), fp=int(t.fp), fn=int(t.fn), tn=int(t.tn))
        rows.append(row)
        print(f"  {label:34s} micro F1 {s['micro_f1']:.4f}  macro F1 {s['macro_f1']:.4f}  "
              f"macro AUC {s['macro_auc']:.4f}  accuracy {s['mean_accuracy']:.4f}  ({seconds:.1f} s)", flush=True)
    return pd.DataFrame(rows)


def main(names: list[str]) -> None:
    chosen = names or list(CORPORA)
    out = ROOT / "results" / "reference"
    out.mkdir(parents=True, exist_ok=True)
    for name in chosen:
        frames = []
        for config_name in CORPORA[name]:
            try:
                frames.append(run_corpus(config_name))
            except Exception as error:  # a corpus missing from ../shared is reported, not fatal
                print(f"\n{config_name}: skipped ({error})")
        if frames:
            table = pd.concat(frames, ignore_index=True)
            table.to_csv(out / f"{name}.csv", index=False, float_format="%.4f")
            print(f"written: {out / f'{name}.csv'}")


if __name__ == "__main__":
    main(sys.argv[1:])
