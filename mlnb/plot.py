r"""Figures of evaluations: each function returns a matplotlib ``Figure`` (no files, no pyplot).

What a results folder's report shows, for any scores of your own::

    from mlnb import NaiveBayes, LogisticRegression, evaluate, make_rcv1_like, plot

    data = make_rcv1_like(seed=0)
    evaluations = {name: evaluate(data.Y_test, model.fit(data.X_train, data.Y_train).decision_function(data.X_test),
                                  data.category_names, Y_train=data.Y_train)
                   for name, model in {"nb": NaiveBayes(binarize=True), "lr": LogisticRegression()}.items()}
    plot.roc(evaluations, category=6).savefig("roc.png")        # or show it: a notebook displays a Figure
    plot.auc_scatter(evaluations["lr"], evaluations["nb"], names=("lr", "nb"))

Every function takes ``evaluations``: one ``Evaluation``, a mapping ``{name: Evaluation}`` (one
colour and legend entry per name, in order), or scores instead of Evaluations with ``Y_true=``
(``{name: scores (n × K)}`` or one score matrix), which are evaluated here by ``mlnb.evaluate``.
``colors`` maps a name to a matplotlib colour (default: red, blue, then the tab10 palette — the
RCV1 tutorial's NB red and LR blue).

    roc(evaluations, category)                   exact ROC curves of one category, AUC in the legend
    lift(evaluations, category)                  ROC lift TPR/FPR, and lift by depth (precision / base rate)
    accuracy_per_category(evaluations)           expected accuracy per category, against 1 − prevalence
    auc_scatter(x, y, names=...)                 per-category AUC of two models, one point per category
                                                 (above DENSE_ABOVE categories: a hexagonal density)
    precision_at_k_by_band(by_band, k)           each frequency band's contribution to P@k, bars per model
    reliability(evaluations)                     observed positive rate against predicted probability

A Figure is drawn by Agg without pyplot: nothing global is registered, and it is freed with its
last reference (``report.plots`` saves the same Figures as the PNGs of a results folder).
"""

from __future__ import annotations

from collections.abc import Mapping

import matplotlib.ticker
import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from mlnb.errors import MlnbError
from mlnb.metrics.bands import BANDS
from mlnb.metrics.evaluation import CALIBRATION_BINS, Evaluation, evaluate

#: the colour of the i-th model: the RCV1 tutorial's NB red and LR blue, then matplotlib's tab10
PALETTE = ("tab:red", "tab:blue", "tab:green", "tab:orange", "tab:purple", "tab:brown", "tab:pink",
           "tab:olive", "tab:cyan", "tab:gray")
#: above this many categories a line per model is a blur: points plus a rolling mean instead
MANY_CATEGORIES = 150
#: above this many categories a figure of one mark per category overplots into a blob: bins or a density
#: instead (the report's tables switch earlier, at ``mlnb.metrics.bands.LARGE_LABEL_SPACE``)
DENSE_ABOVE = 1_000
#: bins of the category index of ``accuracy_per_category`` above ``DENSE_ABOVE`` categories
CATEGORY_BINS = 100

__all__ = ["DENSE_ABOVE", "PALETTE", "accuracy_per_category", "auc_scatter", "lift", "precision_at_k_by_band",
           "reliability", "roc"]


def _evaluations(evaluations, Y_true=None, allow_empty: bool = False) -> dict[str, Evaluation]:
    """{name: Evaluation} from an Evaluation, a mapping of them, or scores with ``Y_true``."""
    if isinstance(evaluations, Evaluation):
        return {"model": evaluations}
    if not isinstance(evaluations, Mapping):
        if Y_true is None:
            raise MlnbError("evaluations must be an Evaluation, a {name: Evaluation} mapping, or scores with "
                            f"Y_true=..., got {type(evaluations).__name__}")
        evaluations = {"model": evaluations}
    if not evaluations and not allow_empty:
        raise MlnbError("evaluations: nothing to plot (an empty mapping)")
    out = {}
    for name, value in evaluations.items():
        if isinstance(value, Evaluation):
            out[str(name)] = value
        elif Y_true is None:
            raise MlnbError(f"evaluations[{name!r}] holds scores: pass the labels as Y_true=... to evaluate them")
        else:
            out[str(name)] = evaluate(Y_true, value)
    return out


