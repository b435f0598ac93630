r"""A seeded synthetic corpus with the shape and statistics of RCV1-v2.

What it imitates (RCV1-v2: 804,414 documents, 47,236 terms, 103 topics):

* a topic hierarchy: 4 roots (like CCAT, ECAT, GCAT, MCAT), about half of the
  other topics under a root and the rest one level deeper; a document in a
  topic is also in all of that topic's ancestors, so labels are correlated;
* topic prevalence spanning four orders of magnitude (RCV1: CCAT ≈ 47 %,
  the rarest topics a handful of documents in 800k);
* about 3 labels per document;
* a vocabulary with Zipf-like word frequencies and about 77 distinct words per
  document;
* topical words: each topic has its own small set of (mid-frequency) words,
  and a share ``topical_fraction`` of a document's tokens is drawn from the
  topic sets of its labels, the rest from the background Zipf distribution. So
  the task is learnable, but noisy and with overlapping topics.

Generation is vectorised over tokens within chunks of documents (no Python
loop per document); every chunk has its own seed derived from ``seed``, so
the result depends only on the arguments, not on how many chunks are made at
once (``GENERATING_THREADS`` of them, each on a thread) or in which order; the
chunks are stacked on every thread (``mlnb._kernels.csr.stack_rows``).

    topic picks per document   q_i = 1 + Poisson(λ)
    picked topics              k ~ Categorical(w),  w_k log-spaced over 4 decades
    labels                     Y_i = ancestors-closure of the picks
    tokens per document        L_i ~ LogNormal, so distinct words ≈ words_per_document
    each token                 topical with prob. ρ: a random label of the document,
                               then a word of that topic (Zipf within the topic);
                               otherwise a word from the background Zipf
    X_iw                       number of tokens of word w in document i
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import scipy.sparse as sp

from mlnb import progress
from mlnb._kernels.csr import stack_rows
from mlnb._kernels.jit import HAVE_NUMBA, njit, prange, worker_threads
from mlnb.data.dataset import Dataset, RowOrigin, hash_split
from mlnb.data.splits import hash_split_rule
from mlnb.data.validate import check_features
from mlnb.errors import MlnbError

ROOT_CODES = ("C", "E", "G", "M")
_CHUNK_DOCUMENTS = 50_000
#: chunks generated at once, at most (each on a thread; numpy's draws and scipy's sorts release the
#: GIL). Each adds its temporaries to the peak (X itself is held twice while stacked); eight stays below
#: the whole study's peak, and on 16 cores generates the 16 chunks in two rounds, not four (the peaks
#: measured by experiments/bench_serial.py --study)
GENERATING_THREADS = 8
#: one compiled parallel search at a time: it runs on every thread itself
_SEARCH = threading.Lock()
# Zipf–Mandelbrot shift q in p(rank) ∝ 1 / (rank + q)^s: flattens the very top of the
# word-frequency law, as in real newswire vocabularies
_ZIPF_SHIFT = 2.7


def _hierarchy(n_categories: int, rng: np.random.Generator) -> tuple[np.ndarray, list[str]]:
    """Parent of each category (−1 for roots) and RCV1-style codes (CCAT, C15, C151)."""
    n_roots = min(len(ROOT_CODES), n_categories)
    parent = np.full(n_categories, -1)
    depth = np.zeros(n_categories, dtype=int)
    n_level1 = n_roots + (n_categories - n_roots + 1) // 2
    for k in range(n_roots, n_categories):  # a loop over categories, not documents
        candidates = np.arange(n_roots) if k < n_level1 else np.arange(n_roots, n_level1)
        parent[k] = rng.choice(candidates)
        depth[k] = depth[parent[k]] + 1
    names: list[str] = []
    children_seen = np.zeros(n_categories, dtype=int)
    for k in range(n_categories):
        if parent[k] < 0:
            names.append(ROOT_CODES[k] + "CAT")
            continue
        children_seen[parent[k]] += 1
        stem = ROOT_CODES[_root_of(k, parent)] if depth[k] == 1 else names[parent[k]]
        names.append(f"{stem}{children_seen[parent[k]]}")
    return parent, names


def _root_of(k: int, parent: np.ndarray) -> int:
    while parent[k] >= 0:
        k = parent[k]
    return k


def _ancestor_closure(parent: np.ndarray) -> sp.csr_matrix:
    """A (K × K) with A[j, k] = 1 if k is j or an ancestor of j."""
    rows, cols = [], []
    for j in range(parent.size):
        k = j
        while k >= 0:
            rows.append(j)
            cols.append(k)
            k = parent[k]
    return sp.csr_matrix((np.ones(len(rows), dtype=np.int8), (rows, cols)),
                         shape=(parent.size, parent.size))


def _first_topic_rank(n_features: int) -> int:
    """Topical words are drawn from the frequency ranks [this, n_features): not the commonest words."""
    return min(50, n_features // 10)


def _zipf_cdf(n: int, exponent: float) -> np.ndarray:
    weights = 1.0 / (np.arange(n) + _ZIPF_SHIFT) ** exponent
    cdf = np.cumsum(weights)
    return cdf / cdf[-1]


def _draw(cdf: np.ndarray, u: np.ndarray) -> np.ndarray:
    """min(#{i : cdf[i] <= u_t}, n − 1) for each u_t in [0, 1): ``np.searchsorted(cdf, u, "right")``, clipped.

    With numba, the same integers without a binary search per value (that search was most of the
    corpus's generation time): a guide table over M = 2^m ≥ 2n equal buckets of [0, 1) holds, for bucket
    b, the count of cdf values ≤ b / M. Both u·M and b / M are exact in floating point (M is a power of
    two), so the bucket b = ⌊u·M⌋ of a value starts at a count that is never too large, and stepping up
    while cdf[i] <= u ends at the exact count, after n / (2M) ≤ 1/4 steps on average whatever the
    distribution.
    """
    n = cdf.size
    if not HAVE_NUMBA:
        return np.minimum(np.searchsorted(cdf, u, side="right"), n - 1)
    M = 1 << (2 * n - 1).bit_length()  # the power of two ≥ 2n
    guide = np.searchsorted(cdf, np.arange(M) / M, side="right")
    drawn = np.empty(u.size, dtype=np.intp)
    with _SEARCH:
        _guided_search(cdf, guide, u, drawn)
    return drawn


if HAVE_NUMBA:
    @njit(parallel=True, cache=True)
    def _guided_search(cdf, guide, u, drawn):
        """drawn[t] = min(#{i : cdf[i] <= u[t]}, n − 1), starting from the guide table's count (``_draw``).

        Why a kernel: every token's draw on every thread, starting from the guide table's count, where
        ``np.searchsorted`` makes a binary search per draw on one core. Measured by experiments/bench_scale.py (the
        corpus's generation)."""
        n = cdf.size
        M = guide.size
        for t in prange(u.size):
            i = guide[np.intp(u[t] * M)]
            while i < n and cdf[i] <= u[t]:
                i += 1
            drawn[t] = min(i, n - 1)


def _generating_threads() -> int:
    """Chunks generated at once: numba's thread count (every core unless set), at most GENERATING_THREADS."""
    return min(GENERATING_THREADS, worker_threads())


class _Corpus:
    """The fixed parts of a corpus: hierarchy, topic weights and word distributions."""

    def __init__(self, n_features, n_categories, topic_words, zipf_exponent, rng):
        self.parent, self.names = _hierarchy(n_categories, rng)
        self.closure = _ancestor_closure(self.parent)
        # pick weights over four decades; common topics get low ids within each level
        # (as in RCV1's code order, roots first), with some shuffling of neighbours
        # Roots are rarely picked themselves: like RCV1's CCAT, they are common because
        # their descendants are.
        n_roots = int((self.parent < 0).sum())
        inner = n_categories - n_roots
        order = n_roots + np.argsort(np.arange(inner) + rng.uniform(0, 6, inner), kind="stable")
        weights = np.full(n_categories, 1e-4)
        weights[order] = np.logspace(0, -4, inner) if inner else []
        self.pick_cdf = np.cumsum(weights)
        self.pick_cdf /= self.pick_cdf[-1]
        self.word_of_rank = rng.permutation(n_features)  # word id of each frequency rank
        self.background_cdf = _zipf_cdf(n_features, zipf_exponent)
        # topical words come from the middle of the frequency ranking, as real ones do
        low, high = _first_topic_rank(n_features), n_features
        size = topic_words  # at most high − low (make_rcv1_like checks)
        ranks = np.vstack([rng.choice(np.arange(low, high), size=size, replace=False)
                           for _ in range(n_categories)])  # (K, size)
        self.topic_word = self.word_of_rank[ranks]
        self.topic_cdf = _zipf_cdf(size, 1.0)


def make_rcv1_like(n_documents: int = 20_000, n_features: int = 10_000, n_categories: int = 103,
                   words_per_document: float = 77.0, extra_topics: float = 0.75,
                   topical_fraction: float = 0.25, topic_words: int = 200,
                   zipf_exponent: float = 1.0, test_fraction: float = 0.5, seed: int = 0) -> Dataset:
    """Generate an RCV1-like multilabel corpus of word counts, with a seeded split.

    Parameters
    ----------
    n_documents, n_features, n_categories : corpus size (RCV1: 804414, 47236, 103)
    words_per_document : target mean of distinct words per document (RCV1: ~77)
    extra_topics : λ, mean number of topic picks beyond the first (sets labels/document)
    topical_fraction : ρ, share of tokens drawn from the document's topics
    topic_words : words in each topic's own vocabulary
    zipf_exponent : exponent of the background word-frequency law
    test_fraction, seed : the split (a seeded hash of each document's number, as streamed sources
        split), and the seed of everything
    """
    _check(n_documents=n_documents, n_features=n_features, n_categories=n_categories,
           words_per_document=words_per_document, topic_words=topic_words)
    if not 0.0 <= topical_fraction <= 1.0:
        raise MlnbError(f"topical_fraction must be in [0, 1], got {topical_fraction}")
    if words_per_document > n_features / 2:
        raise MlnbError(f"words_per_document ({words_per_document}) must be at most half of "
                        f"n_features ({n_features})")
    available = n_features - _first_topic_rank(n_features)
    if topic_words > available:  # refused, not clamped: the results' config must say what was used
        raise MlnbError(f"topic_words = {topic_words} is more than the {available} mid-frequency words that "
                        f"n_features = {n_features} leaves for a topic's vocabulary; set topic_words <= {available} "
                        f"or n_features >= {next(V for V in range(topic_words, topic_words + 51) if V - _first_topic_rank(V) >= topic_words)}")
    seeds = np.random.SeedSequence(seed)
    corpus_seed, chunk_seed = seeds.spawn(2)
    corpus = _Corpus(n_features, n_categories, topic_words, zipf_exponent,
                     np.random.default_rng(corpus_seed))
    scale = _token_scale(corpus, words_per_document, extra_topics, topical_fraction, n_features,
                         np.random.default_rng(seeds.spawn(1)[0]))
    starts = range(0, n_documents, _CHUNK_DOCUMENTS)
    chunk_rngs = [np.random.default_rng(s) for s in chunk_seed.spawn(len(starts))]

    def chunk(start_and_rng):
        start, rng = start_and_rng
        return _generate_chunk(corpus, min(_CHUNK_DOCUMENTS, n_documents - start), words_per_document * scale,
                               extra_topics, topical_fraction, n_features, rng)

    with ThreadPoolExecutor(max_workers=_generating_threads()) as pool:  # in order, whichever finishes first
        parts = list(progress.track(pool.map(chunk, zip(starts, chunk_rngs)), total=len(starts),
                                    description="synthetic documents"))
    X = check_features(stack_rows([p[0] for p in parts]), "data.synthetic")
    Y = sp.vstack([p[1] for p in parts], format="csr")
    ids = np.arange(n_documents, dtype=np.int64)  # a document's number in the generated sequence
    train, test = hash_split(ids, seed, test_fraction)
    return Dataset(X=X, Y=Y, category_names=corpus.names, train_index=train, test_index=test,
                   feature_names=[f"w{j}" for j in range(n_features)], name="synthetic-rcv1",
                   origins=(RowOrigin("data.synthetic", n_documents),), ids=ids,
                   split_rule=hash_split_rule(seed, test_fraction))


def _check(**sizes) -> None:
    for key, value in sizes.items():
        if not value >= 1:
            raise MlnbError(f"{key} must be at least 1, got {value}")


def _token_scale(corpus, words_per_document, extra_topics, topical_fraction, n_features, rng) -> float:
    """Tokens per distinct word: repeats make a document's distinct words fewer than
    its tokens. Measured on a 2,000-document pilot and corrected once, so the mean
    distinct count lands near ``words_per_document``."""
    scale = 1.3
    for _ in range(2):
        X, _ = _generate_chunk(corpus, 2000, words_per_document * scale, extra_topics,
                               topical_fraction, n_features, rng)
        distinct = np.diff(X.indptr).mean()
        scale *= words_per_document / distinct
    return scale


def _generate_chunk(corpus: _Corpus, n: int, mean_tokens: float, extra_topics: float,
                    topical_fraction: float, n_features: int, rng: np.random.Generator):
    """X (n × V counts) and Y (n × K) for n documents, vectorised over tokens."""
    K = corpus.closure.shape[0]
    # labels: picks, then the ancestors of every pick
    picks_per_doc = 1 + rng.poisson(extra_topics, size=n)
    pick_doc = np.repeat(np.arange(n), picks_per_doc)
    pick_cat = _draw(corpus.pick_cdf, rng.random(pick_doc.size))
    picks = sp.csr_matrix((np.ones(pick_doc.size, dtype=np.int8), (pick_doc, pick_cat)), shape=(n, K))
    Y = (picks @ corpus.closure).astype(bool).astype(np.int8).tocsr()  # (n, K)
    Y.sort_indices()
    # tokens: lengths around the mean, then background or topical words
    sigma = 0.5
    lengths = np.maximum(1, np.round(rng.lognormal(np.log(mean_tokens) - sigma**2 / 2, sigma, n))).astype(np.int64)
    token_doc = np.repeat(np.arange(n), lengths)
    words = corpus.word_of_rank[_draw(corpus.background_cdf, rng.random(token_doc.size))]
    topical = np.flatnonzero(rng.random(token_doc.size) < topical_fraction)
    doc = token_doc[topical]
    n_labels = np.diff(Y.indptr)
    label = Y.indices[Y.indptr[doc] + (rng.random(doc.size) * n_labels[doc]).astype(np.int64)]
    words[topical] = corpus.topic_word[label, _draw(corpus.topic_cdf, rng.random(doc.size))]
    # a document's tokens are consecutive (token_doc is sorted): they are its CSR row as they stand,
    # with repeated words that sum_duplicates counts (the index dtype scipy's COO conversion would choose)
    index_dtype = np.int32 if max(token_doc.size, n_features) <= np.iinfo(np.int32).max else np.int64
    indptr = np.zeros(n + 1, dtype=index_dtype)
    np.cumsum(lengths, out=indptr[1:])
    X = sp.csr_matrix((np.ones(token_doc.size, dtype=np.float32), words.astype(index_dtype), indptr),
                      shape=(n, n_features))
    X.sum_duplicates()
    return X, Y
