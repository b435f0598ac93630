"""Multiclass Naive Bayes against scikit-learn: log posteriors to 1e-6 for every event model and prior.

scikit-learn's class priors: fit_prior=True is class_prior="mle", fit_prior=False is "uniform",
class_prior=[...] is "given"; the m-estimate prior is handed to it as given values worked out by hand.
Data: the fastNaiveBayes tweets DTM (real, 3 classes), a synthetic corpus with random single labels
(5 classes), iris and wine (Gaussian), and mixed columns (every group at once).
"""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.datasets import load_iris, load_wine
from sklearn.naive_bayes import BernoulliNB, ComplementNB, GaussianNB, MultinomialNB

from mlnb import NaiveBayes

TOLERANCE = 1e-6  # on log P(c | x), absolute: what the issue asks of every oracle


def assert_log_posteriors_equal(model, reference, X, X_reference=None):
    """predict_log_proba of the fitted model = the reference's, to TOLERANCE; the same predictions."""
    X_reference = X if X_reference is None else X_reference
    ours, expected = model.predict_log_proba(X), reference.predict_log_proba(X_reference)
    assert ours.dtype == np.float64 and ours.shape == expected.shape
    error = np.abs(ours - expected).max()
    assert error <= TOLERANCE, f"max |Δ log P(c|x)| = {error:.2e}"
    np.testing.assert_array_equal(model.predict(X), reference.predict(X_reference))
    return error


def assert_joint_scores_equal(model, joint, X):
    """decision_function (float32 J) = the reference's joint log-likelihoods, to float32 precision."""
    scores = model.decision_function(X)
    assert scores.dtype == np.float32
    np.testing.assert_allclose(scores, joint, rtol=1e-5, atol=1e-6 * np.abs(joint).max())


def presence(X):
    X = sp.csr_matrix(X, copy=True)
    X.data[:] = 1.0
    return X


COUNT_ORACLES = [
    (dict(event_model="multinomial", alpha=0.5), MultinomialNB(alpha=0.5)),
    (dict(event_model="multinomial", alpha=1.0, class_prior="uniform"), MultinomialNB(alpha=1.0, fit_prior=False)),
    (dict(event_model="multinomial", alpha=0.5, binarize=True), MultinomialNB(alpha=0.5)),
    (dict(event_model="bernoulli", alpha=0.5), BernoulliNB(alpha=0.5, binarize=0.0)),
    (dict(event_model="bernoulli", alpha=2.0, class_prior="uniform"),
     BernoulliNB(alpha=2.0, binarize=0.0, fit_prior=False)),
    (dict(event_model="complement", alpha=0.5, reference="none"), ComplementNB(alpha=0.5)),
    (dict(event_model="complement", alpha=0.5, reference="corpus"), ComplementNB(alpha=0.5)),
    (dict(event_model="complement", alpha=1.0, norm=True, reference="none"), ComplementNB(alpha=1.0, norm=True)),
]
COUNT_IDS = ["-".join(str(v) for v in params.values()) for params, _ in COUNT_ORACLES]


@pytest.mark.parametrize("data", ["tweets_dtm", "single_label_corpus"])
@pytest.mark.parametrize("params, reference", COUNT_ORACLES, ids=COUNT_IDS)
def test_count_models_equal_sklearn(request, data, params, reference):
    X, y = request.getfixturevalue(data)
    model = NaiveBayes(task="multiclass", **params).fit(X, y)
    X_reference = presence(X) if params.get("binarize") else X
    reference = clone(reference).fit(X_reference, y)
    assert_log_posteriors_equal(model, reference, X, X_reference)
    if params.get("reference") != "corpus":  # "corpus" moves J by a constant per document (tested below)
        assert_joint_scores_equal(model, reference.predict_joint_log_proba(X_reference), X)


@pytest.mark.parametrize("event_model, reference", [("multinomial", MultinomialNB), ("bernoulli", BernoulliNB)])
@pytest.mark.parametrize("data", ["tweets_dtm", "single_label_corpus"])
def test_given_and_m_estimate_priors_equal_sklearn_with_those_priors(request, data, event_model, reference):
    X, y = request.getfixturevalue(data)
    K, n = y.max() + 1, len(y)
    given = np.arange(1, K + 1) / np.arange(1, K + 1).sum()
    model = NaiveBayes(event_model=event_model, task="multiclass", class_prior="given",
                       class_prior_values=list(given)).fit(X, y)
    assert_log_posteriors_equal(model, reference(alpha=0.5, class_prior=given).fit(X, y), X)
    m = 30.0  # (N_c + m/K) / (n + m), worked out here and handed to scikit-learn as given priors
    by_hand = (np.bincount(y, minlength=K) + m / K) / (n + m)
    model = NaiveBayes(event_model=event_model, task="multiclass", class_prior="m_estimate", prior_m=m).fit(X, y)
    assert_log_posteriors_equal(model, reference(alpha=0.5, class_prior=by_hand).fit(X, y), X)


