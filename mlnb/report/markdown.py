"""report.md of every results folder: what was run, the numbers, the comparisons, the plots."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd

from mlnb.config import toml_value
from mlnb.decision import LEARNED_ON_HELD_OUT
from mlnb.metrics.at_k_study import headline_metrics
from mlnb.metrics.auc_permutation import PERMUTATION_MAX
from mlnb.metrics.bands import LARGE_LABEL_SPACE
from mlnb.report.band_tables import bands_markdown, is_large, listed_names, top_bottom_markdown
from mlnb.report.escape import plain  # every name from the data or the config, as literal Markdown
from mlnb.report.tables import (compiling_note, curves_left_out_sentence, decision_rule_f1, every_score_evaluated,
                                largest_differences, markdown_table, probabilities_defined,
                                shown_summary_columns, summary_table)


def tests_used(comparison) -> str:
    """Which per-category test the testable categories got, e.g. "DeLong's in 31, the exact permutation
    test in 59: those with at most 30 positives or negatives" (``significance.auc_difference_tests``)."""
    used = comparison.tests_used()
    words = f"DeLong's in {used['delong']}"
    if used["permutation"]:
        words += (f", the exact permutation test in {used['permutation']}: those with at most {PERMUTATION_MAX} "
                  "positives or negatives")
    return words


def comparison_markdown(comparison, top: int = 10) -> str:
    """One paired comparison as a report section."""
    counts, sign = comparison.counts(), comparison.sign
    table = comparison.table.dropna(subset=["p_value"]).sort_values("p_value").head(top)
    shown = table[["category", "name", "train_pos", "auc_a", "auc_b", "difference", "p_value", "p_holm"]
                  + (["test"] if "test" in table else [])]
    return "\n".join([
        f"## Paired comparison: {plain(comparison.name_a)} (a) against {plain(comparison.name_b)} (b)", "",
        f"a = {plain(comparison.label_a)}; b = {plain(comparison.label_b)}. "
        f"A test of the AUC difference per category ({tests_used(comparison)}), p-values Holm-corrected over the "
        f"{len(comparison.table) - counts['not_testable']} testable categories; sign test over the raw "
        "differences (Yang & Liu 1999).", "",
        f"- a significantly higher: {counts['a_significantly_better']}; b significantly higher: "
        f"{counts['b_significantly_better']}; no significant difference: {counts['no_significant_difference']}; "
        f"not testable: {counts['not_testable']} (at {comparison.alpha:g} after Holm)",
        f"- sign test: a higher in {sign.wins}, b higher in {sign.losses}, ties {sign.ties}, "
        f"p = {sign.p_value:.3g}" + ("" if comparison.sign_test_has_power() else
                                     " (cannot reject at this number of categories)"),
        *_macro_difference_lines(comparison), *_mcnemar_lines(comparison), "",
        "Most significant categories (the comparison CSV has all):", "",
        markdown_table(shown.set_index("category")), ""])


def _macro_difference_lines(comparison) -> list[str]:
    if comparison.macro_interval is None:
        return []
    low, high = comparison.macro_interval
    return [f"- macro AUC a − b = {comparison.macro_difference:+.4f}, {comparison.level:.0%} paired bootstrap "
            f"interval [{low:+.4f}, {high:+.4f}] (both models on the same resamples, stratified per category)"]


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
                     + (f", {', '.join(map(plain, changed))}" if changed else "") + decided + _trained_on(result, run)
                     + " (other options at their defaults; `config.toml` has all)")
    return lines + [*_split_note(result), ""]


def _trained_on(result, run) -> str:
    """'; fitted on 2,400 training documents, its thresholds learned on 600 held out' and the like."""
    if getattr(run, "n_fit", None) is None:
        return ""
    ev = result.config.eval
    text = f"; fitted on {run.n_fit:,} training documents"
    if run.n_validation:
        what = "its thresholds" if ev.calibration == "none" else "its thresholds and calibration"
        if ev.validation == "kfold":
            text += f", {what} learned on out-of-fold scores of {run.n_validation:,} ({ev.folds} folds)"
        else:
            text += f", {what} learned on {run.n_validation:,} held-out training documents"
    return text


