"""Matplotlib figures of a study (PNG): the classic NB-vs-LR plots.

Each function takes the study result (or a comparison) and a path, draws one
figure and saves it. The figures of single evaluations are the public ones of
``mlnb.plot`` (ROC, lift, expected accuracy, AUC scatter, reliability), given
the runs' evaluations; this module adds what only a study has (the runs'
names, calibrations, training counts, comparisons, sweeps). Every model keeps
one colour across the plots of a study (``style.model_colors``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from mlnb import plot
from mlnb.metrics.bands import BANDS, band_summary, frequency_bands
from mlnb.plot import log_scale as _log_scale
from mlnb.report.style import model_colors
from mlnb.study import StudyResult


def study_colors(result: StudyResult) -> dict[str, str]:
    return model_colors([run.name for run in result.models])


def pair_colors(comparison) -> tuple[str, str]:
    """Colours of a and b when they come from saved runs (``mlnb compare``)."""
    return model_colors(["b", "a"])["a"], model_colors(["b", "a"])["b"]


def _figure(nrows: int = 1, ncols: int = 1, *, figsize: tuple[float, float], **subplots):
    """(figure, axes) drawn by Agg into a file, without pyplot: nothing global is registered (the
    figure is freed with its last reference) and the user's pyplot backend is left alone."""
    fig = Figure(figsize=figsize)
    FigureCanvasAgg(fig)
    return fig, fig.subplots(nrows, ncols, **subplots)


def _save(fig, path: Path) -> Path:
    fig.tight_layout()
    return _save_laid_out(fig, path)


def _save_laid_out(fig, path: Path) -> Path:
    """A figure of ``mlnb.plot``, laid out there, saved as it is: without a colorbar a second ``tight_layout``
    would measure every text of the figure again only to find the same places (the same PNG bytes)."""
    fig.savefig(path, dpi=120)
    return path


def _probability_models(result: StudyResult) -> tuple[list, list]:
    """(runs whose probabilities are defined — log-odds, multiclass joint log-likelihoods (NB as LR),
    or calibrated — names of those whose scores only rank)."""
    from mlnb.report.tables import probabilities_defined

    runs = [run for run in result.models if probabilities_defined(run, result.config.task)]
    return runs, [run.name for run in result.models if run not in runs]


def _evaluations(result: StudyResult, runs=None) -> dict:
    """{run name: Evaluation} of ``runs`` (default: every run), in config order."""
    return {run.name: run.evaluation for run in (result.models if runs is None else runs)}


def _not_shown(names: list) -> str | None:
    return f"not shown: {', '.join(names)} (ranking scores, not probabilities)" if names else None


def accuracy_per_category(result: StudyResult, path: Path) -> Path:
    """Expected accuracy per category index (``mlnb.plot.accuracy_per_category``). Models whose scores
    are not probabilities (complement NB) are left out, with a note."""
    shown, left_out = _probability_models(result)
    figure = plot.accuracy_per_category(_evaluations(result, shown), colors=study_colors(result),
                                        note=_not_shown(left_out), prevalence_from=result.models[0].evaluation)
    return _save_laid_out(figure, path)


def roc_for_category(result: StudyResult, k: int, path: Path) -> Path:
    """Exact ROC curves of every model for category k, with the chance diagonal (``mlnb.plot.roc``)."""
    return _save_laid_out(plot.roc(_evaluations(result), k, colors=study_colors(result)), path)


def lift_for_category(result: StudyResult, k: int, path: Path) -> Path:
    """ROC lift and lift by depth of every model for category k (``mlnb.plot.lift``)."""
    return _save_laid_out(plot.lift(_evaluations(result), k, colors=study_colors(result)), path)


def auc_scatter(result: StudyResult, comparison, path: Path) -> Path:
    """AUC of model b (x) against model a (y) per tested category of the comparison, coloured by
    training positives (``mlnb.plot.auc_scatter``)."""
    table = comparison.table[comparison.table["difference"].notna()]  # tested categories only (not excluded)
    figure = plot.auc_scatter(table["auc_b"], table["auc_a"], names=(comparison.name_b, comparison.name_a),
                              descriptions=(comparison.label_b, comparison.label_a),
                              train_positives=table["train_pos"])
    return _save(figure, path)  # laid out again: a colorbar's axes take a second pass to settle


