"""Matplotlib figures of a study (PNG): the classic NB-vs-LR plots.

Each function takes the study result (or a comparison) and a path, draws one
figure and saves it. Every model keeps one colour across the plots of a study
(``style.model_colors``).
"""

from __future__ import annotations

from pathlib import Path

import matplotlib.ticker
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from mlnb.report.style import model_colors
from mlnb.study import StudyResult


def _log_scale(ax, axis: str = "y", data=None) -> bool:
    """Log scale on ``axis`` when the axes hold a positive finite value there (or ``data`` does, the
    values actually plotted); else stay linear: a study with nothing evaluable draws empty axes,
    which matplotlib cannot log-scale."""
    if data is not None:
        data = np.asarray(data, dtype=float)
        if not (np.isfinite(data) & (data > 0)).any():
            return False
        (ax.set_yscale if axis == "y" else ax.set_xscale)("log")
        return True
    values = []
    for line in ax.lines:
        values.append(np.asarray(line.get_ydata() if axis == "y" else line.get_xdata(), dtype=float))
    for collection in ax.collections:
        offsets = np.asarray(collection.get_offsets(), dtype=float).reshape(-1, 2)
        drawn = np.isfinite(offsets).all(axis=1)  # a point with a NaN coordinate is not drawn
        values.append(offsets[drawn, 1 if axis == "y" else 0])
    for patch in ax.patches:
        values.append(np.asarray([patch.get_height() if axis == "y" else patch.get_width()], dtype=float))
    data = np.concatenate([v.ravel() for v in values]) if values else np.empty(0)
    if not (np.isfinite(data) & (data > 0)).any():
        return False
    (ax.set_yscale if axis == "y" else ax.set_xscale)("log")
    return True


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
    fig.savefig(path, dpi=120)
    return path


def _probability_models(result: StudyResult) -> tuple[list, list]:
    """(runs whose scores are log-odds, names of those whose scores only rank)."""
    runs = [run for run in result.models
            if getattr(run.model, "scores_are_log_odds", True) or run.probability_scores is not None]
    return runs, [run.name for run in result.models if run not in runs]


def _left_out_note(ax, names: list, x: float = 0.01) -> None:
    if names:
        ax.text(x, 0.01, f"not shown: {', '.join(names)} (ranking scores, not probabilities)",
                transform=ax.transAxes, fontsize=7, color="dimgray", ha="left" if x < 0.5 else "right",
                va="bottom")


#: above this many categories a line per model is a blur: points plus a rolling mean instead
_MANY_CATEGORIES = 150


def accuracy_per_category(result: StudyResult, path: Path) -> Path:
    """Expected accuracy per category index, one colour per model (the RCV1 tutorial's plot: NB red,
    LR blue), with the test prevalence: accuracy near 1 on rare categories is mostly the base rate.
    Models whose scores are not probabilities (complement NB) are left out, with a note."""
    fig, ax = _figure(figsize=(10, 4.5))
    colors = study_colors(result)
    shown, left_out = _probability_models(result)
    table = result.models[0].evaluation.per_category
    many = len(table) > _MANY_CATEGORIES
    window = max(3, len(table) // 50)
    for run in shown:
        values = run.evaluation.per_category["expected_accuracy"]
        label = f"{run.name}: mean {run.evaluation.summary['mean_expected_accuracy']:.4f}"
        if many:
            ax.plot(table["category"], values, ".", ms=2, alpha=0.35, color=colors[run.name])
            ax.plot(table["category"], values.rolling(window, center=True, min_periods=1).mean(), lw=1.5,
                    color=colors[run.name], label=label + f" (line: rolling mean of {window})")
        else:
            ax.plot(table["category"], values, "-o", ms=3, lw=1, color=colors[run.name], label=label)
    baseline = 1 - table["prevalence"]
    if many:
        baseline = baseline.rolling(window, center=True, min_periods=1).mean()
    ax.plot(table["category"], baseline, ":", color="gray", lw=1, label="always 'no' (1 − prevalence)")
    _left_out_note(ax, left_out)
    ax.set_xlabel("category index")
    ax.set_ylabel("expected accuracy  mean(p·y + (1−p)(1−y))")
    ax.set_title("Per-category expected accuracy on the test set")
    ax.set_xlim(-1, len(table))
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
    return _save(fig, path)


def _note_if_undefined(ax, result: StudyResult, k: int) -> None:
    if not result.models[0].evaluation.curves[k].defined:
        ax.text(0.5, 0.5, "undefined: the test set has no positive\n(or no negative) document "
                "for this category", ha="center", va="center", transform=ax.transAxes, fontsize=9,
                color="dimgray")


def _category_title(result: StudyResult, k: int) -> str:
    table = result.models[0].evaluation.per_category
    return (f"category {k} ({result.category_names[k]}): {int(table['n_pos'][k])} positive of "
            f"{int(table['n_pos'][k] + table['n_neg'][k])} test documents")


def roc_for_category(result: StudyResult, k: int, path: Path) -> Path:
    """Exact ROC curves of every model for category k, with the chance diagonal."""
    fig, ax = _figure(figsize=(5.5, 5.5))
    colors = study_colors(result)
    for run in result.models:
        curve = run.evaluation.curves[k]
        if curve.defined:
            auc = run.evaluation.per_category["auc"][k]
            ax.plot(curve.fpr, curve.tpr, color=colors[run.name], lw=1.5, label=f"{run.name}: AUC {auc:.4f}")
    ax.plot([0, 1], [0, 1], "--", color="gray", lw=1, label="chance")
    _note_if_undefined(ax, result, k)
    ax.set_xlabel("false positive rate")
    ax.set_ylabel("true positive rate")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1.01)
    ax.set_title("ROC, " + _category_title(result, k), fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
    return _save(fig, path)


def lift_for_category(result: StudyResult, k: int, path: Path) -> Path:
    """Left: ROC lift TPR/FPR on the FPR grid. Right: lift by depth (precision at depth /
    base rate) over the share of documents targeted."""
    fig, (left, right) = _figure(1, 2, figsize=(11, 4.5))
    colors = study_colors(result)
    for run in result.models:
        ev = run.evaluation
        left.plot(ev.grid[1:], ev.roc_lift[k], color=colors[run.name], lw=1.5, label=run.name)
        right.plot(ev.grid[1:], ev.depth_lift[k], color=colors[run.name], lw=1.5, label=run.name)
    for ax in (left, right):
        ax.axhline(1.0, ls="--", color="gray", lw=1, label="random (lift 1)")
        if _log_scale(ax):
            # 1, 2, 5, 10, 20, ...: a lift of 1 to 8 would otherwise show a single tick label
            ax.yaxis.set_major_locator(matplotlib.ticker.LogLocator(subs=(1.0, 2.0, 5.0)))
            ax.yaxis.set_major_formatter(matplotlib.ticker.FormatStrFormatter("%g"))
            ax.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=8)
        ax.set_xlim(0, 1)
        _note_if_undefined(ax, result, k)
    left.set_xlabel("false positive rate")
    left.set_ylabel("ROC lift  TPR / FPR")
    left.set_title("ROC lift", fontsize=10)
    right.set_xlabel("share of documents targeted (depth, by score)")
    right.set_ylabel("lift  precision at depth / base rate")
    right.set_title("Lift by depth (cumulative gains / depth)", fontsize=10)
    fig.suptitle(_category_title(result, k), fontsize=10)
    return _save(fig, path)