def _split_note(result) -> list[str]:
    """Why a split-validated study's models saw fewer documents than the training part has."""
    n_train = result.data.get("n_train")
    fitted = {getattr(run, "n_fit", None) for run in result.models} - {None}
    if not n_train or not fitted or max(fitted) >= n_train:
        return []
    held = n_train - min(fitted)
    return ["", f"Every model was fitted on the training part minus the {held:,} documents of the validation "
                f"split (eval.validation = 'split', refit = false), {min(fitted):,} of {n_train:,}, so that all are "
                "compared trained on the same documents and the thresholds fit the model evaluated. A run with "
                f"a fixed rule fits on all {n_train:,}: its metrics differ for that reason as well (set eval.refit "
                "= true, or eval.validation = 'kfold', to fit on the whole training part)."]


def _untrainable_line(run, names, config) -> str | None:
    """What one model did with its untrainable categories, and what the study then did with them."""
    from mlnb.study import untrainable_scored_by_prior

    untrainable = getattr(run.model, "untrainable_categories_", np.empty(0, dtype=int))
    if len(untrainable) == 0:
        return None
    policy, replaced = config.eval.untrainable, untrainable_scored_by_prior(config)
    by_prior = getattr(run.model, "untrainable_scored_by_prior_", None)  # a model that says so (sparse weights)
    if by_prior is None:  # else read off its dense weights: no word moves an untrainable category's score
        weights = getattr(run.model, "weights_", None)
        by_prior = weights is not None and all(not np.any(weights[:, k]) for k in untrainable)
    what = "score by their prior only" if by_prior else "were trained anyway"
    evaluated_auc = np.isfinite(run.evaluation.per_category["auc"].to_numpy(dtype=np.float64)).any()
    if not by_prior and not replaced and evaluated_auc:  # the evaluated AUCs are then the model's own
        what += f" ({untrainable_auc_clause(run.evaluation.per_category, untrainable)})"
    if replaced:
        what += f"; the study replaced their scores by the training prior (eval.untrainable = '{policy}')"
    elif policy == "exclude":
        what += "; they are left out of every average and comparison (eval.untrainable = 'exclude')"
    else:
        what += f"; they are kept in the averages as the model scored them (eval.untrainable = '{policy}')"
    return (f"- {run.name}: {len(untrainable)} categories had no positive (or no negative) training document "
            f"and {what}: {listed_names(names, untrainable, len(names) > LARGE_LABEL_SPACE)}")


def untrainable_auc_clause(per_category, categories) -> str:
    """The measured test AUCs of ``categories`` (a per-category table's ``auc``), and which side of ½
    they lie on: a model trained on one class can rank a category backwards, which is information
    (inverted), not none."""
    aucs = per_category["auc"].to_numpy(dtype=np.float64)[np.asarray(categories, dtype=np.int64)]
    aucs = aucs[np.isfinite(aucs)]
    if aucs.size == 0:
        return "no test AUC: no positive and negative test documents"
    low, high = float(aucs.min()), float(aucs.max())
    side = (": below 0.5, inverted" if high < 0.5 else ": above 0.5" if low > 0.5 else
            ": all 0.5, chance" if low == high == 0.5 else ": on both sides of 0.5")
    measured = f"its test AUC is {low:.2f}" if aucs.size == 1 else f"their test AUCs range {low:.2f}–{high:.2f}"
    untested = len(categories) - aucs.size
    return measured + side + (f"; {untested} without a test AUC" if untested else "")


def _summary_preamble(result) -> list[str]:
    if not every_score_evaluated(result):  # each document's k best categories only (engine.scores = 'top_k')
        ev = result.config.eval
        return [f"Each test document's {ev.ranking_k} best-scored categories were kept (engine.scores = 'top_k'), "
                f"not every score. Thresholded metrics (precision, recall, F1) take the {ev.rcut_k} best "
                "categories of each document (RCut), exact per category; macro averages are over the categories "
                "with at least one positive and one negative test document. What was not computed is said "
                "under Data above."]
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
               "the test part; `decisions.csv` has every threshold." if ev.decision in LEARNED_ON_HELD_OUT or
               ev.calibration != "none" else "")
    return ["Rank metrics (AUC, average precision) come from the models' decision scores (log-odds), never from "
            "probabilities; macro averages are over the categories with at least one positive and one negative "
            f"test document. Thresholded metrics (F1, accuracy) {rule} (a model's own `decision` may differ).{learned}"]


