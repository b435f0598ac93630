r"""Minibatch kernels of the all-categories logistic regression (see ``logistic.py``).

Two implementations of one and the same step, chosen by ``kernel``:

* ``scipy``: scipy.sparse products on the minibatch restricted to the words
  it touches; single-threaded; the reference.
* ``numba``: the same step as compiled loops, parallel over documents for the
  forward product and over touched words for the backward product and the
  update. Each word's row of W belongs to one thread, so there are no races
  and the result does not depend on the number of threads.

Step on minibatch B (m documents; t = step number from 1; lrate per category):

    Z = X_B·W + b                          (m × K)
    D = P − Y_B,  P = link(Z)              (m × K)
    G = X_Bᵀ·D / m + l2·W + l1·sign(W)     on the rows of W that B touches
    g_b = 1ᵀ·D / m
    adagrad:  S += G²;  W −= lrate · t^(−texp) · G / ((S / t)^vexp + ε)
    sgd:                W −= lrate · t^(−texp) · G

With texp = vexp = ½ the adagrad step is the classic lrate · G / √ΣG².
The link, chosen once per fit, is the only thing that differs between tasks
(D = P − Y is the gradient of its log loss in Z either way):

    sigmoid (multilabel, K independent categories):
        P = σ(Z),                           loss = Σ_ik softplus(z_ik) − y_ik·z_ik
    softmax (multiclass, one class per document, Y_B one-hot):
        P_i = exp(z_i − max z_i) / Σ_k exp(z_ik − max z_i),
                                            loss = Σ_i logsumexp(z_i) − z_i·y_i

``step`` returns the minibatch's summed loss, measured before the update.

With a scale R (V × K, e.g. NB log-count ratios; see ``nb_logistic.py``) the
same step trains W′ of the re-parameterisation W = R ∘ W′ (a per-word,
per-category rescaling of the features):

    Z = X_B·(R ∘ W′) + b
    G = R ∘ (X_Bᵀ·D) / m + l2·W′ + l1·sign(W′)     (the chain rule through R ∘ W′)

and the update above applies to W′. Without a scale (R = None) every kernel
runs exactly the code it ran before R existed: numba compiles a separate
specialisation in which the ``R is None`` branches are pruned.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.special import expit, logsumexp, softmax

from mlnb._numba import HAVE_NUMBA, njit, prange

#: the links a kernel can take: sigmoid for multilabel, softmax for multiclass
LINKS = ("sigmoid", "softmax")


def _check_link(link: str) -> None:
    if link not in LINKS:
        raise ValueError(f"link must be one of {LINKS}, got {link!r}")


def _sigmoid_residual(Z, Yb):
    """(σ(Z) − Y_B, Σ softplus(z) − y·z): the multilabel residual and summed log loss."""
    loss = float(np.sum(np.logaddexp(0.0, Z.astype(np.float64))) - np.sum(Z * Yb, dtype=np.float64))
    return expit(Z) - Yb, loss


def _softmax_residual(Z, Yb):
    """(softmax(Z) − Y_B, Σ_i logsumexp(z_i) − z_i·y_i): the multiclass residual and cross-entropy."""
    loss = float(np.sum(logsumexp(Z.astype(np.float64), axis=1)) - np.sum(Z * Yb, dtype=np.float64))
    return softmax(Z, axis=1) - Yb, loss  # scipy's softmax subtracts the row max; stays float32


_SCIPY_RESIDUALS = {"sigmoid": _sigmoid_residual, "softmax": _softmax_residual}


def _update_bias(b, Sb, D, lrate, t, adagrad, texp, vexp, eps):
    gb = D.mean(axis=0)  # (K,)
    scale = lrate * np.float32(t ** (-texp))
    if adagrad:
        Sb += gb * gb
        b -= scale * gb / ((Sb / t) ** vexp + eps)
    else:
        b -= scale * gb


class ScipyKernel:
    """The reference step with scipy.sparse products (one core)."""

    name = "scipy"

    def __init__(self, X: sp.csr_matrix, Y: sp.csr_matrix, batch_size: int, link: str = "sigmoid"):
        _check_link(link)
        self.X, self.Y = X, Y
        self.residual = _SCIPY_RESIDUALS[link]
        self.position = np.zeros(X.shape[1], dtype=np.int64)

    def step(self, rows, W, b, S, Sb, lrate, t, adagrad, texp, vexp, eps, l1, l2, R=None) -> float:
        Xb = self.X[rows]
        m = Xb.shape[0]
        touched = np.zeros(self.X.shape[1], dtype=bool)
        touched[Xb.indices] = True
        cols = np.flatnonzero(touched)
        self.position[cols] = np.arange(cols.size)
        Xs = sp.csr_matrix((Xb.data, self.position[Xb.indices], Xb.indptr), shape=(m, cols.size))
        Wc = W[cols]  # (|cols|, K)
        Rc = None if R is None else R[cols]  # (|cols|, K)
        Z = Xs @ (Wc if Rc is None else Rc * Wc) + b  # (m, K)
        Yb = self.Y[rows].toarray().astype(np.float32)  # (m, K)
        D, loss = self.residual(Z, Yb)  # (m, K)
        G = (Xs.T @ D) / np.float32(m)  # (|cols|, K)
        if Rc is not None:
            G *= Rc
        if l2:
            G += np.float32(l2) * Wc
        if l1:
            G += np.float32(l1) * np.sign(Wc)
        scale = lrate * np.float32(t ** (-texp))
        if adagrad:
            S[cols] += G * G
            W[cols] = Wc - scale * G / ((S[cols] / np.float32(t)) ** np.float32(vexp) + np.float32(eps))
        else:
            W[cols] = Wc - scale * G
        _update_bias(b, Sb, D, lrate, t, adagrad, texp, vexp, eps)
        return loss


if HAVE_NUMBA:

    @njit(cache=True)
    def _transpose_batch(indptr, indices, data, rows, count, slot, touched, col_ptr, col_doc, col_val):
        """Bucket the minibatch's non-zeros by word (CSC of X_B over the touched words)."""
        n_touched = 0
        for ii in range(rows.size):
            r = rows[ii]
            for p in range(indptr[r], indptr[r + 1]):
                j = indices[p]
                if count[j] == 0:
                    slot[j] = n_touched
                    touched[n_touched] = j
                    n_touched += 1
                count[j] += 1
        col_ptr[0] = 0
        for c in range(n_touched):
            col_ptr[c + 1] = col_ptr[c] + count[touched[c]]
            count[touched[c]] = 0  # reused as the fill cursor
        for ii in range(rows.size):
            r = rows[ii]
            for p in range(indptr[r], indptr[r + 1]):
                j = indices[p]
                q = col_ptr[slot[j]] + count[j]
                col_doc[q] = ii
                col_val[q] = data[p]
                count[j] += 1
        for c in range(n_touched):
            count[touched[c]] = 0
        return n_touched

    @njit(parallel=True, cache=True, fastmath=True)
    def _forward_product(indptr, indices, data, rows, W, b, Z, R):
        """Z = X_B·W + b (R None) or X_B·(R ∘ W) + b, parallel over documents."""
        m, K = Z.shape
        for ii in prange(m):
            r = rows[ii]
            for k in range(K):
                Z[ii, k] = b[k]
            for p in range(indptr[r], indptr[r + 1]):
                j = indices[p]
                v = data[p]
                if R is None:  # pruned at compile time, either way
                    for k in range(K):
                        Z[ii, k] += v * W[j, k]
                else:
                    for k in range(K):
                        Z[ii, k] += v * (R[j, k] * W[j, k])

    @njit(parallel=True, cache=True, fastmath=True)
    def _sigmoid_residual_and_loss(rows, y_indptr, y_indices, Z):
        """Z -> σ(Z) − Y_B in place; returns Σ softplus(z) − y·z (the log loss).

        Everything stays float32: a float64 constant here makes this loop ~10× slower.
        """
        m, K = Z.shape
        zero, one = np.float32(0.0), np.float32(1.0)
        losses = np.zeros(m, dtype=np.float32)
        for ii in prange(m):
            r = rows[ii]
            loss = zero
            for q in range(y_indptr[r], y_indptr[r + 1]):
                loss -= Z[ii, y_indices[q]]
            for k in range(K):
                z = Z[ii, k]
                e = np.exp(-np.abs(z))
                loss += max(z, zero) + np.log1p(e)  # softplus(z), no overflow
                s = one / (one + e)
                Z[ii, k] = s if z >= zero else e * s  # σ(z)
            for q in range(y_indptr[r], y_indptr[r + 1]):
                Z[ii, y_indices[q]] -= one
            losses[ii] = loss
        return losses.astype(np.float64).sum()

    @njit(parallel=True, cache=True, fastmath=True)
    def _softmax_residual_and_loss(rows, y_indptr, y_indices, Z):
        """Z -> softmax(Z) − Y_B in place, row by row; returns Σ_i logsumexp(z_i) − z_i·y_i.

        Subtracting the row's max keeps every exponent ≤ 0 (no overflow) and the sum ≥ 1
        (no log 0). float32 throughout, as in the sigmoid kernel.
        """
        m, K = Z.shape
        zero, one = np.float32(0.0), np.float32(1.0)
        losses = np.zeros(m, dtype=np.float32)
        for ii in prange(m):
            r = rows[ii]
            loss = zero
            for q in range(y_indptr[r], y_indptr[r + 1]):
                loss -= Z[ii, y_indices[q]]  # − z_i·y_i, before Z is overwritten
            top = Z[ii, 0]
            for k in range(1, K):
                top = max(top, Z[ii, k])
            total = zero
            for k in range(K):
                e = np.exp(Z[ii, k] - top)
                Z[ii, k] = e
                total += e
            loss += top + np.log(total)  # logsumexp(z_i)
            inv_total = one / total
            for k in range(K):
                Z[ii, k] *= inv_total  # softmax(z_i)
            for q in range(y_indptr[r], y_indptr[r + 1]):
                Z[ii, y_indices[q]] -= one
            losses[ii] = loss
        return losses.astype(np.float64).sum()

    _NUMBA_RESIDUALS = {"sigmoid": _sigmoid_residual_and_loss, "softmax": _softmax_residual_and_loss}

    @njit(parallel=True, cache=True, fastmath=True)
    def _backward_update(W, S, G, D, lrate, n_touched, touched, col_ptr, col_doc, col_val, m, step,
                         t, adagrad, vexp, eps, l1, l2, R):
        """For each touched word j: G_j = (R_j ∘) Σ_i x_ij·D_i / m + regularisation, then update W_j."""
        K = W.shape[1]
        inv_m = np.float32(1.0 / m)
        inv_t = np.float32(1.0 / t)
        step32, eps32, l1_32, l2_32, vexp32 = (np.float32(step), np.float32(eps), np.float32(l1),
                                               np.float32(l2), np.float32(vexp))
        square_root = vexp == 0.5  # the default: sqrt is far cheaper than pow
        for c in prange(n_touched):
            j = touched[c]
            g = G[c]
            for k in range(K):
                g[k] = 0.0
            for q in range(col_ptr[c], col_ptr[c + 1]):
                i = col_doc[q]
                v = col_val[q]
                for k in range(K):
                    g[k] += v * D[i, k]
            # separate branch-free loops so that each one vectorises
            for k in range(K):
                g[k] *= inv_m
            if R is not None:
                for k in range(K):
                    g[k] *= R[j, k]
            if l2_32 != 0:
                for k in range(K):
                    g[k] += l2_32 * W[j, k]
            if l1_32 != 0:
                for k in range(K):
                    g[k] += l1_32 * np.sign(W[j, k])
            if not adagrad:
                for k in range(K):
                    W[j, k] -= lrate[k] * step32 * g[k]
            elif square_root:
                for k in range(K):
                    s = S[j, k] + g[k] * g[k]
                    S[j, k] = s
                    W[j, k] -= lrate[k] * step32 * g[k] / (np.sqrt(s * inv_t) + eps32)
            else:
                for k in range(K):
                    s = S[j, k] + g[k] * g[k]
                    S[j, k] = s
                    W[j, k] -= lrate[k] * step32 * g[k] / ((s * inv_t) ** vexp32 + eps32)


