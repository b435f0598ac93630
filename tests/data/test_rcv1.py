"""RCV1-v2: scikit-learn's cache and the original LYRL2004 files, on small files in their formats."""

import gzip

import joblib
import numpy as np
import pytest
import scipy.sparse as sp

from mlnb import MlnbError
from mlnb.data.rcv1 import load_lyrl2004, load_rcv1


def write_lyrl(folder, compress=False):
    """Five documents: ids 2286..2288 in the train file, 2289..2290 in test part 0."""
    opener = (lambda p: gzip.open(str(p) + ".gz", "wt")) if compress else (lambda p: open(p, "w"))
    with opener(folder / "lyrl2004_vectors_train.dat") as f:
        f.write("2286  1:0.5 47236:0.5\n2287  3:1.0\n2288  2:0.3 3:0.4\n")
    with opener(folder / "lyrl2004_vectors_test_pt0.dat") as f:
        f.write("2289  1:1.0\n2290  4:0.2\n")
    with open(folder / "rcv1-v2.topics.qrels", "w") as f:
        f.write("E11 2286 1\nECAT 2286 1\nCCAT 2287 1\nCCAT 2288 1\nE11 2289 1\nCCAT 2290 1\nGCAT 999999 1\n")


@pytest.mark.parametrize("compress", [False, True])
def test_lyrl2004_files_and_splits(tmp_path, compress):
    write_lyrl(tmp_path, compress)
    data = load_lyrl2004(tmp_path)
    assert data.X.shape == (5, 47236) and data.category_names == ["CCAT", "E11", "ECAT", "GCAT"]
    np.testing.assert_array_equal(data.train_index, [0, 1, 2])
    np.testing.assert_array_equal(data.test_index, [3, 4])
    np.testing.assert_array_equal(data.Y.toarray()[0], [0, 1, 1, 0])
    assert data.X[0, 47235] == pytest.approx(0.5)
    swapped = load_lyrl2004(tmp_path, split="swapped")
    np.testing.assert_array_equal(swapped.train_index, [3, 4])
    random = load_lyrl2004(tmp_path, split="random", train_size=2, test_size=2, seed=3)
    assert random.train_index.size == 2 and random.test_index.size == 2
    assert not set(random.train_index) & set(random.test_index)


@pytest.mark.parametrize("content, message", [
    ("2286  1:0.5\nabc  1:0.2\n", r"lyrl2004_vectors_train\.dat:2: expected a document id first"),
    ("2286  1:0.5\n2287  7:x\n", r"lyrl2004_vectors_train\.dat:2: expected a number after '7:'"),
    ("2286  1:0.5\n2287  99999:1\n", r"lyrl2004_vectors_train\.dat:2: term id 99999 is outside 1\.\.47236"),
    ("", r"lyrl2004_vectors_train\.dat: the file holds no documents"),
])
def test_lyrl2004_malformed_vectors(tmp_path, content, message):
    write_lyrl(tmp_path)
    (tmp_path / "lyrl2004_vectors_train.dat").write_text(content)
    with pytest.raises(MlnbError, match=message):
        load_lyrl2004(tmp_path)


def test_lyrl2004_missing_and_malformed_qrels(tmp_path):
    with pytest.raises(MlnbError, match="no such folder"):
        load_lyrl2004(tmp_path / "nowhere")
    write_lyrl(tmp_path)
    (tmp_path / "rcv1-v2.topics.qrels").write_text("CCAT 2286 1\nCCAT two 1\n")
    with pytest.raises(MlnbError, match=r"qrels:2: expected 'TOPIC DOCID 1'"):
        load_lyrl2004(tmp_path)
    (tmp_path / "rcv1-v2.topics.qrels").unlink()
    with pytest.raises(MlnbError, match=r"rcv1-v2\.topics\.qrels \(or rcv1-v2\.topics\.qrels\.gz\) not found"):
        load_lyrl2004(tmp_path)


def test_rcv1_without_cache_or_network_says_where_the_files_go(tmp_path):
    with pytest.raises(MlnbError, match=r"RCV1 is not in scikit-learn's cache at .*RCV1 \(files samples_py3\.pkl"):
        load_rcv1(data_home=str(tmp_path), download_if_missing=False)


def test_rcv1_from_a_cache_in_scikit_learn_layout(tmp_path):
    from sklearn.datasets._base import _pkl_filepath

    folder = tmp_path / "RCV1"
    folder.mkdir()
    rng = np.random.default_rng(0)
    n = 30
    X = sp.random(n, 47236, density=0.001, format="csr", random_state=1)
    Y = sp.csr_matrix((rng.random((n, 3)) < 0.4).astype(np.uint8))
    for name, value in [("samples.pkl", X), ("sample_id.pkl", np.arange(2286, 2286 + n)),
                        ("sample_topics.pkl", Y), ("topics_names.pkl", np.array(["C15", "CCAT", "GCAT"]))]:
        joblib.dump(value, _pkl_filepath(str(folder), name))
    data = load_rcv1(data_home=str(tmp_path), split="random", test_size=10, seed=0)
    assert data.category_names == ["C15", "CCAT", "GCAT"] and data.test_index.size == 10
    assert data.train_index.size == 20 and data.X.dtype == np.float32
    with pytest.raises(MlnbError, match="needs both the LYRL2004 training and test documents"):
        load_rcv1(data_home=str(tmp_path))  # 30 documents: all inside the first 23,149
