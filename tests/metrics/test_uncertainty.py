"""Bootstrap intervals against brute-force resampling with sklearn; DeLong intervals of one AUC
against a hand-worked case and the textbook components."""

import textwrap

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.stats import norm
from sklearn.metrics import f1_score, precision_score, recall_score, roc_auc_score

from mlnb._kernels.jit import HAVE_NUMBA
from mlnb.errors import MlnbError
from mlnb.metrics import auc_confidence_intervals, bootstrap_intervals, bootstrap_replicates, evaluate
from mlnb.metrics.uncertainty import (BOOTSTRAP_METRICS, _replicate_parts, bootstrap_indices,
                                      paired_bootstrap_intervals)


@pytest.fixture
def small():
    rng = np.random.default_rng(1)
    Y = rng.random((60, 5)) < [0.5, 0.3, 0.1, 0.05, 0.5]
    scores = np.round(rng.normal(size=Y.shape) + Y, 1)  # ties within categories and across the pool
    return Y, scores


MICRO = [m for m in BOOTSTRAP_METRICS if m.startswith("micro_")]
MACRO = [m for m in BOOTSTRAP_METRICS if m.startswith("macro_")]


def _brute_force(Y, scores, D, idx, pooled):
    """Every micro metric of one resample, recomputed from the resampled rows with sklearn."""
    y, s, d = Y[idx], scores[idx], D[idx]
    return {"micro_auc": roc_auc_score(y[:, pooled].ravel(), s[:, pooled].ravel()),
            "micro_f1": f1_score(y[:, pooled], d[:, pooled], average="micro"),
            "micro_precision": precision_score(y[:, pooled], d[:, pooled], average="micro", zero_division=0),
            "micro_recall": recall_score(y[:, pooled], d[:, pooled], average="micro")}


def _stratified_weights(Y, n_boot, seed):
    """The documented draws: per resample, document weights w (n,) and per category its positives'
    weights v (the rows of Y's nonzeros in CSC order)."""
    Yc = sp.csc_matrix(Y)
    Yc.sort_indices()
    m = np.diff(Yc.indptr)
    category = np.repeat(np.arange(Y.shape[1]), m)
    rng = np.random.default_rng([seed, 1])
    for idx in bootstrap_indices(Y.shape[0], n_boot, seed):
        chosen = np.repeat(Yc.indptr[:-1], m) + np.floor(rng.random(Yc.nnz) * m[category]).astype(np.int64)
        v = np.bincount(chosen, minlength=Yc.nnz)
        weights = np.tile(np.bincount(idx, minlength=Y.shape[0])[:, None], (1, Y.shape[1])).astype(float)
        weights[Yc.indices, category] = v  # (n, K): a category's positives by v, its negatives by w
        yield idx, weights


@pytest.mark.parametrize("use_numba", [True, False])
@pytest.mark.parametrize("case", ["threshold", "decisions", "exclude"])
def test_replicates_equal_brute_force_resampling(small, use_numba, case):
    # micro metrics: exactly the metrics of the resampled documents; macro metrics: per category,
    # sklearn's weighted metrics with the positives drawn among themselves and the negatives by document
    Y, scores = small
    D = scores >= 0.5 if case == "decisions" else scores >= 0.0
    exclude = [1] if case == "exclude" else None
    pooled = [0, 2, 3, 4] if case == "exclude" else [0, 1, 2, 3, 4]
    parts = _replicate_parts(sp.csr_matrix(Y), scores, sp.csr_matrix(D) if case == "decisions" else None, 0.5,
                             BOOTSTRAP_METRICS, 25, 3, exclude, use_numba)
    expected = [_brute_force(Y, scores, D, idx, pooled) for idx in bootstrap_indices(60, 25, 3)]
    for metric in MICRO:
        np.testing.assert_allclose(parts.micro[metric], [e[metric] for e in expected], rtol=0, atol=1e-9,
                                   err_msg=metric)
    assert list(parts.fixed) == [k in pooled for k in range(5)]
    oracles = {"macro_auc": lambda y, s, d, w: roc_auc_score(y, s, sample_weight=w),
               "macro_f1": lambda y, s, d, w: f1_score(y, d, sample_weight=w, zero_division=0),
               "macro_precision": lambda y, s, d, w: precision_score(y, d, sample_weight=w, zero_division=0),
               "macro_recall": lambda y, s, d, w: recall_score(y, d, sample_weight=w, zero_division=0)}
    for b, (_, weights) in enumerate(_stratified_weights(Y, 3, 3)):  # the first resamples (same draws)
        for metric, oracle in oracles.items():
            estimate, deviations = parts.macro[metric]
            for k in range(5):
                assert estimate[k] == pytest.approx(oracle(Y[:, k], scores[:, k], D[:, k], None), abs=1e-12)
                assert estimate[k] + deviations[k, b] == pytest.approx(
                    oracle(Y[:, k], scores[:, k], D[:, k], weights[:, k]), abs=1e-9), (metric, k, b)


