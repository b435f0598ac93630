"""SparseNaiveBayes: a default plus sparse corrections gives the dense NaiveBayes's scores, for every count
event model and option; by hand in float64; untrainable categories, empty documents, unseen words; top_k;
counters in memory, out of core and summed over chunks; checks in one line; the model kind.

How close is close. The dense model's W is rounded to float32 (W = log r with r rounded once: an error of
at most u = 2⁻²⁴ absolute plus a few ulp of W) and its scores are summed in float32 from b, one product per
non-zero of the document (m of them): each rounding errs by at most u of the running sum. So a dense score
is within

    u · [(m + 2)·(|b_k| + Σ_w |x_w|·|W_wk|) + 8·Σ_w |x_w|]

of the exact one, and the sparse model's float64 score (errors ~1e-16 relative) must be within that of
the dense score (``assert_dense_scores``); against the float64 formulas themselves it is within 1e-10.
"""

import functools
import warnings
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from mlnb import MlnbError, NaiveBayes
from mlnb.models._sklearn import NotFittedError
from mlnb.models.naive_bayes import sparse as sparse_module
from mlnb.models.naive_bayes.count_store import CountStore
from mlnb.models.naive_bayes.sparse import KIND, SparseNaiveBayes, SparseNaiveBayesOptions
from mlnb.models.naive_bayes.sparse_counts import SparseCounts

U = 2.0 ** -24
SHARED = Path(__file__).resolve().parents[3].parent / "shared" / "data"


def _options():
    """Every event model × smoothing × binarize × mode × norm/reference each model reads."""
    grid = []
    for event_model in ("multinomial", "bernoulli", "complement", "poisson"):
        for smoothing in ("additive", "m_estimate"):
            for binarize in ((False,) if event_model == "bernoulli" else (False, True)):
                for mode in (("exact",) if event_model == "poisson" else ("exact", "tutorial")):
                    norms = ((False, "corpus"), (False, "none"), (True, "corpus"), (True, "none")) \
                        if event_model == "complement" else ((False, "corpus"),)
                    for norm, reference in norms:
                        grid.append(dict(event_model=event_model, smoothing=smoothing, binarize=binarize,
                                         mode=mode, norm=norm, reference=reference))
    return grid


OPTIONS = _options()


def _id(options):
    return "-".join(str(value) if name == "event_model" else f"{name}={value}" for name, value in options.items())


def random_counts(n, V, K, seed, density=0.05):
    """X (n × V) counts 1..3 with empty documents and never-seen words; Y (n × K) of long-tailed sizes with
    a category without positives (0) and one without negatives (1)."""
    rng = np.random.default_rng(seed)
    X = sp.random(n, V, density=density, random_state=seed, format="csr",
                  data_rvs=lambda size: rng.integers(1, 4, size)).astype(np.float32)
    X = sp.lil_matrix(X)
    X[:3] = 0  # empty documents
    X[:, V - 2:] = 0  # words never seen in training
    Y = (rng.random((n, K)) < np.geomspace(0.4, 0.01, K)).astype(np.int8)
    Y[:, 0], Y[:, 1] = 0, 1
    return sp.csr_matrix(X, dtype=np.float32), sp.csr_matrix(Y)


def test_documents(n, V, seed):
    """Test documents: an empty one, one of a never-seen word only, and random ones."""
    rng = np.random.default_rng(seed)
    X = sp.random(n, V, density=0.06, random_state=seed + 1, format="lil",
                  data_rvs=lambda size: rng.integers(1, 5, size)).astype(np.float32)
    X[0] = 0
    X[1] = 0
    X[1, V - 1] = 2
    return sp.csr_matrix(X)


test_documents.__test__ = False


