r"""Rank metrics from score histograms on a fixed grid: mergeable by addition, with error bounds.

A ``BinnedScores`` counts, for each category k, the positives pos_kb and the negatives neg_kb
whose score (log-odds) falls in bin b of a fixed ``Grid``: B bins between edges
e_0 = low < e_1 < … < e_B = high, plus an underflow bin (< low, −inf included) and an overflow
bin (> high, +inf included):

    bin(x) = 0            x < e_0
           = b            e_{b−1} ≤ x < e_b   (b = 1 … B; x = e_B goes to bin B)
           = B + 1        x > e_B

The edges are equally spaced in u(x) over [u(low), u(high)]: u(x) = x (``spacing="linear"``) or
u(x) = asinh(x) (``"asinh"``: widths ≈ 2 asinh(high)/B near 0, growing in proportion to |x|
beyond 1). The default is 2^16 bins, asinh-spaced over ±10^4: Naive Bayes log-odds reach the
hundreds or thousands, where a linear ±32 grid would put most scores in its end bins, while logistic
regression's scores stay within ±30, where a linear grid is tighter (the bounds measured by
experiments/bench_roc_auc.py). What the bound below needs is that
``bin`` be non-decreasing in x (b(x) < b(y) implies x < y), and the numba and numpy paths agree
bit for bit. Linear: bin = 1 + min(B − 1, ⌊(x/2 − low/2)·B/(high/2 − low/2)⌋), a chain of
monotone float operations (the edges are where it steps, equal to ``Grid.edges`` up to
rounding). Asinh: a library asinh is not guaranteed monotone to the last bit, so its guess is
corrected against the two neighbouring edges: the bin is exactly the edge interval x lies in
(``np.searchsorted`` of ``Grid.edges``). Counts of two test sets on the same grid add:
the histograms of Dask partitions (or of chunks) are merged by ``+``, and the merged histogram is
exactly that of the whole test set. Pooling categories (micro averages) is adding their rows.

**AUC and its largest error.** With P = Σ_b pos_b, N = Σ_b neg_b and neg_<b = Σ_{c<b} neg_c, the
binned AUC counts a positive above every negative of a lower bin and ½ for each negative of its
own bin (as if the bin were one tie):

    AUC_bin = (1/PN) Σ_b pos_b (neg_<b + ½ neg_b)

Derivation of the bound. The exact AUC (ties ½) is A = (1/PN) Σ_{x pos} Σ_{y neg} ψ(x, y) with
ψ = 1, ½, 0 for x > y, x = y, x < y. Split the pairs by bins. A pair in different bins has
x > y exactly when b(x) > b(y) (bin is non-decreasing), so ψ is the same in A and in AUC_bin.
A pair in the same bin has ψ ∈ {0, ½, 1} in A and ½ in AUC_bin, so its term differs by at
most ½. There are pos_b·neg_b such pairs in bin b, hence

    |A − AUC_bin| ≤ ½ Σ_b pos_b·neg_b / (P N)          (``auc_max_error``)

and the bound is attained (every positive of each bin above, or below, its negatives), so it is
the largest possible error given the histograms. Bins holding one class only contribute
nothing: the bound measures how much the classes overlap at the grid's resolution.

**ROC points**: accepting the bins from the top down, (FP/N, TP/P) at each bin edge; joined by
straight segments (the diagonal of each bin's unknown order), the area under them is AUC_bin.
``BinnedScores.curve`` returns them as a ``RankCurve`` (thresholds = the bins' lower edges), so
``roc_on_grid`` and ``gains_on_grid`` read them like the exact curves.

**Average precision and its bound.** Take the bins from the top down; before bin b there are
A_b documents, Ap_b of them positive; bin b holds p = pos_b positives and q = neg_b negatives.
The precision of a positive of bin b is (Ap_b + u)/(A_b + u + v) with u ≥ 1 positives and v ≤ q
negatives of the bin at or above it (ties included). This grows with u (as Ap_b ≤ A_b) and
falls with v, so the j-th positive of the bin has precision at least (Ap_b + j)/(A_b + q + j)
and at most (Ap_b + p)/(A_b + p):

    L_b = Σ_{j=1}^{p} (Ap_b + j)/(A_b + q + j) = p − (A_b + q − Ap_b)(H(A_b + q + p) − H(A_b + q))
    U_b = p·(Ap_b + p)/(A_b + p)

and the exact AP = (1/P) Σ (precision of each positive), with any order and ties inside the
bins, lies in [Σ_b L_b / P, Σ_b U_b / P]. The binned AP is the midpoint and its largest error
the half-width (H are the harmonic numbers).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
from scipy.special import digamma

from mlnb._kernels.jit import HAVE_NUMBA, njit, prange
from mlnb.errors import MlnbError
from mlnb.metrics._inputs import binary_labels, score_array
from mlnb.metrics.ranking import RankCurve

DEFAULT_BINS = 1 << 16
DEFAULT_LIMIT = 1e4  # log-odds
SPACINGS = ("linear", "asinh")
SERIAL_BELOW = 1 << 16  # chunks of fewer scores are counted without entering a parallel region


@dataclass(frozen=True)
class Grid:
    """B bins between ``low`` and ``high``, equally spaced in x or in asinh(x), plus an underflow
    and an overflow bin (B + 2 in all); ``edges`` (B + 1,) strictly increasing."""

    low: float = -DEFAULT_LIMIT
    high: float = DEFAULT_LIMIT
    bins: int = DEFAULT_BINS
    spacing: str = "asinh"
    edges: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        if isinstance(self.bins, bool) or not isinstance(self.bins, (int, np.integer)) or self.bins < 1:
            raise MlnbError(f"Grid: bins must be a positive integer, got {self.bins!r}")
        if not (np.isfinite(self.low) and np.isfinite(self.high) and self.low < self.high):
            raise MlnbError(f"Grid: need finite low < high, got low={self.low!r}, high={self.high!r}")
        if self.spacing not in SPACINGS:
            raise MlnbError(f"Grid: spacing must be one of {', '.join(SPACINGS)}, got {self.spacing!r}")
        object.__setattr__(self, "low", float(self.low))
        object.__setattr__(self, "high", float(self.high))
        object.__setattr__(self, "bins", int(self.bins))
        u_low, u_high = self.u_range
        edges = self.inverse(np.linspace(u_low, u_high, self.bins + 1))
        edges[0], edges[-1] = self.low, self.high
        with np.errstate(divide="ignore", over="ignore"):
            per_u = np.float64(self.bins) / (np.float64(u_high) - np.float64(u_low))
        if not np.all(np.diff(edges) > 0) or not 0 < per_u < np.inf:
            # per_u finite: the kernels' (x/2 − low/2)·per_u must never be 0 · inf = NaN (a bin out of range)
            raise MlnbError(f"Grid: {self.bins} bins are too many for [{self.low}, {self.high}] in float64")
        edges.flags.writeable = False
        object.__setattr__(self, "edges", edges)

    def transform(self, x):
        """u(x): x/2 (halves, so that u(high) − u(low) cannot overflow) or asinh(x)."""
        return np.arcsinh(x) if self.spacing == "asinh" else np.multiply(x, 0.5)

    def inverse(self, u):
        return np.sinh(u) if self.spacing == "asinh" else np.multiply(u, 2.0)

    @property
    def u_range(self) -> tuple[float, float]:
        return float(self.transform(self.low)), float(self.transform(self.high))

    @property
    def _kernel_arguments(self) -> tuple:
        u_low, u_high = self.u_range
        return self.edges, self.spacing == "asinh", u_low, self.bins / (u_high - u_low)

    def index(self, scores) -> np.ndarray:
        """The bin (0 .. B + 1) of each score (no NaN), the module docstring's ``bin``."""
        x = np.asarray(scores, dtype=np.float64)
        if self.spacing == "linear":
            _, _, u_low, per_u = self._kernel_arguments
            with np.errstate(invalid="ignore", over="ignore"):
                inside = 1 + np.minimum(self.bins - 1, np.floor(np.nan_to_num((x * 0.5 - u_low) * per_u)))
            return np.where(x < self.low, 0, np.where(x > self.high, self.bins + 1, inside)).astype(np.int64)
        b = np.searchsorted(self.edges, x, side="right")  # e_{b−1} ≤ x < e_b; B + 1 from x ≥ e_B
        return np.where(x == self.high, self.bins, b).astype(np.int64)