def calibration(result: StudyResult, path: Path) -> Path:
    """Reliability diagram over all (document, category) pairs (``mlnb.plot.reliability``), calibrated
    models beside their scores before calibration."""
    shown, left_out = _probability_models(result)
    before = {run.name: run.uncalibrated for run in shown if run.uncalibrated is not None}
    methods = {run.name: run.calibration.method for run in shown if run.uncalibrated is not None}
    figure = plot.reliability(_evaluations(result, shown), colors=study_colors(result), before=before,
                              calibrated=methods, note=_not_shown(left_out))
    return _save_laid_out(figure, path)


def _frequency_bins(positives: np.ndarray) -> np.ndarray:
    """Bin of each category by training positives, log-spaced: 0 (none), then [1, 2), [2, 4), [4, 8), …
    (powers of 2), so that each bin of the long tail holds categories of the same order of frequency."""
    positives = np.asarray(positives, dtype=np.float64)
    return np.where(positives > 0, np.floor(np.log2(np.maximum(positives, 1))).astype(np.int64) + 1, 0)


def _bin_label(b: int) -> str:
    return "0" if b == 0 else (f"{2 ** (b - 1):,}" if b == 1 else f"{2 ** (b - 1):,}–{2 ** b - 1:,}")


def _binned_auc_by_frequency(result: StudyResult, path: Path) -> Path:
    """``auc_by_frequency`` of a large label space: categories binned by training positives (powers of 2),
    each model's median AUC per bin (line) and interquartile range (band); below, the categories with a test
    AUC per bin."""
    fig, (top, bottom) = _figure(2, 1, figsize=(8, 6), gridspec_kw={"height_ratios": [3, 1]}, sharex=True)
    bins = _frequency_bins(result.train_positives)
    present = np.unique(bins)
    colors = study_colors(result)
    counted = np.zeros(present.size)
    for run in result.models:
        auc = run.evaluation.per_category["auc"].to_numpy(np.float64)
        stats = np.full((3, present.size), np.nan)
        for i, b in enumerate(present):
            values = auc[(bins == b) & np.isfinite(auc)]
            counted[i] = max(counted[i], values.size)
            if values.size:
                stats[:, i] = np.percentile(values, [25, 50, 75])
        top.fill_between(np.arange(present.size), stats[0], stats[2], color=colors[run.name], alpha=0.2, lw=0)
        top.plot(np.arange(present.size), stats[1], "-o", ms=3, color=colors[run.name], label=f"{run.name}: median")
    top.axhline(0.5, ls="--", color="gray", lw=1, label="chance")
    top.set_ylabel("test AUC (median; band: 25th–75th percentile)")
    top.set_title(f"AUC against category training frequency, {len(bins):,} categories binned by training "
                  "positives", fontsize=10)
    top.grid(alpha=0.3)
    top.legend(fontsize=8, loc="lower right")
    bottom.bar(np.arange(present.size), counted, color="gray")
    _log_scale(bottom, "y", counted)
    bottom.set_ylabel("categories\nwith a test AUC", fontsize=8)
    bottom.set_xticks(np.arange(present.size))
    bottom.set_xticklabels([_bin_label(b) for b in present], rotation=45, ha="right", fontsize=8)
    bottom.set_xlabel("training documents in the category (bins of powers of 2)")
    bottom.grid(alpha=0.3, axis="y")
    return _save(fig, path)


def auc_by_frequency(result: StudyResult, path: Path) -> Path:
    """Per-category AUC against the number of training positives (log scale), per model; above
    ``mlnb.plot.DENSE_ABOVE`` categories binned by training positives (``_binned_auc_by_frequency``)."""
    if len(result.train_positives) > plot.DENSE_ABOVE:
        return _binned_auc_by_frequency(result, path)
    fig, ax = _figure(figsize=(7, 4.5))
    positives = np.maximum(result.train_positives, 0.8)  # categories without positives at the left edge
    colors = study_colors(result)
    markers = "os^Dv<>phX"
    for i, run in enumerate(result.models):
        ax.scatter(positives, run.evaluation.per_category["auc"], s=16, color=colors[run.name], alpha=0.7,
                   marker=markers[i % len(markers)], label=run.name)
    ax.axhline(0.5, ls="--", color="gray", lw=1, label="chance")
    drawn = np.concatenate([positives[np.isfinite(run.evaluation.per_category["auc"].to_numpy())]
                            for run in result.models])
    _log_scale(ax, "x", drawn)
    ax.set_xlabel("training documents in the category (log scale)")
    ax.set_ylabel("test AUC")
    ax.set_title("AUC against category training frequency", fontsize=10)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8, loc="lower right")
    return _save(fig, path)


