"""The array engine (mlnb/engine/array/) against the numba engine: numpy here, CuPy where a GPU is.

Every comparison runs once per namespace: "array-numpy" always (numpy and scipy.sparse: the GPU's
code on the CPU, in CI), and "gpu" when CuPy sees a GPU (skipped with the reason otherwise).
Oracles: the CPU engine's own estimators (NaiveBayes, LogisticRegression, ``mlnb.metrics.ranking``),
and scikit-learn's ``roc_auc_score`` for the AUC.
"""

import subprocess
import sys
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.metrics import roc_auc_score

from mlnb.config import load_config
from mlnb.engine.array import logistic as array_lr
from mlnb.engine.array import naive_bayes as array_nb
from mlnb.engine.array import ranking as array_ranking
from mlnb.engine.array.device import gpu_problem, namespace
from mlnb.engine.array.fitting import ArrayEngine, engine_for
from mlnb.errors import MlnbError
from mlnb.metrics.ranking import fpr_grid, rank_curve, roc_auc_per_category, roc_lift, roc_on_grid
from mlnb.models.logistic import LogisticRegression
from mlnb.models.naive_bayes import NaiveBayes
from mlnb.study import run_models

_GPU = gpu_problem()
DEVICES = ["array-numpy", pytest.param("gpu", marks=pytest.mark.skipif(_GPU is not None, reason=f"no GPU: {_GPU}"))]

# every count event model the engine has a formula for, with the options its formula branches on
NB_CASES = [
    ("multinomial", {}), ("multinomial", {"binarize": True}), ("multinomial", {"mode": "tutorial"}),
    ("multinomial", {"smoothing": "m_estimate", "m": 3.0}), ("poisson", {}), ("poisson", {"binarize": True}),
    ("complement", {}), ("complement", {"reference": "none"}), ("complement", {"norm": True}),
    ("bernoulli", {}), ("bernoulli", {"mode": "tutorial", "alpha": 0.1}),
]


@pytest.fixture(params=DEVICES)
def engine(request) -> ArrayEngine:
    return ArrayEngine(namespace(request.param))


def _cpu_nb(X, Y, event_model, options, task="multilabel"):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return NaiveBayes(event_model=event_model, task=task, **options).fit(X, Y)


def _assert_float32_close(actual, expected, what):
    """Equal to float32 round-off: a few ulp of the largest magnitude."""
    scale = max(1.0, float(np.abs(expected).max(initial=0.0)))
    np.testing.assert_allclose(actual, expected, rtol=2e-6, atol=4e-7 * scale, err_msg=what)


def _assert_scores_close(Z, Z_cpu, X, W, b, binary):
    """Scores equal up to float32 sums in another order: |ΔZ| ≤ 8·nnz_row·ε·(|X̂|·|W| + |b|)."""
    Xa = abs(X) if not binary else (X > 0).astype(np.float32)
    bound = np.asarray(Xa @ np.abs(W)) + np.abs(b)  # (n, K) Σ|terms|
    nnz = np.diff(sp.csr_matrix(X).indptr)[:, None] + 1
    assert np.all(np.abs(Z - Z_cpu) <= 8 * nnz * np.finfo(np.float32).eps * bound + 1e-30)


@pytest.mark.parametrize("event_model, options", NB_CASES, ids=[f"{m}-{'-'.join(map(str, o.values())) or 'default'}"
                                                                for m, o in NB_CASES])
def test_naive_bayes_weights_and_scores_match_the_cpu_engine(engine, small_corpus, event_model, options):
    X, Y = small_corpus.X_train, small_corpus.Y_train
    cpu = _cpu_nb(X, Y, event_model, options)
    model = engine.fit(NaiveBayes(event_model=event_model, **options), X, Y, "multilabel", {})
    _assert_float32_close(model.weights_, cpu.weights_, "W")
    _assert_float32_close(model.bias_, cpu.bias_, "b")
    X_test = small_corpus.X_test
    _assert_scores_close(model.decision_function(X_test), cpu.decision_function(X_test), X_test, cpu.weights_,
                         cpu.bias_, model.binary)
    # the CPU estimator behind the model has the device's counts: its own W from them is the same
    np.testing.assert_array_equal(model.feature_count_, cpu.feature_count_)
    assert model.score_type == cpu.score_type


