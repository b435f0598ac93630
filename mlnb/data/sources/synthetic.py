"""``data.source = "synthetic"``: a seeded RCV1-like corpus (:func:`mlnb.data.synthetic.make_rcv1_like`)."""

from __future__ import annotations

from dataclasses import dataclass

from mlnb.data.registry import MAX_CATEGORIES, MAX_DOCUMENTS, MAX_FEATURES, Request, SourceKind, generated_shape
from mlnb.errors import MlnbError
from mlnb.options import option


@dataclass
class SyntheticConfig:
    n_documents: int = option(20_000, "documents generated, train and test together (RCV1: 804414)", min=2,
                              max=MAX_DOCUMENTS)
    n_features: int = option(10_000, "vocabulary size (RCV1: 47236)", min=2, max=MAX_FEATURES)
    n_categories: int = option(103, "categories, 4 roots plus a two-level hierarchy (RCV1: 103)", min=1,
                               max=MAX_CATEGORIES)
    words_per_document: float = option(77.0, "mean distinct words per document (RCV1: ~77)", min=1,
                                       max=MAX_FEATURES)
    extra_topics: float = option(0.75, "mean topic picks beyond the first; sets labels per document", min=0)
    topical_fraction: float = option(0.25, "share of tokens drawn from the document's topics", min=0, max=1)
    topic_words: int = option(200, "words in each topic's own vocabulary (at most n_features − min(50, "
                              "n_features/10): the commonest words are nobody's topic words)", min=1, max=MAX_FEATURES)
    zipf_exponent: float = option(1.0, "exponent of the background word-frequency law", min=0,
                                  exclusive_min=True)


def load(s: SyntheticConfig, request: Request):
    from mlnb.data.synthetic import make_rcv1_like

    try:
        return make_rcv1_like(n_documents=s.n_documents, n_features=s.n_features, n_categories=s.n_categories,
                              words_per_document=s.words_per_document, extra_topics=s.extra_topics,
                              topical_fraction=s.topical_fraction, topic_words=s.topic_words,
                              zipf_exponent=s.zipf_exponent, test_fraction=request.test_fraction, seed=request.seed)
    except MlnbError as error:  # the generator names its arguments: these are data.synthetic.* keys
        message = str(error)
        raise MlnbError(message if message.startswith(("data.", "test_fraction")) else
                        f"data.synthetic.{message}") from None


def shape(s: SyntheticConfig, data, features):
    """n_documents split by data.test_fraction, its n_features and n_categories; nnz ≈ n_documents ·
    words_per_document (the mean distinct words of a document)."""
    return generated_shape("synthetic", f"data.synthetic.n_documents = {s.n_documents}", s.n_documents,
                           s.n_features, s.n_categories, int(s.n_documents * s.words_per_document),
                           data.test_fraction)


SOURCE = SourceKind(name="synthetic", options=SyntheticConfig, load=load, labels="multi", shape=shape,
                    help="a seeded corpus with RCV1-v2's shape and statistics (no file)")
