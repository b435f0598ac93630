"""The ranking metrics at k of a sweep or a learning curve in its results folder: a "Ranking at k" section
(a table of the means, the sentence that says what they are) and one figure with a line per metric.

A sweep records the deciding model's P@j, nDCG@j and PSP@j per setting (validation, mean over the repeats),
a curve every model's per training size (test, mean over the seeds) (``mlnb.studies.ranking``). The figure
has one panel per family (P, nDCG, PSP; a family without a finite value is left out) and in each panel one
line per cut-off j — for a curve, one per model and cut-off: colour the model, line style the cut-off.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from mlnb.report.escape import plain
from mlnb.report.tables import markdown_table

__all__ = ["curve_ranking_markdown", "curve_ranking_plot", "ranking_families", "ranking_settings",
           "sweep_ranking_markdown", "sweep_ranking_plot"]

#: line styles of the cut-offs j of a curve's figure, in increasing j (the same model keeps its colour)
CUTOFF_STYLES = ("-", "--", ":", "-.")
CUTOFF_MARKERS = ("o", "s", "^", "D")


def ranking_families(columns) -> dict[str, list[str]]:
    """{family: its columns in order} of ranking columns named family@j: {"P": ["P@1", "P@3", …], …}."""
    families: dict[str, list[str]] = {}
    for column in columns:
        families.setdefault(column.split("@")[0], []).append(column)
    return families


def _cutoff(column: str) -> str:
    return column.split("@")[1]


def ranking_settings(config, columns) -> dict:
    """What summary.json says about the ranking metrics at k recorded: k, the cut-offs, the columns, the
    propensities' A and B."""
    ev = config.eval
    return {"k": ev.ranking_k, "ks": sorted({int(_cutoff(c)) for c in columns}), "metrics": list(columns),
            "propensities": {"A": ev.propensity_a, "B": ev.propensity_b}}


def _what(config, columns, evaluated: str, trained: str) -> str:
    """The sentence that defines the recorded metrics."""
    ev = config.eval
    k = max(int(_cutoff(c)) for c in columns)
    return (f"Each {evaluated} document's {k} best-scored categories (equal scores: the lower category first), "
            "as `mlnb run` ranks them. P@j: share of the j best that are true; nDCG@j: their discounted gain "
            "over the best possible; PSP@j: their propensity-weighted gain over the best attainable (Jain, "
            f"Prabhu & Varma 2016, A = {ev.propensity_a:g}, B = {ev.propensity_b:g}, propensities from {trained}; "
            "n/a below 3 training documents). Means over the documents; a document without a true category "
            "counts 0.")


def sweep_ranking_markdown(sweep, plot_file: str | None = None) -> list[str]:
    """The "Ranking at k" section of a sweep's report: per setting, the deciding model's ranking metrics on
    the validation part (mean over the repeats), the test of the chosen setting, the figure; [] without
    ranking metrics."""
    columns = list(getattr(sweep, "ranking_metrics", ()))
    if not columns:
        return []
    keys = list(sweep.grid)
    k = max(int(_cutoff(c)) for c in columns)
    table = sweep.table[keys + columns].set_index(keys[0])
    repeats = sweep.config.sweep.repeats
    lines = [f"## Ranking at k (k = {k})", "",
             f"{plain(sweep.model)} on the validation part, mean over the {repeats} repeats of each setting. "
             + _what(sweep.config, columns, "validation", "the fit part's training counts")
             + f" The choice is by {sweep.metric}; these are recorded beside it "
             "(`sweep.csv`, per repeat in `repeats.csv`).", "", markdown_table(table), ""]
    if sweep.test:
        shown = [c for c in columns if c in sweep.test]
        lines += ["Test of the chosen setting (refitted on the whole training part, as `mlnb run best.toml` "
                  "measures it): " + ", ".join(f"{c} {_number(sweep.test[c])}" for c in shown) + ".", ""]
    if plot_file:
        lines += [f"![ranking at k]({plot_file})", ""]
    return lines


def curve_ranking_markdown(curve) -> list[str]:
    """The "Ranking at k" section of a learning curve's report: each model's ranking metrics on the test
    part per training size, mean over the seeds; [] without ranking metrics."""
    columns = list(getattr(curve, "ranking_metrics", ()))
    if not columns:
        return []
    k = max(int(_cutoff(c)) for c in columns)
    # the order of the summary metrics' table above it: by model, then by size
    means = curve.table.groupby(["model", "size"])[columns].mean().reset_index()
    return [f"## Ranking at k (k = {k})", "",
            f"Every model on the test part, {_samples(curve.table['seed'].nunique())} of each size. " + _what(curve.config, columns, "test", "each sample's own training counts")
            + " The figure `curve_ranking.png` draws them against the training size.", "",
            markdown_table(means.set_index("model")), ""]


def _samples(count: int) -> str:
    return "one training sample" if count == 1 else f"mean over the {count} training samples"


def _number(value) -> str:
    return "n/a" if value is None or not np.isfinite(value) else f"{value:.4f}"


def _panels(families: dict, figsize_per_panel=(4.2, 3.6)):
    from mlnb.report.plots import _figure

    count = len(families)
    fig, axes = _figure(1, count, figsize=(figsize_per_panel[0] * count + 1.6, figsize_per_panel[1]), squeeze=False)
    return fig, list(axes.ravel())


def _finite_families(frame: pd.DataFrame, columns) -> dict[str, list[str]]:
    """The families with at least one finite mean (PSP@j is n/a throughout below 3 training documents)."""
    return {family: members for family, members in ranking_families(columns).items()
            if np.isfinite(frame[members].to_numpy(dtype=float)).any()}


