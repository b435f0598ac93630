"""The array device (mlnb/models/array/) against the numba kernels: numpy here, CuPy where a GPU is.

Every comparison runs once per namespace: "array-numpy" always (numpy and scipy.sparse: the GPU's
code on the CPU, in CI), and "gpu" when CuPy sees a GPU (skipped with the reason otherwise).
Oracles: the CPU's own estimators (NaiveBayes, LogisticRegression, ``mlnb.metrics.ranking``),
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
from mlnb.errors import MlnbError
from mlnb.metrics import array_ranking
from mlnb.metrics.ranking import fpr_grid, rank_curve, roc_auc_per_category, roc_lift, roc_on_grid
from mlnb.models import KINDS
from mlnb.models.array.device import gpu_problem, namespace
from mlnb.models.array.fitting import ArrayDevice, device_for
from mlnb.models.logistic import LogisticRegression
from mlnb.models.logistic import array as array_lr
from mlnb.models.naive_bayes import NaiveBayes
from mlnb.models.naive_bayes import array as array_nb
from mlnb.study import run_models

_GPU = gpu_problem()
DEVICES = ["array-numpy", pytest.param("gpu", marks=pytest.mark.skipif(_GPU is not None, reason=f"no GPU: {_GPU}"))]

# every count event model the device has a formula for, with the options its formula branches on
NB_CASES = [
    ("multinomial", {}), ("multinomial", {"binarize": True}), ("multinomial", {"mode": "tutorial"}),
    ("multinomial", {"smoothing": "m_estimate", "m": 3.0}), ("poisson", {}), ("poisson", {"binarize": True}),
    ("complement", {}), ("complement", {"reference": "none"}), ("complement", {"norm": True}),
    ("bernoulli", {}), ("bernoulli", {"mode": "tutorial", "alpha": 0.1}),
]


@pytest.fixture(params=DEVICES)
def device(request) -> ArrayDevice:
    return ArrayDevice(namespace(request.param))


#: each registered kind by its estimator class: the device is handed a model's kind, as the study hands it
KIND_OF = {kind.estimator: kind for kind in KINDS.values()}


def fit_on(device: ArrayDevice, estimator, X, Y, task: str, arguments: dict):
    """``estimator`` fitted on ``device`` as the study fits it: through its kind's ``fit_on_device``."""
    return device.fit(KIND_OF[type(estimator)], estimator, X, Y, task, arguments)


def test_the_device_fits_what_a_kind_declares_and_nothing_else(small_corpus):
    """The device asks the kind (``ModelKind.fit_on_device``): a kind that declares none, or whose fit does not take
    the options, is left to the CPU (None); a declared fit is the one called."""
    import dataclasses

    device = ArrayDevice(namespace("array-numpy"))
    X, Y = small_corpus.X_train[:200], small_corpus.Y_train[:200]
    declared = {name for name, kind in KINDS.items() if kind.runs_on_device}
    assert declared and declared < set(KINDS)
    for kind in KINDS.values():
        if not kind.runs_on_device:
            assert device.fit(kind, kind.build(kind.options()), X, Y, "multilabel", {}) is None
    lr = KIND_OF[LogisticRegression]
    assert device.fit(lr, LogisticRegression(solver="lbfgs"), X, Y, "multilabel", {}) is None
    called = []
    own = dataclasses.replace(lr, fit_on_device=lambda *given: called.append(given) or "fitted")
    assert device.fit(own, LogisticRegression(), X, Y, "multilabel", {"a": 1}) == "fitted"
    assert called[0][0] is device and called[0][4:] == ("multilabel", {"a": 1})


