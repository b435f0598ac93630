r"""Per-category calibration of scores, fitted on a validation part.

Scores S (n × K) are per-category log-odds, or any score where higher means more likely. A
calibration maps each category's scores to log-odds that fit the validation labels, one
monotone map per category, and is then applied to test scores (which it never reads while
fitting). Validation documents are carved from the training part by the caller.

``none``      z_ik = s_ik                                                      (identity)

``platt``     p_ik = σ(a_k·s_ik + c_k),   z_ik = a_k·s_ik + c_k                   (Platt 1999)

              (a_k, c_k) = argmin Σ_i −t_ik·log p_ik − (1 − t_ik)·log(1 − p_ik)
                         = argmin Σ_i softplus(z_ik) − t_ik·z_ik

              t_ik = (N₊ + 1)/(N₊ + 2) for a positive, 1/(N₋ + 2) for a negative, with N₊, N₋ the
              category's validation positives and negatives: Platt's targets for out-of-sample
              data (Platt 1999, §2.2, "a Bayesian prior"). ``target_smoothing=False`` uses
              t_ik = y_ik: plain maximum likelihood, a one-feature logistic regression on s.
              Platt writes p = 1/(1 + exp(A·f + B)): a = −A, c = −B.

              A linear model absorbs it: a·(X·W + b) + c = X·(W·a) + (b·a + c)   (``fold``).

``isotonic``  p_ik = m_k(s_ik), m_k the non-decreasing step-and-ramp function fitted by pool
              adjacent violators to (s, y), bounded to [ε, 1 − ε] and constant beyond the
              validation range (scikit-learn's ``IsotonicRegression(y_min=ε, y_max=1−ε,
              out_of_bounds="clip")``; Zadrozny & Elkan 2002),
              z_ik = logit(clip(p_ik, ε, 1 − ε)).
              Isotonic output has ties (flat steps): every document on one step gets the same
              log-odds, so rank metrics (AUC, ROC, lift, P@k) must be computed from the
              uncalibrated scores; the caller does that.

Categories without a validation positive or without a validation negative: there is nothing to
calibrate against. Platt's smoothed targets would then give a = 0 and c = ∓log(N + 1), the same
probability for every document (and without smoothing no finite optimum exists); isotonic
would give the constant ε. Either throws away the one thing we still have, the model's own
ranking and scale, so such a category keeps its scores unchanged (Platt a = 1, c = 0; isotonic
the identity) and is flagged ``fitted = False`` in ``to_frame``.

Platt's optimum is found by Newton's method with a backtracking (Armijo) line search, as in
Lin, Lin & Weng (2007, "A note on Platt's probabilistic outputs for support vector machines"),
but for a block of categories at once: each category's 2 × 2 system is solved in closed form.
It works on standardised scores u = (s − μ_k)/σ_k (better conditioned; NB log-odds reach
hundreds) and maps back: a = a′/σ, c = c′ − a′·μ/σ. A category whose validation scores are all
equal has no slope to fit: there a stays 1 (ranking kept) and c is fitted. Without smoothing, a
category whose validation scores separate positives from negatives has no finite optimum (the
loss falls towards 0 as a grows): Newton stops once the loss no longer improves by more than the
tolerance, leaving a steep but finite slope. Platt's targets (the default) avoid this.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pandas as pd
import scipy.sparse as sp
from scipy.special import expit, logit

from mlnb.data.validate import check_labels, check_scores
from mlnb.errors import MlnbError

METHODS = ("none", "platt", "isotonic")
DEFAULT_EPS = 1e-6  # isotonic probabilities kept in [ε, 1 − ε]: log-odds within ±13.8
NEWTON_MAX_ITER = 100  # a cap, far above the steps Newton's quadratic convergence needs
NEWTON_TOL = 1e-12  # stop when the Newton decrement / 2 ≤ tol · n (loss per doc within 1e-12)
NEWTON_RIDGE = 1e-12  # added to the Hessian diagonal (Platt's σ): keeps it invertible
ARMIJO = 1e-4  # sufficient decrease of the line search
MIN_STEP = 1e-10  # a line search that halves below this gives up (Platt's minstep)
BLOCK_ELEMENTS = 1 << 20  # documents × categories per Newton block: ~70 MB of temporaries
TRANSFORM_ROWS = 1 << 15  # rows per block of transform (float64 temporaries stay small)
_FLOAT32_MAX = float(np.finfo(np.float32).max)


# --- validation labels by blocks of categories, shared with mlnb.decision ------------------

def validation_labels(Y_val, shape: tuple) -> sp.csc_matrix:
    """Y_val checked (``mlnb.data.validate.check_labels``) against the scores' ``shape``, as CSC int8 0/1:
    every consumer here reads it a block of categories at a time."""
    return check_labels(Y_val, "Y_val", shape=shape).tocsc()


def label_block(Y: sp.csc_matrix, start: int, stop: int) -> np.ndarray:
    """Columns start..stop of Y as a dense (b, n) bool array: one row per category."""
    return Y[:, start:stop].toarray().T.astype(bool)


def category_blocks(n: int, K: int, elements: int):
    """(start, stop) of consecutive category blocks of about ``elements`` documents × categories."""
    width = max(1, elements // max(n, 1))
    return [(start, min(K, start + width)) for start in range(0, K, width)]


def _names(category_names, K: int | None) -> list[str]:
    names = [str(c) for c in category_names]
    if K is not None and len(names) != K:
        raise MlnbError(f"category_names: {len(names)} names for {K} categories")
    return names


def _check_width(S: np.ndarray, K: int) -> None:
    if S.shape[1] != K:
        raise MlnbError(f"scores: {S.shape[1]} columns, but the calibration was fitted on {K} categories")


def _finite_validation(S: np.ndarray) -> np.ndarray:
    if not np.isfinite(S).all():
        raise MlnbError("scores_val: contains ±inf; calibration is fitted on finite validation scores")
    return S


def _float32_log_odds(z: np.ndarray) -> np.ndarray:
    """float64 log-odds -> float32, finite (±float32 max at worst)."""
    return np.clip(z, -_FLOAT32_MAX, _FLOAT32_MAX).astype(np.float32)


# --- the calibrations ---------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class IdentityCalibration:
    """``method = "none"``: scores pass through unchanged (as float32)."""

    method: ClassVar[str] = "none"
    n_categories: int | None = None  # K, when known

    def transform(self, scores) -> np.ndarray:
        S = check_scores(scores)
        if self.n_categories is not None:
            _check_width(S, self.n_categories)
        return _float32_log_odds(S)

    def fold(self, W, b):
        """(W, b) unchanged: X·W + b is already the calibrated log-odds."""
        return W, np.asarray(b)

    def to_frame(self, category_names) -> pd.DataFrame:
        names = _names(category_names, self.n_categories)
        return pd.DataFrame({"category": np.arange(len(names)), "name": names, "method": self.method})


@dataclass(frozen=True, eq=False)
class PlattCalibration:
    """z = a·s + c per category (see the module docstring for the objective and targets)."""

    method: ClassVar[str] = "platt"
    slope: np.ndarray  # (K,) a_k
    intercept: np.ndarray  # (K,) c_k
    fitted: np.ndarray  # (K,) bool: False = no validation positive or negative, kept a=1, c=0
    n_positives: np.ndarray  # (K,) N₊ on the validation part
    n_negatives: np.ndarray  # (K,) N₋
    iterations: np.ndarray  # (K,) Newton steps taken
    converged: np.ndarray  # (K,) bool: Newton met its tolerance (True where nothing was solved)
    target_smoothing: bool = True

    @property
    def n_categories(self) -> int:
        return self.slope.size

    @classmethod
    def fit(cls, scores_val, Y_val, *, target_smoothing: bool = True) -> PlattCalibration:
        """Fit (a_k, c_k) on validation scores (n × K) and labels (n × K, 0/1)."""
        S = _finite_validation(check_scores(scores_val, "scores_val"))
        n, K = S.shape
        Y = validation_labels(Y_val, S.shape)
        positives = np.diff(Y.indptr).astype(np.int64)  # (K,) N₊
        negatives = n - positives  # (K,) N₋
        fitted = (positives > 0) & (negatives > 0)
        slope, intercept = np.ones(K), np.zeros(K)  # the unfitted keep their own scores
        iterations, converged = np.zeros(K, dtype=np.int64), np.ones(K, dtype=bool)
        for start, stop in category_blocks(n, K, BLOCK_ELEMENTS):
            block = start + np.flatnonzero(fitted[start:stop])
            if block.size == 0:
                continue
            s = S[:, block].T.astype(np.float64)  # (b, n)
            y = Y[:, block].toarray().T.astype(bool)  # (b, n)
            mu, sigma = s.mean(axis=1), s.std(axis=1)  # (b,)
            flat = sigma == 0  # one score for every document: no slope to fit
            sigma = np.where(flat, 1.0, sigma)
            u = (s - mu[:, None]) / sigma[:, None]  # (b, n) standardised scores
            n_pos, n_neg = positives[block], negatives[block]
            if target_smoothing:
                t = np.where(y, ((n_pos + 1.0) / (n_pos + 2.0))[:, None], (1.0 / (n_neg + 2.0))[:, None])
            else:
                t = y.astype(np.float64)  # (b, n)
            a0 = np.where(flat, 1.0, 0.0)  # Platt's start: A = 0, B = log((N₋ + 1)/(N₊ + 1))
            c0 = np.log((n_pos + 1.0) / (n_neg + 1.0))
            a_std, c_std, steps, done = _newton(u, t, a0, c0)
            slope[block] = a_std / sigma  # a = a′/σ
            intercept[block] = c_std - a_std * mu / sigma  # c = c′ − a′·μ/σ
            iterations[block], converged[block] = steps, done
        return cls(slope=slope, intercept=intercept, fitted=fitted, n_positives=positives,
                   n_negatives=negatives, iterations=iterations, converged=converged,
                   target_smoothing=bool(target_smoothing))

    def transform(self, scores) -> np.ndarray:
        """Calibrated log-odds a·S + c (n × K, float32, finite; ±inf scores give ±float32 max)."""
        S = check_scores(scores)
        _check_width(S, self.n_categories)
        out = np.empty(S.shape, dtype=np.float32)
        for start in range(0, S.shape[0], TRANSFORM_ROWS):
            rows = np.clip(S[start:start + TRANSFORM_ROWS], -_FLOAT32_MAX, _FLOAT32_MAX)  # (r, K)
            out[start:start + TRANSFORM_ROWS] = _float32_log_odds(rows * self.slope + self.intercept)
        return out

    def fold(self, W, b):
        """(W·diag(a), b·a + c): a linear model X·W + b that scores calibrated log-odds.

        W (features × K, dense or sparse), b (K,). Keeps W's dtype."""
        if W.shape[-1] != self.n_categories or np.shape(b) != (self.n_categories,):
            raise MlnbError(f"W, b: need {self.n_categories} category columns, got W {W.shape}, b {np.shape(b)}")
        if sp.issparse(W):
            folded = sp.csr_matrix(W.multiply(self.slope[None, :]), dtype=W.dtype)
        else:
            folded = (np.asarray(W) * self.slope).astype(np.asarray(W).dtype)
        b = np.asarray(b)
        return folded, (b * self.slope + self.intercept).astype(b.dtype)

    def to_frame(self, category_names) -> pd.DataFrame:
        names = _names(category_names, self.n_categories)
        return pd.DataFrame({"category": np.arange(self.n_categories), "name": names, "method": self.method,
                             "slope": self.slope, "intercept": self.intercept, "fitted": self.fitted,
                             "validation_positives": self.n_positives,
                             "validation_negatives": self.n_negatives,
                             "target_smoothing": self.target_smoothing,
                             "iterations": self.iterations, "converged": self.converged})


