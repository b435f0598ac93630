r"""Minibatch kernels of the all-categories logistic regression (see ``logistic.py``).

A kernel takes ONE minibatch — X_B (m × V, CSR float32, sorted indices) and Y_B (m × K, CSR
int8 0/1) — the weights W (V × K) and b (K,), and an updater (``minibatch.Updater``: the rule,
its hyperparameters and its state S, S_b, t), and makes one step in place. Where the minibatch
came from (rows of an in-memory matrix, a buffer of chunks of a stream, a Dask partition) is the
minibatch source's business (``minibatch.py``). Two implementations of one and the same step,
chosen by ``kernel``:

* ``scipy``: scipy.sparse products on the minibatch restricted to the words it touches;
  single-threaded; the reference.
* ``numba``: the same step as compiled loops in two parallel regions per minibatch (below).

Step on minibatch B (m documents; t = step number from 1; lrate per category):

    Z = X_B·W + b                          (m × K)
    D = P − Y_B,  P = link(Z)              (m × K)
    G = X_Bᵀ·D / m                         on the rows of W that B touches (the loss's gradient)
    g_b = 1ᵀ·D / m
    adagrad:  S += G²;  α = lrate · t^(vexp−texp) / (S^vexp + ε)
    rowwise:  S_j += mean_k G_jk²;  α_jk = lrate_k · t^(vexp−texp) / (S_j^vexp + ε)    (S is V × 1)
    sgd:                α = lrate · t^(−texp)
    W ← the regularised step (``regularisation``): e^(−l2·α)·W − α·φ(l2·α)·G when l1 = 0

With texp = vexp = ½ the adagrad step is the classic lrate · G / (√ΣG² + ε). A row of W that B does
not touch takes the step with G = 0, lazily: ``minibatch.Updater`` keeps how far each row is behind,
and region 0 of the numba step (the scipy step: before its product) brings the rows B touches up to
date before they are read, in one closed-form step per row; ``flush`` does so for every row at the
end of a pass. The link, chosen once per fit, is the only thing that differs between tasks
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
    G = R ∘ (X_Bᵀ·D) / m                             (the chain rule through R ∘ W′)

and the update above applies to W′ (regularising W′). Without a scale, R is a 0 × 0 array (``NO_SCALE``), and
without catch-up factors ``factor`` is an empty one (``NO_FACTORS``): the regions test for them once per row
or non-zero, a branch taken the same way throughout a fit, so one compiled combination serves every model
where a None would make numba compile one per combination of the two (four, each seconds to compile).

The numba step: two parallel regions (three when regularised per coordinate), claimed dynamically
---------------------------------------------------------------------------------
On a busy machine a thread of a parallel region is regularly descheduled, and
every region ends by waiting for all its threads. So a step enters only two
regions (and, with l1 or l2 > 0, a region 0 before them: for each document, the cuts below
and the catch-up of the rows it holds that are behind, each row caught up once, by the worker
whose atomic exchange claims it; with row-wise AdaGrad and one learning rate, a row's catch-up
is one factor, computed in region 1 and applied on the fly, and there is no region 0),
and the threads of each claim their work in small pieces from a shared
atomic counter, so that a late thread finds the work done by the others instead
of holding half of it:

1. documents: z_i = b + x_i·W, d_i = link(z_i) − y_i and the loss of each
   document, fused (z_i never leaves the cache); and where each document's
   sorted row crosses into each word block (``cuts``).
2. word blocks (contiguous ranges of word ids with about equal numbers of
   non-zeros): for each word j of the block, g_j = Σ_i x_ij·d_i over the
   documents in minibatch order, then the update of W_j (and S_j), fused. Each
   thread accumulates in its own G, one block in size and reused block after
   block, so it stays in the core's cache; X_B is never transposed (the former
   design's serial transpose was a large share of a pass; experiments/bench_lr_floor.py).

Rows of W (and S, R) are read in the random order of the words: the kernels
prefetch them a few non-zeros (or words) ahead, so that several are on their way
from memory at once. Region 0 catches up the rows it claims a few claims later,
their rows prefetched at the claim. The links use ``_float32_math``'s exp and
log1p, plain arithmetic that runs 16 categories at a time, instead of one C
library call per value. (Each measured by experiments/bench_lr_floor.py and
experiments/bench_lr_regularisation.py.)

Every document's z_i and d_i and every word's g_j is summed by one thread in a
fixed order (words in order of position, documents in minibatch order), so the
result does not depend on the number of threads or on who claimed what (a row's
catch-up and update read and write that row only).

Which number of threads: ``ThreadPolicy`` runs small steps on one thread (two
region entries cost more than they save) and otherwise measures: it keeps the
recent seconds per unit of work at one thread and at all threads, uses the
faster and probes the other now and then, so that with another process on the
cores a fit falls back to one thread instead of waiting for descheduled threads.
"""

from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp
from scipy.special import expit, logsumexp, softmax

from mlnb._kernels.jit import HAVE_NUMBA, IEEE, njit, prange
from mlnb.models.logistic.regularisation import regularised_step

#: the links a kernel can take: sigmoid for multilabel, softmax for multiclass
LINKS = ("sigmoid", "softmax")
#: the numba regions' "no scale R" and "no catch-up factors" (see the module's docstring): empty arrays of the
#: present ones' types, so that one compiled combination serves both
NO_SCALE = np.empty((0, 0), dtype=np.float32)
NO_FACTORS = np.empty(0, dtype=np.float32)


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


if HAVE_NUMBA:

    @njit(cache=True)
    def _column_means(D):
        """(Σ_i D_i) / m in float32, the rows added in order: ``D.mean(axis=0)``'s bits for K ≥ 2, where numpy
        adds row by row (for K = 1 it sums pairwise), in one compiled call instead of numpy's reduction
        machinery, once per minibatch and outside the parallel regions.

        Why a kernel: numpy's bits in one compiled call, where numpy's reduction machinery lay outside the parallel
        regions in every minibatch. Measured by experiments/bench_serial.py (the LR pass)."""
        m, K = D.shape
        out = np.zeros(K, dtype=np.float32)
        for i in range(m):
            for k in range(K):
                out[k] += D[i, k]
        for k in range(K):
            out[k] = out[k] / np.float32(m)
        return out

    @njit(cache=True)
    def _adagrad_bias_step(b, Sb, gb, lrate, tau, eps):
        """``_update_bias``'s AdaGrad step with vexp = ½, numpy's float32 operations in numpy's order (its
        float32 power S_b^0.5 is the square root, bit for bit): S_b += g_b², and where S_b > 0,
        b −= (lrate·τ)·g_b / (√S_b + ε).

        Why a kernel: numpy's float32 operations in one compiled call, where numpy's calls lay outside the parallel
        regions in every minibatch. Measured by experiments/bench_serial.py (the LR pass)."""
        for k in range(b.size):
            Sb[k] += gb[k] * gb[k]
            if Sb[k] > 0:
                b[k] -= (lrate[k] * tau) * gb[k] / (np.sqrt(Sb[k]) + eps)