def _colors(names, colors) -> dict[str, str]:
    chosen = {name: PALETTE[i % len(PALETTE)] for i, name in enumerate(names)}
    return chosen | dict(colors or {})


def _figure(nrows: int = 1, ncols: int = 1, *, figsize: tuple[float, float], **subplots):
    """(figure, axes) drawn by Agg, without pyplot."""
    fig = Figure(figsize=figsize)
    FigureCanvasAgg(fig)
    return fig, fig.subplots(nrows, ncols, **subplots)


def _done(fig: Figure) -> Figure:
    fig.tight_layout()
    return fig


def log_scale(ax, axis: str = "y", data=None) -> bool:
    """Log scale on ``axis`` when the axes hold a positive finite value there (or ``data`` does, the
    values actually plotted); else stay linear: nothing evaluable draws empty axes, which
    matplotlib cannot log-scale."""
    if data is None:
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
    data = np.asarray(data, dtype=float)
    if not (np.isfinite(data) & (data > 0)).any():
        return False
    (ax.set_yscale if axis == "y" else ax.set_xscale)("log")
    return True


def _category(evaluation: Evaluation, category) -> int:
    """A category index from an index or a name."""
    table = evaluation.per_category
    if isinstance(category, (int, np.integer)) and not isinstance(category, bool):
        if not 0 <= category < len(table):
            raise MlnbError(f"category must be an index 0..{len(table) - 1} or a name, got {category}")
        return int(category)
    matches = np.flatnonzero(table["name"].astype(str).to_numpy() == str(category))
    if not matches.size:
        raise MlnbError(f"category {category!r} is no category name of the evaluation "
                        f"(e.g. {', '.join(map(str, table['name'][:3]))})")
    return int(matches[0])


def _category_title(evaluation: Evaluation, k: int) -> str:
    row = evaluation.per_category.iloc[k]
    return (f"category {k} ({row['name']}): {int(row['n_pos'])} positive of {int(row['n_pos'] + row['n_neg'])} "
            "test documents")


def _undefined_note(ax, evaluation: Evaluation, k: int) -> None:
    row = evaluation.per_category.iloc[k]
    if row["n_pos"] == 0 or row["n_neg"] == 0:
        ax.text(0.5, 0.5, "undefined: the test set has no positive\n(or no negative) document for this category",
                ha="center", va="center", transform=ax.transAxes, fontsize=9, color="dimgray")


