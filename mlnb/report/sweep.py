"""The results folder of ``mlnb sweep``: the validation spread of every setting, the chosen one as a
runnable config, and its test metrics.

Layout of ``<root>/<name>-sweep/<timestamp>/``::

    sweep.csv      one row per setting (grid order): mean, sd, se, min, max of the metric over the repeats,
                   the means of the other recorded metrics (multilabel: P@j, nDCG@j, PSP@j too)
    repeats.csv    one row per setting × validation repeat
    best.toml      the chosen setting's study config, every key written: `mlnb run best.toml` runs it
    test.csv       the chosen setting refitted on the whole training part, evaluated once on the test part
    summary.json   grid, rule, chosen and best-mean settings, test metrics, ranking at k, provenance
    plots/sweep.png, plots/sweep_ranking.png (multilabel, eval.ranking_k > 0), report.md
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from mlnb.config import config_dict, dump_toml
from mlnb.metrics.evaluation import LOWER_IS_BETTER
from mlnb.report import plots
from mlnb.report.escape import plain
from mlnb.report.folder import atomic_folder
from mlnb.report.plots import _figure, _save
from mlnb.report.provenance import provenance, with_absolute_paths
from mlnb.report.ranking_points import ranking_settings, sweep_ranking_markdown, sweep_ranking_plot
from mlnb.report.results import _write_csv, _write_json
from mlnb.report.tables import markdown_table

__all__ = ["spread_plot", "sweep_markdown", "write_sweep"]

RULES = {"best": "the best mean over the repeats",
         "one_standard_error": "the first setting in grid order whose mean is within one standard error of the "
                               "best mean"}


def spread_plot(sweep, path: Path) -> Path | None:
    """One swept key: the mean with ± one standard error and the min–max of the repeats, the chosen
    setting marked; otherwise the mean's heatmap (``plots.sweep_plot``)."""
    keys = list(sweep.grid)
    if len(keys) != 1:
        return plots.sweep_plot(sweep, path)
    key, metric = keys[0], sweep.metric
    table = sweep.table.reset_index(drop=True)
    numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in table[key])
    x = table[key].to_numpy(dtype=float) if numeric else np.arange(len(table), dtype=float)
    order = np.argsort(x, kind="stable")
    fig, ax = _figure(figsize=(6.5, 4.2))
    mean, se = table[metric].to_numpy(float)[order], table[f"{metric}_se"].to_numpy(float)[order]
    ax.fill_between(x[order], table[f"{metric}_min"].to_numpy(float)[order],
                    table[f"{metric}_max"].to_numpy(float)[order], color="tab:blue", alpha=0.15,
                    label="min–max of the repeats")
    ax.errorbar(x[order], mean, yerr=se, fmt="-o", color="tab:blue", capsize=3, ms=4, label="mean ± 1 se")
    chosen = int(np.flatnonzero([row == sweep.best[key] for row in table[key]])[0])
    ax.plot(x[chosen], table[metric].iloc[chosen], "*", color="tab:red", ms=14, label=f"chosen ({sweep.rule})")
    if numeric and x.min() > 0 and x.max() / x.min() > 20:
        ax.set_xscale("log")
    if not numeric:
        ax.set_xticks(x)
        ax.set_xticklabels([str(v) for v in table[key]])
    what = metric + (f" of category {sweep.category}" if sweep.category >= 0 else "")
    ax.set_xlabel(key)
    ax.set_ylabel(f"validation {what}")
    repeats = int(table["repeats"].max()) if "repeats" in table else 1
    ax.set_title(f"sweep of {sweep.model}: {repeats} validation repeats per setting", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return _save(fig, path)


def _test_line(sweep, what: str) -> str:
    if not sweep.test:
        return "The chosen setting was not tested (sweep.test = false)."
    t = sweep.test
    # the ranking metrics have a sentence of their own in the "Ranking at k" section
    left = ("metric", "value", "n_train", "n_test", "fit_seconds", sweep.metric, *sweep.ranking_metrics)
    others = ", ".join(f"{m} {t[m]:.4f}" for m in t if m not in left)
    return (f"**Test** (refitted on all {t['n_train']} training documents, evaluated once on the {t['n_test']} test "
            f"documents): {what} **{t['value']:.4f}**" + (f"; {others}" if others else "") +
            f". Validation {what} of the same setting: {sweep.best[sweep.metric]:.4f} ± "
            f"{sweep.best[sweep.metric + '_sd']:.4f} (sd over {int(sweep.best['repeats'])} repeats).")


def sweep_markdown(sweep, plot: str | None = None, ranking_plot: str | None = None) -> str:
    """report.md of a sweep; ``plot``: the main figure's path in the folder, shown after the table,
    ``ranking_plot``: the ranking figure's, shown in the "Ranking at k" section."""
    keys = list(sweep.grid)
    metric = sweep.metric
    what = metric + (f" of category {sweep.category}" if sweep.category >= 0 else "")
    s = sweep.config.sweep
    # plain text, not a code span: a swept value may hold a backtick
    chosen = ", ".join(f"{plain(k)} = {plain(sweep.best[k])}" for k in keys)
    lines = [f"# mlnb sweep: {sweep.config.name}", "",
             f"Model {plain(sweep.model)} over {', '.join(map(plain, keys))}; validation {what} on {s.repeats} "
             f"seeded hash splits of the training part (repeat 0: {sweep.n_validation} validation documents, "
             f"{sweep.n_fit} fit the models); "
             "the test part is read once, after the choice.", "",
             f"**Chosen** ({s.rule}: {RULES[s.rule]}): {chosen}: validation {what} {sweep.best[metric]:.4f} "
             f"(se {sweep.best[metric + '_se']:.4f}).", ""]
    if sweep.best_mean and any(sweep.best_mean[k] != sweep.best[k] for k in keys):
        lines += ["The best mean was " + ", ".join(f"{plain(k)} = {plain(sweep.best_mean[k])}" for k in keys) +
                  f" ({sweep.best_mean[metric]:.4f}); within one standard error, the earlier setting of the grid "
                  "was chosen.", ""]
    lines += [_test_line(sweep, what), "", "`best.toml` is the chosen setting's config: `mlnb run best.toml` "
              "refits and reports it.", ""]
    # the ranking metrics have a table of their own ("Ranking at k"): one wide table would not be read
    shown = sweep.table.drop(columns=(["error"] if not sweep.table["error"].astype(bool).any() else [])
                             + list(sweep.ranking_metrics))
    lines += [markdown_table(shown.set_index(keys[0])), ""]
    if metric in LOWER_IS_BETTER:
        lines += [f"Lower {metric} is better.", ""]
    lines += ["The repeats share most of their training documents: the standard errors understate how much a "
              "setting's metric would vary with a new training set.", ""]
    if plot:
        lines += [f"![sweep]({plot})", ""]
    lines += sweep_ranking_markdown(sweep, ranking_plot)
    return "\n".join(lines)


def write_sweep(sweep, root: str | Path = "results", command: str | None = None) -> Path:
    with atomic_folder(Path(root), f"{sweep.config.name}-sweep") as staging:
        folder = staging.path
        _write_csv(sweep.table, folder / "sweep.csv")
        _write_csv(sweep.repeats, folder / "repeats.csv")
        if sweep.best_config is not None:
            (folder / "best.toml").write_text(dump_toml(with_absolute_paths(sweep.best_config)), encoding="utf-8")
        if sweep.test:
            _write_csv(pd.DataFrame([{**{k: sweep.best[k] for k in sweep.grid}, **sweep.test,
                                      "validation_mean": sweep.best[sweep.metric],
                                      "validation_sd": sweep.best[f"{sweep.metric}_sd"],
                                      "validation_se": sweep.best[f"{sweep.metric}_se"],
                                      "repeats": sweep.best["repeats"]}]), folder / "test.csv")
        (folder / "plots").mkdir()
        made = spread_plot(sweep, folder / "plots" / "sweep.png")
        ranked = sweep_ranking_plot(sweep, folder / "plots" / "sweep_ranking.png")
        summary = {"name": sweep.config.name, "model": sweep.model, "metric": sweep.metric,
                   "category": sweep.category, "grid": sweep.grid, "rule": sweep.rule,
                   "repeats": sweep.config.sweep.repeats, "best": sweep.best, "best_mean": sweep.best_mean,
                   "test": sweep.test, "n_fit": sweep.n_fit, "n_validation": sweep.n_validation,
                   **({"ranking_at_k": ranking_settings(sweep.config, sweep.ranking_metrics)}
                      if sweep.ranking_metrics else {}),
                   "seed": sweep.config.seed, **provenance(command), "config": config_dict(sweep.config)}
        _write_json(folder / "summary.json", summary)
        report = sweep_markdown(sweep, f"plots/{made.name}" if made is not None else None,
                                f"plots/{ranked.name}" if ranked is not None else None)
        (folder / "report.md").write_text(report, encoding="utf-8")
    return staging.final
