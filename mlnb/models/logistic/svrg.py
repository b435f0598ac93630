r"""Logistic regression for every category at once by variance-reduced minibatch steps (SVRG), to the
documented objective's optimum.

The objective is the minibatch solver's and L-BFGS's (``estimator.py``, ``lbfgs.py``), with
Z = X·W + b, f the mean loss over the n training documents and b not regularised:

    F(W, b) = f(W, b) + (l2/2)·‖W‖² + l1·‖W‖₁

The minibatch solver's AdaGrad steps follow a noisy gradient, so they approach F's optimum at a
sublinear rate (``experiments/lr_objective.py``). SVRG (Johnson & Zhang 2013, "Accelerating
stochastic gradient descent using predictive variance reduction") removes the noise: each outer
iteration s takes a snapshot W̃, b̃, computes the full gradient there in one pass,

    μ = ∇_W f(W̃, b̃) = (1/n)·Xᵀ(P̃ − Y),    μ_b = (1/n)·1ᵀ(P̃ − Y)

and then runs ``inner_passes`` passes of minibatch steps with the corrected gradient of the loss

    G = (1/m)·X_Bᵀ(P_B − P̃_B) + μ,      g_b = (1/m)·1ᵀ(P_B − P̃_B) + μ_b

(P_B = σ(X_B·W + b), or the softmax, P̃_B the same at the snapshot): an unbiased estimate of ∇f
whose variance vanishes as W and W̃ approach the optimum, so a constant step converges linearly.
Each coordinate takes the minibatch solver's exact regularised step (``regularisation.py``) for a time c_jk:

    W ← the solution after a time c of  dw/ds = −G − l2·w − l1·sign(w)   (G held fixed)
      = e^(−l2·c)·W − c·φ(l2·c)·G,   φ(y) = (1 − e^(−y))/y                  (l1 = 0)

A row j that the minibatch does not touch has G_j = μ_j, a constant during the whole inner loop, and
a constant step c_j, so the steps it misses are again one flow of a fixed G: one closed-form step
for the time c_j·(steps missed), applied just before the row is next read and to every row at the
end of each inner pass. The cost of a step stays that of the rows it touches (two products with
them instead of the minibatch solver's one, for the snapshot's scores), and the result is exactly the dense
SVRG update of every row at every step.

The step is a diagonal preconditioner, fixed for the inner loop:

    c_jk = η / (h_jk + v_jk/(m·h_jk) + l2),   h_jk = (1/n)·Σ_i x_ij²·s_ik,   v_jk = (1/n)·Σ_i x_ij⁴·s_ik²
    c_b,k = η / (h_b + v_b/(m·h_b)),          h_b = max((1/n)·Σ_i s_ik, f·ŝ_k),   v_b = max((1/n)·Σ_i s_ik², (f·ŝ_k)²)

with s_ik = p̃_ik(1 − p̃_ik) at the snapshot. h_jk is the diagonal of the loss's Hessian (that of the
softmax's too) and the minibatch of m documents has curvature h_B along (j, k), of mean h_jk and
variance ≈ (v_jk − h_jk²)/m. A step c along one coordinate contracts in expectation iff
E[(1 − c·h_B)²] < 1, i.e. c < 2·E[h_B]/E[h_B²] ≈ 2/(h + v/(m·h)): the second term is a rare word's
(a word in one document of the n has h = x²s/n and v/(m·h) = x²s/m, the curvature of the one
minibatch that holds it), the first a frequent one's. ŝ_k = (N_k/n)·(1 − N_k/n) is s at the all-prior
model (every p the category's base rate), which bounds b's curvature near the optimum (there
Σ_i p_ik = N_k, and s is concave); b's curvature is taken as at least f = ``CURVATURE_FLOOR_B`` (1 %)
of it, because a rare category can have every p̃_ik ≈ 0 at a snapshot while its positives'
gradients are not small, and a step of η/h_b then threw b out by orders of magnitude (at l2 = 1e-4).
η is ``svrg_step``, below 2: along one coordinate alone, c·h_B ≥ 2 overshoots. An outer iteration whose
snapshot has a higher F than the one before is rejected: the solver returns to the earlier snapshot and halves
η (at most ``MAX_REJECTIONS`` times). So F decreases from snapshot to snapshot; when not even the first outer
iteration is accepted, the solver raises rather than return its start as a fit.

It stops when max |∇F| ≤ tol at a snapshot (with l1, the minimum-norm subgradient, as OWL-QN's
pseudo-gradient; the full gradient is computed there anyway), or after ``max_iter`` outer
iterations (``converged`` False). Every outer iteration costs one full pass and ``inner_passes``
minibatch passes; W, W̃, μ and c are V × K float64 each.

Measured (``experiments/lr_objective.py --solvers svrg``, 15,949 RCV1-shaped documents, 5,000 words,
20 categories; docs/guide/logistic-regression.md has the table): the relative excess objective
reaches 1e-4 multilabel at batch 1000 in 64 passes (l2 = 1e-3) and 190 (l2 = 1e-4), multiclass at
batch 100 in 82 and 100 (L-BFGS: 84, 222, 77 and 130). The AdaGrad solver is at 4.8e-3 (l2 = 1e-3)
and 0.042 (l2 = 1e-4) after 50 passes. On small problems it needs more passes than L-BFGS
(rcv1subset1's 3,019 training documents: 271 against 81).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, fields

import numpy as np
import scipy.sparse as sp
from scipy.special import expit, softmax

from mlnb import progress
from mlnb.errors import MlnbError
from mlnb.models.logistic import lbfgs
from mlnb.models.logistic.regularisation import regularised_step

#: b's curvature is taken as at least this share of the all-prior model's, ŝ_k (module docstring). Measured with
#: experiments/lr_objective.py --solvers svrg: 0 lets a saturated snapshot throw b out (overflow at l2 = 1e-4);
#: 1 is safe but slow (multilabel, l2 = 1e-3: 235 passes to a gap of 1e-4 instead of 64); 0.001 needed step
#: halvings at l2 = 1e-4 (no gap of 1e-4 within 289 passes); 0.01 and 0.1 both gave 64 at l2 = 1e-3, and 190
#: against more than 280 at l2 = 1e-4
CURVATURE_FLOOR_B = 0.01
#: most halvings of η after a rejected outer iteration, before the solver stops
MAX_REJECTIONS = 30
#: a snapshot is rejected when its F exceeds the previous one's by more than this (relative):
#: F is summed in float64 over the documents, so equal weights give equal F to ~1e-15
REJECT_ABOVE = 1e-12


@dataclass
class CurvedPartial(lbfgs.Partial):
    """``lbfgs.Partial`` (loss, grad_W, grad_b, n) and the sums the preconditioner needs (added with ``+``):

    curvature_W  : (X∘X)ᵀ·S, (V, K),  S = P∘(1 − P);   curvature_b  : 1ᵀ·S, (K,)
    curvature2_W : (X∘X∘X∘X)ᵀ·(S∘S), (V, K);         curvature2_b : 1ᵀ·(S∘S), (K,)
    labels       : Σ_i y_ik, (K,)
    """

    curvature_W: np.ndarray
    curvature2_W: np.ndarray
    curvature_b: np.ndarray
    curvature2_b: np.ndarray
    labels: np.ndarray

    def __add__(self, other: CurvedPartial) -> CurvedPartial:
        return CurvedPartial(*(mine + theirs for mine, theirs in zip(_fields_of(self), _fields_of(other))))


def _fields_of(part) -> tuple:
    """The fields of a dataclass in order, not copied (``dataclasses.astuple`` deep-copies the arrays)."""
    return tuple(getattr(part, field.name) for field in fields(part))


def probabilities(Z: np.ndarray, link: str) -> np.ndarray:
    """P = σ(Z) (multilabel) or the softmax of each row (multiclass), float64."""
    return softmax(Z, axis=1) if link == "softmax" else expit(Z)


def loss_gradient_curvature(X, Y, W: np.ndarray, b: np.ndarray, link: str, columns=None) -> CurvedPartial:
    """The ``CurvedPartial`` of the documents (X (m × V) CSR, Y (m × K) 0/1 CSR; multiclass one-hot) at
    W (V × K′), b (K′,) float64, for the categories ``columns`` of Y (None: all)."""
    X, Y, loss, P = lbfgs.loss_and_probabilities(X, Y, W, b, link, columns)  # P: (m, K′)
    spread = P * (1.0 - P)  # the Hessian's diagonal per document and category
    R = lbfgs.minus_labels(P, Y)  # P − Y (in place of P)
    squares = X.multiply(X).tocsr().astype(np.float64)
    fourth = squares.multiply(squares).tocsr()
    return CurvedPartial(loss, np.asarray(X.T @ R), R.sum(axis=0), X.shape[0],
                         curvature_W=np.asarray(squares.T @ spread), curvature2_W=np.asarray(fourth.T @ (spread * spread)),
                         curvature_b=spread.sum(axis=0), curvature2_b=(spread * spread).sum(axis=0),
                         labels=np.bincount(Y.indices, weights=Y.data.astype(np.float64), minlength=P.shape[1]))


def fit_svrg(sum_partial: Callable[[np.ndarray, np.ndarray], CurvedPartial],
             minibatches: Callable[[np.random.Generator], Iterable], W0: np.ndarray, b0: np.ndarray, l1: float,
             l2: float, link: str, *, batch_size: int, step: float, inner_passes: int, max_iter: int, tol: float,
             rng: np.random.Generator, label: str = "LR SVRG") -> lbfgs.Solution:
    """Minimise F (module docstring) from W0 (V × K′), b0 (K′,).

    ``sum_partial(W, b)`` is one full pass giving the documents' ``CurvedPartial`` at (W, b);
    ``minibatches(rng)`` one pass of minibatches (X_B CSR m × V, anything), shuffled by ``rng``: the steps read
    X_B only (the labels cancel in G; the full passes carry them)."""
    W = np.array(W0, dtype=np.float64)  # (V, K′)
    b = np.array(b0, dtype=np.float64)  # (K′,)
    V, K = W.shape
    units = K if link == "sigmoid" else 1
    started = time.perf_counter()
    passes, rejections, eta = 0, 0, float(step)
    history: list[dict] = []

    def objective(part: CurvedPartial, W_: np.ndarray) -> float:
        return float(part.loss.sum() / part.n + 0.5 * l2 * np.sum(W_ * W_) + l1 * np.abs(W_).sum())

    part = sum_partial(W, b)
    passes += 1
    F = objective(part, W)
    converged, message, iteration = False, f"stopped after max_iter = {max_iter} outer iterations", 0
    while True:
        n = part.n
        gradient_W = lbfgs.minimum_norm_gradient(W, part.grad_W / n + l2 * W, l1)
        largest = float(max(np.abs(gradient_W).max(initial=0.0), np.abs(part.grad_b / n).max(initial=0.0)))
        record = {"iteration": iteration, "objective": F, "train_loss": float(part.loss.sum()) / (n * units),
                  "max_gradient": largest, "passes": passes, "seconds": time.perf_counter() - started, "step": eta}
        history.append(record)
        if iteration:
            progress.log(f"{label} iteration {iteration}/{max_iter}: objective {F:.8g}, max |∇F| {largest:.2e}, "
                         f"step {eta:g}, {passes} passes, {record['seconds']:.1f} s", final=False)
        if largest <= tol:
            converged, message = True, f"max |∇F| {largest:.2e} <= tol {tol:g}"
            break
        if iteration >= max_iter:
            break
        iteration += 1
        snapshot = (W.copy(), b.copy(), F, part)
        while True:  # the inner loop from the snapshot; again, with η halved, while F went up
            W, b = _inner_loop(snapshot[0], snapshot[1], snapshot[3], l1, l2, link, batch_size, eta, inner_passes,
                               minibatches, rng)
            passes += inner_passes
            part = sum_partial(W, b)
            passes += 1
            F = objective(part, W)
            if np.isfinite(F) and F <= snapshot[2] + REJECT_ABOVE * abs(snapshot[2]):
                break
            rejections += 1
            eta *= 0.5
            progress.log(f"{label} iteration {iteration}: objective {F:.8g} above the snapshot's {snapshot[2]:.8g}; "
                         f"step halved to {eta:g}")
            if rejections > MAX_REJECTIONS:
                W, b, F, part = snapshot[0], snapshot[1], snapshot[2], snapshot[3]
                message = f"no decrease of F after {MAX_REJECTIONS} halvings of the step"
                break
        if rejections > MAX_REJECTIONS:
            if iteration == 1:  # no step was ever accepted: the "model" would be the start (W0, b0), not a fit
                raise MlnbError(f"{label} made no progress: its first outer iteration raised the objective at "
                                f"every step tried, from svrg_step {step:g} halved {MAX_REJECTIONS} times down to "
                                f"{2 * eta:g}; lower svrg_step")
            history[-1]["iteration"] = iteration  # the last snapshot stands
            break
    return lbfgs.Solution(W, b, iteration, converged, passes, history, message)


def _curvature_bound(h: np.ndarray, v: np.ndarray, m: int) -> np.ndarray:
    """E[h_B²]/E[h_B] ≈ h + v/(m·h) of a minibatch of m documents (module docstring); 0 where h = 0 (a word in no
    document, or probabilities all 0 or 1 in float64)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(h > 0, h + v / (m * np.where(h > 0, h, 1.0)), 0.0)


