"""The seeded long-tailed corpus (:class:`mlnb.data.long_tail.LongTailCorpus`) as a chunk source.

Documents are made on demand, one generator block of :data:`GENERATOR_BLOCK` documents at a time, so a
streamed study never holds the corpus: each block is a function of (seed, block number) alone, and a
document's id is its position in the corpus (block · GENERATOR_BLOCK + row). Read whole or streamed, at
any chunk size, the documents and ids are the same; the train/test split is the seeded hash of the ids
(:func:`mlnb.data.stream.split_source`), the rule every source without a given test part follows.

Rows are named 'data.long_tail:N' in messages, N the 1-based document number (there is no file).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from mlnb.data.long_tail import LongTailCorpus
from mlnb.data.stream import Chunk, ChunkSource, Partition, check_chunk_size, make_chunk

#: documents per generator block: part of what defines the corpus (a block is drawn from its own seed), so fixed
GENERATOR_BLOCK = 10_000
#: the 'file' of every row, in messages
WHERE = "data.long_tail"


def corpus(n_documents: int, n_features: int, n_categories: int, words_per_document: float,
           labels_per_document: float, word_exponent: float, label_exponent: float, topic_share: float,
           topic_size: int, seed: int) -> LongTailCorpus:
    """The generator of ``data.long_tail``'s options, in blocks of GENERATOR_BLOCK documents."""
    return LongTailCorpus(n_documents=n_documents, n_features=n_features, n_categories=n_categories,
                          words_per_document=words_per_document, labels_per_document=labels_per_document,
                          word_exponent=word_exponent, label_exponent=label_exponent, topic_share=topic_share,
                          chunk_documents=GENERATOR_BLOCK, seed=seed, topic_size=topic_size)


def category_names(n_categories: int) -> list[str]:
    """'c0' .. 'c{K-1}': category k is the k-th commonest by the generator's law."""
    return [f"c{k}" for k in range(n_categories)]


class LongTailSource(ChunkSource):
    """Every document of ``generator`` (unsplit), one partition per generator block; a partition's row
    range start .. stop is any run of its block's rows (``reads_row_ranges``)."""

    reads_row_ranges = True

    def __init__(self, generator: LongTailCorpus):
        self.generator = generator
        self.n_features = generator.n_features
        self.category_names = category_names(generator.n_categories)
        self.feature_names = None
        self.name = "long_tail"

    def partitions(self) -> list[Partition]:
        g = self.generator
        return [Partition(path=WHERE, number=k, first_id=k * g.chunk_documents, start=0, stop=g.chunk_size(k),
                          n_documents=g.chunk_size(k)) for k in range(g.n_chunks)]

    def read(self, partition: Partition, chunk_size: int) -> Iterator[Chunk]:
        chunk_size = check_chunk_size(chunk_size)
        X, Y = self.generator.chunk(partition.number)
        stop = X.shape[0] if partition.stop is None else partition.stop
        for start in range(partition.start, stop, chunk_size):
            end = min(start + chunk_size, stop)
            first_id = partition.first_id + start
            ids = first_id + np.arange(end - start, dtype=np.int64)
            yield make_chunk(X[start:end], Y[start:end], ids, WHERE, first_id + 1)
