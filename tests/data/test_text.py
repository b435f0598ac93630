"""CSV / TSV / JSON-lines text source: real SMS data, formats, and errors naming the line."""

import json
from pathlib import Path

import numpy as np
import pytest

from mlnb import MlnbError
from mlnb.data.text import TextOptions, load_text_dataset

SMS = Path(__file__).resolve().parents[3] / "shared" / "data" / "smsspam" / "SMSSpamCollection"


def test_real_sms_spam_collection():
    if not SMS.is_file():
        pytest.skip(f"real data not found at {SMS}")
    data = load_text_dataset(SMS, format="tsv", header=False, text_column="1", label_column="0",
                             negative_labels=["ham"], seed=0)
    assert data.n_documents == 5574 and data.category_names == ["spam"]
    assert int(data.Y.sum()) == 747
    assert data.X.dtype == np.float32 and data.feature_names is not None


def test_csv_multilabel_with_header(tmp_path):
    path = tmp_path / "docs.csv"
    path.write_text('text,label\n"grain prices, wheat",grain|wheat\ncorn crop,grain\n'
                    'oil output,crude\nwheat harvest,wheat\n')
    data = load_text_dataset(path, labels="multi", label_separator="|", test_fraction=0.5, seed=1)
    assert data.category_names == sorted(set(data.category_names))
    assert data.n_documents == 4


def test_jsonl_and_separate_test_file_use_the_training_vocabulary(tmp_path):
    train, test = tmp_path / "train.jsonl", tmp_path / "test.jsonl"
    train.write_text("\n".join(json.dumps(r) for r in [{"text": "alpha beta", "label": ["a"]},
                                                        {"text": "gamma", "label": ["b", "a"]}]))
    test.write_text(json.dumps({"text": "alpha delta", "label": ["b"]}) + "\n")
    data = load_text_dataset(train, test_path=test, labels="multi")
    assert data.feature_names == ["alpha", "beta", "gamma"]  # 'delta' is not in training
    np.testing.assert_array_equal(data.X_test.toarray(), [[1, 0, 0]])
    np.testing.assert_array_equal(data.Y_test.toarray(), [[0, 1]])


def test_hashing_vectorizer(tmp_path):
    path = tmp_path / "d.tsv"
    path.write_text("text\tlabel\nspam spam eggs\tx\nham\ty\n")
    data = load_text_dataset(path, text_options=TextOptions(vectorizer="hashing", hash_features=64),
                             test_fraction=0.5)
    assert data.n_features == 64 and data.feature_names is None and data.X.data.min() > 0


@pytest.mark.parametrize("name, content, options, message", [
    ("a.csv", "text,label\nok,x\nbroken\n", {}, r"a\.csv:3: expected 2 columns, got 1"),
    ("b.csv", "text,label\n", {}, r"b\.csv: no documents"),
    ("c.csv", "", {}, r"c\.csv: the file is empty"),
    ("d.csv", "body,label\nx,y\n", {}, r"data\.text\.text_column = 'text' is not a column"),
    ("e.jsonl", '{"text": "a", "label": "x"}\n{"text": "b", "label"\n', {}, r"e\.jsonl:2: not a JSON object"),
    ("f.csv", "text,label\nx,y\n", {"encoding": "klingon"}, r"data\.text\.encoding: unknown encoding"),
    ("g.dat", "text,label\nx,y\n", {}, r"set data\.text\.format"),
    ("h.jsonl", '{"text": "x", "label": ["a", "b"]}\n', {}, r"h\.jsonl:1: expected one label"),
])
def test_malformed_files_are_named(tmp_path, name, content, options, message):
    path = tmp_path / name
    path.write_text(content)
    with pytest.raises(MlnbError, match=message):
        load_text_dataset(path, **options)


def test_bad_bytes_are_named_by_line(tmp_path):
    path = tmp_path / "latin.csv"
    path.write_bytes("text,label\nok,x\ncaf\u00e9,y\n".encode("latin-1"))
    with pytest.raises(MlnbError, match=r"latin\.csv:3: not valid utf-8 text"):
        load_text_dataset(path)
    data = load_text_dataset(path, encoding="latin-1", test_fraction=0.5)
    assert data.n_documents == 2


def test_a_label_only_in_the_test_file_is_kept_and_announced(tmp_path):
    from mlnb.errors import MlnbWarning

    (tmp_path / "train.csv").write_text("text,label\nbuy now,spam\nhello there,ham\nfree money,spam\nsee you,ham\n")
    (tmp_path / "test.csv").write_text("text,label\nwin now,spam\nhi,ham\nurgent call,phish\n")
    with pytest.warns(MlnbWarning, match=r"test\.csv: 1 label\(s\) occur only in the test part: 'phish'"):
        data = load_text_dataset(tmp_path / "train.csv", test_path=tmp_path / "test.csv")
    assert data.category_names == ["ham", "phish", "spam"]
    assert data.Y_train[:, 1].nnz == 0 and data.Y_test[:, 1].toarray().ravel().tolist() == [0, 0, 1]


def test_a_glob_of_compressed_files_and_the_hash_split(tmp_path):
    import gzip

    from mlnb.data.hashing import FILE_ID_SHIFT, split_mask

    rows = [f"word{i} common,{'a' if i % 2 else 'b'}" for i in range(40)]
    (tmp_path / "p-0.csv").write_text("text,label\n" + "\n".join(rows[:25]) + "\n")
    (tmp_path / "p-1.csv.gz").write_bytes(gzip.compress(("text,label\n" + "\n".join(rows[25:]) + "\n").encode()))
    data = load_text_dataset(str(tmp_path / "p-*"), seed=2, test_fraction=0.3)
    ids = np.concatenate([np.arange(25), (1 << FILE_ID_SHIFT) + np.arange(15)])
    np.testing.assert_array_equal(data.ids, ids)
    np.testing.assert_array_equal(data.test_index, np.flatnonzero(split_mask(ids, 2, 0.3)))
    # the vocabulary: the training documents' words only, in CountVectorizer's order
    trained = sorted({"common"} | {f"word{i}" for i in range(40) if not split_mask(ids[i:i + 1], 2, 0.3)[0]})
    assert data.feature_names == trained
    assert data.place(30) == f"{tmp_path / 'p-1.csv.gz'}:7"


@pytest.mark.parametrize("compress, message", [
    ("gzip", r"data\.csv: looks like gzip-compressed data \(by its first bytes\), but its name does not say so; "
             r"name it data\.csv\.gz to have it read as such$"),
    ("bz2", r"data\.csv: looks like bzip2-compressed data .*name it data\.csv\.bz2"),
    ("zip", r"data\.csv: looks like a zip archive .*unpack it \(mlnb reads plain, \.gz and \.bz2 files\)$"),
])
def test_a_compressed_file_named_as_text_is_named_so_not_an_encoding(tmp_path, compress, message):
    import bz2
    import gzip
    import io
    import zipfile

    text = ("text,label\n" + "".join(f"word{i},{'a' if i % 2 else 'b'}\n" for i in range(20))).encode()
    if compress == "zip":
        packed = io.BytesIO()
        with zipfile.ZipFile(packed, "w") as archive:
            archive.writestr("data.csv", text)
        text = packed.getvalue()
    else:
        text = {"gzip": gzip.compress, "bz2": bz2.compress}[compress](text)
    (tmp_path / "data.csv").write_bytes(text)
    with pytest.raises(MlnbError, match=message) as refused:
        load_text_dataset(tmp_path / "data.csv", encoding="latin-1")  # latin-1 decodes any byte: still refused
    assert "encoding" not in str(refused.value)
