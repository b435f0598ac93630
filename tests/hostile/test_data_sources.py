"""Hostile data, source by source, through `mlnb run` in-process: each bad input ends with exit code 2
and one line naming the file and line (or the key) and what was expected, and writes nothing."""

import gzip

import pytest

GOOD_SVM = "0 1:1 2:1\n1 2:1 3:2\n0 1:3\n1 3:1\n" * 5

# name: (file content, extra data.svmlight.* keys, needles of the error line)
SVMLIGHT = {
    "unsorted indices": ("0 1:1\n1 3:1 2:1\n", {}, ["data.svm:2:", "feature index 2 comes after the larger index 3"]),
    "duplicate index": ("# a comment line\n0 1:1\n1 2:1 2:3\n", {}, ["data.svm:3:", "feature index 2 repeats"]),
    "fractional label": ("0 1:1\n\n1.5 2:1\n", {}, ["data.svm:3:", "label 1.5 is not a category id"]),
    "negative label": ("0 1:1\n-1 2:1\n", {}, ["data.svm:2:", "label -1 is not a category id", "±1"]),
    "negative label in a list": ("0 1:1\n0,-2 2:1\n", {}, ["data.svm:2:", "label -2"]),
    "label not a number": ("0 1:1\nspam 2:1\n", {}, ["data.svm:2:", "expected labels as comma-separated"]),
    "value not a number": ("0 1:1\n1 2:x\n", {}, ["data.svm:2:", "expected a number after '2:', got 'x'"]),
    "pair without colon": ("0 1:1\n1 2 3:1\n", {}, ["data.svm:2:", "expected 'index:value', got '2'"]),
    "index 0 with index_base 1": ("0 1:1\n1 0:1\n", {}, ["data.svm:2:", "feature index 0 is below 1"]),
    "index beyond n_features": ("0 1:1\n1 9:1\n", {"n_features": 5}, ["data.svm:2:", "beyond n_features = 5"]),
    "label beyond n_categories": ("0 1:1\n1 2:1\n0 1:1\n7 1:1\n", {"n_categories": 2},
                                  ["data.svm:4:", "label 7 is out of range for n_categories = 2"]),
    "NaN value": ("0 1:1\n1 2:nan\n", {}, ["data.svm:2:", "feature value nan"]),
    "infinite value": ("0 1:1\n0 1:1\n1 2:-inf\n", {}, ["data.svm:3:", "feature value -inf"]),
    "beyond float32": ("0 1:1\n1 2:1e39\n", {}, ["data.svm:2:", "beyond float32's range"]),
    "beyond 1e15": ("0 1:1\n1 2:3e20\n", {}, ["data.svm:2:", "feature value 3e+20 has a magnitude beyond the 1e+15"]),
    "empty file": ("", {}, ["data.svm: the file holds no documents"]),
    "comments only": ("# nothing\n\n# here\n", {}, ["data.svm: the file holds no documents"]),
    "no labels at all": ("1:1 2:1\n3:1\n", {}, ["data.svm: no labels found"]),
}


@pytest.mark.parametrize("case", list(SVMLIGHT))
def test_svmlight(refused, svmlight_args, case):
    content, keys, needles = SVMLIGHT[case]
    refused(*needles, args=svmlight_args(content, **keys))


def test_svmlight_test_file_is_named_with_its_line(refused, svmlight_args, tmp_path):
    (tmp_path / "test.svm").write_text("0 1:1\n1 2:1 1:1\n")
    refused("test.svm:2:", "feature index 1 comes after", args=[*svmlight_args(GOOD_SVM),
                                                               "--set", f"data.svmlight.test_path={tmp_path / 'test.svm'}"])


def test_svmlight_gz_that_is_not_gzip(refused, svmlight_args):
    refused("data.svm.gz: not a readable svmlight file", args=svmlight_args(GOOD_SVM, name="data.svm.gz"))


