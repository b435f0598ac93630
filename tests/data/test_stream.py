"""Chunk sources (mlnb.data.stream): streamed == in-memory, any chunk size; ids, split, partitions, errors."""

import bz2
import gzip
import io
import json
import pickle
import random

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import dump_svmlight_file, load_svmlight_file
from sklearn.feature_extraction.text import CountVectorizer

from mlnb import progress
from mlnb.data import svmlight
from mlnb.data.hashing import hash_unit, split_mask
from mlnb.data.stream import (
    FILE_ID_SHIFT,
    SvmlightSource,
    TextReading,
    TextSource,
    check_one_class,
    concatenate,
    split_source,
    svmlight_sources,
    text_sources,
    track_chunks,
)
from mlnb.data.svmlight import read_svmlight
from mlnb.data.svmlight_blocks import parse_fast, parse_sklearn
from mlnb.data.synthetic import make_rcv1_like
from mlnb.data.text import TextOptions, load_text_dataset
from mlnb.errors import MlnbError


def same(A, B) -> bool:
    return A.shape == B.shape and (A != B).nnz == 0


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """2,000 synthetic documents as one plain, one .gz, one .bz2 svmlight file and as 3 shards."""
    folder = tmp_path_factory.mktemp("svm")
    data = make_rcv1_like(n_documents=2000, n_features=500, n_categories=12, words_per_document=20, seed=3)
    X, Y = data.X, data.Y.tocsr()
    X.data[::7] *= 0.25  # some non-integer values
    plain = folder / "all.svm"
    dump_svmlight_file(X, Y, str(plain), multilabel=True, zero_based=False)
    (folder / "all.svm.gz").write_bytes(gzip.compress(plain.read_bytes()))
    (folder / "all.svm.bz2").write_bytes(bz2.compress(plain.read_bytes()))
    for k, (a, b) in enumerate([(0, 700), (700, 1500), (1500, 2000)]):
        dump_svmlight_file(X[a:b], Y[a:b], str(folder / f"part-{k}.svm"), multilabel=True, zero_based=False)
    return folder


def test_svmlight_stream_equals_in_memory_loader_for_any_chunk_size(corpus):
    (X, Y), = read_svmlight([corpus / "all.svm"])[0]
    source = SvmlightSource(corpus / "all.svm")
    assert (source.n_features, source.n_categories, source.n_documents) == (X.shape[1], Y.shape[1], 2000)
    for chunk_size in (1, 7, 500, 2000, 10**6):
        chunks = list(source.chunks(chunk_size))
        assert max(c.n_documents for c in chunks) <= chunk_size
        Xs, Ys, ids = concatenate(chunks)
        assert same(Xs, X) and same(Ys, Y)
        assert Xs.dtype == np.float32 and Ys.dtype == np.int8 and all(c.X.has_sorted_indices for c in chunks)
        np.testing.assert_array_equal(ids, np.arange(2000))
        assert [c.first_line for c in chunks] == [1 + i * chunk_size for i in range(len(chunks))]


@pytest.mark.parametrize("name", ["all.svm.gz", "all.svm.bz2"])
def test_compressed_files_read_as_the_plain_one(corpus, name):
    plain = concatenate(SvmlightSource(corpus / "all.svm").chunks(300))
    packed = concatenate(SvmlightSource(corpus / name).chunks(300))
    assert same(plain[0], packed[0]) and same(plain[1], packed[1])


def test_small_blocks_lines_spanning_blocks_and_scikit_learn_parser(corpus, monkeypatch):
    """Chunks that span many read blocks, blocks cut mid-line, and the parser without numba: same matrices."""
    (X, Y), = read_svmlight([corpus / "all.svm"])[0]
    monkeypatch.setattr(svmlight, "BLOCK_BYTES", 333)
    for use_numba in (True, False):
        Xs, Ys, _ = concatenate(SvmlightSource(corpus / "all.svm", use_numba=use_numba).chunks(45))
        assert same(Xs, X) and same(Ys, Y)