class NumbaKernel:
    """The same step as compiled loops on every core."""

    name = "numba"

    def __init__(self, X: sp.csr_matrix, Y: sp.csr_matrix, batch_size: int, link: str = "sigmoid"):
        if not HAVE_NUMBA:  # pragma: no cover
            raise ImportError("numba is not installed: use kernel = 'scipy'")
        _check_link(link)
        self.X, self.Y = X, Y
        self.residual = _NUMBA_RESIDUALS[link]  # chosen once: the step itself never branches on it
        V, K = X.shape[1], Y.shape[1]
        row_nnz = np.sort(np.diff(X.indptr))[::-1]
        max_nnz = max(1, int(row_nnz[:batch_size].sum()))  # the most a minibatch can hold
        max_cols = max(1, min(V, max_nnz))
        self.count = np.zeros(V, dtype=np.int64)
        self.slot = np.zeros(V, dtype=np.int64)
        self.touched = np.zeros(max_cols, dtype=np.int64)
        self.col_ptr = np.zeros(max_cols + 1, dtype=np.int64)
        self.col_doc = np.zeros(max_nnz, dtype=np.int64)
        self.col_val = np.zeros(max_nnz, dtype=np.float32)
        self.G = np.zeros((max_cols, K), dtype=np.float32)
        self.D = np.zeros((min(batch_size, X.shape[0]), K), dtype=np.float32)

    def step(self, rows, W, b, S, Sb, lrate, t, adagrad, texp, vexp, eps, l1, l2, R=None) -> float:
        X, Y = self.X, self.Y
        D = self.D[:rows.size]  # (m, K)
        _forward_product(X.indptr, X.indices, X.data, rows, W, b, D, R)  # D = Z = X_B·(R ∘ W) + b
        loss = self.residual(rows, Y.indptr, Y.indices, D)  # D = link(Z) − Y_B
        n_touched = _transpose_batch(X.indptr, X.indices, X.data, rows, self.count, self.slot,
                                     self.touched, self.col_ptr, self.col_doc, self.col_val)
        _backward_update(W, S, self.G, D, lrate, n_touched, self.touched, self.col_ptr, self.col_doc,
                         self.col_val, rows.size, t ** (-texp), float(t), adagrad, vexp, eps, l1, l2, R)
        _update_bias(b, Sb, D, lrate, t, adagrad, texp, vexp, eps)
        return float(loss)


KERNELS = {"scipy": ScipyKernel, "numba": NumbaKernel}
