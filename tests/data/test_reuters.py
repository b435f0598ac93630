"""Reuters-21578 SGML: the real ModApte counts, the split logic on a tiny corpus, and errors."""

from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from mlnb import MlnbError
from mlnb.data.reuters import load_reuters21578, read_reuters21578, split_modapte

REAL = Path(__file__).resolve().parents[3] / "shared" / "data" / "reuters21578"
DOCTYPE = '<!DOCTYPE lewis SYSTEM "lewis.dtd">\n'


def story(newid, topics=(), lewissplit="TRAIN", topics_attr="YES", title="title", body="body"):
    """One <REUTERS> element laid out like the real files (the tag on its own line)."""
    d = "".join(f"<D>{t}</D>" for t in topics)
    text = f"<TITLE>{title}</TITLE>\n<BODY>{body}\n&#3;</BODY>" if body is not None else title
    return (f'<REUTERS TOPICS="{topics_attr}" LEWISSPLIT="{lewissplit}" CGISPLIT="TRAINING-SET" '
            f'OLDID="{newid + 5000}" NEWID="{newid}">\n<DATE>26-FEB-1987 15:01:01.79</DATE>\n'
            f"<TOPICS>{d}</TOPICS>\n<PLACES></PLACES>\n<TEXT>&#2;\n{text}</TEXT>\n</REUTERS>\n")


def write(folder, name, text):
    folder.mkdir(exist_ok=True)
    (folder / name).write_text(text, encoding="latin-1")
    return folder


@contextmanager
def raises_one_line(pattern):
    """pytest.raises for an MlnbError whose message is one line matching ``pattern``."""
    with pytest.raises(MlnbError, match=pattern) as info:
        yield info
    assert "\n" not in str(info.value)


# -- the real collection -----------------------------------------------------------------------
needs_real = pytest.mark.skipif(not REAL.is_dir(), reason=f"Reuters-21578 not found at {REAL}")


@pytest.fixture(scope="module")
def documents():
    return read_reuters21578(REAL)


@pytest.fixture(scope="module")
def modapte90():
    return load_reuters21578(REAL)


@pytest.mark.slow
@needs_real
def test_reads_every_document_in_order(documents):
    assert len(documents) == 21578
    assert [d.newid for d in documents[:3]] == [1, 2, 3] and documents[-1].newid == 21578
    first = documents[0]
    assert first.title == "BAHIA COCOA REVIEW" and first.topics == ("cocoa",)
    assert first.lewissplit == "TRAIN" and first.topics_attr == "YES"
    assert first.body.startswith("Showers continued throughout the week in\nthe Bahia cocoa zone")
    assert not any("&lt;" in d.body or "\x03" in d.body for d in documents)


@needs_real
def test_modapte_raw_split_counts(documents):
    train, test, topics = split_modapte(documents, 0, 0)
    assert (len(train), len(test)) == (9603, 3299)
    assert len(topics) == 118  # topics occurring in some ModApte document


@pytest.mark.slow
@needs_real
def test_modapte_90(modapte90):
    data = modapte90
    assert data.n_categories == 90 and data.category_names == sorted(data.category_names)
    assert (data.train_index.size, data.test_index.size) == (7770, 3019)
    assert isinstance(data.X, sp.csr_matrix) and data.X.dtype == np.float32
    assert data.X.shape[0] == data.Y.shape[0] == 7770 + 3019
    assert np.all(data.X.data == np.round(data.X.data)) and data.X.data.min() >= 1  # counts
    assert set(np.unique(data.Y.data)) == {1} and np.diff(data.Y.indptr).min() >= 1
    sizes = np.asarray(data.Y.sum(axis=0)).ravel()
    largest = [data.category_names[k] for k in np.argsort(-sizes)[:2]]
    assert largest == ["earn", "acq"]
    assert "cocoa" in data.feature_names and len(data.feature_names) == data.n_features


# -- split and restriction on a tiny two-file corpus -------------------------------------------
@pytest.fixture
def tiny(tmp_path):
    folder = tmp_path / "reuters"
    write(folder, "reut2-000.sgm", DOCTYPE + "".join([
        story(1, ["a", "b"], title="alpha beta", body="&lt;ACME&gt; &amp; co"),
        story(2, ["c"], title="gamma only in training"),
        story(3, [], title="no topics"),
        story(4, ["a"], topics_attr="NO", title="topics no"),
        story(5, ["a"], lewissplit="NOT-USED", title="not used"),
    ]))
    write(folder, "reut2-001.sgm", DOCTYPE + "".join([
        story(6, ["a"], lewissplit="TEST", title="zebra test"),
        story(7, ["d"], lewissplit="TEST", title="delta only in test"),
        story(8, ["b", "a"], lewissplit="TEST", title="brief", body=None),
        story(9, ["b"], lewissplit="TEST", topics_attr="BYPASS"),
        story(10, [], lewissplit="TEST"),
    ]))
    return folder


