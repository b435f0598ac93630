"""Calibration against scikit-learn oracles and hand-worked optima; fold, monotonicity, extremes."""

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.special import logit
from sklearn.calibration import _sigmoid_calibration
from sklearn.isotonic import IsotonicRegression
from sklearn.linear_model import LogisticRegression

from mlnb.calibration import fit_calibration
from mlnb.errors import MlnbError


@pytest.fixture(scope="module")
def validation():
    """1,500 documents, 6 categories; prevalences 50% .. 1%; the last on an NB-like scale (×80)."""
    rng = np.random.default_rng(5)
    Y = rng.random((1500, 6)) < np.array([0.5, 0.2, 0.05, 0.01, 0.3, 0.1])
    S = rng.normal(size=(1500, 6)) * 2.0 + 3.0 * Y - 2.0
    S[:, 5] *= 80.0
    return S.astype(np.float32), Y


def test_platt_equals_sklearn_sigmoid_calibration(validation):
    S, Y = validation
    cal = fit_calibration("platt", S, sp.csr_matrix(Y))
    assert cal.fitted.all() and cal.converged.all()
    for k in range(S.shape[1]):
        A, B = _sigmoid_calibration(S[:, k].astype(np.float64), Y[:, k])  # p = 1/(1 + exp(A·s + B))
        assert cal.slope[k] == pytest.approx(-A, rel=1e-4)
        assert cal.intercept[k] == pytest.approx(-B, rel=1e-4, abs=1e-4)


def test_platt_without_smoothing_equals_unpenalised_logistic_regression(validation):
    S, Y = validation
    cal = fit_calibration("platt", S, Y, target_smoothing=False)
    for k in range(S.shape[1]):
        oracle = LogisticRegression(C=np.inf, tol=1e-12, max_iter=10_000)
        oracle.fit(S[:, k:k + 1].astype(np.float64), Y[:, k])
        assert cal.slope[k] == pytest.approx(oracle.coef_[0, 0], rel=1e-4)
        assert cal.intercept[k] == pytest.approx(oracle.intercept_[0], rel=1e-4, abs=1e-4)


def test_platt_two_score_levels_by_hand():
    # s = −1 for four documents (1 positive), s = +1 for four (3 positives). With two score
    # levels the optimum matches each level's mean target exactly: σ(±a + c) = mean t there.
    s = np.array([-1.0] * 4 + [1.0] * 4)[:, None]
    y = np.array([1, 0, 0, 0, 1, 1, 1, 0])[:, None]
    # without smoothing: σ(−a + c) = 1/4, σ(a + c) = 3/4  ->  c = 0, a = logit(3/4) = ln 3
    plain = fit_calibration("platt", s, y, target_smoothing=False)
    assert plain.slope[0] == pytest.approx(np.log(3.0), abs=1e-9)
    assert plain.intercept[0] == pytest.approx(0.0, abs=1e-9)
    # Platt's targets, N₊ = N₋ = 4: t₊ = 5/6, t₋ = 1/6. Level −1: (5/6 + 3·1/6)/4 = 1/3;
    # level +1: (3·5/6 + 1/6)/4 = 2/3  ->  c = 0, a = logit(2/3) = ln 2
    smoothed = fit_calibration("platt", s, y)
    assert smoothed.slope[0] == pytest.approx(np.log(2.0), abs=1e-9)
    assert smoothed.intercept[0] == pytest.approx(0.0, abs=1e-9)
    np.testing.assert_allclose(smoothed.transform(np.array([[1.0]])), [[np.log(2.0)]], rtol=1e-6)


def test_platt_constant_scores_keep_slope_one_and_fit_the_base_rate():
    # all scores 2; one positive in four. No slope to fit: a = 1, and σ(2 + c) = mean target
    # = (2/3 + 3·1/5)/4 = 19/60  (t₊ = (1+1)/(1+2), t₋ = 1/(3+2))  ->  c = logit(19/60) − 2
    cal = fit_calibration("platt", np.full((4, 1), 2.0), np.array([[1], [0], [0], [0]]))
    assert cal.slope[0] == 1.0
    assert cal.intercept[0] == pytest.approx(logit(19 / 60) - 2.0, abs=1e-9)


def test_categories_without_positives_or_negatives_keep_their_scores():
    S = np.array([[-3.0, 1.0, 0.5], [0.0, 2.0, -0.5], [4.0, 3.0, 1.5]])
    Y = np.array([[0, 1, 1], [0, 1, 0], [0, 1, 1]])  # c0: no positive, c1: no negative
    platt = fit_calibration("platt", S, Y)
    np.testing.assert_array_equal(platt.fitted, [False, False, True])
    np.testing.assert_array_equal(platt.slope[:2], [1.0, 1.0])
    np.testing.assert_array_equal(platt.intercept[:2], [0.0, 0.0])
    isotonic = fit_calibration("isotonic", S, Y)
    np.testing.assert_array_equal(isotonic.fitted, [False, False, True])
    for cal in (platt, isotonic):
        np.testing.assert_array_equal(cal.transform(S)[:, :2], S[:, :2].astype(np.float32))


