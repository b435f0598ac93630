"""The tables of a study's results: summary, per category, curves, differences (pandas)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import scipy.sparse as sp

from mlnb import timings
from mlnb.report.escape import plain

SUMMARY_COLUMNS = {"macro_auc": "macro AUC", "micro_auc": "micro AUC", "micro_f1": "micro F1",
                   "macro_f1": "macro F1", "mean_expected_accuracy": "mean exp. accuracy",
                   "mean_log_loss": "mean log loss"}
MULTICLASS_COLUMNS = {"accuracy": "accuracy", "balanced_accuracy": "balanced acc.", "macro_f1": "macro F1",
                      "weighted_f1": "weighted F1", "macro_auc": "macro AUC (ovr)", "log_loss": "log loss",
                      "top_k_accuracy": "top-k acc."}


def probabilities_defined(run, task: str) -> bool:
    """Whether a run's probabilities mean something: calibrated, or multilabel log-odds (σ(score) =
    P(category | document)), or multiclass joint log-likelihoods / softmax logits (softmax(J) =
    P(class | document): naive Bayes as logistic regression). Not for scores that only rank
    (complement NB, SVM margins) until calibrated."""
    if getattr(run, "probability_scores", None) is not None or getattr(run, "calibration", None) is not None:
        return True
    if task == "multiclass":
        return bool(getattr(run.model, "scores_are_joint_log_likelihoods", True))
    return bool(getattr(run.model, "scores_are_log_odds", True))


def summary_columns(task: str) -> dict:
    return MULTICLASS_COLUMNS if task == "multiclass" else SUMMARY_COLUMNS


def every_score_evaluated(result) -> bool:
    """Whether the evaluation read every test score (AUC, ROC and lift curves, calibration): False for a study
    that kept only each document's best categories (engine.scores = 'top_k'), whose evaluations have no grid."""
    return not result.models or np.asarray(getattr(result.models[0].evaluation, "grid", [0.0])).size > 0


def not_computed(result) -> str:
    """What the way the study held its test scores left out, as the scores' store said it (``ScoreStore.describe``:
    streamed, ``data["streaming"]``; read whole, ``data["test_scores"]``); '' for nothing."""
    data = result.data or {}
    return (data.get("streaming") or {}).get("not_computed") or (data.get("test_scores") or {}).get("not_computed") \
        or ""


def shown_summary_columns(result) -> dict:
    """The summary's columns a report shows: every one, but those no model has a value of where the study did
    not read every score (``every_score_evaluated``: AUC, log loss, … were not computed, not NaN by chance)."""
    columns = summary_columns(result.config.task)
    if every_score_evaluated(result):
        return columns
    return {key: title for key, title in columns.items()
            if any(np.isfinite(run.evaluation.summary.get(key, np.nan)) for run in result.models)}


def summary_table(result) -> pd.DataFrame:
    """One row per model: the headline averages and the time each model took."""
    rows = []
    columns = shown_summary_columns(result)
    for run in result.models:
        row = {"model": run.name, "label": run.label}
        row.update({title: run.evaluation.summary[key] for key, title in columns.items()})
        row.update({"fit s": run.fit_seconds, "score s": run.score_seconds})
        rows.append(row)
    return pd.DataFrame(rows).set_index("model")


def compiling_note(result) -> str:
    """What the fit seconds leave out: the seconds numba spent compiling the kernels during the fits (a first
    run: seconds to minutes) or loading them from its cache (``ModelRun.compile_seconds``), per model, in this
    process; '' when that was nothing."""
    compiled = {run.name: getattr(run, "compile_seconds", 0.0) for run in result.models}
    total = sum(compiled.values())
    if total < 0.005:
        return ""
    each = ", ".join(f"{name} {seconds:.2f} s" for name, seconds in compiled.items() if seconds >= 0.005)
    if timings.compiled_here():
        return f"first run: {total:.2f} s of compiling the kernels ({each}), not counted in fit s"
    return f"fit s leaves out {total:.2f} s of loading the compiled kernels from numba's cache ({each})"


def format_summary(result) -> str:
    """The summary for the terminal: a legend of the model names, then the table."""
    table = summary_table(result)
    legend = "\n".join(f"  {name}: {label}" for name, label in table["label"].items())
    text = "models:\n" + legend + "\n" + table.drop(columns="label").to_string(float_format=lambda v: f"{v:.4f}")
    if compiling_note(result):
        text += "\n" + compiling_note(result)
    first = result.models[0].evaluation.summary
    what = "classes have no test document" if result.config.task == "multiclass" else \
        "categories have no positive or no negative test document"
    untestable = first.get("n_excluded_untestable", first["n_excluded"])
    if untestable:
        text += (f"\n{untestable} of {first['n_categories']} {what}: AUC undefined, left out of the "
                 "macro averages")
    if first.get("n_excluded_by_caller"):
        text += (f"\n{first['n_excluded_by_caller']} categories without a training positive (or negative) are left "
                 "out of every average and comparison (eval.untrainable = 'exclude')")
    for comparison in result.comparisons:
        if comparison.mcnemar is not None:
            m = comparison.mcnemar
            text += (f"\nMcNemar, {comparison.name_a} against {comparison.name_b}: {comparison.name_a} alone right "
                     f"on {m.b}, {comparison.name_b} alone right on {m.c} documents, p = {m.p_value:.3g}")
    return text