def _step(eta: float, curvature: np.ndarray) -> np.ndarray:
    """η / curvature, and 0 where the curvature is 0 (no step without a curvature to size it: such a coordinate
    has no loss gradient unless its probabilities saturated, and no l2)."""
    with np.errstate(divide="ignore"):
        return np.where(curvature > 0, eta / np.where(curvature > 0, curvature, 1.0), 0.0)


def _inner_loop(W_snapshot: np.ndarray, b_snapshot: np.ndarray, part: CurvedPartial, l1: float, l2: float, link: str,
                batch_size: int, eta: float, inner_passes: int, minibatches, rng):
    """``inner_passes`` passes of SVRG steps from the snapshot (module docstring); returns (W, b)."""
    n = part.n
    mu, mu_b = part.grad_W / n, part.grad_b / n  # (V, K′), (K′,)
    prior = part.labels / n * (1.0 - part.labels / n)  # (K′,) ŝ: s at the all-prior model (p = each base rate)
    c = _step(eta, _curvature_bound(part.curvature_W / n, part.curvature2_W / n, batch_size) + l2)  # (V, K′)
    floor_b = CURVATURE_FLOOR_B * prior
    c_b = _step(eta, _curvature_bound(np.maximum(part.curvature_b / n, floor_b),
                                      np.maximum(part.curvature2_b / n, floor_b * floor_b), batch_size))  # (K′,)
    W, b = W_snapshot.copy(), b_snapshot.copy()
    V = W.shape[0]
    touched = np.zeros(V, dtype=bool)
    position = np.zeros(V, dtype=np.int32)
    for _ in range(inner_passes):
        steps = 0  # steps taken in this pass; row j is up to date to step caught[j]
        caught = np.zeros(V, dtype=np.int64)
        for X_B, Y_B in minibatches(rng):
            m = X_B.shape[0]
            touched[X_B.indices] = True
            J = np.flatnonzero(touched)  # the touched rows, ascending
            touched[J] = False
            position[J] = np.arange(J.size, dtype=np.int32)
            X_J = sp.csr_matrix((X_B.data, position[X_B.indices], X_B.indptr), shape=(m, J.size))
            W_J = W[J]
            missed = steps - caught[J]  # (|J|,) steps of drift μ_j alone
            behind = np.flatnonzero(missed)
            if behind.size:
                rows = J[behind]
                W_J[behind] = regularised_step(W_J[behind], mu[rows], c[rows] * missed[behind, None].astype(np.float64),
                                               l1, l2, dtype=np.float64)
            difference = probabilities(X_J @ W_J + b, link) - probabilities(X_J @ W_snapshot[J] + b_snapshot, link)
            G = np.asarray(X_J.T @ difference) / m + mu[J]  # (|J|, K′)
            W[J] = regularised_step(W_J, G, c[J], l1, l2, dtype=np.float64)
            b -= c_b * (difference.sum(axis=0) / m + mu_b)
            steps += 1
            caught[J] = steps
        W = regularised_step(W, mu, c * (steps - caught).astype(np.float64)[:, None], l1, l2, dtype=np.float64)
    return W, b
