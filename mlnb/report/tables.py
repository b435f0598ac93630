"""The tables of a study's results: summary, per category, curves, differences (pandas)."""

from __future__ import annotations

import numpy as np
import pandas as pd

SUMMARY_COLUMNS = {"macro_auc": "macro AUC", "micro_auc": "micro AUC", "micro_f1": "micro F1",
                   "macro_f1": "macro F1", "mean_expected_accuracy": "mean exp. accuracy",
                   "mean_log_loss": "mean log loss"}
MULTICLASS_COLUMNS = {"accuracy": "accuracy", "balanced_accuracy": "balanced acc.", "macro_f1": "macro F1",
                      "weighted_f1": "weighted F1", "macro_auc": "macro AUC (ovr)", "log_loss": "log loss",
                      "top_k_accuracy": "top-k acc."}


def summary_columns(task: str) -> dict:
    return MULTICLASS_COLUMNS if task == "multiclass" else SUMMARY_COLUMNS


def summary_table(result) -> pd.DataFrame:
    """One row per model: the headline averages and the time each model took."""
    rows = []
    columns = summary_columns(result.config.task)
    for run in result.models:
        row = {"model": run.name, "label": run.label}
        row.update({title: run.evaluation.summary[key] for key, title in columns.items()})
        row.update({"fit s": run.fit_seconds, "score s": run.score_seconds})
        rows.append(row)
    return pd.DataFrame(rows).set_index("model")


def format_summary(result) -> str:
    """The summary for the terminal: a legend of the model names, then the table."""
    table = summary_table(result)
    legend = "\n".join(f"  {name}: {label}" for name, label in table["label"].items())
    text = "models:\n" + legend + "\n" + table.drop(columns="label").to_string(float_format=lambda v: f"{v:.4f}")
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
    """One row per model × category, with the DeLong interval of each AUC."""
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


def curve_frames(result) -> tuple[pd.DataFrame, pd.DataFrame]:
    """ROC on the FPR grid and lift by depth, one row per model × category × grid point."""
    roc, lift = [], []
    for run in result.models:
        ev = run.evaluation
        K, G = ev.roc_tpr.shape
        category = np.repeat(np.arange(K), G)
        x = np.tile(ev.grid, K)
        roc_lift = np.hstack([np.full((K, 1), np.nan), ev.roc_lift]).ravel()
        depth_lift = np.hstack([np.full((K, 1), np.nan), ev.depth_lift]).ravel()
        roc.append(pd.DataFrame({"model": run.name, "category": category, "fpr": x,
                                 "tpr": ev.roc_tpr.ravel(), "roc_lift": roc_lift}))
        lift.append(pd.DataFrame({"model": run.name, "category": category, "depth": x,
                                  "gains": ev.gains.ravel(), "lift": depth_lift}))
    return pd.concat(roc, ignore_index=True), pd.concat(lift, ignore_index=True)


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


def markdown_table(frame: pd.DataFrame) -> str:
    header = "| " + " | ".join([frame.index.name or ""] + list(frame.columns)) + " |"
    rule = "|" + "---|" * (len(frame.columns) + 1)
    body = ["| " + " | ".join([str(i)] + [_cell(v) for v in row]) + " |"
            for i, row in zip(frame.index, frame.itertuples(index=False))]
    return "\n".join([header, rule, *body])


def _cell(value) -> str:
    if isinstance(value, (float, np.floating)):
        return "n/a" if np.isnan(value) else f"{value:.4f}"
    return str(value)