def auc_difference(comparison, path: Path, colors: tuple[str, str]) -> Path:
    """AUC(a) − AUC(b) per category, categories ordered by training frequency; bars of
    categories whose DeLong test is significant after Holm take the colour of the model that
    is higher (``colors`` = a's, b's). Above ``mlnb.plot.DENSE_ABOVE`` tested categories a bar each is a blur:
    ``_binned_auc_difference`` instead."""
    table = comparison.table.sort_values("train_pos", kind="stable")
    table = table[table["difference"].notna()]
    if len(table) > plot.DENSE_ABOVE:
        return _binned_auc_difference(comparison, table, path, colors)
    difference = table["difference"].to_numpy()
    significant = (table["p_holm"] < comparison.alpha).to_numpy()
    x = np.arange(len(table))
    fig, ax = _figure(figsize=(11, 4.5))
    groups = [(~significant, "lightgray", "not significant"),
              (significant & (difference > 0), colors[0], f"{comparison.name_a} significantly higher"),
              (significant & (difference < 0), colors[1], f"{comparison.name_b} significantly higher")]
    handles = []
    for chosen, color, name in groups:
        ax.bar(x[chosen], difference[chosen], color=color, width=1.0 if len(x) > 200 else 0.8)
        # explicit legend patches: an empty bar group has no colour of its own to show
        handles.append(Patch(color=color, label=f"{name} ({int(chosen.sum())})"))
    ax.axhline(0, color="black", lw=0.8)
    if len(table) <= 30:  # few categories: name each one
        ax.set_xticks(x)
        ax.set_xticklabels([f"{name}\n{count}" for name, count in zip(table["name"], table["train_pos"])],
                           fontsize=7 if len(table) > 12 else 8)
        ax.set_xlabel("categories, ordered by training documents (tick labels: name and training documents)")
    else:
        step = max(1, len(table) // 12)
        ax.set_xticks(x[::step])
        ax.set_xticklabels(table["train_pos"].to_numpy()[::step])
        ax.set_xlabel("categories, ordered by training documents (tick labels: training documents)")
    ax.set_ylabel(f"AUC({comparison.name_a}) − AUC({comparison.name_b})")
    sign = comparison.sign
    ax.set_title(f"{comparison.name_a}: {comparison.label_a}\n{comparison.name_b}: {comparison.label_b}\n"
                 f"{comparison.name_a} higher in {sign.wins}, lower in {sign.losses} categories; sign test "
                 f"p = {sign.p_value:.2g}; Holm p < {comparison.alpha:g} counts as significant", fontsize=9)
    ax.grid(alpha=0.3, axis="y")
    ax.legend(handles=handles, fontsize=8)
    return _save(fig, path)


def _binned_auc_difference(comparison, table, path: Path, colors: tuple[str, str]) -> Path:
    """``auc_difference`` of a large label space: the tested categories binned by training positives (powers
    of 2); above, the median AUC(a) − AUC(b) of each bin with its interquartile range; below, the categories
    of each bin where a is significantly higher (up) and where b is (down; Holm), as shares of the bin."""
    fig, (top, bottom) = _figure(2, 1, figsize=(10, 6.5), gridspec_kw={"height_ratios": [3, 2]}, sharex=True)
    bins = _frequency_bins(table["train_pos"].to_numpy(np.float64))
    present = np.unique(bins)
    difference = table["difference"].to_numpy(np.float64)
    significant = (table["p_holm"] < comparison.alpha).to_numpy()
    x = np.arange(present.size)
    quartiles = np.array([np.percentile(difference[bins == b], [25, 50, 75]) for b in present]).T
    top.fill_between(x, quartiles[0], quartiles[2], color="gray", alpha=0.25, lw=0, label="25th–75th percentile")
    top.plot(x, quartiles[1], "-o", ms=3, color="black", label="median")
    top.axhline(0, color="black", lw=0.8)
    top.set_ylabel(f"AUC({comparison.name_a}) − AUC({comparison.name_b})")
    top.grid(alpha=0.3)
    top.legend(fontsize=8)
    size = np.array([np.sum(bins == b) for b in present])
    a_higher = np.array([np.sum(significant & (difference > 0) & (bins == b)) for b in present])
    b_higher = np.array([np.sum(significant & (difference < 0) & (bins == b)) for b in present])
    # shares of each bin: counts would let the tail's tens of thousands hide every significant bar
    bottom.bar(x, 100 * a_higher / size, color=colors[0],
               label=f"{comparison.name_a} significantly higher ({a_higher.sum():,} categories)")
    bottom.bar(x, -100 * b_higher / size, color=colors[1],
               label=f"{comparison.name_b} significantly higher ({b_higher.sum():,} categories)")
    bottom.axhline(0, color="black", lw=0.8)
    reach = max(1.0, 100 * float(np.max(np.r_[a_higher / size, b_higher / size]))) * 1.1
    bottom.set_ylim(-reach, reach)
    bottom.yaxis.set_major_formatter(lambda value, _: f"{abs(value):g}%")
    bottom.set_ylabel(f"share of the bin\n(up: {comparison.name_a}, down: {comparison.name_b})", fontsize=8)
    bottom.set_xticks(x)
    bottom.set_xticklabels([f"{_bin_label(b)}\n({n:,})" for b, n in zip(present, size)], rotation=45, ha="right",
                           fontsize=7)
    bottom.set_xlabel("training documents in the category (bins of powers of 2; in brackets: categories tested)")
    bottom.grid(alpha=0.3, axis="y")
    bottom.legend(fontsize=7, loc="upper left")
    sign = comparison.sign
    top.set_title(f"{comparison.name_a}: {comparison.label_a}\n{comparison.name_b}: {comparison.label_b}\n"
                  f"{len(table):,} categories: {comparison.name_a} higher in {sign.wins:,}, lower in {sign.losses:,}; "
                  f"sign test p = {sign.p_value:.2g}; Holm p < {comparison.alpha:g} counts as significant", fontsize=9)
    return _save(fig, path)


def precision_at_k_by_band(result: StudyResult, path: Path) -> Path | None:
    """Each frequency band's contribution to every model's P@k (``mlnb.plot.precision_at_k_by_band``, the
    bands of ``mlnb.metrics.bands``); None without ranking metrics."""
    by_band = {run.name: run.ranking["by_band"] for run in result.models if run.ranking.get("by_band")}
    if not by_band or not result.ranking_ks:
        return None
    sizes = band_summary(result.train_positives, frequency_bands(result.train_positives))
    figure = plot.precision_at_k_by_band(by_band, result.ranking_ks[-1], colors=study_colors(result),
                                         categories={band: sizes[band]["categories"] for band in BANDS})
    return _save_laid_out(figure, path)


def sweep_plot(sweep, path: Path) -> Path | None:
    """Heatmap of the metric for a two-key grid; a line for a one-key grid; None otherwise."""
    keys = list(sweep.grid)
    metric = sweep.metric
    what = metric + (f" of category {sweep.category}" if sweep.category >= 0 else "")
    if len(keys) == 1:
        fig, ax = _figure(figsize=(6, 4))
        table = sweep.table.sort_values(keys[0])
        numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in table[keys[0]])
        x = table[keys[0]] if numeric else np.arange(len(table))
        ax.plot(x, table[metric], "-o", color="tab:blue")
        if numeric and min(table[keys[0]]) > 0 and max(table[keys[0]]) / min(table[keys[0]]) > 20:
            ax.set_xscale("log")
        if not numeric:
            ax.set_xticks(x)
            ax.set_xticklabels(table[keys[0]])
        ax.set_xlabel(keys[0])
        ax.set_ylabel(f"validation {what}")
        ax.grid(alpha=0.3)
    elif len(keys) == 2:
        pivot = sweep.table.pivot_table(index=keys[0], columns=keys[1], values=metric)
        fig, ax = _figure(figsize=(1.2 * len(pivot.columns) + 3, 0.6 * len(pivot.index) + 2.5))
        image = ax.imshow(pivot.to_numpy(), cmap="viridis", aspect="auto")
        ax.set_xticks(range(len(pivot.columns)))
        ax.set_xticklabels([f"{c:g}" if isinstance(c, float) else str(c) for c in pivot.columns])
        ax.set_yticks(range(len(pivot.index)))
        ax.set_yticklabels([f"{c:g}" if isinstance(c, float) else str(c) for c in pivot.index])
        ax.set_xlabel(keys[1])
        ax.set_ylabel(keys[0])
        values = pivot.to_numpy()
        for (i, j), value in np.ndenumerate(values):
            if np.isfinite(value):
                ax.text(j, i, f"{value:.4f}", ha="center", va="center", fontsize=8,
                        color="white" if value < np.nanmean(values) else "black")
        fig.colorbar(image, ax=ax, label=f"validation {what}")
    else:
        return None
    ax.set_title(f"sweep of {sweep.model}: best {metric} {sweep.best[metric]:.4f} at\n"
                 + ",\n".join(f"{k} = {sweep.best[k]}" for k in keys), fontsize=9)
    return _save(fig, path)