def roc(evaluations, category, *, Y_true=None, colors=None) -> Figure:
    """Exact ROC curves of every model for one ``category`` (index or name), with the chance diagonal.

    An Evaluation keeps the exact curves of its ``curve_categories`` (``evaluate``'s default: all); for
    another category the curve is drawn from its ROC grid (``roc_points`` points).
    """
    evaluations = _evaluations(evaluations, Y_true)
    first = next(iter(evaluations.values()))
    k = _category(first, category)
    colors = _colors(evaluations, colors)
    fig, ax = _figure(figsize=(5.5, 5.5))
    for name, evaluation in evaluations.items():
        curve = evaluation.curves.get(k)
        auc = evaluation.per_category["auc"].iloc[k]
        if curve is not None and curve.defined:
            ax.plot(curve.fpr, curve.tpr, color=colors[name], lw=1.5, label=f"{name}: AUC {auc:.4f}")
        elif curve is None and np.isfinite(auc):
            ax.plot(evaluation.grid, evaluation.roc_tpr[k], color=colors[name], lw=1.5,
                    label=f"{name}: AUC {auc:.4f} (grid)")
    ax.plot([0, 1], [0, 1], "--", color="gray", lw=1, label="chance")
    _undefined_note(ax, first, k)
    ax.set_xlabel("false positive rate")
    ax.set_ylabel("true positive rate")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1.01)
    ax.set_title("ROC, " + _category_title(first, k), fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
    return _done(fig)


def lift(evaluations, category, *, Y_true=None, colors=None) -> Figure:
    """Left: ROC lift TPR/FPR on the FPR grid. Right: lift by depth (precision at depth / base rate)
    over the share of documents targeted. One ``category`` (index or name)."""
    evaluations = _evaluations(evaluations, Y_true)
    first = next(iter(evaluations.values()))
    k = _category(first, category)
    colors = _colors(evaluations, colors)
    fig, (left, right) = _figure(1, 2, figsize=(11, 4.5))
    for name, evaluation in evaluations.items():
        left.plot(evaluation.grid[1:], evaluation.roc_lift[k], color=colors[name], lw=1.5, label=name)
        right.plot(evaluation.grid[1:], evaluation.depth_lift[k], color=colors[name], lw=1.5, label=name)
    for ax in (left, right):
        ax.axhline(1.0, ls="--", color="gray", lw=1, label="random (lift 1)")
        if log_scale(ax):
            # 1, 2, 5, 10, 20, ...: a lift of 1 to 8 would otherwise show a single tick label
            ax.yaxis.set_major_locator(matplotlib.ticker.LogLocator(subs=(1.0, 2.0, 5.0)))
            ax.yaxis.set_major_formatter(matplotlib.ticker.FormatStrFormatter("%g"))
            ax.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=8)
        ax.set_xlim(0, 1)
        _undefined_note(ax, first, k)
    left.set_xlabel("false positive rate")
    left.set_ylabel("ROC lift  TPR / FPR")
    left.set_title("ROC lift", fontsize=10)
    right.set_xlabel("share of documents targeted (depth, by score)")
    right.set_ylabel("lift  precision at depth / base rate")
    right.set_title("Lift by depth (cumulative gains / depth)", fontsize=10)
    fig.suptitle(_category_title(first, k), fontsize=10)
    return _done(fig)


def _note(ax, note: str | None, right: bool = False) -> None:
    if note:
        ax.text(0.99 if right else 0.01, 0.01, note, transform=ax.transAxes, fontsize=7, color="dimgray",
                ha="right" if right else "left", va="bottom")


