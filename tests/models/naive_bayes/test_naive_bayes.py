"""NaiveBayes: multinomial and Bernoulli against scikit-learn's MultinomialNB / BernoulliNB and by hand;
what every event model shares (partial_fit, laziness, parameter checks)."""

import doctest

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.naive_bayes import BernoulliNB, MultinomialNB

from mlnb import MlnbError, NaiveBayes


def sklearn_log_odds(estimator, X, y):
    """log P(y=1|x) − log P(y=0|x) of an sklearn NB fitted on one category's binary problem."""
    joint = clone(estimator).fit(X, y).predict_joint_log_proba(X)
    return joint[:, 1] - joint[:, 0]


def assert_matches_sklearn(model, reference, X, Y, categories):
    scores = model.fit(X, Y).decision_function(X)
    Y = Y.toarray()
    checked = 0
    for k in categories:
        if 0 < Y[:, k].sum() < Y.shape[0]:
            expected = sklearn_log_odds(reference, X, Y[:, k])
            np.testing.assert_allclose(scores[:, k], expected, rtol=1e-5,
                                       atol=1e-5 * np.abs(expected).max(), err_msg=f"category {k}")
            checked += 1
    assert checked >= 3


ORACLES = [
    (dict(event_model="multinomial", alpha=0.5), MultinomialNB(alpha=0.5)),
    (dict(event_model="multinomial", alpha=1.0, binarize=True), MultinomialNB(alpha=1.0)),
    (dict(event_model="bernoulli", alpha=0.5), BernoulliNB(alpha=0.5, binarize=0.0)),
    (dict(event_model="bernoulli", alpha=2.0), BernoulliNB(alpha=2.0, binarize=0.0)),
]


@pytest.mark.parametrize("params, reference", ORACLES)
def test_log_odds_equal_sklearn_on_synthetic(small_corpus, params, reference):
    X, Y = small_corpus.X_train, small_corpus.Y_train
    if params.get("binarize"):
        Xs = X.copy()
        Xs.data[:] = 1
        scores = NaiveBayes(**params).fit(X, Y).decision_function(X)
        for k in range(5):
            expected = sklearn_log_odds(reference, Xs, Y.toarray()[:, k])
            np.testing.assert_allclose(scores[:, k], expected, rtol=1e-5, atol=1e-5 * np.abs(expected).max())
        return
    assert_matches_sklearn(NaiveBayes(**params), reference, X, Y, range(Y.shape[1]))


@pytest.mark.parametrize("params, reference", [ORACLES[0], ORACLES[2]])
def test_log_odds_equal_sklearn_on_rcv1_subset(rcv1_subset, params, reference):
    X, Y = rcv1_subset.X_train, rcv1_subset.Y_train
    frequent = np.argsort(-np.asarray(Y.sum(axis=0)).ravel())[:8]  # sklearn fits one category at a time
    assert_matches_sklearn(NaiveBayes(**params), reference, X, Y, frequent)


@pytest.mark.parametrize("event_model, reference", [("multinomial", MultinomialNB),
                                                    ("bernoulli", BernoulliNB)])
def test_m_estimate_is_additive_smoothing_with_m_over_V(small_corpus, event_model, reference):
    X, Y = small_corpus.X_train, small_corpus.Y_train
    model = NaiveBayes(event_model=event_model, smoothing="m_estimate", m=3.0)
    assert_matches_sklearn(model, reference(alpha=3.0 / X.shape[1]), X, Y, range(6))


def test_hand_worked_multinomial_example():
    # 3 documents, 2 words, 2 categories; doc 1 has both labels
    X = np.array([[2, 0], [1, 1], [0, 3]], dtype=float)
    Y = np.array([[1, 0], [1, 1], [0, 1]])
    nb = NaiveBayes(alpha=1.0).fit(X, Y)
    # category 0: F = [3, 1], F̄ = t − F = [3, 4] − [3, 1] = [0, 3]
    # θ = (4/6, 2/6), θ̄ = (1/5, 4/5); N = 2, N̄ = 1
    np.testing.assert_allclose(nb.weights_[:, 0], [np.log((4 / 6) / (1 / 5)), np.log((2 / 6) / (4 / 5))],
                               rtol=1e-6)
    np.testing.assert_allclose(nb.bias_[0], np.log(2 / 1), rtol=1e-6)


def test_tutorial_mode_reproduces_the_rcv1_tutorial_formulas():
    X = np.array([[2, 0], [1, 1], [0, 3]], dtype=float)
    Y = np.array([[1, 0], [1, 1], [0, 1]])
    nb = NaiveBayes(alpha=0.5, mode="tutorial").fit(X, Y)
    truecounts = Y.T @ X  # (K, V)
    wcounts = truecounts + 0.5
    negwcounts = truecounts.sum(axis=0) - truecounts + 0.5
    pwordcat = wcounts / wcounts.sum(axis=1, keepdims=True)
    pwordncat = negwcounts / negwcounts.sum(axis=1, keepdims=True)
    pcat = Y.sum(axis=0) / 3
    lpwordcat = np.log(pwordncat / pwordcat)  # tutorial: log odds of NOT the category
    lpcat = np.log((pcat.sum() - pcat) / pcat)
    np.testing.assert_allclose(nb.weights_, -lpwordcat.T, rtol=1e-6)
    np.testing.assert_allclose(nb.bias_, -lpcat, rtol=1e-6)


