"""Documents in memory and streamed are carved by the same seeded hash of their ids."""

import numpy as np
import pytest

from mlnb.study.documents import Bucket, validation_buckets


def test_folds_cover_every_document_once(documents):
    memory, _ = documents
    buckets = validation_buckets(4, "validation", folds=5)
    counts = sum(bucket.mask(memory.ids).astype(int) for bucket in buckets)
    assert (counts == 1).all()
    sizes = [int(bucket.mask(memory.ids).sum()) for bucket in buckets]
    assert all(abs(size - 100) < 4 * np.sqrt(500 * 0.2 * 0.8) for size in sizes), sizes


def test_a_bucket_and_its_complement_split_the_documents(documents):
    memory, _ = documents
    bucket = Bucket(1, "validation", 0.0, 0.3)
    inside, outside = bucket.mask(memory.ids), bucket.complement().mask(memory.ids)
    assert not (inside & outside).any() and (inside | outside).all()
    assert abs(inside.mean() - 0.3) < 4 * np.sqrt(0.3 * 0.7 / 500)


def test_purposes_and_seeds_give_independent_parts(documents):
    memory, _ = documents
    a = Bucket(1, "validation", 0.0, 0.5).mask(memory.ids)
    assert (a != Bucket(1, "sweep", 0.0, 0.5).mask(memory.ids)).any()
    assert (a != Bucket(2, "validation", 0.0, 0.5).mask(memory.ids)).any()


@pytest.mark.parametrize("inside", [True, False])
def test_the_same_documents_selected_in_memory_and_streamed(documents, inside):
    memory, streamed = documents
    bucket = Bucket(9, "validation", 0.25, 0.6, inside)
    a, b = memory.select(bucket), streamed.select(bucket).matrices()
    np.testing.assert_array_equal(a.ids, b.ids)
    assert (a.X != b.X).nnz == 0 and (a.Y != b.Y).nnz == 0
    lines = np.concatenate([chunk.row_lines() for chunk in streamed.select(bucket).chunks()])
    np.testing.assert_array_equal(lines, b.ids // 3 + 1)  # each row keeps its own line, for messages
