"""The source contract, run over every registered data source (mlnb.data.sources.SOURCES).

A source read whole (``load_dataset``) and read in chunks (``open_streams``, at any chunk size) gives the
same documents, labels, ids and train/test split, and ``describe_split`` states that split in the sentence
the Dataset records. A bad line is refused in one line naming ``file:LINE``, the same in memory and streamed.
Sources that cannot stream keep the rest of the contract: their split is stated, their ids are unique
within each part.
"""

import csv
import gzip
import json
from dataclasses import replace

import joblib
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import dump_svmlight_file

from mlnb.config import DataConfig, FeaturesConfig
from mlnb.data.hashing import split_mask
from mlnb.data.registry import LABELS, DataShape
from mlnb.data.shards import convert
from mlnb.data.sources import SOURCES, describe_split, load_dataset, open_streams
from mlnb.data.stream import SvmlightSource, concatenate
from mlnb.data.synthetic import make_rcv1_like
from mlnb.errors import MlnbError

SEED = 3
CHUNK_SIZES = (1, 7, 250, 10**6)


def same(A, B) -> bool:
    return A.shape == B.shape and A.dtype == B.dtype and (A != B).nnz == 0


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """600 synthetic documents written as every streaming format: svmlight (one file, a glob of .gz shards,
    a train and a test file), text (CSV and JSON lines, one file, a glob, a train and a test file) and
    binary shards (one folder; a train and a test folder)."""
    folder = tmp_path_factory.mktemp("contract")
    data = make_rcv1_like(n_documents=600, n_features=300, n_categories=8, words_per_document=12, seed=1)
    X, Y = data.X.copy(), data.Y.tocsr()
    X.data[::5] *= 0.5  # some non-integer values
    dump_svmlight_file(X, Y, str(folder / "all.svm"), multilabel=True, zero_based=False)
    for k, (a, b) in enumerate([(0, 200), (200, 450), (450, 600)]):
        dump_svmlight_file(X[a:b], Y[a:b], str(folder / f"part-{k}.svm"), multilabel=True, zero_based=False)
        (folder / f"part-{k}.svm.gz").write_bytes(gzip.compress((folder / f"part-{k}.svm").read_bytes()))
    dump_svmlight_file(X[:400], Y[:400], str(folder / "train.svm"), multilabel=True, zero_based=False)
    dump_svmlight_file(X[400:], Y[400:], str(folder / "test.svm"), multilabel=True, zero_based=False)
    rows = []
    for i in range(600):
        words = [f"w{j}" for j, count in zip(X[i].indices, X[i].data) for _ in range(max(1, int(count)))]
        text = " ".join(words) + ('\n"quoted", on a second line' if i % 10 == 3 else "")
        rows.append((text, [f"c{k}" for k in Y[i].indices]))
    write_csv(folder / "all.csv", rows)
    write_csv(folder / "text-0.csv", rows[:250])
    write_csv(folder / "text-1.csv", rows[250:])
    write_jsonl(folder / "all.jsonl", rows)
    write_jsonl(folder / "train.jsonl", rows[:400])
    write_jsonl(folder / "test.jsonl", rows[400:])
    write_folders(folder, rows)
    convert(SvmlightSource(str(folder / "part-*.svm")), folder / "shards", shard_documents=250)
    convert(SvmlightSource(folder / "train.svm", n_features=300, n_categories=8), folder / "train-shards",
            shard_documents=150)
    convert(SvmlightSource(folder / "test.svm", n_features=300, n_categories=8), folder / "test-shards")
    return folder


def write_csv(path, rows):
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["text", "label"])
        for text, labels in rows:
            writer.writerow([text, "|".join(labels)])