def learning_curve(curve, metric: str, path: Path) -> Path:
    """Mean test metric over seeds against training size (log), min–max band, crossings marked."""
    fig, ax = _figure(figsize=(7, 4.5))
    colors = model_colors(curve.labels)
    grouped = curve.table.groupby(["model", "size"])[metric].agg(["mean", "min", "max"]).reset_index()
    for name in curve.labels:
        part = grouped[grouped["model"] == name]
        ax.plot(part["size"], part["mean"], "-o", ms=4, color=colors[name], label=name)
        ax.fill_between(part["size"], part["min"], part["max"], color=colors[name], alpha=0.2)
    for pair, found in curve.crossings.items():
        for size in found.get(metric, []):
            ax.axvline(size, ls=":", color="black", lw=1)
            ax.annotate(f"{pair.replace('-vs-', ' = ')} at ~{size:,.0f}", (size, 0.02), xytext=(4, 0),
                        xycoords=("data", "axes fraction"), textcoords="offset points", fontsize=7,
                        rotation=90, va="bottom")
    _log_scale(ax, "x", grouped.loc[np.isfinite(grouped["mean"]), "size"])
    ax.set_xlabel("training documents (log scale)")
    ax.set_ylabel(f"test {metric}")
    seeds = curve.table["seed"].nunique()
    ax.set_title(f"Learning curve: mean over {seeds} seeds, band = min..max", fontsize=10)
    ax.grid(alpha=0.3, which="both")
    # outside the axes: inside, a legend hides points and crossing labels wherever it is put
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    return _save(fig, path)


