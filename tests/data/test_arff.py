"""Mulan ARFF + XML: the real bibtex/enron/medical sets, a hand-checked tiny file, and errors
that name the file and line."""

from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest

from mlnb import MlnbError
from mlnb.data.arff import load_arff_dataset, read_arff, read_mulan_labels

MULAN = Path(__file__).resolve().parents[3] / "shared" / "data" / "mulan"

# name: (train documents, test documents, features, labels)
REAL_SHAPES = {"bibtex": (4880, 2515, 1836, 159), "enron": (1123, 579, 1001, 53),
               "medical": (333, 645, 1449, 45)}


@lru_cache(maxsize=None)
def _load_real(name):
    return load_arff_dataset(MULAN / name / f"{name}-train.arff", MULAN / name / f"{name}-test.arff",
                             MULAN / name / f"{name}.xml")


def real(name):
    """Each real set is read once per module, or the test is skipped."""
    folder = MULAN / name
    if not (folder / f"{name}.xml").is_file():
        pytest.skip(f"Mulan data not found at {folder} (../shared/data is beside the project only in "
                    "the development checkout)")
    return _load_real(name)


@pytest.mark.parametrize("name", sorted(REAL_SHAPES))
def test_real_sets_have_the_published_shapes(name):
    data = real(name)
    n_train, n_test, n_features, n_labels = REAL_SHAPES[name]
    assert (data.train_index.size, data.test_index.size) == (n_train, n_test)
    assert (data.n_features, data.n_categories) == (n_features, n_labels)
    assert data.name == name and len(data.feature_names) == n_features
    assert data.X.dtype == np.float32 and data.Y.dtype == np.int8
    assert np.all(data.X.data == 1) and np.all(data.Y.data == 1)  # binary features and labels
    assert data.category_names == read_mulan_labels(MULAN / name / f"{name}.xml")


def test_real_medical_has_seven_labels_without_training_positives():
    data = real("medical")
    positives = np.asarray(data.Y_train.sum(axis=0)).ravel()
    assert int((positives == 0).sum()) == 7


def test_real_enron_labels_are_matched_by_name_not_position():
    # enron's label attributes are declared in a different order from enron.xml.
    data = real("enron")
    header = (MULAN / "enron" / "enron-train.arff").read_text().split("@data")[0]
    declared = [line.split()[1] for line in header.splitlines() if line.startswith("@attribute")]
    assert declared[-53:] != data.category_names and sorted(declared[-53:]) == sorted(data.category_names)
    # First training row: '{1 1,...,1044 1,1049 1}' ends with labels at attribute indices 1044, 1049.
    first_row = (MULAN / "enron" / "enron-train.arff").read_text().split("@data")[1].split("\n")[1]
    label_indices = [int(p.split()[0]) for p in first_row.strip("{}").split(",") if int(p.split()[0]) >= 1001]
    expected = sorted(data.category_names.index(declared[j]) for j in label_indices)
    assert list(data.Y_train[0].indices) == expected


# -- a tiny hand-written set -----------------------------------------------------------------------

HEADER = """% a comment
@RELATION tiny

@attribute 'word one' numeric
@attribute lab_b {0,1}
@attribute 'it\\'s' REAL
@attribute w3 {0,1}
@attribute lab_a {0,1}

@data
"""
SPARSE_ROWS = "{0 2.5,1 1,3 1}\n\n{}\n% between rows\n{2 0.5,4 1}\n"
DENSE_ROWS = "2.5,1,0,1,0\n0,0,0,0,0\n0, 0, 0.5, 0, 1\n"
XML = """<?xml version="1.0" encoding="utf-8"?>
<labels xmlns="http://mulan.sourceforge.net/labels">
<label name="lab_a"></label>
<label name="lab_b"></label>
</labels>
"""
EXPECTED_X = [[2.5, 0, 1], [0, 0, 0], [0, 0.5, 0]]
EXPECTED_Y = [[0, 1], [0, 0], [1, 0]]  # columns lab_a, lab_b: the XML's order, not the file's