def write_folders(folder, rows):
    """A folder of text files both ways: one sub-folder per category (a document's first label; those without
    are left out), and files with a labels file ('|'-separated), whole and as a train and a test folder."""
    for i, (text, labels) in enumerate(rows):
        if labels:
            (folder / "by-category" / labels[0]).mkdir(parents=True, exist_ok=True)
            (folder / "by-category" / labels[0] / f"{i:04d}.txt").write_text(text, encoding="utf-8")
        for part in ("docs", "train-docs" if i < 400 else "test-docs"):
            (folder / part).mkdir(exist_ok=True)
            (folder / part / f"d{i:04d}.txt").write_text(text, encoding="utf-8")
    for name, part in (("labels.csv", rows), ("train-labels.csv", rows[:400]), ("test-labels.csv", rows[400:])):
        offset = 400 if name.startswith("test") else 0
        with open(folder / name, "w", newline="", encoding="utf-8") as f:
            writer = csv.writer(f)
            writer.writerow(["file", "labels"])
            writer.writerows((f"d{offset + i:04d}.txt", "|".join(labels)) for i, (_, labels) in enumerate(part))


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps({"text": text, "label": labels}) + "\n" for text, labels in rows),
                    encoding="utf-8")


TEXT = dict(labels="multi", label_separator="|")
# id: (source, its options (paths relative to the files folder), [data] keys, [features] keys)
STREAMED = {
    "svmlight one file": ("svmlight", dict(path="all.svm"), {}, {}),
    "svmlight glob of .gz shards": ("svmlight", dict(path="part-*.svm.gz"), dict(test_fraction=0.3), {}),
    "svmlight given dimensions": ("svmlight", dict(path="part-*.svm", n_features=320, n_categories=8), {}, {}),
    "svmlight test file": ("svmlight", dict(path="train.svm", test_path="test.svm"), {}, {}),
    "text csv, count": ("text", dict(path="all.csv", **TEXT), {}, {}),
    "text csv glob, hashing": ("text", dict(path="text-*.csv", **TEXT), dict(test_fraction=0.4),
                               dict(vectorizer="hashing", hash_features=512)),
    "text jsonl, stop words": ("text", dict(path="all.jsonl", **TEXT), {}, dict(stop_words="english")),
    "text jsonl test file": ("text", dict(path="train.jsonl", test_path="test.jsonl", **TEXT), {}, {}),
    "files by category": ("files", dict(path="by-category"), {}, {}),
    "files and labels, hashing": ("files", dict(path="docs", labels_path="labels.csv", label_separator="|"),
                                  dict(test_fraction=0.4), dict(vectorizer="hashing", hash_features=512)),
    "files test folder": ("files", dict(path="train-docs", labels_path="train-labels.csv", test_path="test-docs",
                                        test_labels_path="test-labels.csv", label_separator="|"), {}, {}),
    "shards": ("shards", dict(path="shards"), dict(test_fraction=0.25), {}),
    "shards test folder": ("shards", dict(path="train-shards", test_path="test-shards"), {}, {}),
    "long_tail, generated": ("long_tail", dict(n_documents=600, n_features=300, n_categories=40,
                                               words_per_document=12), dict(test_fraction=0.3), {}),
}
_PATH_KEYS = ("path", "test_path", "folder", "train_path", "xml_path", "data_home", "labels_path", "test_labels_path")


def data_config(folder, source, options, data_keys) -> DataConfig:
    options = {k: str(folder / v) if k in _PATH_KEYS and v else v for k, v in options.items()}
    return DataConfig(source=source, **data_keys, **{source: SOURCES[source].options(**options)})


@pytest.mark.parametrize("case", list(STREAMED))
def test_whole_and_streamed_give_the_same_documents_ids_and_split(files, case):
    source, options, data_keys, feature_keys = STREAMED[case]
    config, features = data_config(files, source, options, data_keys), FeaturesConfig(**feature_keys)
    dataset = load_dataset(config, SEED, features)
    assert dataset.describe()["split"] == describe_split(config, SEED)
    if "test_path" in options:
        assert describe_split(config, SEED).startswith("the given test")
    else:  # the hash split of the ids
        np.testing.assert_array_equal(dataset.test_index, np.flatnonzero(split_mask(dataset.ids, SEED,
                                                                                    config.test_fraction)))
    train, test = open_streams(config, features, SEED)
    for part in (train, test):
        assert part.category_names == dataset.category_names and part.n_features == dataset.n_features
        assert part.feature_names == dataset.feature_names
    for chunk_size in CHUNK_SIZES:
        for part, index in ((train, dataset.train_index), (test, dataset.test_index)):
            chunks = list(part.chunks(chunk_size))
            assert max(chunk.n_documents for chunk in chunks) <= chunk_size
            X, Y, ids = concatenate(chunks)
            assert same(X, dataset.X[index]) and same(Y, dataset.Y[index])
            np.testing.assert_array_equal(ids, dataset.ids[index])
            if chunk_size == 7 and source != "shards":  # each row named at the same file and line
                lines = [chunk.place(i) for chunk in chunks for i in range(chunk.n_documents)]
                assert lines == [dataset.place(row) for row in index]


