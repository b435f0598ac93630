"""The per-category AUC interval (``mlnb.metrics.auc_intervals``): its coverage by simulation in
bands of positive counts, its hand-checkable properties, and its streaming twin."""

import numpy as np
import pytest
from scipy.stats import norm

from mlnb.errors import MlnbError
from mlnb.metrics.auc_intervals import (category_auc_intervals, category_auc_intervals_by_column,
                                        hanley_mcneil_variance, score_intervals)

LEVEL = 0.95


def _binormal_study(rng, true_auc: float, positive_counts: np.ndarray, n_documents: int):
    """(Y (n, R), scores (n, R)): column r has positive_counts[r] positives scored N(d, 1) and
    n − positive_counts[r] negatives N(0, 1), d = √2 Φ⁻¹(AUC), so every column's true AUC is ``true_auc``."""
    Y = np.arange(n_documents)[:, None] < positive_counts[None, :]
    scores = rng.normal(size=Y.shape) + np.sqrt(2) * norm.ppf(true_auc) * Y
    return Y, scores


@pytest.mark.slow
@pytest.mark.parametrize("band", [(2, 5), (6, 20), (21, 60)])
def test_per_category_interval_covers_by_simulation(band):
    """At every true AUC (inverted, weak, good, near-perfect), the 95 % interval covers the true AUC
    in at least 95 % − 2 SE of the simulated categories of each positive-count band. (The DeLong
    Wald interval it replaced covered 48–79 % at 2–5 positives, 81–95 % at 21–60.)"""
    rng = np.random.default_rng(2024 + band[0])
    repetitions = 1500
    floor = LEVEL - 2 * np.sqrt(LEVEL * (1 - LEVEL) / repetitions)
    for true_auc in (0.25, 0.6, 0.8, 0.95, 0.99):
        positive_counts = rng.integers(band[0], band[1] + 1, size=repetitions)
        Y, scores = _binormal_study(rng, true_auc, positive_counts, n_documents=400)
        intervals = category_auc_intervals(Y, scores, level=LEVEL)
        covered = np.mean((intervals[:, 0] <= true_auc) & (true_auc <= intervals[:, 1]))
        assert covered >= floor, f"AUC {true_auc}, {band[0]}–{band[1]} positives: {covered:.3f} < {floor:.3f}"


def test_perfect_ranking_from_two_positives_is_not_a_point():
    """An AUC of 1 from 2 positives among 100 negatives: DeLong's variance is 0 there (the Wald
    interval is [1, 1]); the score interval's lower end is far below 1."""
    y = np.r_[np.ones(2), np.zeros(100)]
    scores = np.r_[[5.0, 6.0], np.linspace(-1, 1, 100)]
    low, high = category_auc_intervals(y, scores)[0]
    assert high == pytest.approx(1.0) and low < 0.8


def test_ends_solve_the_score_equation_and_mirror():
    """Each end θ satisfies (AUC − θ)² = z² V(θ); reversing the scores mirrors the interval."""
    z = norm.ppf(0.975)
    auc, m, n = np.array([0.7, 0.3]), np.array([4, 4]), np.array([50, 50])
    intervals = score_intervals(auc, m, n, level=0.95)
    for k in range(2):
        for theta in intervals[k]:
            assert (auc[k] - theta) ** 2 == pytest.approx(z**2 * hanley_mcneil_variance(theta, m[k], n[k]), rel=1e-9)
    np.testing.assert_allclose(intervals[1], 1 - intervals[0][::-1], atol=1e-12)


def test_undefined_and_streaming_match():
    """Fewer than two positives gives NaN; the by-column path gives the in-memory numbers."""
    rng = np.random.default_rng(3)
    Y = rng.random((80, 4)) < [0.3, 0.1, 0.0125, 0.5]
    Y[:, 2] = False
    Y[7, 2] = True  # one positive
    scores = rng.normal(size=Y.shape) + Y
    in_memory = category_auc_intervals(Y, scores)
    assert np.isnan(in_memory[2]).all() and np.isfinite(np.delete(in_memory, 2, axis=0)).all()
    streamed = category_auc_intervals_by_column(lambda k: (Y[:, k], scores[:, k]), 4)
    np.testing.assert_allclose(streamed, in_memory, equal_nan=True)


def test_bad_level_is_refused():
    with pytest.raises(MlnbError, match="level"):
        category_auc_intervals(np.array([1, 1, 0, 0]), np.array([0.9, 0.8, 0.1, 0.2]), level=1.5)