def _interval(run, metric: str) -> str:
    low_high = run.intervals.get(metric)
    return f" [{low_high[0]:.4f}, {low_high[1]:.4f}]" if low_high else ""


def _verdict(comparison) -> str:
    """One sentence on a compared pair: who ranks better, by which test, how sure; and what the tests
    could not tell (``Comparison.verdict``: the paired bootstrap of the macro AUC difference, then the
    sign test where it has power, then DeLong + Holm per category)."""
    counts, sign, verdict = comparison.counts(), comparison.sign, comparison.verdict()
    a, b = comparison.name_a, comparison.name_b
    tested = sign.wins + sign.losses
    if tested == 0:
        return f"- {a} against {b}: no category could be compared."
    alpha = f"{comparison.alpha:g}"
    testable = counts["a_significantly_better"] + counts["b_significantly_better"] + counts["no_significant_difference"]
    significant = (f"per category ({tests_used(comparison)}), Holm at {alpha}: {a} significantly higher in "
                   f"{counts['a_significantly_better']}, {b} in {counts['b_significantly_better']} of {testable}")
    macro = f"macro AUC {a} − {b} = {comparison.macro_difference:+.4f}"
    if comparison.macro_interval is not None:
        low, high = comparison.macro_interval
        macro += f", {comparison.level:.0%} paired bootstrap interval [{low:+.4f}, {high:+.4f}]"
    else:
        macro += " (no paired bootstrap: eval.bootstrap = 0 or scores not held in memory)"
    if verdict.sign_test_has_power:
        sign_words = f"sign test: {a} higher in {sign.wins} of {tested} categories, p = {sign.p_value:.2g}"
    else:
        sign_words = (f"the sign test cannot reject with {tested} {'category' if tested == 1 else 'categories'} "
                      f"(its smallest p, 2 · 2^−{tested} = {2 * 0.5 ** tested:.2g}, is not below {alpha})")
    if verdict.winner is not None:
        loser = b if verdict.winner == a else a
        why = {"bootstrap": "the paired bootstrap interval of the macro AUC difference excludes 0",
               "sign test": f"its AUC is higher in more categories than chance would give (sign test at {alpha})",
               "delong": f"significantly higher AUC than {loser} in some categories and lower in none"}[verdict.basis]
        head = f"**{verdict.winner}** ranks better than {loser} ({why})"
    elif comparison.macro_interval is not None:
        head = "no winner in ranking: the paired bootstrap interval of the macro AUC difference contains 0"
    else:
        head = "no winner in ranking: no test rejects equal AUCs"
    line = f"- {a} against {b}: {head}; {macro}; {significant}; {sign_words}."
    if comparison.mcnemar is not None:
        m = comparison.mcnemar
        line += (f" Accuracy: only {a} right on {m.b} documents, only {b} on {m.c} "
                 f"(McNemar p = {m.p_value:.2g}).")
    return line


def _rule_dependence(result, best: str) -> str:
    """' Under the other rules …': the micro F1 of every model under the rules the report could re-run,
    whether the best model changes with the rule, and which rules were not checked."""
    from mlnb.decision import RULES

    table = decision_rule_f1(result)
    if len(table) < 2:
        return ""
    used = {rule for values in table.values() for rule in list(values)[:1]}
    checked = [rule for rule in RULES if rule not in used and all(rule in values for values in table.values())]
    parts, winners = [], {best}
    for rule in checked:
        ranked = sorted(table, key=lambda name: -table[name][rule])
        winners.add(ranked[0])
        what = f"fixed {result.config.eval.threshold:g}" if rule == "fixed" else rule
        parts.append(f"{what}: " + ", ".join(f"{name} {table[name][rule]:.4f}" for name in ranked))
    unchecked = [rule for rule in RULES if rule not in used and rule not in checked]
    text = ""
    if parts:
        verdict = ("the best model depends on the decision rule" if len(winners) > 1 else
                   f"{best} is best under each of them")
        text += f" Under the other rules (micro F1): {'; '.join(parts)} — {verdict}."
    if unchecked:
        text += (f" Not checked: {', '.join(unchecked)} (rules that learn on held-out training scores, which the "
                 "report does not keep, or a probability cut of scores that only rank).")
    return text


