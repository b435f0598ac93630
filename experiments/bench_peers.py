"""Benchmark: a study at mlnb's defaults against LIBLINEAR one-vs-rest (LibMultiLabel) at its defaults, and
the evidence for the default decision rule on every corpus beside the project.

    python experiments/bench_peers.py                 # both RCV1 subsets: LIBLINEAR, mlnb's defaults, candidates
    python experiments/bench_peers.py --corpora       # then every multilabel corpus: old defaults against new
    python experiments/bench_peers.py --skip-candidates --corpora --markdown   # the table of docs/guide/decisions.md
    pip install libmultilabel                         # or: pip install -e .[bench]; without it LIBLINEAR is skipped

RCV1 subsets (``configs/rcv1subset.toml``, ``configs/rcv1subset2.toml``: 6,000 documents each, 101 topics,
the configs' seeded hash split with test_fraction 0.5, about 3,000 training and 3,000 test documents):

    LIBLINEAR    LibMultiLabel's ``linear.train_1vsrest(Y, X, options)``, one binary problem per category,
                 decided at decision value > 0 (its ``metric_threshold: 0``), with options
                 ""                      its API default: ``-s 1`` (L2-regularised L2-loss SVM, dual), C = 1,
                                         no bias term
                 "-s 1 -B 1 -e 0.0001"   its RCV1 example (``example_config/rcv1/l2svm.yml``)
    mlnb         ``mlnb.study.run_study`` of the config as a user runs it (``--set`` overrides only for the
                 candidates; ``eval.bootstrap = 0`` and no paired tests, which change no metric here): the
                 defaults, then each candidate decision rule and LR schedule.

Every row's metrics come from the same code, ``mlnb.metrics.evaluate`` (for LIBLINEAR: its decision values as
scores and its decisions; the categories a run evaluates: a training and a test positive and negative):
micro F1, macro F1, macro AUC; nDCG@5 = mean over test documents of DCG@5 / IDCG@5 (0 for a document without
a category; LibMultiLabel's definition); LibMultiLabel's own micro and macro F1 (``linear.compute_metrics``,
macro over all categories) beside them when it is installed. Fit seconds: the minimum over ``--repeats``.
Target (issue 43, item 6): at the defaults, mlnb's LR micro and macro F1 ≥ LIBLINEAR's at each of its
settings, and its macro AUC above LIBLINEAR's.

``--corpora``: every multilabel config of ``configs/`` whose data is in ``../shared/data`` (multiclass
studies decide by the most probable class, whatever the rule), each model's micro F1, macro F1 and macro AUC
under the old default (``eval.decision = "fixed"``, the probability cut 0.5) and the new one. Results go to
results/bench/peers-<time>.csv; the machine is shared: the load average is printed.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
import tomllib
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.sparse as sp

from mlnb.config import load_config
from mlnb.metrics.evaluation import evaluate
from mlnb.study import prepare_data, run_study

ROOT = Path(__file__).resolve().parent.parent
SUBSETS = ("configs/rcv1subset.toml", "configs/rcv1subset2.toml")
#: LibMultiLabel's settings: (label, liblinear options)
LIBLINEAR_SETTINGS = (("LIBLINEAR 1vsrest (API default)", ""),
                      ("LIBLINEAR 1vsrest (-s 1 -B 1 -e 0.0001)", "-s 1 -B 1 -e 0.0001"))
#: what every mlnb row sets: no bootstrap and no paired tests (neither changes a metric of this table)
QUIET = ["eval.bootstrap=0", "report.paired_tests=false"]
#: mlnb candidates: (label, --set overrides); the first is the study at its defaults
CANDIDATES = (
    ("defaults", []),
    ("old default: fixed 0.5", ["eval.decision=fixed"]),
    ("scut", ["eval.decision=scut"]),
    ("scutfbr", ["eval.decision=scutfbr"]),
    ("scutfbr, refit", ["eval.decision=scutfbr", "eval.refit=true"]),
    ("pcut", ["eval.decision=pcut"]),
    ("rcut 2", ["eval.decision=rcut", "eval.rcut_k=2"]),
    ("fixed, 10 passes", ["eval.decision=fixed", "models.lr.npasses=10"]),
    ("pcut, 10 passes", ["eval.decision=pcut", "models.lr.npasses=10"]),
    ("pcut, 10 passes of 100", ["eval.decision=pcut", "models.lr.npasses=10", "models.lr.batch_size=100"]),
    ("pcut, lrate 0.3, 10 passes", ["eval.decision=pcut", "models.lr.npasses=10", "models.lr.lrate=0.3"]),
)
#: --lbfgs: the converged solver too (minutes on 2 cores)
LBFGS = ("pcut, L-BFGS", ["eval.decision=pcut", "models.lr.solver=lbfgs"])
#: the old default of each key whose default this benchmark chose
OLD_DEFAULTS = {"eval.decision": "fixed"}
CORPORA = ("rcv1subset", "rcv1subset2", "reuters21578", "smsspam", "mulan_bibtex", "mulan_enron", "mulan_medical")


def load() -> str:
    return f"load {os.getloadavg()[0]:.2f}"


def ndcg_at(Y, scores: np.ndarray, k: int = 5) -> float:
    """Mean over documents of DCG@k / IDCG@k, DCG@k = Σ_{r ≤ k} y_(r) / log2(r + 1) over the document's k
    top-scored categories (ties to the lower index), IDCG@k that of its min(k, |y|) categories first; 0 for a
    document without a category. k is capped at the number of categories."""
    Y = sp.csr_matrix(Y)
    k = min(k, scores.shape[1])
    top = np.argsort(-scores, axis=1, kind="stable")[:, :k]  # (n, k)
    discount = 1.0 / np.log2(np.arange(k) + 2.0)
    gains = np.asarray(Y[np.arange(Y.shape[0])[:, None], top].todense())  # (n, k) 0/1
    relevant = np.diff(Y.indptr)
    ideal = np.concatenate([[1.0], np.cumsum(discount)])[np.minimum(relevant, k)]
    return float(np.where(relevant > 0, gains @ discount / ideal, 0.0).mean())


def libmultilabel():
    try:
        import libmultilabel.linear as linear
    except ImportError as error:
        print(f"LIBLINEAR skipped: libmultilabel is not installed ({error}); pip install libmultilabel "
              "(or pip install -e .[bench])")
        return None
    return linear


def own_f1(linear, Y, decisions) -> dict:
    """LibMultiLabel's micro and macro F1 of 0/1 decisions (its F1 decides at value > 0)."""
    if linear is None:
        return {"lml_micro_f1": np.nan, "lml_macro_f1": np.nan}
    values = linear.compute_metrics(2.0 * decisions.toarray() - 1.0, Y.toarray(), ["Micro-F1", "Macro-F1"])
    return {"lml_micro_f1": float(values["Micro-F1"]), "lml_macro_f1": float(values["Macro-F1"])}


