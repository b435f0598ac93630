r"""A seeded corpus with long-tailed label and word frequencies, generated chunk by chunk.

Made for vocabularies and label spaces too large for V × K counters (10M words, 10⁴–10⁶
categories): nothing of size V × K, K × (topic size) or even V is ever stored. Every chunk is a
function of (seed, chunk number) alone, so any chunk can be made by any worker in any order.

Frequencies follow a continuous Zipf–Mandelbrot law, drawn by its inverse CDF (no table of n
probabilities): for n outcomes, exponent s and shift q,

    density   f(x) ∝ (x + q)^(−s) on [0, n)
    draw      φ(x + q) = (1 − u)·φ(q) + u·φ(n + q),  u ~ U[0, 1),  φ(y) = y^(1−s)  (log y when s = 1)
    outcome   r = min(⌊x⌋, n − 1)   (rank r; rank 0 the commonest)

Each document i of a chunk:

    picks       1 + Poisson(labels_per_document − 1) categories, each of rank ~ Zipf(K, label_exponent);
                category id = its rank, so category 0 is the commonest; repeated picks count once
    tokens      L_i = 1 + Poisson(words_per_document − 1)
    each token  with probability topic_share: a topical word of one of the document's categories k
                (chosen uniformly among them): topic word j ~ Zipf(topic_size, 1.0), word id
                h(seed, k·topic_size + j) mod V, h a 64-bit mixing hash (splitmix64's finaliser);
                otherwise a background word: rank ~ Zipf(V, word_exponent), word id
                (a·rank + b) mod V, a bijection (gcd(a, V) = 1) so frequent words are spread over the
                id range, as in a real vocabulary
    X_iw        the number of tokens of word w in document i (float32); Y_ik = 1 for its categories (int8)

So a category is learnable from its topic words (Naive Bayes has real signal) while category
frequencies span the long tail. Memory is that of one chunk (O(chunk_documents · words_per_document)).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator

import numpy as np
import scipy.sparse as sp

from mlnb.errors import MlnbError

# Zipf–Mandelbrot shift q in f(x) ∝ (x + q)^(−s): flattens the very top of the law, as in real
# vocabularies, and keeps φ(q) finite
_SHIFT = 2.7
_TOPIC_EXPONENT = 1.0
_MASK64 = np.uint64(0xFFFFFFFFFFFFFFFF)


def zipf_ranks(u: np.ndarray, n: int, exponent: float) -> np.ndarray:
    """(m,) int64 ranks in [0, n): the inverse CDF of f(x) ∝ (x + q)^(−s) at u, floored (module docstring)."""
    low, high = _SHIFT, n + _SHIFT
    if abs(1.0 - exponent) < 1e-9:
        y = np.exp((1.0 - u) * math.log(low) + u * math.log(high))
    else:
        power = 1.0 - exponent
        y = ((1.0 - u) * low ** power + u * high ** power) ** (1.0 / power)
    ranks = np.floor(y - _SHIFT).astype(np.int64)
    np.clip(ranks, 0, n - 1, out=ranks)
    return ranks


def mix64(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser of uint64 x: z ^= z >> 30; z *= 0xbf58476d1ce4e5b9; z ^= z >> 27;
    z *= 0x94d049bb133111eb; z ^= z >> 31 (products mod 2⁶⁴)."""
    z = np.asarray(x, dtype=np.uint64).copy()
    with np.errstate(over="ignore"):
        z ^= z >> np.uint64(30)
        z *= np.uint64(0xBF58476D1CE4E5B9)
        z ^= z >> np.uint64(27)
        z *= np.uint64(0x94D049BB133111EB)
        z ^= z >> np.uint64(31)
    return z