@pytest.mark.parametrize("case", ["svmlight one file", "shards"])
def test_a_training_sample_is_stated_with_the_split(files, case):
    source, options, data_keys, _ = STREAMED[case]
    config = replace(data_config(files, source, options, data_keys), max_train_documents=50)
    dataset = load_dataset(config, SEED)
    assert dataset.train_index.size == 50 and dataset.describe()["split"] == describe_split(config, SEED)
    assert describe_split(config, SEED).endswith("those with the smallest seeded hash of their id (seed 3)")


# -- the sources that are read whole only -----------------------------------------------------------
def write_lyrl(folder):
    folder.mkdir()
    (folder / "lyrl2004_vectors_train.dat").write_text("2286  1:0.5 47236:0.5\n2287  3:1.0\n2288  2:0.3 3:0.4\n")
    (folder / "lyrl2004_vectors_test_pt0.dat").write_text("2289  1:1.0\n2290  4:0.2\n")
    (folder / "rcv1-v2.topics.qrels").write_text("E11 2286 1\nCCAT 2287 1\nCCAT 2288 1\nE11 2289 1\nCCAT 2290 1\n")


def write_rcv1_cache(home):
    from mlnb.data.rcv1 import CACHE_NAMES

    rng = np.random.default_rng(0)
    names = np.empty(3, dtype=object)
    names[:] = ["C15", "CCAT", "GCAT"]
    values = [sp.random(40, 47236, density=0.001, format="csr", random_state=1),
              np.arange(2286, 2326, dtype=np.uint32), sp.csr_matrix((rng.random((40, 3)) < 0.4).astype(np.uint8)),
              names]
    (home / "RCV1").mkdir(parents=True)
    for name, value in zip(CACHE_NAMES, values):
        joblib.dump(value, home / "RCV1" / name)


def write_reuters(folder):
    folder.mkdir()
    stories = "".join(f'<REUTERS TOPICS="YES" LEWISSPLIT="{"TEST" if i % 3 == 0 else "TRAIN"}" NEWID="{100 + i}">\n'
                      f"<TOPICS><D>{'earn' if i % 2 else 'grain'}</D></TOPICS>\n<TEXT><TITLE>t{i}</TITLE><BODY>"
                      f"body {'profit' if i % 2 else 'wheat'} {i}</BODY></TEXT>\n</REUTERS>\n" for i in range(12))
    (folder / "reut2-000.sgm").write_text(stories, encoding="latin-1")


ARFF_HEADER = ("@relation t\n@attribute f1 numeric\n@attribute f2 numeric\n@attribute L1 {0,1}\n@attribute L2 {0,1}\n"
               "@data\n")
ARFF_XML = ('<?xml version="1.0" encoding="utf-8"?>\n<labels xmlns="http://mulan.sourceforge.net/labels">\n'
            '<label name="L1"></label>\n<label name="L2"></label>\n</labels>\n')


def write_arff(folder):
    folder.mkdir()
    (folder / "train.arff").write_text(ARFF_HEADER + "{0 1,2 1}\n{1 2,3 1}\n{0 1,1 1,2 1,3 1}\n")
    (folder / "test.arff").write_text(ARFF_HEADER + "{0 3,3 1}\n{1 1,2 1}\n")
    (folder / "labels.xml").write_text(ARFF_XML)