def conclusion_lines(result) -> list[str]:
    """The report's opening: which model is better on what, by how much, how sure — in words."""
    ev = result.config.eval
    multiclass = result.config.task == "multiclass"
    level = f"{ev.confidence:.0%}"
    lines = ["## Conclusion", ""]
    key, what = ("macro_auc", "macro AUC (one-vs-rest)") if multiclass else ("macro_auc", "macro AUC")
    ranked = sorted(result.models, key=lambda run: -run.evaluation.summary[key]
                    if run.evaluation.summary[key] == run.evaluation.summary[key] else np.inf)
    if not every_score_evaluated(result) and not multiclass:  # no AUC: the ranking at k says which ranks better
        lines += _ranking_conclusion(result)
    elif ranked and not np.isfinite(ranked[0].evaluation.summary[key]):
        return lines + ["- Nothing could be evaluated: no category has both a positive and a negative test "
                        "document (and both in training, where untrainable categories are excluded), so no "
                        "AUC, average or comparison is defined. Use more documents or other categories.", ""]
    elif ranked:
        best = ranked[0]
        others = "; ".join(f"{run.name} {run.evaluation.summary[key]:.4f}{_interval(run, key)}" for run in ranked[1:])
        lines.append(f"- Ranking: **{best.name}** has the highest {what}, {best.evaluation.summary[key]:.4f}"
                     f"{_interval(best, key)}" + (f" (then {others})" if others else "") +
                     (f"; brackets: {level} bootstrap intervals over test documents." if best.intervals else "."))
    decide, dkey = ("the most probable class", "micro_f1") if multiclass else (None, "micro_f1")
    if not multiclass:
        rules = {run.name: (result.config.models[run.name].decision or ev.decision) for run in result.models}
        decide = ", ".join(sorted(set(rules.values())))
        decide = f"decision rule {decide}" + (f" (threshold {ev.threshold:g})" if "fixed" in rules.values() else "") \
            + (f", each document's {ev.rcut_k} best categories" if "rcut" in rules.values() else "")
    by_f1 = sorted(result.models, key=lambda run: -np.nan_to_num(run.evaluation.summary[dkey], nan=-1))
    baselines = result.models[0].evaluation.baselines if result.models else {}
    random_f1 = baselines.get("prevalence_random", {}).get(dkey)
    name = "accuracy (micro F1)" if multiclass else "micro F1"
    lines.append(f"- Decisions ({decide}): **{by_f1[0].name}** has the highest {name}, "
                 f"{by_f1[0].evaluation.summary[dkey]:.4f}{_interval(by_f1[0], dkey)}; "
                 + "; ".join(f"{run.name} {run.evaluation.summary[dkey]:.4f}" for run in by_f1[1:])
                 + (f". Guessing each category at its training rate would score {random_f1:.4f}." if random_f1 is not None
                    else ".") + ("" if multiclass else _rule_dependence(result, by_f1[0].name)))
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
        what = _untrainable_treatment(result)
        lines.append(f"- {len(result.untrainable)} categories have no positive (or no negative) training document "
                     f"and {what} (eval.untrainable = '{ev.untrainable}').")
    return lines + [""]


def _untrainable_treatment(result) -> str:
    """What the study did with the untrainable categories (``study.untrainable_scored_by_prior``), with
    the test AUCs of each model where they stayed the models' own."""
    from mlnb.study import untrainable_scored_by_prior

    if result.config.eval.untrainable == "exclude":
        return "are left out of every average and comparison"
    if untrainable_scored_by_prior(result.config):
        return "are scored by their training prior in every model, whatever it learned (a constant: AUC 0.5)"
    measured = "; ".join(f"{run.name}: {untrainable_auc_clause(run.evaluation.per_category, result.untrainable)}"
                         for run in result.models)
    return f"are kept in every average as each model scored them ({measured})"


