"""One contract for every registered model kind (and every Naive Bayes event model).

Adding a kind to the registry adds it here: fit, partial_fit where it has one,
decision_function shape and dtype, the not-fitted and wrong-feature-count errors,
clone, defaults that live in one place (the options dataclass), and what the kind
tells the study it can do (fits_from, count_request, fit_streamed, score_type,
requires_non_negative): a streamed fit through a trainer over chunks scores as the
fit in memory.
"""

import dataclasses
from types import SimpleNamespace

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone

from mlnb import MlnbError
from mlnb.data.synthetic import make_rcv1_like
from mlnb.models import KINDS
from mlnb.models._linear import as_one_hot
from mlnb.models.naive_bayes import EVENT_MODELS
from mlnb.models.registry import FITS_FROM, SCORE_TYPES, CountRequest

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
    if KINDS[name].weights == "dense":  # a kind with sparse weights never forms V × K
        assert model.weights_.shape[1] == data.Y_train.shape[1]
    assert model.bias_.shape == (data.Y_train.shape[1],)
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


# -- what a kind can do, as the study asks it (``ModelKind``'s capabilities) ----------------------
TASK_VARIANTS = [(name, extra, task) for name, extra in VARIANTS for task in KINDS[name].tasks]
TASK_IDS = [f"{i}-{task}" for (name, extra), i in zip(VARIANTS, IDS) for task in KINDS[name].tasks]


def options_of(name, extra):
    kind = KINDS[name]
    return dataclasses.replace(kind.options(), **extra)


@pytest.mark.parametrize("name, extra, task", TASK_VARIANTS, ids=TASK_IDS)
def test_capabilities_are_consistent(name, extra, task, data):
    """fits_from, count_request, score_type and requires_non_negative say what the estimator does."""
    kind, options = KINDS[name], options_of(name, extra)
    estimator = kind.build(options, seed=0, task=task)
    assert kind.fits_from in FITS_FROM
    assert kind.streams == (kind.fits_from != "memory") == (kind.fit_streamed is not None)
    request = kind.count_request(estimator)
    if kind.fits_from == "memory":
        assert request is None  # nothing reads counts it cannot use
    if request is not None:
        assert isinstance(request, CountRequest) and hasattr(request.estimator, "partial_fit")
        assert not hasattr(request.estimator, "counts_")  # unfitted: the trainer counts into a clone
    score_type = kind.score_type(options, task)
    assert score_type in SCORE_TYPES
    assert (score_type == "log_odds") == (task == "multilabel" and getattr(estimator, "scores_are_log_odds", True))
    assert (score_type == "joint_log_likelihood") == getattr(estimator, "scores_are_joint_log_likelihoods", False)
    non_negative = kind.requires_non_negative(options)
    assert isinstance(non_negative, bool)
    X, Y = data.X_train, data.Y_train
    if task == "multiclass":
        Y = np.asarray(Y.argmax(axis=1)).ravel() % 4
    negative = -X
    if not non_negative:  # it takes negative values as they are
        assert np.isfinite(estimator.fit(negative, Y).decision_function(negative)).all()
    elif not getattr(estimator, "_scores_presence", False):  # presence [X > 0] reads a negative as absent
        with pytest.raises(MlnbError, match="non-negative"):
            estimator.fit(negative, Y)


def presence(X):
    """x̂ = 1{x > 0}, CSR float32 (what the study's trainer counts and trains on for binarize_input)."""
    X = X.copy()
    X.data = (X.data > 0).astype(np.float32)
    return X


class InMemoryTrainer:
    """A ``StreamTrainer`` over chunks held in memory, doing what the study's does over a source: NB
    counts summed by ``partial_fit`` chunk by chunk (``mlnb.study.tasks.count_partition``), and the
    minibatch solver's ``fit_stream`` over the chunks (``mlnb.study.tasks.fit_logistic_here``).

    Its buffer holds every chunk (``buffer_chunks``), so the engine visits the documents in the very
    order ``fit`` does (``minibatch.ChunkStreamSource``): a streamed minibatch fit must then equal
    the in-memory one bit for bit, a check that a shuffle within smaller buffers could only make
    loose (an AUC agreement), which would hide a wrong start state or scale."""

    def __init__(self, X, Y, n_chunks: int, task: str):
        X = sp.csr_matrix(X, dtype=np.float32)
        n = X.shape[0]
        Y = as_one_hot(Y, n) if task == "multiclass" else sp.csr_matrix(Y)
        bounds = np.linspace(0, n, n_chunks + 1).astype(int)
        self.chunks = [SimpleNamespace(X=X[a:b], Y=Y[a:b], labels=Y[a:b] if task == "multilabel" else
                                       np.asarray(Y[a:b].argmax(axis=1)).ravel())
                       for a, b in zip(bounds[:-1], bounds[1:])]
        self.n_features, self.n_categories = X.shape[1], Y.shape[1]
        self.requests = []

    def label_counts(self):
        N = sum(np.asarray(chunk.Y.sum(axis=0), dtype=np.float64).ravel() for chunk in self.chunks)
        return N, sum(chunk.X.shape[0] for chunk in self.chunks)

    def naive_bayes(self, request: CountRequest):
        self.requests.append(request)
        model = clone(request.estimator)
        for chunk in self.chunks:
            model.partial_fit(presence(chunk.X) if request.binarize_input else chunk.X, chunk.labels)
        return model

    def count_pairs(self, presence, max_count_memory):
        from mlnb.study.tasks import chunk_pairs

        return self.sum_over_chunks(chunk_pairs, presence)

    def sum_over_chunks(self, function, *args, binarize_input=False):
        total = None
        for chunk in self.chunks:
            part = function(presence(chunk.X) if binarize_input else chunk.X, chunk.Y, *args)
            total = part if total is None else total + part
        return total

    def minibatch(self, engine, *, binarize_input=False, scale=None, coef_init=None, intercept_init=None):
        engine = clone(engine)
        chunks = [SimpleNamespace(X=presence(c.X) if binarize_input else c.X, Y=c.Y) for c in self.chunks]
        engine.fit_stream(lambda: iter(chunks), self.n_features, self.n_categories,
                          category_counts=self.label_counts(), coef_init=coef_init, intercept_init=intercept_init,
                          scale=scale, buffer_chunks=len(chunks))
        return engine