def test_zero_based_indices(tmp_path):
    X = sp.random(300, 40, density=0.1, format="lil", random_state=2, dtype=np.float64)
    X[:, 0] = 1.0  # feature 0 is used
    X = X.tocsr()
    path = tmp_path / "zero.svm"
    dump_svmlight_file(X, [(k % 3,) for k in range(300)], str(path), multilabel=True, zero_based=True)
    (expected, _), = read_svmlight([path], index_base=0)[0]
    Xs, _, _ = concatenate(SvmlightSource(path, index_base=0).chunks(64))
    assert same(Xs, expected) and Xs.shape[1] == 40
    with pytest.raises(MlnbError, match=r"zero\.svm:1: feature index 0 is below 1"):
        SvmlightSource(path, index_base=1)


def test_glob_of_shards_ids_and_partitions(corpus):
    pairs, _ = read_svmlight(sorted(corpus.glob("part-*.svm")))
    X, Y = sp.vstack([p[0] for p in pairs], format="csr"), sp.vstack([p[1] for p in pairs], format="csr")
    source = SvmlightSource(str(corpus / "part-*.svm"))
    partitions = source.partitions()
    assert [p.n_documents for p in partitions] == [700, 800, 500]
    Xs, Ys, ids = concatenate(source.chunks(256))
    assert same(Xs, X) and same(Ys, Y)
    expected = np.concatenate([(k << FILE_ID_SHIFT) + np.arange(n) for k, n in enumerate([700, 800, 500])])
    np.testing.assert_array_equal(ids, expected)
    # each partition alone, after a pickle round trip (what a Dask worker gets), covers its documents once
    clone = pickle.loads(pickle.dumps(source))
    read = np.concatenate([c.ids for p in partitions for c in clone.read(pickle.loads(pickle.dumps(p)), 99)])
    np.testing.assert_array_equal(read, expected)
    assert all(c.where.endswith(f"part-{p.number}.svm") for p in partitions for c in source.read(p, 1000))


def test_given_dimensions_and_names_skip_the_scan(corpus, tmp_path):
    names = tmp_path / "names.txt"
    names.write_text("\n".join(f"topic{k}" for k in range(12)) + "\n")
    source = SvmlightSource(corpus / "all.svm", n_features=600, category_names=names)
    assert source.documents is None and source.n_documents is None  # no scan pass
    assert source.category_names[3] == "topic3" and source.n_features == 600
    Xs, Ys, _ = concatenate(source.chunks(1000))
    (X, Y), = read_svmlight([corpus / "all.svm"], n_features=600, n_categories=12)[0]
    assert same(Xs, X) and same(Ys, Y)


def test_train_and_test_files_share_dimensions(corpus):
    train, test = svmlight_sources(corpus / "part-0.svm", corpus / "part-2.svm")
    pairs, K = read_svmlight([corpus / "part-0.svm", corpus / "part-2.svm"])
    assert train.n_features == test.n_features == pairs[0][0].shape[1] and train.n_categories == K
    assert same(concatenate(test.chunks(100))[0], pairs[1][0])


def write(path, text: str):
    path.write_bytes(text.encode())
    return path


def test_comments_blank_lines_crlf_and_odd_syntax_read_as_scikit_learn_does(tmp_path):
    text = ("# header comment\n1,3 1:0.5 4:2\r\n\n  \n0 2:1e-3\t3:7 # trailing\n4:1.5\n2 qid:3 1:1\n"
            "1.0,2 2:.25 3:-1.5E+2\n3\n")
    path = write(tmp_path / "odd.svm", text)
    X, label_tuples = load_svmlight_file(io.BytesIO(text.encode()), n_features=4, dtype=np.float32,
                                         multilabel=True, zero_based=False)
    source = SvmlightSource(path, n_features=4, n_categories=4)
    chunks = list(source.chunks(2))
    Xs, Ys, _ = concatenate(chunks)
    assert same(Xs, X.tocsr())
    assert [sorted(Ys[i].indices) for i in range(Ys.shape[0])] == [sorted({int(v) for v in t}) for t in label_tuples]
    assert [c.first_line for c in chunks] == [2, 6, 8]  # lines where documents start
    assert [c.row_lines().tolist() for c in chunks] == [[2, 5], [6, 7], [8, 9]]
    with pytest.raises(MlnbError, match=r"odd\.svm:2: document has labels '1', '3'; task = 'multiclass'"):
        for chunk in chunks:
            check_one_class(chunk)
    picked = chunks[1].rows(np.array([True, False]))  # a split keeps each row's line
    assert picked.first_line == 6 and picked.row_lines().tolist() == [6]
    with pytest.raises(MlnbError, match=r"odd\.svm:6: document has no label"):
        check_one_class(picked)