def _ranking_conclusion(result) -> list[str]:
    """The conclusion's ranking line of a study without AUC (``every_score_evaluated`` false): the best model by
    the first ranking metric (P@1), with its interval, then the others."""
    if not result.ranking_ks or not result.models:
        return []
    metric = f"P@{result.ranking_ks[0]}"

    def value(run) -> float:
        return run.ranking["metrics"].get(metric, float("nan"))

    def shown(run) -> str:
        low_high = run.ranking["intervals"].get(metric)
        return f"{value(run):.4f}" + (f" [{low_high[0]:.4f}, {low_high[1]:.4f}]" if low_high and None not in
                                      low_high else "")

    ranked = sorted(result.models, key=lambda run: -np.nan_to_num(value(run), nan=-1.0))
    others = "; ".join(f"{run.name} {shown(run)}" for run in ranked[1:])
    level = f"{result.config.eval.confidence:.0%}"
    return [f"- Ranking: **{ranked[0].name}** has the highest {metric}, {shown(ranked[0])}"
            + (f" (then {others})" if others else "")
            + (f"; brackets: {level} bootstrap intervals over test documents" if ranked[0].ranking["intervals"]
               else "") + f". No AUC: each test document's {result.config.eval.ranking_k} best categories were kept, "
            "not every score (engine.scores = 'top_k')."]


def baselines_markdown(result) -> list[str]:
    """The baselines (trivial, and the training prior's ranking) beside the models' summary metrics."""
    if not result.models:
        return []
    columns = {k: v for k, v in shown_summary_columns(result).items() if k in result.models[0].evaluation.summary}
    rows, every_score = [], every_score_evaluated(result)
    for name, values in result.models[0].evaluation.baselines.items():
        if not every_score and not any(values.get(k) is not None and not np.isnan(float(values[k])) for k in columns):
            continue  # a baseline of none of the shown metrics: the prior's ranking, where no AUC was computed
        rows.append("| " + " | ".join([f"*{name.replace('_', ' ')}*"] + [_cell(values.get(k)) for k in columns]) + " |")
    prior = ("; *prior*: every document scored by its category's training prior, the prior_baseline model — a "
             "chance ranking in each category, but pooled it ranks the frequent categories first, the micro AUC a "
             "model must beat; its rank metrics only" if every_score else "")
    return ["Baselines on the same test documents, for the table above (*always no*: every score −∞; "
            f"*prevalence random*: each category guessed at its training rate, expected values{prior}):", "",
            "| | " + " | ".join(columns.values()) + " |", "|" + "---|" * (len(columns) + 1), *rows, ""]


def _cell(value) -> str:
    if value is None:
        return "n/a"
    value = float(value)
    return "n/a" if value != value else ("∞" if value == np.inf else f"{value:.4f}")


#: how each way of training on Dask (``mlnb.study.fitting.DASK_TRAINING``, as the fitted model recorded it) ran
DASK_TRAINING_SENTENCES = {
    "one_worker": "trained on one worker by the one-machine minibatch solver over every partition in order, as in one process",
    "mixing": "trained by iterative parameter mixing: every worker trains on its own partitions from the same "
              "state, and their parameters are averaged after each round (engine.mix_every)",
    "sums": "trained by full passes whose sums every worker adds to, as in one process",
}


def _dask_training_clauses(dask_training: dict) -> list[str]:
    """'; lr trained on one worker ...' for each way the study's models trained on Dask (summary.json's
    ``dask_training``, model -> how); nothing for a summary written before it was recorded."""
    by_how = {}
    for name, how in dask_training.items():
        by_how.setdefault(how, []).append(plain(name))
    return [f"; {', '.join(names)} {DASK_TRAINING_SENTENCES.get(how, how)}" for how, names in by_how.items()]


def _streaming_lines(streaming: dict | None) -> list[str]:
    """How a streaming study read its data and ran, where it held the test scores, and what it did not compute."""
    if not streaming:
        return []
    engine = streaming["engine"]
    where = "in one process" if engine["kind"] == "local" else \
        f"on a Dask cluster of {engine['workers']} workers ({engine['scheduler']})" + \
        "".join(_dask_training_clauses(streaming.get("dask_training") or {}))
    not_computed = f" Not computed: {streaming['not_computed']}." if streaming.get("not_computed") else ""
    held = streaming.get("scores", "spilled to disk")
    return [f"Streamed in chunks of {streaming['chunk_size']} documents (logistic regression shuffles within "
            f"{streaming['shuffle_buffer']} chunks), {where}; test scores held {held}.{not_computed}", ""]