if HAVE_NUMBA:

    @njit(cache=True, nogil=True)
    def _bin_of(x, edges, asinh, u_low, per_u):
        """``Grid.index`` of one score: linear, the formula; asinh, a guess from asinh(x)
        corrected against the edges.

        Why a kernel: inlined into the counting loops, so that a score's bin costs a few operations, not a
        ``np.searchsorted`` call. Measured by experiments/bench_roc_auc.py."""
        bins = edges.size - 1
        if x < edges[0]:
            return 0
        if x > edges[bins]:
            return bins + 1
        if not x >= edges[0]:  # NaN (refused before): a bin in range all the same
            return 0
        if not asinh:
            return 1 + min(bins - 1, max(0, int((x * 0.5 - u_low) * per_u)))
        b = 1 + min(bins - 1, max(0, int((np.arcsinh(x) - u_low) * per_u)))
        while b > 1 and x < edges[b - 1]:
            b -= 1
        while b < bins and x >= edges[b]:
            b += 1
        return b

    @njit(parallel=True, cache=True)
    def _count_chunk(positives, negatives, S, indptr, indices, edges, asinh, u_low, per_u):
        """Add the chunk S (m × K) to the (K, B + 2) histograms; the positives of column k are
        the rows indices[indptr[k]:indptr[k + 1]] (CSC). In parallel over categories.

        Why a kernel: each category's histograms on a thread of its own in one pass over the chunk, where numpy
        builds bin and label arrays for each category. Measured by experiments/bench_roc_auc.py."""
        for k in prange(S.shape[1]):
            _count_chunk_column(positives[k], negatives[k], S, k, indices[indptr[k]:indptr[k + 1]],
                                edges, asinh, u_low, per_u)

    @njit(cache=True)
    def _count_chunk_serially(positives, negatives, S, indptr, indices, edges, asinh, u_low, per_u):
        """``_count_chunk`` without a parallel region (small chunks).

        Why a kernel: the same loop without a parallel region, for chunks too small to repay starting the threads.
        Measured by experiments/bench_roc_auc.py."""
        for k in range(S.shape[1]):
            _count_chunk_column(positives[k], negatives[k], S, k, indices[indptr[k]:indptr[k + 1]],
                                edges, asinh, u_low, per_u)

    @njit(cache=True, nogil=True)
    def _count_chunk_column(positives, negatives, S, k, rows, edges, asinh, u_low, per_u):
        """Add column k of S (m × K) to one category's histograms (B + 2,), its positives at the rows ``rows``.

        Why a kernel: the loop that the parallel and the serial count share. Measured by
        experiments/bench_roc_auc.py."""
        positive = np.zeros(S.shape[0], dtype=np.bool_)
        for q in range(rows.size):
            positive[rows[q]] = True
        for i in range(S.shape[0]):
            b = _bin_of(np.float64(S[i, k]), edges, asinh, u_low, per_u)
            if positive[i]:
                positives[b] += 1
            else:
                negatives[b] += 1

    @njit(cache=True, nogil=True)
    def _count_column(positives, negatives, z, positions, edges, asinh, u_low, per_u):
        """Add one category's scores z (n,) to the histograms (B + 2,); positives at ``positions``.

        Why a kernel: one pass over a category's scores into its histograms, with no temporary bin array. Measured
        by experiments/bench_roc_auc.py."""
        positive = np.zeros(z.size, dtype=np.bool_)
        for q in range(positions.size):
            positive[positions[q]] = True
        for i in range(z.size):
            b = _bin_of(np.float64(z[i]), edges, asinh, u_low, per_u)
            if positive[i]:
                positives[b] += 1
            else:
                negatives[b] += 1