def test_a_device_with_no_model_that_runs_there_is_refused():
    on_cpu_only = next(name for name, kind in KINDS.items() if not kind.runs_on_device and kind.tasks)
    with pytest.raises(MlnbError, match=r"engine.device = 'array-numpy': no model of the study runs on a device "
                                        r"\(kinds that do: .*\); use engine.device = 'cpu'"):
        load_config(None, ["engine.device=array-numpy", f"models.nb.kind={on_cpu_only}", "models.lr.enabled=false"])


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
def test_naive_bayes_weights_and_scores_match_the_cpu_engine(device, small_corpus, event_model, options):
    X, Y = small_corpus.X_train, small_corpus.Y_train
    cpu = _cpu_nb(X, Y, event_model, options)
    model = fit_on(device, NaiveBayes(event_model=event_model, **options), X, Y, "multilabel", {})
    _assert_float32_close(model.weights_, cpu.weights_, "W")
    _assert_float32_close(model.bias_, cpu.bias_, "b")
    X_test = small_corpus.X_test
    _assert_scores_close(model.decision_function(X_test), cpu.decision_function(X_test), X_test, cpu.weights_,
                         cpu.bias_, model.binary)
    # the CPU estimator behind the model has the device's counts: its own W from them is the same
    np.testing.assert_array_equal(model.feature_count_, cpu.feature_count_)
    assert model.score_type == cpu.score_type


def test_a_category_without_positives_scores_by_its_prior(device, small_corpus):
    X, Y = small_corpus.X_train, small_corpus.Y_train.tolil()
    assert Y[:, 0].nnz
    Y[:, 0] = 0
    Y = Y.tocsr()
    cpu = _cpu_nb(X, Y, "multinomial", {"binarize": True})
    model = fit_on(device, NaiveBayes(binarize=True), X, Y, "multilabel", {})
    assert 0 in model.untrainable_categories_
    np.testing.assert_array_equal(model.untrainable_categories_, cpu.untrainable_categories_)
    assert not model.weights_[:, model.untrainable_categories_].any()
    _assert_float32_close(model.bias_, cpu.bias_, "b")


def test_models_without_an_array_formula_use_their_own_module_on_the_host(device, small_corpus, monkeypatch):
    """Multiclass, and a count model the device has no formula for: counted on the device, W by its module."""
    X, Y = small_corpus.X_train, small_corpus.Y_train
    monkeypatch.setattr(array_nb, "FORMULAS", ())
    cpu = _cpu_nb(X, Y, "poisson", {})
    model = fit_on(device, NaiveBayes(event_model="poisson"), X, Y, "multilabel", {})
    _assert_float32_close(model.weights_, cpu.weights_, "W")
    labels = np.asarray(Y.argmax(axis=1)).ravel()
    one_hot = sp.csr_matrix((np.ones(labels.size, np.int8), labels, np.arange(labels.size + 1)), shape=Y.shape)
    cpu = _cpu_nb(X, one_hot, "multinomial", {}, task="multiclass")
    model = fit_on(device, NaiveBayes(task="multiclass"), X, one_hot, "multiclass", {})
    _assert_float32_close(model.weights_, cpu.weights_, "W")
    np.testing.assert_array_equal(model.predict(small_corpus.X_test), cpu.predict(small_corpus.X_test))


def test_event_models_with_squares_or_column_statistics_stay_on_the_cpu(device):
    assert array_nb.takes(NaiveBayes(event_model="multinomial"))
    assert not array_nb.takes(NaiveBayes(event_model="gaussian"))
    assert not array_nb.takes(NaiveBayes(event_model="mixed"))


def test_scoring_refuses_what_the_cpu_estimator_refuses(device, small_corpus):
    model = fit_on(device, NaiveBayes(), small_corpus.X_train, small_corpus.Y_train, "multilabel", {})
    with pytest.raises(MlnbError, match="features"):
        model.decision_function(small_corpus.X_test[:, :10])
    negative = small_corpus.X_test.copy()
    negative.data[0] = -1.0
    with pytest.raises(MlnbError, match="negative"):
        model.decision_function(negative)