def test_exact_mode_counts_multilabel_documents_once():
    X = np.array([[1, 0], [0, 1], [1, 1]], dtype=float)
    Y = np.array([[1, 1, 0], [0, 0, 1], [1, 1, 0]])
    exact = NaiveBayes().fit(X, Y)
    tutorial = NaiveBayes(mode="tutorial").fit(X, Y)
    # complement of category 0 is document 1 alone: word counts [0, 1]
    F_bar = exact.feature_total_ - exact.feature_count_[0]
    np.testing.assert_array_equal(F_bar, [0, 1])
    assert not np.allclose(exact.weights_[:, 0], tutorial.weights_[:, 0])


EVERY_EVENT_MODEL = [
    (dict(event_model="multinomial"), "small_corpus"),
    (dict(event_model="multinomial", binarize=True, mode="tutorial"), "small_corpus"),
    (dict(event_model="bernoulli"), "small_corpus"),
    (dict(event_model="complement", norm=True), "small_corpus"),
    (dict(event_model="gaussian"), "small_corpus"),
    (dict(event_model="gaussian"), "mixed_columns"),
    (dict(event_model="mixed"), "mixed_columns"),
    (dict(event_model="mixed", column_models=["0-5=gaussian", "36=gaussian"]), "mixed_columns"),
]


def training_data(request, name):
    data = request.getfixturevalue(name)
    if name == "small_corpus":
        return data.X_train, data.Y_train
    return sp.csr_matrix(data[0]), data[1]


@pytest.mark.filterwarnings("ignore:.*prior alone")
@pytest.mark.parametrize("params, data", EVERY_EVENT_MODEL, ids=lambda p: p if isinstance(p, str) else
                         "-".join(f"{v}" for v in p.values()))
def test_partial_fit_in_chunks_equals_fit(request, params, data):
    X, Y = training_data(request, data)
    whole = NaiveBayes(**params).fit(X, Y)
    chunked = NaiveBayes(**params)
    for start in range(0, X.shape[0], 200):
        chunked.partial_fit(X[start:start + 200], Y[start:start + 200])
    assert chunked.n_documents_ == X.shape[0]
    scale = np.abs(whole.weights_).max()
    np.testing.assert_allclose(chunked.weights_, whole.weights_, rtol=1e-6, atol=1e-7 * scale)
    np.testing.assert_allclose(chunked.bias_, whole.bias_, rtol=1e-6, atol=1e-7 * np.abs(whole.bias_).max())
    if params["event_model"] == "mixed":
        np.testing.assert_array_equal(chunked.column_event_models_, whole.column_event_models_)


def test_log_odds_are_built_once_when_first_used(small_corpus, monkeypatch):
    from mlnb.models.naive_bayes import multinomial

    calls = []
    build = multinomial.log_odds
    monkeypatch.setattr(multinomial, "log_odds", lambda *args: calls.append(1) or build(*args))
    X, Y = small_corpus.X_train, small_corpus.Y_train
    model = NaiveBayes()
    for start in range(0, 1000, 250):
        model.partial_fit(X[start:start + 250], Y[start:start + 250])
    assert calls == []  # counting only
    with pytest.warns(UserWarning, match="prior alone"):  # the counts' first use says it, once
        model.decision_function(X)
    model.decision_function(X), model.weights_, model.bias_, model.untrainable_categories_
    assert len(calls) == 1
    model.partial_fit(X[1000:], Y[1000:])
    np.testing.assert_array_equal(model.weights_, NaiveBayes().fit(X, Y).weights_)
    assert len(calls) == 3  # once more for the new counts, once for the model fitted in one go


def test_set_params_re_smooths_the_counts_without_recounting(small_corpus):
    X, Y = small_corpus.X_train, small_corpus.Y_train
    model = NaiveBayes(alpha=0.5).fit(X, Y)
    model.weights_
    counts = model.counts_
    model.set_params(alpha=2.0)
    assert model.counts_ is counts
    np.testing.assert_array_equal(model.weights_, NaiveBayes(alpha=2.0).fit(X, Y).weights_)
    model.set_params(event_model="gaussian")
    with pytest.raises(MlnbError, match="the counts were made for other parameters .* fit again"):
        model.weights_


def test_dense_and_sparse_labels_give_the_same_model(small_corpus):
    X, Y = small_corpus.X_train, small_corpus.Y_train
    a = NaiveBayes().fit(X, Y)
    b = NaiveBayes().fit(X.toarray(), Y.toarray())
    np.testing.assert_array_equal(a.weights_, b.weights_)