def auc_scatter(result: StudyResult, comparison, path: Path) -> Path:
    """AUC of model b (x) against model a (y) per category, coloured by training positives (log scale)."""
    table = comparison.table[comparison.table["difference"].notna()]  # tested categories only (not excluded)
    x, y = table["auc_b"].to_numpy(), table["auc_a"].to_numpy()
    fig, ax = _figure(figsize=(6, 5.5))
    positives = np.maximum(np.asarray(table["train_pos"]), 1)
    points = ax.scatter(x, y, c=np.log10(positives), cmap="viridis", s=18, edgecolor="k", lw=0.3)
    low = np.nanmin(np.r_[x, y, 1.0])
    low = max(0.0, min(low, 0.5) - 0.02) if np.isfinite(low) else 0.0
    ax.plot([low, 1], [low, 1], "--", color="gray", lw=1, label="equal AUC")
    ax.set_xlim(low, 1.005)
    ax.set_ylim(low, 1.005)
    ax.set_xlabel(f"AUC, {comparison.name_b}: {comparison.label_b}", fontsize=8)
    ax.set_ylabel(f"AUC, {comparison.name_a}: {comparison.label_a}", fontsize=8)
    ax.set_title(f"Per-category AUC: {comparison.name_a} higher in {int(np.sum(y > x))}, "
                 f"{comparison.name_b} higher in {int(np.sum(x > y))}", fontsize=10)
    fig.colorbar(points, ax=ax, label="log10 training positives")
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
    return _save(fig, path)


def calibration(result: StudyResult, path: Path) -> Path:
    """Reliability diagram over all (document, category) pairs: observed positive rate against
    mean predicted probability per bin, with the pair counts below (log scale)."""
    fig, (top, bottom) = _figure(2, 1, figsize=(6, 7), gridspec_kw={"height_ratios": [3, 1]}, sharex=True)
    top.plot([0, 1], [0, 1], "--", color="gray", lw=1, label="perfectly calibrated")
    shown, left_out = _probability_models(result)
    width = 1.0 / len(result.models[0].evaluation.calibration) / (len(shown) + 0.5)
    colors = study_colors(result)
    _left_out_note(top, left_out, x=0.99)
    for i, run in enumerate(shown):
        table = run.evaluation.calibration
        summary = run.evaluation.summary
        calibrated = f", {run.calibration.method}-calibrated" if run.uncalibrated is not None else ""
        top.plot(table["mean_predicted"], table["observed_rate"], "-o", color=colors[run.name], ms=4,
                 label=f"{run.name}{calibrated}: Brier {summary['mean_brier']:.4f}, log loss "
                       f"{summary['mean_log_loss']:.4f}")
        if run.uncalibrated is not None:  # the same model before calibration, for comparison
            before = run.uncalibrated
            top.plot(before["mean_predicted"], before["observed_rate"], ":", marker="x", color=colors[run.name],
                     ms=4, lw=1, alpha=0.8, label=f"{run.name} before calibration")
        bottom.bar(table["lower"] + (i + 0.75) * width, table["count"], width=width, color=colors[run.name],
                   alpha=0.8)
    top.set_ylabel("observed share of positives")
    top.set_title("Calibration (reliability) over all document-category pairs"
                  + ("\ndotted: the same models before calibration" if any(run.uncalibrated is not None for run in shown) else ""),
                  fontsize=10)
    top.set_xlim(0, 1)
    top.set_ylim(0, 1)
    top.grid(alpha=0.3)
    top.legend(fontsize=7, loc="upper left")
    _log_scale(bottom)
    bottom.set_xlabel("predicted probability (bin)")
    bottom.set_ylabel("pairs")
    bottom.grid(alpha=0.3)
    return _save(fig, path)


def auc_by_frequency(result: StudyResult, path: Path) -> Path:
    """Per-category AUC against the number of training positives (log scale), per model."""
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
    is higher (``colors`` = a's, b's)."""
    table = comparison.table.sort_values("train_pos", kind="stable")
    table = table[table["difference"].notna()]
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