def count_column(positives: np.ndarray, negatives: np.ndarray, grid: Grid, scores, positions) -> None:
    """Add one category's scores (n,) to the histograms ``positives`` and ``negatives`` (B + 2,)
    in place; ``positions`` are the indices of its positive documents. Scores must hold no NaN."""
    z = score_array(scores, "scores", ndim=1)  # float32/float64 without NaN before the kernel
    positions = np.asarray(positions, dtype=np.int64)
    if HAVE_NUMBA:
        _count_column(positives, negatives, z, positions, *grid._kernel_arguments)
        return
    bins = grid.index(z)
    positive = np.zeros(z.size, dtype=bool)
    positive[positions] = True
    positives += np.bincount(bins[positive], minlength=grid.bins + 2)
    negatives += np.bincount(bins[~positive], minlength=grid.bins + 2)


def _twice_mann_whitney(pos: np.ndarray, neg: np.ndarray) -> np.ndarray:
    """2 Σ_b pos_b (neg_<b + ½ neg_b) along the last axis, exact in int64 (float64 beyond 2^62)."""
    below = np.cumsum(neg, axis=-1) - neg
    if np.sum(pos, axis=-1).max(initial=0) * np.sum(neg, axis=-1).max(initial=0) < 2 ** 61:
        return np.sum(pos * (2 * below + neg), axis=-1, dtype=np.int64)
    return np.sum(pos.astype(np.float64) * (2.0 * below + neg), axis=-1)


