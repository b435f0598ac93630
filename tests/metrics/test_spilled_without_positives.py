"""A spilled test set of many categories without a test positive (a long tail): evaluate_spilled sorts only
the columns of the categories that have one, and gives the others what evaluate gives them (NaN AUC, AP,
ROC and gains), so that the spilled and the in-memory evaluations stay equal."""

import sys
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from mlnb.metrics import evaluate, streaming
from mlnb.metrics.streaming import ScoreSpill, evaluate_spilled

sys.path.insert(0, str(Path(__file__).parent))
from test_streaming import assert_same_evaluation  # noqa: E402  (every number, grid, curve and baseline)

K = 30


def _long_tail(n: int = 400, seed: int = 3):
    """n documents × 30 categories: 0–7 with test positives (7 on every document), 8–29 without; float32
    log-odds with ties."""
    rng = np.random.default_rng(seed)
    prevalence = np.r_[[0.3, 0.2, 0.1, 0.05, 0.02, 0.01, 0.005, 1.0], np.zeros(K - 8)]
    Y = rng.random((n, K)) < prevalence
    Y[0, 6] = True  # at least one positive in each of 0–6
    S = np.round(rng.normal(size=Y.shape) + 1.5 * Y - 1.0, 2).astype(np.float32)
    return Y, S


def _spill(folder, Y, S, **settings) -> ScoreSpill:
    spill = ScoreSpill(folder, Y.shape[1], **settings)
    for start in range(0, len(S), 128):
        spill.append(sp.csr_matrix(Y[start:start + 128]), S[start:start + 128])
    spill.close()
    return spill


def test_categories_without_a_test_positive_are_not_ranked_and_equal_evaluate(tmp_path, monkeypatch):
    Y, S = _long_tail()
    exclude = {3: "untrainable", 12: "untrainable", 20: "no training negative"}  # with and without positives
    ranked = []
    original = streaming.rank_curve

    def recorded(y, z):
        ranked.append(int(np.count_nonzero(y)))
        return original(y, z)
    monkeypatch.setattr(streaming, "rank_curve", recorded)
    spill = _spill(tmp_path / "spill", Y, S, exclude=exclude)
    got = evaluate_spilled(spill, curve_categories=[1, 25], n_threads=2)
    expected = evaluate(Y, S, curve_categories=[1, 25], exclude=exclude)
    assert_same_evaluation(got, expected)
    # the 8 categories with a positive (one of them excluded: its AUC is still reported) and the curve asked for
    assert sorted(ranked) == sorted([int(c) for c in Y[:, :8].sum(axis=0)] + [0])
    without = np.flatnonzero(Y.sum(axis=0) == 0)
    assert without.size == K - 8
    table = got.per_category
    assert table.loc[without, ["auc", "average_precision"]].isna().all().all()
    assert np.isnan(got.roc_tpr[without]).all() and np.isnan(got.gains[without]).all()
    assert (table.loc[without, "excluded"] != "").all()
    assert got.summary["n_evaluable"] == 6  # 0–6 but the excluded 3; 7 has no negative
    # a category with every document positive is ranked as evaluate ranks it: gains and AP defined, AUC not
    assert np.isnan(table.loc[7, "auc"]) and table.loc[7, "average_precision"] == 1.0
    assert not np.isnan(got.gains[7]).any()
    assert got.curves[25].tp.max() == 0 and got.curves[25].fp.max() == len(Y)


def test_a_column_nothing_counts_is_not_read(tmp_path, monkeypatch):
    """An excluded category without a positive is in no pooled histogram, no curve and no decision: its
    column stays on disk; an excluded one with positives, and every pooled one, is read once."""
    Y, S = _long_tail(seed=4)
    exclude = [2, 15, 16]
    spill = _spill(tmp_path / "spill", Y, S, exclude=exclude)
    reads = []
    original = ScoreSpill.scores_column

    def recorded(self, k):
        reads.append(k)
        return original(self, k)
    monkeypatch.setattr(ScoreSpill, "scores_column", recorded)
    got = evaluate_spilled(spill)
    assert sorted(reads) == [k for k in range(K) if k not in (15, 16)]
    assert_same_evaluation(got, evaluate(Y, S, curve_categories=(), exclude=exclude))