# -- logistic regression ------------------------------------------------------------------------
LR_CASES = [{}, {"l2": 0.0}, {"l1": 1e-4}, {"l1": 1e-4, "l2": 0.0}, {"l2": 1e-2}, {"updater": "sgd", "lrate": 1.0},
            {"shuffle": False, "vexp": 0.3, "texp": 0.6}, {"updater": "rowwise_adagrad"},
            {"updater": "rowwise_adagrad", "l2": 0.0, "vexp": 0.3}]


#: On a GPU, sums run in another order and σ, exp and √ are other float32 functions: the passes part
#: at round-off, and AdaGrad's first step on a coordinate, ±lrate whatever its gradient's size (a
#: gradient exactly 0 where σ rounds to 1 on one device and 10⁻⁸ on the other), makes that round-off
#: visible in W. On the CPU, σ taken one ulp below 1 at half the places it rounds to 1 moves the
#: warm-started fit of the test below by 8·10⁻⁴ in training loss and 3·10⁻⁴ in a category's AUC; the
#: GPU has several such sources (on an H200 the strict CPU bounds failed for the default and l2 = 0
#: fits and the warm start, and passed for l2 = 1e-2, l1 and SGD). Each step is checked to round-off
#: above (``test_the_gpu_update_is_the_numpy_update``, ``test_gpu_products_...``); whole fits are held
#: to the issue's bar, the AUC of every category with enough positives to rank (a category with 2
#: positives moves by 1/(2·N) per rank) within 1e-3, and the training loss within 1 %.
WELL_POPULATED = 20


def _assert_gpu_fit_close(model, cpu, corpus):
    P_train = np.asarray(corpus.Y_train.sum(axis=0)).ravel()
    P_test = np.asarray(corpus.Y_test.sum(axis=0)).ravel()
    ranked = (P_train >= WELL_POPULATED) & (P_test >= WELL_POPULATED)
    auc = [roc_auc_per_category(corpus.Y_test, m.decision_function(corpus.X_test))[ranked] for m in (model, cpu)]
    assert ranked.sum() >= 5 and np.abs(auc[0] - auc[1]).max() < 1e-3, np.abs(auc[0] - auc[1])
    assert [r["train_loss"] for r in model.history_] == pytest.approx([r["train_loss"] for r in cpu.history_],
                                                                     rel=1e-2)