def test_a_category_without_positives_scores_by_its_prior(engine, small_corpus):
    X, Y = small_corpus.X_train, small_corpus.Y_train.tolil()
    assert Y[:, 0].nnz
    Y[:, 0] = 0
    Y = Y.tocsr()
    cpu = _cpu_nb(X, Y, "multinomial", {"binarize": True})
    model = engine.fit(NaiveBayes(binarize=True), X, Y, "multilabel", {})
    assert 0 in model.untrainable_categories_
    np.testing.assert_array_equal(model.untrainable_categories_, cpu.untrainable_categories_)
    assert not model.weights_[:, model.untrainable_categories_].any()
    _assert_float32_close(model.bias_, cpu.bias_, "b")


def test_models_without_an_array_formula_use_their_own_module_on_the_host(engine, small_corpus, monkeypatch):
    """Multiclass, and a count model the engine has no formula for: counted on the device, W by its module."""
    X, Y = small_corpus.X_train, small_corpus.Y_train
    monkeypatch.setattr(array_nb, "FORMULAS", ())
    cpu = _cpu_nb(X, Y, "poisson", {})
    model = engine.fit(NaiveBayes(event_model="poisson"), X, Y, "multilabel", {})
    _assert_float32_close(model.weights_, cpu.weights_, "W")
    labels = np.asarray(Y.argmax(axis=1)).ravel()
    one_hot = sp.csr_matrix((np.ones(labels.size, np.int8), labels, np.arange(labels.size + 1)), shape=Y.shape)
    cpu = _cpu_nb(X, one_hot, "multinomial", {}, task="multiclass")
    model = engine.fit(NaiveBayes(task="multiclass"), X, one_hot, "multiclass", {})
    _assert_float32_close(model.weights_, cpu.weights_, "W")
    np.testing.assert_array_equal(model.predict(small_corpus.X_test), cpu.predict(small_corpus.X_test))


def test_event_models_with_squares_or_column_statistics_stay_on_the_cpu(engine):
    assert engine.fits(NaiveBayes(event_model="multinomial"), {})
    assert not engine.fits(NaiveBayes(event_model="gaussian"), {})
    assert not engine.fits(NaiveBayes(event_model="mixed"), {})


def test_scoring_refuses_what_the_cpu_estimator_refuses(engine, small_corpus):
    model = engine.fit(NaiveBayes(), small_corpus.X_train, small_corpus.Y_train, "multilabel", {})
    with pytest.raises(MlnbError, match="features"):
        model.decision_function(small_corpus.X_test[:, :10])
    negative = small_corpus.X_test.copy()
    negative.data[0] = -1.0
    with pytest.raises(MlnbError, match="negative"):
        model.decision_function(negative)


# -- logistic regression ------------------------------------------------------------------------
LR_CASES = [{}, {"l2": 0.0}, {"l1": 1e-4}, {"l1": 1e-4, "l2": 0.0}, {"l2": 1e-2}, {"updater": "sgd", "lrate": 1.0},
            {"shuffle": False, "vexp": 0.3, "texp": 0.6}]


