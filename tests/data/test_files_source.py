"""``data.source = "files"``: a folder of text files (mlnb.data.folders).

Oracles: scikit-learn's ``load_files`` (the same documents, order and categories) and ``CountVectorizer``
fitted on the training texts (the same counts); hand-written labels files. The source contract (whole ==
streamed, ids, split, file:LINE) is in test_source_contract.py; here: the layouts and every refusal.
"""

import os

import numpy as np
import pytest
from sklearn.datasets import load_files
from sklearn.feature_extraction.text import CountVectorizer

from mlnb.config import DataConfig
from mlnb.data.sources import SOURCES, load_dataset, open_streams
from mlnb.data.stream import concatenate
from mlnb.errors import MlnbError

TEXTS = {"sport": ["ball goal team", "team wins the cup", "goal goal"],
         "politics": ["vote the bill", "party vote", "minister speaks"],
         "science": ["atom energy", "cell biology lab", "energy of the atom"]}


def by_category(root, texts=TEXTS):
    for category, documents in texts.items():
        (root / category).mkdir(parents=True)
        for j, text in enumerate(documents):
            (root / category / f"{j:02d}.txt").write_text(text, encoding="utf-8")
    return root


def config(**options) -> DataConfig:
    return DataConfig(source="files", test_fraction=0.4, files=SOURCES["files"].options(**options))


def test_one_sub_folder_per_category_is_what_load_files_reads(tmp_path):
    root = by_category(tmp_path / "corpus")
    (root / "README").write_text("not a document")  # files directly in the folder are not documents
    (root / "sport" / ".hidden").write_text("nor hidden ones")
    dataset = load_dataset(config(path=str(root)), seed=1)
    oracle = load_files(str(root), encoding="utf-8", shuffle=False)
    shown = [not os.path.basename(f).startswith(".") for f in oracle.filenames]  # load_files reads hidden files
    oracle_texts = [t for t, keep in zip(oracle.data, shown) if keep]
    assert dataset.category_names == sorted(TEXTS) == list(oracle.target_names)
    assert dataset.n_documents == len(oracle_texts) == 9
    np.testing.assert_array_equal(dataset.Y.toarray().argmax(axis=1), oracle.target[shown])
    assert (dataset.Y.sum(axis=1) == 1).all()
    counter = CountVectorizer(dtype=np.float32).fit([oracle_texts[i] for i in dataset.train_index])
    assert dataset.feature_names == list(counter.get_feature_names_out())
    assert (dataset.X != counter.transform(oracle_texts)).nnz == 0
    assert dataset.place(4) == f"{root}:5"  # the folder and the document's number in its listing


def test_a_labels_file_gives_multilabel_documents_in_its_order(tmp_path):
    root = tmp_path / "docs"
    root.mkdir()
    for name, text in (("a.txt", "alpha beta"), ("b.txt", "beta gamma"), ("sub/c.txt", "gamma delta"),
                       ("d.txt", "delta alpha")):
        (root / name).parent.mkdir(exist_ok=True)
        (root / name).write_text(text)
    (tmp_path / "labels.csv").write_text("file,labels\nb.txt,x;y\na.txt,x\nsub/c.txt,\nd.txt,y\n")
    dataset = load_dataset(config(path=str(root), labels_path=str(tmp_path / "labels.csv"), label_separator=";"),
                           seed=0)
    assert dataset.category_names == ["x", "y"]
    np.testing.assert_array_equal(dataset.Y.toarray(), [[1, 1], [1, 0], [0, 0], [0, 1]])
    assert dataset.place(2) == f"{tmp_path / 'labels.csv'}:4"
    assert dataset.X[0].sum() == 2  # "beta gamma", b.txt first, as listed


def test_a_test_folder_is_the_given_test_part(tmp_path):
    train = by_category(tmp_path / "train")
    test = by_category(tmp_path / "test", {"sport": ["team goal"], "science": ["atom"], "art": ["paint"]})
    with pytest.warns(Warning, match="occur only in the test part: 'art'"):
        dataset = load_dataset(config(path=str(train), test_path=str(test)), seed=0)
    assert dataset.test_index.size == 3 and dataset.split_rule == f"the given test folder {test}"
    assert dataset.category_names == ["art", "politics", "science", "sport"]


def test_streamed_with_dask_sized_partitions_gives_the_same_matrices(tmp_path, monkeypatch):
    import mlnb.data.folders as folders

    monkeypatch.setattr(folders, "PARTITION_DOCUMENTS", 4)
    root = by_category(tmp_path / "corpus")
    dataset = load_dataset(config(path=str(root)), seed=2)
    train, test = open_streams(config(path=str(root)), seed=2)
    assert len(train.partitions()) == 3
    for part, index in ((train, dataset.train_index), (test, dataset.test_index)):
        X, Y, ids = concatenate(part.chunks(2))
        assert (X != dataset.X[index]).nnz == 0 and (Y != dataset.Y[index]).nnz == 0
        np.testing.assert_array_equal(ids, dataset.ids[index])