def test_isotonic_equals_sklearn(validation):
    S, Y = validation
    eps = 1e-3
    cal = fit_calibration("isotonic", S, Y, eps=eps)
    test = np.random.default_rng(9).normal(size=(400, 6)).astype(np.float32) * 4.0
    test[:3] = [[-1e4] * 6, [1e4] * 6, [0] * 6]  # beyond the validation range: clipped
    out = cal.transform(test)
    for k in range(S.shape[1]):
        oracle = IsotonicRegression(y_min=eps, y_max=1 - eps, out_of_bounds="clip")
        oracle.fit(S[:, k].astype(np.float64), Y[:, k])
        expected = logit(np.clip(oracle.predict(test[:, k].astype(np.float64)), eps, 1 - eps))
        np.testing.assert_allclose(out[:, k], expected, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(cal.predict_proba(test)[:, k], oracle.predict(test[:, k].astype(np.float64)))


@pytest.mark.parametrize("method", ["none", "platt", "isotonic"])
def test_monotone_and_finite_for_extreme_scores(validation, method):
    S, Y = validation
    cal = fit_calibration(method, S, Y)
    grid = np.concatenate([[-np.inf, -1e4], np.linspace(-500, 500, 2001), [1e4, np.inf]])
    scores = np.repeat(grid[:, None], S.shape[1], axis=1).astype(np.float32)
    out = cal.transform(scores)
    assert out.dtype == np.float32 and np.isfinite(out).all()
    assert (np.diff(out, axis=0) >= 0).all()  # every fitted slope here is positive


def test_platt_fold_equals_transform_of_linear_scores():
    rng = np.random.default_rng(2)
    X = sp.random(200, 30, density=0.2, format="csr", random_state=3, dtype=np.float32)
    W = rng.normal(size=(30, 4)).astype(np.float32)
    b = rng.normal(size=4).astype(np.float32)
    Y = rng.random((200, 4)) < 0.3
    scores = X @ W + b
    cal = fit_calibration("platt", scores, Y)
    W_folded, b_folded = cal.fold(W, b)
    assert W_folded.dtype == np.float32 and b_folded.dtype == np.float32
    np.testing.assert_allclose(X @ W_folded + b_folded, cal.transform(scores), rtol=1e-5, atol=1e-5)
    W_sparse, _ = cal.fold(sp.csr_matrix(W), b)
    np.testing.assert_allclose(X @ W_sparse.toarray() + b_folded, cal.transform(scores), rtol=1e-5, atol=1e-5)
    with pytest.raises(MlnbError, match="isotonic calibration is not linear"):
        fit_calibration("isotonic", scores, Y).fold(W, b)


def test_fitting_never_reads_the_test_part(validation):
    S, Y = validation
    cal = fit_calibration("platt", S, Y)
    before = cal.slope.copy(), cal.intercept.copy()
    cal.transform(np.full((5, 6), 7.0))
    again = fit_calibration("platt", S, Y)
    np.testing.assert_array_equal(cal.slope, before[0])
    np.testing.assert_array_equal(again.slope, before[0])
    np.testing.assert_array_equal(again.intercept, before[1])
    test = np.zeros((4, 6))
    test[2, 3] = np.nan
    for method in ("none", "platt", "isotonic"):
        with pytest.raises(MlnbError, match=r"scores: NaN score for document 2, category 3 \(1 NaN in all\)"):
            fit_calibration(method, S, Y).transform(test)


def test_to_frame(validation):
    S, Y = validation
    names = [f"c{k}" for k in range(6)]
    frame = fit_calibration("platt", S, Y).to_frame(names)
    assert list(frame["name"]) == names
    assert {"slope", "intercept", "fitted", "validation_positives", "converged"} <= set(frame.columns)
    assert list(fit_calibration("isotonic", S, Y).to_frame(names)["method"]) == ["isotonic"] * 6
    assert len(fit_calibration("none").to_frame(names)) == 6


def test_bad_inputs_name_the_parameter(validation):
    S, Y = validation
    with pytest.raises(MlnbError, match="method: unknown calibration 'beta'"):
        fit_calibration("beta", S, Y)
    with pytest.raises(MlnbError, match=r"Y_val: shape \(1500, 5\) differs"):
        fit_calibration("platt", S, Y[:, :5])
    with pytest.raises(MlnbError, match="Y_val: required"):
        fit_calibration("isotonic", S, None)
    infinite = S.copy()
    infinite[0, 0] = np.inf
    with pytest.raises(MlnbError, match="scores_val: contains ±inf"):
        fit_calibration("platt", infinite, Y)
    with pytest.raises(MlnbError, match="eps: must lie strictly between 0 and 0.5"):
        fit_calibration("isotonic", S, Y, eps=0.0)
    with pytest.raises(MlnbError, match="scores: 5 columns, but the calibration was fitted on 6"):
        fit_calibration("platt", S, Y).transform(S[:, :5])