def test_bootstrap_indices_are_the_documented_draws():
    rng = np.random.default_rng(7)
    for idx in bootstrap_indices(50, 4, seed=7):
        np.testing.assert_array_equal(idx, rng.integers(0, 50, size=50))


def test_micro_replicates_are_evaluate_on_the_resampled_documents(small):
    Y, scores = small
    got = bootstrap_replicates(Y, scores, metrics=BOOTSTRAP_METRICS, n_boot=3, seed=5)
    for b, idx in enumerate(bootstrap_indices(60, 3, 5)):
        summary = evaluate(Y[idx], scores[idx]).summary
        for metric in MICRO:
            assert got[metric][b] == pytest.approx(summary[metric], abs=1e-12), metric


def test_intervals_are_seeded_and_contain_the_estimate():
    rng = np.random.default_rng(0)
    Y = rng.random((2000, 12)) < np.geomspace(0.3, 0.01, 12)
    scores = rng.normal(size=Y.shape) + 1.5 * Y - 2
    first = bootstrap_intervals(Y, scores, n_boot=100, seed=4)
    assert bootstrap_intervals(Y, scores, n_boot=100, seed=4) == first
    assert bootstrap_intervals(Y, scores, n_boot=100, seed=5) != first
    summary = evaluate(Y, scores).summary
    for metric, (low, high) in first.items():
        assert low < summary[metric] < high, metric
    wider = bootstrap_intervals(Y, scores, n_boot=100, seed=4, level=0.99)
    assert all(wider[m][0] <= first[m][0] and wider[m][1] >= first[m][1] for m in first)


def test_a_rare_category_stays_in_every_resample():
    # nine categories ranked perfectly and one with a single positive ranked last (AUC 0): averaging
    # over the categories that kept a positive in each resample put the interval above the estimate
    # (the rare one drops out of 37 % of resamples); over the fixed set it brackets it
    rng = np.random.default_rng(3)
    n, K = 400, 10
    Y = np.zeros((n, K), dtype=bool)
    for k in range(9):
        Y[rng.choice(n, 40, replace=False), k] = True
    Y[0, 9] = True
    scores = rng.normal(size=(n, K)) + 3 * Y
    scores[0, 9] = -10.0
    estimate = evaluate(Y, scores).summary["macro_auc"]
    low, high = bootstrap_intervals(Y, scores, metrics=("macro_auc",), n_boot=300, seed=0)["macro_auc"]
    assert low < estimate < high
    assert max(high - estimate, estimate - low) < 3 * min(high - estimate, estimate - low)


@pytest.mark.slow
@pytest.mark.parametrize("rarest", [1, 2], ids=["one-positive categories", "two or more positives"])
def test_macro_auc_interval_covers_by_simulation(rarest):
    # the population: 20 categories whose test positives follow a Zipf-like law from `rarest` to 100
    # among 500 documents, scores binormal (positives N(μ_k, 1), negatives N(0, 1)): AUC_k = Φ(μ_k / √2).
    # Nominal 95 % intervals of the macro AUC must cover the population's macro AUC ≥ 93 % of the time
    # (measured: 99 % with one-positive categories, whose variance is bounded conservatively; 93 % without)
    rng = np.random.default_rng(0)
    n, K, repeats = 500, 20, 300
    m = np.round(np.geomspace(rarest, 100, K)).astype(int)
    mu = rng.uniform(0.5, 3.0, K)
    truth = norm.cdf(mu / np.sqrt(2)).mean()
    covered = 0
    for r in range(repeats):
        Y = np.zeros((n, K), dtype=bool)
        for k in range(K):
            Y[rng.choice(n, m[k], replace=False), k] = True
        scores = rng.normal(size=(n, K)) + mu * Y
        low, high = bootstrap_intervals(Y, scores, metrics=("macro_auc",), n_boot=200, seed=r)["macro_auc"]
        covered += low <= truth <= high
    assert covered / repeats >= 0.93