class LongTailCorpus:
    """Documents with Zipf category and word frequencies and topical words per category (module docstring).

    Parameters
    ----------
    n_documents, n_features, n_categories : corpus size (documents, V, K)
    words_per_document : mean tokens per document (≥ 1)
    labels_per_document : mean category picks per document (≥ 1; repeated picks count once)
    word_exponent, label_exponent : Zipf exponents of background words and of categories (≥ 0)
    topic_share : share of tokens drawn from the document's categories' topic words, in [0, 1]
    chunk_documents : documents per chunk (the last chunk holds the rest)
    seed : the seed of everything
    topic_size : topic words per category
    """

    def __init__(self, n_documents: int, n_features: int, n_categories: int, words_per_document: float = 100,
                 labels_per_document: float = 3, word_exponent: float = 1.1, label_exponent: float = 1.0,
                 topic_share: float = 0.5, chunk_documents: int = 10_000, seed: int = 0, topic_size: int = 50):
        for key, value in (("n_documents", n_documents), ("n_features", n_features),
                           ("n_categories", n_categories), ("chunk_documents", chunk_documents),
                           ("topic_size", topic_size), ("words_per_document", words_per_document),
                           ("labels_per_document", labels_per_document)):
            if not value >= 1:
                raise MlnbError(f"LongTailCorpus: {key} must be at least 1, got {value}")
        for key, value in (("word_exponent", word_exponent), ("label_exponent", label_exponent)):
            if not value >= 0:
                raise MlnbError(f"LongTailCorpus: {key} must be at least 0, got {value}")
        if not 0.0 <= topic_share <= 1.0:
            raise MlnbError(f"LongTailCorpus: topic_share must be in [0, 1], got {topic_share}")
        if n_features >= 2**31 or n_categories >= 2**31:
            raise MlnbError(f"LongTailCorpus: n_features and n_categories must be below 2^31, got "
                            f"{n_features} and {n_categories}")
        if not isinstance(seed, (int, np.integer)) or seed < 0:
            raise MlnbError(f"LongTailCorpus: seed must be a non-negative integer, got {seed!r}")
        self.n_documents = int(n_documents)
        self.n_features = int(n_features)
        self.n_categories = int(n_categories)
        self.words_per_document = float(words_per_document)
        self.labels_per_document = float(labels_per_document)
        self.word_exponent = float(word_exponent)
        self.label_exponent = float(label_exponent)
        self.topic_share = float(topic_share)
        self.chunk_documents = int(chunk_documents)
        self.seed = int(seed)
        self.topic_size = int(topic_size)
        constants = np.random.default_rng(np.random.SeedSequence(self.seed, spawn_key=(2**32,)))
        # the background permutation word = (a·rank + b) mod V: a coprime to V, so a bijection
        a = int(constants.integers(1, max(2, self.n_features)))
        while math.gcd(a, self.n_features) != 1:
            a += 1
        self._word_step, self._word_offset = a, int(constants.integers(0, self.n_features))
        self._topic_salt = np.uint64(constants.integers(0, 2**63))

    def __repr__(self) -> str:
        return (f"LongTailCorpus(n_documents={self.n_documents}, n_features={self.n_features}, "
                f"n_categories={self.n_categories}, words_per_document={self.words_per_document:g}, "
                f"labels_per_document={self.labels_per_document:g}, word_exponent={self.word_exponent:g}, "
                f"label_exponent={self.label_exponent:g}, topic_share={self.topic_share:g}, "
                f"chunk_documents={self.chunk_documents}, seed={self.seed}, topic_size={self.topic_size})")

    @property
    def n_chunks(self) -> int:
        return -(-self.n_documents // self.chunk_documents)

    def chunk_size(self, i: int) -> int:
        """Documents in chunk i: chunk_documents, the last chunk the rest."""
        self._check_chunk(i)
        return min(self.chunk_documents, self.n_documents - i * self.chunk_documents)

    def split(self, test_share: float) -> tuple[range, range]:
        """(training chunk ids, test chunk ids): the last round(test_share · n_chunks) chunks test (at least
        one, and at least one left to train, when 0 < test_share < 1), so the documents are disjoint."""
        if not 0.0 <= test_share < 1.0:
            raise MlnbError(f"LongTailCorpus.split: test_share must be in [0, 1), got {test_share}")
        n_test = round(test_share * self.n_chunks)
        if test_share > 0:
            n_test = max(1, n_test)
            if n_test >= self.n_chunks:
                raise MlnbError(f"LongTailCorpus.split: {self.n_chunks} chunk(s) cannot be split into training "
                                f"and test chunks; set chunk_documents below {self.chunk_documents}")
        return range(0, self.n_chunks - n_test), range(self.n_chunks - n_test, self.n_chunks)

    def chunks(self, chunk_ids: Iterable[int] | None = None) -> Iterator[tuple[sp.csr_matrix, sp.csr_matrix]]:
        """(X, Y) of each chunk of ``chunk_ids`` (all, in order, by default)."""
        for i in (range(self.n_chunks) if chunk_ids is None else chunk_ids):
            yield self.chunk(i)

    def background_word(self, ranks: np.ndarray) -> np.ndarray:
        """(m,) int64: the word id of each background frequency rank, (a·rank + b) mod V."""
        ranks = np.asarray(ranks, dtype=np.int64)
        # a·rank can pass 2⁶³ for V near 2³¹; mod V first keeps it below V², exact in int64 (V < 2³¹)
        return ((ranks % self.n_features) * (self._word_step % self.n_features) + self._word_offset) % self.n_features

    def topic_word(self, categories: np.ndarray, positions: np.ndarray) -> np.ndarray:
        """(m,) int64: word id of topic word ``positions`` of each of ``categories``,
        mix64(salt + k·topic_size + j) mod V."""
        slot = np.asarray(categories, dtype=np.uint64) * np.uint64(self.topic_size) + \
            np.asarray(positions, dtype=np.uint64)
        with np.errstate(over="ignore"):
            hashed = mix64(slot + self._topic_salt)
        return (hashed % np.uint64(self.n_features)).astype(np.int64)

    def chunk(self, i: int) -> tuple[sp.csr_matrix, sp.csr_matrix]:
        """(X (n × V) CSR float32 token counts, Y (n × K) CSR int8) of chunk i: a function of (seed, i) alone."""
        n = self.chunk_size(i)
        rng = np.random.default_rng(np.random.SeedSequence(self.seed, spawn_key=(int(i),)))
        V, K = self.n_features, self.n_categories
        # labels: 1 + Poisson picks, each a Zipf category, repeats counted once
        picks = 1 + rng.poisson(self.labels_per_document - 1.0, size=n)
        pick_doc = np.repeat(np.arange(n, dtype=np.int64), picks)
        pick_category = zipf_ranks(rng.random(pick_doc.size), K, self.label_exponent)
        Y = _rows(pick_doc, pick_category, n, K, np.int8)
        Y.data[:] = 1
        # tokens: background Zipf words, a topic_share of them replaced by topic words of a label
        lengths = 1 + rng.poisson(self.words_per_document - 1.0, size=n)
        token_doc = np.repeat(np.arange(n, dtype=np.int64), lengths)
        words = self.background_word(zipf_ranks(rng.random(token_doc.size), V, self.word_exponent))
        topical = np.flatnonzero(rng.random(token_doc.size) < self.topic_share)
        doc = token_doc[topical]
        n_labels = np.diff(Y.indptr)
        label = Y.indices[Y.indptr[doc] + (rng.random(doc.size) * n_labels[doc]).astype(np.int64)]
        position = zipf_ranks(rng.random(doc.size), self.topic_size, _TOPIC_EXPONENT)
        words[topical] = self.topic_word(label, position)
        X = _rows(token_doc, words, n, V, np.float32)
        return X, Y

    def _check_chunk(self, i: int) -> None:
        if not 0 <= i < self.n_chunks:
            raise MlnbError(f"LongTailCorpus: chunk {i} out of range: there are {self.n_chunks} chunks "
                            f"(0 to {self.n_chunks - 1})")


def _rows(row: np.ndarray, column: np.ndarray, n: int, width: int, dtype) -> sp.csr_matrix:
    """CSR (n × width) of ones at (row, column), repeats summed; ``row`` sorted, so its entries are
    already each row's run and only the columns within a row need sorting."""
    index_dtype = np.int32 if max(row.size, width) < np.iinfo(np.int32).max else np.int64
    indptr = np.zeros(n + 1, dtype=index_dtype)
    np.cumsum(np.bincount(row, minlength=n), out=indptr[1:])
    M = sp.csr_matrix((np.ones(row.size, dtype=dtype), column.astype(index_dtype), indptr), shape=(n, width))
    M.sum_duplicates()
    return M
