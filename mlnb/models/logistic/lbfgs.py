r"""Logistic regression for every category at once by L-BFGS on the full gradient, summed chunk by chunk.

The objective is the minibatch solver's (``estimator.py``), here minimised exactly. With
Z = X·W + b (n × K), W (V × K), b (K,) not regularised:

    multilabel (sigmoid):  f(W, b) = (1/n) Σ_i Σ_k [softplus(z_ik) − y_ik·z_ik] + (l2/2)·‖W‖²
    multiclass (softmax):  f(W, b) = (1/n) Σ_i [logsumexp(z_i) − z_i·y_i]       + (l2/2)·‖W‖²
    minimised:             F(W, b) = f(W, b) + l1·‖W‖₁

    ∇_W f = (1/n)·Xᵀ(P − Y) + l2·W,    ∇_b f = (1/n)·1ᵀ(P − Y),    P = σ(Z) or softmax(Z) row by row

Multilabel, f is a sum of one independent problem per category, each l2 × scikit-learn's
``LogisticRegression`` objective C·Σ_i loss_ik + ½‖w_k‖² at C = 1/(n·l2): the same minimiser (with l1,
(l1 + l2) × its elastic net C·Σ_i loss_ik + r·‖w_k‖₁ + ½(1 − r)·‖w_k‖² at C = 1/(n·(l1 + l2)),
r = l1/(l1 + l2)).
Multiclass, it is scikit-learn's multinomial objective at the same C (the softmax is unchanged by
adding a constant to every b_c, so b is fixed up to that constant: L-BFGS keeps the mean of the
start's b, since every gradient of b sums to 0 over the classes).

Everything the solver needs from the documents is a sum over them: the loss sums, Xᵀ(P − Y),
1ᵀ(P − Y) and n. ``loss_and_gradient(X, Y, W, b, link)`` gives them for one block of documents as
a ``Partial``; partials add with ``+``. So one evaluation of f and ∇f is one pass that sums
partials: over row blocks of a matrix in memory, or over the chunks of a stream, here or on Dask
(``StreamTrainer.sum_over_chunks``, a fixed pairwise tree: the same bits on any worker count),
as Spark ML's LogisticRegression tree-aggregates its gradients.

The solver, ``fit_quasi_newton``, is L-BFGS (Nocedal & Wright, *Numerical Optimization*, alg. 7.4
and 7.5) over θ = [W; b] in float64, and with l1 > 0 OWL-QN (Andrew & Gao 2007, "Scalable training
of L1-regularized log-linear models": the same directions on the pseudo-gradient, steps kept in an
orthant). Multilabel, f is a sum of K independent problems, and one L-BFGS over all of them shares
one scaling and one line search: a rare category's flat curvature then slows every other (passes
counted by hand, no script: experiments/README.md). So each category keeps its own pairs, scaling
and line search, all advanced in lockstep, one pass evaluating every category at its own trial point. Multiclass (softmax) is one coupled problem, solved the same way as one group.
It stops when max |◇F| ≤ tol (scikit-learn's ``gtol``) or F stops decreasing (relative 64 ε,
``STALLED_ITERATIONS`` running) for every category, or after ``max_iter`` iterations (a
``ConvergenceWarning`` and ``converged_ = False``).

Categories that cannot be fitted (multilabel: no positive or no negative training document;
multiclass: a class without documents) have no finite optimum (b_k → ∓∞); they are left out of
the optimisation and get W_k = 0 and b_k = their prior log-odds, as the one-vs-rest models do.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.special import expit, logsumexp
from sklearn.exceptions import ConvergenceWarning

from mlnb import progress

#: documents per block when summing over a matrix held in memory (P and Xᵀ's block: m × K float64)
BLOCK_ROWS = 8192
#: a category is done when its F's relative decrease stays ≤ 64 ε this many iterations running (with l1,
#: one such iteration may be a step that only moved weights onto zero)
STALLED_ITERATIONS = 5
#: most step halvings of one line search (a step of 2^-30: no decrease left to find)
MAX_HALVINGS = 30


@dataclass
class Partial:
    """The sums over some documents that f and ∇f are made of (added with ``+``).

    loss   : Σ_i loss_ik per category, (K,) float64 (multilabel); Σ_i loss_i, (1,) (multiclass)
    grad_W : Xᵀ(P − Y), (V, K) float64
    grad_b : 1ᵀ(P − Y), (K,) float64
    n      : documents
    """

    loss: np.ndarray
    grad_W: np.ndarray
    grad_b: np.ndarray
    n: int

    def __add__(self, other: Partial) -> Partial:
        return Partial(self.loss + other.loss, self.grad_W + other.grad_W, self.grad_b + other.grad_b,
                       self.n + other.n)


def loss_and_probabilities(X, Y, W: np.ndarray, b: np.ndarray, link: str, columns=None):
    """(X CSR, Y's columns CSR, the loss sums as in ``Partial``, P (m × K′) float64 = σ(Z) or the softmax of each
    row, Z = X·W + b) for the documents X (m × V), Y (m × K) 0/1 (multiclass one-hot) at W (V × K′), b (K′,)
    float64, for the categories ``columns`` of Y (K′ of them; None: all)."""
    X = sp.csr_matrix(X)
    Y = sp.csr_matrix(Y)
    if columns is not None:
        Y = Y[:, columns]
    m = X.shape[0]
    Z = X @ W + b  # (m, K′) float64
    rows = np.repeat(np.arange(m), np.diff(Y.indptr))  # the (row, column) of every label y_ik = 1
    y = Y.data.astype(np.float64)
    zy = np.bincount(Y.indices, weights=y * Z[rows, Y.indices], minlength=Z.shape[1])  # (K′,) Σ_i z_ik·y_ik
    if link == "softmax":
        lse = logsumexp(Z, axis=1)  # (m,)
        loss = np.array([lse.sum() - zy.sum()])  # (1,)
        P = np.exp(Z - lse[:, None])  # (m, K′)
    else:
        loss = np.logaddexp(0.0, Z).sum(axis=0) - zy  # (K′,)
        P = expit(Z)  # (m, K′)
    return X, Y, loss, P


def minus_labels(P: np.ndarray, Y: sp.csr_matrix) -> np.ndarray:
    """P − Y in place (Y CSR 0/1 of P's shape), returned."""
    rows = np.repeat(np.arange(P.shape[0]), np.diff(Y.indptr))
    P[rows, Y.indices] -= Y.data.astype(np.float64)
    return P


def loss_and_gradient(X, Y, W: np.ndarray, b: np.ndarray, link: str, columns=None) -> Partial:
    """The ``Partial`` of the documents (X (m × V) CSR, Y (m × K) 0/1 CSR; multiclass one-hot) at W (V × K′)
    and b (K′,) float64, for the categories ``columns`` of Y (K′ of them; None: all)."""
    X, Y, loss, P = loss_and_probabilities(X, Y, W, b, link, columns)
    R = minus_labels(P, Y)  # (m, K′)  P − Y
    return Partial(loss, np.asarray(X.T @ R), R.sum(axis=0), X.shape[0])


def sum_in_blocks(X, Y, function: Callable, *args, block_rows: int = BLOCK_ROWS):
    """Σ over row blocks of X, Y (in memory) of ``function(X_block, Y_block, *args)``, in block order."""
    total = None
    for start in range(0, X.shape[0], block_rows):
        part = function(X[start:start + block_rows], Y[start:start + block_rows], *args)
        total = part if total is None else total + part
    return total


def minimum_norm_gradient(W: np.ndarray, gradient: np.ndarray, l1: float) -> np.ndarray:
    """The smallest element of F's subdifferential for F = f + l1·‖W‖₁, given gradient = ∇f (OWL-QN's
    pseudo-gradient): gradient + l1·sign(w) where w ≠ 0, and where w = 0 the gradient shrunk by l1 towards 0."""
    if l1 == 0:
        return gradient
    shrunk = np.sign(gradient) * np.maximum(np.abs(gradient) - l1, 0.0)
    return np.where(W != 0, gradient + l1 * np.sign(W), shrunk)


@dataclass
class Solution:
    """What ``fit_quasi_newton`` (or ``svrg.fit_svrg``, whose iterations are outer ones) found: W (V × K′) and
    b (K′,) float64, the iterations, whether it converged (max |∇f| ≤ tol, or f stopped decreasing), the passes
    over the documents (function evaluations; SVRG's minibatch passes too), one record per iteration, and the
    solver's reason for stopping."""

    W: np.ndarray
    b: np.ndarray
    n_iter: int
    converged: bool
    passes: int
    history: list
    message: str


def fit_quasi_newton(sum_partial: Callable[[np.ndarray, np.ndarray], Partial], W0: np.ndarray, b0: np.ndarray,
                     l1: float, l2: float, max_iter: int, tol: float, link: str, memory: int = 10,
                     label: str = "LR L-BFGS") -> Solution:
    """Minimise F = f + l1·‖W‖₁ by L-BFGS (l1 = 0) or OWL-QN (l1 > 0), one independent problem per
    category in lockstep (multilabel: F is a sum of one problem per column of [W; b]) or one problem
    (multiclass). Every group (a category, or all of them) keeps its own (s, y) pairs, scaling and
    backtracking line search (Armijo, F(θ′) ≤ F(θ) + 10⁻⁴·◇F·(θ′ − θ), step halved up to
    ``MAX_HALVINGS`` times), so a rare category's curvature never sets another's step; one pass
    evaluates every group at its own trial point. A group is done when max |◇F| ≤ tol, or when its F
    stops decreasing (relative 64 ε, ``STALLED_ITERATIONS`` running).

    ``sum_partial(W, b)`` is one pass giving the documents' ``Partial`` at W (V × K′), b (K′,); W0, b0 the
    start; ``memory`` the pairs kept, 2·memory·(V + 1)·K′ float64."""
    V, K = W0.shape
    groups = np.arange(K) if link == "sigmoid" else np.zeros(K, dtype=np.int64)  # (K,) group of each column
    G = int(groups.max()) + 1 if K else 0
    penalised = np.zeros((V + 1, 1), dtype=bool)
    penalised[:V] = True  # rows of W; the last row, b, has no penalty

    def gsum(A: np.ndarray) -> np.ndarray:  # (V + 1, K) -> (G,): one sum per group
        return np.bincount(groups, weights=A.sum(axis=0), minlength=G)

    passes = 0
    started = time.perf_counter()
    units = K if link == "sigmoid" else 1

    def evaluate(theta: np.ndarray):
        """F per group (G,), ∇f (V + 1, K) and the mean training loss at θ = [W; b] (V + 1, K)."""
        nonlocal passes
        W = theta[:V]
        part = sum_partial(W, theta[V])
        passes += 1
        n = part.n
        loss = part.loss if link == "sigmoid" else part.loss[:1]  # (G,)
        F = loss / n + gsum(0.5 * l2 * W * W) + l1 * gsum(np.abs(W))
        gradient = np.vstack([part.grad_W / n + l2 * W, part.grad_b / n])  # (V + 1, K)
        return F, gradient, float(part.loss.sum()) / (n * units)

    def pseudo_gradient(theta: np.ndarray, gradient: np.ndarray) -> np.ndarray:
        if l1 == 0:
            return gradient
        return np.where(penalised, minimum_norm_gradient(theta, gradient, l1), gradient)

    theta = np.vstack([np.asarray(W0, dtype=np.float64), np.asarray(b0, dtype=np.float64)[None, :]])  # (V + 1, K)
    F, gradient, loss = evaluate(theta)
    pseudo = pseudo_gradient(theta, gradient)
    pairs: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # (s, y, ρ (G,)); ρ = 0: no pair for that group
    gamma = np.zeros(G)  # s·y / y·y of each group's latest pair (0: none yet)
    done = np.zeros(G, dtype=bool)
    stalled = np.zeros(G, dtype=np.int64)
    failed = np.zeros(G, dtype=bool)  # the line search found no decrease
    history = []
    for iteration in range(1, max_iter + 1):
        largest = np.zeros(G)
        np.maximum.at(largest, groups, np.abs(pseudo).max(axis=0))  # (G,) max |◇F| per group
        done |= largest <= tol
        if done.all():
            break
        active = ~done[groups]  # (K,) the columns still moving
        # two-loop recursion, per group (Nocedal & Wright, alg. 7.4), on the pseudo-gradient
        q = pseudo.copy()
        alphas = []
        for s, y, rho in reversed(pairs):
            alpha = rho * gsum(s * q)
            q -= alpha[groups] * y
            alphas.append(alpha)
        q *= np.where(gamma > 0, gamma, 1.0)[groups]
        for (s, y, rho), alpha in zip(pairs, reversed(alphas)):
            q += (alpha - rho * gsum(y * q))[groups] * s
        direction = -q
        if l1 > 0:  # OWL-QN: only along −◇F's signs
            direction[penalised[:, 0]] = np.where(direction[:V] * pseudo[:V] >= 0, 0.0, direction[:V])
        uphill = gsum(direction * pseudo) >= 0  # (G,) not a descent direction: forget that group's pairs
        if uphill.any():
            direction[:, uphill[groups]] = -pseudo[:, uphill[groups]]
            pairs = [(s, y, np.where(uphill, 0.0, rho)) for s, y, rho in pairs]
            gamma[uphill] = 0.0
        direction[:, ~active] = 0.0
        orthant = np.where(theta != 0, np.sign(theta), np.sign(-pseudo))  # the orthant each step stays in
        step = np.where(gamma > 0, 1.0, 1.0 / np.maximum(np.sqrt(gsum(pseudo * pseudo)), 1e-12))  # (G,)
        accepted = done.copy()
        new_theta, new_F, new_gradient = theta.copy(), F.copy(), gradient.copy()
        for _ in range(MAX_HALVINGS):
            trial = np.where(accepted[groups], new_theta, theta + step[groups] * direction)
            if l1 > 0:  # never across zero
                trial = np.where(penalised & (trial * orthant <= 0) & ~accepted[groups], 0.0, trial)
            F_trial, gradient_trial, loss = evaluate(trial)
            ok = (F_trial <= F + 1e-4 * gsum(pseudo * (trial - theta))) & ~accepted
            columns = ok[groups]
            new_theta[:, columns], new_gradient[:, columns] = trial[:, columns], gradient_trial[:, columns]
            new_F[ok] = F_trial[ok]
            accepted |= ok
            if accepted.all():
                break
            step[~accepted] *= 0.5
        failed |= ~accepted
        done |= ~accepted
        s, y = new_theta - theta, new_gradient - gradient
        sy, yy = gsum(s * y), gsum(y * y)
        valid = (sy > 1e-10 * yy) & accepted & ~done
        s[:, ~valid[groups]] = 0.0
        y[:, ~valid[groups]] = 0.0
        pairs.append((s, y, np.where(valid, 1.0 / np.where(valid, sy, 1.0), 0.0)))
        if len(pairs) > memory:
            pairs.pop(0)
        gamma = np.where(valid, sy / np.where(valid, yy, 1.0), gamma)
        decrease = (F - new_F) / np.maximum(np.maximum(np.abs(F), np.abs(new_F)), 1.0)
        stalled = np.where(decrease <= 64 * np.finfo(float).eps, stalled + 1, 0)
        done |= stalled >= STALLED_ITERATIONS
        theta, F, gradient = new_theta, new_F, new_gradient
        pseudo = pseudo_gradient(theta, gradient)
        record = {"iteration": iteration, "objective": float(F.sum()), "train_loss": loss,
                  "max_gradient": float(np.abs(pseudo).max(initial=0.0)), "passes": passes,
                  "seconds": time.perf_counter() - started, "categories_left": int((~done).sum())}
        if l1 > 0:
            record["nonzero_weights"] = int(np.count_nonzero(theta[:V]))
        history.append(record)
        if progress.is_enabled():
            progress.log(f"{label} iteration {iteration}/{max_iter}: objective {record['objective']:.8g}, max "
                         f"|gradient| {record['max_gradient']:.2e} (tol {tol:g}), {record['categories_left']} of {G} "
                         f"still moving, {passes} passes, {record['seconds']:.1f} s", final=False)
    else:
        iteration = max_iter + 1
    largest = np.zeros(G)
    np.maximum.at(largest, groups, np.abs(pseudo).max(axis=0))
    converged = bool(((largest <= tol) | (stalled >= STALLED_ITERATIONS)).all())
    message = "converged" if converged else (
        f"{int(failed.sum())} of {G} stopped by a line search without decrease" if failed.any() and
        iteration <= max_iter else f"{int((~done).sum())} of {G} still moving at max_iter")
    if not converged:
        text = (f"{label} did not converge in {len(history)} iterations: max |gradient| "
                f"{largest.max(initial=0.0):.2e}, tol {tol:g} ({message}); raise max_iter for the exact optimum")
        warnings.warn(text, ConvergenceWarning, stacklevel=3)
        progress.log(text)
    return Solution(theta[:V].copy(), theta[V].copy(), len(history), converged, passes, history, message)
