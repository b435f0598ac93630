"""Which AdaGrad for the minibatch engine: one step size per coordinate of W, or one per word (row-wise).

    python experiments/lr_updaters.py                       # every corpus found in ../shared/data + the quickstart's
    python experiments/lr_updaters.py quickstart.toml       # one config (from configs/)

For each corpus (its config's split and features) and each model — mlnb's LogisticRegression and
NB-LR (``nb_logistic``) — fits the minibatch engine at 1, 2 and 4 passes with

    adagrad 0.3           one AdaGrad sum per coordinate, lrate 0.3 (LR's default before 2026-11-26)
    rowwise_adagrad 0.3   one sum per word, S_j += mean_k G_jk², the same lrate
    rowwise_adagrad 0.1   one sum per word, lrate 0.1 (LR's default since)

everything else at the engine's defaults (batch 1000, l2 = 1e-4, seed from the config), and prints the
test macro AUC, micro F1 (at 0.5) and mean log loss (per document and category; per document for
a multiclass task) of each. Results go to results/reference/lr_updaters.csv. The defaults follow
from this table: see docs/guide/logistic-regression.md ("Which AdaGrad").
"""

from __future__ import annotations

import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.special import logsumexp

from mlnb.config import load_config
from mlnb.metrics import evaluate
from mlnb.models import LogisticRegression
from mlnb.models.nb_logistic import NBLogisticRegression
from mlnb.study import prepare_data

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = ["rcv1subset.toml", "rcv1subset2.toml", "reuters21578.toml", "mulan_bibtex.toml", "mulan_enron.toml",
           "mulan_medical.toml", "tweets.toml", "quickstart.toml"]
SETTINGS = [("adagrad", 0.3), ("rowwise_adagrad", 0.3), ("rowwise_adagrad", 0.1)]
PASSES = (1, 2, 4)


def mean_log_loss(scores: np.ndarray, Y, task: str) -> float:
    """The test loss the engine minimises: per document and category, softplus(z) − y·z (multilabel), or
    per document, logsumexp(z_i) − z_i·y_i (multiclass), in float64 from the model's decision scores."""
    Y = np.asarray(Y.todense(), dtype=np.float64)
    if task == "multiclass":
        return float(np.mean(logsumexp(scores, axis=1) - np.sum(scores * Y, axis=1)))
    return float(np.mean(np.logaddexp(0.0, scores) - scores * Y))


def run_config(name: str) -> list[dict]:
    config = load_config(ROOT / "configs" / name)
    dataset, features = prepare_data(config)
    X, Y = features.transform(dataset.X_train), dataset.Y_train
    X_test, Y_test = features.transform(dataset.X_test), dataset.Y_test
    task = config.task
    labels = np.asarray(Y.argmax(axis=1)).ravel() if task == "multiclass" else Y
    print(f"\n{name}: {X.shape[0]:,} train / {X_test.shape[0]:,} test, {X.shape[1]:,} features, {Y.shape[1]} "
          f"categories, {task}", flush=True)
    rows = []
    models = [("LR", LogisticRegression)] + ([("NB-LR", NBLogisticRegression)] if task == "multilabel" else [])
    for model_name, Model in models:
        for passes in PASSES:
            cells = []
            for updater, lrate in SETTINGS:
                extra = {"task": task} if Model is LogisticRegression else {}
                model = Model(updater=updater, lrate=lrate, npasses=passes, random_state=config.seed, **extra)
                started = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    model.fit(X, labels)
                seconds = time.perf_counter() - started
                scores = np.asarray(model.decision_function(X_test), dtype=np.float64).reshape(X_test.shape[0], -1)
                summary = evaluate(Y_test, scores).summary
                row = {"corpus": name.removesuffix(".toml"), "model": model_name, "updater": updater,
                       "lrate": lrate, "passes": passes, "macro_auc": summary["macro_auc"],
                       "micro_f1": summary["micro_f1"], "log_loss": mean_log_loss(scores, Y_test, task),
                       "fit_seconds": seconds}
                rows.append(row)
                cells.append(f"{updater} {lrate:g}: AUC {row['macro_auc']:.4f} F1 {row['micro_f1']:.4f} "
                             f"log loss {row['log_loss']:.4f}")
            print(f"  {model_name:5s} {passes} passes | " + " | ".join(cells), flush=True)
    return rows


def main(names: list[str]) -> None:
    rows = []
    for name in names or CONFIGS:
        try:
            rows += run_config(name)
        except Exception as error:  # a corpus missing from ../shared is reported, not fatal
            print(f"\n{name}: skipped ({error})")
    if rows:
        out = ROOT / "results" / "reference" / "lr_updaters.csv"
        pd.DataFrame(rows).to_csv(out, index=False, float_format="%.4f")
        print(f"\nwritten: {out}")


if __name__ == "__main__":
    main(sys.argv[1:])
