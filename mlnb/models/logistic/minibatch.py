r"""The parts of the minibatch solver around its step kernel, split the way BIDMach splits a learner.

* Minibatch sources — where the minibatches (X_B, Y_B) of one pass come from:

  - ``InMemorySource``: the rows of one CSR matrix, visited in the order ``rng.permutation(n)``
    (a new one every pass, from the trainer's seeded generator) or in order, cut into
    contiguous slices of ``batch_size``;
  - ``ChunkStreamSource``: the chunks of a stream (``make_chunks()`` is called once per pass and
    returns an iterable of chunks, each with ``.X`` (m × V, CSR float32) and ``.Y`` (m × K, CSR
    0/1)), read ``buffer_chunks`` chunks at a time; the documents of a buffer are visited in the
    order ``rng.permutation(n_buffer)`` (or in order) and cut into minibatches of ``batch_size``,
    a short remainder being carried over to the front of the next buffer's first minibatch.

  A minibatch is X_B CSR float32 with sorted int32 indices and Y_B CSR int8, what the kernels of
  ``kernels`` take; only one buffer (plus one minibatch) is in memory at a time.

  What shuffling within a buffer changes. A global permutation makes every minibatch a uniform
  sample of the whole corpus, so consecutive gradients are unbiased and independent; a buffer
  of b documents only mixes documents that are at most b apart in the stream. If the stream is
  in a meaningful order (by date, by source, by category), minibatches from one buffer share it:
  the gradient drifts with the stream (a bias that AdaGrad's early, large steps amplify, and the
  last buffers of a pass pull the weights towards their part of the data), and consecutive
  passes see the same groups of documents together. For a stream already in random order,
  buffer shuffling costs nothing; the larger the buffer, the closer to a global permutation,
  and with a buffer holding the whole stream it *is* the global permutation: the minibatches
  are those of ``InMemorySource`` on the concatenated chunks, drawn from the same generator.

* ``Updater``: the update rule (AdaGrad or SGD), its hyperparameters and its state — the
  AdaGrad sums S (V × K) and S_b (K,) and the step count t — which can be saved and restored.

* ``average_states``: parameter mixing of several trainers' states (for data-parallel training).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable
from itertools import islice
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from mlnb._kernels.csr import PARALLEL_COPY_NONZEROS, copy_rows, row_offsets, row_order
from mlnb._kernels.jit import HAVE_NUMBA
from mlnb.errors import MlnbError

UPDATERS = ("adagrad", "rowwise_adagrad", "sgd")


def sums_shape(rule: str, n_features: int, n_categories: int) -> tuple[int, int] | None:
    """The shape of the AdaGrad sums S of an update rule: V × K (adagrad), V × 1 (rowwise_adagrad: one sum
    per row of W), or None (sgd keeps none)."""
    if rule not in UPDATERS:
        raise MlnbError(f"updater must be one of {UPDATERS}, got {rule!r}")
    return None if rule == "sgd" else (n_features, 1 if rule == "rowwise_adagrad" else n_categories)


class Minibatch(NamedTuple):
    """X_B (m × V, CSR float32, sorted int32 indices) and Y_B (m × K, CSR int8 0/1)."""

    X: sp.csr_matrix
    Y: sp.csr_matrix


def take_rows(A: sp.csr_matrix, rows: np.ndarray) -> sp.csr_matrix:
    """The rows ``rows`` of CSR A (a copy, int32 indices, sorted if A's are)."""
    if not HAVE_NUMBA:  # pragma: no cover
        return A[rows]
    if A.nnz > np.iinfo(np.int32).max and np.diff(A.indptr)[rows].sum() > np.iinfo(np.int32).max:
        raise MlnbError(f"a minibatch of {rows.size} documents holds 2^31 or more non-zeros; lower batch_size")
    indptr, indices, data = copy_rows(A.indptr, A.indices, A.data, rows, np.int32)
    return sp.csr_matrix((data, indices, indptr), shape=(rows.size, A.shape[1]))


#: the most non-zeros of a minibatch (its int32 indptr)
MAX_MINIBATCH_NONZEROS = np.iinfo(np.int32).max
#: about this many of X's non-zeros are copied out of the corpus at once, a group of whole minibatches
#: (``minibatch_views``): 8 MiB of X's values and indices
GROUP_NONZEROS = 1 << 20


def minibatch_views(X: sp.csr_matrix, Y: sp.csr_matrix, order: np.ndarray, bounds: np.ndarray):
    """The minibatches (X_B, Y_B), B = the rows order[bounds[i]:bounds[i + 1]] of X and Y, with the arrays of
    ``take_rows`` (int32 indptr and indices), in turn.

    They are copied out of X and Y a group of consecutive minibatches at a time, about ``GROUP_NONZEROS`` of
    X's non-zeros (at least one minibatch), and each minibatch is a view of its group's arrays (its indptr
    shifted to 0). One copy of many rows keeps every thread busy, where a minibatch's own copy did not: the
    rows lie in a random order through the corpus, and a copy of 1,000 of them is over before the threads are
    (measured by experiments/bench_serial.py)."""
    if not HAVE_NUMBA:  # pragma: no cover
        for a, e in zip(bounds[:-1], bounds[1:]):
            yield take_rows(X, order[a:e]), take_rows(Y, order[a:e])
        return
    order = np.asarray(order, dtype=np.int64)
    offsets = row_offsets(X.indptr, order)  # (rows + 1,) X's non-zeros before each row, in this order
    ends = offsets[bounds]  # X's non-zeros before each bound
    if np.diff(ends).max(initial=0) > MAX_MINIBATCH_NONZEROS:
        i = int(np.argmax(np.diff(ends)))
        raise MlnbError(f"a minibatch of {bounds[i + 1] - bounds[i]} documents holds 2^31 or more non-zeros; "
                        "lower batch_size")
    empty = {}  # (shape, dtype) -> an empty CSR matrix, copied for each minibatch (``_rows_view``)
    first = 0  # the first minibatch of the group
    while first < bounds.size - 1:
        # the group: minibatches first … last − 1, up to GROUP_NONZEROS non-zeros of X (at least one minibatch)
        last = max(first + 1, int(np.searchsorted(ends, ends[first] + GROUP_NONZEROS, side="right")) - 1)
        rows = order[bounds[first]:bounds[last]]
        X_group = copy_rows(X.indptr, X.indices, X.data, rows, np.int64, np.int32,
                            offsets=offsets[bounds[first]:bounds[last] + 1] - offsets[bounds[first]])
        # the labels alike: on every thread when X's rows are (fewer non-zeros, but as many scattered rows)
        Y_group = copy_rows(Y.indptr, Y.indices, Y.data, rows, np.int64, np.int32,
                            parallel=X_group[1].size > PARALLEL_COPY_NONZEROS)
        for i in range(first, last):
            r0, r1 = bounds[i] - bounds[first], bounds[i + 1] - bounds[first]
            yield _rows_view(X_group, r0, r1, X.shape[1], empty), _rows_view(Y_group, r0, r1, Y.shape[1], empty)
        first = last


def _rows_view(arrays: tuple, r0: int, r1: int, columns: int, empty: dict) -> sp.csr_matrix:
    """Rows r0 … r1 − 1 of CSR arrays (int64 indptr, indices, data): a CSR matrix with int32 indptr (from 0),
    sharing the indices and values. Its arrays are set on a shallow copy of an empty matrix of its shape and
    dtype (made once, kept in ``empty``): scipy's constructor copies a view of a much larger array
    (``_prune_array``), a serial copy of the minibatch, and even constructing an empty matrix runs scipy's
    checks (timed by hand, no script: experiments/README.md)."""
    indptr, indices, data = arrays
    p0, p1 = indptr[r0], indptr[r1]
    shape = (r1 - r0, columns)
    template = empty.get((shape, data.dtype))
    if template is None:
        template = empty[shape, data.dtype] = sp.csr_matrix(shape, dtype=data.dtype)
    view = copy.copy(template)  # its own attributes; the arrays below replace the empty ones
    view.indptr, view.indices, view.data = (indptr[r0:r1 + 1] - p0).astype(np.int32), indices[p0:p1], data[p0:p1]
    return view


class InMemorySource:
    """The minibatches of one pass over in-memory X (n × V, CSR float32) and Y (n × K, CSR int8):
    rows ``rng.permutation(n)`` (or 0..n−1 without a generator), cut into slices of batch_size."""

    def __init__(self, X: sp.csr_matrix, Y: sp.csr_matrix, batch_size: int):
        self.X = X if row_order(X) else X.sorted_indices()
        self.Y = Y
        self.batch_size = batch_size
        self.n_documents = X.shape[0]
        # (N (K,), n) of the documents loaded together: here all of them
        self.buffer_counts = (np.bincount(Y.indices, minlength=Y.shape[1]).astype(np.float64), X.shape[0])

    def minibatches(self, rng: np.random.Generator | None):
        n = self.n_documents
        order = rng.permutation(n) if rng is not None else np.arange(n)
        bounds = np.append(np.arange(0, n, self.batch_size), n)
        for X_B, Y_B in minibatch_views(self.X, self.Y, order, bounds):
            yield Minibatch(X_B, Y_B)


def _chunk_parts(chunk):
    """(X, Y, where) of a chunk: an object with .X and .Y (and optionally .where and .first_line,
    for messages), or an (X, Y) pair."""
    if isinstance(chunk, tuple) and len(chunk) == 2:
        return chunk[0], chunk[1], "a chunk"
    where = getattr(chunk, "where", None)
    first_line = getattr(chunk, "first_line", None)
    place = "a chunk" if where is None else f"{where}" + ("" if first_line is None else f", line {first_line}")
    return chunk.X, chunk.Y, place


class ChunkStreamSource:
    """The minibatches of one pass over a stream of chunks (``make_chunks()`` is called once per
    pass), shuffled within buffers of ``buffer_chunks`` chunks (see the module docstring).

    Each chunk is checked: X (m × n_features) CSR float32, Y (m × n_categories) 0/1, and with
    ``one_hot`` exactly one label per row; a bad one raises ``MlnbError`` naming where it came
    from (the chunk's ``where`` and ``first_line``)."""

    def __init__(self, make_chunks: Callable[[], Iterable], n_features: int, n_categories: int,
                 batch_size: int, buffer_chunks: int = 1, one_hot: bool = False):
        if not callable(make_chunks):
            raise MlnbError("make_chunks must be a function that returns an iterable of chunks (called once per "
                            f"pass), got {type(make_chunks).__name__}")
        if not (isinstance(buffer_chunks, (int, np.integer)) and buffer_chunks >= 1):
            raise MlnbError(f"buffer_chunks must be an integer >= 1, got {buffer_chunks!r}")
        self.make_chunks = make_chunks
        self.n_features, self.n_categories = n_features, n_categories
        self.batch_size = batch_size
        self.buffer_chunks = int(buffer_chunks)
        self.one_hot = one_hot
        self.buffer_counts = None  # (N (K,), n) of the current buffer, once one is read

    def _checked(self, chunk) -> tuple[sp.csr_matrix, sp.csr_matrix]:
        X, Y, place = _chunk_parts(chunk)
        if not (sp.issparse(X) and sp.issparse(Y)):
            raise MlnbError(f"{place}: a chunk's X and Y must be scipy sparse matrices, got "
                            f"{type(X).__name__} and {type(Y).__name__}")
        X, Y = sp.csr_matrix(X), sp.csr_matrix(Y)
        if X.shape[1] != self.n_features or Y.shape[1] != self.n_categories or X.shape[0] != Y.shape[0]:
            raise MlnbError(f"{place}: chunk X is {X.shape} and Y {Y.shape}; expected (m, {self.n_features}) "
                            f"and (m, {self.n_categories}) with the same m")
        if X.dtype != np.float32 or not np.isfinite(X.data).all():
            raise MlnbError(f"{place}: chunk X must be finite float32, got {X.dtype}"
                            + ("" if X.dtype != np.float32 else " with NaN or infinite values"))
        if not X.has_sorted_indices:
            X = X.sorted_indices()
        if Y.nnz and not np.all((Y.data == 0) | (Y.data == 1)):
            raise MlnbError(f"{place}: chunk Y must hold only 0 and 1")
        if Y.dtype != np.int8 or np.any(Y.data == 0):
            Y = Y.copy()
            Y.eliminate_zeros()
            Y = Y.astype(np.int8)
        if self.one_hot:
            per_row = np.diff(Y.indptr)
            bad = np.flatnonzero(per_row != 1)
            if bad.size:
                raise MlnbError(f"{place}: multiclass Y must have exactly one label per row; row {bad[0]} of the "
                                f"chunk has {per_row[bad[0]]}")
        return X, Y

    def minibatches(self, rng: np.random.Generator | None):
        chunks = iter(self.make_chunks())
        pending: list[Minibatch] = []  # the start of the next minibatch, fewer than batch_size rows
        pending_rows = 0
        while True:
            parts = [self._checked(chunk) for chunk in islice(chunks, self.buffer_chunks)]
            if not parts:
                break
            X = sp.vstack([X for X, _ in parts], format="csr") if len(parts) > 1 else parts[0][0]
            Y = sp.vstack([Y for _, Y in parts], format="csr") if len(parts) > 1 else parts[0][1]
            del parts
            n = X.shape[0]
            # the first buffer's category counts give b's start when no counts were given
            self.buffer_counts = (np.bincount(Y.indices, minlength=self.n_categories).astype(np.float64), n)
            order = rng.permutation(n) if rng is not None else np.arange(n)
            # the first minibatch completes the one pending from the last buffer, then whole ones, then a rest
            first = min(n, self.batch_size - pending_rows)
            bounds = np.concatenate([[0], np.arange(first, n, self.batch_size), [n]]) if first < n else np.array([0, n])
            for X_B, Y_B in minibatch_views(X, Y, order, bounds):
                part = Minibatch(X_B, Y_B)
                if not pending and X_B.shape[0] == self.batch_size:
                    yield part
                    continue
                pending.append(part)
                pending_rows += X_B.shape[0]
                if pending_rows == self.batch_size:
                    yield _stacked(pending)
                    pending, pending_rows = [], 0
        if pending:
            yield _stacked(pending)


def _stacked(parts: list[Minibatch]) -> Minibatch:
    if len(parts) == 1:
        return parts[0]
    return Minibatch(sp.vstack([p.X for p in parts], format="csr"), sp.vstack([p.Y for p in parts], format="csr"))


class Updater:
    r"""An update rule, its hyperparameters, and its state.

    Step t (from 1) on a minibatch B, for every coordinate (j, k) of W, with g the gradient of the
    minibatch's mean loss alone (g = 0 on the rows B does not touch):

        adagrad:          S += g²,   α = lrate · t^(vexp−texp) / (S^vexp + ε)   (α = 0 while S = 0)
        rowwise_adagrad:  S_j += (1/K)·Σ_k g_jk²   (one sum per row j of W, shared by its K categories),
                                     α_jk = lrate_k · t^(vexp−texp) / (S_j^vexp + ε)
        sgd:                         α = lrate · t^(−texp)
        W ← the exact solution after a time α of dw/ds = −g − l2·w − l1·sign(w), g held fixed
          = e^(−l2·α)·W − α·φ(l2·α)·g,  φ(y) = (1 − e^(−y))/y           (l1 = 0; ``regularisation``)

    and the same for b with g_b and S_b (b is not regularised: b ← b − α_b·g_b). This is AdaGrad's
    composite mirror-descent form (Duchi, Hazan & Singer 2011, JMLR 12, §5): S sums the loss's
    gradients only, and the step's fixed points are the documented objective's optima for any α.
    With texp = vexp = ½ (the defaults) α = lrate / (√S + ε), the classic AdaGrad step. rowwise_adagrad is
    AdaGrad with one step size per word (the diagonal preconditioner constant along a row of W, as
    "row-wise AdaGrad" for the embedding tables of recommender models, e.g. FBGEMM's
    EXACT_ROWWISE_ADAGRAD): with one learning rate for all categories, a row's step, and the catch-up of a
    row a minibatch skipped, cost one square root, one division and (with l2) one exponential per row
    instead of per coordinate; S is V × 1. A
    coordinate
    whose gradients have all been 0 (S = 0: a word not seen yet) takes no step: AdaGrad has no step
    size for it yet (lrate/ε would wipe, e.g., a warm start at the first step).

    Why this step: it makes the regularisation of a row the minibatch does not touch exact and
    cheap. Such a row has g = 0 and a constant S, so its α = c·τ_t (c = lrate/(S^vexp + ε), or
    lrate with sgd; τ_t = t^(vexp−texp), or t^(−texp)), and with g = 0 the step is the regulariser's
    flow, e.g. w·e^(−l2·α); flows compose: the steps t₀+1 … t₁ it missed are one step for the time
    c·(T(t₁) − T(t₀)), T(t) = Σ_{s≤t} τ_s.
    So the kernels keep T (float64) and, per word, T_last[j] = the T up to which row j has been
    regularised, and bring a row up to date just before a minibatch reads it ("just-in-time"
    regularisation: Carpenter 2008, "Lazy sparse stochastic gradient descent for regularized
    multinomial logistic regression"; the cumulative L1 penalty of Tsuruoka, Tsujii & Ananiadou
    2009 is the l2 = 0 case), and every row at the end of a pass (``flush``). The result is, up to
    float32 rounding, the dense update that regularises every row at every step — the minibatch
    stochastic gradient of the documented objective (1/n) Σ loss + (l2/2)·‖W‖² + l1·‖W‖₁ — at the
    cost of the touched rows only.

    State: S (V × K float32 with adagrad, V × 1 with rowwise_adagrad; None with sgd), S_b (K,), t (the number of steps
    taken; the kernels advance it before each step, so the first step has t = 1), T and T_last (V,).
    """

    rowwise = False  # (an Updater pickled before rowwise_adagrad existed is per coordinate)

    def __init__(self, rule: str, lrate: np.ndarray, texp: float, vexp: float, epsilon: float, l1: float,
                 l2: float, n_features: int, n_categories: int):
        if rule not in UPDATERS:
            raise MlnbError(f"updater must be one of {UPDATERS}, got {rule!r}")
        self.rule = rule
        self.adagrad = rule in ("adagrad", "rowwise_adagrad")  # the sums S and the step α = c·τ_t with c from S
        self.rowwise = rule == "rowwise_adagrad"  # one sum per row of W: S is V × 1
        self.lrate = np.ascontiguousarray(lrate, dtype=np.float32)  # (K,)
        self._hyperparameters(texp, vexp, epsilon, l1, l2)
        # sgd never reads S: an empty placeholder instead of V × K zeros
        self.S = np.zeros(sums_shape(rule, n_features, n_categories) or (0, n_categories), dtype=np.float32)
        self.Sb = np.zeros(n_categories, dtype=np.float32)
        self.t = 0
        self.T = 0.0  # Σ_{s ≤ t} τ_s
        self.T_last = np.zeros(n_features, dtype=np.float64)  # (V,) the T each row is regularised up to

    def _hyperparameters(self, texp, vexp, epsilon, l1, l2) -> None:
        """Held as floats whatever the caller passed (``l2=0`` from Python is an int), so that every call
        reaches the one compiled specialisation of the kernels (``mlnb._kernel_signatures``)."""
        self.texp, self.vexp, self.epsilon, self.l1, self.l2 = map(float, (texp, vexp, epsilon, l1, l2))

    @property
    def regularised(self) -> bool:
        return self.l1 != 0 or self.l2 != 0

    def tau(self, t: float) -> float:
        """τ_t, the step's schedule factor: t^(vexp−texp) (adagrad) or t^(−texp) (sgd)."""
        return float(t) ** ((self.vexp if self.adagrad else 0.0) - self.texp)

    def advance(self) -> tuple[float, float]:
        """Start the next step: t += 1, T += τ_t; returns (τ_t, T before the step)."""
        self.t += 1
        tau = self.tau(self.t)
        before = self.T
        self.T = before + tau
        return tau, before

    def configure(self, lrate: np.ndarray, texp: float, vexp: float, epsilon: float, l1: float, l2: float) -> None:
        """New hyperparameters for the steps to come (the state stays). The caller first regularises
        every row up to now (the kernel's ``flush``, as ``LogisticRegression`` does), so that the new
        l1, l2 and step sizes apply from here on only."""
        self.lrate = np.ascontiguousarray(lrate, dtype=np.float32)  # (K,)
        self._hyperparameters(texp, vexp, epsilon, l1, l2)

    def get_state(self) -> dict:
        """{"S": copy of S (None with sgd), "Sb": copy of S_b, "t": t, "T": T, "T_last": copy of T_last}."""
        return {"S": self.S.copy() if self.adagrad else None, "Sb": self.Sb.copy(), "t": self.t, "T": self.T,
                "T_last": self.T_last.copy()}

    def set_state(self, state: dict) -> None:
        """Restore S, S_b, t, T and T_last from ``get_state()`` (copied; shapes must match). A state
        without T (saved before T existed) is taken as regularised up to date: T = T_last = τ_1+…+τ_t."""
        if self.adagrad:
            S = state.get("S")
            if S is None or np.shape(S) != self.S.shape:
                raise MlnbError(f"the state's S must be a {self.S.shape} array for updater {self.rule!r}, got "
                                f"{None if S is None else np.shape(S)}")
            self.S = np.array(S, dtype=np.float32, order="C", copy=True)
        Sb = np.array(state["Sb"], dtype=np.float32, copy=True)
        if Sb.shape != self.Sb.shape:
            raise MlnbError(f"the state's Sb must have shape {self.Sb.shape}, got {Sb.shape}")
        t = state["t"]
        if not (np.isfinite(t) and t >= 0):
            raise MlnbError(f"the state's step count t must be a finite number >= 0, got {t!r}")
        T = state.get("T")
        if T is None:
            T = float(sum(self.tau(s) for s in range(1, int(t) + 1)))
        if not (np.isfinite(T) and T >= 0):
            raise MlnbError(f"the state's schedule sum T must be a finite number >= 0, got {T!r}")
        T_last = state.get("T_last")
        T_last = np.full(self.T_last.size, float(T)) if T_last is None else \
            np.array(T_last, dtype=np.float64, copy=True).ravel()
        if T_last.shape != self.T_last.shape or not (np.isfinite(T_last).all() and (T_last <= T).all()):
            raise MlnbError(f"the state's T_last must be {self.T_last.size} finite numbers <= T = {T!r}")
        self.Sb, self.t, self.T, self.T_last = Sb, t, float(T), T_last


#: the entries of a state (``LogisticRegression.get_state()``) that ``average_states`` averages
AVERAGED = ("weights", "bias", "S", "Sb", "t", "T", "T_last")


def average_states(states: list[dict], weights=None) -> dict:
    r"""Parameter mixing (Zinkevich et al. 2010; McDonald et al. 2010): the weighted mean of several
    trainers' states, e.g. one per worker after each ran a pass on its own part of the data.

        W = Σ_w λ_w·W_w,  b = Σ_w λ_w·b_w,  S = Σ_w λ_w·S_w,  S_b = Σ_w λ_w·S_b,w,  t = Σ_w λ_w·t_w
        (and T, T_last, the schedule sums of the lazy regularisation, likewise)

    with λ = weights / Σ weights (equal by default; e.g. the documents each worker saw).
    Why the AdaGrad sums are averaged too: with W, S/t is each weight's mean squared gradient,
    the scale AdaGrad divides by. Averaging S and t keeps that scale what one trainer would
    have (S/t of the mean ≈ the mean of the S_w/t_w when the t_w are alike); summing them would
    make the next steps as small as if one trainer had taken all the workers' steps, while W —
    an average, not a sum of the workers' moves — has moved only as far as one of them. t is
    then the (possibly fractional) mean step count. Everything else (the shuffling generator,
    the pass count, the divergence reference, ...) is the first state's.
    The mean is accumulated in float64 and stored as float32, so the mean of identical states
    is each of them exactly.
    """
    states = list(states)
    if not states:
        raise MlnbError("average_states needs at least one state")
    lam = np.full(len(states), 1.0) if weights is None else np.asarray(weights, dtype=np.float64).ravel()
    if lam.shape != (len(states),) or not (np.isfinite(lam).all() and (lam >= 0).all() and lam.sum() > 0):
        raise MlnbError(f"weights must be {len(states)} finite numbers >= 0, not all 0, got {weights!r}")
    lam = lam / lam.sum()
    first = states[0]
    mixed = dict(first)
    for key in AVERAGED:
        values = [state.get(key) for state in states]
        if key in ("S", "T", "T_last") and all(value is None for value in values):  # sgd: no sums; older states
            continue
        shapes = {np.shape(value) for value in values}
        if any(value is None for value in values) or len(shapes) != 1:
            raise MlnbError(f"the states' {key} differ in shape ({sorted(map(str, shapes))}); only states of "
                            "the same model (features, categories, updater) can be averaged")
        if key == "t":
            mean_t = float(np.dot(lam, values))
            mixed["t"] = int(values[0]) if all(value == values[0] for value in values) else mean_t
            continue
        total = np.zeros(shapes.pop(), dtype=np.float64)
        for weight, value in zip(lam, values):
            total += weight * np.asarray(value, dtype=np.float64)
        # T and T_last are sums of the schedule (float64); a row regularised up to date in every state
        # (T_last = T, as after a pass) stays so in the mean
        mixed[key] = float(total) if key == "T" else total if key == "T_last" else total.astype(np.float32)
    if "T_last" in mixed and mixed.get("T") is not None:
        mixed["T_last"] = np.minimum(mixed["T_last"], mixed["T"])  # rounding must not put a row ahead of T
    return mixed