def confusion_frame(result) -> pd.DataFrame:
    """Multiclass: one row per model × true class × predicted class, with the count."""
    names = result.category_names
    frames = []
    for run in result.models:
        confusion = run.evaluation.confusion
        true, predicted = np.indices(confusion.shape)
        frames.append(pd.DataFrame({"model": run.name, "true": np.asarray(names)[true.ravel()],
                                    "predicted": np.asarray(names)[predicted.ravel()],
                                    "count": confusion.ravel()}))
    return pd.concat(frames, ignore_index=True)


def metrics_frame(result) -> pd.DataFrame:
    """One row per model × category, with the score interval of each AUC (``metrics.auc_intervals``)."""
    frames = []
    for run in result.models:
        table = run.evaluation.per_category.copy()
        table.insert(0, "model", run.name)
        table.insert(4, "train_pos", result.train_positives.astype(int))
        if run.auc_intervals is not None:
            position = table.columns.get_loc("auc") + 1
            table.insert(position, "auc_low", run.auc_intervals[:, 0])
            table.insert(position + 1, "auc_high", run.auc_intervals[:, 1])
        frames.append(table)
    return pd.concat(frames, ignore_index=True)


def decisions_frame(result) -> pd.DataFrame | None:
    """Multilabel: every model's fitted decision rule (and calibration) per category."""
    frames = []
    for run in result.models:
        if run.decision is None:
            continue
        table = run.decision.to_frame(result.category_names)
        if run.calibration is not None and run.calibration.method != "none":
            calibration = run.calibration.to_frame(result.category_names)
            extra = [c for c in calibration.columns if c not in table.columns]
            table = table.join(calibration[extra].add_prefix("calibration_"))
        table.insert(0, "model", run.name)
        frames.append(table)
    return pd.concat(frames, ignore_index=True) if frames else None


def curve_defined(evaluation) -> np.ndarray:
    """(K,) bool: the categories with at least one positive and one negative test document, n_pos ≥ 1 and
    n_neg ≥ 1, whose ROC (TPR against FPR = fp / n_neg) and lift are defined."""
    table = evaluation.per_category
    return (table["n_pos"].to_numpy() > 0) & (table["n_neg"].to_numpy() > 0)


def curve_frames(result) -> tuple[pd.DataFrame, pd.DataFrame]:
    """ROC on the FPR grid and lift by depth, one row per model × category × grid point, for the categories
    whose curves are defined (``curve_defined``); the others' rows, all NaN, are left out
    (``curves_left_out_sentence``). Columns: roc — model, category, fpr, tpr, roc_lift = tpr / fpr (NaN at
    fpr = 0); lift — model, category, depth, gains, lift = gains / depth (NaN at depth = 0).

    Each column is one array filled model by model, then one DataFrame per table: at 100k categories the
    tables hold millions of rows, and no per-model frame or concatenation copies them."""
    shown = [np.flatnonzero(curve_defined(run.evaluation)) for run in result.models]
    G = result.models[0].evaluation.grid.size if result.models else 0  # grid points, the same for every model
    curves = sum(categories.size for categories in shown)  # (model, category) pairs
    model = np.empty(curves * G, dtype=object)
    category, x = np.empty(curves * G, dtype=np.int64), np.empty(curves * G, dtype=np.float64)
    tpr, gains = np.empty((curves, G)), np.empty((curves, G))
    roc_lift, depth_lift = np.empty_like(tpr), np.empty_like(gains)
    start = 0
    for run, categories in zip(result.models, shown):
        ev, stop = run.evaluation, start + categories.size
        model[start * G:stop * G] = run.name
        category[start * G:stop * G] = np.repeat(categories, G)
        x[start * G:stop * G] = np.tile(ev.grid, categories.size)
        np.take(ev.roc_tpr, categories, axis=0, out=tpr[start:stop])
        np.take(ev.gains, categories, axis=0, out=gains[start:stop])
        for lift, values in ((roc_lift, tpr), (depth_lift, gains)):  # as Evaluation.roc_lift / depth_lift
            lift[start:stop, 0] = np.nan
            np.divide(values[start:stop, 1:], ev.grid[1:], out=lift[start:stop, 1:])
        start = stop
    roc = pd.DataFrame({"model": model, "category": category, "fpr": x, "tpr": tpr.ravel(),
                        "roc_lift": roc_lift.ravel()}, copy=False)
    lift = pd.DataFrame({"model": model, "category": category, "depth": x, "gains": gains.ravel(),
                         "lift": depth_lift.ravel()}, copy=False)
    return roc, lift