def test_paired_intervals():
    rng = np.random.default_rng(2)
    n, K = 800, 8
    Y = rng.random((n, K)) < np.geomspace(0.3, 0.01, K)
    noise = rng.normal(size=(n, K))
    a = noise + 1.5 * Y  # b shares a's noise and is weaker: the paired interval is far narrower
    b = noise + 1.0 * Y + 0.3 * rng.normal(size=(n, K))
    same = paired_bootstrap_intervals(Y, a, a, metrics=("macro_auc", "micro_auc"), n_boot=100)
    assert same == {"macro_auc": (0.0, 0.0), "micro_auc": (0.0, 0.0)}
    low, high = paired_bootstrap_intervals(Y, a, b, n_boot=200)["macro_auc"]
    difference = evaluate(Y, a).summary["macro_auc"] - evaluate(Y, b).summary["macro_auc"]
    assert 0 < low < difference < high
    alone_a = bootstrap_intervals(Y, a, metrics=("macro_auc",), n_boot=200)["macro_auc"]
    alone_b = bootstrap_intervals(Y, b, metrics=("macro_auc",), n_boot=200)["macro_auc"]
    assert high - low < 0.5 * ((alone_a[1] - alone_a[0]) + (alone_b[1] - alone_b[0]))
    # the same draws as each model's own replicates: the difference of the two, resample by resample
    own = paired_bootstrap_intervals(Y, a, b, metrics=("micro_auc",), n_boot=50, seed=1)["micro_auc"]
    ra = bootstrap_replicates(Y, a, metrics=("micro_auc",), n_boot=50, seed=1)["micro_auc"]
    rb = bootstrap_replicates(Y, b, metrics=("micro_auc",), n_boot=50, seed=1)["micro_auc"]
    assert own == pytest.approx(tuple(np.percentile(ra - rb, [2.5, 97.5])), abs=1e-12)


def test_bootstrap_checks_its_arguments(small):
    Y, scores = small
    with pytest.raises(MlnbError, match="bootstrap metrics \\['weighted_f1'\\] unknown"):
        bootstrap_intervals(Y, scores, metrics=("macro_auc", "weighted_f1"))
    with pytest.raises(MlnbError, match="level must be in \\(0, 1\\), got 95"):
        bootstrap_intervals(Y, scores, level=95)
    with pytest.raises(MlnbError, match="n_boot must be a positive integer"):
        bootstrap_intervals(Y, scores, n_boot=0)
    with pytest.raises(MlnbError, match="decisions must hold only 0/1"):
        bootstrap_intervals(Y, scores, decisions=scores)


def _delong_variance_naive(y, s):
    """var(AUC) = var(V10)/m + var(V01)/n straight from ψ over all positive × negative pairs."""
    x, w = s[y == 1], s[y == 0]
    psi = (x[:, None] > w[None, :]) + 0.5 * (x[:, None] == w[None, :])
    return psi.mean(), np.var(psi.mean(axis=1), ddof=1) / x.size + np.var(psi.mean(axis=0), ddof=1) / w.size


def test_auc_interval_by_hand():
    # 4 positives (2, 1, 3, 0) and 5 negatives (1, -1, 0, 1, -2): V10 = (1, .8, 1, .5), V01 = (.625, 1,
    # .875, .625, 1), AUC = .825, var = .1675/3/4 + .14375/4/5 = 203/9600
    y = np.array([1, 0, 0, 1, 0, 1, 0, 1, 0])
    a = np.array([2.0, 1.0, -1.0, 1.0, 0.0, 3.0, 1.0, 0.0, -2.0])
    half = norm.ppf(0.975) * np.sqrt(203 / 9600)
    np.testing.assert_allclose(auc_confidence_intervals(y, a), [[0.825 - half, 1.0]], atol=1e-12)  # clipped
    half = norm.ppf(0.75) * np.sqrt(203 / 9600)
    np.testing.assert_allclose(auc_confidence_intervals(y, a, level=0.5), [[0.825 - half, 0.825 + half]],
                               atol=1e-12)


