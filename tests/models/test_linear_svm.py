"""The linear SVM equals OneVsRestClassifier(LinearSVC(...)) and scores margins, not log-odds."""

import dataclasses

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.multiclass import OneVsRestClassifier
from sklearn.svm import LinearSVC

from mlnb import LinearSVM, MlnbError
from mlnb.config import load_config
from mlnb.models import KINDS
from mlnb.models.linear_svm import LinearSVMOptions


@pytest.fixture(scope="module")
def data(small_corpus):
    Y = small_corpus.Y_train.toarray().astype(np.int64)
    keep = np.flatnonzero((Y.sum(axis=0) > 0) & (Y.sum(axis=0) < Y.shape[0]))
    return small_corpus.X_train, Y[:, keep], small_corpus.X_test


SETTINGS = [
    dict(),  # the defaults: squared hinge, C = 1, dual "auto" (the dual here: 1,500 documents < 2,000 words)
    dict(loss="hinge", C=0.1, class_weight="balanced"),  # the dual
    dict(C=0.3, dual="primal", tol=1e-5, max_iter=2000),  # the primal
]


@pytest.mark.slow
@pytest.mark.parametrize("settings", SETTINGS, ids=["defaults", "hinge-balanced", "primal"])
def test_decision_function_equals_sklearn_one_vs_rest(data, settings):
    X, Y, X_test = data
    ours = LinearSVM(**settings, random_state=3).fit(X, Y)
    sk = {"dual": {"dual": True, "primal": False}.get(settings.get("dual"), "auto"),
          "class_weight": settings.get("class_weight")}
    reference = OneVsRestClassifier(LinearSVC(**(settings | sk), random_state=3)).fit(X, Y)
    # W and b are the per-category coefficients to float32 rounding (relative 6e-8) ...
    np.testing.assert_allclose(ours.weights_, np.column_stack([e.coef_.ravel() for e in reference.estimators_]),
                               rtol=1e-6, atol=1e-12)
    np.testing.assert_allclose(ours.bias_, [e.intercept_[0] for e in reference.estimators_], rtol=1e-6)
    # ... and the float32 scores the decision_function to 1e-6 of the scores' scale (float32's eps is 1.2e-7)
    expected = reference.decision_function(X_test)
    np.testing.assert_allclose(ours.decision_function(X_test), expected, rtol=0,
                               atol=1e-6 * np.abs(expected).max())


@pytest.mark.slow
def test_parallel_equals_serial(data):
    X, Y, _ = data
    serial = LinearSVM(C=0.5).fit(X, Y)
    parallel = LinearSVM(C=0.5, n_jobs=2).fit(X, Y)
    np.testing.assert_array_equal(serial.weights_, parallel.weights_)
    np.testing.assert_array_equal(serial.bias_, parallel.bias_)


def test_untrainable_categories_get_prior_log_odds(small_corpus):
    X = small_corpus.X_train
    n = X.shape[0]
    Y = np.zeros((n, 3), dtype=int)
    Y[::3, 0] = 1  # trainable
    Y[:, 2] = 1  # every document positive
    model = LinearSVM().fit(X, Y)
    assert list(model.untrainable_categories_) == [1, 2]
    np.testing.assert_array_equal(model.weights_[:, 1:], 0)
    assert model.bias_[1] == pytest.approx(np.log(0.5 / (n + 0.5)), rel=1e-6)
    assert model.bias_[2] == pytest.approx(np.log((n + 0.5) / 0.5), rel=1e-6)
    assert np.abs(model.weights_[:, 0]).max() > 0
    assert list(model.n_iter_[1:]) == [0, 0] and model.n_iter_[0] > 0


def test_scores_are_margins_not_log_odds(data):
    X, Y, X_test = data
    model = LinearSVM().fit(X, Y)
    assert model.scores_are_log_odds is False
    # predict at 0.5 is the SVM's own decision, margin >= 0
    np.testing.assert_array_equal(model.predict(X_test), (model.decision_function(X_test) >= 0).astype(np.int8))


def test_estimator_defaults_are_the_options_defaults():
    options = LinearSVMOptions()
    params = LinearSVM().get_params()
    for field in dataclasses.fields(LinearSVMOptions):
        assert params[field.name] == getattr(options, field.name)
    assert KINDS["linear_svm"].build(options).get_params() == params
    assert KINDS["linear_svm"].tasks == ("multilabel",)


def test_unconverged_categories_are_reported_once(data):
    X, Y, _ = data
    with pytest.warns(ConvergenceWarning, match=r"max_iter = 1 .* categories \(unconverged_categories_\)") as caught:
        model = LinearSVM(max_iter=1, dual="dual").fit(X, Y)
    assert len([w for w in caught if issubclass(w.category, ConvergenceWarning)]) == 1
    assert len(model.unconverged_categories_) > 0


def test_bad_options_are_rejected(data):
    X, Y, _ = data
    with pytest.raises(MlnbError, match="loss must be one of"):
        LinearSVM(loss="log").fit(X, Y)
    with pytest.raises(MlnbError, match="class_weight must be one of"):
        LinearSVM(class_weight="auto").fit(X, Y)
    with pytest.raises(MlnbError, match="dual must be one of"):
        LinearSVM(dual="maybe").fit(X, Y)
    with pytest.raises(MlnbError, match="'hinge' is solved in the dual only"):
        LinearSVM(loss="hinge", dual="primal").fit(X, Y)
    with pytest.raises(MlnbError, match="C must be > 0"):
        LinearSVM(C=0).fit(X, Y)


def test_config_rejects_hinge_in_the_primal_when_loaded(tmp_path):
    path = tmp_path / "svm.toml"
    path.write_text('[data]\nsource = "synthetic"\n\n[models.svm]\nkind = "linear_svm"\nloss = "hinge"\n'
                    'dual = "primal"\n')
    with pytest.raises(MlnbError, match="'hinge' is solved in the dual only"):
        load_config(path)
    path.write_text('[data]\nsource = "synthetic"\n\n[models.svm]\nkind = "linear_svm"\nclass_weight = "balanced"\n')
    assert load_config(path).models["svm"].options.class_weight == "balanced"
