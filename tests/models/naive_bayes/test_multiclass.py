"""Multiclass Naive Bayes: labels, priors, posteriors, untrainable classes, partial_fit, two classes =
one category, and the options that are multiclass only. (Oracles: test_multiclass_oracles.py.)"""

import doctest

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone

from mlnb import MlnbError, NaiveBayes
from mlnb.models.naive_bayes import KIND, NaiveBayesOptions, bernoulli, multiclass, multinomial

EVERY_EVENT_MODEL = [
    (dict(event_model="multinomial"), "single_label_corpus"),
    (dict(event_model="multinomial", binarize=True), "single_label_corpus"),
    (dict(event_model="bernoulli"), "single_label_corpus"),
    (dict(event_model="complement"), "single_label_corpus"),
    (dict(event_model="complement", norm=True, reference="none"), "single_label_corpus"),
    (dict(event_model="gaussian"), "single_label_corpus"),
    (dict(event_model="gaussian"), "mixed_classes"),
    (dict(event_model="mixed"), "mixed_classes"),
]
IDS = ["-".join(str(v) for v in params.values()) + f"-{data}" for params, data in EVERY_EVENT_MODEL]


@pytest.fixture(scope="module")
def mixed_classes(mixed_columns):
    X, Y, _ = mixed_columns
    return sp.csr_matrix(X), np.digitize(X[:, 20], np.quantile(X[:, 20], [0.3, 0.7]))  # 3 classes


def one_hot(y, K=None):
    return np.eye(y.max() + 1 if K is None else K, dtype=int)[y]


@pytest.mark.parametrize("params, data", EVERY_EVENT_MODEL, ids=IDS)
def test_partial_fit_in_chunks_equals_fit(request, params, data):
    X, y = request.getfixturevalue(data)
    whole = NaiveBayes(task="multiclass", **params).fit(X, y)
    chunked = NaiveBayes(task="multiclass", **params)
    for start in range(0, X.shape[0], 150):
        chunked.partial_fit(X[start:start + 150], y[start:start + 150])
    built, expected = chunked._log_odds(), whole._log_odds()
    np.testing.assert_allclose(built.weights64, expected.weights64, rtol=1e-12,
                               atol=1e-12 * np.abs(expected.weights64).max())
    np.testing.assert_allclose(built.bias64, expected.bias64, rtol=1e-12, atol=1e-12 * np.abs(expected.bias64).max())
    np.testing.assert_allclose(chunked.predict_log_proba(X), whole.predict_log_proba(X), atol=1e-9)


@pytest.mark.parametrize("params, data", EVERY_EVENT_MODEL, ids=IDS)
def test_posteriors_are_a_softmax_of_the_scores(request, params, data):
    X, y = request.getfixturevalue(data)
    model = NaiveBayes(task="multiclass", **params).fit(X, y)
    J = model.decision_function(X)
    assert J.dtype == np.float32 and J.shape == (X.shape[0], y.max() + 1)
    log_p, p = model.predict_log_proba(X), model.predict_proba(X)
    assert log_p.dtype == p.dtype == np.float64
    np.testing.assert_allclose(p.sum(axis=1), 1, rtol=1e-12)
    np.testing.assert_allclose(p, np.exp(log_p), rtol=1e-12)
    softmax = np.exp(J - J.max(axis=1, keepdims=True))
    np.testing.assert_allclose(p, softmax / softmax.sum(axis=1, keepdims=True), atol=1e-3)  # float32 J
    prediction = model.predict(X)
    assert prediction.shape == (X.shape[0],)
    np.testing.assert_array_equal(prediction, np.argmax(log_p, axis=1))
    assert model.predict_proba(X, dtype=np.float32).dtype == np.float32


def test_log_posterior_is_stable_far_out():
    J = np.array([[-1e5, -1e5 - 3.0], [1e5, 0.0], [5.0, 5.0]])
    expected = np.array([[-np.log1p(np.exp(-3.0)), -3 - np.log1p(np.exp(-3.0))], [0.0, -1e5], [-np.log(2)] * 2])
    np.testing.assert_allclose(multiclass.log_posterior(J), expected, rtol=1e-12)