def test_auc_intervals_equal_the_naive_delong_variance():
    rng = np.random.default_rng(3)
    Y = rng.random((400, 4)) < [0.3, 0.1, 0.0, 0.0]
    Y[7, 2] = True  # a single positive
    scores = np.round(rng.normal(size=Y.shape) + Y, 1)
    got = auc_confidence_intervals(sp.csc_matrix(Y), scores, level=0.9)
    z = norm.ppf(0.95)
    for k in (0, 1):
        auc, variance = _delong_variance_naive(Y[:, k], scores[:, k])
        assert auc == pytest.approx(roc_auc_score(Y[:, k], scores[:, k]), abs=1e-12)
        np.testing.assert_allclose(got[k], np.clip([auc - z * np.sqrt(variance), auc + z * np.sqrt(variance)], 0, 1),
                                   atol=1e-12)
    assert np.isnan(got[2]).all()  # a single positive: S10 undefined
    assert np.isnan(got[3]).all()  # no positive


def test_micro_auc_pieces_cut_at_ties():
    # most pooled scores tied at the top: the pooled order is cut into pieces only at tie starts
    rng = np.random.default_rng(0)
    Y = rng.random((50, 8)) < 0.3
    scores = np.where(rng.random(Y.shape) < 0.8, 5.0, rng.normal(size=Y.shape))
    parts = _replicate_parts(Y, scores, None, 0.5, ("micro_auc", "macro_auc"), 4, 1, None, HAVE_NUMBA)
    estimate, deviations = parts.macro["macro_auc"]
    for b, (idx, weights) in enumerate(_stratified_weights(Y, 4, 1)):
        assert parts.micro["micro_auc"][b] == pytest.approx(roc_auc_score(Y[idx].ravel(), scores[idx].ravel()),
                                                            abs=1e-12)
        for k in range(8):
            assert estimate[k] + deviations[k, b] == pytest.approx(
                roc_auc_score(Y[:, k], scores[:, k], sample_weight=weights[:, k]), abs=1e-12)


def _plan_arrays(Y, scores, pooled, with_micro, use_numba):
    from mlnb.metrics.uncertainty import _AucPlan

    Yc = sp.csc_matrix(Y, dtype=np.float64)
    Yc.sort_indices()
    plan = _AucPlan(Yc, scores, np.asarray(pooled), with_micro, use_numba=use_numba)
    return plan.doc, plan.label, plan.new_group, plan.starts, plan.n_micro


@pytest.mark.skipif(not HAVE_NUMBA, reason="numba is not installed")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", ["ties", "distinct", "special", "excluded", "no_micro", "constant"])
def test_compiled_plan_is_the_stable_argsort_plan(dtype, case):
    # the radix sorts must give exactly the numpy path's (np.argsort kind="stable") arrays
    rng = np.random.default_rng(5)
    # 5000 × 4 pairs: the pooled sort runs in slices
    n, K = (5000, 4) if case in ("distinct", "constant") else (700, 9)
    Y = rng.random((n, K)) < np.linspace(0.0, 0.6, K)  # category 0: no positive
    scores = rng.normal(size=Y.shape) + Y
    if case != "distinct":
        scores = np.round(scores, 1)
    if case == "special":  # −0.0 ties +0.0; infinities; one constant column
        scores[rng.random(Y.shape) < 0.2] = 0.0
        scores[rng.random(Y.shape) < 0.2] = -0.0
        scores[::7, 1], scores[::5, 2], scores[:, 3] = np.inf, -np.inf, 2.5
    if case == "constant":  # every key the same: no radix pass moves any, the order is the identity
        scores[:] = -1.5
    pooled = np.ones(K, dtype=bool)
    if case == "excluded":
        pooled[[0, 4]] = False
    scores = scores.astype(dtype)
    expected = _plan_arrays(Y, scores, pooled, case != "no_micro", use_numba=False)
    got = _plan_arrays(Y, scores, pooled, case != "no_micro", use_numba=True)
    for name, e, g in zip(("doc", "label", "new_group", "starts", "n_micro"), expected, got):
        assert np.asarray(g).dtype == np.asarray(e).dtype, name
        np.testing.assert_array_equal(g, e, err_msg=name)
    order = np.argsort(scores[:, 2], kind="stable")  # an oracle written out: category 2's segment
    np.testing.assert_array_equal(got[0][2 * n:3 * n], order)
    np.testing.assert_array_equal(got[1][2 * n:3 * n], Y[order, 2])