def row(corpus: str, model: str, setting: str, summary: dict, ndcg: float, fit: float, extra: dict) -> dict:
    return {"corpus": corpus, "model": model, "setting": setting, "micro_f1": summary["micro_f1"],
            "macro_f1": summary["macro_f1"], "macro_auc": summary["macro_auc"], "ndcg5": ndcg, "fit_s": fit, **extra}


def liblinear_rows(linear, config_path: str, repeats: int) -> list[dict]:
    config = load_config(config_path, QUIET)
    dataset, _ = prepare_data(config)
    X_train, X_test = dataset.X_train.astype(np.float64).tocsr(), dataset.X_test.astype(np.float64).tocsr()
    Y_train, Y_test = sp.csr_matrix(dataset.Y_train), sp.csr_matrix(dataset.Y_test)
    rows = []
    for label, options in LIBLINEAR_SETTINGS:
        seconds = []
        for _ in range(repeats):
            started = time.perf_counter()
            model = linear.train_1vsrest(Y_train, X_train, options=options, verbose=False)
            seconds.append(time.perf_counter() - started)
        scores = np.asarray(linear.predict_values(model, X_test))
        decisions = sp.csr_matrix((scores > 0).astype(np.int8))
        summary = evaluate(Y_test, scores, decisions=decisions, Y_train=Y_train).summary
        rows.append(row(Path(config_path).stem, "liblinear", label, summary, ndcg_at(Y_test, scores), min(seconds),
                        own_f1(linear, Y_test, decisions)))
        print(f"  {label:<42} {describe(rows[-1])}  ({load()})", flush=True)
    return rows


def study_rows(linear, config_path: str, label: str, overrides: list[str], repeats: int, models=None) -> list[dict]:
    """One study per repeat; metrics of the last, fit seconds the minimum over the repeats."""
    config = load_config(config_path, QUIET + overrides)
    fits = {}
    for _ in range(repeats):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # convergence notes of the candidates: the table says what matters
            result = run_study(config)
        for run in result.models:
            fits[run.name] = min(fits.get(run.name, np.inf), run.fit_seconds)
    rows = []
    for run in result.models:
        if models is not None and run.name not in models:
            continue
        Y = sp.csr_matrix(result.Y_test)
        rows.append(row(Path(config_path).stem, run.name, label, run.evaluation.summary, ndcg_at(Y, run.scores),
                        fits[run.name], {**own_f1(linear, Y, sp.csr_matrix(run.decisions)),
                                          "rule": run.decision.rule if run.decision is not None else ""}))
        print(f"  {run.name + ': ' + label:<42} {describe(rows[-1])}  ({load()})", flush=True)
    return rows


