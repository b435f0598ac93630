"""``data.source = "long_tail"``: a seeded corpus with long-tailed category and word frequencies
(:class:`mlnb.data.long_tail.LongTailCorpus`), read whole or streamed (generated block by block on demand).

Made for label spaces of 10⁴–10⁶ categories (extreme classification): category k is the k-th commonest,
a document's categories are Zipf draws, and each category has its own topic words. The test part is the
seeded hash split of the documents' ids with ``data.test_fraction`` (expected test documents
n_documents · test_fraction). No file is read, so ``mlnb init`` has nothing to detect.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlnb.data.registry import MAX_CATEGORIES, MAX_DOCUMENTS, MAX_FEATURES, Request, SourceKind, generated_shape
from mlnb.options import option


@dataclass
class LongTailConfig:
    n_documents: int = option(20_000, "documents generated, train and test together (data.test_fraction of them "
                              "test, by the seeded hash of their ids)", min=2, max=MAX_DOCUMENTS)
    n_features: int = option(100_000, "vocabulary size V", min=2, max=MAX_FEATURES)
    n_categories: int = option(10_000, "categories K; category k is the k-th commonest", min=1, max=MAX_CATEGORIES)
    words_per_document: float = option(100.0, "mean tokens per document: 1 + Poisson(words_per_document − 1)",
                                       min=1, max=MAX_FEATURES)
    labels_per_document: float = option(3.0, "mean category picks per document: 1 + Poisson(labels_per_document − 1); "
                                        "repeated picks count once", min=1, max=1000)
    word_exponent: float = option(1.1, "Zipf exponent s of background word frequencies, f(r) ∝ (r + 2.7)^(−s)", min=0)
    label_exponent: float = option(1.0, "Zipf exponent of category frequencies (larger: a longer, thinner tail)",
                                   min=0)
    topic_share: float = option(0.5, "share of a document's tokens drawn from its categories' topic words", min=0,
                                max=1)
    topic_size: int = option(50, "topic words of each category (Zipf-weighted, exponent 1)", min=1, max=MAX_FEATURES)
    seed: int = option(0, "seed of the generated corpus (the study's seed sets the train/test split)", min=0,
                       max=2**63 - 1)


def _generator(s: LongTailConfig):
    from mlnb.data.long_tail_stream import corpus

    return corpus(n_documents=s.n_documents, n_features=s.n_features, n_categories=s.n_categories,
                  words_per_document=s.words_per_document, labels_per_document=s.labels_per_document,
                  word_exponent=s.word_exponent, label_exponent=s.label_exponent, topic_share=s.topic_share,
                  topic_size=s.topic_size, seed=s.seed)


def load(s: LongTailConfig, request: Request):
    """Every generated block stacked, split by the seeded hash of the ids 0 .. n_documents − 1."""
    import numpy as np
    import scipy.sparse as sp

    from mlnb.data.dataset import Dataset, RowOrigin
    from mlnb.data.long_tail_stream import WHERE, category_names

    generator = _generator(s)
    blocks = list(generator.chunks())
    X = sp.vstack([X for X, _ in blocks], format="csr")
    Y = sp.vstack([Y for _, Y in blocks], format="csr")
    del blocks
    return Dataset.from_arrays(X, Y, category_names(s.n_categories), None, test_fraction=request.test_fraction,
                               seed=request.seed, name="long_tail", origins=(RowOrigin(WHERE, X.shape[0], 1),),
                               ids=np.arange(X.shape[0], dtype=np.int64))


def open_whole(s: LongTailConfig, request: Request):
    from mlnb.data.long_tail_stream import LongTailSource

    return LongTailSource(_generator(s)), None


def open_streams(s: LongTailConfig, request: Request):
    from mlnb.data.stream import split_source

    whole, _ = open_whole(s, request)
    return split_source(whole, request.seed, request.test_fraction)


def shape(s: LongTailConfig, data, features):
    """n_documents split by data.test_fraction (the expected test part of the hash split), its n_features and
    n_categories; nnz ≈ n_documents · words_per_document (tokens, so an upper bound of the distinct words)."""
    return generated_shape("long_tail", f"data.long_tail.words_per_document = {s.words_per_document:g}",
                           s.n_documents, s.n_features, s.n_categories, round(s.n_documents * s.words_per_document),
                           data.test_fraction)


SOURCE = SourceKind(name="long_tail", options=LongTailConfig, load=load, open_streams=open_streams,
                    open_whole=open_whole, labels="multi", shape=shape,
                    help="a seeded corpus with long-tailed categories and words, generated block by block (no file; "
                    "for 10⁴–10⁶ categories)")