def auc_from_histograms(pos, neg) -> tuple[np.ndarray, np.ndarray]:
    """(AUC_bin, its largest error) of histograms (..., bins) in ascending bin order; NaN where
    there is no positive or no negative (module docstring)."""
    pos, neg = np.asarray(pos, dtype=np.int64), np.asarray(neg, dtype=np.int64)
    P, N = pos.sum(axis=-1), neg.sum(axis=-1)
    pairs = P.astype(np.float64) * N
    same_bin = np.sum(pos.astype(np.float64) * neg, axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        auc = np.where(pairs > 0, _twice_mann_whitney(pos, neg) / (2.0 * pairs), np.nan)
        bound = np.where(pairs > 0, same_bin / (2.0 * pairs), np.nan)
    return auc, bound


def _harmonic_difference(c: np.ndarray, p: np.ndarray) -> np.ndarray:
    """H(c + p) − H(c) = Σ_{j=1}^{p} 1/(c + j) for c ≥ 0, p ≥ 1, without the cancellation of
    two large digammas: for c ≥ 1000, ψ(b) − ψ(a) = log(b/a) + (b − a)/(2ab) + (b² − a²)/(12a²b²)
    + O(a⁻⁴) with a = c + 1, b = c + p + 1."""
    c, p = np.asarray(c, dtype=np.float64), np.asarray(p, dtype=np.float64)
    a, b = c + 1.0, c + p + 1.0
    with np.errstate(invalid="ignore", divide="ignore"):
        series = np.log1p(p / a) + p / (2.0 * a * b) + p * (a + b) / (12.0 * a * a * b * b)
    return np.where(c >= 1000.0, series, digamma(b) - digamma(a))


def average_precision_from_histograms(pos, neg) -> tuple[np.ndarray, np.ndarray]:
    """(binned AP, its largest error) of histograms (..., bins) in ascending bin order: the
    midpoint and half-width of [Σ L_b, Σ U_b] / P (module docstring); NaN without a positive."""
    pos, neg = np.asarray(pos, dtype=np.int64), np.asarray(neg, dtype=np.int64)
    down_pos, down_neg = pos[..., ::-1], neg[..., ::-1]  # from the top bin down
    above_pos = np.cumsum(down_pos, axis=-1) - down_pos  # Ap_b
    above = above_pos + np.cumsum(down_neg, axis=-1) - down_neg  # A_b
    p, q = down_pos.astype(np.float64), down_neg.astype(np.float64)
    has = p > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        upper = np.where(has, p * (above_pos + p) / (above + p), 0.0)
        lower = np.where(has, p - (above + q - above_pos) * _harmonic_difference(above + q, np.maximum(p, 1.0)),
                         0.0)
        P = p.sum(axis=-1)
        low, high = lower.sum(axis=-1) / P, upper.sum(axis=-1) / P
    defined = P > 0
    return np.where(defined, (low + high) / 2.0, np.nan), np.where(defined, (high - low) / 2.0, np.nan)


@dataclass
class BinnedScores:
    """Per-category histograms of positives' and negatives' scores on one ``Grid``.

    positives, negatives : (K, B + 2) int64, bin 0 the underflow and bin B + 1 the overflow
    """

    grid: Grid
    positives: np.ndarray
    negatives: np.ndarray = field(repr=False)

    @classmethod
    def empty(cls, n_categories: int, grid: Grid | None = None) -> BinnedScores:
        grid = grid or Grid()
        shape = (int(n_categories), grid.bins + 2)
        return cls(grid, np.zeros(shape, dtype=np.int64), np.zeros(shape, dtype=np.int64))

    @classmethod
    def from_scores(cls, Y_true, scores, grid: Grid | None = None) -> BinnedScores:
        """The histograms of ``scores`` (n × K log-odds) against ``Y_true`` (n × K 0/1)."""
        S = np.asarray(scores)
        if S.ndim != 2:
            raise MlnbError(f"BinnedScores: scores must be an n × K matrix, got shape {S.shape}")
        return cls.empty(S.shape[1], grid).add(Y_true, S)

    @property
    def n_categories(self) -> int:
        return self.positives.shape[0]

    @property
    def n_pos(self) -> np.ndarray:
        return self.positives.sum(axis=1)

    @property
    def n_neg(self) -> np.ndarray:
        return self.negatives.sum(axis=1)

    def add(self, Y_true, scores) -> BinnedScores:
        """Count one more chunk (m × K) in place; returns self."""
        if sp.issparse(scores):
            raise MlnbError("BinnedScores.add: scores must be a dense m × K array, got a sparse matrix")
        S = score_array(scores, "BinnedScores.add: scores")  # float32/float64 without NaN (``_inputs``)
        if S.ndim != 2 or S.shape[1] != self.n_categories:
            raise MlnbError(f"BinnedScores.add: scores must have shape (m, {self.n_categories}), got {S.shape}")
        if tuple(np.shape(Y_true)) != S.shape:
            raise MlnbError(f"BinnedScores.add: Y has shape {tuple(np.shape(Y_true))} but scores has shape {S.shape}")
        binary_labels(Y_true, "BinnedScores.add: Y")
        Y = sp.csc_matrix(Y_true, copy=True)
        Y.sum_duplicates()
        Y.eliminate_zeros()
        g = self.grid
        if HAVE_NUMBA:
            kernel = _count_chunk if S.size >= SERIAL_BELOW else _count_chunk_serially
            kernel(self.positives, self.negatives, np.ascontiguousarray(S), Y.indptr, Y.indices,
                   *g._kernel_arguments)
            return self
        bins = g.index(S)
        dense = Y.toarray() != 0
        width = g.bins + 2
        flat = bins + np.arange(self.n_categories) * width  # (m, K) index into the flattened (K, B + 2)
        self.positives += np.bincount(flat[dense], minlength=self.positives.size).reshape(self.positives.shape)
        self.negatives += np.bincount(flat[~dense], minlength=self.negatives.size).reshape(self.negatives.shape)
        return self

    def __add__(self, other: BinnedScores) -> BinnedScores:
        """The histograms of both test sets (e.g. two Dask partitions): counts add."""
        if not isinstance(other, BinnedScores):
            return NotImplemented
        if other.grid != self.grid:
            raise MlnbError(f"BinnedScores: cannot merge histograms on different grids ({self.grid} and {other.grid})")
        if other.n_categories != self.n_categories:
            raise MlnbError(f"BinnedScores: cannot merge {self.n_categories} categories with {other.n_categories}")
        return BinnedScores(self.grid, self.positives + other.positives, self.negatives + other.negatives)

    def _pooled(self, columns) -> tuple[np.ndarray, np.ndarray]:
        rows = slice(None) if columns is None else np.asarray(columns, dtype=np.int64)
        return self.positives[rows].sum(axis=0), self.negatives[rows].sum(axis=0)

    def auc(self) -> np.ndarray:
        """(K,) binned AUC per category; NaN without a positive or a negative."""
        return auc_from_histograms(self.positives, self.negatives)[0]

    def auc_max_error(self) -> np.ndarray:
        """(K,) ½ Σ_b pos_b·neg_b / (P N): the exact AUC lies within this of ``auc()``."""
        return auc_from_histograms(self.positives, self.negatives)[1]

    def micro_auc(self, columns=None) -> tuple[float, float]:
        """(AUC, largest error) of all (document, category) pairs of ``columns`` (None: all) pooled."""
        auc, bound = auc_from_histograms(*self._pooled(columns))
        return float(auc), float(bound)

    def average_precision(self) -> tuple[np.ndarray, np.ndarray]:
        """((K,) binned AP, (K,) largest error) per category."""
        return average_precision_from_histograms(self.positives, self.negatives)

    def micro_average_precision(self, columns=None) -> tuple[float, float]:
        """(AP, largest error) of the pooled pairs of ``columns`` (None: all)."""
        ap, bound = average_precision_from_histograms(*self._pooled(columns))
        return float(ap), float(bound)

    def curve(self, k: int | None = None, columns=None) -> RankCurve:
        """The binned rank curve of category ``k`` (or of ``columns`` pooled when k is None): the
        cumulative counts from the top bin down, at the lower edge of each non-empty bin (the
        overflow bin's "edge" is ``high``, which its scores exceed)."""
        if k is not None:
            pos, neg = self.positives[int(k)], self.negatives[int(k)]
        else:
            pos, neg = self._pooled(columns)
        lower_edges = np.r_[-np.inf, self.grid.edges[:-1], self.grid.high]  # bin b holds scores ≥ this
        occupied = np.flatnonzero(pos + neg)[::-1]  # top first
        return RankCurve(thresholds=np.r_[np.inf, lower_edges[occupied]],
                         tp=np.r_[0, np.cumsum(pos[occupied])].astype(np.int64),
                         fp=np.r_[0, np.cumsum(neg[occupied])].astype(np.int64),
                         n_pos=int(pos.sum()), n_neg=int(neg.sum()))
