"""report.md of every results folder: what was run, the numbers, the comparisons, the plots."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from mlnb.config import toml_value
from mlnb.report.tables import largest_differences, markdown_table, summary_table

_MARKDOWN = str.maketrans({c: "\\" + c for c in "\\`*_[]<>|#"})


def plain(text) -> str:
    """Text from a config or a data file (a model's label, a category's name) as literal Markdown on one
    line: line breaks and other control characters become spaces, Markdown's characters are escaped."""
    words = "".join(c if c.isprintable() else " " for c in str(text)).split()
    return " ".join(words).translate(_MARKDOWN)


def comparison_markdown(comparison, top: int = 10) -> str:
    """One paired comparison as a report section."""
    counts, sign = comparison.counts(), comparison.sign
    table = comparison.table.dropna(subset=["p_value"]).sort_values("p_value").head(top)
    shown = table[["category", "name", "train_pos", "auc_a", "auc_b", "difference", "p_value", "p_holm"]]
    return "\n".join([
        f"## Paired comparison: {comparison.name_a} (a) against {comparison.name_b} (b)", "",
        f"a = {plain(comparison.label_a)}; b = {plain(comparison.label_b)}. "
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
        rule = spec.decision or result.config.eval.decision
        decided = ("" if result.config.task == "multiclass" else
                   f"; decides by `{rule}`" + (f", calibrated by `{result.config.eval.calibration}`"
                                                if result.config.eval.calibration != "none" else ""))
        lines.append(f"- **{plain(run.name)}** — {plain(run.label)}; kind `{spec.kind}`"
                     + (f", {', '.join(changed)}" if changed else "") + decided + " (other options at their "
                     "defaults; `config.toml` has all)")
    return lines + [""]


def _untrainable_line(run, names, policy: str = "keep") -> str | None:
    untrainable = getattr(run.model, "untrainable_categories_", np.empty(0, dtype=int))
    if len(untrainable) == 0:
        return None
    weights = getattr(run.model, "weights_", None)
    by_prior = weights is not None and all(not np.any(weights[:, k]) for k in untrainable)
    what = ("score by their prior only" if by_prior else
            "were trained anyway: their scores carry no information about the category")
    what += {"exclude": "; they are left out of every average and comparison (eval.untrainable = 'exclude')",
             "prior": "; the study replaced their scores by the training prior (eval.untrainable = 'prior')",
             "keep": ""}[policy]
    return (f"- {run.name}: {len(untrainable)} categories had no positive (or no negative) training document "
            f"and {what}: {', '.join(plain(names[k]) for k in untrainable)}")


def _summary_preamble(result) -> list[str]:
    if result.config.task == "multiclass":
        return ["Task: multiclass, one class per document. Each model's decision is the most probable class "
                "(argmax of the posterior softmax of its joint scores); accuracy, F1 and the confusion matrix "
                "come from that decision. Per-class ROC, AUC and lift rank documents by each class's log-odds "
                "against the rest (J_k − logsumexp of the others), never by saturated posteriors; macro AUC is "
                f"one-vs-rest over the classes with test documents; top-k accuracy with k = {result.config.eval.top_k}."]
    ev = result.config.eval
    rule = {"fixed": f"cut every category at probability {ev.threshold:g}",
            "scut": f"use per-category thresholds maximising validation {ev.decision_metric} (SCut)",
            "scutfbr": f"use SCut thresholds, or the rank-{ev.fbr_rank} score where the best validation F1 is below "
                       f"{ev.fbr:g} (SCutFBR)",
            "pcut": "give each category its training share of the test documents (PCut)",
            "rcut": f"take the {ev.rcut_k} best categories of each document (RCut)"}[ev.decision]
    learned = (f" Thresholds and calibration learn on held-out training documents ({ev.validation}), never on "
               "the test part; `decisions.csv` has every threshold." if ev.decision in ("scut", "scutfbr") or
               ev.calibration != "none" else "")
    return ["Rank metrics (AUC, average precision) come from the models' decision scores (log-odds), never from "
            "probabilities; macro averages are over the categories with at least one positive and one negative "
            f"test document. Thresholded metrics (F1, accuracy) {rule} (a model's own `decision` may differ).{learned}"]


def _interval(run, metric: str) -> str:
    low_high = run.intervals.get(metric)
    return f" [{low_high[0]:.4f}, {low_high[1]:.4f}]" if low_high else ""


def _verdict(comparison) -> str:
    """One sentence on a compared pair: who ranks better per category, how often, how sure."""
    counts, sign = comparison.counts(), comparison.sign
    a, b = comparison.name_a, comparison.name_b
    tested = sign.wins + sign.losses
    if tested == 0:
        return f"- {a} against {b}: no category could be compared."
    leader, wins = (a, sign.wins) if sign.wins >= sign.losses else (b, sign.losses)
    significant = (f"significantly (DeLong, Holm at {comparison.alpha:g}) higher for {a} in "
                   f"{counts['a_significantly_better']} and for {b} in {counts['b_significantly_better']}")
    if sign.p_value < 0.05:
        sure = "clearly" if sign.p_value < 0.01 else "probably"
        verdict = f"{leader} ranks {sure} better — its AUC is higher in {wins} of {tested} categories"
    else:
        verdict = (f"no clear winner in ranking — {leader}'s AUC is higher in {wins} of {tested} categories, "
                   "no more than chance would give")
    line = f"- {a} against {b}: {verdict} (sign test p = {sign.p_value:.2g}); {significant}."
    if comparison.mcnemar is not None:
        m = comparison.mcnemar
        line += (f" Accuracy: only {a} right on {m.b} documents, only {b} on {m.c} "
                 f"(McNemar p = {m.p_value:.2g}).")
    return line


def conclusion_lines(result) -> list[str]:
    """The report's opening: which model is better on what, by how much, how sure — in words."""
    ev = result.config.eval
    multiclass = result.config.task == "multiclass"
    level = f"{ev.confidence:.0%}"
    lines = ["## Conclusion", ""]
    key, what = ("macro_auc", "macro AUC (one-vs-rest)") if multiclass else ("macro_auc", "macro AUC")
    ranked = sorted(result.models, key=lambda run: -run.evaluation.summary[key]
                    if run.evaluation.summary[key] == run.evaluation.summary[key] else np.inf)
    if ranked and not np.isfinite(ranked[0].evaluation.summary[key]):
        return lines + ["- Nothing could be evaluated: no category has both a positive and a negative test "
                        "document (and both in training, where untrainable categories are excluded), so no "
                        "AUC, average or comparison is defined. Use more documents or other categories.", ""]
    if ranked:
        best = ranked[0]
        others = "; ".join(f"{run.name} {run.evaluation.summary[key]:.4f}{_interval(run, key)}" for run in ranked[1:])
        lines.append(f"- Ranking: **{best.name}** has the highest {what}, {best.evaluation.summary[key]:.4f}"
                     f"{_interval(best, key)}" + (f" (then {others})" if others else "") +
                     (f"; brackets: {level} bootstrap intervals over test documents." if best.intervals else "."))
    decide, dkey = ("the most probable class", "micro_f1") if multiclass else (None, "micro_f1")
    if not multiclass:
        rules = {run.name: (result.config.models[run.name].decision or ev.decision) for run in result.models}
        decide = ", ".join(sorted(set(rules.values())))
        decide = f"decision rule {decide}" + (f" (threshold {ev.threshold:g})" if "fixed" in rules.values() else "")
    by_f1 = sorted(result.models, key=lambda run: -np.nan_to_num(run.evaluation.summary[dkey], nan=-1))
    baselines = result.models[0].evaluation.baselines if result.models else {}
    random_f1 = baselines.get("prevalence_random", {}).get(dkey)
    name = "accuracy (micro F1)" if multiclass else "micro F1"
    lines.append(f"- Decisions ({decide}): **{by_f1[0].name}** has the highest {name}, "
                 f"{by_f1[0].evaluation.summary[dkey]:.4f}{_interval(by_f1[0], dkey)}; "
                 + "; ".join(f"{run.name} {run.evaluation.summary[dkey]:.4f}" for run in by_f1[1:])
                 + (f". Guessing each category at its training rate would score {random_f1:.4f}." if random_f1 is not None
                    else "."))
    ranking_only = [run.name for run in result.models if not getattr(run.model, "scores_are_log_odds", True)
                    and run.calibration is None
                    and (result.config.models[run.name].decision or ev.decision) == "fixed"]
    if ranking_only and not multiclass:
        lines.append(f"- {', '.join(ranking_only)}: ranking scores, not probabilities — at a probability cut their "
                     "decisions mean nothing; compare them by AUC, or decide with a rank rule (scut, scutfbr, "
                     "pcut, rcut) or after calibration.")
    silent = [f"{run.name} ({run.evaluation.summary['n_no_positive_predictions']:.0f})" for run in result.models
              if run.evaluation.summary.get("n_no_positive_predictions")]
    if silent and not multiclass:
        advice = ("; a per-category rule (eval.decision = 'scut' or 'scutfbr') usually changes that"
                  if ev.decision == "fixed" else "")
        lines.append(f"- Categories with no positive decision at all: {', '.join(silent)} — their F1 is 0{advice}.")
    lines += [_verdict(comparison) for comparison in result.comparisons]
    if len(result.untrainable):
        what = {"exclude": "are left out of every average and comparison",
                "prior": "are scored by their training prior in every model",
                "keep": "are kept as each model scored them (their scores carry no information)"}[ev.untrainable]
        lines.append(f"- {len(result.untrainable)} categories have no positive (or no negative) training document "
                     f"and {what} (eval.untrainable = '{ev.untrainable}').")
    return lines + [""]


def baselines_markdown(result) -> list[str]:
    """The trivial baselines beside the models' summary metrics."""
    if not result.models:
        return []
    from mlnb.report.tables import summary_columns

    columns = {k: v for k, v in summary_columns(result.config.task).items() if k in result.models[0].evaluation.summary}
    rows = []
    for name, values in result.models[0].evaluation.baselines.items():
        rows.append("| " + " | ".join([f"*{name.replace('_', ' ')}*"] + [_cell(values.get(k)) for k in columns]) + " |")
    return ["Trivial baselines on the same test documents, for the table above (*always no*: every score −∞; "
            "*prevalence random*: each category guessed at its training rate; expected values):", "",
            "| | " + " | ".join(columns.values()) + " |", "|" + "---|" * (len(columns) + 1), *rows, ""]


def _cell(value) -> str:
    if value is None:
        return "n/a"
    value = float(value)
    return "n/a" if value != value else ("∞" if value == np.inf else f"{value:.4f}")


def _streaming_lines(streaming: dict | None) -> list[str]:
    """How a streaming study read its data and ran, where it held the test scores, and what it did not compute."""
    if not streaming:
        return []
    engine = streaming["engine"]
    where = "in one process" if engine["kind"] == "local" else \
        f"on a Dask cluster of {engine['workers']} workers ({engine['scheduler']}); logistic regression by " \
        "parameter mixing: each worker one pass over its partitions from the same state, then their average"
    not_computed = f" Not computed: {streaming['not_computed']}." if streaming.get("not_computed") else ""
    held = streaming.get("scores", "spilled to disk")
    return [f"Streamed in chunks of {streaming['chunk_size']} documents (logistic regression shuffles within "
            f"{streaming['shuffle_buffer']} chunks), {where}; test scores held {held}.{not_computed}", ""]


def study_markdown(result, plot_files: list[Path]) -> str:
    data = result.data
    report = result.config.report
    lines = [f"# mlnb study: {result.config.name}", "",
             *conclusion_lines(result),
             f"Data: {data['name']}, {data['n_train']} training and {data['n_test']} test documents, "
             f"{data['n_features_used']} features ({data['feature_transform']}), "
             f"{data['n_categories']} categories, {data['mean_labels_per_document']:.2f} labels and "
             f"{data['mean_features_per_document']:.1f} distinct features per document. "
             f"Seed {result.config.seed}." + (f" Train/test split: {data['split']}." if data.get("split") else ""), "",
             *_streaming_lines(data.get("streaming")),
             *_models_markdown(result),
             "## Summary", "",
             *_summary_preamble(result),
             "", markdown_table(summary_table(result)), "", *baselines_markdown(result)]
    table = result.models[0].evaluation.per_category
    untestable = table.index[table["excluded"] == "no test positive or negative"] if "excluded" in table else []
    if len(untestable):
        lines.append(f"- {len(untestable)} categories left out of the macro averages (no positive or no negative "
                     f"test document): {', '.join(plain(result.category_names[k]) for k in untestable)}")
    for run in result.models:
        line = _untrainable_line(run, result.category_names, result.config.eval.untrainable)
        if line:
            lines.append(line)
        if not getattr(run.model, "scores_are_log_odds", True) and run.calibration is None:
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
