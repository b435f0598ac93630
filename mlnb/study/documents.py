r"""Training or evaluation documents: matrices in memory, or a source read in chunks.

The study loop asks documents the same few things whatever they are: their labels' counts,
their dimensions, and a part of them. Parts are carved by one seeded hash of each document's
id (``mlnb.data.hashing.hash_unit``, the rule that splits train from test), so a validation
split, a cross-validation fold or a sweep's validation part holds the same documents in
memory, streamed and on any number of Dask workers:

    bucket [lo, hi) of purpose p:   lo ≤ u(seed_p, id) < hi,      seed_p = seed + p·2^32

    held-out part of a validation split (fraction f):  [0, f)
    fold j of k (cross-validation):                    [j/k, (j + 1)/k)

Each purpose has its own seed_p (``PURPOSES``), so the parts of different purposes are
independent of each other and of the train/test split (seeds are below 2^32).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from mlnb.data.hashing import hash_unit
from mlnb.data.stream import Chunk, ChunkSource, SelectedSource

#: what a bucket is for -> p of its seed seed + p·2^32 (the train/test split itself uses p = 0)
PURPOSES = {"validation": 1, "sweep": 2, "sample": 3}


@dataclass(frozen=True)
class Bucket:
    """The documents whose u(seed + p·2^32, id) lies in [lo, hi) — or outside it (``inside=False``).
    Small and picklable: a Dask worker selects its partition's documents on its own."""

    seed: int
    purpose: str
    lo: float
    hi: float
    inside: bool = True

    def mask(self, ids: np.ndarray) -> np.ndarray:
        u = hash_unit(ids, self.seed + (PURPOSES[self.purpose] << 32))
        chosen = (u >= self.lo) & (u < self.hi)
        return chosen if self.inside else ~chosen

    def complement(self) -> Bucket:
        return Bucket(self.seed, self.purpose, self.lo, self.hi, not self.inside)


def validation_buckets(seed: int, purpose: str, *, fraction: float | None = None,
                       folds: int | None = None) -> list[Bucket]:
    """The held-out buckets of a validation split (one, [0, fraction)) or of k folds."""
    if fraction is not None:
        return [Bucket(seed, purpose, 0.0, float(fraction))]
    return [Bucket(seed, purpose, j / folds, (j + 1) / folds) for j in range(folds)]


@dataclass(frozen=True, eq=False)
class InMemoryDocuments:
    """Documents held as matrices: X (n × V CSR float32), Y (n × K CSR 0/1), ids (n,) int64."""

    X: sp.csr_matrix
    Y: sp.csr_matrix
    ids: np.ndarray
    category_names: list
    in_memory = True

    @property
    def n_documents(self) -> int:
        return self.X.shape[0]

    @property
    def n_features(self) -> int:
        return self.X.shape[1]

    @property
    def n_categories(self) -> int:
        return self.Y.shape[1]

    def select(self, bucket: Bucket) -> InMemoryDocuments:
        rows = np.flatnonzero(bucket.mask(self.ids))
        return InMemoryDocuments(self.X[rows], self.Y[rows], self.ids[rows], self.category_names)

    def rows(self, rows: np.ndarray) -> InMemoryDocuments:
        return InMemoryDocuments(self.X[rows], self.Y[rows], self.ids[rows], self.category_names)


@dataclass(frozen=True, eq=False)
class StreamedDocuments:
    """Documents read in chunks of ``chunk_size`` from ``source`` (here, or by Dask workers, one
    partition each); minibatch learners shuffle within ``shuffle_buffer`` chunks."""

    source: ChunkSource
    chunk_size: int
    shuffle_buffer: int
    in_memory = False

    @property
    def n_features(self) -> int:
        return self.source.n_features

    @property
    def n_categories(self) -> int:
        return self.source.n_categories

    @property
    def category_names(self) -> list:
        return list(self.source.category_names)

    def select(self, bucket: Bucket) -> StreamedDocuments:
        share = (bucket.hi - bucket.lo) if bucket.inside else 1 - (bucket.hi - bucket.lo)
        return StreamedDocuments(SelectedSource(self.source, bucket.mask, share), self.chunk_size, self.shuffle_buffer)

    def chunks(self) -> Iterator[Chunk]:
        return self.source.chunks(self.chunk_size)

    def matrices(self) -> InMemoryDocuments:
        """Every document read into memory (for parts the study holds whole: validation scores)."""
        X, Y, ids = [], [], []
        for chunk in self.chunks():
            X.append(chunk.X)
            Y.append(chunk.Y)
            ids.append(chunk.ids)
        V, K = self.n_features, self.n_categories
        if not X:
            return InMemoryDocuments(sp.csr_matrix((0, V), dtype=np.float32), sp.csr_matrix((0, K), dtype=np.int8),
                                     np.zeros(0, dtype=np.int64), self.category_names)
        return InMemoryDocuments(sp.vstack(X, format="csr"), sp.vstack(Y, format="csr"), np.concatenate(ids),
                                 self.category_names)


Documents = InMemoryDocuments | StreamedDocuments