def one_line_error(data_config, streamed=False) -> str:
    with pytest.raises(MlnbError) as error:
        if streamed:
            for part in open_streams(data_config, seed=0):
                list(part.chunks(100))
        else:
            load_dataset(data_config, seed=0)
    assert "\n" not in str(error.value)
    return str(error.value)


@pytest.mark.parametrize("streamed", [False, True], ids=["whole", "streamed"])
def test_a_binary_or_undecodable_file_is_refused_naming_it(tmp_path, streamed):
    root = by_category(tmp_path / "corpus")
    (root / "sport" / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    assert one_line_error(config(path=str(root)), streamed).startswith(f"{root / 'sport' / 'image.png'}:1: ")
    (root / "sport" / "image.png").unlink()
    (root / "science" / "latin.txt").write_bytes(b"caf\xe9")
    message = one_line_error(config(path=str(root)), streamed)
    assert message.startswith(f"{root / 'science' / 'latin.txt'}:1: not utf-8 text (byte 3")
    assert "data.files.encoding" in message
    dataset = load_dataset(config(path=str(root), encoding="latin-1"), seed=0)  # the option that reads it
    assert dataset.n_documents == 10
    (root / "sport" / "image.bin").write_bytes(b"\x00\x01")
    assert load_dataset(config(path=str(root), extensions=[".TXT"], encoding="latin-1"), seed=0).n_documents == 10


def test_symbolic_links_out_of_the_folder_are_refused_unless_followed(tmp_path):
    root = by_category(tmp_path / "corpus")
    outside = tmp_path / "secret.txt"
    outside.write_text("outside words")
    (root / "sport" / "link.txt").symlink_to(outside)
    (root / "politics" / "inside.txt").symlink_to(root / "sport" / "00.txt")  # inside: read
    message = one_line_error(config(path=str(root)))
    assert message.startswith(f"{root / 'sport' / 'link.txt'}: a symbolic link to {outside}, outside the folder")
    assert "data.files.follow_links = true" in message
    assert load_dataset(config(path=str(root), follow_links=True), seed=0).n_documents == 11
    (root / "sport" / "link.txt").unlink()
    (root / "linked").symlink_to(tmp_path, target_is_directory=True)  # a category folder leading out
    assert "outside the folder" in one_line_error(config(path=str(root)))


@pytest.mark.parametrize("row, problem", [
    ("missing.txt,x", "labels.csv:3: {root}/missing.txt: no such file"),
    ("../secret.txt,x", "secret.txt, outside the folder"),
    ("a.txt,y", "labels.csv:3: 'a.txt' is listed twice (first on line 2)"),
    (",x", "labels.csv:3: an empty file name (data.files.file_column = 'file')"),
])
def test_a_bad_labels_file_row_is_named_by_line(tmp_path, row, problem):
    root = tmp_path / "docs"
    root.mkdir()
    (root / "a.txt").write_text("alpha")
    (tmp_path / "secret.txt").write_text("secret")
    (tmp_path / "labels.csv").write_text(f"file,labels\na.txt,x\n{row}\n")
    message = one_line_error(config(path=str(root), labels_path=str(tmp_path / "labels.csv")))
    assert problem.format(root=root) in message


def test_layout_refusals_name_the_folder_and_the_option(tmp_path):
    flat = tmp_path / "flat"
    flat.mkdir()
    (flat / "a.txt").write_text("alpha")
    assert "no sub-folders" in one_line_error(config(path=str(flat)))
    assert "data.files.labels_path" in one_line_error(config(path=str(flat)))
    nested = by_category(tmp_path / "nested")
    (nested / "sport" / "deeper").mkdir()
    assert "a folder inside the category folder 'sport'" in one_line_error(config(path=str(nested)))
    assert "no such folder" in one_line_error(config(path=str(tmp_path / "nowhere")))
    assert "data.files.test_labels_path: required" in one_line_error(
        config(path=str(flat), labels_path="l.csv", test_path=str(flat)))


def test_labels_split_on_the_wrong_separator_are_refused_naming_the_right_one(tmp_path):
    root = tmp_path / "docs"
    root.mkdir()
    rows = ["file,labels"]
    for i, tags in enumerate(["a", "b", "a;b", "c", "b;c", "a"]):
        (root / f"{i}.txt").write_text(f"word{i}")
        rows.append(f"{i}.txt,{tags}")
    (tmp_path / "labels.csv").write_text("\n".join(rows) + "\n")
    message = one_line_error(config(path=str(root), labels_path=str(tmp_path / "labels.csv")))
    assert "look like lists of labels split on ',' instead of ';'" in message
    assert "set data.files.label_separator = ';'" in message
    dataset = load_dataset(config(path=str(root), labels_path=str(tmp_path / "labels.csv"), label_separator=";"),
                           seed=0)
    assert dataset.category_names == ["a", "b", "c"]