def write(path, text):
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("text", [
    HEADER + SPARSE_ROWS, HEADER + DENSE_ROWS,
    b"\xef\xbb\xbf" + (HEADER + SPARSE_ROWS).replace("\n", "\r\n").encode(),
], ids=["sparse", "dense", "sparse-bom-crlf"])
def test_tiny_file_is_read_exactly(tmp_path, text):
    path = write(tmp_path / "tiny.arff", text)
    labels = read_mulan_labels(write(tmp_path / "tiny.xml", XML))
    assert labels == ["lab_a", "lab_b"]
    X, Y, feature_names, label_names = read_arff(path, labels)
    assert feature_names == ["word one", "it's", "w3"] and label_names == ["lab_a", "lab_b"]
    assert X.dtype == np.float32 and Y.dtype == np.int8 and X.format == "csr" and Y.format == "csr"
    np.testing.assert_array_equal(X.toarray(), EXPECTED_X)
    np.testing.assert_array_equal(Y.toarray(), EXPECTED_Y)
    assert X.nnz == 3 and Y.nnz == 2  # explicit zeros are not stored
    X2, Y2, _, _ = read_arff(path, ["lab_b", "lab_a"])
    np.testing.assert_array_equal(X2.toarray(), EXPECTED_X)
    np.testing.assert_array_equal(Y2.toarray(), np.array(EXPECTED_Y)[:, ::-1])


def test_tiny_dataset_stacks_train_then_test(tmp_path):
    train = write(tmp_path / "tiny-train.arff", HEADER + SPARSE_ROWS)
    test = write(tmp_path / "tiny-test.arff", HEADER + "{0 1,4 1}\n")
    data = load_arff_dataset(train, test, write(tmp_path / "tiny.xml", XML))
    assert data.name == "tiny" and list(data.train_index) == [0, 1, 2] and list(data.test_index) == [3]
    assert data.feature_names == ["word one", "it's", "w3"] and data.category_names == ["lab_a", "lab_b"]
    np.testing.assert_array_equal(data.X.toarray(), EXPECTED_X + [[1, 0, 0]])
    np.testing.assert_array_equal(data.Y.toarray(), EXPECTED_Y + [[1, 0]])


# -- errors: one line, naming the file and the line ------------------------------------------------

GOOD_HEADER = "@relation r\n@attribute f0 numeric\n@attribute f1 numeric\n@attribute y {0,1}\n@data\n"


@pytest.mark.parametrize("text, message", [
    ("", r"bad\.arff:1: empty file"),
    ("% only a comment\n\n", r"bad\.arff:2: empty file"),
    ("@relation r\n@attribute f0 numeric\n@attribute y {0,1}\n",
     r"bad\.arff:3: the file ends without '@data'"),
    (GOOD_HEADER + "{0 1,2 1}\n{1 3,2 1\n", r"bad\.arff:7: sparse row has no closing '\}'"),
    (GOOD_HEADER + "{0 1,2 1}\n1,2\n", r"bad\.arff:7: expected 3 comma-separated values"),
    (GOOD_HEADER + "{0 1}\n{3 abc}\n", r"bad\.arff:7: expected a number, got 'abc'"),
    (GOOD_HEADER + "{0 1}\n{x 1}\n", r"bad\.arff:7: expected an integer attribute index, got 'x'"),
    (GOOD_HEADER + "{0 1}\n{0 1 2 1}\n", r"bad\.arff:7: expected 'index value' pairs"),
    (GOOD_HEADER + "{0 1}\n{1 1,7 1}\n", r"bad\.arff:7: attribute index 7 is beyond the 3 attributes"),
    (GOOD_HEADER + "{0 1,0 2}\n", r"bad\.arff:6: attribute index 0 appears twice"),
    (GOOD_HEADER + "{0 1}\n{2 2}\n", r"bad\.arff:7: label 'y' has value 2; expected 0 or 1"),
    (GOOD_HEADER + "{0 nan}\n", r"bad\.arff:6: value nan of attribute 'f0' is not a finite"),
    (GOOD_HEADER + "?,1,0\n", r"bad\.arff:6: missing value '\?' is not supported"),
    (GOOD_HEADER, r"bad\.arff:5: no rows after '@data'"),
    ("@relation r\n@attribute f0 numeric\n@attribute colour {red,green}\n@attribute y {0,1}\n"
     "@data\n{0 1}\n",
     r"bad\.arff:3: feature attribute 'colour' \{red,green\} is nominal; expected numeric"),
    ("@relation r\n@attribute f0 string\n@attribute y {0,1}\n@data\n{0 1}\n",
     r"bad\.arff:2: feature attribute 'f0' has type string"),
    ("@relation r\n@attribute f0 numeric\n@attribute f1 {0,1}\n@attribute y {0,1}\n@data\n{1 3}\n",
     r"bad\.arff:6: value 3 of attribute 'f1' \{0,1\} is not one of its declared values"),
    ("@relation r\n@attribute f0 numeric\n@attribute f0 numeric\n@attribute y {0,1}\n@data\n",
     r"bad\.arff:3: attribute 'f0' is declared twice \(lines 2 and 3\)"),
    ("@relation r\n@attribute 'f 0 numeric\n@data\n", r"bad\.arff:2: expected a closing '"),
    ("@relation r\n@attribute f0 numeric\n1,0\n",
     r"bad\.arff:3: expected '@relation', '@attribute' or '@data'"),
    ("@relation r\n@attribute f0 numeric\n@attribute y {0,1}\n@data\n{0 1}\n".encode() + b"{0 caf\xe9}\n",
     r"bad\.arff:6: byte 0xe9 at column 7 is not UTF-8"),
], ids=["empty", "only-comments", "no-data", "truncated-sparse", "truncated-dense", "bad-number",
        "bad-index", "unpaired", "index-beyond", "repeated-index", "label-not-0-1", "nan", "missing-value",
        "no-rows", "nominal-feature", "string-feature", "undeclared-value", "duplicate-attribute",
        "unclosed-quote", "row-in-header", "not-utf8"])