# id: (source, writer of its files into a folder or None, its options (paths relative to that folder), [data] keys)
WHOLE = {
    "synthetic": ("synthetic", None, dict(n_documents=400, n_features=400, n_categories=6), {}),
    "bundled": ("bundled", None, dict(name="wine"), dict(test_fraction=0.3)),
    "rcv1 random split": ("rcv1", write_rcv1_cache, dict(data_home=".", split="random", test_size=10), {}),
    "lyrl2004": ("lyrl2004", write_lyrl, dict(folder="."), {}),
    "lyrl2004 swapped": ("lyrl2004", write_lyrl, dict(folder=".", split="swapped"), {}),
    "reuters21578": ("reuters21578", write_reuters, dict(folder="."), {}),
    "arff": ("arff", write_arff, dict(train_path="train.arff", test_path="test.arff", xml_path="labels.xml"), {}),
}


@pytest.mark.parametrize("case", list(WHOLE))
def test_sources_read_whole_state_their_split_and_refuse_streaming(tmp_path, case):
    source, writer, options, data_keys = WHOLE[case]
    if writer is not None:
        writer(tmp_path / "files")
    config = data_config(tmp_path / "files", source, options, data_keys)
    dataset = load_dataset(config, SEED)
    assert dataset.describe()["split"] == describe_split(config, SEED) != ""
    train, test = dataset.ids[dataset.train_index], dataset.ids[dataset.test_index]
    assert np.unique(train).size == train.size and np.unique(test).size == test.size
    assert train.size and test.size and not set(dataset.train_index) & set(dataset.test_index)
    if describe_split(config, SEED).startswith("a seeded hash"):
        np.testing.assert_array_equal(dataset.test_index, np.flatnonzero(split_mask(dataset.ids, SEED,
                                                                                    config.test_fraction)))
    with pytest.raises(MlnbError, match=f"data.source = '{source}' cannot be read in chunks"):
        open_streams(config)


def test_every_registered_source_is_in_the_contract():
    covered = {STREAMED[case][0] for case in STREAMED} | {WHOLE[case][0] for case in WHOLE}
    assert covered == set(SOURCES)
    assert {STREAMED[case][0] for case in STREAMED} == {name for name, s in SOURCES.items() if s.streams}


# -- what a source declares: its labels, its shape before reading, its own task checks ---------------
@pytest.mark.parametrize("name", list(SOURCES))
def test_every_source_declares_its_labels_and_its_shape(name):
    source = SOURCES[name]
    options = source.options()
    assert source.labels is not None and source.labels_of(options) in LABELS
    for features in (FeaturesConfig(), FeaturesConfig(vectorizer="hashing", hash_features=4096), None):
        shape, keys = source.shape(options, DataConfig(source=name, **{name: options}), features)
        assert isinstance(shape, DataShape) and set(keys) <= {"n_documents", "n_features", "n_categories", "nnz"}
        for size, key in (("n_features", "n_features"), ("n_categories", "n_categories"), ("n_train", "n_documents")):
            if getattr(shape, size) is not None:  # a size known before reading names the key that set it
                assert keys.get(key), (size, keys)
        if source.prunes_vocabulary and features is not None and features.vectorizer == "hashing":
            assert shape.n_features == 4096 and keys["n_features"] == "features.hash_features = 4096"
    source.check_task(options, "multilabel")  # the defaults pass the source's own checks
    if source.labels_of(options) != "multi":
        source.check_task(options, "multiclass")


def test_a_source_without_its_declarations_is_refused():
    from mlnb.data.registry import SourceKind, unknown_shape

    kwargs = dict(name="x", options=object, help="", load=lambda s, r: None)
    with pytest.raises(ValueError, match="labels = None"):
        SourceKind(**kwargs, shape=unknown_shape)
    with pytest.raises(ValueError, match="declare its shape"):
        SourceKind(**kwargs, labels="multi")
    with pytest.raises(ValueError, match="labels = 'several'"):
        SourceKind(**kwargs, labels="several", shape=unknown_shape)


def test_labels_set_by_an_option_follow_it():
    text, files = SOURCES["text"], SOURCES["files"]
    assert text.labels_of(text.options(labels="multi")) == "multi"
    assert text.labels_of(text.options(labels="single")) == "single"
    assert files.labels_of(files.options()) == "single"  # one sub-folder per category
    assert files.labels_of(files.options(labels_path="labels.csv")) == "either"
    with pytest.raises(MlnbError, match=r"data.text.negative_labels = \['ham'\]: .*every label is a class"):
        text.check_task(text.options(negative_labels=["ham"]), "multiclass")
    text.check_task(text.options(negative_labels=["ham"]), "multilabel")