def fitted(X, Y, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # untrainable categories: warned, tested below
        return NaiveBayes(**options).fit(X, Y), SparseNaiveBayes(**options).fit(X, Y)


def assert_dense_scores(dense, sparse, X):
    """The sparse float64 scores within float32 rounding of the dense float32 ones (module docstring),
    and its float32 scores within that and half an ulp."""
    presence = dense.binarize or dense.event_model == "bernoulli"
    P = X.copy().astype(np.float64)
    if presence:
        P.data = (P.data > 0).astype(np.float64)
    bound = np.asarray(P @ np.abs(dense.weights_.astype(np.float64))) + np.abs(dense.bias_.astype(np.float64))
    m = np.diff(X.indptr)[:, None]
    tolerance = U * ((m + 2) * bound + 8 * np.asarray(P.sum(axis=1)))
    expected = dense.decision_function(X).astype(np.float64)
    exact = sparse.decision_function(X, dtype=np.float64)
    assert exact.dtype == np.float64 and exact.shape == expected.shape
    excess = np.abs(exact - expected) - tolerance
    assert excess.max() <= 0, f"off by {np.abs(exact - expected).max()} beyond the float32 bound"
    rounded = sparse.decision_function(X)
    assert rounded.dtype == np.float32
    assert (np.abs(rounded - expected) <= tolerance + U * np.abs(expected)).all()
    return exact


@pytest.mark.parametrize("options", OPTIONS, ids=_id)
def test_scores_equal_the_dense_model_for_every_event_model_and_option(options):
    X, Y = random_counts(300, 400, 12, seed=0)
    dense, sparse = fitted(X, Y, **options)
    assert_dense_scores(dense, sparse, test_documents(60, 400, seed=1))
    assert_dense_scores(dense, sparse, X)
    np.testing.assert_array_equal(sparse.untrainable_categories_, dense.untrainable_categories_)
    np.testing.assert_allclose(sparse.bias_, dense.bias_, rtol=4 * U, atol=4 * U)


def reference_scores(options, X, Y, Xtest):
    """Every weight by its module's formula, in float64, over the dense V × K counts: the scores to 1e-10."""
    F = (Y.T.astype(np.float64) @ X.astype(np.float64)).toarray()  # (K, V)
    presence = options["binarize"] or options["event_model"] == "bernoulli"
    Xp = X.astype(np.float64)
    if presence:
        Xp.data[:] = 1.0
        F = (Y.T.astype(np.float64) @ Xp).toarray()
    K, V = F.shape
    t = np.asarray(Xp.sum(axis=0)).ravel()
    N = np.asarray(Y.sum(axis=0), dtype=np.float64).ravel()
    n = X.shape[0]
    alpha = options.get("m", 1.0) / V if options["smoothing"] == "m_estimate" else options.get("alpha", 0.5)
    total, N_bar = (F.sum(axis=0), N.sum() - N) if options["mode"] == "tutorial" else (t, n - N)
    F_bar = np.maximum(total - F, 0)
    S = F.sum(axis=1)
    S_bar = total.sum() - S
    with np.errstate(divide="ignore"):
        prior = np.log(N) - np.log(N_bar)
    model = options["event_model"]
    if model == "multinomial":
        W = np.log((F + alpha) / (S + alpha * V)[:, None]) - np.log((F_bar + alpha) / (S_bar + alpha * V)[:, None])
        b = prior
    elif model == "poisson":
        lam, lam_bar = (F + alpha) / (N + alpha)[:, None], (F_bar + alpha) / (N_bar + alpha)[:, None]
        W, b = np.log(lam) - np.log(lam_bar), prior - (lam.sum(axis=1) - lam_bar.sum(axis=1))
    elif model == "bernoulli":
        p, p_bar = (F + alpha) / (N + 2 * alpha)[:, None], (F_bar + alpha) / (N_bar + 2 * alpha)[:, None]
        W = np.log(p) - np.log1p(-p) - np.log(p_bar) + np.log1p(-p_bar)
        b = prior + (np.log1p(-p) - np.log1p(-p_bar)).sum(axis=1)
    else:
        log_theta_bar = np.log((F_bar + alpha) / (S_bar + alpha * V)[:, None])
        log_theta = np.log((t + alpha) / (t.sum() + alpha * V))
        if options["norm"]:
            W, reference = log_theta_bar / log_theta_bar.sum(axis=1, keepdims=True), log_theta / log_theta.sum()
        else:
            W, reference = -log_theta_bar, -log_theta
        if options["reference"] == "corpus":
            W = W - reference
        b = np.zeros(K)
    trainable = (N > 0) & (N_bar > 0)
    W[~trainable] = 0.0
    b = np.where(trainable, b, np.log(N + 0.5) - np.log(N_bar + 0.5))
    Xt = Xtest.astype(np.float64)
    if presence:
        Xt.data = (Xt.data > 0).astype(np.float64)
    return np.asarray(Xt @ W.T) + b


@pytest.mark.parametrize("options", OPTIONS[::3] + [OPTIONS[-2]], ids=_id)
def test_scores_equal_the_float64_formulas(options):
    X, Y = random_counts(200, 150, 6, seed=3)
    _, sparse = fitted(X, Y, **options)
    Xtest = test_documents(40, 150, seed=4)
    expected = reference_scores(options, X, Y, Xtest)
    np.testing.assert_allclose(sparse.decision_function(Xtest, dtype=np.float64), expected, rtol=1e-10,
                               atol=1e-10 * np.abs(expected).max())


# 3 words, 2 categories, 4 training documents
HAND_X = sp.csr_matrix(np.array([[2, 0, 1], [1, 1, 0], [0, 3, 0], [0, 1, 1]], dtype=np.float32))
HAND_Y = sp.csr_matrix(np.array([[1, 0], [1, 1], [0, 1], [0, 0]], dtype=np.int8))
HAND_TEST = sp.csr_matrix(np.array([[1, 0, 2], [0, 0, 0]], dtype=np.float32))


def test_a_hand_computed_multinomial_example():
    # category 0: F = (3, 1, 1), S = 5; F̄ = t − F = (3, 5, 2) − F = (0, 4, 1), S̄ = 5; N = 2, N̄ = 2; α = 1, V = 3
    # W_w = log[(F_w + 1)/(F̄_w + 1) · (S̄ + 3)/(S + 3)] = log(4/1), log(2/5), log(2/2); b = log 2/2 = 0
    # category 1: F = (1, 4, 0), S = 5; F̄ = (2, 1, 2), S̄ = 5; W = log(2/3), log(5/2), log(1/3); b = 0
    model = SparseNaiveBayes(alpha=1.0).fit(HAND_X, HAND_Y)
    expected = np.array([[np.log(4) + 2 * np.log(1), np.log(2 / 3) + 2 * np.log(1 / 3)], [0.0, 0.0]])
    np.testing.assert_allclose(model.decision_function(HAND_TEST, dtype=np.float64), expected, rtol=1e-14,
                               atol=1e-15)


def test_a_hand_computed_bernoulli_example():
    # presence: category 0 has F = (2, 1, 1) of N = 2; F̄ = t − F = (2, 3, 2) − F = (0, 2, 1) of N̄ = 2; α = 1
    # p = (F + 1)/4 = (3/4, 2/4, 2/4), p̄ = (F̄ + 1)/4 = (1/4, 3/4, 2/4)
    # W_w = log p/(1 − p) − log p̄/(1 − p̄) = log 3 + log 3, 0 − log 3, 0;  b = Σ_w log(1 − p)/(1 − p̄) = log(1/3) +
    # log 2 + 0
    model = SparseNaiveBayes(event_model="bernoulli", alpha=1.0).fit(HAND_X, HAND_Y)
    b0 = np.log(1 / 3) + np.log(2)
    scores = model.decision_function(HAND_TEST, dtype=np.float64)
    np.testing.assert_allclose(scores[:, 0], [b0 + 2 * np.log(3), b0], rtol=1e-14)
    np.testing.assert_allclose(scores, reference_scores(dict(event_model="bernoulli", smoothing="additive",
                                                             binarize=False, mode="exact", alpha=1.0),
                                                        HAND_X, HAND_Y, HAND_TEST), rtol=1e-13)


@pytest.mark.parametrize("options", [dict(event_model="complement", norm=True), dict(event_model="poisson"),
                                     dict(event_model="complement", mode="tutorial", reference="none")],
                         ids=["complement-norm", "poisson", "complement-tutorial"])
def test_the_hand_example_for_the_other_models(options):
    full = {**dict(smoothing="additive", binarize=False, mode="exact", norm=False, reference="corpus", alpha=1.0),
            **options}
    model = SparseNaiveBayes(**full).fit(HAND_X, HAND_Y)
    np.testing.assert_allclose(model.decision_function(HAND_TEST, dtype=np.float64),
                               reference_scores(full, HAND_X, HAND_Y, HAND_TEST), rtol=1e-13, atol=1e-15)


def test_untrainable_categories_score_by_their_smoothed_prior_and_are_warned():
    X, Y = random_counts(100, 80, 5, seed=5)
    with pytest.warns(UserWarning, match="2 categories have no positive or no negative"):
        model = SparseNaiveBayes().fit(X, Y)
        model.bias_
    np.testing.assert_array_equal(model.untrainable_categories_, [0, 1])
    assert model.untrainable_scored_by_prior_ is True  # the report reads it: there are no dense weights to look at
    scores = model.decision_function(test_documents(10, 80, seed=6), dtype=np.float64)
    n = 100
    np.testing.assert_array_equal(scores[:, 0], np.log(0.5) - np.log(n + 0.5))
    np.testing.assert_array_equal(scores[:, 1], np.log(n + 0.5) - np.log(0.5))
    assert not (model.corrections_[:, :2] != 0).sum()


def test_empty_documents_score_the_bias_and_unseen_words_the_default():
    X, Y = random_counts(200, 100, 6, seed=7)
    dense, sparse = fitted(X, Y, event_model="bernoulli")
    empty = sp.csr_matrix((3, 100), dtype=np.float32)
    np.testing.assert_array_equal(sparse.decision_function(empty, dtype=np.float64), np.tile(sparse.bias_, (3, 1)))
    unseen = sp.csr_matrix(([5.0], ([0], [99])), shape=(1, 100), dtype=np.float32)
    assert_dense_scores(dense, sparse, unseen)
    assert sparse.corrections_[99].nnz == 0  # a word never seen has no pairs: its weight is the default


def test_top_k_is_the_stable_argsort_of_the_float32_scores_ties_lower_category_first():
    X, Y = random_counts(150, 60, 14, seed=8)
    Y = sp.lil_matrix(Y)
    Y[:, 5:9] = 0  # four more untrainable categories with one prior: tied scores in every document
    Y = sp.csr_matrix(Y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = SparseNaiveBayes(event_model="multinomial").fit(X, Y)
    Xtest = test_documents(30, 60, seed=9)
    scores = model.decision_function(Xtest)
    order = np.argsort(-scores, axis=1, kind="stable")
    for k in (1, 3, 7, 14):
        categories, best = model.top_k(Xtest, k)
        assert categories.dtype == np.int64 and best.dtype == np.float32 and categories.shape == (30, k)
        np.testing.assert_array_equal(categories, order[:, :k])
        np.testing.assert_array_equal(best, np.take_along_axis(scores, order[:, :k], axis=1))
    empty = sp.csr_matrix((1, 60), dtype=np.float32)  # b only: categories 0, 5, 6, 7, 8 tie at the lowest prior
    np.testing.assert_array_equal(model.top_k(empty, 14)[0][0, -5:], [0, 5, 6, 7, 8])


def test_scores_and_top_k_do_not_depend_on_the_block_size(monkeypatch):
    X, Y = random_counts(200, 120, 9, seed=10)
    _, model = fitted(X, Y, event_model="bernoulli")
    Xtest = test_documents(50, 120, seed=11)
    whole, (categories, best) = model.decision_function(Xtest, dtype=np.float64), model.top_k(Xtest, 4)
    monkeypatch.setattr(sparse_module, "BLOCK_VALUES", 20)  # two documents a block
    model._built_for = None
    np.testing.assert_array_equal(model.decision_function(Xtest, dtype=np.float64), whole)
    small_categories, small_best = model.top_k(Xtest, 4)
    np.testing.assert_array_equal(small_categories, categories)
    np.testing.assert_array_equal(small_best, best)
    one = model.decision_function(Xtest[7], dtype=np.float64)
    np.testing.assert_array_equal(one[0], whole[7])


def test_partial_fit_in_chunks_gives_the_scores_of_one_fit():
    X, Y = random_counts(240, 100, 7, seed=12)
    _, whole = fitted(X, Y, event_model="complement", norm=True)
    chunked = SparseNaiveBayes(event_model="complement", norm=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for start in range(0, 240, 70):
            chunked.partial_fit(X[start:start + 70], Y[start:start + 70])
        Xtest = test_documents(20, 100, seed=13)
        np.testing.assert_allclose(chunked.decision_function(Xtest, dtype=np.float64),
                                   whole.decision_function(Xtest, dtype=np.float64), rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("options", [dict(event_model="multinomial"), dict(event_model="bernoulli"),
                                     dict(event_model="complement", norm=True, mode="tutorial")],
                         ids=["multinomial", "bernoulli", "complement-norm-tutorial"])
def test_counters_out_of_core_score_as_in_memory_asking_only_each_blocks_words(options, tmp_path, monkeypatch):
    X, Y = random_counts(240, 150, 8, seed=14)
    chunks = [(X[start:start + 60], Y[start:start + 60]) for start in range(0, 240, 60)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        in_memory = SparseNaiveBayes(**options).fit_chunks(iter(chunks))
        out_of_core = SparseNaiveBayes(**options, max_count_memory=1e-5, count_folder=tmp_path).fit_chunks(chunks)
        assert isinstance(in_memory.counts_, SparseCounts) and isinstance(out_of_core.counts_, CountStore)
        assert out_of_core.corrections_ is None
        requested = []
        pairs_of = CountStore.pairs_of
        monkeypatch.setattr(CountStore, "pairs_of", lambda store, words: requested.append(words) or
                            pairs_of(store, words))
        monkeypatch.setattr(sparse_module, "BLOCK_VALUES", 80)  # ten documents a block
        Xtest = test_documents(30, 150, seed=15)
        expected = in_memory.decision_function(Xtest, dtype=np.float64)
        np.testing.assert_array_equal(out_of_core.decision_function(Xtest, dtype=np.float64), expected)
    assert len(requested) == 3
    for block, words in enumerate(requested):
        np.testing.assert_array_equal(words, np.unique(Xtest[10 * block:10 * block + 10].indices))
    store = CountStore.write(tmp_path / "written", in_memory.counts_)
    with pytest.warns(UserWarning, match="categories have no positive or no negative"):
        from_store = SparseNaiveBayes(**options).fit_counts(store)
    np.testing.assert_array_equal(from_store.decision_function(Xtest, dtype=np.float64), expected)


def test_the_model_kind_fits_from_counters_summed_over_chunks():
    X, Y = random_counts(120, 50, 5, seed=16)

    class Trainer:  # the study's StreamTrainer, counting three chunks and summing their counters
        asked = []

        def count_pairs(self, presence, max_count_memory):
            self.asked.append((presence, max_count_memory))
            parts = [SparseCounts.from_chunk(X[s:s + 40], Y[s:s + 40], presence=presence) for s in range(0, 120, 40)]
            return (parts[0] + parts[1]) + parts[2]

    options = SparseNaiveBayesOptions(event_model="bernoulli")
    assert KIND.name == "sparse_naive_bayes" and KIND.fits_from == "full_batch" and KIND.tasks == ("multilabel",)
    assert KIND.requires_non_negative(options) and KIND.state_per_weight(options) == (0.0, "")
    assert KIND.score_type(options, "multilabel") == "log_odds"
    assert KIND.score_type(SparseNaiveBayesOptions(event_model="complement"), "multilabel") == "ranking"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = KIND.fit_streamed(KIND.build(options), options, {}, Trainer())
        assert model.counts_.presence
        _, whole = fitted(X, Y, event_model="bernoulli")
        np.testing.assert_allclose(model.decision_function(X, dtype=np.float64),
                                   whole.decision_function(X, dtype=np.float64), rtol=1e-13, atol=1e-13)
    assert Trainer.asked == [(True, options.max_count_memory)]  # bernoulli counts presence, under its memory
    assert model.untrainable_scored_by_prior_ is True
    assert KIND.describe(SparseNaiveBayesOptions(event_model="complement", norm=True)).endswith(
        "(complement, normalised)")
    KIND.check(options, "multilabel")
    with pytest.raises(MlnbError, match="does not do task = 'multiclass'"):
        KIND.build(options, task="multiclass")


@pytest.mark.parametrize("options, message", [
    (dict(event_model="gaussian"), "needs sums of squares of signed values, not event counters"),
    (dict(event_model="mixed"), "needs sums of squares"),
    (dict(event_model="nope"), "event_model must be one of"),
    (dict(norm=True), "norm applies to"),
    (dict(event_model="poisson", mode="tutorial"), "mode='tutorial' exists for"),
    (dict(alpha=0.0), "alpha must be > 0"),
    (dict(max_count_memory=0), "max_count_memory must be a number of MiB > 0"),
])
def test_bad_options_are_one_line(options, message):
    X, Y = random_counts(20, 10, 3, seed=17)
    with pytest.raises(MlnbError, match=message) as error:
        SparseNaiveBayes(**options).fit(X, Y)
    assert "\n" not in str(error.value)


def test_bad_input_and_use_are_one_line():
    X, Y = random_counts(40, 20, 3, seed=18)
    with pytest.raises(NotFittedError):
        SparseNaiveBayes().decision_function(X)
    with pytest.raises(NotFittedError):
        SparseNaiveBayes().untrainable_scored_by_prior_
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = SparseNaiveBayes().fit(X, Y)
    with pytest.raises(MlnbError, match="X has 21 features, but SparseNaiveBayes was fitted with 20"):
        model.decision_function(sp.csr_matrix((1, 21), dtype=np.float32))
    with pytest.raises(MlnbError, match="negative"):
        model.decision_function(-X)
    with pytest.raises(MlnbError, match="k must be a whole number from 1 to the 3 categories"):
        model.top_k(X, 4)
    with pytest.raises(MlnbError, match="partial_fit got X"):
        model.partial_fit(X[:, :10], Y)
    with pytest.raises(MlnbError, match="count presence, but event_model='multinomial'"):
        SparseNaiveBayes().fit_counts(SparseCounts.from_chunk(X, Y, presence=True))
    with pytest.raises(MlnbError, match="0 documents"):
        SparseNaiveBayes().fit(X[:0], Y[:0])


def test_set_params_resmooths_the_same_counters():
    X, Y = random_counts(100, 40, 4, seed=21)
    _, model = fitted(X, Y, event_model="bernoulli")
    counts = model.counts_
    model.set_params(alpha=2.0, mode="tutorial")
    _, fresh = fitted(X, Y, event_model="bernoulli", alpha=2.0, mode="tutorial")
    assert model.counts_ is counts
    np.testing.assert_array_equal(model.decision_function(X, dtype=np.float64),
                                  fresh.decision_function(X, dtype=np.float64))


def test_chunks_of_another_shape_and_partial_fit_onto_a_store_are_refused(tmp_path):
    X, Y = random_counts(60, 20, 3, seed=20)
    with pytest.raises(MlnbError, match=r"fit_chunks got a chunk of X \(30, 19\) / Y \(30, 3\), but the first had 20"):
        SparseNaiveBayes().fit_chunks([(X[:30], Y[:30]), (X[30:, :19], Y[30:])])
    with pytest.raises(MlnbError, match="fit_chunks got no chunks"):
        SparseNaiveBayes().fit_chunks([])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = SparseNaiveBayes(max_count_memory=1e-5, count_folder=tmp_path).fit_chunks([(X[:30], Y[:30]),
                                                                                           (X[30:], Y[30:])])
    assert isinstance(model.counts_, CountStore)
    with pytest.raises(MlnbError, match="counts_ is a CountStore on disk: call fit_chunks"):
        model.partial_fit(X, Y)


def test_scikit_learn_class_labels_and_predictions():
    X, _ = random_counts(90, 30, 3, seed=19)
    y = np.array(["a", "b", "c"])[np.arange(90) % 3]
    model = SparseNaiveBayes().fit(X, y)
    assert list(model.classes_) == ["a", "b", "c"]
    assert set(model.predict(X)) <= {"a", "b", "c"}
    assert model.predict_proba(X).shape == (90, 3)
    native = SparseNaiveBayes().fit(X, sp.csr_matrix(np.eye(3, dtype=np.int8)[np.arange(90) % 3]))
    np.testing.assert_array_equal(native.predict(X, threshold=0.3),
                                  (native.predict_proba(X) >= 0.3).astype(np.int8))


# -- real corpora in ../shared/data ------------------------------------------------------------------------------
def _mulan(name):
    folder = SHARED / "mulan" / name
    if not (folder / f"{name}.xml").is_file():
        pytest.skip(f"Mulan data not found at {folder} (../shared/data is beside the project only in the "
                    "development checkout)")
    from mlnb.data.arff import load_arff_dataset

    data = load_arff_dataset(folder / f"{name}-train.arff", folder / f"{name}-test.arff", folder / f"{name}.xml")
    return data.X_train, data.Y_train, data.X_test


def _tweets():
    path = SHARED / "tweets" / "tweetsDTM.svm.gz"
    if not path.is_file():
        pytest.skip(f"real data not found at {path} (../shared/data is beside the project only in the "
                    "development checkout)")
    from sklearn.datasets import load_svmlight_file

    X, y = load_svmlight_file(str(path), zero_based=False, n_features=2213)
    X = sp.csr_matrix(X, dtype=np.float32)
    Y = sp.csr_matrix(np.eye(3, dtype=np.int8)[y.astype(int) - int(y.min())])
    return X[::2], Y[::2], X[1::2]


def _rcv1():
    path = SHARED / "rcv1subset" / "rcv1subset1.svm.gz"
    if not path.is_file():
        pytest.skip(f"real data not found at {path} (../shared/data is beside the project only in the "
                    "development checkout)")
    from mlnb.data.svmlight import load_svmlight_dataset

    data = load_svmlight_dataset(path, n_features=47236, seed=0)
    return data.X_train, data.Y_train, data.X_test


def _reuters():
    folder = SHARED / "reuters21578"
    if not (folder / "reut2-000.sgm").is_file():
        pytest.skip(f"real data not found at {folder} (../shared/data is beside the project only in the "
                    "development checkout)")
    from mlnb.data.reuters import load_reuters21578

    data = load_reuters21578(folder)
    return data.X_train, data.Y_train, data.X_test


REAL = {"medical": lambda: _mulan("medical"), "enron": lambda: _mulan("enron"), "bibtex": lambda: _mulan("bibtex"),
        "tweets": _tweets, "rcv1subset": _rcv1, "reuters21578": _reuters}
CORPORA = [*sorted(set(REAL) - {"reuters21578"}),
           pytest.param("reuters21578", marks=pytest.mark.slow)]  # 10 s to read and tokenise
@functools.lru_cache(maxsize=None)
def _real(corpus):
    """Each corpus read once per session (a skip is not cached: it is raised again)."""
    return REAL[corpus]()


REAL_OPTIONS = [dict(event_model="multinomial"), dict(event_model="bernoulli", mode="tutorial"),
                dict(event_model="complement", norm=True), dict(event_model="complement", binarize=True),
                dict(event_model="poisson", smoothing="m_estimate")]


@pytest.mark.parametrize("corpus", CORPORA)
@pytest.mark.parametrize("options", REAL_OPTIONS, ids=_id)
def test_real_corpora_give_the_dense_scores(corpus, options):
    X, Y, Xtest = _real(corpus)
    dense, sparse = fitted(X, Y, **options)
    assert_dense_scores(dense, sparse, sp.csr_matrix(Xtest, dtype=np.float32))
    np.testing.assert_array_equal(sparse.untrainable_categories_, dense.untrainable_categories_)


def test_the_estimator_asks_each_event_models_record_never_its_name():
    """The choices are the registered event models with a sparse form, and sparse.py names none of them but
    in the option's default: a new event model is its module, its registration line and its contract test."""
    import ast

    from mlnb.models.naive_bayes.event_model import REGISTERED

    with_form = tuple(name for name, model in REGISTERED.items() if model.sparse is not None)
    assert sparse_module.SPARSE_EVENT_MODELS == with_form and {"gaussian", "mixed"}.isdisjoint(with_form)
    source = Path(sparse_module.__file__).read_text(encoding="utf-8")
    names = [node.value for node in ast.walk(ast.parse(source))
             if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in REGISTERED]
    assert names == ["multinomial"]  # SparseNaiveBayesOptions.event_model's default