@pytest.mark.slow
@pytest.mark.skipif(not HAVE_NUMBA, reason="numba is not installed")
def test_bootstrap_plan_same_for_one_and_two_numba_threads(output_with_numba_threads):
    script = textwrap.dedent("""
        import hashlib, numba, numpy as np, scipy.sparse as sp
        from mlnb.metrics.uncertainty import BOOTSTRAP_METRICS, _AucPlan, bootstrap_replicates
        rng = np.random.default_rng(4)
        Y = rng.random((4000, 11)) < np.linspace(0.01, 0.5, 11)
        scores = np.round(rng.normal(size=Y.shape) + Y, 2).astype(np.float32)
        Yc = sp.csc_matrix(Y, dtype=np.float64)
        plan = _AucPlan(Yc, scores, np.ones(11, dtype=bool), True)
        values = bootstrap_replicates(Y, scores, metrics=BOOTSTRAP_METRICS, n_boot=5, seed=2)
        blob = b"".join(a.tobytes() for a in (plan.doc, plan.label, plan.new_group, plan.starts))
        blob += b"".join(values[m].tobytes() for m in BOOTSTRAP_METRICS)
        print(numba.get_num_threads(), hashlib.sha256(blob).hexdigest())
    """)

    one, two = output_with_numba_threads(script, 1), output_with_numba_threads(script, 2)
    assert (one[0], two[0]) == ("1", "2")
    assert one[1] == two[1]


@pytest.mark.parametrize("use_numba", [True, False] if HAVE_NUMBA else [False])
@pytest.mark.parametrize("top, dtype", [(255, np.uint8), (256, np.uint16), (65_535, np.uint16), (65_536, np.float64)])
def test_narrow_resample_weights_give_the_same_aucs(use_numba, top, dtype):
    # the weights are whole numbers: in uint8 or uint16 the AUC sums must be exactly those of float64
    from mlnb.metrics.uncertainty import _AucPlan, _compact_counts

    rng = np.random.default_rng(6)
    n, K, B = 300, 6, 9
    Y = rng.random((n, K)) < np.linspace(0.1, 0.6, K)
    scores = np.round(rng.normal(size=Y.shape) + Y, 1)
    W = rng.integers(0, 4, size=(n, B)).astype(np.float64)
    W[rng.integers(0, n), rng.integers(0, B)] = top
    compact = _compact_counts(W)
    assert compact.dtype == dtype and np.array_equal(compact, W)
    plan = _AucPlan(sp.csc_matrix(Y, dtype=np.float64), scores, np.ones(K, dtype=bool), True, use_numba)
    for expected, got in zip(plan.aucs(W, use_numba), plan.aucs(compact, use_numba)):
        np.testing.assert_array_equal(got, expected)


@pytest.mark.skipif(not HAVE_NUMBA, reason="numba is not installed")
@pytest.mark.parametrize("rounding", [None, 1, 0], ids=["all singletons", "mixed", "mostly tied"])
def test_the_kernels_sums_equal_numpys_exactly(rounding):
    # the kernel adds an item alone in its tie group straight into the sums and sums larger groups
    # first; with whole-number weights every sum is exact, so both must equal numpy's group sums
    from mlnb.metrics.uncertainty import _AucPlan, _segment_sums, _segment_sums_numpy

    rng = np.random.default_rng(8)
    n, K, B = 400, 5, 7
    Y = rng.random((n, K)) < np.linspace(0.05, 0.5, K)
    scores = rng.normal(size=Y.shape) + Y
    if rounding is not None:
        scores = np.round(scores, rounding)
    plan = _AucPlan(sp.csc_matrix(Y, dtype=np.float64), scores, np.ones(K, dtype=bool), True, True)
    singletons = plan.new_group & np.r_[plan.new_group[1:], True]
    assert singletons.any() and (rounding is None or not singletons.all())
    W = rng.integers(0, 5, size=(n, B)).astype(np.uint8)
    args = (plan.doc, plan.label, plan.new_group, plan.starts, W)
    # one thread given as the study gives it (an int, not the default left out: numba compiles each apart)
    np.testing.assert_array_equal(_segment_sums(*args, 1), _segment_sums_numpy(*args))