def _cpu_lr(X, Y, fit=None, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return LogisticRegression(npasses=2, **options).fit(X, Y, **(fit or {}))


# the default options in the fast tier, the other options (LR fits each) in the slow one
@pytest.mark.parametrize("options", [pytest.param(o, id="-".join(f"{k}={v}" for k, v in o.items()) or "default",
                                                  marks=[pytest.mark.slow] if o else []) for o in LR_CASES])
def test_logistic_passes_match_the_cpu_engine(device, small_corpus, options):
    """The dense device update against the numba kernel's lazy one: as close as the CPU's own two
    kernels (scipy, numba) are to each other, or a few float32 ulp of W."""
    X, Y = small_corpus.X_train, small_corpus.Y_train
    numba, scipy_kernel = _cpu_lr(X, Y, kernel="numba", **options), _cpu_lr(X, Y, kernel="scipy", **options)
    model = fit_on(device, LogisticRegression(npasses=2, **options), X, Y, "multilabel", {})
    np.testing.assert_array_equal(model.untrainable_categories_, numba.untrainable_categories_)
    if device.ns.on_gpu:  # see WELL_POPULATED
        _assert_gpu_fit_close(model, numba, small_corpus)
        return
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


def test_multiclass_logistic_regression_matches_the_cpu_engine(device, small_corpus):
    X, Y = small_corpus.X_train, small_corpus.Y_train
    labels = np.asarray(Y.argmax(axis=1)).ravel()
    numba = _cpu_lr(X, labels, task="multiclass")
    model = fit_on(device, LogisticRegression(npasses=2, task="multiclass"), X, labels, "multiclass", {})
    assert np.abs(model.weights_ - numba.weights_).max() <= 1e-4 * np.abs(numba.weights_).max()
    assert np.mean(model.predict(small_corpus.X_test) == numba.predict(small_corpus.X_test)) > 0.99


def test_logistic_regression_from_a_warm_start_and_what_stays_on_the_cpu(device, small_corpus):
    X, Y = small_corpus.X_train, small_corpus.Y_train
    start = _cpu_nb(X, Y, "multinomial", {"binarize": True})
    warm = {"coef_init": start.weights_, "intercept_init": start.bias_}
    numba = _cpu_lr(X, Y, fit=warm)
    model = fit_on(device, LogisticRegression(npasses=2), X, Y, "multilabel", warm)
    if device.ns.on_gpu:  # see WELL_POPULATED
        _assert_gpu_fit_close(model, numba, small_corpus)
    else:
        assert np.abs(model.weights_ - numba.weights_).max() <= 1e-4 * np.abs(numba.weights_).max()
    assert not array_lr.takes(LogisticRegression(solver="lbfgs"), {})
    assert not array_lr.takes(LogisticRegression(), {"scale": np.ones((3, 2))})
    assert not array_lr.takes(LogisticRegression(), {"eval_set": (X, Y)})


def test_a_diverging_logistic_regression_is_refused_as_on_the_cpu(device, small_corpus):
    with pytest.raises(MlnbError, match="lrate .* too large"):
        fit_on(device, LogisticRegression(npasses=1, lrate=1e9), small_corpus.X_train, small_corpus.Y_train,
                   "multilabel", {})


GPU_ONLY = pytest.mark.skipif(_GPU is not None, reason=f"no GPU: {_GPU}")
UPDATE_CASES = [{}, {"l2": 0.0}, {"l2": 1e-3, "vexp": 0.3}, {"l1": 1e-4}, {"updater": "sgd", "lrate": 1.0},
                {"updater": "rowwise_adagrad"}]


@GPU_ONLY
@pytest.mark.parametrize("fused", [True, False], ids=["fused", "array-code"])
@pytest.mark.parametrize("options", UPDATE_CASES, ids=["-".join(f"{k}={v}" for k, v in o.items()) or "default"
                                                       for o in UPDATE_CASES])
def test_the_gpu_update_is_the_numpy_update(options, fused):
    """One update of W and S from the same G, S, W and per-category step (the fused kernel, or the
    array code on CuPy) against the array code on numpy: equal to a float32 ulp or two. G has exact
    zeros and values far below ε, S has zeros (a coordinate's first step), and every category its own
    step, so that a broadcast or a branch that went wrong shows."""
    rng = np.random.default_rng(3)
    V, K = 600, 7
    W = np.asfortranarray(rng.normal(size=(V, K)).astype(np.float32))
    S = np.asfortranarray((rng.random((V, K)) * (rng.random((V, K)) < 0.5)).astype(np.float32))
    G = rng.normal(scale=0.1, size=(V, K)).astype(np.float32)
    G[rng.random((V, K)) < 0.1] = 0.0
    G[rng.random((V, K)) < 0.05] = 1e-9
    G = np.asfortranarray(G)
    scale = rng.uniform(0.1, 0.5, size=K).astype(np.float32)
    estimator = LogisticRegression(**options)
    results = {}
    for name in ("array-numpy", "gpu"):
        ns = namespace(name)
        training = array_lr.DenseTraining(ns, estimator, V, K, W, np.zeros(K))
        assert ns.on_gpu or not np.shares_memory(training.W, W)  # the start is copied: in-place updates miss it
        if training.S is not None:  # row-wise: one sum per row (the first column's)
            training.S = ns.xp.array(ns.asarray(S[:, :training.S.shape[1]]), order="F", copy=True)
        if not fused:
            training.fused = None
        assert (training.fused is not None) == (name == "gpu" and fused and estimator.updater == "adagrad"
                                                and estimator.l1 == 0)
        training.update(ns.xp.array(ns.asarray(G), order="F", copy=True), ns.asarray(scale))
        results[name] = [ns.to_host(a) for a in (training.W, training.W if training.S is None else training.S)]
    for what, gpu, host in zip(("W", "S"), results["gpu"], results["array-numpy"]):
        np.testing.assert_allclose(gpu, host, rtol=2.5e-7, atol=1e-7 * np.abs(host).max(), err_msg=what)


#: measured on an H200 (2026-11-26): cuSPARSE's products change their last bits from run to run
NOT_BIT_REPRODUCIBLE = pytest.mark.xfail(
    reason="cuSPARSE's SpMM adds with atomics: its sums, and so the LR fit, change in the last bits from run to "
           "run (H200, 2026-11-26, with Xᵀ transposed in place and formed by csr2csc alike); a CSR × dense kernel "
           "of our own summing each row in order would make the GPU code bit-reproducible", strict=False)


def _gpu_products(small_corpus):
    """(X_B, W, D, Z = X_B·W and G = X_Bᵀ·D on the GPU) for 400 documents and 9 random categories."""
    ns = namespace("gpu")
    rng = np.random.default_rng(5)
    X_B = small_corpus.X_train[:400]
    V, K = X_B.shape[1], 9
    W = np.asfortranarray(rng.normal(size=(V, K)).astype(np.float32))
    D = rng.normal(size=(X_B.shape[0], K)).astype(np.float32)
    X_d = ns.csr(X_B, np.float32)
    Z = ns.to_host(X_d @ ns.xp.asfortranarray(ns.asarray(W)))
    G = ns.to_host(ns.transposed_product(X_d, ns.asarray(D)))
    return X_B, W, D, Z, G


@GPU_ONLY
def test_gpu_products_are_the_numpy_products_to_round_off(small_corpus):
    """Z = X_B·W and G = X_Bᵀ·D on the GPU against scipy's: within the round-off of sums of float32
    terms in another order, |Δ| ≤ 8·terms·ε·Σ|terms| (passed on an H200, 2026-11-26)."""
    X_B, W, D, Z, G = _gpu_products(small_corpus)
    eps = np.finfo(np.float32).eps
    bound_z = abs(X_B) @ np.abs(W) * (8 * (np.diff(X_B.indptr)[:, None] + 1) * eps)
    assert np.all(np.abs(Z - X_B @ W) <= bound_z + 1e-30)
    terms = np.bincount(X_B.indices, minlength=X_B.shape[1])[:, None] + 1
    bound_g = abs(X_B).T @ np.abs(D) * (8 * terms * eps)
    assert np.all(np.abs(G - X_B.T @ D) <= bound_g + 1e-30)


@GPU_ONLY
@NOT_BIT_REPRODUCIBLE
def test_gpu_products_are_the_same_every_time(small_corpus):
    first, second = _gpu_products(small_corpus), _gpu_products(small_corpus)
    for a, b in zip(first[3:], second[3:]):
        np.testing.assert_array_equal(a, b)


@GPU_ONLY
@NOT_BIT_REPRODUCIBLE
def test_a_gpu_fit_gives_the_same_bits_every_time(small_corpus):
    X, Y = small_corpus.X_train, small_corpus.Y_train
    device = ArrayDevice(namespace("gpu"))
    for estimator in (lambda: LogisticRegression(npasses=2), lambda: NaiveBayes(alpha=0.37, binarize=False)):
        first, second = (fit_on(device, estimator(), X * np.float32(0.3), Y, "multilabel", {}) for _ in range(2))
        np.testing.assert_array_equal(first.weights_, second.weights_)
        np.testing.assert_array_equal(first.bias_, second.bias_)


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


def test_auc_is_exactly_the_cpu_engines(device):
    S, Y = _hostile_scores()
    auc = array_ranking.auc_per_category(device.ns, Y, device.ns.asarray(S))
    np.testing.assert_array_equal(auc, roc_auc_per_category(Y, S))  # bit for bit, NaN where undefined
    Yd = Y.toarray()
    for k in (0, 1, 2, 4, 7):  # scikit-learn refuses the infinities of column 3
        assert auc[k] == pytest.approx(roc_auc_score(Yd[:, k], S[:, k]), abs=1e-12)
    assert np.isnan(auc[5]) and np.isnan(auc[6])


def test_roc_on_a_grid_and_lift_are_exactly_the_cpu_engines(device):
    S, Y = _hostile_scores(seed=1)
    grid = fpr_grid(101)
    tpr = array_ranking.roc_on_grid(device.ns, Y, device.ns.asarray(S), grid)
    Yd = Y.toarray()
    expected = np.vstack([roc_on_grid(rank_curve(Yd[:, k], S[:, k]), grid) for k in range(S.shape[1])])
    np.testing.assert_array_equal(tpr, expected)
    np.testing.assert_array_equal(array_ranking.roc_lift(tpr, grid), roc_lift(expected, grid))


def test_ranking_takes_float32_scores_only(device):
    S, Y = _hostile_scores()
    with pytest.raises(MlnbError, match="float32"):
        array_ranking.auc_per_category(device.ns, Y, device.ns.asarray(S.astype(np.float64)))


# -- the study ---------------------------------------------------------------------------------
STUDY = ["models.lr.init_from=nb", "models.lr.npasses=1", "eval.bootstrap=0"]


@pytest.mark.parametrize("device", DEVICES)
def test_a_study_through_the_array_engine_gives_the_cpu_engines_metrics(small_corpus, device):
    data = small_corpus
    runs = {}
    for name in ("cpu", device):
        config = load_config(None, STUDY + [f"engine.device={name}"])
        runs[name] = run_models(config, data.X_train, data.Y_train, data.X_test, data.Y_test, data.category_names)
    ranked = ((np.asarray(data.Y_train.sum(axis=0)).ravel() >= WELL_POPULATED)
              & (np.asarray(data.Y_test.sum(axis=0)).ravel() >= WELL_POPULATED))
    for cpu, array in zip(runs["cpu"], runs[device]):
        assert type(array.model).__name__ == "ArrayModel" and type(cpu.model).__name__ != "ArrayModel"
        a, c = array.evaluation.per_category["auc"], cpu.evaluation.per_category["auc"]
        if device == "gpu" and cpu.name == "lr":  # see WELL_POPULATED
            assert np.abs(a[ranked] - c[ranked]).max() < 1e-3, np.abs(a - c)
            continue
        np.testing.assert_allclose(a, c, atol=1e-4, equal_nan=True)  # scores to float32 round-off
        assert abs(array.evaluation.summary["macro_auc"] - cpu.evaluation.summary["macro_auc"]) < 1e-4


def test_device_gpu_without_a_gpu_is_refused_in_one_line(monkeypatch):
    import mlnb.models.array.device as device

    monkeypatch.setattr(device, "gpu_problem", lambda: "CuPy is not installed (pip install 'mlnb[gpu]')")
    with pytest.raises(MlnbError, match=r"engine.device = 'gpu': CuPy is not installed .*use engine.device = 'cpu'"):
        load_config(None, ["engine.device=gpu"])
    with pytest.raises(MlnbError, match="engine.device = 'gpu': CuPy"):
        device_for("gpu")


def test_the_array_engine_fits_studies_held_in_memory():
    with pytest.raises(MlnbError, match="data.streaming = true use engine.device = 'cpu'"):
        load_config(None, ["engine.device=array-numpy", "data.streaming=true", "data.source=shards",
                           "data.shards.path=/nonexistent"])


@pytest.mark.slow
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
