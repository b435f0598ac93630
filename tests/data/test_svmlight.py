"""svmlight multilabel files: real subsets, compression, and errors that name the line."""

import bz2
import gzip

import numpy as np
import pytest

from mlnb import MlnbError
from mlnb.data.svmlight import load_svmlight_dataset

GOOD = "0,2 1:1.5 3:2\n1 2:1\n2 1:1 4:0.5\n0 3:1\n1,2 2:2 4:1\n0 1:1\n"


def write(path, text, opener=open):
    with opener(path, "wt") as f:
        f.write(text)
    return path


@pytest.mark.parametrize("suffix, opener", [("", open), (".gz", gzip.open), (".bz2", bz2.open)])
def test_reads_plain_and_compressed(tmp_path, suffix, opener):
    path = write(tmp_path / f"tiny.svm{suffix}", GOOD, opener)
    data = load_svmlight_dataset(path, test_fraction=0.5, seed=0)
    assert data.X.shape == (6, 4) and data.Y.shape == (6, 3)
    np.testing.assert_array_equal(data.Y.toarray()[0], [1, 0, 1])
    assert data.X[0, 0] == 1.5 and data.X[0, 2] == 2.0  # 1-based indices


def test_separate_test_file_shares_the_feature_space(tmp_path):
    train = write(tmp_path / "train.svm", "0 1:1\n1 2:1\n")
    test = write(tmp_path / "test.svm", "0 1:1 5:1\n1 2:1\n")
    data = load_svmlight_dataset(train, test_path=test)
    assert data.n_features == 5 and list(data.test_index) == [2, 3]


@pytest.mark.parametrize("text, message", [
    ("0 1:1\n0 1:x\n", r"bad\.svm:2: expected a number after '1:', got 'x'"),
    ("0 1:1\n0 1:1 oops\n", r"bad\.svm:2: expected 'index:value', got 'oops'"),
    ("0 1:1\n0 1:1\na,b 1:1\n", r"bad\.svm:3: expected labels as comma-separated"),
    ("0 0:1\n", r"bad\.svm:1: feature index 0 is below 1"),
])
def test_malformed_line_is_named(tmp_path, text, message):
    path = write(tmp_path / "bad.svm", text)
    with pytest.raises(MlnbError, match=message):
        load_svmlight_dataset(path)


def test_test_file_beyond_n_features_is_named(tmp_path):
    train = write(tmp_path / "train.svm", "0 1:1\n1 2:1\n")
    test = write(tmp_path / "test.svm", "0 1:1\n1 9:1\n")
    with pytest.raises(MlnbError, match=r"test\.svm:2: feature index 9 is beyond n_features = 2"):
        load_svmlight_dataset(train, test_path=test, n_features=2)


def test_missing_and_empty_files(tmp_path):
    with pytest.raises(MlnbError, match="nowhere.svm: no such file"):
        load_svmlight_dataset(tmp_path / "nowhere.svm")
    with pytest.raises(MlnbError, match="empty.svm"):
        load_svmlight_dataset(write(tmp_path / "empty.svm", ""))


def test_real_rcv1_subset(rcv1_subset):
    assert rcv1_subset.X.shape == (6000, 47236) and rcv1_subset.Y.shape == (6000, 101)
    assert 70 < rcv1_subset.describe()["mean_features_per_document"] < 85
    norms = np.sqrt(np.asarray(rcv1_subset.X.multiply(rcv1_subset.X).sum(axis=1)).ravel())
    # LYRL2004 cosine-normalised TF-IDF (a few rows of the subset have norm √2 as distributed)
    assert np.mean(np.abs(norms - 1.0) < 1e-3) > 0.95


def test_a_glob_of_shards_reads_as_streamed_with_file_ids_and_the_hash_split(tmp_path):
    from mlnb.data.hashing import FILE_ID_SHIFT, split_mask
    from mlnb.data.stream import svmlight_sources

    write(tmp_path / "part-0.svm", GOOD)
    write(tmp_path / "part-1.svm.gz", "# shard two\n" + GOOD, gzip.open)
    data = load_svmlight_dataset(str(tmp_path / "part-*"), test_fraction=0.5, seed=4)
    ids = np.concatenate([np.arange(6), (1 << FILE_ID_SHIFT) + np.arange(6)])
    np.testing.assert_array_equal(data.ids, ids)
    np.testing.assert_array_equal(data.test_index, np.flatnonzero(split_mask(ids, 4, 0.5)))
    assert data.describe()["split"] == "a seeded hash of each document's id (seed 4, test_fraction 0.5)"
    assert data.name == "part-0 (+1 files)" and data.place(7) == f"{tmp_path / 'part-1.svm.gz'}:3"
    train, test = svmlight_sources(str(tmp_path / "part-*"), seed=4, test_fraction=0.5)
    assert sum(c.n_documents for c in test.chunks(2)) == data.test_index.size


def test_a_given_test_file_is_the_stated_split(tmp_path):
    train = write(tmp_path / "train.svm", "0 1:1\n1 2:1\n")
    test = write(tmp_path / "test.svm", "0 1:1\n1 2:1\n0 2:2\n")
    data = load_svmlight_dataset(train, test_path=test)
    assert data.describe()["split"] == f"the given test file {test}"
    np.testing.assert_array_equal(data.ids, [0, 1, 0, 1, 2])  # each file numbers its documents