@pytest.mark.skipif(not HAVE_NUMBA, reason="numba is not installed")
@pytest.mark.parametrize("seed, n, B", [(0, 1, 3), (5, 97, 4), (9, 2000, 11)])
def test_compiled_draws_are_numpys_draws(seed, n, B):
    # the kernel's PCG64 streams, one per resample (b·P draws on), must give the numbers that
    # rng.random(P) gives resample after resample, and leave the generator where it would be
    from mlnb.metrics.uncertainty import _compact_counts, _stacked_counts_compiled

    rng = np.random.default_rng(seed)
    m = rng.integers(1, 30, size=7)  # positives per category, P = Σ m
    P, indptr = int(m.sum()), np.r_[0, np.cumsum(m)]
    # int32 starts, as a study's label matrix's index pointers give them (the type the kernel is compiled for)
    category, first_positive = np.repeat(np.arange(m.size), m), np.repeat(indptr[:-1], m).astype(np.int32)
    idx = np.stack([rng.integers(0, n, size=n) for _ in range(B)])
    draws = np.random.default_rng([seed, 1])
    W, V = np.empty((n, B)), np.empty((P, B))
    for b in range(B):
        W[:, b] = np.bincount(idx[b], minlength=n)
        V[:, b] = np.bincount(first_positive + np.floor(draws.random(P) * m[category]).astype(np.int64), minlength=P)
    expected = _compact_counts(np.vstack([W, V]))
    compiled = np.random.default_rng([seed, 1])
    got = _stacked_counts_compiled(idx, compiled.bit_generator, first_positive, m[category].astype(np.float64))
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)
    assert compiled.random() == draws.random()
    # the counts of a larger block before, left in the scratch rows this block counts in: the same block
    scratch = np.full((B + 2, n + P), 7, dtype=np.int32)
    again = _stacked_counts_compiled(idx, np.random.default_rng([seed, 1]).bit_generator, first_positive,
                                     m[category].astype(np.float64), scratch)
    assert again.dtype == expected.dtype
    np.testing.assert_array_equal(again, expected)


@pytest.mark.skipif(not HAVE_NUMBA, reason="numba is not installed")
@pytest.mark.parametrize("decided", [False, True], ids=["threshold", "decisions"])
def test_compiled_replicates_equal_numpys_bit_for_bit(decided, monkeypatch):
    # the draws, the weighted counts and the AUC sums: the compiled path gives numpy's replicates;
    # blocks of 5 resamples of 701 documents: a block's last draw leaves half a 64-bit output over
    import mlnb.metrics.uncertainty as uncertainty

    monkeypatch.setattr(uncertainty, "MAX_RESAMPLES_PER_BLOCK", 5)
    rng = np.random.default_rng(12)
    Y = rng.random((701, 9)) < np.r_[np.linspace(0.02, 0.6, 8), 0.0]
    Y[rng.integers(0, 701), 8] = True  # a category with one positive
    scores = np.round(rng.normal(size=Y.shape) + Y, 1)
    decisions = sp.csr_matrix(rng.random(Y.shape) < 0.2) if decided else None
    run = lambda use_numba: bootstrap_replicates(Y, scores, decisions, metrics=BOOTSTRAP_METRICS, n_boot=70,
                                                 seed=3, exclude=[2], use_numba=use_numba)
    compiled, reference = run(True), run(False)
    for name in BOOTSTRAP_METRICS:
        assert compiled[name].tobytes() == reference[name].tobytes(), name


@pytest.mark.skipif(not HAVE_NUMBA, reason="numba is not installed")
def test_compiled_plan_reads_the_same_weight_rows():
    # each item's row of the stacked weights [w; v]: the kernel's, per category, equal numpy's searchsorted
    from mlnb.metrics.uncertainty import _AucPlan

    rng = np.random.default_rng(13)
    Y = rng.random((500, 7)) < np.linspace(0.01, 0.7, 7)
    scores = np.round(rng.normal(size=Y.shape) + Y, 1)
    Yc = sp.csc_matrix(Y, dtype=np.float64)
    Yc.sort_indices()
    plans = [_AucPlan(Yc, scores, np.ones(7, dtype=bool), True, use_numba) for use_numba in (False, True)]
    np.testing.assert_array_equal(plans[1].rows, plans[0].rows)
    assert plans[1].rows.dtype == plans[0].rows.dtype


@pytest.mark.skipif(not HAVE_NUMBA, reason="numba is not installed")
def test_segment_sums_same_for_any_number_of_claiming_threads():
    from mlnb.metrics.uncertainty import _AucPlan, _segment_sums

    rng = np.random.default_rng(14)
    Y = rng.random((300, 6)) < np.linspace(0.05, 0.5, 6)
    scores = np.round(rng.normal(size=Y.shape) + Y, 1)
    plan = _AucPlan(sp.csc_matrix(Y, dtype=np.float64), scores, np.ones(6, dtype=bool), True, True)
    W = rng.integers(0, 4, size=(300, 5)).astype(np.uint8)
    args = (plan.doc, plan.label, plan.new_group, plan.starts, W)
    one = _segment_sums(*args, 1)
    for threads in (2, 3, 64):
        assert _segment_sums(*args, threads).tobytes() == one.tobytes()


