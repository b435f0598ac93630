r"""Naive Bayes event counters kept for the (word, category) pairs that occur, never as a V × K matrix.

The counters of the lecture "Naive Bayes with large vocabularies":

    C(Y=k ∧ X=w)   F_kw   one counter per pair that occurs in training (``key``, ``value``)
    C(Y=k ∧ X=ANY) S_k    (K,)
    C(Y=k)         N_k    (K,)
    C(Y=ANY)       n
    C(X=w)         t_w    (V,) the word's total over all training documents

A pair is one int64 key, ``word · K + category``, so sorting the keys sorts by word and then by
category: the pairs of one word are one contiguous run, and the counters of two chunks add by a
merge of two sorted runs. Counts of presence ([X > 0], Bernoulli) are kept the same way, with
``presence`` set.

Adding counters (``a + b``, ``SparseCounts.merge``) concatenates the pieces' pairs in list order, sorts
them by key with a stable sort and adds the values of equal keys **left to right in list order**:

    F_kw = ((F_kw(piece 1) + F_kw(piece 2)) + F_kw(piece 3)) + ...     (pieces without the pair skipped)

so merging the sum so far with further pieces (``merge([merge([a, b, c]), d, e])``) gives the same bits as
one merge of all pieces (a middle run merged on its own first, ``merge([a, merge([b, c])])``, need not),
``a + b`` is ``merge([a, b])``, and the out-of-core aggregation (``count_store``) reproduces them.
``np.add.reduceat`` is not used for groups of more than two values: numpy sums those pairwise (for
[1e16, 1, 1, …, 1] it gives 1e16 + 8 where left to right gives 1e16).

API (what the estimator, the Dask group-by and the benchmarks code against):

    SparseCounts(key, value, t, S, N, n, presence)   frozen; fields as above
    SparseCounts.from_chunk(X, Y, presence=False)    the counters of one chunk
    SparseCounts.empty(n_features, n_categories, presence=False)
    SparseCounts.merge(pieces) / a + b               added as above
    SparseCounts.from_dense(counts: NBCounts) / .to_dense() -> NBCounts
    .shape (K, V)  .n_pairs  .nbytes  .words()  .categories()
    .pairs_of(words) -> (key, value)                 the pairs of the requested words, key order
    .column_sums() -> (V,)                           Σ_k F_kw, summed in key order
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from mlnb.errors import MlnbError
from mlnb.models.naive_bayes.counts import NBCounts

#: the largest dense K × V float64 matrix that ``to_dense`` makes
MAX_DENSE_BYTES = 2 << 30


@dataclass(frozen=True, eq=False)
class SparseCounts:
    """The event counters of one chunk of documents, or of several added.

    key    (P,) int64, sorted, unique: word · n_categories + category
    value  (P,) float64: F_kw of each pair, never 0
    t      (V,) float64: every word's total over all documents
    S      (K,) float64: each category's total Σ_w F_kw
    N      (K,) float64: each category's positive documents
    n      documents counted
    presence: F, t and S count [X > 0] rather than sum X
    """

    key: np.ndarray
    value: np.ndarray
    t: np.ndarray
    S: np.ndarray
    N: np.ndarray
    n: int
    presence: bool = False

    @property
    def shape(self) -> tuple[int, int]:
        """(K, V): categories × features, as ``NBCounts.shape``."""
        return self.S.shape[0], self.t.shape[0]

    @property
    def n_pairs(self) -> int:
        return int(self.key.shape[0])

    def words(self) -> np.ndarray:
        """(P,) int64: each pair's word."""
        return self.key // self.shape[0]

    def categories(self) -> np.ndarray:
        """(P,) int64: each pair's category."""
        return self.key % self.shape[0]

    @classmethod
    def from_chunk(cls, X: sp.csr_matrix, Y: sp.csr_matrix, presence: bool = False) -> SparseCounts:
        """Count X (n × V, CSR float32, values ≥ 0) and Y (n × K, CSR 0/1): the pairs of Xᵀ·Y."""
        if X.shape[0] != Y.shape[0]:
            raise MlnbError(f"X has {X.shape[0]} documents but Y has {Y.shape[0]}")
        K, V = Y.shape[1], X.shape[1]
        X = sp.csr_matrix(X, dtype=np.float64, copy=presence)
        if presence:
            X.data = (X.data > 0).astype(np.float64)
        Y = sp.csr_matrix(Y, dtype=np.float64)
        # the chunk's own words only: nothing of the vocabulary's size but t (a chunk of a 10M-word corpus
        # touches a few hundred thousand words)
        own_words, column = np.unique(X.indices, return_inverse=True)  # (U,), (nnz,)
        X_own = sp.csr_matrix((X.data, column.reshape(-1), X.indptr), shape=(X.shape[0], own_words.shape[0]))
        F = (X_own.T.tocsr() @ Y).tocsr()  # (U × K): one row per word of the chunk, its categories in order
        F.eliminate_zeros()
        F.sort_indices()
        words = np.repeat(own_words.astype(np.int64), np.diff(F.indptr))
        key = words * K + F.indices.astype(np.int64)
        t = np.zeros(V)
        t[own_words] = np.asarray(X_own.sum(axis=0), dtype=np.float64).ravel()
        S = np.bincount(F.indices, weights=F.data, minlength=K).astype(np.float64)
        N = np.asarray(Y.sum(axis=0), dtype=np.float64).ravel()
        return cls(key=key, value=F.data.astype(np.float64), t=t, S=S, N=N, n=X.shape[0], presence=presence)

    @classmethod
    def empty(cls, n_features: int, n_categories: int, presence: bool = False) -> SparseCounts:
        """The counters of no document: no pair, every margin 0."""
        return cls(key=np.empty(0, dtype=np.int64), value=np.empty(0, dtype=np.float64),
                   t=np.zeros(n_features, dtype=np.float64), S=np.zeros(n_categories, dtype=np.float64),
                   N=np.zeros(n_categories, dtype=np.float64), n=0, presence=presence)

    @property
    def nbytes(self) -> int:
        """Bytes held: the pairs (16 per pair) and the margins t, S, N."""
        return sum(int(a.nbytes) for a in (self.key, self.value, self.t, self.S, self.N))

    def __add__(self, other: SparseCounts) -> SparseCounts:
        """The counters of both: ``SparseCounts.merge([self, other])``, bit for bit."""
        if not isinstance(other, SparseCounts):
            return NotImplemented
        return SparseCounts.merge([self, other])

    @classmethod
    def merge(cls, pieces: list[SparseCounts]) -> SparseCounts:
        """The counters of all pieces: the values of equal keys and the margins t, S, N added left to right
        in list order (the module docstring), n summed."""
        pieces = list(pieces)
        if not pieces:
            raise MlnbError("SparseCounts.merge: expected at least one SparseCounts to merge, got none")
        first = pieces[0]
        for piece in pieces:
            if not isinstance(piece, SparseCounts):
                raise MlnbError(f"SparseCounts.merge: expected SparseCounts pieces, got {type(piece).__name__}")
            check_compatible(first.shape, first.presence, piece.shape, piece.presence)
        key, value = merge_pairs([p.key for p in pieces], [p.value for p in pieces])
        t, S, N = first.t.copy(), first.S.copy(), first.N.copy()
        for piece in pieces[1:]:
            t += piece.t
            S += piece.S
            N += piece.N
        return cls(key=key, value=value, t=t, S=S, N=N, n=sum(p.n for p in pieces), presence=first.presence)

    @classmethod
    def from_dense(cls, counts: NBCounts) -> SparseCounts:
        """The non-zero entries of ``counts.F`` (K × V) as pairs, in key order; the margins as they are."""
        K = counts.shape[0]
        words, categories = np.nonzero(counts.F.T)  # row-major over (word, category): key order
        key = words.astype(np.int64) * K + categories.astype(np.int64)
        return cls(key=key, value=np.asarray(counts.F[categories, words], dtype=np.float64),
                   t=np.asarray(counts.t, dtype=np.float64).copy(), S=np.asarray(counts.S, dtype=np.float64).copy(),
                   N=np.asarray(counts.N, dtype=np.float64).copy(), n=int(counts.n), presence=counts.presence)

    def to_dense(self) -> NBCounts:
        """These counters as ``NBCounts`` with a dense K × V F (refused beyond ``MAX_DENSE_BYTES``)."""
        K, V = self.shape
        if K * V * 8 > MAX_DENSE_BYTES:
            raise MlnbError(f"SparseCounts.to_dense: {K} categories × {V} features would take "
                            f"{K * V * 8 / 2**30:.1f} GiB as a dense float64 matrix (at most "
                            f"{MAX_DENSE_BYTES / 2**30:.0f} GiB); use the sparse counters")
        F = np.zeros((K, V), dtype=np.float64)
        F[self.categories(), self.words()] = self.value
        return NBCounts(F=F, t=self.t.copy(), N=self.N.copy(), n=self.n, presence=self.presence, S=self.S.copy())

    def pairs_of(self, words: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(key, value) of the pairs whose word is in ``words`` (sorted, unique, in [0, V)), in key order:
        for each word w, the run of keys in [w·K, (w+1)·K), found by binary search."""
        K, V = self.shape
        words = checked_words(words, V)
        lo = np.searchsorted(self.key, words * K, side="left")
        hi = np.searchsorted(self.key, (words + 1) * K, side="left")
        index = ranges_index(lo, hi)
        return self.key[index], self.value[index]

    def column_sums(self) -> np.ndarray:
        """(V,) float64: Σ_k F_kw for each word, each summed in key (category) order."""
        return np.bincount(self.words(), weights=self.value, minlength=self.shape[1]).astype(np.float64, copy=False)


def check_compatible(shape: tuple[int, int], presence: bool, other_shape: tuple[int, int], other_presence: bool):
    """Raise MlnbError unless two sets of counters have the same shape and event kind."""
    if shape != other_shape:
        raise MlnbError(f"cannot add counters of {shape[0]} categories × {shape[1]} features to counters of "
                        f"{other_shape[0]} categories × {other_shape[1]} features")
    if presence != other_presence:
        raise MlnbError(f"cannot add counters of presence={presence} to counters of presence={other_presence}: "
                        "they were counted for different event models")


def checked_words(words, n_features: int) -> np.ndarray:
    """``words`` as int64, or MlnbError unless they are sorted, unique and in [0, n_features)."""
    words = np.asarray(words)
    if words.ndim != 1 or (words.size and not np.issubdtype(words.dtype, np.integer)):
        raise MlnbError(f"pairs_of: expected a 1-D array of integer word indices, got shape {words.shape} "
                        f"of {words.dtype}")
    words = words.astype(np.int64, copy=False)
    if words.size and (words[0] < 0 or words[-1] >= n_features or np.any(words[1:] <= words[:-1])):
        raise MlnbError(f"pairs_of: expected sorted unique word indices in [0, {n_features}); "
                        "sort them with np.unique")
    return words


def ranges_index(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """The indices lo[0]..hi[0]-1, lo[1]..hi[1]-1, ... concatenated (int64)."""
    lengths = hi - lo
    total = int(lengths.sum())
    if total == 0:
        return np.empty(0, dtype=np.int64)
    starts_in_output = np.cumsum(lengths) - lengths
    return np.repeat(lo - starts_in_output, lengths) + np.arange(total, dtype=np.int64)


def merge_pairs(keys: list[np.ndarray], values: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """The pairs of several pieces (each sorted unique keys) added: keys sorted unique, the values of equal
    keys summed left to right in list order."""
    if len(keys) == 1:
        return keys[0], values[0]
    key = np.concatenate(keys)
    value = np.concatenate(values).astype(np.float64, copy=False)
    order = np.argsort(key, kind="stable")  # timsort: merges the sorted runs; equal keys keep list order
    key, value = key[order], value[order]
    del order
    return merge_pairs_sorted(key, value)


def merge_pairs_sorted(key: np.ndarray, value: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pairs sorted by key (equal keys adjacent, in the order to add them): keys unique, each run's values
    summed left to right."""
    is_first = np.empty(key.shape[0], dtype=bool)
    is_first[:1] = True
    np.not_equal(key[1:], key[:-1], out=is_first[1:])
    starts = np.flatnonzero(is_first)
    del is_first
    return key[starts], sums_in_order(value, starts)


def sums_in_order(value: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """The sum of each run value[starts[g]:starts[g+1]], added strictly left to right.

    Rank r of every run longer than r is added in one vectorised step, the runs ordered longest first so
    that those still going are a prefix: the work is one pass over the values plus one step per rank.
    """
    total = value[starts]  # a copy: the first value of every run
    lengths = np.diff(starts, append=value.shape[0])
    long_runs = np.flatnonzero(lengths > 1)
    if long_runs.size == 0:
        return total
    run_lengths = lengths[long_runs]
    by_length = long_runs[np.argsort(-run_lengths, kind="stable")]
    run_lengths = lengths[by_length]
    run_starts = starts[by_length]
    partial = total[by_length]
    # still_going[r - 1]: how many runs (longest first) have a value of rank r
    still_going = np.searchsorted(-run_lengths, -np.arange(1, run_lengths[0]), side="left")
    for rank, count in enumerate(still_going, start=1):
        partial[:count] += value[run_starts[:count] + rank]
    total[by_length] = partial
    return total
