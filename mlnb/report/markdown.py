"""report.md of every results folder: what was run, the numbers, the comparisons, the plots."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from mlnb.config import toml_value
from mlnb.report.tables import largest_differences, markdown_table, summary_table


def comparison_markdown(comparison, top: int = 10) -> str:
    """One paired comparison as a report section."""
    counts, sign = comparison.counts(), comparison.sign
    table = comparison.table.dropna(subset=["p_value"]).sort_values("p_value").head(top)
    shown = table[["category", "name", "train_pos", "auc_a", "auc_b", "difference", "p_value", "p_holm"]]
    return "\n".join([
        f"## Paired comparison: {comparison.name_a} (a) against {comparison.name_b} (b)", "",
        f"a = {comparison.label_a}; b = {comparison.label_b}. "
        "DeLong's test of the AUC difference per category, p-values Holm-corrected over the "
        f"{len(comparison.table) - counts['not_testable']} testable categories; sign test over the raw "
        "differences (Yang & Liu 1999).", "",
        f"- a significantly higher: {counts['a_significantly_better']}; b significantly higher: "
        f"{counts['b_significantly_better']}; no significant difference: {counts['no_significant_difference']}; "
        f"not testable: {counts['not_testable']} (at {comparison.alpha:g} after Holm)",
        f"- sign test: a higher in {sign.wins}, b higher in {sign.losses}, ties {sign.ties}, "
        f"p = {sign.p_value:.3g}", *_mcnemar_lines(comparison), "",
        "Most significant categories (the comparison CSV has all):", "",
        markdown_table(shown.set_index("category")), ""])


def _mcnemar_lines(comparison) -> list[str]:
    m = comparison.mcnemar
    if m is None:
        return []
    return [f"- McNemar's test of the two models' accuracy on the same documents: only a right on {m.b}, "
            f"only b right on {m.c}; {m.method}, p = {m.p_value:.3g}"]


def _models_markdown(result) -> list[str]:
    """Every model's kind and options, so that the report says what was compared."""
    lines = ["## Models", ""]
    for run in result.models:
        spec = result.config.models[run.name]
        defaults = dataclasses.asdict(type(spec.options)())
        changed = [f"{k} = {toml_value(v)}" for k, v in dataclasses.asdict(spec.options).items() if v != defaults[k]]
        lines.append(f"- **{run.name}** — {run.label}; kind `{spec.kind}`"
                     + (f", {', '.join(changed)}" if changed else "") + " (other options at their defaults; "
                     "`config.toml` has all)")
    return lines + [""]


def _untrainable_line(run, names) -> str | None:
    untrainable = getattr(run.model, "untrainable_categories_", np.empty(0, dtype=int))
    if len(untrainable) == 0:
        return None
    weights = getattr(run.model, "weights_", None)
    by_prior = weights is not None and all(not np.any(weights[:, k]) for k in untrainable)
    what = ("score by their prior only" if by_prior else
            "were trained anyway: their scores carry no information about the category")
    return (f"- {run.name}: {len(untrainable)} categories had no positive (or no negative) training document "
            f"and {what}: {', '.join(names[k] for k in untrainable)}")


def _summary_preamble(result) -> list[str]:
    if result.config.task == "multiclass":
        return ["Task: multiclass, one class per document. Each model's decision is the most probable class "
                "(argmax of the posterior softmax of its joint scores); accuracy, F1 and the confusion matrix "
                "come from that decision. Per-class ROC, AUC and lift rank documents by each class's log-odds "
                "against the rest (J_k − logsumexp of the others), never by saturated posteriors; macro AUC is "
                f"one-vs-rest over the classes with test documents; top-k accuracy with k = {result.config.eval.top_k}."]
    return ["Rank metrics (AUC) come from the models' decision scores (log-odds), never from probabilities; "
            "macro averages are over the categories with at least one positive and one negative test document. "
            f"Thresholded metrics (F1, accuracy) cut every category at probability {result.config.eval.threshold:g}."]


def study_markdown(result, plot_files: list[Path]) -> str:
    data = result.data
    report = result.config.report
    lines = [f"# mlnb study: {result.config.name}", "",
             f"Data: {data['name']}, {data['n_train']} training and {data['n_test']} test documents, "
             f"{data['n_features_used']} features ({data['feature_transform']}), "
             f"{data['n_categories']} categories, {data['mean_labels_per_document']:.2f} labels and "
             f"{data['mean_features_per_document']:.1f} distinct features per document. "
             f"Seed {result.config.seed}.", "",
             *_models_markdown(result),
             "## Summary", "",
             *_summary_preamble(result),
             "", markdown_table(summary_table(result)), ""]
    excluded = result.models[0].evaluation.excluded
    if len(excluded):
        lines.append(f"- {len(excluded)} categories left out of the macro averages (no positive or no negative "
                     f"test document): {', '.join(result.category_names[k] for k in excluded)}")
    for run in result.models:
        line = _untrainable_line(run, result.category_names)
        if line:
            lines.append(line)
        if not getattr(run.model, "scores_are_log_odds", True):
            lines.append(f"- {run.name}: its scores rank documents but are not log-odds (e.g. complement Naive "
                         "Bayes): its AUC, ROC and lift are meaningful, its probabilities and thresholded "
                         "metrics are not until it is calibrated")
    for comparison in result.comparisons:
        lines += ["", comparison_markdown(comparison, report.top_differences)]
        differences = largest_differences(comparison, report.top_differences)
        if len(differences):
            lines += [f"Categories where {comparison.name_a} and {comparison.name_b} differ most (AUC):", "",
                      markdown_table(differences), ""]
    if plot_files:
        lines += ["", "## Plots", ""]
        lines += [f"![{p.stem}](plots/{p.name})" for p in plot_files]
    lines += ["", "## Files", "",
              "`metrics.csv` (model × category), `curves/roc_grid.csv`, `curves/lift_grid.csv`, "
              "`comparison.csv` (pair × category), `summary.json`, `config.toml` "
              "(rerun with `mlnb run config.toml`)."]
    return "\n".join(lines) + "\n"
