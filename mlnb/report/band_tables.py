"""The report's tables of frequency bands (``mlnb.metrics.bands``) and, for large label spaces, of the top and
bottom categories: what a reader can take in at 5,000 or 100,000 categories, where a list of one row (or
one name) per category cannot be read."""

from __future__ import annotations

import numpy as np
import pandas as pd

from mlnb.metrics.bands import BANDS, LARGE_LABEL_SPACE, band_summary, frequency_bands, macro_by_band
from mlnb.report.escape import plain
from mlnb.report.tables import every_score_evaluated, markdown_table

#: how the bands are cut, in one sentence (report.md, summary.json ``bands.rule``)
BAND_RULE = ("categories ordered by training positives, most frequent first; head: those before which less than "
             "1/3 of the training labels lie, torso: less than 2/3, tail: the rest (equi-voluminous bins, as "
             "DECAF and ECLARE report); unseen: no training positive; equal counts share a band")
#: categories shown at each end of a large label space's ranking by AUC
TOP_AND_BOTTOM = 10
#: names listed in a sentence of a large label space before "and N more"
NAMES_LISTED = 20


def is_large(result) -> bool:
    """More than ``LARGE_LABEL_SPACE`` categories: bands and the top and bottom instead of every category."""
    return len(result.category_names) > LARGE_LABEL_SPACE


def listed_names(names, indices, large: bool) -> str:
    """The names of ``indices``, comma-separated; for a large label space the first ``NAMES_LISTED`` and how
    many more (every one is in metrics.csv)."""
    indices = list(indices)
    if not large or len(indices) <= NAMES_LISTED:
        return ", ".join(plain(names[k]) for k in indices)
    return (", ".join(plain(names[k]) for k in indices[:NAMES_LISTED])
            + f" and {len(indices) - NAMES_LISTED:,} more (metrics.csv has every one)")


def _range(row: dict) -> str:
    low, high = row["min_train_positives"], row["max_train_positives"]
    return "n/a" if low is None else (f"{low:,}" if low == high else f"{low:,}–{high:,}")


def bands_markdown(result) -> list[str]:
    """The "By frequency band" section: each band's categories, training positives and share of the training
    labels, every model's macro AUC and F1 over the band's evaluated categories and, where the ranking
    metrics were measured, the band's contribution to P@k (the bands add up to P@k)."""
    if not result.models:
        return []
    bands = frequency_bands(result.train_positives)
    sizes = band_summary(result.train_positives, bands)
    macros = {run.name: macro_by_band(run.evaluation.per_category, bands) for run in result.models}
    k = result.ranking_ks[-1] if getattr(result, "ranking_ks", ()) else None
    shown = [band for band in BANDS if sizes[band]["categories"]]
    with_auc = every_score_evaluated(result)  # else no AUC was computed: no column of them
    rows = {}
    for band in shown:
        size = sizes[band]
        row = {"categories": f"{size['categories']:,}", "train positives": _range(size),
               "share of labels": f"{size['share_of_labels']:.1%}",
               "evaluated": f"{macros[result.models[0].name][band]['evaluated']:,}"}
        for run in result.models:
            macro = macros[run.name][band]
            if with_auc:
                row[f"macro AUC {run.name}"] = macro.get("macro_auc", float("nan"))
            row[f"macro F1 {run.name}"] = macro.get("macro_f1", float("nan"))
            by_band = run.ranking.get("by_band") if k else None
            if by_band:
                row[f"P@{k} {run.name}"] = by_band[band][f"P@{k}"]
        for comparison in getattr(result, "comparisons", []):  # raw AUC wins per band, as the sign test counts
            difference = comparison.table["difference"].to_numpy(np.float64)[bands == BANDS.index(band)]
            row[f"{comparison.name_a} higher / lower than {comparison.name_b}"] = \
                f"{int(np.sum(difference > 0)):,} / {int(np.sum(difference < 0)):,}"
        rows[band] = row
    frame = pd.DataFrame.from_dict(rows, orient="index").rename_axis("band")
    precision = (f" P@{k} *model*: the band's contribution to the model's P@{k}, the correct categories of the band "
                 f"among each test document's {k} best over {k} · documents; the bands add up to P@{k}." if k and
                 any(run.ranking.get("by_band") for run in result.models) else "")
    return ["", "## By frequency band", "",
            f"Bands by training positives: {BAND_RULE}. Macro {'AUC and ' if with_auc else ''}F1 over each band's "
            "evaluated categories (a "
            "positive and a negative test document; the summary's macro averages are over all of them)."
            + precision + (" *a* higher / lower than *b*: the band's categories where a's test AUC is above b's, "
                           "and below (the paired comparison's per-category differences)." if
                           getattr(result, "comparisons", []) else ""), "", markdown_table(frame)]


def top_bottom_markdown(result, n: int = TOP_AND_BOTTOM) -> list[str]:
    """Large label spaces: for each model the ``n`` categories with the highest and the ``n`` with the lowest
    test AUC among the evaluated ones (equal AUCs: more training positives first, then the lower index),
    with their band and training and test positives; by F1 where no AUC was computed (``every_score_evaluated``)."""
    if not is_large(result) or not result.models:
        return []
    bands = np.asarray(BANDS)[frequency_bands(result.train_positives)]
    column, title = ("auc", "AUC") if every_score_evaluated(result) else ("f1", "F1")
    lines = ["", f"## Top and bottom categories by {title}", "",
             f"{len(result.category_names):,} categories: instead of one row per category (metrics.csv has them), "
             f"each model's {n} highest and {n} lowest test {title}s among its evaluated categories.", ""]
    for run in result.models:
        table = run.evaluation.per_category
        evaluated = np.flatnonzero(table["included"].to_numpy(dtype=bool)
                                   & np.isfinite(table[column].to_numpy(float)))
        if not evaluated.size:
            lines += [f"{plain(run.name)}: no evaluated category.", ""]
            continue
        metric = table[column].to_numpy(float)[evaluated]
        positives = np.asarray(result.train_positives, dtype=np.float64)[evaluated]
        order = evaluated[np.lexsort((evaluated, -positives, -metric))]  # best first
        ends = [(f"top {i + 1}", k) for i, k in enumerate(order[:n])]
        ends += [(f"bottom {i + 1}", k) for i, k in enumerate(order[::-1][:min(n, max(order.size - n, 0))])]
        frame = pd.DataFrame({"rank": [name for name, _ in ends],
                              "category": [int(k) for _, k in ends],
                              "name": [str(result.category_names[k]) for _, k in ends],
                              "band": [bands[k] for _, k in ends],
                              "train pos": [int(result.train_positives[k]) for _, k in ends],
                              "test pos": [int(table["n_pos"].iloc[k]) for _, k in ends],
                              **({"AUC": [float(table["auc"].iloc[k]) for _, k in ends]} if column == "auc" else {}),
                              "F1": [float(table["f1"].iloc[k]) for _, k in ends]}).set_index("rank")
        lines += [f"{plain(run.name)} ({plain(run.label)}):", "", markdown_table(frame), ""]
    return lines[:-1]
