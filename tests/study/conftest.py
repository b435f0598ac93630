"""Fixtures of the study stages' tests: the same documents in memory and as a chunk source."""

import numpy as np
import pytest
import scipy.sparse as sp

from mlnb.data.stream import Chunk, ChunkSource, Partition
from mlnb.study.documents import InMemoryDocuments, StreamedDocuments


class MatrixSource(ChunkSource):
    """An in-test source: the rows of X, Y in two partitions, ids = row numbers · 3 (not consecutive)."""

    def __init__(self, X, Y):
        self.X, self.Y = X, Y
        self.n_features, self.category_names, self.name = X.shape[1], [f"c{k}" for k in range(Y.shape[1])], "m"
        self.ids = np.arange(X.shape[0], dtype=np.int64) * 3

    def partitions(self):
        n = self.X.shape[0]
        return [Partition("m", 0, 0, 0, n // 2, n // 2), Partition("m", 1, 0, n // 2, n, n - n // 2)]

    def read(self, partition, chunk_size):
        for start in range(partition.start, partition.stop, chunk_size):
            rows = np.arange(start, min(start + chunk_size, partition.stop))
            yield Chunk(self.X[rows], self.Y[rows], self.ids[rows], "m", int(rows[0]) + 1)


@pytest.fixture
def documents():
    rng = np.random.default_rng(0)
    X = sp.random(500, 40, density=0.1, format="csr", dtype=np.float32, random_state=1)
    Y = sp.csr_matrix((rng.random((500, 3)) < 0.3).astype(np.int8))
    source = MatrixSource(X, Y)
    return InMemoryDocuments(X, Y, source.ids, source.category_names), StreamedDocuments(source, 37, 2)