@pytest.mark.parametrize("line, problem", [
    ("a,2 1:1", "expected labels"),
    ("1 3:1 2:1", "increasing"),
    ("1 2:1 2:3", "increasing"),
    ("1 0:1", "below 1"),
    ("1 9999:1", "beyond n_features"),
    ("1 2:nan", "NaN"),
    ("1 2:1e300", "float32"),
    ("1 2:x", "expected a number"),
    ("1 2", "index:value"),
    ("77 2:1", "out of range"),
])
def test_a_bad_line_is_one_line_naming_the_file_and_line(corpus, tmp_path, line, problem):
    lines = (corpus / "part-1.svm").read_text().splitlines()
    lines.insert(433, "# a comment")
    lines.insert(611, line)
    write(tmp_path / "part-1.svm", "\n".join(lines) + "\n")
    for name in ("part-0.svm", "part-2.svm"):
        (tmp_path / name).write_bytes((corpus / name).read_bytes())
    source = SvmlightSource(str(tmp_path / "part-*.svm"), n_features=500, n_categories=12)
    with pytest.raises(MlnbError) as error:
        concatenate(source.chunks(100))
    message = str(error.value)
    assert message.startswith(f"{tmp_path / 'part-1.svm'}:612: ") and problem in message and "\n" not in message


def test_a_bad_line_in_the_scan_pass_and_without_numba(tmp_path):
    path = write(tmp_path / "x.svm", "1 1:1\n0 2:1\n0 1:1 1:2\n")
    for use_numba in (True, False):
        with pytest.raises(MlnbError, match=r"x\.svm:3: feature index 1 repeats; expected indices in increasing order"):
            SvmlightSource(path, use_numba=use_numba)