def _platt_loss(u: np.ndarray, t: np.ndarray, a: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Σ_i softplus(z_i) − t_i·z_i with z = a·u + c, per row: (b, n) -> (b,)."""
    z = a[:, None] * u + c[:, None]
    return (np.logaddexp(0.0, z) - t * z).sum(axis=1)


def _newton(u: np.ndarray, t: np.ndarray, a: np.ndarray, c: np.ndarray):
    r"""Minimise Σ_i softplus(a·u_i + c) − t_i·(a·u_i + c) for each row of u, t (b, n).

        g = Σ_i (p_i − t_i)·[u_i, 1]                       p = σ(a·u + c)
        H = Σ_i p_i(1 − p_i)·[[u_i², u_i], [u_i, 1]] + ridge·I
        d = −H⁻¹·g,   decrement λ² = −gᵀd;   stop when λ²/2 ≤ tol·n (then take d in full)
        else step η = 1, ½, ¼, … until loss(θ + η·d) ≤ loss(θ) − armijo·η·λ²

    Returns a, c, steps taken and whether each row converged (b,) each.
    """
    b, n = u.shape
    a, c = a.astype(np.float64).copy(), c.astype(np.float64).copy()
    steps, converged = np.zeros(b, dtype=np.int64), np.zeros(b, dtype=bool)
    active = np.ones(b, dtype=bool)
    for _ in range(NEWTON_MAX_ITER):
        rows = np.flatnonzero(active)
        if rows.size == 0:
            break
        uu, tt = u[rows], t[rows]  # (m, n)
        z = a[rows, None] * uu + c[rows, None]
        p = expit(z)
        residual, weight = p - tt, p * (1.0 - p)  # (m, n)
        g_a, g_c = (residual * uu).sum(axis=1), residual.sum(axis=1)  # (m,)
        h_aa = (weight * uu * uu).sum(axis=1) + NEWTON_RIDGE
        h_ac = (weight * uu).sum(axis=1)
        h_cc = weight.sum(axis=1) + NEWTON_RIDGE
        det = h_aa * h_cc - h_ac * h_ac
        d_a = -(h_cc * g_a - h_ac * g_c) / det  # −H⁻¹g, the 2 × 2 inverse written out
        d_c = -(h_aa * g_c - h_ac * g_a) / det
        decrement = -(g_a * d_a + g_c * d_c)  # λ² ≥ 0
        loss = (np.logaddexp(0.0, z) - tt * z).sum(axis=1)
        steps[rows] += 1
        done = decrement / 2.0 <= NEWTON_TOL * n
        eta = np.ones(rows.size)
        searching = ~done
        while searching.any():
            k = np.flatnonzero(searching)
            trial = _platt_loss(u[rows[k]], t[rows[k]], a[rows[k]] + eta[k] * d_a[k], c[rows[k]] + eta[k] * d_c[k])
            ok = trial <= loss[k] - ARMIJO * eta[k] * decrement[k]
            searching[k[ok]] = False
            eta[k[~ok]] /= 2.0
            searching &= eta >= MIN_STEP
        moved = eta >= MIN_STEP  # rows whose line search gave up stay where they are
        a[rows[moved]] += eta[moved] * d_a[moved]
        c[rows[moved]] += eta[moved] * d_c[moved]
        converged[rows[done]] = True
        active[rows[done | ~moved]] = False
    return a, c, steps, converged


@dataclass(frozen=True, eq=False)
class IsotonicCalibration:
    """z = logit(clip(m_k(s), ε, 1 − ε)) per category, m_k an isotonic fit (module docstring)."""

    method: ClassVar[str] = "isotonic"
    breakpoints: tuple  # K arrays: the fit's x thresholds (ascending); empty where not fitted
    probabilities: tuple  # K arrays: p at each breakpoint, linear in between, constant beyond
    fitted: np.ndarray  # (K,) bool: False = no validation positive or negative, scores kept
    n_positives: np.ndarray  # (K,)
    n_negatives: np.ndarray  # (K,)
    eps: float = DEFAULT_EPS

    @property
    def n_categories(self) -> int:
        return self.fitted.size

    @classmethod
    def fit(cls, scores_val, Y_val, *, eps: float = DEFAULT_EPS) -> IsotonicCalibration:
        """One ``IsotonicRegression`` per fitted category (PAV is a sort plus one linear pass)."""
        from sklearn.isotonic import IsotonicRegression

        if not (isinstance(eps, numbers.Real) and not isinstance(eps, bool) and 0.0 < eps < 0.5):
            raise MlnbError(f"eps: must lie strictly between 0 and 0.5, got {eps!r}")
        S = _finite_validation(check_scores(scores_val, "scores_val"))
        n, K = S.shape
        Y = validation_labels(Y_val, S.shape)
        positives = np.diff(Y.indptr).astype(np.int64)
        negatives = n - positives
        fitted = (positives > 0) & (negatives > 0)
        breakpoints, probabilities = [], []
        for k in range(K):
            if not fitted[k]:
                breakpoints.append(np.empty(0))
                probabilities.append(np.empty(0))
                continue
            y = np.zeros(n)
            y[Y.indices[Y.indptr[k]:Y.indptr[k + 1]]] = 1.0
            model = IsotonicRegression(y_min=eps, y_max=1.0 - eps, out_of_bounds="clip")
            model.fit(S[:, k].astype(np.float64), y)
            breakpoints.append(model.X_thresholds_)
            probabilities.append(model.y_thresholds_)
        return cls(breakpoints=tuple(breakpoints), probabilities=tuple(probabilities), fitted=fitted,
                   n_positives=positives, n_negatives=negatives, eps=float(eps))

    def predict_proba(self, scores) -> np.ndarray:
        """p = m_k(s) for fitted categories (linear between breakpoints, clipped beyond);
        σ(s) for the unfitted (their own scores). n × K float64."""
        S = check_scores(scores)
        _check_width(S, self.n_categories)
        P = np.empty(S.shape)
        for k in range(self.n_categories):
            if self.fitted[k]:  # np.interp clamps outside the range: out_of_bounds="clip"
                P[:, k] = np.interp(S[:, k], self.breakpoints[k], self.probabilities[k])
            else:
                P[:, k] = expit(S[:, k])
        return P

    def transform(self, scores) -> np.ndarray:
        """log-odds logit(clip(p, ε, 1 − ε)) for fitted categories, the scores themselves for the
        unfitted (n × K float32, finite)."""
        S = check_scores(scores)
        _check_width(S, self.n_categories)
        out = np.empty(S.shape, dtype=np.float32)
        for k in range(self.n_categories):
            if self.fitted[k]:
                p = np.interp(S[:, k], self.breakpoints[k], self.probabilities[k])
                out[:, k] = logit(np.clip(p, self.eps, 1.0 - self.eps))
            else:
                out[:, k] = _float32_log_odds(S[:, k])
        return out

    def fold(self, W, b):
        raise MlnbError("calibration: isotonic calibration is not linear; it cannot be folded into W, b")

    def to_frame(self, category_names) -> pd.DataFrame:
        names = _names(category_names, self.n_categories)
        return pd.DataFrame({"category": np.arange(self.n_categories), "name": names, "method": self.method,
                             "breakpoints": [x.size for x in self.breakpoints], "fitted": self.fitted,
                             "validation_positives": self.n_positives,
                             "validation_negatives": self.n_negatives, "eps": self.eps})


Calibration = IdentityCalibration | PlattCalibration | IsotonicCalibration


def fit_calibration(method: str, scores_val=None, Y_val=None, *, target_smoothing: bool = True,
                    eps: float = DEFAULT_EPS) -> Calibration:
    """Fit ``method`` ("none" | "platt" | "isotonic") on validation scores and labels (n × K).

    target_smoothing : Platt's targets (N₊+1)/(N₊+2), 1/(N₋+2) (True) or the 0/1 labels (False)
    eps              : isotonic probabilities kept in [eps, 1 − eps]
    "none" needs no validation data (K is recorded when scores_val is given).

    Scores ten times too confident — log-odds 10·z where z is the truth — get Platt's slope 1/10:

    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> z = rng.normal(0, 2, size=(20000, 1))  # true log-odds of 20,000 validation documents, 1 category
    >>> y = (rng.random(z.shape) < 1 / (1 + np.exp(-z))).astype(int)
    >>> platt = fit_calibration("platt", 10 * z, y)
    >>> float(platt.slope[0].round(2))
    0.1
    >>> W, b = platt.fold(np.array([[5.0], [1.0]]), np.array([0.0]))  # X·W + b now scores calibrated log-odds
    >>> W.round(2)
    array([[0.5],
           [0.1]])
    """
    if method == "none":
        return IdentityCalibration(n_categories=None if scores_val is None
                                   else check_scores(scores_val, "scores_val").shape[1])
    if method == "platt":
        return PlattCalibration.fit(scores_val, Y_val, target_smoothing=target_smoothing)
    if method == "isotonic":
        return IsotonicCalibration.fit(scores_val, Y_val, eps=eps)
    raise MlnbError(f"method: unknown calibration {method!r} (one of {', '.join(METHODS)})")
