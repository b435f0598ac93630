"""solver = "lbfgs": the exact optimum of the documented objective, the same in memory and over chunks.

Oracle: scikit-learn's LogisticRegression (lbfgs, tight tol) per category at C = 1/(n·l2), and its
multinomial model in multiclass; with l1 (OWL-QN) its elastic net (saga) at C = 1/(n·(l1 + l2)),
l1_ratio = l1/(l1 + l2), and the optimality conditions of F = f + l1·‖W‖₁; the full gradient against
finite differences; the sum over chunks against the sum over the whole matrix; a streamed fit (a
trainer over chunks of the same matrix, summed in the study's pairwise tree) against the fit in memory.
"""

import dataclasses
import operator
import pickle
from types import SimpleNamespace

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import check_grad
from sklearn.linear_model import LogisticRegression as SklearnLR

from mlnb import MlnbError
from mlnb.backends.reduce import tree_reduce
from mlnb.data.synthetic import make_rcv1_like
from mlnb.models import KINDS
from mlnb.models._linear import as_one_hot, prior_log_odds
from mlnb.models.logistic.lbfgs import Partial, loss_and_gradient
from mlnb.models.logistic import LogisticRegression

L2 = 1e-2
FAST = dict(solver="lbfgs", l2=L2, tol=1e-8, lbfgs_memory=30)  # tight tol: the oracle checks are to 1e-6


@pytest.fixture(scope="module")
def corpus():
    """600 documents, 300 words, 12 categories (9 trainable: 3 have no positive or no negative document)."""
    data = make_rcv1_like(n_documents=600, n_features=300, n_categories=12, seed=1)
    return data.X.astype(np.float32).tocsr(), data.Y.tocsr()


@pytest.fixture(scope="module")
def multiclass(corpus):
    """The corpus's documents with 4 classes drawn from a seeded softmax model over them."""
    X = corpus[0]
    rng = np.random.default_rng(7)
    w_true = rng.normal(scale=0.3, size=(X.shape[1], 4))
    return X, np.argmax(X @ w_true + rng.gumbel(size=(X.shape[0], 4)), axis=1)  # (n,) in 0..3


@pytest.fixture(scope="module")
def fitted(corpus):
    return LogisticRegression(**FAST).fit(*corpus)


def objective(X, Y, W, b, link, l1=0.0):
    """The documented f(W, b) (+ l1·‖W‖₁), written directly (dense, float64)."""
    Z = X.toarray().astype(np.float64) @ W + b  # (n, K)
    Y = Y.toarray()
    if link == "softmax":
        loss = (np.logaddexp.reduce(Z, axis=1) - (Z * Y).sum(axis=1)).sum()
    else:
        loss = (np.logaddexp(0.0, Z) - Y * Z).sum()
    return loss / X.shape[0] + 0.5 * L2 * (W * W).sum() + l1 * np.abs(W).sum()


def smooth_gradient(X, Y, W, b, link):
    """∇_W f and ∇_b f, written directly (dense, float64)."""
    Z = X.toarray().astype(np.float64) @ W + b  # (n, K)
    P = np.exp(Z - np.logaddexp.reduce(Z, axis=1)[:, None]) if link == "softmax" else 1 / (1 + np.exp(-Z))
    R = (P - Y.toarray()) / X.shape[0]  # (n, K)
    return X.toarray().T @ R + L2 * W, R.sum(axis=0)


class ChunkTrainer:
    """A ``StreamTrainer`` over chunks of a matrix in memory, summing as the study's does (a pairwise tree)."""

    def __init__(self, X, Y, n_chunks):
        bounds = np.linspace(0, X.shape[0], n_chunks + 1).astype(int)
        self.chunks = [SimpleNamespace(X=X[a:b], Y=Y[a:b].astype(np.int8)) for a, b in zip(bounds[:-1], bounds[1:])]
        self.n_features, self.n_categories = X.shape[1], Y.shape[1]
        self.passes = 0

    def label_counts(self):
        Y = sp.vstack([chunk.Y for chunk in self.chunks])
        return np.asarray(Y.sum(axis=0), dtype=np.float64).ravel(), Y.shape[0]

    def sum_over_chunks(self, function, *args, binarize_input=False):
        self.passes += 1
        return tree_reduce((function(chunk.X, chunk.Y, *args) for chunk in self.chunks), operator.add)