def curves_left_out_sentence(result) -> str:
    """'' when every category has defined curves; else which categories the curve tables leave out and why,
    from the counts of the first model's test labels (the same for every model): those without a positive
    test document (no TPR, no gains) and those without a negative one (no FPR; every depth's lift is 1)."""
    if not result.models or not every_score_evaluated(result):  # no curve table written at all
        return ""
    table = result.models[0].evaluation.per_category
    n_pos, n_neg = table["n_pos"].to_numpy(), table["n_neg"].to_numpy()
    left_out = int(np.count_nonzero((n_pos == 0) | (n_neg == 0)))
    if not left_out:
        return ""
    without_positive, without_negative = int(np.count_nonzero(n_pos == 0)), int(np.count_nonzero(n_neg == 0))
    if without_positive and without_negative:
        why = (f" ({without_positive:,} without a positive test document, {without_negative:,} without a negative "
               "one)")
    else:
        why = f", without a {'positive' if without_positive else 'negative'} test document,"
    return (f"`curves/roc_grid.csv` and `curves/lift_grid.csv` hold the {len(table) - left_out:,} of "
            f"{len(table):,} categories with both a positive and a negative test document; the other "
            f"{left_out:,}{why} are left out: a ROC curve needs both.")


def largest_differences(comparison, n: int) -> pd.DataFrame:
    """The n categories where AUC(a) − AUC(b) is largest in size."""
    if n == 0:
        return pd.DataFrame()
    table = comparison.table.rename(columns={"auc_a": f"AUC {comparison.name_a}", "auc_b": f"AUC {comparison.name_b}",
                                             "train_pos": "train pos"})
    table = table.dropna(subset=["difference"])
    order = table["difference"].abs().sort_values(ascending=False).index[:n]
    columns = ["category", "name", "train pos", f"AUC {comparison.name_a}", f"AUC {comparison.name_b}", "difference"]
    return table.loc[order, columns].set_index("category")


#: rules a report can re-run on the test scores alone (scut and scutfbr learn on held-out scores)
RULES_WITHOUT_VALIDATION = ("fixed", "pcut", "rcut")


def decision_rule_f1(result) -> dict[str, dict[str, float]]:
    """Multilabel: {model: {rule: micro F1 on the test documents}} under the rule the model used and
    under every rule that needs no held-out scores (``RULES_WITHOUT_VALIDATION``, with the study's
    eval options), so that a report can say whether its decision conclusion depends on the rule.
    A fixed cut is left out for a model whose scores are not log-odds (uncalibrated complement NB).
    Empty for multiclass studies and for scores not held in memory."""
    from mlnb.decision import fit_decision_rule

    if result.config.task == "multiclass" or result.Y_test is None or not result.models:
        return {}
    ev = result.config.eval
    Y = sp.csr_matrix(result.Y_test, dtype=np.float64)
    pooled = np.ones(Y.shape[1], dtype=bool)
    if ev.untrainable == "exclude":
        pooled[np.asarray(result.untrainable, dtype=int)] = False
    prevalence = np.asarray(result.train_positives, dtype=np.float64) / max(result.data.get("n_train") or 1, 1)
    table = {}
    for run in result.models:
        if run.scores is None:
            continue
        used = result.config.models[run.name].decision or ev.decision
        values = {used: float(run.evaluation.summary["micro_f1"])}
        for rule in RULES_WITHOUT_VALIDATION:
            if rule == used or (rule == "fixed" and not getattr(run.model, "scores_are_log_odds", True)
                                and run.calibration is None):
                continue
            fitted = fit_decision_rule(rule, threshold=ev.threshold, rcut_k=ev.rcut_k, train_prevalence=prevalence)
            values[rule] = _micro_f1(Y, fitted.decide(fitted.reads(run.scores, run.probability_scores)), pooled)
        table[run.name] = values
    return table


def _micro_f1(Y: sp.csr_matrix, decisions, pooled: np.ndarray) -> float:
    """2 TP / (predicted + positives) over the pooled categories (0 when both are 0)."""
    D = sp.csr_matrix(decisions, dtype=np.float64)[:, pooled]
    Yp = Y[:, pooled]
    tp, total = Yp.multiply(D).sum(), D.sum() + Yp.sum()
    return float(2 * tp / total) if total else 0.0


def markdown_table(frame: pd.DataFrame) -> str:
    """A pipe table; every header, row name and text cell escaped (``plain``): names come from the data."""
    header = "| " + " | ".join(plain(name) for name in [frame.index.name or ""] + list(frame.columns)) + " |"
    rule = "|" + "---|" * (len(frame.columns) + 1)
    body = ["| " + " | ".join([plain(i)] + [_cell(v) for v in row]) + " |"
            for i, row in zip(frame.index, frame.itertuples(index=False))]
    return "\n".join([header, rule, *body])


def _cell(value) -> str:
    if isinstance(value, (float, np.floating)):
        return "n/a" if np.isnan(value) else f"{value:.4f}"
    return plain(value)