def describe(r: dict) -> str:
    own = ("" if np.isnan(r["lml_micro_f1"])
           else f"  [LibMultiLabel's F1: {r['lml_micro_f1']:.3f} / {r['lml_macro_f1']:.3f}]")
    return (f"micro F1 {r['micro_f1']:.3f}  macro F1 {r['macro_f1']:.3f}  macro AUC {r['macro_auc']:.4f}  "
            f"nDCG@5 {r['ndcg5']:.3f}  fit {r['fit_s']:.2f} s{own}")


def check_target(rows: list[dict]) -> bool | None:
    """Whether, on every subset, the default study's LR meets or beats every LIBLINEAR row on micro and
    macro F1 (and LibMultiLabel's own F1 where measured) and beats it on macro AUC; None: no LIBLINEAR row."""
    table, met, checked = pd.DataFrame(rows), True, False
    for corpus, part in table.groupby("corpus", sort=False):
        lr = part[(part["model"] == "lr") & (part["setting"] == "defaults")]
        peers = part[part["model"] == "liblinear"]
        if lr.empty or peers.empty:
            continue
        lr = lr.iloc[0]
        for _, peer in peers.iterrows():
            pairs = [("micro F1", "micro_f1", ">="), ("macro F1", "macro_f1", ">="), ("macro AUC", "macro_auc", ">")]
            if not np.isnan(peer["lml_micro_f1"]):
                pairs += [("LibMultiLabel's micro F1", "lml_micro_f1", ">="),
                          ("LibMultiLabel's macro F1", "lml_macro_f1", ">=")]
            for name, key, sense in pairs:
                ok = lr[key] >= peer[key] if sense == ">=" else lr[key] > peer[key]
                met, checked = met and bool(ok), True
                print(f"  {corpus}: {name} {lr[key]:.4f} {sense} {peer[key]:.4f} ({peer['setting']}): "
                      f"{'met' if ok else 'NOT met'}")
    return met if checked else None


def corpora_rows(linear, corpora, repeats: int) -> list[dict]:
    old = [f"{key}={value}" for key, value in OLD_DEFAULTS.items()]
    rows = []
    for corpus in corpora:
        path = f"configs/{corpus}.toml"
        table = tomllib.loads(Path(path).read_text())
        if table.get("task", "multilabel") != "multilabel":
            continue
        for label, overrides in (("old defaults", old), ("defaults", [])):
            rows += study_rows(linear, path, label, overrides, repeats)
    return rows


def markdown(rows: list[dict]) -> str:
    """Old defaults against new, one line per corpus and model."""
    table = pd.DataFrame(rows)
    lines = ["| corpus | model | micro F1 | macro F1 | macro AUC |", "|---|---|---|---|---|"]
    for (corpus, model), part in table.groupby(["corpus", "model"], sort=False):
        before = part[part["setting"] == "old defaults"]
        after = part[part["setting"] == "defaults"]
        if before.empty or after.empty:
            continue
        b, a = before.iloc[0], after.iloc[0]
        cells = [f"{b[key]:.3f} → {a[key]:.3f}" for key in ("micro_f1", "macro_f1")]
        cells.append(f"{b['macro_auc']:.4f} → {a['macro_auc']:.4f}")
        lines.append(f"| {corpus} | {model} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=1, help="fits timed per setting (the minimum is shown)")
    parser.add_argument("--skip-candidates", action="store_true", help="only LIBLINEAR and mlnb's defaults")
    parser.add_argument("--lbfgs", action="store_true", help="also LR by L-BFGS (minutes on 2 cores)")
    parser.add_argument("--corpora", action="store_true", help="also every multilabel corpus, old defaults and new")
    parser.add_argument("--markdown", action="store_true", help="print the corpora table as Markdown")
    args = parser.parse_args(argv)
    os.chdir(ROOT)  # the configs' data paths are relative to the project root
    linear = libmultilabel()
    print(f"{platform.machine()}, Python {platform.python_version()}, {os.cpu_count()} CPUs, {load()}")
    rows = []
    for path in SUBSETS:
        print(f"{path}:")
        if linear is not None:
            rows += liblinear_rows(linear, path, args.repeats)
        candidates = CANDIDATES[:1] if args.skip_candidates else CANDIDATES + ((LBFGS,) if args.lbfgs else ())
        for label, overrides in candidates:
            rows += study_rows(linear, path, label, overrides, args.repeats,
                               models=None if label == "defaults" else ["lr"])
    print("target (issue 43 item 6): the default study's LR against LIBLINEAR one-vs-rest")
    met = check_target(rows)
    print("not checked: no LIBLINEAR rows" if met is None else "all met" if met else "NOT all met")
    corpora = []
    if args.corpora:
        print("every multilabel corpus, old defaults → defaults:")
        corpora = corpora_rows(linear, CORPORA, 1)
        if args.markdown:
            print(markdown(corpora))
    out = ROOT / "results" / "bench"
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"peers-{time.strftime('%Y%m%d-%H%M%S')}.csv"
    pd.DataFrame(rows + corpora).to_csv(path, index=False)
    print(f"wrote {path.relative_to(ROOT)} ({load()})")


if __name__ == "__main__":
    main()
