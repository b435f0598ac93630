"""``mlnb init DATA`` then ``mlnb run``, with no edit of the written config, from 2 to 1,000 categories; what init
detects in every format; its one-line refusals; the labels checks it shares with a run; report.category = -1."""

import csv
import gzip
import json
import random
import tomllib

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from sklearn.datasets import dump_svmlight_file
from typer.testing import CliRunner

from mlnb.cli import app
from mlnb.data.text import TextReading, label_problem
from mlnb.errors import MlnbError
from mlnb.starter import Hints, detect
from mlnb.study import plotted_category


def words(rng, k, n=10) -> str:
    """A text of category k: its own five words and common ones."""
    return " ".join([f"w{k}x{rng.randrange(5)}" for _ in range(n // 2)] + [f"common{rng.randrange(40)}"
                                                                        for _ in range(n // 2)])


def write_folder(root, n_categories, per_category, seed=0):
    """One sub-folder of text files per category."""
    rng = random.Random(seed)
    for k in range(n_categories):
        (root / f"cat{k:04d}").mkdir(parents=True)
        for j in range(per_category):
            (root / f"cat{k:04d}" / f"doc{j}.txt").write_text(words(rng, k), encoding="utf-8")
    return root


def write_tags_csv(path, n_categories, per_category, seed=1):
    """A CSV of texts and ';'-separated tags: every tag on per_category documents, half of them with a second tag."""
    rng = random.Random(seed)
    rows = []
    for k in range(n_categories):
        for _ in range(per_category):
            tags = sorted({k, rng.randrange(n_categories)} if rng.random() < 0.5 else {k})
            rows.append((" ".join(words(rng, t) for t in tags), ";".join(f"tag {t}" for t in tags)))
    rng.shuffle(rows)
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["body", "tags"])
        writer.writerows(rows)
    return path


def cli(*args):
    result = CliRunner().invoke(app, [str(a) for a in args])
    return result.exit_code, result.output


def init_then_run(tmp_path, data):
    """``mlnb init DATA --out config.toml`` then ``mlnb run config.toml``: the init output and the results folder."""
    config = tmp_path / "config.toml"
    code, said = cli("init", data, "--out", config)
    assert code == 0, said
    code, output = cli("run", config, "--out", tmp_path / "results", "--quiet")
    assert code == 0, output
    (folder,) = (tmp_path / "results").glob("*/*")
    return said, folder, tomllib.loads(config.read_text())


def check_results(folder, n_categories):
    """Every model has a metric for every category; the per-category plots show a testable category."""
    metrics = pd.read_csv(folder / "metrics.csv")
    assert set(metrics["model"]) == {"nb", "lr"} and len(metrics) == 2 * n_categories
    k = tomllib.loads((folder / "config.toml").read_text())["report"]["category"]
    assert 0 <= k < n_categories
    assert (folder / "plots" / f"roc_category_{k}.png").is_file()
    assert (folder / "plots" / f"lift_category_{k}.png").is_file()
    auc = metrics[metrics["model"] == "lr"]["auc"].to_numpy()
    assert np.isfinite(auc[k])  # a testable category: its AUC is defined
    return metrics


@pytest.mark.slow
@pytest.mark.parametrize("n_categories, per_category", [(2, 15), (7, 6)])
def test_a_folder_of_text_files_runs_after_init(tmp_path, n_categories, per_category):
    data = write_folder(tmp_path / "corpus", n_categories, per_category)
    said, folder, config = init_then_run(tmp_path, data)
    assert "format: a folder of text files, one sub-folder per category" in said
    assert f"documents: {n_categories * per_category}" in said and f"categories: {n_categories} " in said
    assert "split: a seeded hash of each document's id (seed 0, test_fraction 0.5)" in said
    assert config["task"] == "multiclass" and config["data"]["source"] == "files"
    check_results(folder, n_categories)


@pytest.mark.slow
def test_a_streamed_run_plots_a_category_chosen_from_the_training_counts(tmp_path):
    data = write_folder(tmp_path / "corpus", 3, 8)
    cli("init", data, "--out", tmp_path / "config.toml")
    code, output = cli("run", tmp_path / "config.toml", "--set", "data.streaming=true", "--set", "data.chunk_size=5",
                       "--out", tmp_path / "results", "--quiet")
    assert code == 0, output
    (folder,) = (tmp_path / "results").glob("*/*")
    check_results(folder, 3)


@pytest.mark.slow
@pytest.mark.parametrize("n_categories, per_category", [(2, 12), (9, 6)])
def test_a_csv_with_semicolon_separated_tags_runs_after_init(tmp_path, n_categories, per_category):
    data = write_tags_csv(tmp_path / "tags.csv", n_categories, per_category)
    said, folder, config = init_then_run(tmp_path, data)
    assert "label column: 'tags'" in said and "label separator: ';'" in said
    assert config["data"]["text"]["label_separator"] == ";" and config["data"]["text"]["text_column"] == "body"
    assert config["task"] == "multilabel"
    metrics = check_results(folder, n_categories)
    assert sorted(set(metrics["name"])) == sorted(f"tag {k}" for k in range(n_categories))


@pytest.mark.slow
@pytest.mark.parametrize("layout", ["folder", "csv"])
def test_a_thousand_categories_run_after_init(tmp_path, layout):
    """1,000 categories of 3 documents each (the CSV: 3 per tag, half of them with a second tag)."""
    data = (write_folder(tmp_path / "corpus", 1000, 3) if layout == "folder" else
            write_tags_csv(tmp_path / "tags.csv", 1000, 3))
    said, folder, _ = init_then_run(tmp_path, data)
    assert "categories: 1,000 " in said
    check_results(folder, 1000)


# -- what init detects -------------------------------------------------------------------------------------------
def test_svmlight_arff_shards_and_texts_are_detected(tmp_path):
    rng = np.random.default_rng(0)
    X = sp.random(60, 30, density=0.2, format="csr", random_state=1)
    X.data = np.ceil(X.data * 3)
    labels = (rng.random((60, 4)) < 0.4).astype(int)
    labels[np.arange(4), np.arange(4)] = 1
    Y = sp.csr_matrix(labels)
    dump_svmlight_file(X, Y, str(tmp_path / "data.svm"), multilabel=True, zero_based=False)
    (tmp_path / "data.svm.gz").write_bytes(gzip.compress((tmp_path / "data.svm").read_bytes()))
    found = detect(tmp_path / "data.svm.gz")
    assert (found.source, found.n_documents, found.n_categories, found.presence) == ("svmlight", 60, 4, False)
    assert found.documents_per_category == {str(k): int(Y[:, k].sum()) for k in range(4)}
    X.data /= 7
    dump_svmlight_file(X, Y, str(tmp_path / "tfidf.txt"), multilabel=True, zero_based=False)  # sniffed, not by suffix
    found = detect(tmp_path / "tfidf.txt")
    assert found.presence and "event_model = 'bernoulli'" in found.notes[0]

    (tmp_path / "sms").write_text("ham\tsee you at home\nspam\tWIN a prize now\nham\tok thanks\n")
    found = detect(tmp_path / "sms")
    assert found.options == {"path": str(tmp_path / "sms"), "format": "tsv", "header": False, "text_column": "1",
                             "label_column": "0", "labels": "single"}
    assert found.task == "multiclass" and found.documents_per_category == {"ham": 2, "spam": 1}

    (tmp_path / "d.jsonl").write_text("".join(json.dumps({"id": i, "text": f"t {i}", "topics": ["a", "b"][: i % 2 + 1]})
                                              + "\n" for i in range(6)))
    found = detect(tmp_path / "d.jsonl")
    assert (found.options["label_column"], found.options["labels"], found.separator) == ("topics", "multi", "")
    assert found.documents_per_category == {"a": 6, "b": 3}


def test_a_mulan_folder_and_a_labels_file_folder_are_detected(tmp_path):
    from tests.data.test_source_contract import write_arff

    write_arff(tmp_path / "mulan")
    found = detect(tmp_path / "mulan")
    assert found.source == "arff" and found.options["test_path"].endswith("test.arff") and found.n_documents == 5

    docs = tmp_path / "docs"
    docs.mkdir()
    rows = []
    for i, tags in enumerate(["x|y", "x", "y", "z|x", "z"]):
        (docs / f"{i}.txt").write_text(f"text {i}")
        rows.append(f"{i}.txt\t{tags}")
    (docs / "labels.tsv").write_text("name\tkeywords\n" + "\n".join(rows) + "\n")
    found = detect(docs)
    assert found.source == "files" and found.options["labels_path"] == str(docs / "labels.tsv")
    assert (found.options["file_column"], found.options["label_column"], found.separator) == ("name", "keywords", "|")
    assert found.documents_per_category == {"x": 3, "y": 2, "z": 2} and found.task == "multilabel"


def test_a_train_and_a_test_folder_are_the_given_split(tmp_path):
    write_folder(tmp_path / "corpus" / "train", 3, 4)
    write_folder(tmp_path / "corpus" / "test", 3, 2, seed=5)
    found = detect(tmp_path / "corpus")
    assert found.options == {"path": str(tmp_path / "corpus" / "train"), "test_path": str(tmp_path / "corpus" / "test")}
    assert found.n_documents == 18


@pytest.mark.parametrize("content, name, problem", [
    ("id,code\n1,a\n2,b\n3,c\n4,d\n", "ids.csv", "cannot tell the label column among 'code' (4 distinct values in 4 "
                                                 "rows); set it: mlnb init ... --label-column NAME"),
    ("just one column\nof text\n", "one.csv", "one column only"),
    ("", "empty.csv", "the file is empty"),
    ("a\x00b", "blob.csv", "a binary file"),
])
def test_init_refuses_in_one_line_naming_what_it_found_and_the_option(tmp_path, content, name, problem):
    (tmp_path / name).write_text(content)
    code, output = cli("init", tmp_path / name, "--out", tmp_path / "c.toml")
    assert code == 2 and output.startswith("error: ") and problem in output and output.count("\n") == 1
    assert not (tmp_path / "c.toml").exists()


def test_init_keeps_an_existing_config_and_takes_hints(tmp_path):
    (tmp_path / "c.toml").write_text("# mine\n")
    code, output = cli("init", write_tags_csv(tmp_path / "t.csv", 3, 4), "--out", tmp_path / "c.toml")
    assert code == 2 and "exists; choose another --out or add --force" in output
    assert (tmp_path / "c.toml").read_text() == "# mine\n"
    found = detect(tmp_path / "t.csv", Hints(text_column="tags", label_column="body"))
    assert found.options["text_column"] == "tags" and found.n_categories > 3


# -- what init read: the header, documents without a label, tiny categories, other label columns ---------------------
def write_texts(path, header, n=240, k=6, seed=0, delimiter=","):
    """Texts of k topics ('topic0' ...), commas inside, one topic a document; a first row of column names or none.
    A column of row numbers first when the header has three names."""
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        topic = rng.randrange(k)
        rows.append([words(rng, topic, 30).replace(" common", ", common", 3), f"topic{topic}"])
    if header is not None and len(header) == 3:
        rows = [[str(i + 1)] + row for i, row in enumerate(rows)]
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f, delimiter=delimiter)
        writer.writerows(([header] if header else []) + rows)
    return path


def said_line(said: str, start: str) -> str:
    return next(line for line in said.splitlines() if line.startswith(start))


@pytest.mark.parametrize("header, why", [
    (["Article Body", "Topic_List"], "its 'Topic_List' never recurs in column 2"),  # the issue's: read as data
    (["content", "topic_list"], "'content' is a column name"),
    (["Text", "Labels"], "'Text' is a column name"),
    (["news story text", "story category"], "its 'story category' never recurs in column 2"),  # names like data
    (["Row No", "Body Text", "Group Name"], "column 1 holds numbers and its first cell 'Row No' is not"),
    (None, "the first row is read as a document: its 'topic"),
])
def test_init_says_whether_the_first_row_names_the_columns_and_why(tmp_path, header, why):
    path = write_texts(tmp_path / "texts.csv", header)
    config = tmp_path / "c.toml"
    code, said = cli("init", path, "--out", config)
    assert code == 0, said
    line = said_line(said, "header: ")
    assert line.startswith("header: yes, the first row names" if header else "header: no, ") and why in line
    written = config.read_text()
    text = tomllib.loads(written)["data"]["text"]
    assert text["header"] is (header is not None) and why in written  # the key, and its comment says why
    expected = (header[-2], header[-1]) if header else ("0", "1")
    assert (text["text_column"], text["label_column"]) == expected
    found = detect(path)
    assert sorted(found.documents_per_category) == [f"topic{k}" for k in range(6)] and found.n_documents == 240


@pytest.mark.slow
def test_the_run_reads_the_header_init_found(tmp_path):
    """The issue's file: its header read as a document made a category 'Topic_List' (1 document) and moved
    every document's split."""
    said, folder, config = init_then_run(tmp_path, write_texts(tmp_path / "articles.csv", ["Article Body",
                                                                                        "Topic_List"]))
    assert config["data"]["text"]["header"] is True
    metrics = check_results(folder, 6)
    assert set(metrics["name"]) == {f"topic{k}" for k in range(6)}


def test_init_counts_documents_without_a_label_and_names_tiny_categories(tmp_path):
    """A TSV (no header) of '|'-separated tags where 47 % of the documents have none, and one tag on 2."""
    rng = random.Random(2)
    rows = []
    for i in range(200):
        k = rng.randrange(4)
        tags = [] if i % 100 >= 53 else [f"t{k}"] + ([f"t{(k + 1) % 4}"] if i % 3 == 0 else [])
        rows.append(f"{words(rng, k, 20)}\t{'|'.join(tags + (['rare'] if i in (1, 50) else []))}\n")
    path = tmp_path / "tags.tsv"
    path.write_text("".join(rows), encoding="utf-8")
    config = tmp_path / "c.toml"
    code, said = cli("init", path, "--out", config)
    assert code == 0, said
    assert "note: 94 documents (47.0 %) have no label" in said
    assert "note: 1 category has fewer than 5 documents ('rare' (2))" in said
    written = config.read_text()
    assert "# Note: 94 documents (47.0 %) have no label" in written and "'rare' (2)" in written
    text = tomllib.loads(written)["data"]["text"]
    assert (text["header"], text["labels"], text["label_separator"]) == (False, "multi", "|")
    assert said_line(said, "header: ").startswith("header: no, the first row is read as a document: its 't")


def test_init_names_the_other_columns_that_could_hold_the_labels(tmp_path):
    rng = random.Random(4)
    path = tmp_path / "d.jsonl"
    path.write_text("".join(json.dumps({"id": i, "body": words(rng, i % 3, 20), "topic": f"c{i % 3}",
                                        "source": ["wire", "web"][i % 2]}) + "\n" for i in range(60)))
    config = tmp_path / "c.toml"
    code, said = cli("init", path, "--out", config)
    assert code == 0, said
    line = said_line(said, "label column: ")
    assert line == ("label column: 'topic'; other columns that could hold the labels: 'source' (mlnb init ... "
                    "--label-column NAME)")
    text = tomllib.loads(config.read_text())["data"]["text"]
    assert "header" not in text and not any(line.startswith("header: ") for line in said.splitlines())  # JSON: keys
    assert "other columns that could hold the labels: 'source'" in config.read_text()


# -- labels that look mis-split: the run's check, shared with init ---------------------------------------------------
def test_labels_split_on_the_wrong_separator_are_refused_naming_the_separator():
    combos = {"sport;politics": 1, "sport": 4, "politics;economy": 1, "economy": 3, "politics": 2}
    message = label_problem(combos, TextReading(labels="multi"))
    assert "split on ',' instead of ';'; set data.text.label_separator = ';'" in message
    message = label_problem(combos, TextReading(labels="single"))
    assert "set data.text.labels = 'multi' and data.text.label_separator = ';'" in message
    # combinations only (no tag alone): fewer distinct tags than combinations
    only = {f"t{a};t{b}": 1 for a in range(5) for b in range(a + 1, 5)}
    assert "label_separator = ';'" in label_problem(only, TextReading(labels="multi"))


def test_names_with_spaces_or_commas_are_not_taken_for_lists():
    names = {"New York": 3, "machine learning": 4, "learning": 2, "Smith, John": 3, "Doe, Jane": 2, "York": 5}
    assert label_problem(names, TextReading(labels="single")) is None
    assert label_problem(names, TextReading(labels="multi", label_separator="|")) is None


def test_most_labels_in_one_document_only_are_not_labels():
    texts = {f"some text number {i}": 1 for i in range(30)}
    message = label_problem(texts, TextReading(labels="single", label_column="msg"))
    assert message.startswith("30 of 30 labels occur in one document only") and "label_column = 'msg'" in message
    assert "check_labels = false" in message
    assert "split on ','" in label_problem({f"t{i}": 1 for i in range(30)}, TextReading(labels="multi"))
    assert label_problem({f"t{i}": 1 for i in range(19)}, TextReading(labels="multi")) is None


def test_a_run_refuses_mis_split_tags_and_the_option_turns_the_check_off(tmp_path):
    data = write_tags_csv(tmp_path / "tags.csv", 6, 4)
    settings = ["--set", "data.source=text", "--set", f"data.text.path={data}", "--set", "data.text.text_column=body",
                "--set", "data.text.label_column=tags", "--set", "data.text.labels=multi", "--quiet",
                "--out", tmp_path / "out"]
    code, output = cli("run", "configs/quickstart.toml", *settings)
    assert code == 2 and "set data.text.label_separator = ';'" in output and output.count("\n") == 1
    with pytest.raises(MlnbError, match="check_labels"):
        raise MlnbError(label_problem({f"x{i}": 1 for i in range(25)}, TextReading(labels="multi")))


# -- report.category = -1 ---------------------------------------------------------------------------------------------
def test_the_plotted_category_is_the_most_frequent_testable_one():
    train = np.array([10, 50, 0, 30, 20])
    test = np.array([9, 0, 3, 30, 25])
    assert plotted_category(train, 50, test, 40) == 3  # 1 has no test positive, 2 no training one
    assert plotted_category(np.array([5, 50, 3]), 50, np.array([5, 3, 6]), 40) == 0  # 1: every training doc
    assert plotted_category(np.array([3, 3]), 10, np.array([1, 2]), 10) == 1  # ties: more test positives
    assert plotted_category(np.array([0, 2]), 10) == 1  # streamed: training counts only
    assert plotted_category(np.array([0, 0]), 10, np.array([0, 0]), 10) == 0  # none testable: still a category


def test_an_explicit_category_that_does_not_exist_is_still_an_error(tmp_path):
    code, output = cli("run", "configs/quickstart.toml", "--set", "data.synthetic.n_categories=5", "--set",
                       "report.category=5", "--out", tmp_path, "--quiet")
    assert code == 2 and "report.category = 5 is out of range: the data has 5 categories" in output