STREAMED = [(name, extra, task) for name, extra, task in TASK_VARIANTS if KINDS[name].streams]


@pytest.mark.filterwarnings("ignore:.*(prior alone|no training documents)")
@pytest.mark.parametrize("name, extra, task", STREAMED,
                         ids=[i for i, v in zip(TASK_IDS, TASK_VARIANTS) if KINDS[v[0]].streams])
def test_a_streamed_fit_scores_as_the_fit_in_memory(name, extra, task, data):
    """fit_streamed through a trainer over 3 chunks = fit on all the documents at once: counts to float
    round-off (they are sums); minibatch kinds bit for bit (the trainer's buffer holds every chunk)."""
    kind, options = KINDS[name], options_of(name, extra)
    X, Y = data.X_train, data.Y_train
    if task == "multiclass":
        Y = np.asarray(Y.argmax(axis=1)).ravel() % 4
    trainer = InMemoryTrainer(X, Y, 3, task)
    streamed = kind.fit_streamed(kind.build(options, seed=0, task=task), options, {}, trainer)
    whole = kind.build(options, seed=0, task=task).fit(X, Y)
    expected = whole.decision_function(data.X_test)
    scores = streamed.decision_function(data.X_test)
    if kind.fits_from == "minibatch":
        np.testing.assert_array_equal(scores, expected)
    else:
        np.testing.assert_allclose(scores, expected, rtol=1e-5, atol=1e-5 * np.abs(expected).max())
    request = kind.count_request(kind.build(options, seed=0, task=task))
    assert (request is None) == (not trainer.requests)  # it reads the counts it asks for, and only those
    for read in trainer.requests:
        assert type(read.estimator) is type(request.estimator) and read.binarize_input == request.binarize_input
        assert read.estimator.get_params() == request.estimator.get_params()


def test_logistic_streamed_from_another_model_starts_where_fit_does(data):
    """init_from: the streamed fit starts from the named model's W and b, as fit does, with its checks."""
    kind, nb_kind = KINDS["logistic"], KINDS["naive_bayes"]
    options = dataclasses.replace(kind.options(), init_from="nb", npasses=1)
    fitted = {"nb": nb_kind.build(nb_kind.options()).fit(data.X_train, data.Y_train)}
    trainer = InMemoryTrainer(data.X_train, data.Y_train, 3, "multilabel")
    streamed = kind.fit_streamed(kind.build(options), options, fitted, trainer)
    whole = kind.build(options).fit(data.X_train, data.Y_train, **kind.fit_arguments(options, fitted, None))
    np.testing.assert_array_equal(streamed.decision_function(data.X_test), whole.decision_function(data.X_test))
    fitted["gnb"] = nb_kind.build(dataclasses.replace(nb_kind.options(), event_model="gaussian")).fit(
        data.X_train, data.Y_train)
    with pytest.raises(MlnbError, match="not one row per feature"):
        kind.fit_streamed(kind.build(options), dataclasses.replace(options, init_from="gnb"), fitted, trainer)


@pytest.mark.parametrize("name", sorted(KINDS))
def test_what_the_commands_ask_a_kind_is_about_its_own_options(name):
    """schedule, schedule_of, idle_options, check_data and processes answer in terms of the kind's own options:
    a schedule gives options of the same class that make at least one pass; what it sets and what a sweep
    would leave idle are option names; any data fits the default options; a fit starts at least one process."""
    kind = KINDS[name]
    options = kind.options()
    fields = {f.name for f in dataclasses.fields(kind.options)}
    if kind.schedule is not None:
        small = kind.schedule(options, 100, 20_000, 200)
        assert type(small) is type(options) and kind.least_passes(small)[0] >= 1
        assert set(kind.schedule_of(small)) <= fields and kind.schedule_of(small)
    else:
        assert kind.schedule_of(options) == {}
    assert set(kind.idle_options(options)) <= fields
    assert kind.check_data(options, 7) == ""
    processes, key = kind.processes(options)
    assert processes >= 1 and (key == "" or key.split(" = ")[0] in fields)