@pytest.mark.parametrize("link", ["sigmoid", "softmax"])
def test_the_gradient_is_the_objectives(tiny, tiny_multiclass, link):
    X, Y = tiny if link == "sigmoid" else tiny_multiclass
    Y = sp.csr_matrix(Y) if link == "sigmoid" else as_one_hot(Y, X.shape[0])
    V, K = X.shape[1], Y.shape[1]

    def f(theta):
        part = loss_and_gradient(X, Y, theta[:V * K].reshape(V, K), theta[V * K:], link)
        return part.loss.sum() / part.n + 0.5 * L2 * theta[:V * K] @ theta[:V * K]

    def gradient(theta):
        W = theta[:V * K].reshape(V, K)
        part = loss_and_gradient(X, Y, W, theta[V * K:], link)
        return np.concatenate([(part.grad_W / part.n + L2 * W).ravel(), part.grad_b / part.n])

    theta = np.random.default_rng(0).normal(scale=0.3, size=V * K + K)
    assert f(theta) == pytest.approx(objective(X, Y, theta[:V * K].reshape(V, K), theta[V * K:], link), rel=1e-12)
    assert check_grad(f, gradient, theta) < 1e-6 * np.linalg.norm(gradient(theta))


def test_the_sum_over_chunks_is_the_sum_over_all_documents(corpus):
    X, Y = corpus
    rng = np.random.default_rng(1)
    W, b = rng.normal(scale=0.1, size=(X.shape[1], 5)), rng.normal(size=5)
    columns = np.array([0, 2, 3, 6, 9])
    whole = loss_and_gradient(X, Y, W, b, "sigmoid", columns)
    chunked = ChunkTrainer(X, Y, 7).sum_over_chunks(loss_and_gradient, W, b, "sigmoid", columns)
    assert isinstance(chunked, Partial) and chunked.n == whole.n == X.shape[0]
    assert whole.loss.shape == (5,)  # one loss sum per category
    np.testing.assert_allclose(chunked.loss, whole.loss, rtol=1e-12)
    np.testing.assert_allclose(chunked.grad_W, whole.grad_W, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(chunked.grad_b, whole.grad_b, rtol=1e-10, atol=1e-10)
    pickle.loads(pickle.dumps((loss_and_gradient, whole)))  # what Dask ships: a module-level function, a Partial


@pytest.mark.slow
def test_multilabel_reaches_scikit_learns_optimum(corpus, fitted):
    """Per category, scikit-learn at C = 1/(n·l2) minimises the same objective: the same W, b and f."""
    X, Y = corpus
    n = X.shape[0]
    Yd = Y.toarray()
    trainable = [k for k in range(Y.shape[1]) if 0 < Yd[:, k].sum() < n]
    assert fitted.converged_ and len(trainable) == 9
    np.testing.assert_array_equal(fitted.untrainable_categories_, sorted(set(range(Y.shape[1])) - set(trainable)))
    for k in trainable:
        sk = SklearnLR(C=1 / (n * L2), tol=1e-10, max_iter=10_000).fit(X.astype(np.float64), Yd[:, k])
        w_sk, b_sk = sk.coef_.ravel(), sk.intercept_[0]
        w, b = fitted.weights_[:, k].astype(np.float64), float(fitted.bias_[k])
        f_sk = objective(X, Y[:, k], w_sk[:, None], b_sk, "sigmoid")
        f = objective(X, Y[:, k], w[:, None], b, "sigmoid")
        assert f == pytest.approx(f_sk, rel=1e-6), k
        assert np.linalg.norm(w - w_sk) <= 1e-3 * np.linalg.norm(w_sk), k
        assert b == pytest.approx(b_sk, abs=1e-3 * max(1.0, abs(b_sk))), k


def test_untrainable_categories_get_no_weights_and_their_prior(corpus, fitted):
    X, Y = corpus
    N = np.asarray(Y.sum(axis=0), dtype=np.float64).ravel()
    untrainable = fitted.untrainable_categories_
    assert untrainable.size and not fitted.weights_[:, untrainable].any()
    np.testing.assert_allclose(fitted.bias_[untrainable], prior_log_odds(N, X.shape[0])[untrainable], rtol=1e-6)


def test_history_records_a_falling_objective(fitted):
    objectives = [record["objective"] for record in fitted.history_]
    assert len(objectives) == fitted.n_iter_ > 1
    assert all(later <= earlier for earlier, later in zip(objectives, objectives[1:]))
    assert {"train_loss", "max_gradient", "passes", "seconds"} <= set(fitted.history_[-1])
    assert fitted.weights_.dtype == np.float32 and fitted.bias_.dtype == np.float32


@pytest.mark.slow
@pytest.mark.parametrize("l1", [0.0, 1e-3])
@pytest.mark.parametrize("task", ["multilabel", "multiclass"])
def test_a_streamed_fit_reaches_the_in_memory_optimum(corpus, multiclass, task, l1):
    """The kind's streamed fit, L-BFGS (OWL-QN) on gradients summed over 5 chunks, = fit on the whole matrix."""
    X, Y = corpus if task == "multilabel" else (multiclass[0], as_one_hot(multiclass[1], multiclass[0].shape[0]))
    kind = KINDS["logistic"]
    options = dataclasses.replace(kind.options(), solver="lbfgs", l1=l1, l2=L2, tol=1e-9, lbfgs_memory=30,
                                  max_iter=2000)  # OWL-QN, multiclass: ~700 iterations
    trainer = ChunkTrainer(X, Y, 5)
    streamed = kind.fit_streamed(kind.build(options, task=task), options, {}, trainer)
    whole = kind.build(options, task=task).fit(X, Y)
    assert trainer.passes == streamed.history_[-1]["passes"] > 1 and streamed.converged_ and whole.converged_
    # OWL-QN's Armijo tests compare values of F, which stop resolving a step near 1e-7·‖W‖ (multiclass: 2e-6)
    close = 1e-5 if l1 else 1e-6
    scale = np.abs(whole.weights_).max()
    np.testing.assert_allclose(streamed.weights_, whole.weights_, rtol=0, atol=close * scale)
    np.testing.assert_allclose(streamed.bias_, whole.bias_, rtol=0, atol=close * max(1.0, np.abs(whole.bias_).max()))


def test_multiclass_reaches_scikit_learns_multinomial_optimum(multiclass):
    X, y = multiclass
    n = X.shape[0]
    model = LogisticRegression(**FAST, task="multiclass").fit(X, y)
    sk = SklearnLR(C=1 / (n * L2), tol=1e-10, max_iter=10_000).fit(X.astype(np.float64), y)
    W_sk, b_sk = sk.coef_.T, sk.intercept_  # (V, K), (K,)
    W, b = model.weights_.astype(np.float64), model.bias_.astype(np.float64)
    Y = as_one_hot(y, n)
    assert objective(X, Y, W, b, "softmax") == pytest.approx(objective(X, Y, W_sk, b_sk, "softmax"), rel=1e-6)
    assert np.linalg.norm(W - W_sk) <= 1e-3 * np.linalg.norm(W_sk)
    # b is fixed up to a constant (softmax): compare centred
    np.testing.assert_allclose(b - b.mean(), b_sk - b_sk.mean(), atol=1e-3 * max(1.0, np.abs(b_sk).max()))


def test_l1_reaches_scikit_learns_elastic_net_optimum(tiny):
    """OWL-QN against scikit-learn's saga at C = 1/(n·(l1 + l2)), l1_ratio = l1/(l1 + l2): the same F, W and zeros."""
    X, Y = tiny
    Y = sp.csr_matrix(Y)
    n, l1 = X.shape[0], 0.1
    model = LogisticRegression(solver="lbfgs", l1=l1, l2=L2, tol=1e-10).fit(X, Y)
    assert model.converged_ and not model.untrainable_categories_.size
    for k in range(Y.shape[1]):
        y = Y[:, k].toarray().ravel()
        sk = SklearnLR(solver="saga", l1_ratio=l1 / (l1 + L2), C=1 / (n * (l1 + L2)), tol=1e-12,
                       max_iter=200_000).fit(X.astype(np.float64), y)
        w_sk, w = sk.coef_.ravel(), model.weights_[:, k].astype(np.float64)
        f_sk = objective(X, Y[:, k], w_sk[:, None], sk.intercept_[0], "sigmoid", l1)
        assert objective(X, Y[:, k], w[:, None], float(model.bias_[k]), "sigmoid", l1) == pytest.approx(f_sk, rel=1e-6)
        assert np.linalg.norm(w - w_sk) <= 1e-3 * np.linalg.norm(w_sk)
        np.testing.assert_array_equal(w == 0, np.abs(w_sk) < 1e-8)  # the same words dropped
        assert 0 < np.count_nonzero(w) < w.size


@pytest.mark.slow
@pytest.mark.parametrize("task", ["multilabel", "multiclass"])
def test_l1_meets_the_optimality_conditions(corpus, multiclass, task):
    """At the optimum of F = f + l1·‖W‖₁: ∂f/∂w = −l1·sign(w) where w ≠ 0, |∂f/∂w| ≤ l1 where w = 0,
    and ∂f/∂b = 0."""
    X, Y = corpus if task == "multilabel" else (multiclass[0], as_one_hot(multiclass[1], multiclass[0].shape[0]))
    l1 = 1e-3
    model = LogisticRegression(solver="lbfgs", l1=l1, l2=L2, tol=1e-9, lbfgs_memory=30, max_iter=2000,
                               task=task).fit(X, Y)
    assert model.converged_
    columns = np.setdiff1d(np.arange(Y.shape[1]), model.untrainable_categories_)
    W, b = model.weights_[:, columns].astype(np.float64), model.bias_[columns].astype(np.float64)
    grad_W, grad_b = smooth_gradient(X, Y[:, columns], W, b, "softmax" if task == "multiclass" else "sigmoid")
    nonzero = W != 0
    assert 0.05 < nonzero.mean() < 0.95  # l1 drops some words, not all
    tolerance = 1e-5  # float32 weights
    assert np.abs(grad_W[nonzero] + l1 * np.sign(W[nonzero])).max() <= tolerance
    assert np.abs(grad_W[~nonzero]).max() <= l1 + tolerance
    assert np.abs(grad_b).max() <= tolerance
    assert model.history_[-1]["nonzero_weights"] == nonzero.sum()


def test_the_minibatch_only_calls_and_bad_values_are_refused(corpus):
    X, Y = corpus
    with pytest.raises(MlnbError, match="partial_fit is the minibatch solver's"):
        LogisticRegression(solver="lbfgs").partial_fit(X, Y)
    with pytest.raises(MlnbError, match="solver must be one of"):
        LogisticRegression(solver="newton").fit(X, Y)
    with pytest.raises(MlnbError, match="tol must be"):
        LogisticRegression(solver="lbfgs", tol=0).fit(X, Y)


def test_the_config_takes_the_solver_and_checks_its_values(tmp_path):
    from mlnb.config import load_config

    config = tmp_path / "study.toml"
    config.write_text('[data]\nsource = "synthetic"\n[models.lr]\nkind = "logistic"\nsolver = "lbfgs"\nl1 = 0.1\n')
    spec = load_config(config).models["lr"]
    assert (spec.options.solver, spec.options.l1, spec.options.max_iter) == ("lbfgs", 0.1, 500)
    for setting, key in (('models.lr.solver="newton"', "solver"), ("models.lr.tol=0", "tol"),
                         ("models.lr.max_iter=0", "max_iter")):
        with pytest.raises(MlnbError, match=key):
            load_config(config, [setting])


def test_fit_stream_with_lbfgs_sums_over_the_chunks(corpus):
    """The estimator's own fit_stream: one pass over make_chunks() per evaluation, the in-memory optimum."""
    X, Y = corpus
    trainer = ChunkTrainer(X, Y, 4)
    model = LogisticRegression(**FAST)
    with pytest.raises(MlnbError, match="category_counts"):
        model.fit_stream(lambda: iter(trainer.chunks), X.shape[1], Y.shape[1])
    model.fit_stream(lambda: iter(trainer.chunks), X.shape[1], Y.shape[1], category_counts=trainer.label_counts())
    whole = LogisticRegression(**FAST).fit(X, Y)
    np.testing.assert_allclose(model.weights_, whole.weights_, rtol=0, atol=1e-6 * np.abs(whole.weights_).max())