def accuracy_per_category(evaluations, *, Y_true=None, colors=None, note: str | None = None,
                          prevalence_from: Evaluation | None = None) -> Figure:
    """Expected accuracy mean(p·y + (1 − p)(1 − y)) per category index, one colour per model (the RCV1
    tutorial's plot), with always-'no' (1 − test prevalence): accuracy near 1 on rare categories is
    mostly the base rate. Above ``MANY_CATEGORIES`` categories: points and a rolling mean; above
    ``DENSE_ABOVE``: no points, ``CATEGORY_BINS`` bins of consecutive categories, each model's mean
    expected error 1 − expected accuracy over a bin (line, log scale: every accuracy there is 0.999…) and
    the 10th to 90th percentile of its categories (band).
    ``note``: a line written in the corner (e.g. which models are left out); ``prevalence_from``: the
    Evaluation whose test prevalence draws the always-'no' line (default: the first), so that the
    figure can be drawn with no model in it."""
    evaluations = _evaluations(evaluations, Y_true, allow_empty=prevalence_from is not None)
    colors = _colors(evaluations, colors)
    fig, ax = _figure(figsize=(10, 4.5))
    table = (prevalence_from or next(iter(evaluations.values()))).per_category
    if len(table) > DENSE_ABOVE:
        return _binned_accuracy(evaluations, table, colors, note)
    many = len(table) > MANY_CATEGORIES
    window = max(3, len(table) // 50)
    for name, evaluation in evaluations.items():
        values = evaluation.per_category["expected_accuracy"]
        label = f"{name}: mean {evaluation.summary['mean_expected_accuracy']:.4f}"
        if many:
            ax.plot(table["category"], values, ".", ms=2, alpha=0.35, color=colors[name])
            ax.plot(table["category"], values.rolling(window, center=True, min_periods=1).mean(), lw=1.5,
                    color=colors[name], label=label + f" (line: rolling mean of {window})")
        else:
            ax.plot(table["category"], values, "-o", ms=3, lw=1, color=colors[name], label=label)
    baseline = 1 - table["prevalence"]
    if many:
        baseline = baseline.rolling(window, center=True, min_periods=1).mean()
    ax.plot(table["category"], baseline, ":", color="gray", lw=1, label="always 'no' (1 − prevalence)")
    _note(ax, note)
    ax.set_xlabel("category index")
    ax.set_ylabel("expected accuracy  mean(p·y + (1−p)(1−y))")
    ax.set_title("Per-category expected accuracy on the test set")
    ax.set_xlim(-1, len(table))
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
    return _done(fig)


def _bin_edges(n: int, bins: int) -> np.ndarray:
    """Edges of at most ``bins`` runs of consecutive indices 0..n, as equal as integers allow."""
    return np.unique(np.linspace(0, n, min(bins, n) + 1).round().astype(np.int64))


def _binned(values: np.ndarray, edges: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(mean, 10th percentile, 90th percentile) of the finite ``values`` of each run ``edges[i]:edges[i + 1]``
    (NaN for a run without one)."""
    stats = np.full((3, edges.size - 1), np.nan)
    for i, (start, stop) in enumerate(zip(edges[:-1], edges[1:])):
        part = values[start:stop]
        part = part[np.isfinite(part)]
        if part.size:
            stats[:, i] = part.mean(), np.percentile(part, 10), np.percentile(part, 90)
    return stats[0], stats[1], stats[2]


def _binned_accuracy(evaluations: dict, table: pd.DataFrame, colors: dict, note: str | None) -> Figure:
    """``accuracy_per_category`` of a large label space. There every category is rare and every expected
    accuracy is 0.999… (a linear axis shows one flat line): the expected error 1 − expected accuracy on a log
    scale instead, per bin of consecutive categories each model's mean (line) and 10th–90th percentile (band),
    and always-'no''s error, the test prevalence (dotted)."""
    fig, ax = _figure(figsize=(10, 4.5))
    edges = _bin_edges(len(table), CATEGORY_BINS)
    middle = (edges[:-1] + edges[1:] - 1) / 2
    width = int(np.ceil(len(table) / (edges.size - 1)))
    for name, evaluation in evaluations.items():
        mean, low, high = _binned(1 - evaluation.per_category["expected_accuracy"].to_numpy(np.float64), edges)
        ax.fill_between(middle, low, high, color=colors[name], alpha=0.2, lw=0)
        ax.plot(middle, mean, lw=1.5, color=colors[name],
                label=f"{name}: mean expected accuracy {evaluation.summary['mean_expected_accuracy']:.6f}")
    baseline, _, _ = _binned(table["prevalence"].to_numpy(np.float64), edges)
    ax.plot(middle, baseline, ":", color="gray", lw=1.2, label="always 'no' (error = test prevalence)")
    _note(ax, note)
    log_scale(ax)
    ax.set_xlabel(f"category index ({len(table):,} categories in {edges.size - 1} bins of ≈{width:,})")
    ax.set_ylabel("expected error  1 − mean(p·y + (1−p)(1−y))")
    ax.set_title("Per-category expected error on the test set (lower is better): mean of each bin (line), "
                 "10th–90th percentile of its categories (band)", fontsize=10)
    ax.set_xlim(0, len(table))
    ax.xaxis.set_major_formatter(matplotlib.ticker.StrMethodFormatter("{x:,.0f}"))
    ax.grid(alpha=0.3, which="both")
    ax.legend(loc="upper right", fontsize=8)
    return _done(fig)


def _aucs(values) -> np.ndarray:
    """Per-category AUC (K,): an Evaluation's included categories (NaN elsewhere), or the values given."""
    if isinstance(values, Evaluation):
        table = values.per_category
        return np.where(table["included"], table["auc"], np.nan)
    return np.asarray(values, dtype=np.float64).ravel()


def auc_scatter(x, y, *, names=("x", "y"), descriptions=None, train_positives=None) -> Figure:
    """Per-category AUC of model y (vertical) against model x (horizontal), one point per category
    where both are defined, with the line of equal AUC. ``x`` and ``y``: Evaluations (their included
    categories) or per-category AUC arrays (K,), NaN where not defined. ``descriptions``: a longer
    label per model for the axes. ``train_positives`` (K,): colour the points by log10 of it. Above
    ``DENSE_ABOVE`` categories a point each would overplot: a hexagonal 2-D histogram instead, its
    colour the number of categories in each hexagon (log scale; ``train_positives`` is then not shown)."""
    a_x, a_y = _aucs(x), _aucs(y)
    if a_x.shape != a_y.shape:
        raise MlnbError(f"auc_scatter: x has {a_x.size} categories, y {a_y.size}")
    both = np.isfinite(a_x) & np.isfinite(a_y)
    a_x, a_y = a_x[both], a_y[both]
    low = np.nanmin(np.r_[a_x, a_y, 1.0])
    low = max(0.0, min(low, 0.5) - 0.02) if np.isfinite(low) else 0.0
    fig, ax = _figure(figsize=(6, 5.5))
    density = a_x.size > DENSE_ABOVE
    if density:  # one point per category overplots into a blob: categories per hexagon instead
        cells = ax.hexbin(a_x, a_y, gridsize=50, extent=(low, 1.0, low, 1.0), bins="log", mincnt=1,
                          cmap="viridis", linewidths=0.1)
        fig.colorbar(cells, ax=ax, label="categories per hexagon (log scale)")
    elif train_positives is not None:
        positives = np.maximum(np.asarray(train_positives, dtype=np.float64).ravel()[both], 1)
        points = ax.scatter(a_x, a_y, c=np.log10(positives), cmap="viridis", s=18, edgecolor="k", lw=0.3)
        fig.colorbar(points, ax=ax, label="log10 training positives")
    else:
        ax.scatter(a_x, a_y, s=18, color="tab:blue", edgecolor="k", lw=0.3)
    ax.plot([low, 1], [low, 1], "--", color="gray", lw=1, label="equal AUC")
    ax.set_xlim(low, 1.005)
    ax.set_ylim(low, 1.005)
    name_x, name_y = names
    description_x, description_y = descriptions or (None, None)
    ax.set_xlabel(f"AUC, {name_x}" + (f": {description_x}" if description_x else ""), fontsize=8)
    ax.set_ylabel(f"AUC, {name_y}" + (f": {description_y}" if description_y else ""), fontsize=8)
    ax.set_title(f"Per-category AUC: {name_y} higher in {int(np.sum(a_y > a_x)):,}, "
                 f"{name_x} higher in {int(np.sum(a_x > a_y)):,}"
                 + (f"\n{a_x.size:,} categories, binned into hexagons" if density else ""), fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
    return _done(fig)


def precision_at_k_by_band(by_band: Mapping, k: int, *, colors=None, categories: Mapping | None = None) -> Figure:
    """Each frequency band's contribution to P@k (``mlnb.metrics.bands.precision_at_k_by_band``), bars per
    model side by side in each band: the correct categories of the band among each test document's k best,
    over k · documents, so that a model's bars add up to its P@k (in the legend). ``by_band``: {model: {band:
    {"P@k": value}}}; ``categories``: {band: number of categories} for the tick labels, bands without any
    left out (default: head, torso, tail, and unseen where a model has a value there)."""
    if not by_band:
        raise MlnbError("precision_at_k_by_band: nothing to plot (no model)")
    key = f"P@{k}"
    models = list(by_band)
    for name in models:
        if any(key not in by_band[name].get(band, {key: 0}) for band in BANDS):
            raise MlnbError(f"precision_at_k_by_band: by_band[{name!r}] has no {key} for every band")
    if categories is not None:
        bands = [band for band in BANDS if categories.get(band, 0)]
    else:
        bands = [band for band in BANDS if band != "unseen" or any(by_band[m].get(band, {}).get(key) for m in models)]
    colors = _colors(models, colors)
    fig, ax = _figure(figsize=(max(6.0, 1.6 * len(bands) * max(1, len(models)) / 2 + 3), 4.5))
    width = 0.8 / len(models)
    x = np.arange(len(bands))
    top = 0.0
    for i, name in enumerate(models):
        values = np.array([by_band[name].get(band, {}).get(key, 0.0) for band in bands], dtype=np.float64)
        total = float(sum(by_band[name].get(band, {}).get(key, 0.0) for band in BANDS))
        bars = ax.bar(x + (i - (len(models) - 1) / 2) * width, values, width=width * 0.95, color=colors[name],
                      label=f"{name}: P@{k} = {total:.3f}")
        ax.bar_label(bars, labels=[f"{v:.3f}" for v in values], fontsize=7, padding=2)
        top = max(top, float(np.nanmax(values)) if values.size else 0.0)
    ax.set_xticks(x)
    ax.set_xticklabels([band + (f"\n{categories[band]:,} categories" if categories else "") for band in bands])
    ax.set_ylim(0, top * 1.15 if top > 0 else 1.0)
    ax.set_xlabel("frequency band (by training positives; head: the most frequent, a third of the labels)")
    ax.set_ylabel(f"contribution to P@{k}")
    ax.set_title(f"Where P@{k} comes from: correct categories of each band among each document's {k} best,\n"
                 f"over {k} · documents (a model's bars add up to its P@{k})", fontsize=10)
    ax.grid(alpha=0.3, axis="y")
    ax.legend(fontsize=8, loc="upper right")
    return _done(fig)


def reliability(evaluations, *, Y_true=None, colors=None, before: Mapping | None = None,
                calibrated: Mapping | None = None, note: str | None = None) -> Figure:
    """Reliability diagram over every (document, category) pair: the observed share of positives
    against the mean predicted probability σ(score) of each bin, with the pairs per bin below (log
    scale). ``before``: {name: reliability table} of the same model before calibration (dotted);
    ``calibrated``: {name: method} for the legend; ``note``: a line written in the corner."""
    evaluations = _evaluations(evaluations, Y_true, allow_empty=True)  # none: the diagonal (and the note)
    colors = _colors(evaluations, colors)
    before, calibrated = dict(before or {}), dict(calibrated or {})
    fig, (top, bottom) = _figure(2, 1, figsize=(6, 7), gridspec_kw={"height_ratios": [3, 1]}, sharex=True)
    top.plot([0, 1], [0, 1], "--", color="gray", lw=1, label="perfectly calibrated")
    width = 1.0 / CALIBRATION_BINS / (len(evaluations) + 0.5)
    _note(top, note, right=True)
    for i, (name, evaluation) in enumerate(evaluations.items()):
        table: pd.DataFrame = evaluation.calibration
        summary = evaluation.summary
        method = f", {calibrated[name]}-calibrated" if name in calibrated else ""
        top.plot(table["mean_predicted"], table["observed_rate"], "-o", color=colors[name], ms=4,
                 label=f"{name}{method}: Brier {summary['mean_brier']:.4f}, log loss {summary['mean_log_loss']:.4f}")
        if name in before:  # the same model before calibration, for comparison
            old = before[name]
            top.plot(old["mean_predicted"], old["observed_rate"], ":", marker="x", color=colors[name], ms=4, lw=1,
                     alpha=0.8, label=f"{name} before calibration")
        bottom.bar(table["lower"] + (i + 0.75) * width, table["count"], width=width, color=colors[name], alpha=0.8)
    top.set_ylabel("observed share of positives")
    top.set_title("Calibration (reliability) over all document-category pairs"
                  + ("\ndotted: the same models before calibration" if before else ""), fontsize=10)
    top.set_xlim(0, 1)
    top.set_ylim(0, 1)
    top.grid(alpha=0.3)
    top.legend(fontsize=7, loc="upper left")
    log_scale(bottom)
    bottom.set_xlabel("predicted probability (bin)")
    bottom.set_ylabel("pairs")
    bottom.grid(alpha=0.3)
    return _done(fig)