def test_svmlight_truncated_gz(refused, tmp_path):
    data = gzip.compress(GOOD_SVM.encode())
    (tmp_path / "cut.svm.gz").write_bytes(data[:len(data) // 2])
    refused("cut.svm.gz", "not a readable svmlight file", args=["--set", f"data.svmlight.path={tmp_path / 'cut.svm.gz'}"])


@pytest.mark.parametrize("what", ["data", "names", "test"])
def test_svmlight_directory_is_a_directory(refused, svmlight_args, tmp_path, what):
    folder = tmp_path / "folder.svm"
    folder.mkdir()
    args = svmlight_args(GOOD_SVM)
    key = {"data": "path", "names": "category_names_path", "test": "test_path"}[what]
    args += ["--set", f"data.svmlight.{key}={folder}"]
    refused(f"{folder}: is a directory; expected a file", args=args)


@pytest.mark.parametrize("names, needles", [
    ("a\n", ["names.txt: 1 category names, but", "data.svm:2 has category id 1", "at least 2 names"]),
    ("a\nb\na\n", ["names.txt: category name 'a' repeats"]),
    ("\n\n", ["names.txt: no category names"]),
])
def test_svmlight_names_file_is_blamed(refused, svmlight_args, tmp_path, names, needles):
    (tmp_path / "names.txt").write_text(names)
    refused(*needles, args=svmlight_args(GOOD_SVM, category_names_path=tmp_path / "names.txt"))


def test_svmlight_names_against_n_categories(refused, svmlight_args, tmp_path):
    (tmp_path / "names.txt").write_text("a\nb\nc\n")
    refused("names.txt: 3 category names given for n_categories = 2",
            args=svmlight_args(GOOD_SVM, category_names_path=tmp_path / "names.txt", n_categories=2))


def test_svmlight_missing_file(refused, tmp_path):
    refused(f"{tmp_path / 'gone.svm'}: no such file (svmlight data)",
            args=["--set", f"data.svmlight.path={tmp_path / 'gone.svm'}"])


def test_svmlight_multiclass_needs_one_label_per_line(refused, svmlight_args):
    refused("data.svm:2: document has labels", "task = 'multiclass'",
            args=[*svmlight_args("0 1:1\n0,1 2:1\n" * 3), "--set", "task=multiclass"])


# -- text: CSV, TSV, JSON lines --------------------------------------------------------------------
# name: (file name, content, extra data.text.* keys, needles)
TEXT = {
    "unclosed quote": ("d.csv", 'text,label\nfine,a\n"never closed,b\nmore,a\nlast,b\n', {},
                       ["d.csv:3: malformed CSV: the quote opened on this line is never closed"]),
    "unclosed quote after a multi-line field": ("d.csv", 'text,label\n"two\nlines",a\nok,b\nx,"open\ny,a\n', {},
                                                ["d.csv:5: malformed CSV: the quote opened"]),
    "text after a closing quote": ("d.csv", 'text,label\nfine,a\n"ab"c,b\n', {}, ["d.csv:3: malformed CSV"]),
    "duplicate header column": ("d.csv", "text,label,text\na,x,b\nc,y,d\n", {},
                                ["d.csv:1: column 'text' appears twice in the header (columns 1 and 3)"]),
    "missing text column": ("d.csv", "body,label\na,x\n", {}, ["d.csv: data.text.text_column = 'text' is not a column"]),
    "missing label column": ("d.tsv", "text\tcat\na\tx\n", {}, ["data.text.label_column = 'label' is not a column"]),
    "row with too many columns": ("d.csv", "text,label\na,x\nb,y,z\n", {}, ["d.csv:3: expected 2 columns, got 3"]),
    "tsv row with too few columns": ("d.tsv", "text\tlabel\na\tx\nb\n", {}, ["d.tsv:3: expected 2 columns, got 1"]),
    "header only": ("d.csv", "text,label\n", {}, ["d.csv: no documents"]),
    "blank file": ("d.csv", "\n  \n", {}, ["d.csv: the file is empty"]),
    "unknown suffix": ("d.dat", "text,label\na,x\n", {}, ["d.dat: cannot tell the format from the suffix '.dat'"]),
    "unknown encoding": ("d.csv", "text,label\na,x\n", {"encoding": "klingon"},
                         ["data.text.encoding: unknown encoding 'klingon'"]),
    "several labels with labels = single": ("d.jsonl", '{"text": "a", "label": "x"}\n{"text": "b", "label": ["x", "y"]}\n',
                                            {}, ["d.jsonl:2: expected one label (data.text.labels = 'single')"]),
    "jsonl not an object": ("d.jsonl", '{"text": "a", "label": "x"}\n[1, 2]\n', {},
                            ["d.jsonl:2: expected a JSON object with keys 'text' and 'label'"]),
    "jsonl broken": ("d.jsonl", '{"text": "a", "label": "x"}\n{"text": "b", \n', {}, ["d.jsonl:2: not a JSON object"]),
    "jsonl missing key": ("d.jsonl", '{"text": "a"}\n', {}, ["d.jsonl:1: expected a JSON object with keys"]),
    "jsonl duplicate key": ("d.jsonl", '{"text": "a", "label": "x"}\n{"text": "b", "label": "x", "text": "c"}\n', {},
                            ["d.jsonl:2: key 'text' appears twice in the JSON object"]),
    "jsonl text not a string": ("d.jsonl", '{"text": "a", "label": "x"}\n{"text": 7, "label": "x"}\n', {},
                                ["d.jsonl:2: the text must be a string, got 7"]),
    "every label negative": ("d.csv", "text,label\na,ham\nb,ham\nc,ham\nd,ham\n", {"negative_labels": '["ham"]'},
                             ["d.csv: no category left"]),
    "empty vocabulary": ("d.csv", "text,label\n!,a\n?,a\n.,a\n;,a\n", {}, ["cannot build a vocabulary"]),
}


@pytest.mark.parametrize("case", list(TEXT))
def test_text(refused, tmp_path, case):
    name, content, keys, needles = TEXT[case]
    (tmp_path / name).write_text(content)
    args = ["--set", "data.source=text", "--set", f"data.text.path={tmp_path / name}"]
    for key, value in keys.items():
        args += ["--set", f"data.text.{key}={value}"]
    refused(*needles, args=args)


def test_text_bad_byte_is_named_by_line(refused, tmp_path):
    (tmp_path / "d.csv").write_bytes(b"text,label\nok,a\ncaf\xe9,b\n")
    refused("d.csv:3: not valid utf-8 text", args=["--set", "data.source=text", "--set", f"data.text.path={tmp_path / 'd.csv'}"])


@pytest.mark.parametrize("key", ["path", "test_path"])
def test_text_directory(refused, tmp_path, key):
    (tmp_path / "d.csv").write_text("text,label\na,x\nb,y\nc,x\nd,y\n")
    (tmp_path / "dir.csv").mkdir()
    args = ["--set", "data.source=text", "--set", f"data.text.path={tmp_path / 'd.csv'}",
            "--set", f"data.text.{key}={tmp_path / 'dir.csv'}"]
    refused("dir.csv: is a directory; expected a file (text data)", args=args)


# -- ARFF + Mulan XML ------------------------------------------------------------------------------
HEADER = "@relation t\n@attribute f1 numeric\n@attribute f2 numeric\n@attribute L1 {0,1}\n@attribute L2 {0,1}\n@data\n"
ROWS = "{0 1,2 1}\n{1 2,3 1}\n{0 1,1 1,2 1,3 1}\n"
XML = ('<?xml version="1.0" encoding="utf-8"?>\n<labels xmlns="http://mulan.sourceforge.net/labels">\n'
       '<label name="L1"></label>\n<label name="L2"></label>\n</labels>\n')

# name: (train file, test file, xml file, needles)
ARFF = {
    "value not a number": (HEADER + "{0 x,2 1}\n", HEADER + ROWS, XML, ["train.arff:7: expected a number, got 'x'"]),
    "missing value": (HEADER + ROWS + "{0 ?,3 1}\n", HEADER + ROWS, XML, ["train.arff:10: missing value '?'"]),
    "label value 2": (HEADER + "{0 1,2 2}\n", HEADER + ROWS, XML, ["train.arff:7: label 'L1' has value 2; expected 0 or 1"]),
    "unclosed sparse row": (HEADER + "{0 1,2 1\n", HEADER + ROWS, XML, ["train.arff:7: sparse row has no closing '}'"]),
    "attribute index beyond": (HEADER + "{0 1,9 1}\n", HEADER + ROWS, XML, ["train.arff:7: attribute index 9 is beyond"]),
    "attribute twice in a row": (HEADER + "{0 1,0 2}\n", HEADER + ROWS, XML, ["train.arff:7: attribute index 0 appears twice"]),
    "value beyond 1e15": (HEADER + ROWS + "{1 5e20,3 1}\n", HEADER + ROWS, XML,
                          ["train.arff:10: feature value 5e+20 has a magnitude beyond"]),
    "no @data": ("@relation t\n@attribute f1 numeric\n", HEADER + ROWS, XML, ["train.arff:2: the file ends without '@data'"]),
    "no rows": (HEADER, HEADER + ROWS, XML, ["train.arff:6: no rows after '@data'"]),
    "test header differs": (HEADER + ROWS, HEADER.replace("f2 numeric", "f2 {0,1}") + ROWS, XML,
                            ["test.arff:3: attribute 1 is"]),
    "label not an attribute": (HEADER + ROWS, HEADER + ROWS, XML.replace('"L2"', '"L9"'),
                               ["labels.xml:4: label 'L9' of labels.xml is not an attribute of"]),
    "malformed xml": (HEADER + ROWS, HEADER + ROWS, XML.replace("</labels>", "</label>"), ["labels.xml:5: malformed XML"]),
    "xml root": (HEADER + ROWS, HEADER + ROWS, XML.replace("labels", "things"), ["labels.xml:2: root element is <things>"]),
    "xml label twice": (HEADER + ROWS, HEADER + ROWS, XML.replace('"L2"', '"L1"'),
                        ["labels.xml:4: label 'L1' is declared twice (lines 3 and 4)"]),
    "empty xml": (HEADER + ROWS, HEADER + ROWS, "", ["labels.xml:1: empty file"]),
    "bad utf-8": (HEADER + ROWS + "% caf\udce9\n", HEADER + ROWS, XML, ["train.arff:10: byte 0xe9 at column 6 is not UTF-8"]),
}


@pytest.mark.parametrize("case", list(ARFF))
def test_arff(refused, tmp_path, case):
    train, test, xml, needles = ARFF[case]
    for name, text in (("train.arff", train), ("test.arff", test), ("labels.xml", xml)):
        (tmp_path / name).write_bytes(text.encode("utf-8", "surrogateescape"))
    args = ["--set", "data.source=arff", "--set", f"data.arff.train_path={tmp_path / 'train.arff'}",
            "--set", f"data.arff.test_path={tmp_path / 'test.arff'}", "--set", f"data.arff.xml_path={tmp_path / 'labels.xml'}"]
    refused(*needles, args=args)


@pytest.mark.parametrize("key", ["train_path", "xml_path"])
def test_arff_directory(refused, tmp_path, key):
    (tmp_path / "a.arff").write_text(HEADER + ROWS)
    (tmp_path / "l.xml").write_text(XML)
    (tmp_path / "dir").mkdir()
    paths = {"train_path": tmp_path / "a.arff", "test_path": tmp_path / "a.arff", "xml_path": tmp_path / "l.xml"}
    paths[key] = tmp_path / "dir"
    args = ["--set", "data.source=arff"] + [a for k, p in paths.items() for a in ("--set", f"data.arff.{k}={p}")]
    refused(f"{tmp_path / 'dir'}: is a directory; expected a file", args=args)


# -- Reuters-21578 SGML ------------------------------------------------------------------------------
def story(newid, topics="<D>earn</D>", split="TRAIN", attrs=None):
    attrs = attrs if attrs is not None else f'TOPICS="YES" LEWISSPLIT="{split}" NEWID="{newid}"'
    return (f"<REUTERS {attrs}>\n<TOPICS>{topics}</TOPICS>\n<TEXT><TITLE>t{newid}</TITLE><BODY>body {newid}"
            "</BODY></TEXT>\n</REUTERS>\n")


GOOD_SGML = story(1) + story(2, split="TEST")
REUTERS = {
    "unclosed document": (GOOD_SGML + '<REUTERS TOPICS="YES" LEWISSPLIT="TRAIN" NEWID="3">\n<TEXT>never closed\n',
                          ["reut2-000.sgm:9: <REUTERS> opened here is not closed"]),
    "close without open": (GOOD_SGML + "</REUTERS>\n", ["reut2-000.sgm:9: </REUTERS> without an opening"]),
    "no NEWID": (GOOD_SGML + story(3, attrs='TOPICS="YES" LEWISSPLIT="TRAIN"'), ["reut2-000.sgm:9: expected a NEWID"]),
    "NEWID not a number": (story(1, attrs='TOPICS="YES" LEWISSPLIT="TRAIN" NEWID="x1"'),
                           ["reut2-000.sgm:1: expected NEWID to be a non-negative integer, got 'x1'"]),
    "bad TOPICS": (story(1, attrs='TOPICS="MAYBE" LEWISSPLIT="TRAIN" NEWID="1"'),
                   ["reut2-000.sgm:1: expected TOPICS to be YES, NO or BYPASS, got 'MAYBE'"]),
    "no documents": ("<!DOCTYPE lewis>\n", ["reut2-000.sgm: no <REUTERS> documents"]),
    "no test documents": (story(1) + story(2), ["no ModApte topics left"]),
}


@pytest.mark.parametrize("case", list(REUTERS))
def test_reuters(refused, tmp_path, case):
    content, needles = REUTERS[case]
    folder = tmp_path / "reuters"
    folder.mkdir()
    (folder / "reut2-000.sgm").write_text(content, encoding="latin-1")
    refused(*needles, args=["--set", "data.source=reuters21578", "--set", f"data.reuters21578.folder={folder}"])


@pytest.mark.parametrize("case", ["missing folder", "folder is a file", "no sgm files", "sgm is a directory"])
def test_reuters_folder(refused, tmp_path, case):
    folder = tmp_path / "reuters"
    if case == "folder is a file":
        folder.write_text("not a folder")
    elif case != "missing folder":
        folder.mkdir()
        if case == "sgm is a directory":
            (folder / "reut2-000.sgm").mkdir()
    expected = {"missing folder": "no such folder (Reuters-21578 data)", "folder is a file": "is a file, not a folder",
                "no sgm files": "no reut2-*.sgm files", "sgm is a directory": "reut2-000.sgm: is a directory"}[case]
    refused(expected, args=["--set", "data.source=reuters21578", "--set", f"data.reuters21578.folder={folder}"])


# -- LYRL2004 vectors and qrels -----------------------------------------------------------------------
def write_lyrl(folder, vectors=None, qrels=None):
    folder.mkdir(exist_ok=True)
    (folder / "lyrl2004_vectors_train.dat").write_text(vectors or "2286  1:0.5 47236:0.5\n2287  3:1.0\n2288  2:0.3 3:0.4\n")
    (folder / "lyrl2004_vectors_test_pt0.dat").write_text("2289  1:1.0\n2290  4:0.2\n")
    (folder / "rcv1-v2.topics.qrels").write_text(qrels if qrels is not None else
                                                 "E11 2286 1\nCCAT 2287 1\nCCAT 2288 1\nE11 2289 1\nCCAT 2290 1\n")


LYRL = {
    "id not a number": ("2286  1:0.5\nabc  3:1.0\n", None, ["lyrl2004_vectors_train.dat:2: expected a document id first"]),
    "term id out of range": ("2286  1:0.5\n2287  47237:1.0\n", None, ["lyrl2004_vectors_train.dat:2: term id 47237 is outside"]),
    "unsorted term ids": ("2286  1:0.5\n2287  5:1.0 3:1.0\n", None,
                          ["lyrl2004_vectors_train.dat:2: term id 3 comes after the larger term id 5"]),
    "repeated term id": ("2286  4:0.5 4:0.5\n", None, ["lyrl2004_vectors_train.dat:1: term id 4 repeats"]),
    "weight not a number": ("2286  1:abc\n", None, ["lyrl2004_vectors_train.dat:1: expected a number after '1:'"]),
    "NaN weight": ("2286  1:0.5\n\n2287  2:nan\n", None, ["lyrl2004_vectors_train.dat:3: feature value nan"]),
    "document twice": ("2286  1:0.5\n2289  2:1.0\n", None,
                       ["lyrl2004_vectors_test_pt0.dat:1: document id 2289 occurs twice"]),
    "bad qrels line": (None, "E11 2286 1\nCCAT two 1\n", ["rcv1-v2.topics.qrels:2: expected 'TOPIC DOCID 1'"]),
    "empty qrels": (None, "", ["rcv1-v2.topics.qrels: no topic assignments"]),
}


@pytest.mark.parametrize("case", list(LYRL))
def test_lyrl2004(refused, tmp_path, case):
    vectors, qrels, needles = LYRL[case]
    write_lyrl(tmp_path / "lyrl", vectors, qrels)
    refused(*needles, args=["--set", "data.source=lyrl2004", "--set", f"data.lyrl2004.folder={tmp_path / 'lyrl'}"])


@pytest.mark.parametrize("case", ["missing folder", "folder is a file", "no qrels", "train file is a directory"])
def test_lyrl2004_folder(refused, tmp_path, case):
    folder = tmp_path / "lyrl"
    if case == "folder is a file":
        folder.write_text("x")
    elif case != "missing folder":
        write_lyrl(folder)
        if case == "no qrels":
            (folder / "rcv1-v2.topics.qrels").unlink()
        else:
            (folder / "lyrl2004_vectors_train.dat").unlink()
            (folder / "lyrl2004_vectors_train.dat").mkdir()
    expected = {"missing folder": "no such folder (data.lyrl2004.folder)", "folder is a file": "is a file, not a folder",
                "no qrels": "rcv1-v2.topics.qrels (or rcv1-v2.topics.qrels.gz) not found",
                "train file is a directory": "lyrl2004_vectors_train.dat: is a directory"}[case]
    refused(expected, args=["--set", "data.source=lyrl2004", "--set", f"data.lyrl2004.folder={folder}"])


def test_rcv1_data_home_is_a_file(refused, tmp_path):
    (tmp_path / "home").write_text("x")
    refused("home: is a file, not a folder (data.rcv1.data_home)",
            args=["--set", "data.source=rcv1", "--set", f"data.rcv1.data_home={tmp_path / 'home'}"])


# -- synthetic and bundled -----------------------------------------------------------------------------
@pytest.mark.parametrize("keys, needles", [
    ({"n_features": 200}, ["data.synthetic.topic_words = 200 is more than the 180 mid-frequency words",
                           "n_features >= 222"]),
    ({"n_features": 100, "words_per_document": 77.0}, ["data.synthetic.words_per_document (77.0) must be at most half"]),
])
def test_synthetic_refuses_instead_of_clamping(refused, keys, needles):
    args = ["--set", "data.source=synthetic", "--set", "data.synthetic.n_documents=200"]
    args += [a for k, v in keys.items() for a in ("--set", f"data.synthetic.{k}={v}")]
    refused(*needles, args=args)


def test_bundled_split_too_small_for_stratification(refused):
    refused("data.test_fraction = 0.01: iris has 150 samples in 3 classes",
            args=["--set", "data.source=bundled", "--set", "data.test_fraction=0.01"])
