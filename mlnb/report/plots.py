"""Matplotlib figures of a study (PNG): the classic NB-vs-LR plots.

Each function takes the study result and a path, draws one figure and saves it.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib
import matplotlib.ticker

matplotlib.use("Agg")  # files only; no display needed
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from mlnb.study import StudyResult  # noqa: E402


def _save(fig, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def accuracy_per_category(result: StudyResult, path: Path) -> Path:
    """Expected accuracy per category index, NB red and LR blue (the RCV1 tutorial's plot),
    with the test prevalence: accuracy near 1 on rare categories is mostly the base rate."""
    fig, ax = plt.subplots(figsize=(10, 4.5))
    for run in result.models:
        table = run.evaluation.per_category
        ax.plot(table["category"], table["expected_accuracy"], "-o", ms=3, lw=1, color=run.color,
                label=f"{run.label}: mean {run.evaluation.summary['mean_expected_accuracy']:.4f}")
    table = result.models[0].evaluation.per_category
    ax.plot(table["category"], 1 - table["prevalence"], ":", color="gray", lw=1,
            label="always 'no' (1 − prevalence)")
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
    fig, ax = plt.subplots(figsize=(5.5, 5.5))
    for run in result.models:
        curve = run.evaluation.curves[k]
        if curve.defined:
            auc = run.evaluation.per_category["auc"][k]
            ax.plot(curve.fpr, curve.tpr, color=run.color, lw=1.5, label=f"{run.label}: AUC {auc:.4f}")
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
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.5))
    for run in result.models:
        ev = run.evaluation
        left.plot(ev.grid[1:], ev.roc_lift[k], color=run.color, lw=1.5, label=run.label)
        right.plot(ev.grid[1:], ev.depth_lift[k], color=run.color, lw=1.5, label=run.label)
    for ax in (left, right):
        ax.axhline(1.0, ls="--", color="gray", lw=1, label="random (lift 1)")
        ax.set_yscale("log")
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


def auc_scatter(result: StudyResult, path: Path) -> Path:
    """AUC of NB against LR per category, coloured by training positives (log scale)."""
    if len(result.models) < 2:
        return None
    a, b = result.models[0], result.models[1]
    x, y = a.evaluation.per_category["auc"], b.evaluation.per_category["auc"]
    fig, ax = plt.subplots(figsize=(6, 5.5))
    positives = np.maximum(result.train_positives, 1)
    points = ax.scatter(x, y, c=np.log10(positives), cmap="viridis", s=18, edgecolor="k", lw=0.3)
    low = np.nanmin(np.r_[x, y, 1.0])
    low = max(0.0, min(low, 0.5) - 0.02) if np.isfinite(low) else 0.0
    ax.plot([low, 1], [low, 1], "--", color="gray", lw=1, label="equal AUC")
    ax.set_xlim(low, 1.005)
    ax.set_ylim(low, 1.005)
    ax.set_xlabel(f"AUC, {a.label}")
    ax.set_ylabel(f"AUC, {b.label}")
    above = int(np.sum(y > x))
    ax.set_title(f"Per-category AUC: {b.key.upper()} higher in {above}, "
                 f"{a.key.upper()} higher in {int(np.sum(x > y))}", fontsize=10)
    fig.colorbar(points, ax=ax, label="log10 training positives")
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
    return _save(fig, path)


def calibration(result: StudyResult, path: Path) -> Path:
    """Reliability diagram over all (document, category) pairs: observed positive rate against
    mean predicted probability per bin, with the pair counts below (log scale)."""
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(6, 7), gridspec_kw={"height_ratios": [3, 1]}, sharex=True)
    top.plot([0, 1], [0, 1], "--", color="gray", lw=1, label="perfectly calibrated")
    width = 1.0 / len(result.models[0].evaluation.calibration) / (len(result.models) + 0.5)
    for i, run in enumerate(result.models):
        table = run.evaluation.calibration
        summary = run.evaluation.summary
        top.plot(table["mean_predicted"], table["observed_rate"], "-o", color=run.color, ms=4,
                 label=f"{run.label}: Brier {summary['mean_brier']:.4f}, log loss {summary['mean_log_loss']:.4f}")
        bottom.bar(table["lower"] + (i + 0.75) * width, table["count"], width=width, color=run.color, alpha=0.8)
    top.set_ylabel("observed share of positives")
    top.set_title("Calibration (reliability) over all document-category pairs", fontsize=10)
    top.set_xlim(0, 1)
    top.set_ylim(0, 1)
    top.grid(alpha=0.3)
    top.legend(fontsize=7, loc="upper left")
    bottom.set_yscale("log")
    bottom.set_xlabel("predicted probability (bin)")
    bottom.set_ylabel("pairs")
    bottom.grid(alpha=0.3)
    return _save(fig, path)


def auc_by_frequency(result: StudyResult, path: Path) -> Path:
    """Per-category AUC against the number of training positives (log scale), per model."""
    fig, ax = plt.subplots(figsize=(7, 4.5))
    positives = np.maximum(result.train_positives, 0.8)  # categories without positives at the left edge
    for run in result.models:
        ax.scatter(positives, run.evaluation.per_category["auc"], s=16, color=run.color, alpha=0.75,
                   label=run.label)
    ax.axhline(0.5, ls="--", color="gray", lw=1, label="chance")
    ax.set_xscale("log")
    ax.set_xlabel("training documents in the category (log scale)")
    ax.set_ylabel("test AUC")
    ax.set_title("AUC against category training frequency", fontsize=10)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8, loc="lower right")
    return _save(fig, path)


def auc_difference(comparison, path: Path) -> Path:
    """AUC(a) − AUC(b) per category, categories ordered by training frequency; bars of
    categories whose DeLong test is significant after Holm are coloured."""
    table = comparison.table.sort_values("train_pos", kind="stable")
    table = table[table["difference"].notna()]
    significant = (table["p_holm"] < comparison.alpha).to_numpy()
    x = np.arange(len(table))
    colors = np.where(table["difference"] > 0, "tab:blue", "tab:red")
    fig, ax = plt.subplots(figsize=(11, 4.5))
    ax.bar(x[~significant], table["difference"].to_numpy()[~significant], color="lightgray",
           label="not significant")
    for color, name in (("tab:blue", comparison.label_a), ("tab:red", comparison.label_b)):
        chosen = significant & (colors == color)
        ax.bar(x[chosen], table["difference"].to_numpy()[chosen], color=color,
               label=f"{name} significantly higher (Holm p < {comparison.alpha:g})")
    ax.axhline(0, color="black", lw=0.8)
    step = max(1, len(table) // 12)
    ax.set_xticks(x[::step])
    ax.set_xticklabels(table["train_pos"].to_numpy()[::step])
    ax.set_xlabel("categories, ordered by training documents (tick labels: training documents)")
    ax.set_ylabel("AUC difference")
    sign = comparison.sign
    ax.set_title(f"AUC({comparison.label_a}) − AUC({comparison.label_b}) per category; higher in "
                 f"{sign.wins}, lower in {sign.losses}, sign test p = {sign.p_value:.2g}", fontsize=9)
    ax.grid(alpha=0.3, axis="y")
    ax.legend(fontsize=8)
    return _save(fig, path)


def sweep_plot(sweep, path: Path) -> Path | None:
    """Heatmap of the metric for a two-key grid; a line for a one-key grid; None otherwise."""
    keys = list(sweep.grid)
    metric = sweep.metric
    what = metric + (f" of category {sweep.category}" if sweep.category >= 0 else "")
    if len(keys) == 1:
        fig, ax = plt.subplots(figsize=(6, 4))
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
        fig, ax = plt.subplots(figsize=(1.2 * len(pivot.columns) + 3, 0.6 * len(pivot.index) + 2.5))
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
    ax.set_title(f"sweep of {sweep.model.upper()}: best {metric} {sweep.best[metric]:.4f} at "
                 + ", ".join(f"{k}={sweep.best[k]}" for k in keys), fontsize=9)
    return _save(fig, path)


def learning_curve(curve, metric: str, path: Path) -> Path:
    """Mean test metric over seeds against training size (log), min–max band, crossings marked."""
    from mlnb.study import MODEL_COLORS

    fig, ax = plt.subplots(figsize=(7, 4.5))
    grouped = curve.table.groupby(["model", "size"])[metric].agg(["mean", "min", "max"]).reset_index()
    for key, part in grouped.groupby("model"):
        color = MODEL_COLORS.get(key, "black")
        ax.plot(part["size"], part["mean"], "-o", ms=4, color=color, label=curve.labels.get(key, key))
        ax.fill_between(part["size"], part["min"], part["max"], color=color, alpha=0.2)
    for size in curve.crossings.get(metric, []):
        ax.axvline(size, ls=":", color="black", lw=1)
        ax.annotate(f"curves cross at ~{size:,.0f}", (size, ax.get_ylim()[0]), xytext=(4, 8),
                    textcoords="offset points", fontsize=8)
    ax.set_xscale("log")
    ax.set_xlabel("training documents (log scale)")
    ax.set_ylabel(f"test {metric}")
    seeds = curve.table["seed"].nunique()
    ax.set_title(f"Learning curve: mean over {seeds} seeds, band = min..max", fontsize=10)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8, loc="lower right")
    return _save(fig, path)