def test_predict_proba_is_sigmoid_of_log_odds_and_never_nan(small_corpus):
    nb = NaiveBayes().fit(small_corpus.X_train, small_corpus.Y_train)
    z = nb.decision_function(small_corpus.X_test)
    p = nb.predict_proba(small_corpus.X_test)
    assert z.dtype == np.float32 and z.shape == (small_corpus.X_test.shape[0], 20)
    np.testing.assert_allclose(p, 1 / (1 + np.exp(-z.astype(np.float64))), rtol=1e-5)
    extreme = nb.predict_proba(small_corpus.X_test * 1000)
    assert np.isfinite(extreme).all() and extreme.min() >= 0 and extreme.max() <= 1


def test_category_without_training_positives_scores_by_prior_only():
    X = sp.csr_matrix(np.array([[1, 0], [0, 1], [1, 1]], dtype=float))
    Y = np.array([[1, 0], [0, 0], [1, 0]])
    with pytest.warns(UserWarning, match="no positive or no negative"):
        nb = NaiveBayes().fit(X, Y)
    assert list(nb.untrainable_categories_) == [1]
    np.testing.assert_array_equal(nb.weights_[:, 1], 0)
    np.testing.assert_allclose(nb.bias_[1], np.log(0.5 / 3.5), rtol=1e-6)


def test_works_inside_sklearn_tools(small_corpus):
    model = clone(NaiveBayes(alpha=0.1, event_model="bernoulli"))
    assert model.get_params()["alpha"] == 0.1
    model.set_params(alpha=0.2).fit(small_corpus.X_train, small_corpus.Y_train)
    assert model.predict(small_corpus.X_test).shape == small_corpus.Y_test.shape


@pytest.mark.parametrize("params, message", [
    (dict(alpha=0), "alpha must be > 0"), (dict(alpha=-1), "alpha must be > 0"),
    (dict(m=0, smoothing="m_estimate"), "m must be > 0"),
    (dict(event_model="lognormal"), "event_model must be one of"),
    (dict(event_model="gaussian", var_smoothing=-1e-9), "var_smoothing must be >= 0"),
    (dict(event_model="gaussian", binarize=True), "binarize applies to .* not to event_model='gaussian'"),
    (dict(event_model="mixed", binarize=True), "binarize applies to .* not to event_model='mixed'"),
    (dict(event_model="gaussian", mode="tutorial"), "mode='tutorial' exists for .* not event_model='gaussian'"),
    (dict(event_model="mixed", mode="tutorial"), "mode='tutorial' exists for .* not event_model='mixed'"),
    (dict(event_model="multinomial", norm=True), "norm applies to event_model='complement' only"),
    (dict(event_model="gaussian", column_models=["0=gaussian"]),
     "column_models applies to event_model='mixed' only, not 'gaussian'"),
    (dict(event_model="mixed", column_models="0=gaussian"), "column_models must be a list"),
])
def test_bad_parameters_are_rejected(small_corpus, params, message):
    with pytest.raises(MlnbError, match=message):
        NaiveBayes(**params).fit(small_corpus.X_train, small_corpus.Y_train)


@pytest.mark.parametrize("event_model", ["multinomial", "bernoulli", "complement"])
def test_count_models_reject_negative_values(small_corpus, event_model):
    with pytest.raises(MlnbError, match="non-negative"):
        NaiveBayes(event_model=event_model).fit(-small_corpus.X_train, small_corpus.Y_train)


@pytest.mark.filterwarnings("ignore:.*prior alone")
@pytest.mark.parametrize("event_model", ["gaussian", "mixed"])
def test_real_models_accept_negative_values(small_corpus, event_model):
    X = -small_corpus.X_train
    model = NaiveBayes(event_model=event_model).fit(X, small_corpus.Y_train)
    assert np.isfinite(model.decision_function(X)).all()
    with pytest.raises(MlnbError, match="X has 1999 features, but NaiveBayes was fitted with 2000"):
        model.decision_function(X[:, :1999])


def test_partial_fit_rejects_a_chunk_of_another_shape(small_corpus):
    X, Y = small_corpus.X_train, small_corpus.Y_train
    model = NaiveBayes().partial_fit(X[:100], Y[:100])
    with pytest.raises(MlnbError, match=r"partial_fit got X \(100, 1999\) / Y \(100, 20\), but earlier chunks "
                                        "had 2000 features and 20 categories"):
        model.partial_fit(X[100:200, :1999], Y[100:200])


def test_feature_mismatch_and_negative_values_are_rejected(small_corpus):
    nb = NaiveBayes().fit(small_corpus.X_train, small_corpus.Y_train)
    with pytest.raises(MlnbError, match="X has 1999 features, but NaiveBayes was fitted with 2000"):
        nb.decision_function(small_corpus.X_test[:, :1999])
    with pytest.raises(MlnbError, match="non-negative"):
        NaiveBayes().fit(-small_corpus.X_train, small_corpus.Y_train)
    with pytest.raises(MlnbError, match="not fitted"):
        NaiveBayes().decision_function(small_corpus.X_test)


def test_the_examples_in_the_event_model_docstrings_hold():
    from mlnb.models.naive_bayes import bernoulli, complement, gaussian, mixed, multinomial

    for module in (multinomial, bernoulli, complement, gaussian, mixed):
        result = doctest.testmod(module)
        assert result.attempted > 0 and result.failed == 0, module.__name__