def test_missing_files_empty_glob_empty_and_truncated_files(corpus, tmp_path):
    with pytest.raises(MlnbError, match=r"nothing\.svm: no such file \(svmlight data\)$"):
        SvmlightSource(tmp_path / "nothing.svm", n_features=3, n_categories=2)
    with pytest.raises(MlnbError, match=r"shard-\*\.svm: no file matches this pattern"):
        SvmlightSource(str(tmp_path / "shard-*.svm"), n_features=3, n_categories=2)
    empty = write(tmp_path / "empty.svm", "# nothing\n\n")
    with pytest.raises(MlnbError, match="holds no documents"):
        list(SvmlightSource(empty, n_features=3, n_categories=2).chunks(10))
    packed = (corpus / "all.svm.gz").read_bytes()
    (tmp_path / "cut.svm.gz").write_bytes(packed[:len(packed) // 2])
    with pytest.raises(MlnbError, match=r"cut\.svm\.gz: not a readable svmlight file: corrupt or truncated compressed "
                                       r"data after line \d+"):
        list(SvmlightSource(tmp_path / "cut.svm.gz", n_features=500, n_categories=12).chunks(100))
    source = SvmlightSource(str(corpus / "part-*.svm"))
    (tmp_path / "part-9.svm").write_text("1 1:1\n")
    gone = SvmlightSource(str(tmp_path / "part-9.svm"), n_features=500, n_categories=12)
    partition = gone.partitions()[0]
    (tmp_path / "part-9.svm").unlink()
    with pytest.raises(MlnbError, match=r"part-9\.svm: no such file \(svmlight shard 0\)"):
        list(source.read(partition, 10))


def test_compiled_parser_rounds_every_value_as_scikit_learn_does():
    """Random decimals in every form: bit-identical float32 values (exact fast path, approximate path
    checked against rounding midpoints, deferred values)."""
    rng = random.Random(5)
    tokens = []
    for _ in range(6000):
        kind = rng.randrange(5)
        if kind == 0:
            tokens.append(str(rng.randrange(10 ** rng.randrange(1, 24))))
        elif kind == 1:
            tokens.append(f"{rng.randrange(10 ** rng.randrange(1, 12))}.{rng.randrange(10 ** rng.randrange(1, 18))}")
        elif kind == 2:
            tokens.append(f"{rng.choice('-+')}{rng.randrange(1, 10 ** rng.randrange(1, 20))}e{rng.randrange(-50, 18)}")
        elif kind == 3:
            tokens.append("%.17g" % rng.uniform(-1e4, 1e4))
        else:  # float32 rounding midpoints written with 17 digits
            f = np.float32(rng.uniform(0.5, 2.0))
            tokens.append("%.17g" % ((float(f) + float(np.nextafter(f, np.float32(3)))) / 2))
    expected = np.array([float(t) for t in tokens]).astype(np.float32)
    assert np.isfinite(expected).all()
    block = "".join(f"0 1:{t}\n" for t in tokens).encode()
    parsed = parse_fast(block, 1, None, None)
    assert parsed is not None
    np.testing.assert_array_equal(parsed.data.view(np.int32), expected.view(np.int32))
    reference = parse_sklearn(block, 1, None, None)
    np.testing.assert_array_equal(parsed.data.view(np.int32), reference.data.view(np.int32))


# -- the hash split ---------------------------------------------------------------------------
def test_split_fraction_determinism_and_seeds():
    ids = np.arange(200_000)
    for fraction in (0.1, 0.5, 0.9):
        share = split_mask(ids, 7, fraction).mean()
        assert abs(share - fraction) < 4 * np.sqrt(fraction * (1 - fraction) / ids.size)
    np.testing.assert_array_equal(split_mask(ids, 7, 0.3), split_mask(ids.copy(), 7, 0.3))
    assert (split_mask(ids, 7, 0.3) != split_mask(ids, 8, 0.3)).mean() > 0.3  # seeds are independent
    # ids far apart (shard numbers << 40) hash as well as neighbours
    far = (np.arange(50_000) % 50 << FILE_ID_SHIFT) + np.arange(50_000) // 50
    assert abs(split_mask(far, 1, 0.5).mean() - 0.5) < 4 * 0.5 / np.sqrt(far.size)
    u = hash_unit(ids, 0)
    assert 0 <= u.min() and u.max() < 1
    with pytest.raises(MlnbError, match="test_fraction"):
        split_mask(ids, 0, 1.0)


def test_split_is_independent_of_chunk_size_and_partitioning(corpus):
    source = SvmlightSource(str(corpus / "part-*.svm"))
    train, test = split_source(source, seed=11, test_fraction=0.3)
    reference = np.concatenate([c.ids for c in test.chunks(10**6)])
    for chunk_size in (1, 13, 450):
        assert np.array_equal(np.concatenate([c.ids for c in test.chunks(chunk_size)]), reference)
    by_partition = np.concatenate([c.ids for p in test.partitions()[::-1] for c in test.read(p, 77)])
    assert np.array_equal(np.sort(by_partition), reference)
    train_ids = np.concatenate([c.ids for c in train.chunks(333)])
    assert np.intersect1d(train_ids, reference).size == 0 and train_ids.size + reference.size == 2000
    assert abs(reference.size / 2000 - 0.3) < 4 * np.sqrt(0.3 * 0.7 / 2000)
    X, Y, _ = concatenate(test.chunks(100))
    pairs, _ = read_svmlight(sorted(corpus.glob("part-*.svm")))
    X_all, Y_all = sp.vstack([p[0] for p in pairs], format="csr"), sp.vstack([p[1] for p in pairs], format="csr")
    all_ids = np.concatenate([c.ids for c in source.chunks(2000)])
    rows = np.flatnonzero(split_mask(all_ids, 11, 0.3))
    assert same(X, X_all[rows]) and same(Y, Y_all[rows])


# -- text ---------------------------------------------------------------------------------------
WORDS = ["grain", "wheat", "oil", "crude", "bank", "rate", "stock", "ship", "port", "gold", "the", "and"]


def text_rows(n: int, seed: int, multi: bool):
    rng = random.Random(seed)
    rows = []
    for _ in range(n):
        text = " ".join(rng.choice(WORDS) for _ in range(rng.randrange(3, 12)))
        if rng.random() < 0.1:
            text += ', "quoted", a\nsecond line'
        labels = rng.sample(["grain", "crude", "money", "ship"], rng.randrange(1, 3) if multi else 1)
        rows.append((text, labels))
    return rows


def write_text(path, rows, fmt: str, multi: bool):
    if fmt == "jsonl":
        path.write_text("".join(json.dumps({"text": t, "label": labels if multi else labels[0]}) + "\n"
                                for t, labels in rows), encoding="utf-8")
        return path
    import csv

    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f, delimiter="," if fmt == "csv" else "\t",
                            quoting=csv.QUOTE_MINIMAL if fmt == "csv" else csv.QUOTE_NONE, escapechar="\\")
        writer.writerow(["text", "label"])
        for text, labels in rows:
            if fmt == "tsv":
                text = text.replace("\n", " ").replace(",", " ")
            writer.writerow([text, ",".join(labels)])
    return path


@pytest.mark.parametrize("fmt, vectorizer", [("csv", "count"), ("tsv", "hashing"), ("jsonl", "count")])
def test_text_stream_equals_in_memory_loader(tmp_path, fmt, vectorizer):
    multi = fmt != "tsv"
    rows = text_rows(300, 1, multi)
    train = write_text(tmp_path / f"train.{fmt}", rows, fmt, multi)
    test = write_text(tmp_path / f"test.{fmt}", text_rows(120, 2, multi), fmt, multi)
    if fmt == "csv":  # a record's line is where it begins; quoted texts span two lines
        expected_lines = 2 + np.concatenate([[0], np.cumsum([1 + t.count("\n") for t, _ in rows])[:-1]])
    else:
        expected_lines = np.arange(300) + (2 if fmt == "tsv" else 1)
    options = TextOptions(vectorizer=vectorizer, hash_features=64)
    labels = "multi" if multi else "single"
    data = load_text_dataset(train, test_path=test, labels=labels, text_options=options)
    train_source, test_source = text_sources(train, test, reading=TextReading(labels=labels), text_options=options)
    assert train_source.category_names == data.category_names
    assert train_source.feature_names == data.feature_names
    for chunk_size in (1, 37, 1000):
        X_train, Y_train, ids = concatenate(train_source.chunks(chunk_size))
        X_test, Y_test, _ = concatenate(test_source.chunks(chunk_size))
        assert same(X_train, data.X_train) and same(Y_train, data.Y_train)
        assert same(X_test, data.X_test) and same(Y_test, data.Y_test)
        np.testing.assert_array_equal(ids, np.arange(300))
        lines = np.concatenate([c.row_lines() for c in train_source.chunks(chunk_size)])
        np.testing.assert_array_equal(lines, expected_lines)


def test_text_hash_split_fits_the_vocabulary_on_training_documents_only(tmp_path):
    rows = text_rows(400, 3, True)
    rows[5] = ("zebra unicorn", ["ship"])
    path = write_text(tmp_path / "all.jsonl", rows, "jsonl", True)
    train, test = text_sources(path, reading=TextReading(labels="multi"), seed=4, test_fraction=0.4)
    is_test = split_mask(np.arange(400), 4, 0.4)
    vectorizer = CountVectorizer(dtype=np.float32).fit([t for (t, _), s in zip(rows, is_test) if not s])
    assert train.feature_names == list(vectorizer.get_feature_names_out())
    assert ("zebra" in train.feature_names) == (not is_test[5])
    X_test, _, ids = concatenate(test.chunks(50))
    np.testing.assert_array_equal(ids, np.flatnonzero(is_test))
    lines = np.concatenate([c.row_lines() for c in test.chunks(50)])
    np.testing.assert_array_equal(lines, ids + 1)  # rows chosen before vectorising keep their lines
    assert same(X_test, vectorizer.transform([rows[i][0] for i in ids]).tocsr())


def test_text_bad_rows_name_their_line(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"text": "a b", "label": "x"}\n\n{"text": "c", "label": "y"}\n{"text": 3, "label": "x"}\n')
    with pytest.raises(MlnbError, match=r"bad\.jsonl:4: the text must be a string"):
        TextSource(path)
    path = tmp_path / "bad.csv"
    path.write_text("text,label\na b,x\nc d,y,z\n")
    with pytest.raises(MlnbError, match=r"bad\.csv:3: expected 2 columns, got 3"):
        TextSource(path)
    path = tmp_path / "latin.csv"
    path.write_bytes("text,label\na b,x\nca\xf1a,y\n".encode("latin-1"))
    with pytest.raises(MlnbError, match=r"latin\.csv:3: not valid utf-8 text"):
        TextSource(path)
    assert TextSource(path, TextReading(encoding="latin-1")).category_names == ["x", "y"]


# -- progress -------------------------------------------------------------------------------------
def test_progress_lines_give_rate_and_eta(corpus, capsys, monkeypatch):
    monkeypatch.setattr(progress, "_enabled", True)
    ticks = iter(np.arange(0.0, 1000.0, 2.0))
    source = SvmlightSource(corpus / "all.svm")
    chunks = list(track_chunks(source.chunks(500), total=source.n_documents, description="NB pass",
                               every=3.0, clock=lambda: float(next(ticks))))
    assert sum(c.n_documents for c in chunks) == 2000
    lines = capsys.readouterr().err.strip().splitlines()
    # 2 s a chunk of 500 documents: 250 documents/s; a line every other chunk, and a last one
    assert lines[0] == "NB pass: 1,000 documents of ~2,000, 250 documents/s, ETA 0:00:04"
    assert lines[-1] == "NB pass: 2,000 documents, 200 documents/s, 0:00:10"  # the last tick: 10 s


# -- config ---------------------------------------------------------------------------------------
def test_open_streams_from_config(corpus, tmp_path):
    from mlnb.config import DataConfig
    from mlnb.data.shards import convert
    from mlnb.data.sources import open_streams
    from mlnb.data.sources.shards import ShardsConfig
    from mlnb.data.sources.svmlight import SvmlightConfig

    config = DataConfig(source="svmlight", test_fraction=0.3, streaming=True,
                        svmlight=SvmlightConfig(path=str(corpus / "part-*.svm")))
    train, test = open_streams(config, seed=2)
    test_ids = np.concatenate([c.ids for c in test.chunks(500)])
    assert test_ids.size + sum(c.n_documents for c in train.chunks(500)) == 2000
    convert(SvmlightSource(str(corpus / "part-*.svm")), tmp_path / "shards", shard_documents=600)
    config = DataConfig(source="shards", test_fraction=0.3, shards=ShardsConfig(path=str(tmp_path / "shards")))
    _, shard_test = open_streams(config, seed=2)
    np.testing.assert_array_equal(np.concatenate([c.ids for c in shard_test.chunks(500)]), test_ids)
    with pytest.raises(MlnbError, match="data.source = 'synthetic' cannot be read in chunks"):
        open_streams(DataConfig(source="synthetic"))
    with pytest.raises(MlnbError, match=r"data\.text\.path: required"):
        open_streams(DataConfig(source="text"))


def test_open_source_for_convert(corpus, tmp_path):
    from mlnb.config import DataConfig
    from mlnb.data.sources import open_source
    from mlnb.data.sources.svmlight import SvmlightConfig

    config = DataConfig(source="svmlight", svmlight=SvmlightConfig(path=str(corpus / "part-0.svm"),
                                                                   test_path=str(corpus / "part-2.svm")))
    train, test = open_source(config)
    assert (train.n_documents, test.n_documents) == (700, 500) and train.n_features == test.n_features
    config = DataConfig(source="svmlight", svmlight=SvmlightConfig(path=str(corpus / "all.svm.gz"), n_features=500,
                                                                   n_categories=12))
    source, none = open_source(config)
    assert none is None and source.n_documents is None and sum(c.n_documents for c in source.chunks(999)) == 2000