def confusion_matrix(run, class_names, path: Path) -> Path:
    """Multiclass: the confusion matrix of one model, each row (true class) as shares of that class,
    with the counts written in the cells while they fit."""
    confusion = run.evaluation.confusion
    K = confusion.shape[0]
    shares = confusion / np.maximum(confusion.sum(axis=1, keepdims=True), 1)
    size = min(4 + 0.45 * K, 16)
    fig, ax = _figure(figsize=(size + 1.5, size))
    image = ax.imshow(shares, cmap="Blues", vmin=0, vmax=1)
    if K <= 20:
        for (i, j), count in np.ndenumerate(confusion):
            ax.text(j, i, f"{count}", ha="center", va="center", fontsize=8,
                    color="white" if shares[i, j] > 0.5 else "black")
    ticks = np.arange(K) if K <= 40 else np.arange(0, K, max(1, K // 20))
    ax.set_xticks(ticks)
    ax.set_yticks(ticks)
    ax.set_xticklabels([class_names[k] for k in ticks], rotation=45 if K > 5 else 0, ha="right" if K > 5 else "center",
                       fontsize=8)
    ax.set_yticklabels([class_names[k] for k in ticks], fontsize=8)
    ax.set_xlabel("predicted class (argmax of the posterior)")
    ax.set_ylabel("true class")
    summary = run.evaluation.summary
    ax.set_title(f"{run.name}: {run.label}\naccuracy {summary['accuracy']:.4f}, balanced "
                 f"{summary['balanced_accuracy']:.4f}", fontsize=9)
    fig.colorbar(image, ax=ax, label="share of the true class", fraction=0.046, pad=0.04)
    return _save(fig, path)