def _update_bias(b, Sb, D, lrate, tau, adagrad, vexp, eps):
    """g_b = 1ᵀ·D / m;  adagrad: S_b += g_b², b −= lrate·τ·g_b / (S_b^vexp + ε) (no step while S_b = 0);
    sgd: b −= lrate·τ·g_b. Compiled where the bits are numpy's (K ≥ 2 for the mean, vexp = ½ for the step):
    numpy's dozen calls a minibatch lay outside the parallel regions (experiments/bench_serial.py)."""
    compiled = HAVE_NUMBA and D.ndim == 2 and D.shape[1] > 1 and D.dtype == np.float32 and D.shape[0] > 0
    gb = _column_means(D) if compiled else D.mean(axis=0)  # (K,)
    if compiled and adagrad and vexp == 0.5 and b.dtype == Sb.dtype == np.float32 \
            and np.asarray(lrate).dtype == np.float32 and np.shape(lrate) == b.shape:
        _adagrad_bias_step(b, Sb, gb, lrate, np.float32(tau), np.float32(eps))
        return
    scale = lrate * np.float32(tau)
    if adagrad:
        Sb += gb * gb
        with np.errstate(divide="ignore", invalid="ignore"):
            b -= np.where(Sb > 0, scale * gb / (Sb ** np.float32(vexp) + np.float32(eps)), np.float32(0.0))
    else:
        b -= scale * gb


def step_sizes(S_rows, lrate, adagrad: bool, vexp: float, eps: float) -> np.ndarray:
    """c = lrate / (S^vexp + ε) (adagrad; 0 where S = 0: a coordinate with no gradient yet takes no step) or
    lrate (sgd), per coordinate of the given rows (float32): a coordinate's step is α = c·τ_t."""
    if not adagrad:
        return np.broadcast_to(lrate, S_rows.shape).astype(np.float32)
    with np.errstate(divide="ignore"):
        return np.where(S_rows > 0, lrate / (S_rows ** np.float32(vexp) + np.float32(eps)), np.float32(0.0))


def flush_rows(W, updater) -> None:
    """Regularise every row of W up to the updater's T (numpy; ``NumbaKernel.flush`` compiles it)."""
    if not updater.regularised:
        updater.T_last[:] = updater.T
        return
    behind = np.flatnonzero(updater.T_last < updater.T)
    if behind.size:
        S_rows = updater.S[behind] if updater.adagrad else np.zeros((behind.size, W.shape[1]), np.float32)
        u = step_sizes(S_rows, updater.lrate, updater.adagrad, updater.vexp, updater.epsilon) * \
            (updater.T - updater.T_last[behind]).astype(np.float32)[:, None]
        W[behind] = regularised_step(W[behind], 0, u, updater.l1, updater.l2)
    updater.T_last[:] = updater.T


class ScipyKernel:
    """The reference step with scipy.sparse products (one core). ``fresh`` is taken as NumbaKernel takes
    it, and ignored: the reference flush visits every row."""

    name = "scipy"

    def __init__(self, n_features: int, n_categories: int, link: str = "sigmoid", word_counts=None,
                 fresh: bool = False):
        _check_link(link)
        self.residual = _SCIPY_RESIDUALS[link]
        self.position = np.zeros(n_features, dtype=np.int64)

    def release(self) -> None:
        """Nothing to free (the interface of ``NumbaKernel.release``)."""

    def weights_overflowed(self, W) -> bool:
        """Whether W holds an infinite or NaN weight (asked once per pass)."""
        return not np.isfinite(W).all()

    def flush(self, W, updater) -> None:
        """Regularise every row up to now (the end of a pass; see ``Updater``)."""
        flush_rows(W, updater)

    def step(self, X_B: sp.csr_matrix, Y_B: sp.csr_matrix, W, b, updater, R=None) -> float:
        tau, before = updater.advance()
        lrate, adagrad = updater.lrate, updater.adagrad
        m = X_B.shape[0]
        touched = np.zeros(X_B.shape[1], dtype=bool)
        touched[X_B.indices] = True
        cols = np.flatnonzero(touched)
        self.position[cols] = np.arange(cols.size)
        Xs = sp.csr_matrix((X_B.data, self.position[X_B.indices], X_B.indptr), shape=(m, cols.size))
        S_rows = updater.S[cols] if adagrad else None
        if updater.regularised:  # catch up on the steps these rows missed, before they are read
            u = step_sizes(S_rows if adagrad else np.zeros((cols.size, W.shape[1]), np.float32), lrate, adagrad,
                           updater.vexp, updater.epsilon) * (before - updater.T_last[cols]).astype(np.float32)[:, None]
            W[cols] = regularised_step(W[cols], 0, u, updater.l1, updater.l2)
        Wc = W[cols]  # (|cols|, K)
        Rc = None if R is None else R[cols]  # (|cols|, K)
        Z = Xs @ (Wc if Rc is None else Rc * Wc) + b  # (m, K)
        Yb = Y_B.toarray().astype(np.float32)  # (m, K)
        D, loss = self.residual(Z, Yb)  # (m, K)
        G = (Xs.T @ D) / np.float32(m)  # (|cols|, K): the loss's gradient only
        if Rc is not None:
            G *= Rc
        if adagrad:
            S_rows += (G * G).sum(axis=1, keepdims=True) / np.float32(G.shape[1]) if updater.rowwise else G * G
            updater.S[cols] = S_rows
        alpha = step_sizes(S_rows if adagrad else np.zeros_like(G), lrate, adagrad, updater.vexp,
                           updater.epsilon) * np.float32(tau)  # (|cols|, K)
        W[cols] = regularised_step(Wc, G, alpha, updater.l1, updater.l2)
        updater.T_last[cols] = updater.T
        _update_bias(b, updater.Sb, D, lrate, tau, adagrad, updater.vexp, updater.epsilon)
        return loss