def _cpu_lr(X, Y, fit=None, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return LogisticRegression(npasses=2, **options).fit(X, Y, **(fit or {}))


@pytest.mark.parametrize("options", LR_CASES, ids=["-".join(f"{k}={v}" for k, v in o.items()) or "default"
                                                   for o in LR_CASES])
def test_logistic_passes_match_the_cpu_engine(engine, small_corpus, options):
    """The dense device update against the numba kernel's lazy one: as close as the CPU engine's own two
    kernels (scipy, numba) are to each other, or a few float32 ulp of W."""
    X, Y = small_corpus.X_train, small_corpus.Y_train
    numba, scipy_kernel = _cpu_lr(X, Y, kernel="numba", **options), _cpu_lr(X, Y, kernel="scipy", **options)
    model = engine.fit(LogisticRegression(npasses=2, **options), X, Y, "multilabel", {})
    between_kernels = np.abs(numba.weights_ - scipy_kernel.weights_).max()
    scale = np.abs(numba.weights_).max()
    assert np.abs(model.weights_ - numba.weights_).max() <= 2 * between_kernels + 1e-5 * scale
    np.testing.assert_allclose(model.bias_, numba.bias_, atol=1e-5)
    auc = [np.nanmean(roc_auc_per_category(small_corpus.Y_test, m.decision_function(small_corpus.X_test)))
           for m in (model, numba)]
    assert abs(auc[0] - auc[1]) < 1e-4
    assert [r["train_loss"] for r in model.history_] == pytest.approx([r["train_loss"] for r in numba.history_],
                                                                     rel=1e-5)
    np.testing.assert_array_equal(model.untrainable_categories_, numba.untrainable_categories_)


def test_multiclass_logistic_regression_matches_the_cpu_engine(engine, small_corpus):
    X, Y = small_corpus.X_train, small_corpus.Y_train
    labels = np.asarray(Y.argmax(axis=1)).ravel()
    numba = _cpu_lr(X, labels, task="multiclass")
    model = engine.fit(LogisticRegression(npasses=2, task="multiclass"), X, labels, "multiclass", {})
    assert np.abs(model.weights_ - numba.weights_).max() <= 1e-4 * np.abs(numba.weights_).max()
    assert np.mean(model.predict(small_corpus.X_test) == numba.predict(small_corpus.X_test)) > 0.99


def test_logistic_regression_from_a_warm_start_and_what_stays_on_the_cpu(engine, small_corpus):
    X, Y = small_corpus.X_train, small_corpus.Y_train
    start = _cpu_nb(X, Y, "multinomial", {"binarize": True})
    warm = {"coef_init": start.weights_, "intercept_init": start.bias_}
    numba = _cpu_lr(X, Y, fit=warm)
    model = engine.fit(LogisticRegression(npasses=2), X, Y, "multilabel", warm)
    assert np.abs(model.weights_ - numba.weights_).max() <= 1e-4 * np.abs(numba.weights_).max()
    assert not engine.fits(LogisticRegression(solver="lbfgs"), {})
    assert not engine.fits(LogisticRegression(), {"scale": np.ones((3, 2))})
    assert not engine.fits(LogisticRegression(), {"eval_set": (X, Y)})


def test_a_diverging_logistic_regression_is_refused_as_on_the_cpu(engine, small_corpus):
    with pytest.raises(MlnbError, match="lrate .* too large"):
        engine.fit(LogisticRegression(npasses=1, lrate=1e9), small_corpus.X_train, small_corpus.Y_train,
                   "multilabel", {})


@pytest.mark.skipif(_GPU is not None, reason=f"no GPU: {_GPU}")
@pytest.mark.parametrize("l2, vexp", [(1e-4, 0.5), (0.0, 0.5), (1e-3, 0.3)])
def test_the_fused_gpu_step_is_the_array_code(small_corpus, l2, vexp):
    """One CUDA kernel for AdaGrad's step and the exact L2 flow (the default on a GPU) against the
    array code it replaces, on the same minibatches: the same S and W to a float32 ulp or two."""
    ns = namespace("gpu")
    X, Y = small_corpus.X_train, small_corpus.Y_train
    n, V = X.shape
    K = Y.shape[1]
    estimator = LogisticRegression(npasses=1, l2=l2, vexp=vexp)
    order = np.random.default_rng(0).permutation(n)
    X_d, Y_d = ns.csr(X, np.float32), ns.asarray(Y.toarray(), dtype=np.float32)
    trained = {}
    for fused in (True, False):
        training = array_lr.DenseTraining(ns, estimator, V, K, None, np.zeros(K, dtype=np.float32))
        assert training.fused is not None
        if not fused:
            training.fused = None
        array_lr.one_pass(training, X_d, Y_d, order, 100, "sigmoid")
        trained[fused] = training
    for name in ("S", "W"):
        fused, plain = (ns.to_host(getattr(trained[f], name)) for f in (True, False))
        np.testing.assert_allclose(fused, plain, rtol=3e-7, atol=1e-7 * np.abs(plain).max(), err_msg=name)


def test_on_numpy_nothing_is_fused_or_marked(small_corpus):
    """The GPU-only parts (the fused kernel; cupyx's canonical flags) stay off the numpy namespace, whose
    scipy products need neither."""
    ns = namespace("array-numpy")
    training = array_lr.DenseTraining(ns, LogisticRegression(), 5, 2, None, np.zeros(2))
    assert training.fused is None and array_lr.fused_adagrad_step(ns) is None
    X = small_corpus.X_train
    assert ns.transposed(X) is not None and ns.transposed(X).shape == X.shape[::-1]
    part = ns.csr_from(X.data[:3], X.indices[:3], np.array([0, 3]), (1, X.shape[1]), True)
    assert isinstance(part, sp.csr_matrix) and part.nnz == 3 and part.shape == (1, X.shape[1])


# -- ranking ----------------------------------------------------------------------------------
def _hostile_scores(n=600, K=8, seed=0):
    """Scores with every kind of tie the CPU code handles: rounded values, ±0, ±inf, constant columns,
    and labels with no positive, no negative or a single positive."""
    rng = np.random.default_rng(seed)
    S = rng.normal(size=(n, K)).astype(np.float32)
    S[:, 1] = np.round(S[:, 1] * 2) / 2  # many ties
    S[: n // 3, 2] = -0.0
    S[n // 3: n // 2, 2] = 0.0
    S[:7, 3], S[7:12, 3] = np.inf, -np.inf
    S[:, 4] = 1.5  # one tie over the whole column
    Y = (rng.random((n, K)) < 0.2).astype(np.int8)
    Y[:, 5], Y[:, 6] = 0, 1
    Y[:, 7] = 0
    Y[4, 7] = 1
    return S, sp.csr_matrix(Y)


def test_auc_is_exactly_the_cpu_engines(engine):
    S, Y = _hostile_scores()
    auc = array_ranking.auc_per_category(engine.ns, Y, engine.ns.asarray(S))
    np.testing.assert_array_equal(auc, roc_auc_per_category(Y, S))  # bit for bit, NaN where undefined
    Yd = Y.toarray()
    for k in (0, 1, 2, 4, 7):  # scikit-learn refuses the infinities of column 3
        assert auc[k] == pytest.approx(roc_auc_score(Yd[:, k], S[:, k]), abs=1e-12)
    assert np.isnan(auc[5]) and np.isnan(auc[6])


def test_roc_on_a_grid_and_lift_are_exactly_the_cpu_engines(engine):
    S, Y = _hostile_scores(seed=1)
    grid = fpr_grid(101)
    tpr = array_ranking.roc_on_grid(engine.ns, Y, engine.ns.asarray(S), grid)
    Yd = Y.toarray()
    expected = np.vstack([roc_on_grid(rank_curve(Yd[:, k], S[:, k]), grid) for k in range(S.shape[1])])
    np.testing.assert_array_equal(tpr, expected)
    np.testing.assert_array_equal(array_ranking.roc_lift(tpr, grid), roc_lift(expected, grid))


def test_ranking_takes_float32_scores_only(engine):
    S, Y = _hostile_scores()
    with pytest.raises(MlnbError, match="float32"):
        array_ranking.auc_per_category(engine.ns, Y, engine.ns.asarray(S.astype(np.float64)))


# -- the study ---------------------------------------------------------------------------------
STUDY = ["models.lr.init_from=nb", "models.lr.npasses=1", "eval.bootstrap=0"]


@pytest.mark.parametrize("device", DEVICES)
def test_a_study_through_the_array_engine_gives_the_cpu_engines_metrics(small_corpus, device):
    data = small_corpus
    runs = {}
    for name in ("cpu", device):
        config = load_config(None, STUDY + [f"engine.device={name}"])
        runs[name] = run_models(config, data.X_train, data.Y_train, data.X_test, data.Y_test, data.category_names)
    for cpu, array in zip(runs["cpu"], runs[device]):
        assert type(array.model).__name__ == "ArrayModel" and type(cpu.model).__name__ != "ArrayModel"
        a, c = array.evaluation.per_category, cpu.evaluation.per_category
        np.testing.assert_allclose(a["auc"], c["auc"], atol=1e-4, equal_nan=True)  # scores to float32 round-off
        assert abs(array.evaluation.summary["macro_auc"] - cpu.evaluation.summary["macro_auc"]) < 1e-4


def test_device_gpu_without_a_gpu_is_refused_in_one_line(monkeypatch):
    import mlnb.engine.array.device as device

    monkeypatch.setattr(device, "gpu_problem", lambda: "CuPy is not installed (pip install 'mlnb[gpu]')")
    with pytest.raises(MlnbError, match=r"engine.device = 'gpu': CuPy is not installed .*use engine.device = 'cpu'"):
        load_config(None, ["engine.device=gpu"])
    with pytest.raises(MlnbError, match="engine.device = 'gpu': CuPy"):
        engine_for("gpu")


def test_the_array_engine_fits_studies_held_in_memory():
    with pytest.raises(MlnbError, match="data.streaming = true use engine.device = 'cpu'"):
        load_config(None, ["engine.device=array-numpy", "data.streaming=true", "data.source=shards",
                           "data.shards.path=/nonexistent"])


def test_importing_mlnb_and_a_cpu_study_never_import_cupy():
    code = ("import sys; from mlnb.config import load_config; from mlnb.data.synthetic import make_rcv1_like; "
            "from mlnb.study import run_models; "
            "d = make_rcv1_like(n_documents=400, n_features=300, n_categories=5, seed=1); "
            "c = load_config(None, ['models.lr.npasses=1', 'eval.bootstrap=0']); "
            "run_models(c, d.X_train, d.Y_train, d.X_test, d.Y_test, d.category_names); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('cupy', 'cupyx')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "[]"