@pytest.mark.parametrize("event_model, module", [("multinomial", multinomial), ("bernoulli", bernoulli)])
@pytest.mark.parametrize("data", ["tweets_dtm", "single_label_corpus"])
def test_two_classes_give_the_log_odds_of_one_category(request, data, event_model, module):
    # multiclass J_1 − J_0 = the one-category multilabel log-odds: the complement of class 1 is class 0
    X, y = request.getfixturevalue(data)
    y = (y == 0).astype(int)  # tweets: negative vs the rest
    two_classes = NaiveBayes(event_model=event_model, task="multiclass").fit(X, y)
    one_category = NaiveBayes(event_model=event_model).fit(X, y[:, None])
    log_p = two_classes.predict_log_proba(X)
    expected = one_category.decision_function(X)[:, 0]
    np.testing.assert_allclose(log_p[:, 1] - log_p[:, 0], expected, rtol=1e-5, atol=1e-5 * np.abs(expected).max())
    # and exactly so in float64, W and b against the module's log-odds formula
    counts, built = two_classes.counts_, two_classes._log_odds()
    alpha, prior = two_classes.effective_alpha_, np.log(counts.N[1:]) - np.log(counts.N[:1])
    # the complement of class 1 is class 0: F̄ = t − F_1 = F_0
    if module is multinomial:
        W, b = multinomial.log_odds(counts.F[1:], counts.t, prior, alpha, dtype=np.float64)
    else:
        W, b = bernoulli.log_odds(counts.F[1:], counts.t, counts.N[1:], counts.N[:1], prior, alpha, dtype=np.float64)
    np.testing.assert_allclose(built.weights64[:, 1] - built.weights64[:, 0], W[:, 0], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(built.bias64[1] - built.bias64[0], b[0], rtol=1e-12)


def test_class_labels_one_hot_dense_and_sparse_give_the_same_model(single_label_corpus):
    X, y = single_label_corpus
    models = [NaiveBayes(task="multiclass").fit(X, labels)
              for labels in (y, y.astype(float), one_hot(y), sp.csr_matrix(one_hot(y)))]
    for model in models[1:]:
        np.testing.assert_array_equal(model._log_odds().weights64, models[0]._log_odds().weights64)
        np.testing.assert_array_equal(model.bias_, models[0].bias_)


def test_a_class_first_seen_in_a_later_chunk_adds_a_class():
    X = sp.csr_matrix(np.array([[1, 0], [0, 2], [1, 1], [3, 0]], dtype=float))
    y = np.array([0, 1, 2, 0])
    chunked = NaiveBayes(task="multiclass").partial_fit(X[:2], y[:2]).partial_fit(X[2:], y[2:])
    assert chunked.counts_.shape == (3, 2)
    whole = NaiveBayes(task="multiclass").fit(X, y)
    np.testing.assert_array_equal(chunked._log_odds().weights64, whole._log_odds().weights64)
    # a chunk without the last class is counted into all of them
    again = NaiveBayes(task="multiclass").partial_fit(X[:3], y[:3]).partial_fit(X[3:], y[3:])
    np.testing.assert_array_equal(again.class_count_, [2, 1, 1])


@pytest.mark.parametrize("Y, message", [
    (np.array([[1, 0], [0, 0], [0, 1]]), r"exactly one 1 per row.*; row 1 has 0 labels"),
    (sp.csr_matrix(np.array([[1, 0], [0, 1], [1, 1]])), r"exactly one 1 per row.*; row 2 has 2 labels"),
    (np.array([[1, 0], [0, 2], [0, 1]]), "0/1"),
    (np.array([0, -1, 1]), r"integers 0..K−1; document 1 has label -1"),
    (np.array([0, 1.5, 1]), r"integers 0..K−1; document 1 has label 1.5"),
    (np.array([0, 1]), r"one label per document \(3\), got 2"),
])
def test_bad_labels_are_rejected_naming_the_row(Y, message):
    X = np.eye(3)
    with pytest.raises(MlnbError, match=message):
        NaiveBayes(task="multiclass").fit(X, Y)


@pytest.mark.parametrize("params, message", [
    (dict(class_prior="given", class_prior_values=[0.5, 0.5]), "class_prior_values has 2 values, but the "
                                                                "training data have 3 classes"),
    (dict(class_prior="given", class_prior_values=[0.5, 0.3, 0.1]), "class_prior_values must sum to 1"),
    (dict(class_prior="given", class_prior_values=[1.2, -0.2, 0.0]), "class_prior_values must be positive"),
    (dict(class_prior="given"), "class_prior_values must be positive, one per class"),
    (dict(class_prior="uniform", class_prior_values=[0.5, 0.3, 0.2]),
     "class_prior_values applies to class_prior='given' only"),
    (dict(class_prior="laplace"), "class_prior must be one of"),
    (dict(class_prior="m_estimate", prior_m=0), "prior_m must be > 0"),
    (dict(mode="tutorial"), "mode='tutorial' .* multilabel only"),
    (dict(task="multi"), "task must be one of"),
])
def test_bad_multiclass_parameters_are_rejected(params, message):
    X, y = np.eye(3), np.array([0, 1, 2])
    with pytest.raises(MlnbError, match=message):
        NaiveBayes(**{"task": "multiclass", **params}).fit(X, y)


@pytest.mark.parametrize("params", [dict(class_prior="uniform"), dict(prior_m=2.0),
                                    dict(class_prior_values=[0.5, 0.5])])
def test_multilabel_rejects_the_multiclass_options(params):
    (name,) = params
    with pytest.raises(MlnbError, match=f"{name} is multiclass only"):
        NaiveBayes(**params).fit(np.eye(3), np.eye(3, dtype=int))


def test_priors_set_the_bias_by_their_formula():
    X = np.array([[1, 0], [2, 1], [0, 3], [1, 1]], dtype=float)
    y = np.array([0, 0, 0, 1])  # N = (3, 1), n = 4, K = 2

    def bias(**params):
        model = NaiveBayes(event_model="multinomial", task="multiclass", alpha=1.0, **params).fit(X, y)
        return model._log_odds().bias64

    np.testing.assert_allclose(bias(), np.log([3 / 4, 1 / 4]))
    np.testing.assert_allclose(bias(class_prior="uniform"), np.log([1 / 2, 1 / 2]))
    np.testing.assert_allclose(bias(class_prior="m_estimate", prior_m=2.0), np.log([(3 + 1) / 6, (1 + 1) / 6]))
    np.testing.assert_allclose(bias(class_prior="given", class_prior_values=[0.1, 0.9]), np.log([0.1, 0.9]))


@pytest.mark.parametrize("params, data", EVERY_EVENT_MODEL, ids=IDS)
def test_a_class_without_documents_keeps_finite_scores(request, params, data):
    X, y = request.getfixturevalue(data)
    K = y.max() + 2  # one class more than the labels name: no training document
    with pytest.warns(UserWarning, match="1 classes have no training documents"):
        model = NaiveBayes(task="multiclass", **params).fit(X, one_hot(y, K))
    assert list(model.untrainable_categories_) == [K - 1]
    assert np.isfinite(model.decision_function(X)).all() and np.isfinite(model.predict_log_proba(X)).all()
    built, n = model._log_odds(), X.shape[0]
    if params["event_model"] == "multinomial":  # prior (0 + ½)/(n + ½K); θ = 1/V from the smoothing alone
        assert built.bias64[-1] == pytest.approx(np.log(0.5 / (n + 0.5 * K)), rel=1e-12)
        np.testing.assert_allclose(built.weights64[:, -1], -np.log(X.shape[1]), rtol=1e-12)
    if params["event_model"] == "bernoulli":  # p = ½: no word moves it
        np.testing.assert_array_equal(built.weights64[:, -1], 0.0)


def test_an_empty_gaussian_class_takes_the_moments_of_all_documents(mixed_classes):
    X, y = mixed_classes
    with pytest.warns(UserWarning, match="no training documents"):
        model = NaiveBayes(event_model="gaussian", task="multiclass", class_prior="uniform").fit(X, one_hot(y, 4))
    everyone = NaiveBayes(event_model="gaussian", task="multiclass").fit(X, np.zeros(X.shape[0], dtype=int))
    built, pooled = model._log_odds(), everyone._log_odds()
    np.testing.assert_allclose(built.weights64[:, 3], pooled.weights64[:, 0], rtol=1e-12)
    assert built.bias64[3] - np.log(1 / 4) == pytest.approx(pooled.bias64[0], rel=1e-12)  # pooled's prior: log 1


@pytest.mark.filterwarnings("ignore:.*prior alone")
def test_multilabel_counts_are_not_read_as_classes(small_corpus):
    model = NaiveBayes().fit(small_corpus.X_train, small_corpus.Y_train)
    model.set_params(task="multiclass")
    with pytest.raises(MlnbError, match="other than one label each .* fit again with task='multiclass'"):
        model.predict_proba(small_corpus.X_test)


def test_single_class_complement_scores_by_its_prior_as_sklearn():
    X, y = np.array([[1.0, 2.0], [0.0, 1.0]]), np.array([0, 0])
    model = NaiveBayes(event_model="complement", task="multiclass", reference="none").fit(X, y)
    np.testing.assert_array_equal(model.bias_, [0.0])  # log prior_0 = log 1
    np.testing.assert_array_equal(model.predict_log_proba(X), 0.0)


def test_threshold_is_multilabel_only(single_label_corpus):
    X, y = single_label_corpus
    with pytest.raises(MlnbError, match="threshold applies to task='multilabel'"):
        NaiveBayes(task="multiclass").fit(X, y).predict(X, threshold=0.3)


def test_what_the_scores_are():
    for event_model in ("multinomial", "bernoulli", "gaussian", "mixed"):
        assert NaiveBayes(event_model=event_model).scores_are_log_odds
        assert not NaiveBayes(event_model=event_model).scores_are_joint_log_likelihoods
        assert NaiveBayes(event_model=event_model, task="multiclass").scores_are_joint_log_likelihoods
        assert not NaiveBayes(event_model=event_model, task="multiclass").scores_are_log_odds
    complement = NaiveBayes(event_model="complement", task="multiclass")
    assert not complement.scores_are_log_odds and not complement.scores_are_joint_log_likelihoods


def test_the_model_kind_builds_multiclass_with_its_options(single_label_corpus):
    X, y = single_label_corpus
    assert KIND.tasks == ("multilabel", "multiclass")
    options = NaiveBayesOptions(event_model="bernoulli", class_prior="given",
                                class_prior_values=[0.2, 0.2, 0.2, 0.2, 0.2])
    model = KIND.build(options, seed=0, task="multiclass")
    assert model.task == "multiclass" and model.class_prior_values == (0.2,) * 5
    assert clone(model).get_params() == model.get_params()
    assert model.fit(X, y).predict(X).shape == (X.shape[0],)
    assert KIND.describe(options) == "Naive Bayes (bernoulli, given prior)"
    with pytest.raises(MlnbError, match="class_prior is multiclass only"):
        KIND.build(options, seed=0).fit(X, one_hot(y))


@pytest.mark.filterwarnings("ignore:.*prior alone")
def test_multilabel_predict_log_proba_is_the_log_of_predict_proba(small_corpus):
    model = NaiveBayes().fit(small_corpus.X_train, small_corpus.Y_train)
    np.testing.assert_allclose(np.exp(model.predict_log_proba(small_corpus.X_test)),
                               model.predict_proba(small_corpus.X_test), rtol=1e-12)


def test_the_examples_in_the_docstrings_hold():
    result = doctest.testmod(multiclass)
    assert result.attempted > 0 and result.failed == 0
