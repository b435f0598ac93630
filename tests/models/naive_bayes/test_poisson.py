"""Poisson Naive Bayes: by hand, against scipy's Poisson pmf, against fastNaiveBayes's own expected
posteriors, fit = chunked partial_fit, and the refusal of negative values."""

import doctest

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.special import gammaln, logsumexp
from scipy.stats import poisson as poisson_distribution

from mlnb import MlnbError
from mlnb.models.naive_bayes import NaiveBayes, poisson

TINY_X = np.array([[2, 0], [1, 1], [0, 3]])  # 3 documents, 2 words


def test_multilabel_by_hand():
    # category: documents 0 and 1, F = (3, 1), N = 2; outside: F̄ = (0, 3), N̄ = 1; α = 1
    # λ = (4/3, 2/3), λ̄ = (1/2, 4/2); W = log λ/λ̄ = (log 8/3, log 1/3)
    # b = log N/N̄ − Σ_w (λ − λ̄) = log 2 − (2 − 5/2)
    model = NaiveBayes(event_model="poisson", alpha=1.0).fit(TINY_X, np.array([[1], [1], [0]]))
    np.testing.assert_allclose(model.weights_[:, 0], np.log([8 / 3, 1 / 3]), rtol=1e-6)
    np.testing.assert_allclose(model.bias_, [np.log(2) + 0.5], rtol=1e-6)
    np.testing.assert_allclose(model.decision_function([[2, 0]]), [[2 * np.log(8 / 3) + np.log(2) + 0.5]], rtol=1e-6)


def test_multiclass_by_hand():
    # class 0: documents 0 and 1, λ_0 = (4/3, 2/3); class 1: document 2, λ_1 = (1/2, 4/2); α = 1, priors 2/3, 1/3
    # W = log λ, b_c = log prior_c − Σ_w λ_cw
    model = NaiveBayes(event_model="poisson", alpha=1.0, task="multiclass").fit(TINY_X, np.array([0, 0, 1]))
    built = model._log_odds()
    np.testing.assert_allclose(built.weights64, np.log([[4 / 3, 1 / 2], [2 / 3, 2]]), rtol=1e-12)
    np.testing.assert_allclose(built.bias64, [np.log(2 / 3) - 2, np.log(1 / 3) - 5 / 2], rtol=1e-12)


@pytest.fixture(scope="module")
def poisson_counts():
    """300 documents × 25 words of Poisson counts whose rates depend on 3 classes and on 4 categories."""
    rng = np.random.default_rng(4)
    y = rng.choice(3, size=300, p=[0.5, 0.3, 0.2])
    Y = (rng.random((300, 4)) < [0.5, 0.2, 0.1, 0.4]).astype(int)
    rates = rng.gamma(1.0, 0.7, size=(3, 25))[y] * (1 + Y @ rng.gamma(1.0, 0.5, size=(4, 25)))
    X = rng.poisson(rates)
    return sp.csr_matrix(X.astype(np.float32)), X, y, Y


def _rates(X, members, alpha):
    """λ (V,) = (Σ of the members' counts + α) / (members + α)."""
    return (X[members].sum(axis=0) + alpha) / (members.sum() + alpha)


def _log_pmf(X, rate):
    """Σ_w log Poisson(x_w; λ_w) per document (n,), by scipy."""
    return poisson_distribution.logpmf(X, rate).sum(axis=1)


@pytest.mark.parametrize("alpha", [0.5, 2.0])
def test_multilabel_log_odds_are_scipys_poisson_log_likelihood_ratio(poisson_counts, alpha):
    X_csr, X, _, Y = poisson_counts
    model = NaiveBayes(event_model="poisson", alpha=alpha).fit(X_csr, Y)
    expected = np.column_stack([
        _log_pmf(X, _rates(X, Y[:, k] == 1, alpha)) - _log_pmf(X, _rates(X, Y[:, k] == 0, alpha))
        + np.log((Y[:, k] == 1).sum()) - np.log((Y[:, k] == 0).sum()) for k in range(Y.shape[1])])  # (n, K)
    scores = model.decision_function(X_csr)
    np.testing.assert_allclose(scores, expected, rtol=1e-5, atol=1e-5 * np.abs(expected).max())
    assert model.scores_are_log_odds and model.score_type == "log_odds"