def _ranking_cell(value, interval) -> str:
    if value is None or not np.isfinite(value):
        return "n/a"
    if interval and interval[0] is not None and interval[1] is not None:
        return f"{value:.4f} ({interval[0]:.4f}–{interval[1]:.4f})"
    return f"{value:.4f}"


def _ranking_sentence(comparison: dict, metric: str) -> str:
    """What the paired difference of ``metric`` says, from its numbers: which model is higher, by how much,
    its interval and p-value; "not distinguishable" when the interval holds 0 (or disagrees with the estimate)."""
    a, b = plain(comparison["a"]), plain(comparison["b"])
    d = comparison["differences"][metric]
    difference, low, high, p = d["difference"], d["low"], d["high"], d["p_value"]
    if not all(v is not None and np.isfinite(v) for v in (difference, low, high)):
        return f"{metric}: {a} and {b} cannot be compared (no finite difference or interval)"
    numbers = (f"{comparison['level']:.0%} paired bootstrap interval of {a} − {b} {low:+.4f} to {high:+.4f}"
               + (f", p = {p:.3g}" if p is not None and np.isfinite(p) else ""))
    if low > 0 and difference > 0:
        return f"{a}'s {metric} is {difference:.4f} higher than {b}'s ({numbers})"
    if high < 0 and difference < 0:
        return f"{a}'s {metric} is {-difference:.4f} lower than {b}'s ({numbers})"
    return f"{a} and {b} are not distinguishable by {metric} (difference {difference:+.4f}; {numbers})"


def ranking_markdown(result) -> list[str]:
    """The "Ranking at k" section: every model's ranking metrics with their intervals, and one sentence per
    comparison of the best model by P@1 against another (its P@1, nDCG@k and PSP@k differences), each
    clause derived from the numbers."""
    if not result.ranking_ks:
        return []
    ev = result.config.eval
    k = result.ranking_ks[-1]
    metrics = headline_metrics(ev.ranking_k, result.ranking_propensity_scored)
    rows = {run.label: [_ranking_cell(run.ranking["metrics"].get(m), run.ranking["intervals"].get(m))
                        for m in metrics] for run in result.models}
    frame = pd.DataFrame.from_dict(rows, orient="index", columns=metrics).rename_axis("model")
    propensity = (f" PSP@{k} and PSnDCG@{k} weigh each correct category by its inverse propensity (Jain, Prabhu & "
                  f"Varma 2016, A = {ev.propensity_a:g}, B = {ev.propensity_b:g}, from the training counts), "
                  "normalised by the best attainable ranking's." if result.ranking_propensity_scored else
                  " No propensity-scored metrics: fewer than 3 training documents.")
    if ev.bootstrap:
        intervals = (f" In parentheses: {ev.confidence:.0%} percentile bootstrap intervals over the test documents "
                     f"({ev.bootstrap} resamples; coverage resamples the categories).")
    else:
        intervals = " No intervals or comparisons: eval.bootstrap = 0."
    lines = ["", f"## Ranking at k (k = {k})", "",
             f"Each test document's {k} best-scored categories per model (equal scores: the lower category first). "
             "P@j: share of the j best that are true; R@j: share of the document's true categories among them; "
             "nDCG@j: their discounted gain over the best possible; all averaged over the test documents (one "
             f"without a true category counts 0). coverage@{k}: share of the categories with a test positive "
             f"ranked correctly in some document's {k} best." + propensity + intervals, "",
             markdown_table(frame)]
    comparisons = result.ranking_comparisons
    if comparisons:
        lines += ["", f"{plain(comparisons[0]['a'])} has the highest {comparisons[0]['by']}; against each "
                  "other model (p: paired randomisation test, swapping the two models' rankings per document):", ""]
        # the metric that chose the best model, the ranking's quality at k, and its propensity-weighted one
        shown = [m for m in (comparisons[0]["by"], f"nDCG@{k}", f"PSP@{k}") if m in comparisons[0]["differences"]]
        for comparison in comparisons:
            lines.append(f"- {plain(comparison['a'])} against {plain(comparison['b'])}: "
                         + "; ".join(_ranking_sentence(comparison, m) for m in shown) + ".")
    return lines