def test_malformed_arff_is_named(tmp_path, text, message):
    path = write(tmp_path / "bad.arff", text)
    with pytest.raises(MlnbError, match=message) as caught:
        read_arff(path, ["y"])
    assert "\n" not in str(caught.value)


def test_missing_files_are_named(tmp_path):
    with pytest.raises(MlnbError, match=r"nowhere\.arff: no such file"):
        read_arff(tmp_path / "nowhere.arff", ["y"])
    with pytest.raises(MlnbError, match=r"nowhere\.xml: no such file"):
        read_mulan_labels(tmp_path / "nowhere.xml")


def test_label_missing_from_the_arff_names_both_files(tmp_path):
    train = write(tmp_path / "tiny-train.arff", GOOD_HEADER + "{0 1}\n")
    xml = write(tmp_path / "tiny.xml", XML.replace("lab_a", "y").replace("lab_b", "x"))
    with pytest.raises(MlnbError, match=r"tiny\.xml:4: label 'x' of tiny\.xml is not an attribute of "
                                        r".*tiny-train\.arff"):
        load_arff_dataset(train, train, xml)
    with pytest.raises(MlnbError, match=r"tiny-train\.arff:5: label 'x' is not an attribute"):
        read_arff(train, ["y", "x"])


@pytest.mark.parametrize("text, message", [
    ("", r"bad\.xml:1: empty file"),
    ('<labels><label name="a"></labels>', r"bad\.xml:1: malformed XML \(mismatched tag"),
    ('<?xml version="1.0"?>\n<labels>\n<label name="a">\n', r"bad\.xml:4: malformed XML"),
    ('<labels>\n<label name="a"/>\n<label name="a"/>\n</labels>', r"bad\.xml:3: label 'a' is declared twice"),
    ("<labels>\n<label/>\n</labels>", r"bad\.xml:2: <label> without a name"),
    ('<tags><label name="a"/></tags>', r"bad\.xml:1: root element is <tags>; expected <labels>"),
    ("<labels></labels>", r"bad\.xml:1: no <label"),
])
def test_malformed_xml_is_named(tmp_path, text, message):
    with pytest.raises(MlnbError, match=message):
        read_mulan_labels(write(tmp_path / "bad.xml", text))


def test_nested_labels_count_too(tmp_path):
    xml = '<labels xmlns="x">\n<label name="a">\n<label name="a.1"/>\n</label>\n<label name="b"/>\n</labels>'
    assert read_mulan_labels(write(tmp_path / "h.xml", xml)) == ["a", "a.1", "b"]


@pytest.mark.parametrize("test_header, message", [
    (GOOD_HEADER.replace("f1 numeric", "g1 numeric"),
     r"test\.arff:3: attribute 1 is 'g1' numeric but .*train\.arff:3 declares 'f1' numeric"),
    (GOOD_HEADER.replace("@data", "@attribute extra numeric\n@data"),
     r"test\.arff:5: declares 4 attributes but .*train\.arff declares 3"),
    (GOOD_HEADER.replace("@attribute f1 numeric\n", ""),
     r"test\.arff:3: attribute 1 is 'y' \{0,1\} but .*train\.arff:3 declares 'f1' numeric"),
])
def test_train_and_test_must_declare_the_same_attributes(tmp_path, test_header, message):
    train = write(tmp_path / "train.arff", GOOD_HEADER + "{0 1,2 1}\n")
    test = write(tmp_path / "test.arff", test_header + "{0 1}\n")
    xml = write(tmp_path / "d.xml", '<labels><label name="y"/></labels>')
    with pytest.raises(MlnbError, match=message):
        load_arff_dataset(train, test, xml)