@pytest.mark.parametrize("alpha", [0.5, 2.0])
def test_multiclass_joint_log_likelihood_is_scipys_poisson_plus_log_prior(poisson_counts, alpha):
    X_csr, X, y, _ = poisson_counts
    model = NaiveBayes(event_model="poisson", alpha=alpha, task="multiclass").fit(X_csr, y)
    log_joint = np.column_stack([_log_pmf(X, _rates(X, y == c, alpha)) + np.log(np.mean(y == c))
                                 for c in range(3)])  # (n, 3) log P(x, c)
    # J drops −Σ_w log x_w!, the same for every class: J = log P(x, c) + Σ_w log x_w!
    J = log_joint + gammaln(X + 1).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(model.decision_function(X_csr), J, rtol=1e-5, atol=1e-5 * np.abs(J).max())
    np.testing.assert_allclose(model.predict_log_proba(X_csr), log_joint - logsumexp(log_joint, axis=1, keepdims=True),
                               rtol=1e-9, atol=1e-9)
    assert model.scores_are_joint_log_likelihoods and model.score_type == "joint_log_likelihood"


# fastNaiveBayes's tests/testthat/test-fastnaivebayes_poisson.R: x (filled by column), y, and the
# posteriors it expects of fnb.poisson (unsmoothed λ = F/N, which α → 0 gives)
FNB_X = np.array([[2, 3, 2, 1, 2], [5, 3, 4, 2, 4], [0, 1, 3, 1, 0], [3, 4, 4, 3, 5]]).T  # (5, 4)
FNB_CASES = [
    (FNB_X, [0, 0, 1, 1, 1],  # Ham, Ham, Spam, Spam, Spam ("Standard 3 classes")
     [[0.67913774, 0.3208623], [0.41976782, 0.5802322], [0.07526245, 0.9247376], [0.23443299, 0.7655670],
      [0.57454707, 0.4254529]]),
    (FNB_X[:, :1], [1, 1, 0, 0, 0],  # Spam, Spam, Ham, Ham, Ham; one column ("Single column")
     [[0.6053645, 0.3946355], [0.5056005, 0.4943995], [0.6053645, 0.3946355], [0.6970593, 0.3029407],
      [0.6053645, 0.3946355]]),
]


@pytest.mark.parametrize("X, y, expected", FNB_CASES, ids=["four-columns", "one-column"])
def test_posteriors_are_fastnaivebayes_as_alpha_goes_to_zero(X, y, expected):
    model = NaiveBayes(event_model="poisson", alpha=1e-9, task="multiclass").fit(X, np.array(y))
    np.testing.assert_allclose(model.predict_proba(X), expected, atol=1e-7)


def test_partial_fit_in_chunks_equals_fit(poisson_counts):
    X_csr, _, y, Y = poisson_counts
    for task, labels in (("multilabel", Y), ("multiclass", y)):
        whole = NaiveBayes(event_model="poisson", task=task).fit(X_csr, labels)
        chunked = NaiveBayes(event_model="poisson", task=task)
        for start in range(0, 300, 110):
            chunked.partial_fit(X_csr[start:start + 110], labels[start:start + 110])
        np.testing.assert_array_equal(chunked.decision_function(X_csr), whole.decision_function(X_csr))


def test_binarize_is_poisson_on_word_presence(poisson_counts):
    X_csr, X, _, Y = poisson_counts
    binarized = NaiveBayes(event_model="poisson", binarize=True).fit(X_csr, Y)
    presence = NaiveBayes(event_model="poisson").fit((X > 0).astype(np.float32), Y)
    np.testing.assert_array_equal(binarized.decision_function(X_csr), presence.decision_function(X > 0))


def test_refuses_negative_values_and_the_tutorial_mode(poisson_counts):
    X_csr, _, _, Y = poisson_counts
    with pytest.raises(MlnbError, match="non-negative"):
        NaiveBayes(event_model="poisson").fit(-X_csr, Y)
    model = NaiveBayes(event_model="poisson").fit(X_csr, Y)
    with pytest.raises(MlnbError, match="non-negative"):
        model.decision_function(-X_csr)
    with pytest.raises(MlnbError, match="mode='tutorial' exists for .* only, not event_model='poisson'"):
        NaiveBayes(event_model="poisson", mode="tutorial").fit(X_csr, Y)


def test_the_examples_in_the_docstring_hold():
    result = doctest.testmod(poisson)
    assert result.attempted > 0 and result.failed == 0
