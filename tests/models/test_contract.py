"""One contract for every registered model kind (and every Naive Bayes event model).

Adding a kind to the registry adds it here: fit, partial_fit where it has one,
decision_function shape and dtype, the not-fitted and wrong-feature-count errors,
clone, and defaults that live in one place (the options dataclass).
"""

import dataclasses

import numpy as np
import pytest
from sklearn.base import clone

from mlnb import MlnbError
from mlnb.data.synthetic import make_rcv1_like
from mlnb.models import KINDS
from mlnb.models.naive_bayes import EVENT_MODELS

VARIANTS = [(name, {}) for name in KINDS] + [("naive_bayes", {"event_model": m}) for m in EVENT_MODELS
                                               if m != "multinomial"]
IDS = [name + "".join(f"-{v}" for v in extra.values()) for name, extra in VARIANTS]


@pytest.fixture(scope="module")
def data():
    return make_rcv1_like(n_documents=1000, n_features=300, n_categories=20, seed=3)


def build(name, extra):
    kind = KINDS[name]
    return kind.build(dataclasses.replace(kind.options(), **extra), seed=0)


@pytest.mark.parametrize("name", sorted(KINDS))
def test_estimator_defaults_are_the_options_defaults(name):
    kind = KINDS[name]
    assert kind.build(kind.options()).get_params() == kind.estimator().get_params()
    for f in dataclasses.fields(kind.options):
        assert f.metadata.get("help"), f"{name}.{f.name} has no help line"


@pytest.mark.parametrize("name, extra", VARIANTS, ids=IDS)
def test_fit_and_score_shapes(name, extra, data):
    model = build(name, extra)
    assert model.fit(data.X_train, data.Y_train) is model
    scores = model.decision_function(data.X_test)
    assert scores.shape == data.Y_test.shape and scores.dtype == np.float32
    assert np.isfinite(scores).all()
    proba = model.predict_proba(data.X_test)
    assert proba.shape == scores.shape and ((proba >= 0) & (proba <= 1)).all()
    assert model.weights_.shape[1] == data.Y_train.shape[1] and model.bias_.shape == (data.Y_train.shape[1],)
    assert model.n_features_in_ == data.X_train.shape[1]


@pytest.mark.parametrize("name, extra", VARIANTS, ids=IDS)
def test_partial_fit_in_chunks_equals_fit(name, extra, data):
    model = build(name, extra)
    if not hasattr(model, "partial_fit"):
        pytest.skip(f"{name} has no partial_fit")
    whole = model.fit(data.X_train, data.Y_train).decision_function(data.X_test)
    chunked = clone(model)
    n = data.X_train.shape[0]
    if hasattr(model, "npasses"):  # a minibatch learner: partial_fit is one more pass over what it is given
        for _ in range(model.npasses):
            chunked.partial_fit(data.X_train, data.Y_train)
        np.testing.assert_array_equal(chunked.decision_function(data.X_test), whole)
        return
    for start in range(0, n, n // 3 + 1):  # a counting learner: the counts of the chunks add up
        chunked.partial_fit(data.X_train[start:start + n // 3 + 1], data.Y_train[start:start + n // 3 + 1])
    np.testing.assert_allclose(chunked.decision_function(data.X_test), whole, rtol=1e-5,
                               atol=1e-5 * np.abs(whole).max())


@pytest.mark.parametrize("name, extra", VARIANTS, ids=IDS)
def test_errors_name_the_problem(name, extra, data):
    model = build(name, extra)
    with pytest.raises(MlnbError, match="not fitted yet"):
        model.decision_function(data.X_test)
    model.fit(data.X_train, data.Y_train)
    with pytest.raises(MlnbError, match=f"X has 299 features, but {type(model).__name__} was fitted with 300"):
        model.decision_function(data.X_test[:, :299])


@pytest.mark.parametrize("name, extra", VARIANTS, ids=IDS)
def test_clone_keeps_parameters_and_drops_the_fit(name, extra, data):
    model = build(name, extra).fit(data.X_train, data.Y_train)
    copy = clone(model)
    assert copy.get_params() == model.get_params()
    assert not hasattr(copy, "weights_")


MULTICLASS = [(name, extra) for name, extra in VARIANTS if "multiclass" in KINDS[name].tasks]


@pytest.mark.parametrize("name, extra", MULTICLASS, ids=[name + "".join(f"-{v}" for v in extra.values())
                                                        for name, extra in MULTICLASS])
def test_multiclass_posteriors_and_decisions(name, extra, data):
    """task = "multiclass": 1-D labels in, joint scores out, posteriors that sum to one, an argmax."""
    kind = KINDS[name]
    model = kind.build(dataclasses.replace(kind.options(), **extra), seed=0, task="multiclass")
    y = np.asarray(data.Y_train.argmax(axis=1)).ravel() % 4  # four classes, one per document
    model.fit(data.X_train, y)
    scores = model.decision_function(data.X_test)
    assert scores.shape == (data.X_test.shape[0], 4) and scores.dtype == np.float32
    proba = model.predict_proba(data.X_test)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-9)
    np.testing.assert_allclose(np.exp(model.predict_log_proba(data.X_test)), proba, rtol=1e-9, atol=1e-300)
    np.testing.assert_array_equal(model.predict(data.X_test), proba.argmax(axis=1))
    assert model.scores_are_joint_log_likelihoods == (extra.get("event_model") != "complement")
    with pytest.raises(MlnbError, match="row|document"):
        model.fit(data.X_train, data.Y_train)  # several categories per document: not multiclass