@pytest.mark.parametrize("case", ["svmlight one file", "text csv, count", "text jsonl, stop words", "files by category",
                                  "shards", "svmlight test file"])
def test_mlnb_init_detects_each_source_by_its_own_detector(files, case):
    """The detector a source declares (``SourceKind.detect``) recognises its data; the options it finds read them."""
    from mlnb.data.sources import detect_data

    source, options, _, _ = STREAMED[case]
    found = detect_data(files / options["path"])
    assert found.source == source and SOURCES[source].detect is not None
    assert found.options["path"] == str(files / options["path"])
    if "test_path" in options:
        assert found.options["test_path"] == str(files / options["test_path"])
    config = DataConfig(source=source, **{source: SOURCES[source].options(**found.options)})
    assert load_dataset(config, SEED).n_documents == found.n_documents


def test_the_detectors_are_asked_in_a_declared_order():
    orders = [source.detect_order for source in SOURCES.values() if source.detect is not None]
    assert len(orders) >= 5 and len(set(orders)) == len(orders)


# sources whose shape the config gives before reading: (options, [data] keys)
KNOWN_SHAPES = {
    "synthetic": ("synthetic", dict(n_documents=401, n_features=300, n_categories=6, words_per_document=20),
                  dict(test_fraction=0.3)),
    "long_tail": ("long_tail", dict(n_documents=600, n_features=300, n_categories=40, words_per_document=12),
                  dict(test_fraction=0.3)),
}


@pytest.mark.parametrize("case", list(KNOWN_SHAPES))
def test_a_declared_shape_is_what_loading_gives(case):
    """Features, categories and documents exactly; the test part as the hash split expects it (within 4 binomial
    standard deviations); nnz, an estimate from words_per_document, within 15 %."""
    name, options, data_keys = KNOWN_SHAPES[case]
    config = data_config(None, name, options, data_keys)
    source = SOURCES[name]
    shape, keys = source.shape(getattr(config, name), config, FeaturesConfig())
    assert None not in shape and set(keys) == {"n_documents", "n_features", "n_categories", "nnz"}
    dataset = load_dataset(config, SEED)
    n, fraction = dataset.n_documents, config.test_fraction
    assert (shape.n_train + shape.n_test, shape.n_features, shape.n_categories) == (n, dataset.n_features,
                                                                                     dataset.n_categories)
    assert abs(dataset.test_index.size - shape.n_test) <= 4 * (n * fraction * (1 - fraction)) ** 0.5
    assert dataset.X.nnz == pytest.approx(shape.nnz, rel=0.15)


# -- a bad line: one line naming file:LINE, the same whole and streamed ------------------------------
def streamed_error(config, chunk_size) -> str:
    with pytest.raises(MlnbError) as error:
        train, test = open_streams(config, seed=SEED)
        for part in (train, test):
            for _ in part.chunks(chunk_size):
                pass
    return str(error.value)


def whole_error(config) -> str:
    with pytest.raises(MlnbError) as error:
        load_dataset(config, SEED)
    return str(error.value)


# (file content: a bad line at line 4 of the second of three shards, what the message says)
SVMLIGHT_LINES = {
    "label not a number": ("a,2 1:1", "expected labels as comma-separated non-negative integers, got 'a,2'"),
    "negative label": ("-1 1:1", "label -1 is not a category id"),
    "unsorted indices": ("1 3:1 2:1", "feature index 2 comes after the larger index 3"),
    "index below index_base": ("1 0:1", "feature index 0 is below 1"),
    "value not a number": ("1 2:x", "expected a number after '2:', got 'x'"),
    "NaN": ("1 2:nan", "feature value nan"),
    "beyond float32": ("1 2:1e39", "beyond float32's range"),
    "beyond 1e15": ("1 2:3e20", "feature value 3e+20 has a magnitude beyond"),
    "pair without colon": ("1 2 3:1", "expected 'index:value', got '2'"),
}