def test_complement_reference_shifts_every_class_of_a_document_alike(tweets_dtm):
    X, y = tweets_dtm
    none = NaiveBayes(event_model="complement", task="multiclass", reference="none").fit(X, y)
    corpus = NaiveBayes(event_model="complement", task="multiclass", reference="corpus").fit(X, y)
    gap = corpus.decision_function(X).astype(np.float64) - none.decision_function(X)  # (n, K)
    np.testing.assert_allclose(gap - gap[:, :1], 0, atol=1e-4)  # −x·W_ref, the same for every class
    assert np.ptp(gap[:, 0]) > 1  # and not one constant for all documents
    np.testing.assert_allclose(corpus.predict_log_proba(X), none.predict_log_proba(X), atol=1e-9)


def gaussian_data():
    for loader in (load_iris, load_wine):
        data = loader()
        yield loader.__name__[5:], data.data.astype(np.float32).astype(np.float64), data.target  # as mlnb sees it


GAUSSIAN_PRIORS = [  # iris and wine have 3 classes each
    (dict(), dict()),
    (dict(class_prior="uniform"), dict(priors=[1 / 3, 1 / 3, 1 / 3])),
    (dict(class_prior="given", class_prior_values=[0.5, 0.3, 0.2]), dict(priors=[0.5, 0.3, 0.2])),
]


@pytest.mark.parametrize("var_smoothing", [1e-9, 1e-3])
@pytest.mark.parametrize("params, sklearn_params", GAUSSIAN_PRIORS, ids=["mle", "uniform", "given"])
@pytest.mark.parametrize("name, X, y", list(gaussian_data()), ids=lambda v: v if isinstance(v, str) else "")
def test_gaussian_equals_sklearn_on_iris_and_wine(name, X, y, params, sklearn_params, var_smoothing):
    model = NaiveBayes(event_model="gaussian", task="multiclass", var_smoothing=var_smoothing, **params).fit(X, y)
    reference = GaussianNB(var_smoothing=var_smoothing, **sklearn_params).fit(X, y)
    assert_log_posteriors_equal(model, reference, X)
    assert_joint_scores_equal(model, reference.predict_joint_log_proba(X), X)
    assert model.epsilon_ == pytest.approx(reference.epsilon_, rel=1e-9)


def test_gaussian_scores_sparse_input_as_dense(single_label_corpus):
    # the sparse design [X∘X, X] with zeros folded into b: the same posteriors as GaussianNB on dense X
    X, y = single_label_corpus
    # 40 columns keep the dense copy small; var_smoothing=1e-3 keeps a column that is constant within a
    # class (variance ε alone) from scoring x²/ε ≈ 10¹⁰, where no log posterior can hold 1e-6 absolute
    X = X[:, :40]
    model = NaiveBayes(event_model="gaussian", task="multiclass", var_smoothing=1e-3).fit(X, y)
    dense = X.toarray().astype(np.float64)  # scikit-learn would take float32 means and variances
    assert_log_posteriors_equal(model, GaussianNB(var_smoothing=1e-3).fit(dense, y), X, dense)


def summed_sklearn_joint(X, y, groups, alpha, var_smoothing):
    """Σ over groups of each sklearn model's joint log-likelihood, each holding log prior_c: minus the
    prior counted (groups − 1) times too often."""
    parts = [(BernoulliNB(alpha=alpha, binarize=0.0), groups["bernoulli"]),
             (MultinomialNB(alpha=alpha), groups["multinomial"]),
             (GaussianNB(var_smoothing=var_smoothing), groups["gaussian"])]
    joint = sum(estimator.fit(X[:, columns], y).predict_joint_log_proba(X[:, columns]) for estimator, columns in parts)
    log_prior = np.log(np.bincount(y) / len(y))
    return joint - (len(parts) - 1) * log_prior


@pytest.mark.parametrize("alpha, var_smoothing", [(0.5, 1e-9), (2.0, 1e-3)])
def test_mixed_is_the_sum_of_sklearn_group_models_less_the_repeated_prior(mixed_columns, alpha, var_smoothing):
    X, _, (real, binary, counts) = mixed_columns
    y = np.digitize(X[:, 20], np.quantile(X[:, 20], [0.3, 0.7]))  # 3 classes from "worst radius"
    model = NaiveBayes(event_model="mixed", task="multiclass", alpha=alpha, var_smoothing=var_smoothing).fit(X, y)
    joint = summed_sklearn_joint(X, y, dict(gaussian=real, bernoulli=binary, multinomial=counts), alpha,
                                 var_smoothing)
    expected = joint - np.logaddexp.reduce(joint, axis=1, keepdims=True)
    error = np.abs(model.predict_log_proba(X) - expected).max()
    assert error <= TOLERANCE, f"max |Δ log P(c|x)| = {error:.2e}"
    assert_joint_scores_equal(model, joint, X)