@pytest.mark.skipif(not HAVE_NUMBA, reason="numba is not installed")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("threshold", [0.5, 0.3])
def test_compiled_threshold_decisions_are_numpys(dtype, threshold):
    # [scores ≥ logit(threshold)], compared in the scores' type as numpy compares with a Python float
    from mlnb.metrics.classification import logit
    from mlnb.metrics.uncertainty import _decision_matrix

    rng = np.random.default_rng(15)
    scores = np.round(rng.normal(size=(9000, 11)), 1).astype(dtype)
    cut = dtype(logit(threshold))
    scores[3, 4], scores[8, 1] = cut, np.nextafter(cut, dtype(-10))  # at the cut and one step below
    got = _decision_matrix(scores, None, threshold)
    expected = sp.csr_matrix(scores >= logit(threshold), dtype=np.float64)
    for name in ("indptr", "indices", "data"):
        np.testing.assert_array_equal(getattr(got, name), getattr(expected, name), err_msg=name)
    assert got.shape == expected.shape and got.data.dtype == np.float64


@pytest.mark.parametrize("density", [0.001, 0.05, 0.5, 1.0])
def test_group_starts_at_or_after_are_the_searched_starts(density):
    # the pooled pairs' pieces start where the listed tie-group starts and a search put them
    from mlnb.metrics.uncertainty import _group_starts_at_or_after

    rng = np.random.default_rng(int(density * 1000))
    for _ in range(60):
        size, K = int(rng.integers(1, 3000)), int(rng.integers(1, 120))
        new_group = rng.random(size) < density
        new_group[0] = True  # the first item always starts a group
        cuts = np.linspace(0, size, K + 1)[:-1]
        starts = np.flatnonzero(new_group)
        expected = starts[np.minimum(np.searchsorted(starts, cuts), starts.size - 1)]
        np.testing.assert_array_equal(_group_starts_at_or_after(new_group, cuts), expected)


@pytest.mark.slow
@pytest.mark.skipif(not HAVE_NUMBA, reason="numba is not installed")
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("piece_outputs", [3, 1 << 15])
@pytest.mark.parametrize("n, size", [(2, (3, 7)), (3, (1,)), (7, (1, 1)), (1000, (5, 999)), (156_403, (2, 156_403)),
                                     (2 ** 31 + 12_345, (4, 1001)), (3 * 2 ** 30, (3, 5001)), (0xFFFFFFFE, (2, 3333))])
def test_bounded_draws_are_numpys_integers(monkeypatch, threads, piece_outputs, n, size):
    # the documents drawn on every thread: numpy's numbers, and the generator left where numpy leaves it
    # (the 32-bit half numpy keeps included); 3 · 2^30 rejects a quarter of the numbers (Lemire's method)
    import numba

    from mlnb.metrics import uncertainty

    monkeypatch.setattr(uncertainty, "DRAW_PIECE_OUTPUTS", piece_outputs)
    previous = numba.get_num_threads()
    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    try:
        for seed in (0, 1, 99):
            numpys, ours = np.random.default_rng(seed), np.random.default_rng(seed)
            for _ in range(3):  # a half kept by one call is read first by the next
                expected = numpys.integers(0, n, size=size)
                got = uncertainty._bounded_draws(ours, n, size)
                assert got.dtype == expected.dtype and got.shape == expected.shape
                np.testing.assert_array_equal(got, expected)
                assert ours.bit_generator.state == numpys.bit_generator.state
            assert ours.integers(0, 2 ** 62) == numpys.integers(0, 2 ** 62)
    finally:
        numba.set_num_threads(previous)


def test_bounded_draws_leave_other_generators_to_numpy():
    from mlnb.metrics.uncertainty import _bounded_draws

    for make, n in ((lambda: np.random.Generator(np.random.MT19937(4)), 100), (lambda: np.random.default_rng(4), 1),
                    (lambda: np.random.default_rng(4), 2 ** 40)):
        expected, got = make().integers(0, n, size=(3, 50)), _bounded_draws(make(), n, (3, 50))
        np.testing.assert_array_equal(got, expected)