def test_reads_attributes_entities_and_briefs(tiny):
    documents = read_reuters21578(tiny)
    assert [d.newid for d in documents] == list(range(1, 11))
    assert documents[0].body == "<ACME> & co" and documents[0].text == "alpha beta\n<ACME> & co"
    assert documents[3].topics_attr == "NO" and documents[4].lewissplit == "NOT-USED"
    assert documents[7].topics == ("b", "a") and documents[7].title == "" and documents[7].body == "brief"


def test_modapte_keeps_topics_in_both_sets(tiny):
    data = load_reuters21578(tiny)
    assert data.category_names == ["a", "b"]
    assert (data.train_index.size, data.test_index.size) == (1, 2)  # docs 1 | 6, 8
    np.testing.assert_array_equal(data.Y.toarray(), [[1, 1], [1, 0], [1, 1]])
    assert "alpha" in data.feature_names and "zebra" not in data.feature_names  # train vocabulary
    assert data.name == "reuters21578"


def test_zero_minimum_keeps_every_topic_and_document(tiny):
    train, test, topics = split_modapte(read_reuters21578(tiny), 0, 0)
    assert topics == ["a", "b", "c", "d"]
    assert [d.newid for d in train] == [1, 2, 3] and [d.newid for d in test] == [6, 7, 8, 10]
    data = load_reuters21578(tiny, min_train_per_topic=0, min_test_per_topic=0)
    np.testing.assert_array_equal(data.Y.toarray(), [[1, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 0],
                                                     [1, 0, 0, 0], [0, 0, 0, 1], [1, 1, 0, 0],
                                                     [0, 0, 0, 0]])


def test_one_sided_minimum(tiny):
    train, test, topics = split_modapte(read_reuters21578(tiny), 1, 0)
    assert topics == ["a", "b", "c"]
    assert [d.newid for d in train] == [1, 2] and [d.newid for d in test] == [6, 8]


# -- errors --------------------------------------------------------------------------------------
def test_truncated_element(tmp_path):
    cut = story(2).split("<TEXT>")[0]  # file ends inside document 2, which opens on line 11
    write(tmp_path, "reut2-000.sgm", DOCTYPE + story(1) + cut)
    with raises_one_line(r"reut2-000\.sgm:11: <REUTERS> opened here is not closed$"):
        read_reuters21578(tmp_path)


def test_element_cut_short_by_the_next_one(tmp_path):
    write(tmp_path, "reut2-000.sgm", DOCTYPE + story(1).replace("</REUTERS>\n", "") + story(2))
    with raises_one_line(r"reut2-000\.sgm:2: <REUTERS> opened here is not closed$"):
        read_reuters21578(tmp_path)


@pytest.mark.parametrize("replacement, message", [
    ('OLDID="5001"', r"reut2-000\.sgm:2: expected a NEWID attribute in the <REUTERS> tag$"),
    ('OLDID="5001" NEWID="abc"',
     r"reut2-000\.sgm:2: expected NEWID to be a non-negative integer, got 'abc'$"),
    ('OLDID="5001" NEWID=""', r"reut2-000\.sgm:2: expected NEWID to be a non-negative integer, got ''$"),
])
def test_missing_or_bad_newid(tmp_path, replacement, message):
    write(tmp_path, "reut2-000.sgm", DOCTYPE + story(1).replace('OLDID="5001" NEWID="1"', replacement))
    with raises_one_line(message):
        read_reuters21578(tmp_path)


def test_bad_newid_names_its_own_line(tmp_path):
    bad = story(2).replace('NEWID="2"', 'NEWID="2x"')
    write(tmp_path, "reut2-000.sgm", DOCTYPE + story(1) + bad)
    with raises_one_line(r"reut2-000\.sgm:11: expected NEWID .* got '2x'$"):
        read_reuters21578(tmp_path)


@pytest.mark.parametrize("text", ["", DOCTYPE])
def test_empty_file(tmp_path, text):
    write(tmp_path, "reut2-000.sgm", text)
    with raises_one_line(r"reut2-000\.sgm: no <REUTERS> documents$"):
        read_reuters21578(tmp_path)


def test_missing_folder_or_files(tmp_path):
    with raises_one_line(r"missing: no such folder"):
        read_reuters21578(tmp_path / "missing")
    with raises_one_line(r"no reut2-\*\.sgm files"):
        load_reuters21578(tmp_path)


def test_unknown_split_and_bad_minimum(tiny):
    with raises_one_line(r"unknown Reuters-21578 split 'lewis': expected one of modapte$"):
        load_reuters21578(tiny, split="lewis")
    with raises_one_line(r"min_test_per_topic must be a non-negative integer, got -1$"):
        load_reuters21578(tiny, min_test_per_topic=-1)


def test_nothing_left_after_restriction(tiny):
    with raises_one_line(r"no ModApte topics left with at least 5 training and 1 test"):
        load_reuters21578(tiny, min_train_per_topic=5)
