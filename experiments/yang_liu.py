"""Reuters-21578 ModApte-90 against Yang & Liu (SIGIR 1999), Table 1, with per-category thresholds.

    python experiments/yang_liu.py                # writes results/reference/yang_liu.csv
    python experiments/yang_liu.py --rules-only --out t.csv   # the rows of the decision rules alone

Yang & Liu report micro-averaged F1 on the 90 ModApte categories with at least one training and
one test document: SVM 0.8599, kNN 0.8567, LLSF 0.8507, NNet 0.8388, NB 0.7956 (macro F1: SVM
0.5251, NB 0.3886). Their NB, kNN and LLSF decide with per-category thresholds tuned on
training data (SCut); here every model is run with the study's own decision rules, each
learning on the training part only, never the test part: 5-fold out-of-fold scores
(``eval.validation = "kfold"``, the final model refit on all training documents), or one 20%
validation split whose model is kept (``"split"``, ``eval.refit = false``):

  fixed     probability 0.5 (0 for the SVM's margin: its own decision)
  scut      per-category threshold maximising F1 (Yang 2001)
  scutfbr   SCut, falling back to the top-ranked validation document's score when the best
            validation F1 is below 0.1 (SCutFBR.1, as Lewis et al. 2004 used on RCV1)

Then, as Yang & Liu tuned their methods, each model's settings are chosen on the training part
alone: `mlnb sweep` (validation split of the training part, SCutFBR decisions, micro F1) over LR's
lrate × npasses, the SVM's C and NB's alpha; the chosen settings are evaluated with SCutFBR.1
thresholds from 5-fold out-of-fold scores.

The features are configs/reuters21578.toml's (title + body word counts, English stop words
removed, min_df 2: 14,891 words); the models: multinomial NB (alpha 0.1, from the config),
mlnb's all-categories LR (batch 200, 10 passes) and scikit-learn's LinearSVC per category (C 1).
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dataclasses import replace  # noqa: E402

from mlnb.config import load_config  # noqa: E402
from mlnb.studies.sweep import run_sweep  # noqa: E402
from mlnb.study import loop as study_loop  # noqa: E402
from mlnb.study import prepare_data, run_models  # noqa: E402

PUBLISHED = {"linear SVM": (0.8599, 0.5251), "Naive Bayes": (0.7956, 0.3886)}
MODELS = ["models.nb.kind=naive_bayes", "models.lr.kind=logistic", "models.svm.kind=linear_svm",
          "report.paired_tests=false"]
RULES = (("fixed", "split"), ("scut", "kfold"), ("scutfbr", "kfold"), ("scutfbr", "split"))
GRIDS = {"lr": ["models.lr.lrate=0.1,0.3,1", "models.lr.npasses=10,30"], "svm": ["models.svm.C=0.1,0.3,1,3"],
         "nb": ["models.nb.alpha=0.01,0.03,0.1,0.3,1"]}
NAMES = {"nb": "Naive Bayes", "lr": "logistic regression", "svm": "linear SVM"}


_held_out_scores, _held_out = study_loop.held_out_scores, {}


def _held_out_scores_once(config, names, train, seed, labels, backend=None):
    """``mlnb.study.deciding.held_out_scores``, computed once per validation and shared by the decision rules
    that learn from it: "scut" and "scutfbr" with 5 folds learn from the same out-of-fold scores (the same
    models fitted on the same folds of the same documents), so the second rule reads them instead of fitting
    the five folds again; the table is the same, in half the folds' time."""
    key = (repr(replace(config, eval=replace(config.eval, decision="fixed"))), tuple(names), seed,
           train.n_documents)
    if key not in _held_out:
        _held_out[key] = _held_out_scores(config, names, train, seed, labels, backend)
    return _held_out[key]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=str(ROOT / "results" / "reference" / "yang_liu.csv"))
    parser.add_argument("--rules-only", action="store_true",
                        help="only the rows of the decision rules, not the settings tuned by sweeps (tests/"
                             "test_reference_results.py checks these rows on every CI run, the whole table by hand)")
    args = parser.parse_args()
    study_loop.held_out_scores = _held_out_scores_once
    rows = []
    base = load_config(ROOT / "configs" / "reuters21578.toml", MODELS + ["eval.bootstrap=0"])
    dataset, features = prepare_data(base)
    X_train, X_test = features.transform(dataset.X_train), features.transform(dataset.X_test)
    print(f"Reuters-21578 ModApte: {X_train.shape[0]:,} train / {X_test.shape[0]:,} test documents, "
          f"{X_train.shape[1]:,} words, {dataset.n_categories} categories", flush=True)
    for rule, validation in RULES:
        config = load_config(ROOT / "configs" / "reuters21578.toml",
                             MODELS + ["eval.bootstrap=0", f"eval.decision={rule}", f"eval.validation={validation}"])
        started = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            runs = run_models(config, X_train, dataset.Y_train, X_test, dataset.Y_test, dataset.category_names,
                              curve_categories=[])
        for run in runs:
            s = run.evaluation.summary
            published = PUBLISHED.get(NAMES[run.name], (float("nan"), float("nan")))
            rows.append({"model": NAMES[run.name], "decision": rule, "validation": validation,
                         "micro_f1": s["micro_f1"],
                         "macro_f1": s["macro_f1"], "macro_auc": s["macro_auc"],
                         "categories_without_positive_decision": s.get("n_no_positive_predictions"),
                         "published_micro_f1": published[0], "published_macro_f1": published[1]})
            print(f"  {rule:8s} {validation:6s} {NAMES[run.name]:22s} micro F1 {s['micro_f1']:.4f}  macro F1 {s['macro_f1']:.4f}  "
                  f"macro AUC {s['macro_auc']:.4f}", flush=True)
        print(f"  ({rule}: {time.perf_counter() - started:.1f} s)", flush=True)
    # settings chosen on the training part only, then SCutFBR.1 from 5-fold out-of-fold scores
    tuned = []
    for name, grid in ({} if args.rules_only else GRIDS).items():
        only = [f"models.{other}.enabled=false" for other in GRIDS if other != name]
        search = load_config(ROOT / "configs" / "reuters21578.toml",
                             MODELS + only + ["eval.bootstrap=0", "eval.decision=scutfbr", "sweep.metric=micro_f1"])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sweep = run_sweep(search, grid, dataset=dataset)
        chosen = [f"{key}={sweep.best[key]}" for key in sweep.grid]
        print(f"  chosen on validation for {NAMES[name]}: {', '.join(chosen)} (validation micro F1 "
              f"{sweep.best['micro_f1']:.4f})", flush=True)
        tuned += chosen
        rows_setting = ", ".join(c.split(".", 2)[2] for c in chosen)
        config = load_config(ROOT / "configs" / "reuters21578.toml",
                             MODELS + only + chosen + ["eval.bootstrap=0", "eval.decision=scutfbr",
                                                       "eval.validation=kfold"])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            (run,) = run_models(config, X_train, dataset.Y_train, X_test, dataset.Y_test, dataset.category_names,
                                curve_categories=[])
        s = run.evaluation.summary
        published = PUBLISHED.get(NAMES[name], (float("nan"), float("nan")))
        rows.append({"model": NAMES[name] + f" ({rows_setting})", "decision": "scutfbr", "validation": "kfold",
                     "micro_f1": s["micro_f1"], "macro_f1": s["macro_f1"], "macro_auc": s["macro_auc"],
                     "categories_without_positive_decision": s.get("n_no_positive_predictions"),
                     "published_micro_f1": published[0], "published_macro_f1": published[1]})
        print(f"  tuned    kfold  {NAMES[name]:22s} micro F1 {s['micro_f1']:.4f}  macro F1 {s['macro_f1']:.4f}",
              flush=True)
    table = pd.DataFrame(rows)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.out, index=False, float_format="%.4f")
    print(table.to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    print(f"written: {args.out}")


if __name__ == "__main__":
    main()