class ThreadPolicy:
    """The number of threads of each numba step: 1 or ``available`` (the caller's numba setting).

    A step of less than ``small_work`` units (≈ non-zeros × categories) runs on one thread: two
    region entries would cost more than they save. For the others the policy keeps, for each of
    the two counts, the median seconds per unit of work of its last three steps (a median, so
    that one descheduled step or the first call's compilation does not decide), uses the faster
    and runs the other once every ``probe_every`` steps, so that it notices the machine getting
    busier or quieter. Results do not depend on the choice (see the module docstring), only time.
    """

    small_work = 200_000
    probe_every = 32
    window = 3

    def __init__(self):
        self.recent: dict[int, list[float]] = {}  # threads -> seconds per unit of work, last steps
        self.last_step: dict[int, int] = {}  # threads -> the step that last used it
        self.steps = 0

    def choose(self, work: float, available: int) -> int:
        self.steps += 1
        if available <= 1 or work < self.small_work:
            return 1
        for threads in (available, 1):  # each measured twice before any comparison
            if len(self.recent.get(threads, ())) < 2:
                return threads
        cost = {threads: sorted(times)[len(times) // 2] for threads, times in self.recent.items()}
        best = min((available, 1), key=cost.__getitem__)
        other = 1 if best == available else available
        return other if self.steps - self.last_step[other] >= self.probe_every else best

    def record(self, threads: int, work: float, seconds: float) -> None:
        if work < self.small_work:
            return
        self.last_step[threads] = self.steps
        if self.steps == 1:  # the first call may include numba's compilation or cache load
            return
        times = self.recent.setdefault(threads, [])
        times.append(seconds / work)
        del times[:-self.window]


#: how many non-zeros (forward) or words (update) ahead the numba kernel prefetches rows of W (S, R)
PREFETCH_AHEAD = 8


if HAVE_NUMBA:
    import numba

    from mlnb._kernels.atomic import claim as _claim
    from mlnb._kernels.atomic import exchange as _exchange
    from mlnb._kernels.prefetch import prefetch as _prefetch
    from mlnb.models._float32_math import exp_nonpositive, log1p_unit
    from mlnb.models.logistic.regularisation import (LINEAR_BELOW, regularised_row, step_with_l1, uniform_step_terms,
                                             uniform_step_terms_lanes)

    @njit(cache=True)
    def _prefetch_row(matrix, row):
        """Prefetch row ``row`` of a C-contiguous float32 matrix, one 64-byte line at a time.

        Why a kernel: asks for a row of W ahead of its turn from inside the region loops. Measured by
        experiments/bench_lr_floor.py."""
        for column in range(0, matrix.shape[1], 16):
            _prefetch(matrix, row, column)

    @njit(cache=True, fastmath=IEEE, error_model="numpy")
    def _forward_row(indptr, indices, data, i, W, b, R, D, factor):
        """D_i = z_i = b + Σ_p x_ip·W_j (R empty) or b + Σ_p x_ip·(R_j ∘ W_j); with ``factor`` (V,), x_ip·f_j
        instead of x_ip (``factor`` empty: x_ip): row j of W is f_j·W_j, a catch-up computed in region 1 and
        applied in region 2.

        W's rows are read in a random order: each is prefetched ``PREFETCH_AHEAD`` non-zeros early,
        so that several are on their way from memory at once (about halves the time).

        Why a kernel: a document's scores from its non-zeros and W's rows, fused with the link so that z never
        leaves the cache, where scipy's product writes Z for the whole minibatch. Measured by
        experiments/bench_lr_floor.py."""
        K = D.shape[1]
        nnz = indptr[D.shape[0]]
        scaled, factored = R.shape[0] != 0, factor.shape[0] != 0
        for k in range(K):
            D[i, k] = b[k]
        for p in range(indptr[i], indptr[i + 1]):
            if p + PREFETCH_AHEAD < nnz:
                _prefetch_row(W, indices[p + PREFETCH_AHEAD])
                if scaled:
                    _prefetch_row(R, indices[p + PREFETCH_AHEAD])
            j = indices[p]
            v = data[p] * factor[j] if factored else data[p]
            if not scaled:
                for k in range(K):
                    D[i, k] += v * W[j, k]
            else:
                for k in range(K):
                    D[i, k] += v * (R[j, k] * W[j, k])

    @njit(cache=True, fastmath=IEEE, error_model="numpy")
    def _sum_in_order(terms):
        """Σ_k terms[k], left to right in float32 (the same bits however the caller vectorised).

        Why a kernel: a sum in a fixed order that the callers' vector loops cannot reorder. Measured by
        experiments/bench_lr_floor.py."""
        total = np.float32(0.0)
        for k in range(terms.size):
            total += terms[k]
        return total

    @njit(cache=True, fastmath=IEEE, error_model="numpy")
    def _sigmoid_row(y_indptr, y_indices, i, D, terms):
        """D_i: z_i -> σ(z_i) − y_i in place; returns Σ_k softplus(z_ik) − y_ik·z_ik.

        Everything stays float32: a float64 constant here would take the loop out of float32 lanes. exp and
        log1p are ``_float32_math``'s, so that the loop over categories runs in vector lanes;
        the softplus terms go to ``terms`` (K, the worker's scratch) and are summed in order after.

        Why a kernel: a row's link and loss in float32 vector lanes, fused with its forward product. Measured by
        experiments/bench_lr_floor.py.
        """
        K = D.shape[1]
        zero, one = np.float32(0.0), np.float32(1.0)
        loss = zero
        for q in range(y_indptr[i], y_indptr[i + 1]):
            loss -= D[i, y_indices[q]]
        for k in range(K):
            z = D[i, k]
            e = exp_nonpositive(-np.abs(z))
            terms[k] = max(z, zero) + log1p_unit(e)  # softplus(z), no overflow
            s = one / (one + e)
            D[i, k] = s if z >= zero else e * s  # σ(z)
        loss += _sum_in_order(terms)
        for q in range(y_indptr[i], y_indptr[i + 1]):
            D[i, y_indices[q]] -= one
        return loss

    @njit(cache=True, fastmath=IEEE, error_model="numpy")
    def _softmax_row(y_indptr, y_indices, i, D, terms):
        """D_i: z_i -> softmax(z_i) − y_i in place; returns logsumexp(z_i) − z_i·y_i.

        Subtracting the row's max keeps every exponent ≤ 0 (no overflow) and the sum ≥ 1
        (no log 0). float32 throughout, as in the sigmoid row; ``terms`` is unused.

        Why a kernel: a row's link and loss in float32, fused with its forward product. No experiments/ script times
        a multiclass pass; the multiclass fits of experiments/lr_objective.py run it.
        """
        K = D.shape[1]
        zero, one = np.float32(0.0), np.float32(1.0)
        loss = zero
        for q in range(y_indptr[i], y_indptr[i + 1]):
            loss -= D[i, y_indices[q]]  # − z_i·y_i, before D_i is overwritten
        top = D[i, 0]
        for k in range(1, K):
            top = max(top, D[i, k])
        for k in range(K):
            D[i, k] = exp_nonpositive(D[i, k] - top)
        total = _sum_in_order(D[i])
        loss += top + np.log(total)  # logsumexp(z_i)
        inv_total = one / total
        for k in range(K):
            D[i, k] *= inv_total  # softmax(z_i)
        for q in range(y_indptr[i], y_indptr[i + 1]):
            D[i, y_indices[q]] -= one
        return loss

    @njit(cache=True)
    def _cut_row(indptr, indices, i, first_words, cuts):
        """cuts[β, i] = the first position of row i whose word is ≥ first_words[β], the first word of
        block β (rows are sorted); cuts[B, i] = the end of row i.

        Why a kernel: a document's cuts by binary searches while its row is in cache. Measured by
        experiments/bench_lr_floor.py."""
        p, end = indptr[i], indptr[i + 1]
        for block in range(first_words.size):
            while p < end and indices[p] < first_words[block]:
                p += 1
            cuts[block, i] = p
        cuts[first_words.size, i] = end

    @njit(parallel=True, cache=True, fastmath=IEEE, error_model="numpy")
    def _documents_region(indptr, indices, data, y_indptr, y_indices, W, b, R, softmax_link, D, losses,
                          first_words, cuts, with_cuts, counters, n_threads, docs_per_piece, terms, factor, S, T_last,
                          T_before, lrate, vexp, eps, l2):
        """Region 1: D_i = link(b + x_i·(R ∘)W) − y_i, losses[i], and (``with_cuts``: unless region 0
        made them) the cuts of row i, for every document i; pieces of ``docs_per_piece`` documents
        claimed from counters[0]; terms[w] is worker w's scratch row (K).

        With ``factor`` (V,) (row-wise AdaGrad with one learning rate, l1 = 0: the catch-up of a row is one
        factor, e^(−l2·α_j), α_j = lrate·(T_before − T_last[j])/(S_j^vexp + ε)), region 0 is not run: the first
        worker to meet a row that is behind, with factor[j] still 1, stores its factor (a worker that meets it
        at the same time stores the same bits: it is a function of the row's S and T_last, which no one writes
        here); x_ij is multiplied by it, and region 2 scales W_j by it before the row's step and resets it to 1
        (``_rowwise_step``). So the skipped steps of a row cost one exponential, and no pass over W's rows: the
        rows of a piece that are behind are listed, their α computed, and their factors in vector lanes
        (``uniform_step_terms_lanes``; 1 where S_j = 0: no gradient yet, no step).

        Why a kernel: every document's product, link and loss in one parallel region of claimed pieces, where
        scipy's products run on one core and write Z and D in separate passes. Measured by
        experiments/bench_lr_floor.py."""
        m = D.shape[0]
        n_pieces = (m + docs_per_piece - 1) // docs_per_piece
        one = np.float32(1.0)
        eps32, l2_32, vexp32 = np.float32(eps), np.float32(l2), np.float32(vexp)
        square_root = vexp == 0.5
        longest = 0  # the most non-zeros of a piece
        factored = factor.shape[0] != 0
        if factored:
            for piece in range(n_pieces):
                longest = max(longest, indptr[min(m, (piece + 1) * docs_per_piece)] - indptr[piece * docs_per_piece])
        counters[0] = 0
        for worker in prange(n_threads):
            scratch = terms[worker]
            pending = np.empty(longest, dtype=np.int64)
            pending_alpha = np.empty(longest, dtype=np.float32)
            pending_factor = np.empty(longest, dtype=np.float32)
            pending_s = np.empty(longest, dtype=np.float32)
            unused = np.empty(longest, dtype=np.float32)
            while True:
                piece = _claim(counters, 0)
                if piece >= n_pieces:
                    break
                first, end = piece * docs_per_piece, min(m, (piece + 1) * docs_per_piece)
                if factored:
                    # the piece's words that are behind and have no factor yet, listed without a branch (which of
                    # them are behind is random: a branch per word would be mispredicted ~40 % of the time; a word
                    # of two of the piece's documents may be listed twice, and gets the same bits twice)
                    n = 0
                    for p in range(indptr[first], indptr[end]):
                        j = indices[p]
                        pending[n] = j
                        n += (T_last[j] < T_before) & (factor[j] == one)
                    for q in range(n):  # gathered, then α in vector lanes (a square root and a division each)
                        j = pending[q]
                        pending_s[q] = S[j, 0]
                        pending_alpha[q] = np.float32(T_before - T_last[j])
                    for q in range(n):
                        pending_alpha[q] = _row_step(pending_s[q], lrate[0], pending_alpha[q], square_root, vexp32,
                                                     eps32)
                    uniform_step_terms_lanes(pending_alpha, l2_32, pending_factor, unused, n)
                    for q in range(n):
                        factor[pending[q]] = pending_factor[q]
                for i in range(first, end):
                    _forward_row(indptr, indices, data, i, W, b, R, D, factor)
                    if softmax_link:
                        losses[i] = _softmax_row(y_indptr, y_indices, i, D, scratch)
                    else:
                        losses[i] = _sigmoid_row(y_indptr, y_indices, i, D, scratch)
                    if with_cuts:
                        _cut_row(indptr, indices, i, first_words, cuts)
        total = 0.0  # a serial float64 sum: exact for float32 terms of similar size, in any order
        for i in range(m):
            total += losses[i]
        return total

    @njit(cache=True, fastmath=IEEE, error_model="numpy")
    def _step_sizes_row(S, j, lrate, adagrad, rowwise, square_root, vexp, eps, scale, out):
        """out = scale · c_j, c_jk = lrate_k / (S_jk^vexp + ε) (adagrad; 0 while S_jk = 0: no gradient yet,
        no step), lrate_k · (1 / (S_j^vexp + ε)) (rowwise: S is V × 1) or lrate_k (sgd).

        Why a kernel: a row's step sizes in a vector loop inside the update and catch-up loops. Measured by
        experiments/bench_lr_regularisation.py."""
        K = out.shape[0]
        zero = np.float32(0.0)
        if rowwise:
            per = _row_step(S[j, 0], np.float32(1.0), scale, square_root, vexp, eps)
            for k in range(K):
                out[k] = lrate[k] * per
        elif not adagrad:
            for k in range(K):
                out[k] = lrate[k] * scale
        elif square_root:
            for k in range(K):
                out[k] = lrate[k] * scale / (np.sqrt(S[j, k]) + eps) if S[j, k] > zero else zero
        else:
            for k in range(K):
                out[k] = lrate[k] * scale / (S[j, k] ** vexp + eps) if S[j, k] > zero else zero

    @njit(cache=True, fastmath=IEEE, error_model="numpy")
    def _mean_square(g):
        """(1/K)·Σ_k g_k², float32, summed in eight lanes (k mod 8) and then the lanes in a fixed order: the
        same bits on every machine and thread count, and a vector loop instead of K dependent additions.

        Why a kernel: a vector loop in a fixed order inside the row-wise update. Measured by
        experiments/bench_lr_floor.py."""
        K = g.size
        a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = np.float32(0.0)
        whole = K - K % 8
        for k in range(0, whole, 8):
            a0 += g[k] * g[k]
            a1 += g[k + 1] * g[k + 1]
            a2 += g[k + 2] * g[k + 2]
            a3 += g[k + 3] * g[k + 3]
            a4 += g[k + 4] * g[k + 4]
            a5 += g[k + 5] * g[k + 5]
            a6 += g[k + 6] * g[k + 6]
            a7 += g[k + 7] * g[k + 7]
        rest = np.float32(0.0)
        for k in range(whole, K):
            rest += g[k] * g[k]
        return (((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7)) + rest) / np.float32(K)

    @njit(cache=True, fastmath=IEEE, error_model="numpy")
    def _step_denominator(s, square_root, vexp, eps):
        """S^vexp + ε (√S + ε for the default vexp = ½: far cheaper than pow), float32.

        Why a kernel: inlined into the step of every row. Measured by experiments/bench_lr_floor.py."""
        return (np.sqrt(s) if square_root else s ** vexp) + eps

    @njit(cache=True, fastmath=IEEE, error_model="numpy", inline="always")
    def _row_step(s, lrate, time, square_root, vexp, eps):
        """α = lrate·time/(s^vexp + ε): the step, over ``time`` of the schedule (a minibatch's τ, or the time a
        row is behind), of a row whose AdaGrad sum is s (row-wise AdaGrad); 0 while s = 0 (no gradient yet,
        no step). float32.

        Why a kernel: inlined into the updates and catch-ups of every row. Measured by
        experiments/bench_lr_floor.py."""
        return lrate * (time / _step_denominator(s, square_root, vexp, eps)) if s > np.float32(0.0) else np.float32(0.0)

    @njit(cache=True, fastmath=IEEE, error_model="numpy")
    def _row_catch_up_factor(S, j, lrate, behind, square_root, vexp, eps, l2):
        """e^(−l2·α_j), α_j = lrate·behind/(S_j^vexp + ε): the catch-up of row j for ``behind`` of the schedule's
        time under row-wise AdaGrad with one learning rate (``uniform_step_terms``' shrink); 1 while S_j = 0
        (no gradient yet, no step).

        Why a kernel: a row's catch-up as one factor, computed where the row is read. Measured by
        experiments/bench_lr_regularisation.py."""
        return uniform_step_terms(_row_step(S[j, 0], lrate, behind, square_root, vexp, eps), l2)[0]

    @njit(cache=True)
    def _all_equal(values):
        """Whether every value equals the first (one learning rate for every category).

        Why a kernel: asked by the regions themselves, which stay in compiled code. Measured by
        experiments/bench_lr_regularisation.py."""
        for k in range(1, values.size):
            if values[k] != values[0]:
                return False
        return True

    @njit(cache=True, fastmath=IEEE, error_model="numpy", inline="always")
    def _rowwise_alpha(S, g, j, lrate, tau, square_root, vexp, eps, R, scaled):
        """The first half of the default rule's step (row-wise AdaGrad, one learning rate): g = R_j ∘ g
        (``scaled``), S_j += mean_k g_k², and the row's one step α = lrate·τ/(S_j^vexp + ε) (0 while S_j = 0: no
        step yet).

        Why a kernel: the default rule's step size for a row, inlined into the words region. Measured by
        experiments/bench_lr_floor.py."""
        if scaled:
            for k in range(g.size):
                g[k] *= R[j, k]
        s = S[j, 0] + _mean_square(g)
        S[j, 0] = s
        return _row_step(s, lrate, tau, square_root, vexp, eps)

    @njit(cache=True, fastmath=IEEE, error_model="numpy", inline="always")
    def _rowwise_step(W, g, j, alpha, shrink, step, l1, l2, factor, onward):
        """The second half: W_j ← W_j − α·g (l1 = l2 = 0), else ``regularisation``'s step with one
        α, W_j ← e^(−y)·(f_j·W_j) − α·φ(y)·g with l1 = 0, y = l2·α, shrink = e^(−y) and step = α·φ(y)
        (``uniform_step_terms``, computed for a block's rows at once), f_j = factor[j] the row's catch-up that
        region 1 computed (then reset to 1; 1 without ``factor``); with l1 > 0 ``_rowwise_step_l1`` (``onward``:
        K scratch).

        Why a kernel: the default rule's regularised step of a row, inlined into the words region. Measured by
        experiments/bench_lr_regularisation.py."""
        K = W.shape[1]
        if l1 != 0:
            _rowwise_step_l1(W, g, j, alpha, shrink, step, l1, l2, onward)
        elif l2 != 0:
            before = np.float32(1.0)
            if factor.shape[0] != 0:
                before = factor[j]
                factor[j] = np.float32(1.0)
            for k in range(K):
                W[j, k] = shrink * (before * W[j, k]) - step * g[k]
        else:
            for k in range(K):
                W[j, k] -= alpha * g[k]

    @njit(cache=True, fastmath=IEEE, error_model="numpy", inline="always")
    def _rowwise_step_l1(W, g, j, alpha, shrink, step, l1, l2, onward):
        """``regularisation``'s step with l1 > 0 for a row with one α (shrink = e^(−y), step = α·φ(y),
        y = l2·α; not read when l2 = 0), in a vector loop: on the side σ of w (from w = 0, the side −sign(g) when |g| > l1; else σ = 0),
        r = |w| moves to r·e^(−y) − (σ·g + l1)·α·φ(y); where that passes 0, w stops at 0 when |g| ≤ l1, and
        otherwise goes on to the other side: with l2 = 0 for the rest of the step, α − r/c, in the same loop;
        with l2 > 0 those coordinates (marked in ``onward``, K) take the float64 step (``step_with_l1``, which
        finds the time w reaches 0, a log1p) after the loop. The float32 closed form agrees with the float64 step
        to float32 rounding (tested against a dense float64 oracle); per coordinate in float64 it cost several
        passes' time (measured by experiments/bench_lr_regularisation.py).

        Why a kernel: the L1 step of a row in one float32 vector loop, where a coordinate-by-coordinate float64 step
        would run for every coordinate. Measured by experiments/bench_lr_regularisation.py (its L1 setting)."""
        K = W.shape[1]
        zero, one, tiny = np.float32(0.0), np.float32(1.0), np.float32(1e-30)
        n_onward = 0
        if l2 == 0:  # y = 0: 0 is reached at s0 = r/c, and the rest of the step, α − s0, is spent on the other side
            for k in range(K):
                w, gk = W[j, k], g[k]
                side = one if w > zero else -one if w < zero else -one if gk > l1 else one if gk < -l1 else zero
                r, c = abs(w), side * gk + l1
                end = r - c * alpha
                through = end < zero  # (σ = 0: end = −l1·α < 0, and w stays 0)
                beyond = (abs(gk) - l1) * (alpha - r / max(c, tiny))  # |w| at the end, on the side −sign(g)
                W[j, k] = (-beyond if gk > zero else beyond) if through & (abs(gk) > l1) else \
                    zero if through else side * end
            return
        for k in range(K):
            w, gk = W[j, k], g[k]
            side = one if w > zero else -one if w < zero else -one if gk > l1 else one if gk < -l1 else zero
            end = abs(w) * shrink - (side * gk + l1) * step
            through = end < zero  # (σ = 0: end = −l1·α·φ(y) < 0, and w stays 0)
            goes_on = through & (abs(gk) > l1)
            onward[k] = one if goes_on else zero
            n_onward += goes_on
            W[j, k] = w if goes_on else zero if through else side * end
        if n_onward:
            for k in range(K):
                if onward[k] != zero:
                    W[j, k] = np.float32(step_with_l1(np.float64(W[j, k]), np.float64(g[k]), np.float64(alpha),
                                                      np.float64(l1), np.float64(l2)))

    @njit(cache=True, fastmath=IEEE, error_model="numpy")
    def _update_row(W, S, g, alpha, j, lrate, tau, adagrad, rowwise, square_root, vexp, eps, l1, l2, R):
        """g = (R_j ∘) g; adagrad: S_j += g², α = lrate·τ/(S_j^vexp + ε); rowwise: S_j += mean_k g_k² (S is
        V × 1), α_k = lrate_k·(τ/(S_j^vexp + ε)); sgd: α = lrate·τ; α into ``alpha``; then W_j ← W_j − α·g, or
        the regularised step of ``regularisation`` (l1 or l2 > 0), coordinate by coordinate. Not the default
        rule (row-wise with one learning rate): region 2 steps its rows by ``_rowwise_alpha`` and
        ``_rowwise_step``. A coordinate whose gradients have all been 0 (S = 0) takes no step: AdaGrad has no
        step size for it yet.

        Why a kernel: a row's update for the other rules, coordinate by coordinate inside the words region. Measured
        by experiments/bench_lr_floor.py."""
        K = W.shape[1]
        zero = np.float32(0.0)
        # separate branch-free loops so that each one vectorises
        if R.shape[0] != 0:
            for k in range(K):
                g[k] *= R[j, k]
        if rowwise:  # (g is already R_j ∘ g)
            per = _rowwise_alpha(S, g, j, np.float32(1.0), tau, square_root, vexp, eps, R, False)
            for k in range(K):
                alpha[k] = lrate[k] * per
        elif not adagrad:
            for k in range(K):
                alpha[k] = lrate[k] * tau
        elif square_root:
            for k in range(K):
                s = S[j, k] + g[k] * g[k]
                S[j, k] = s
                alpha[k] = lrate[k] * tau / (np.sqrt(s) + eps) if s > zero else zero
        else:
            for k in range(K):
                s = S[j, k] + g[k] * g[k]
                S[j, k] = s
                alpha[k] = lrate[k] * tau / (s ** vexp + eps) if s > zero else zero
        if l1 != 0 or l2 != 0:
            regularised_row(W, j, g, alpha, l1, l2, True)
        else:
            for k in range(K):
                W[j, k] -= alpha[k] * g[k]

    @njit(cache=True, fastmath=IEEE, error_model="numpy")
    def _catch_up_row(W, S, j, lrate, lrate_max, adagrad, rowwise, uniform, square_root, vexp, eps, l1, l2, behind, u):
        """W_j ← the regularised step with G = 0 and α = c_j·behind (``regularisation``), c_jk =
        lrate_k/(S_jk^vexp + ε) (0 while S_jk = 0; sgd: lrate_k). The default (AdaGrad with √, l1 = 0) in one loop:
        W_jk ·= e^(−l2·α_jk), as 1 − l2·α_jk when the row's largest l2·α (from its smallest S) is below
        ``LINEAR_BELOW`` (exact to float32 rounding), else by exp; rowwise with ``uniform`` learning rates:
        one factor for the row (``_row_catch_up_factor``), or with l1 > 0 one soft threshold for the row (the
        flow of the regulariser alone stops at 0); u (K) is scratch for the others.

        Why a kernel: a row's missed steps in one closed-form step, by the cheapest exact form, inside the regions.
        Measured by experiments/bench_lr_regularisation.py."""
        K = W.shape[1]
        if rowwise and uniform and l1 == 0:
            shrink = _row_catch_up_factor(S, j, lrate[0], behind, square_root, vexp, eps, l2)
            for k in range(K):
                W[j, k] *= shrink
        elif rowwise and uniform:  # l1 > 0, g = 0: r = |w| → max(r·e^(−y) − l1·α·φ(y), 0), one α for the row
            zero, one = np.float32(0.0), np.float32(1.0)
            a = _row_step(S[j, 0], lrate[0], behind, square_root, vexp, eps)
            shrink, step = uniform_step_terms(a, l2) if l2 != 0 else (one, a)
            for k in range(K):
                w = W[j, k]
                r = max(abs(w) * shrink - l1 * step, zero)
                W[j, k] = -r if w < zero else r
        elif adagrad and not rowwise and square_root and l1 == 0:
            zero, one, never = np.float32(0.0), np.float32(1.0), np.float32(np.inf)
            smallest = never  # the smallest S > 0 (S = 0: no gradient yet, no step); selects, so loops vectorise
            for k in range(K):
                smallest = min(smallest, S[j, k] if S[j, k] > zero else never)
            if smallest == never:
                return
            scale = l2 * behind
            if scale * lrate_max / (np.sqrt(smallest) + eps) < LINEAR_BELOW:
                for k in range(K):
                    factor = one - scale * lrate[k] / (np.sqrt(S[j, k]) + eps)
                    W[j, k] *= factor if S[j, k] > zero else one
            else:
                for k in range(K):
                    factor = exp_nonpositive(-scale * lrate[k] / (np.sqrt(S[j, k]) + eps))
                    W[j, k] *= factor if S[j, k] > zero else one
        else:
            _step_sizes_row(S, j, lrate, adagrad, rowwise, square_root, vexp, eps, behind, u)
            regularised_row(W, j, u, u, l1, l2, False)

    @njit(parallel=True, cache=True, fastmath=IEEE, error_model="numpy")
    def _catch_up_region(indptr, indices, first_words, cuts, W, S, T_last, T_before, claimed, mark, lrate, adagrad,
                         rowwise, vexp, eps, l1, l2, counters, n_threads, docs_per_piece, scratch):
        """Region 0 (regularised fits): for every document i (pieces of ``docs_per_piece`` claimed from
        counters[2]), the cuts of row i (``_cut_row``), and for each word j of the row that is behind
        (T_last[j] < T_before), the regularised step of the steps row j missed, α = c_j·(T_before −
        T_last[j]), before region 1 reads the row. A row that several documents hold is caught up once,
        by the worker whose atomic exchange of claimed[j] with this step's ``mark`` returned another value;
        T_last is only read here (region 2 sets it), so each row's result does not depend on who took it.
        The rows a worker claims are caught up ``PREFETCH_AHEAD`` claims later, their rows of W (and S)
        asked for at the claim, so that several are on their way from memory at once.

        Why a kernel: the rows a minibatch touches are caught up once each, by whichever worker claims them, in a
        parallel region before they are read, where the scipy step catches them up on one core. Measured by
        experiments/bench_lr_regularisation.py."""
        m = cuts.shape[1]
        n_pieces = (m + docs_per_piece - 1) // docs_per_piece
        eps32, l1_32, l2_32, vexp32 = np.float32(eps), np.float32(l1), np.float32(l2), np.float32(vexp)
        square_root = vexp == 0.5
        lrate_max = np.float32(0.0)
        for k in range(lrate.size):
            lrate_max = max(lrate_max, lrate[k])
        uniform = _all_equal(lrate)
        counters[2] = 0
        for worker in prange(n_threads):
            u = scratch[worker]
            ring = np.empty(PREFETCH_AHEAD, dtype=np.int64)  # claimed rows waiting for their prefetched lines
            ring_behind = np.empty(PREFETCH_AHEAD, dtype=np.float32)
            waiting = 0  # claims so far in this piece; the ring holds the last min(waiting, PREFETCH_AHEAD)
            while True:
                piece = _claim(counters, 2)
                if piece >= n_pieces:
                    break
                waiting = 0
                for i in range(piece * docs_per_piece, min(m, (piece + 1) * docs_per_piece)):
                    _cut_row(indptr, indices, i, first_words, cuts)
                    for p in range(indptr[i], indptr[i + 1]):
                        j = indices[p]
                        if T_last[j] < T_before and claimed[j] != mark and _exchange(claimed, j, mark) != mark:
                            slot = waiting % PREFETCH_AHEAD
                            if waiting >= PREFETCH_AHEAD:  # the oldest claim's lines have had time to arrive
                                _catch_up_row(W, S, ring[slot], lrate, lrate_max, adagrad, rowwise, uniform,
                                              square_root, vexp32, eps32, l1_32, l2_32, ring_behind[slot], u)
                            _prefetch_row(W, j)
                            if adagrad:
                                _prefetch_row(S, j)
                            ring[slot] = j
                            ring_behind[slot] = np.float32(T_before - T_last[j])
                            waiting += 1
                for q in range(max(0, waiting - PREFETCH_AHEAD), waiting):
                    slot = q % PREFETCH_AHEAD
                    _catch_up_row(W, S, ring[slot], lrate, lrate_max, adagrad, rowwise, uniform, square_root, vexp32,
                                  eps32, l1_32, l2_32, ring_behind[slot], u)

    @njit(parallel=True, cache=True, fastmath=IEEE, error_model="numpy")
    def _flush_region(W, S, T_last, T, lrate, adagrad, rowwise, vexp, eps, l1, l2, scratch, stepped):
        """Every row j with T_last[j] < T: the regularised step with G = 0, α = c_j·(T − T_last[j]); T_last = T.
        With AdaGrad a row with stepped[j] = 0 is left as it is: its S is 0, so it has no step size yet and
        its step is no step (skipped without reading its S: most of a small fit's rows).

        Why a kernel: every row brought up to date on every thread at the end of a pass, the rows no step touched
        skipped. Measured by experiments/bench_lr_regularisation.py."""
        V = W.shape[0]
        n_threads = scratch.shape[0]
        eps32, l1_32, l2_32, vexp32 = np.float32(eps), np.float32(l1), np.float32(l2), np.float32(vexp)
        square_root = vexp == 0.5
        lrate_max = np.float32(0.0)
        for k in range(lrate.size):
            lrate_max = max(lrate_max, lrate[k])
        uniform = _all_equal(lrate)
        rows_per_worker = (V + n_threads - 1) // n_threads
        for worker in prange(n_threads):
            u = scratch[worker]
            for j in range(worker * rows_per_worker, min(V, (worker + 1) * rows_per_worker)):
                behind = T - T_last[j]
                if behind > 0 and (stepped[j] or not adagrad):
                    _catch_up_row(W, S, j, lrate, lrate_max, adagrad, rowwise, uniform, square_root, vexp32, eps32,
                                  l1_32, l2_32,
                                  np.float32(behind), u)
                    T_last[j] = T

    _EXPONENT = np.uint32(0x7F800000)  # a float32's exponent bits: all ones for ±inf and NaN

    @njit(cache=True)
    def _exponent_max(W_bits, j):
        """The largest exponent field (bits masked by _EXPONENT) in row j of W viewed as uint32.

        Why a kernel: checks a row for an infinite or NaN weight by its exponent bits while the row is in cache.
        Measured by experiments/bench_lr_floor.py."""
        top = np.uint32(0)
        for k in range(W_bits.shape[1]):
            top = max(top, W_bits[j, k] & _EXPONENT)
        return top

    @njit(parallel=True, cache=True, fastmath=IEEE, error_model="numpy")
    def _words_region(indices, data, cuts, D, W, S, G, slot, touched, lrate, tau, T_after, T_last,
                      adagrad, rowwise, vexp, eps, l1, l2, R, counters, n_threads, W_bits, overflowed, alphas, stepped,
                      factor, row_steps):
        """Region 2: for each word block β (claimed from counters[1]) and each word j in it,
        g_j = Σ_i x_ij·d_i / m (documents in order), then the update of W_j (and S_j), its
        regularisation for this step, T_last[j] = T_after and stepped[j] = 1.

        Worker w accumulates its block's words in its own rows G[w, 0], G[w, 1], … in the order
        they first appear (slot[j], −1 when not in use), listed in touched[w]: a worker's G holds
        one block and is reused block after block, so it stays in the core's cache (and a small
        fit does not spend its time zeroing fresh pages of a G sized for all words).

        overflowed[w] is set to 1 when worker w leaves an infinite or NaN weight in a row it
        updated (W_bits is W viewed as uint32: exponent bits all ones). Only updated rows can
        change, so a pass need not scan all of W afterwards (V × K values: a large share of a small fit;
        experiments/bench_serial.py). Bits, not ``np.isfinite``: under fastmath the compiler
        may assume that no float is infinite or NaN and fold such a test away.

        Why a kernel: each word's gradient and update in one parallel region, summed in a block of G that stays in
        the core's cache, where scipy transposes the minibatch and writes the whole gradient first. Measured by
        experiments/bench_lr_floor.py."""
        m, K = D.shape
        n_blocks = cuts.shape[0] - 1
        inv_m = np.float32(1.0 / m)
        tau32, eps32, l1_32, l2_32, vexp32 = (np.float32(tau), np.float32(eps), np.float32(l1),
                                              np.float32(l2), np.float32(vexp))
        square_root = vexp == 0.5  # the default: sqrt is far cheaper than pow
        uniform = _all_equal(lrate)
        default_step = rowwise and uniform  # one α per row
        scaled = R.shape[0] != 0
        counters[1] = 0
        for worker in prange(n_threads):
            Gw, listed, alpha = G[worker], touched[worker], alphas[worker]
            row_alpha, row_shrink, row_step = row_steps[worker, 0], row_steps[worker, 1], row_steps[worker, 2]
            while True:
                block = _claim(counters, 1)
                if block >= n_blocks:
                    break
                n_words = 0
                for i in range(m):
                    for p in range(cuts[block, i], cuts[block + 1, i]):
                        j = indices[p]
                        v = data[p]
                        c = slot[j]
                        if c < 0:  # the word's first non-zero in this block: g_j = x_ij·d_i (= 0 + x_ij·d_i)
                            c = n_words
                            slot[j] = c
                            listed[c] = j
                            n_words += 1
                            g = Gw[c]
                            for k in range(K):
                                g[k] = v * D[i, k]
                        else:
                            g = Gw[c]
                            for k in range(K):
                                g[k] += v * D[i, k]
                if default_step:  # each row's α, then e^(−y) and α·φ(y) for all of them in vector lanes
                    for c in range(n_words):
                        if c + PREFETCH_AHEAD < n_words:
                            _prefetch_row(S, listed[c + PREFETCH_AHEAD])
                            if scaled:
                                _prefetch_row(R, listed[c + PREFETCH_AHEAD])
                        g = Gw[c]
                        for k in range(K):
                            g[k] *= inv_m
                        row_alpha[c] = _rowwise_alpha(S, g, listed[c], lrate[0], tau32, square_root, vexp32, eps32, R,
                                                      scaled)
                    if l2_32 != 0:
                        uniform_step_terms_lanes(row_alpha, l2_32, row_shrink, row_step, n_words)
                for c in range(n_words):
                    if c + PREFETCH_AHEAD < n_words:
                        ahead = listed[c + PREFETCH_AHEAD]
                        _prefetch_row(W, ahead)
                        if not default_step:
                            if adagrad:
                                _prefetch_row(S, ahead)
                            if scaled:
                                _prefetch_row(R, ahead)
                    j = listed[c]
                    g = Gw[c]
                    if default_step:
                        _rowwise_step(W, g, j, row_alpha[c], row_shrink[c], row_step[c], l1_32, l2_32, factor, alpha)
                    else:
                        for k in range(K):
                            g[k] *= inv_m
                        _update_row(W, S, g, alpha, j, lrate, tau32, adagrad, rowwise, square_root, vexp32, eps32,
                                    l1_32, l2_32, R)
                    T_last[j] = T_after
                    stepped[j] = 1
                    if _exponent_max(W_bits, j) == _EXPONENT:
                        overflowed[worker] = 1
                    slot[j] = -1

    @njit(cache=True)
    def _block_rows(cuts, first_words, n_features):
        """The most distinct words one block can hold in this minibatch: the maximum over blocks β
        of min(non-zeros of β, words of β), the rows of G a worker needs.

        Why a kernel: one pass over the cuts with no numpy temporaries, once per minibatch outside the parallel
        regions. Measured by experiments/bench_lr_floor.py."""
        n_blocks = first_words.size
        rows = 0
        for block in range(n_blocks):
            nnz = 0
            for i in range(cuts.shape[1]):
                nnz += cuts[block + 1, i] - cuts[block, i]
            end = first_words[block + 1] if block + 1 < n_blocks else n_features
            rows = max(rows, min(nnz, end - first_words[block]))
        return rows


def word_blocks(word_counts: np.ndarray, n_blocks: int) -> np.ndarray:
    """The first word id of each block (0 first; the last block ends at V = len(word_counts)):
    contiguous ranges of word ids holding about equal shares of ``word_counts`` (non-zeros)."""
    cumulative = np.cumsum(word_counts, dtype=np.float64)  # (V,)
    targets = cumulative[-1] * np.arange(1, n_blocks) / n_blocks
    inner = np.searchsorted(cumulative, targets, side="right")
    return np.unique(np.concatenate([[0], inner[inner < cumulative.size]])).astype(np.int64)


class NumbaKernel:
    """The same step as compiled loops on every core (two parallel regions per step)."""

    name = "numba"
    #: documents claimed at a time in region 1
    docs_per_piece = 16
    #: word blocks of region 2: enough to balance threads, few enough that cutting rows is cheap
    n_blocks = 32

    def __init__(self, n_features: int, n_categories: int, link: str = "sigmoid", word_counts=None,
                 fresh: bool = False):
        if not HAVE_NUMBA:  # pragma: no cover
            raise ImportError("numba is not installed: use kernel = 'scipy'")
        _check_link(link)
        self.softmax_link = link == "softmax"
        V, K = n_features, n_categories
        self.n_features = V
        counts = np.ones(V) if word_counts is None else np.asarray(word_counts, dtype=np.float64) + 1.0
        self.first_words = word_blocks(counts, min(self.n_blocks, V))  # (B,)
        self.slot = np.full(V, -1, dtype=np.int32)
        self.counters = np.zeros(3, dtype=np.int64)
        self.overflowed = np.zeros(numba.config.NUMBA_NUM_THREADS, dtype=np.int64)  # one flag per worker
        self.policy = ThreadPolicy()
        self.K = K
        # the rows a step of this kernel has updated (1), or may have been before it (all 1 unless the
        # training is ``fresh``: S = 0 everywhere, as a new Updater's); the flush skips the others
        self.stepped = np.zeros(V, dtype=np.uint8) if fresh else np.ones(V, dtype=np.uint8)
        # region 0's claims: claimed[j] = the mark of the last step that caught row j up (marks count the steps)
        self.claimed = np.zeros(V, dtype=np.int64)
        self.mark = 0

    def _grow(self, m: int, workers: int) -> None:
        """Buffers for a minibatch of m documents on ``workers`` threads (a stream's largest minibatch
        is not known in advance: they grow when needed and are reused)."""
        if not hasattr(self, "D") or self.D.shape[0] < m:
            self.D = np.zeros((m, self.K), dtype=np.float32)
            self.losses = np.zeros(m, dtype=np.float32)
            # flat, so that a minibatch's (rows × m) view is C-contiguous whatever m: one compiled layout
            self.cuts = np.zeros((self.first_words.size + 1) * m, dtype=np.int64)
        if not hasattr(self, "terms") or self.terms.shape[0] < workers:
            self.terms = np.zeros((workers, self.K), dtype=np.float32)  # each worker's softplus terms

    def _grow_blocks(self, workers: int, rows: int) -> None:
        """Each worker's rows of G, for blocks of up to ``rows`` distinct words."""
        have = self.G.shape[:2] if hasattr(self, "G") else (0, 0)
        if have[0] < workers or have[1] < rows:
            workers, rows = max(workers, have[0]), max(rows, have[1], 1)
            self.G = np.zeros((workers, rows, self.K), dtype=np.float32)
            self.touched = np.zeros((workers, rows), dtype=np.int64)
            self.row_steps = np.zeros((workers, 3, rows), dtype=np.float32)  # each row's α, e^(−y), α·φ(y)

    def _factor(self, updater):
        """The rows' catch-up factors (V,) float32, all 1 between steps, when a row's catch-up is one factor
        (row-wise AdaGrad, one learning rate, l1 = 0: region 1 computes and applies it, region 2 applies and resets
        it); else None."""
        lrate = updater.lrate
        if not (updater.rowwise and updater.l1 == 0 and _all_equal(lrate)):
            return None
        if not hasattr(self, "factor"):
            self.factor = np.ones(self.n_features, dtype=np.float32)
        return self.factor

    def weights_overflowed(self, W) -> bool:
        """Whether a step since the last call left an infinite or NaN weight in W. The steps flag
        the rows they update; the rest of W is as it was, finite (coef_init and restored states
        are checked), so W itself is not scanned."""
        overflowed = bool(self.overflowed.any())
        self.overflowed[:] = 0
        return overflowed

    def release(self) -> None:
        """Free the work buffers between calls (they grow again at the next step): a fitted model
        keeps its weights and updater state, not the scratch of its last minibatch."""
        for name in ("D", "losses", "cuts", "terms", "G", "touched", "row_steps", "factor"):
            self.__dict__.pop(name, None)

    def __getstate__(self):
        state = self.__dict__.copy()
        for name in ("D", "losses", "cuts", "terms", "G", "touched", "row_steps", "factor"):
            state.pop(name, None)
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        if "stepped" not in state:  # pickled before the kernel kept it: every row may have been stepped
            self.stepped = np.ones(self.n_features, dtype=np.uint8)
        if "claimed" not in state:  # pickled before region 0 claimed rows
            self.claimed, self.mark = np.zeros(self.n_features, dtype=np.int64), 0
        # one flag per worker of THIS process (it may run more threads than the one that pickled)
        flags = np.zeros(max(numba.config.NUMBA_NUM_THREADS, self.overflowed.size), dtype=np.int64)
        flags[0] = self.overflowed.any()
        self.overflowed = flags

    def step(self, X_B: sp.csr_matrix, Y_B: sp.csr_matrix, W, b, updater, R=None) -> float:
        m = X_B.shape[0]
        work = float(X_B.nnz + 8 * m) * self.K
        available = numba.get_num_threads()
        threads = self.policy.choose(work, available)
        self._grow(m, threads)
        tau, before = updater.advance()
        D, losses = self.D[:m], self.losses[:m]
        cuts = self.cuts[:(self.first_words.size + 1) * m].reshape(self.first_words.size + 1, m)
        regularised = updater.regularised
        factor = self._factor(updater) if regularised else None
        started = time.perf_counter()
        if threads != available:
            numba.set_num_threads(threads)
        applied = False  # whether region 2 applied (and reset) the factors region 1 computed
        try:
            if regularised and factor is None:  # region 0: the skipped regularisation of the rows this minibatch
                # reads, and the cuts
                self.mark += 1
                _catch_up_region(X_B.indptr, X_B.indices, self.first_words, cuts, W, updater.S, updater.T_last, before,
                                 self.claimed, self.mark, updater.lrate, updater.adagrad, updater.rowwise, updater.vexp,
                                 updater.epsilon, updater.l1, updater.l2, self.counters, threads, self.docs_per_piece,
                                 self.terms)
            scale = NO_SCALE if R is None else R
            factors = NO_FACTORS if factor is None else factor
            loss = _documents_region(X_B.indptr, X_B.indices, X_B.data, Y_B.indptr, Y_B.indices, W, b, scale,
                                     self.softmax_link, D, losses, self.first_words, cuts,
                                     not regularised or factor is not None, self.counters, threads,
                                     self.docs_per_piece, self.terms, factors, updater.S, updater.T_last, before,
                                     updater.lrate, updater.vexp, updater.epsilon, updater.l2)
            self._grow_blocks(threads, _block_rows(cuts, self.first_words, self.n_features))
            _words_region(X_B.indices, X_B.data, cuts, D, W, updater.S, self.G, self.slot, self.touched,
                          updater.lrate, tau, updater.T, updater.T_last, updater.adagrad, updater.rowwise,
                          updater.vexp, updater.epsilon, updater.l1, updater.l2, scale, self.counters, threads,
                          W.view(np.uint32), self.overflowed, self.terms, self.stepped, factors, self.row_steps)
            applied = True
        finally:
            if threads != available:
                numba.set_num_threads(available)
            if factor is not None and not applied:  # interrupted between the regions: W and T_last are as region 0
                factor[:] = 1  # found them (it only computed factors), so the catch-up is computed again when due
        self.policy.record(threads, work, time.perf_counter() - started)
        _update_bias(b, updater.Sb, D, updater.lrate, tau, updater.adagrad, updater.vexp, updater.epsilon)
        return float(loss)

    def flush(self, W, updater) -> None:
        """Regularise every row up to now (the end of a pass; see ``minibatch.Updater``), on every core."""
        if updater.regularised:
            workers = numba.get_num_threads()
            if not hasattr(self, "terms") or self.terms.shape[0] < workers:
                self.terms = np.zeros((workers, self.K), dtype=np.float32)
            _flush_region(W, updater.S, updater.T_last, updater.T, updater.lrate, updater.adagrad, updater.rowwise,
                          updater.vexp, updater.epsilon, updater.l1, updater.l2, self.terms[:workers], self.stepped)
        updater.T_last[:] = updater.T


KERNELS = {"scipy": ScipyKernel, "numba": NumbaKernel}