def sweep_ranking_plot(sweep, path: Path) -> Path | None:
    """The deciding model's validation P@j, nDCG@j, PSP@j (mean over the repeats, band: min–max of the
    repeats) against the swept value — one key with numbers: its values (log scale over a range > 20×),
    otherwise the settings in grid order — the chosen setting marked; None without ranking metrics."""
    from mlnb.report.plots import _save

    columns = list(getattr(sweep, "ranking_metrics", ()))
    table = sweep.table.reset_index(drop=True)
    families = _finite_families(table, columns) if columns else {}
    if not families:
        return None
    keys = list(sweep.grid)
    numeric = len(keys) == 1 and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in table[keys[0]])
    x = table[keys[0]].to_numpy(dtype=float) if numeric else np.arange(len(table), dtype=float)
    order = np.argsort(x, kind="stable")
    chosen = int(np.flatnonzero([all(row[k] == sweep.best[k] for k in keys) for _, row in table.iterrows()])[0])
    repeats = sweep.repeats
    spread = (repeats[repeats["error"] == ""].groupby("setting")[columns].agg(["min", "max"])
              if len(repeats) and "setting" in repeats else None)
    fig, axes = _panels(families)
    for ax, (family, members) in zip(axes, families.items()):
        for i, column in enumerate(members):
            style = CUTOFF_STYLES[i % len(CUTOFF_STYLES)]
            marker = CUTOFF_MARKERS[i % len(CUTOFF_MARKERS)]
            line, = ax.plot(x[order], table[column].to_numpy(dtype=float)[order], style, marker=marker, ms=4,
                            label=column)
            if spread is not None:
                low = spread[(column, "min")].reindex(range(len(table))).to_numpy(dtype=float)
                high = spread[(column, "max")].reindex(range(len(table))).to_numpy(dtype=float)
                ax.fill_between(x[order], low[order], high[order], color=line.get_color(), alpha=0.12, lw=0)
        ax.axvline(x[chosen], ls=":", color="tab:red", lw=1.2)
        if numeric and x.min() > 0 and x.max() / x.min() > 20:
            ax.set_xscale("log")
        if not numeric:
            ax.set_xticks(x)
            labels = [", ".join(f"{row[k]}" for k in keys) for _, row in table.iterrows()]
            ax.set_xticklabels(labels, rotation=45 if len(table) > 3 else 0, ha="right" if len(table) > 3 else "center",
                               fontsize=7)
        ax.set_xlabel(keys[0] if len(keys) == 1 else ", ".join(keys), fontsize=8)
        ax.set_ylabel(f"validation {family}@j", fontsize=9)
        ax.grid(alpha=0.3)
        # above the axes, in one row: inside, the legend hides a line wherever it is put (they span the panel)
        ax.legend(fontsize=8, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=len(members), frameon=False)
    fig.suptitle(f"sweep of {sweep.model}: ranking at k on the validation part, mean over "
                 f"{sweep.config.sweep.repeats} repeats (band: min–max of the repeats; red dotted line: the chosen "
                 f"setting, {sweep.rule})", fontsize=10)
    return _save(fig, path)


def curve_ranking_plot(curve, path: Path) -> Path | None:
    """Every model's test P@j, nDCG@j, PSP@j (mean over the seeds) against the training size (log scale):
    one panel per family, one line per model (colour) and cut-off (line style); None without ranking metrics."""
    from matplotlib.lines import Line2D

    from mlnb.plot import log_scale
    from mlnb.report.plots import _save
    from mlnb.report.style import model_colors

    columns = list(getattr(curve, "ranking_metrics", ()))
    if not columns:
        return None
    means = curve.table.groupby(["model", "size"])[columns].mean().reset_index()
    families = _finite_families(means, columns)
    if not families:
        return None
    colors = model_colors(curve.labels)
    fig, axes = _panels(families)
    for ax, (family, members) in zip(axes, families.items()):
        for name in curve.labels:
            part = means[means["model"] == name]
            for i, column in enumerate(members):
                ax.plot(part["size"], part[column], CUTOFF_STYLES[i % len(CUTOFF_STYLES)],
                        marker=CUTOFF_MARKERS[i % len(CUTOFF_MARKERS)], ms=4, color=colors[name])
        log_scale(ax, "x", means["size"])
        ax.set_xlabel("training documents (log scale)", fontsize=8)
        ax.set_ylabel(f"test {family}@j", fontsize=9)
        ax.set_title(f"{family}@j", fontsize=10)
        ax.grid(alpha=0.3, which="both")
    cutoffs = [_cutoff(c) for c in next(iter(families.values()))]
    handles = ([Line2D([], [], color=colors[name], lw=2, label=name) for name in curve.labels]
               + [Line2D([], [], color="gray", ls=CUTOFF_STYLES[i % len(CUTOFF_STYLES)],
                         marker=CUTOFF_MARKERS[i % len(CUTOFF_MARKERS)], ms=4, label=f"j = {j}")
                  for i, j in enumerate(cutoffs)])
    # outside the axes, right: inside, a legend hides the lines wherever it is put
    axes[-1].legend(handles=handles, fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0)
    seeds = curve.table["seed"].nunique()
    fig.suptitle(f"Ranking at k on the test part: {'one seed' if seeds == 1 else f'mean over {seeds} seeds'} "
                 "(colour: model; line: cut-off j)", fontsize=10)
    return _save(fig, path)