def study_markdown(result, plot_files: list[Path]) -> str:
    data = result.data
    report = result.config.report
    lines = [f"# mlnb study: {result.config.name}", "",
             *conclusion_lines(result),
             f"Data: {plain(data['name'])}, {data['n_train']} training and {data['n_test']} test documents, "
             f"{data['n_features_used']} features ({data['feature_transform']}), "
             f"{data['n_categories']} categories, {data['mean_labels_per_document']:.2f} labels and "
             f"{data['mean_features_per_document']:.1f} distinct features per document. "
             f"Seed {result.config.seed}." +
             (f" Train/test split: {plain(data['split'])}." if data.get("split") else "") +
             (f" {plain(data['text_features']['sentence'])}" if data.get("text_features") else ""), "",
             *_streaming_lines(data.get("streaming")),
             *([f"Test scores held {data['test_scores']['scores']}. Not computed: "
                f"{data['test_scores']['not_computed']}.", ""] if (data.get("test_scores") or {}).get("not_computed")
               else []),
             *_models_markdown(result),
             "## Summary", "",
             *_summary_preamble(result),
             "", markdown_table(summary_table(result)), "",
             *([f"{compiling_note(result)}.", ""] if compiling_note(result) else []), *baselines_markdown(result)]
    table = result.models[0].evaluation.per_category
    untestable = table.index[table["excluded"] == "no test positive or negative"] if "excluded" in table else []
    if len(untestable):
        lines.append(f"- {len(untestable)} categories left out of the macro averages (no positive or no negative "
                     f"test document): {listed_names(result.category_names, untestable, is_large(result))}")
    for run in result.models:
        line = _untrainable_line(run, result.category_names, result.config)
        if line:
            lines.append(line)
        multiclass = result.config.task == "multiclass"
        if not probabilities_defined(run, result.config.task) and every_score_evaluated(result):  # else RCut decided
            lines.append(f"- {run.name}: its scores rank documents but are not "
                         f"{'joint log-likelihoods' if multiclass else 'log-odds'} (e.g. complement Naive "
                         "Bayes): its AUC, ROC and lift are meaningful, its probabilities and thresholded "
                         "metrics are not until it is calibrated")
        elif multiclass and getattr(run.model, "score_type", None) == "joint_log_likelihood":
            lines.append(f"- {run.name}: its scores are joint log-likelihoods J_c = log P(c) + log P(x | c) (naive "
                         "Bayes); their softmax is its posterior P(c | x), so its accuracy, log loss, calibration "
                         "and expected accuracy are defined as for logistic regression, and its per-class "
                         "rankings use the class log-odds J_c − logsumexp of the others")
    lines += ranking_markdown(result) + bands_markdown(result) + top_bottom_markdown(result)
    for comparison in result.comparisons:
        lines += ["", comparison_markdown(comparison, report.top_differences)]
        differences = largest_differences(comparison, report.top_differences)
        if len(differences):
            lines += [f"Categories where {plain(comparison.name_a)} and {plain(comparison.name_b)} differ most "
                      "(AUC):", "",
                      markdown_table(differences), ""]
    if plot_files:
        lines += ["", "## Plots", ""]
        lines += [f"![{p.stem}](plots/{p.name})" for p in plot_files]
    curve_files = "`curves/roc_grid.csv`, `curves/lift_grid.csv`, " if every_score_evaluated(result) else ""
    compared = "`comparison.csv` (pair × category), " if result.comparisons else ""
    lines += ["", "## Files", "",
              f"`metrics.csv` (model × category), {curve_files}{compared}`summary.json`, `config.toml` "
              "(rerun with `mlnb run config.toml`)."]
    if curves_left_out_sentence(result):
        lines += ["", curves_left_out_sentence(result)]
    return "\n".join(lines) + "\n"
