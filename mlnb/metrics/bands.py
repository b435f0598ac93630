r"""Frequency bands of a label space: head, torso, tail and unseen categories, by training positives, and
the macro averages and precision at k of each band.

A macro average over 50,000 categories is an average over the tail: most categories of a long-tailed
label space have a handful of training documents. Extreme-classification papers therefore report
metrics per band of label frequency; this module uses their *equi-voluminous* bins (Mittal et al.,
DECAF, WSDM 2021; Dahiya et al., ECLARE, WWW 2021: "labels divided into bins in increasing order of
frequency, each bin holding the same number of positive training points"), with three bins.

**Bands** (``frequency_bands``). N_l: training positives of category l; T = Σ_l N_l. The categories are
ordered by N_l, most frequent first, and each is placed by the share of the training labels held by the
categories strictly more frequent than it,

    before_l = Σ_{j : N_j > N_l} N_j / T,

    head    before_l < 1/3            the most frequent categories, together about a third of the labels
    torso   1/3 ≤ before_l < 2/3      the next third
    tail    before_l ≥ 2/3            the rest: the many rare categories
    unseen  N_l = 0                   no training positive: nothing to learn from

so categories with equal counts always share a band, the head holds at least the most frequent category,
and each band's share of the training labels is about a third (``BAND_SHARES``), more where a band's last
count is shared by many categories.

**Macro by band** (``macro_by_band``): the mean of each per-category metric over the band's categories
that the evaluation averages (``per_category.included``: a positive and a negative test document, not
excluded), the same rows as the study's macro averages; NaN for a band without one.

**Precision at k by band** (``precision_at_k_by_band``): the band's *contribution* to P@k (DECAF,
ECLARE: "contribution to P@5 of each bin"),

    P@k[band] = 1 / (n · k) · Σ_i |top_k(i) ∩ Y_i ∩ band|,

the correct predictions among each document's k best that fall in the band, over all n test documents.
The bands' values add up to the model's P@k, so a plot of them shows where a model's precision comes
from: a model that only ever predicts head categories has a tail contribution of 0.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import scipy.sparse as sp

from mlnb.errors import MlnbError

__all__ = ["BANDS", "BAND_METRICS", "BAND_SHARES", "LARGE_LABEL_SPACE", "band_summary", "frequency_bands",
           "macro_by_band", "precision_at_k_by_band"]

#: the bands, most frequent first; ``frequency_bands`` returns indices into this tuple
BANDS = ("head", "torso", "tail", "unseen")
#: the cumulative shares of the training labels where torso and tail begin (equi-voluminous thirds)
BAND_SHARES = (1 / 3, 2 / 3)
#: per-category columns averaged per band (those of an Evaluation's per-category table that are present)
BAND_METRICS = {"auc": "macro_auc", "average_precision": "macro_average_precision", "f1": "macro_f1",
                "precision": "macro_precision", "recall": "macro_recall",
                "expected_accuracy": "mean_expected_accuracy"}
#: above this many categories a report shows the top and bottom categories instead of every one, cuts its
#: lists of category names, and draws each band's contribution to P@k (its figures of one mark per category
#: bin them above ``mlnb.plot.DENSE_ABOVE``, where the marks overplot)
LARGE_LABEL_SPACE = 200


def frequency_bands(train_positives) -> np.ndarray:
    """(K,) int8 band of each category, an index into ``BANDS``, from its training positives (module
    docstring: before_l = Σ_{N_j > N_l} N_j / T; head < 1/3 ≤ torso < 2/3 ≤ tail; unseen where N_l = 0)."""
    counts = np.asarray(train_positives, dtype=np.float64).ravel()
    if counts.size and not (np.all(np.isfinite(counts)) and counts.min() >= 0):
        raise MlnbError("frequency_bands: train_positives must be finite counts ≥ 0, one per category")
    bands = np.full(counts.shape, BANDS.index("unseen"), dtype=np.int8)
    total = counts.sum()
    seen = counts > 0
    if not seen.any():
        return bands
    # before_l from the distinct counts, most frequent first: the labels of every strictly larger count
    distinct, inverse = np.unique(-counts[seen], return_inverse=True)
    held = -distinct * np.bincount(inverse)  # labels held by the categories of each distinct count
    before = (np.cumsum(held) - held)[inverse] / total
    bands[seen] = np.searchsorted(np.asarray(BAND_SHARES), before, side="right")
    return bands


def band_summary(train_positives, bands=None) -> dict[str, dict]:
    """{band: {"categories", "train_positives" (their sum), "share_of_labels", "min_train_positives",
    "max_train_positives"}} for every band of ``BANDS`` (empty bands too: 0 categories, None for the range)."""
    counts = np.asarray(train_positives, dtype=np.float64).ravel()
    bands = frequency_bands(counts) if bands is None else np.asarray(bands)
    total = counts.sum()
    out = {}
    for index, band in enumerate(BANDS):
        members = counts[bands == index]
        out[band] = {"categories": int(members.size), "train_positives": int(members.sum()),
                     "share_of_labels": float(members.sum() / total) if total else 0.0,
                     "min_train_positives": int(members.min()) if members.size else None,
                     "max_train_positives": int(members.max()) if members.size else None}
    return out


def macro_by_band(per_category: pd.DataFrame, bands) -> dict[str, dict]:
    """{band: {"evaluated": categories averaged, "macro_auc": …, "macro_f1": …, …}}: the mean of each
    ``BAND_METRICS`` column of ``per_category`` (an Evaluation's table) over the band's included rows."""
    bands = np.asarray(bands)
    if bands.shape != (len(per_category),):
        raise MlnbError(f"macro_by_band: bands must hold one band per category ({len(per_category)}), "
                        f"got shape {bands.shape}")
    included = (per_category["included"].to_numpy(dtype=bool) if "included" in per_category
                else np.ones(len(per_category), dtype=bool))
    columns = [column for column in BAND_METRICS if column in per_category]
    values = per_category[columns].to_numpy(dtype=np.float64)
    out = {}
    for index, band in enumerate(BANDS):
        rows = included & (bands == index)
        row = {"evaluated": int(rows.sum())}
        for j, column in enumerate(columns):
            row[BAND_METRICS[column]] = float(values[rows, j].mean()) if rows.any() else float("nan")
        out[band] = row
    return out


def precision_at_k_by_band(Y_true, top_categories, bands, ks=(1, 3, 5)) -> dict[str, dict[str, float]]:
    """{band: {"P@k": contribution}} for each k of ``ks`` (module docstring: 1/(n·k) Σ_i |top_k(i) ∩ Y_i ∩
    band|; the bands add up to P@k). ``top_categories`` (n, ≥ max ks): each document's ranked categories,
    -1 for none; ``Y_true`` (n × K) 0/1 test labels, sparse or dense."""
    Y = sp.csr_matrix(Y_true)
    Y.sum_duplicates()
    Y.sort_indices()
    n, K = Y.shape
    bands = np.asarray(bands)
    if bands.shape != (K,):
        raise MlnbError(f"precision_at_k_by_band: bands must hold one band per category ({K}), got {bands.shape}")
    T = np.asarray(top_categories, dtype=np.int64)
    ks = sorted({int(k) for k in np.atleast_1d(ks)})
    if T.ndim != 2 or T.shape[0] != n or not ks or ks[0] < 1 or T.shape[1] < ks[-1]:
        raise MlnbError(f"precision_at_k_by_band: top_categories must be (n = {n}, ≥ {ks[-1] if ks else 1}) "
                        f"ranked categories with ks ≥ 1, got shape {T.shape} and ks {ks}")
    T = T[:, :ks[-1]]
    positive = Y.data != 0
    keys = (np.repeat(np.arange(n, dtype=np.int64), np.diff(Y.indptr)) * K + Y.indices)[positive]
    ranked = np.arange(n, dtype=np.int64)[:, None] * K + T
    found = np.minimum(np.searchsorted(keys, ranked), max(keys.size - 1, 0))
    correct = (T >= 0) & (keys.size > 0)
    if keys.size:
        correct &= keys[found] == ranked
    band_of = np.where(T >= 0, bands[np.maximum(T, 0)], -1)
    out = {}
    for index, band in enumerate(BANDS):
        hits = np.cumsum(correct & (band_of == index), axis=1).sum(axis=0)  # Σ_i hits among the first j
        out[band] = {f"P@{k}": float(hits[k - 1] / (n * k)) if n else float("nan") for k in ks}
    return out