@pytest.mark.parametrize("dimensions", [{}, dict(n_features=300, n_categories=8)], ids=["scanned", "given"])
@pytest.mark.parametrize("case", list(SVMLIGHT_LINES))
def test_a_bad_svmlight_line_is_the_same_one_line_whole_and_streamed(files, tmp_path, case, dimensions):
    line, problem = SVMLIGHT_LINES[case]
    for k in range(3):
        text = (files / f"part-{k}.svm").read_text().splitlines(keepends=True)
        if k == 1:
            text.insert(1, "# a comment\n")
            text.insert(3, line + "\n")
        (tmp_path / f"part-{k}.svm").write_text("".join(text))
    config = data_config(tmp_path, "svmlight", dict(path="part-*.svm", **dimensions), {})
    message = whole_error(config)
    assert message.startswith(f"{tmp_path / 'part-1.svm'}:4: ") and problem in message and "\n" not in message
    for chunk_size in (1, 100, 10**6):
        assert streamed_error(config, chunk_size) == message


def test_a_short_names_file_is_blamed_the_same_whole_and_streamed(files, tmp_path):
    (tmp_path / "names.txt").write_text("".join(f"c{k}\n" for k in range(5)))
    config = data_config(files, "svmlight", dict(path="part-*.svm", category_names_path=str(tmp_path / "names.txt")),
                         {})
    message = whole_error(config)
    assert message.startswith(f"{tmp_path / 'names.txt'}: 5 category names, but {files / 'part-0.svm'}:")
    assert "has category id" in message and "\n" not in message
    assert streamed_error(config, 50) == message


TEXT_ROWS = {
    "csv: too many columns": ("csv", 'a b,c1\nc d,c2,extra\n', 3, "expected 2 columns, got 3"),
    "csv: a quote never closed": ("csv", 'a b,c1\n"open text,c2\nmore,c1\n', 3,
                                  "malformed CSV: the quote opened on this line is never closed"),
    "csv: text after a closing quote": ("csv", 'a b,c1\n"ab"c,c2\n', 3, "malformed CSV"),
    "csv: a bad byte": ("csv", 'a b,c1\ncaf\udce9,c2\n', 3, "not valid utf-8 text"),
    "jsonl: broken": ("jsonl", '{"text": "a", "label": "c1"}\n{"text": "b", \n', 2, "not a JSON object"),
    "jsonl: text not a string": ("jsonl", '{"text": "a", "label": "c1"}\n{"text": 7, "label": "c1"}\n', 2,
                                 "the text must be a string, got 7"),
    "jsonl: key twice": ("jsonl", '{"text": "a", "label": "c1"}\n{"text": "b", "label": "x", "text": "c"}\n', 2,
                         "key 'text' appears twice in the JSON object"),
    "jsonl: several labels, labels = single": ("jsonl", '{"text": "a", "label": "c1"}\n{"text": "b", "label": '
                                               '["c1", "c2"]}\n', 2, "expected one label"),
}


@pytest.mark.parametrize("case", list(TEXT_ROWS))
def test_a_bad_text_row_is_the_same_one_line_whole_and_streamed(files, tmp_path, case):
    fmt, tail, line, problem = TEXT_ROWS[case]
    good = (files / "text-0.csv").read_text() if fmt == "csv" else (files / "train.jsonl").read_text()
    if "labels = single" in case:  # every good row with one label
        good = "".join(json.dumps({"text": f"w{i} w{i + 1}", "label": f"c{i % 3}"}) + "\n" for i in range(30))
    (tmp_path / f"text-0.{fmt}").write_text(good)
    head = "text,label\n" if fmt == "csv" else ""
    (tmp_path / f"text-1.{fmt}").write_bytes((head + tail).encode("utf-8", "surrogateescape"))
    labels = {} if "labels = single" in case else TEXT
    config = data_config(tmp_path, "text", dict(path=f"text-*.{fmt}", **labels), {})
    message = whole_error(config)
    assert message.startswith(f"{tmp_path / f'text-1.{fmt}'}:{line}: ") and problem in message
    assert "\n" not in message
    for chunk_size in (1, 100):
        assert streamed_error(config, chunk_size) == message
