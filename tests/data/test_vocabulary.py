"""Vocabularies counted within a memory budget (DuckDB beyond it), min_df streamed, hashing's collisions stated."""

import warnings
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.feature_extraction.text import CountVectorizer

from mlnb.errors import MlnbError, MlnbWarning
from mlnb.data.stream import text_sources
from mlnb.data.text import TextOptions, TextReading, load_text_dataset, vectorize_texts
from mlnb.data.vocabulary import Collisions, DocumentFrequencies, hashing_summary
from mlnb.features import FeatureTransform

SMS = Path(__file__).resolve().parents[3] / "shared" / "data" / "smsspam" / "SMSSpamCollection"
TINY = 4_000  # bytes: a few dozen terms, so that any corpus here spills


def sms_texts() -> list[str]:
    if not SMS.is_file():
        pytest.skip(f"real data not found at {SMS} (../shared/data is beside the project only in the development "
                    "checkout)")
    return [line.split("\t", 1)[1] for line in SMS.read_text(encoding="utf-8").splitlines()]


def same_matrix(A, B) -> bool:
    A, B = sp.csr_matrix(A), sp.csr_matrix(B)
    A.sort_indices(), B.sort_indices()
    return A.shape == B.shape and A.dtype == B.dtype and np.array_equal(A.indptr, B.indptr) and \
        np.array_equal(A.indices, B.indices) and np.array_equal(A.data, B.data)


def out_of_core(train, test, options):
    """vectorize_texts with the terms forced out of core (the kept vocabulary's warning expected)."""
    with pytest.warns(MlnbWarning, match="features.max_vocabulary_memory"):
        done = vectorize_texts(train, test, options)
    assert "out of core in DuckDB over" in done.text_features["counted"]
    return done


# -- the counts: in memory and out of core --------------------------------------------------------------------
DOCUMENTS = [["b", "a", "b"], ["c", "a"], ["d"], ["a", "e", "c"], ["e", "b"], ["f"]]  # df: a 3, b 2, c 2, e 2


@pytest.mark.parametrize("min_df, max_features, kept", [
    (0, 0, ["a", "b", "c", "d", "e", "f"]),
    (2, 0, ["a", "b", "c", "e"]),
    (0, 2, ["a", "b"]),  # b, c and e tie at df 2: the first in sorted order
    (2, 3, ["a", "b", "c"]),
    (4, 0, []),
])
def test_the_kept_terms_are_the_same_in_memory_and_out_of_core(tmp_path, min_df, max_features, kept):
    with DocumentFrequencies(budget_bytes=2**20) as memory, DocumentFrequencies(1, folder=tmp_path) as spilled:
        for document in DOCUMENTS:
            memory.add([document])
            spilled.add([document])
        assert not memory.out_of_core and spilled.spills == len(DOCUMENTS)
        assert memory.vocabulary(min_df, max_features) == spilled.vocabulary(min_df, max_features) == kept
        assert memory.distinct_terms == spilled.distinct_terms == 6
        assert list(tmp_path.iterdir())  # the database's folder, while it counts
    assert not list(tmp_path.iterdir())  # removed with it


def test_max_features_ties_are_broken_as_mlnb_features_breaks_them():
    texts = [" ".join(document) for document in DOCUMENTS] + ["zz yy xx", "zz yy", "zz"]
    options = TextOptions(min_df=2, max_features=4, vocabulary_memory=1)
    counts = CountVectorizer(token_pattern=r"\w+", dtype=np.float32).fit(texts)
    X = counts.transform(texts)
    columns = FeatureTransform("none", 2, 4).fit(X)
    expected = columns.feature_names(list(counts.get_feature_names_out()))
    with DocumentFrequencies(options.vocabulary_memory) as spilled:
        spilled.add(text.split() for text in texts)
        assert spilled.vocabulary(2, 4) == expected == ["a", "b", "c", "zz"]  # c before e and yy at df 2


def test_a_failed_count_leaves_no_database(tmp_path):
    with pytest.raises(ZeroDivisionError):
        with DocumentFrequencies(1, folder=tmp_path) as spilled:
            spilled.add(["x", "y"] for _ in range(3))
            assert spilled.out_of_core
            raise ZeroDivisionError
    assert not list(tmp_path.iterdir())


# -- against scikit-learn on a real corpus ----------------------------------------------------------------
@pytest.mark.parametrize("ngram_range, min_df", [((1, 1), 1), ((1, 2), 2), ((2, 3), 3)])
def test_out_of_core_equals_count_vectorizer_on_sms_spam(ngram_range, min_df):
    texts = sms_texts()
    train, test = texts[:3000], texts[3000:]
    done = out_of_core(train, test, TextOptions(ngram_range=ngram_range, min_df=min_df, vocabulary_memory=TINY))
    reference = CountVectorizer(ngram_range=ngram_range, min_df=min_df, dtype=np.float32)
    X_train = reference.fit_transform(train)
    assert done.feature_names == list(reference.get_feature_names_out())
    assert same_matrix(done.X_train, X_train) and same_matrix(done.X_test, reference.transform(test))


@pytest.mark.slow
def test_out_of_core_max_features_equals_count_vectorizer_by_document_frequency():
    """CountVectorizer ranks max_features by the corpus's term counts (binary=True: by document frequency, as
    features.max_features does), its ties in no stated order: compared where the cut falls between two
    frequencies, and against mlnb.features everywhere."""
    train = sms_texts()[:3000]
    reference = CountVectorizer(ngram_range=(1, 2), binary=True).fit(train)
    df = np.sort(np.asarray(reference.transform(train).sum(axis=0)).ravel())[::-1]
    cut = next(k for k in range(500, df.size) if df[k - 1] > df[k])  # no tie across the cut
    for max_features in (cut, 500):
        done = out_of_core(train, train[:5], TextOptions(ngram_range=(1, 2), min_df=2, max_features=max_features,
                                                          vocabulary_memory=TINY))
        counts = CountVectorizer(ngram_range=(1, 2), dtype=np.float32)
        X = counts.fit_transform(train)
        columns = FeatureTransform("none", 2, max_features).fit(X)
        assert done.feature_names == columns.feature_names(list(counts.get_feature_names_out()))
        assert same_matrix(done.X_train, columns.transform(X))
        if max_features == cut:
            by_df = CountVectorizer(ngram_range=(1, 2), binary=True, min_df=2, max_features=cut).fit(train)
            assert done.feature_names == list(by_df.get_feature_names_out())


def test_read_whole_without_pruning_keeps_the_in_memory_vocabulary():
    """A vocabulary counted in batches but kept in memory is not pruned: mlnb.features prunes later."""
    texts = sms_texts()[:2000]
    in_memory = vectorize_texts(texts[:1500], texts[1500:], TextOptions(min_df=3))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # within the budget: no warning
        batched = vectorize_texts(texts[:1500], texts[1500:], TextOptions(min_df=3, vocabulary_memory=600_000))
    assert batched.text_features["counted"] == in_memory.text_features["counted"] == "in memory"
    assert batched.feature_names == in_memory.feature_names and same_matrix(batched.X_train, in_memory.X_train)
    assert in_memory.text_features["vocabulary"] == in_memory.text_features["distinct_terms"] > 3000


# -- min_df on a streamed text source ---------------------------------------------------------------------
def _write_sms_like(path: Path, n: int = 400) -> Path:
    rng = np.random.default_rng(11)
    words = [f"w{k}" for k in range(300)]
    weights = 1.0 / np.arange(1, 301)
    lines = ["text\tlabel"]
    for i in range(n):
        text = " ".join(rng.choice(words, size=rng.integers(3, 15), p=weights / weights.sum()))
        lines.append(f"{text}\t{'spam' if i % 4 == 0 else 'ham'}")
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("budget", [2**30, TINY])
def test_min_df_on_a_streamed_text_source_equals_in_memory(tmp_path, budget):
    path = _write_sms_like(tmp_path / "docs.tsv")
    options = TextOptions(ngram_range=(1, 2), min_df=3, max_features=150, vocabulary_memory=budget)
    whole = load_text_dataset(path, negative_labels=["ham"], seed=2, text_options=TextOptions(ngram_range=(1, 2)))
    columns = FeatureTransform("none", 3, 150).fit(whole.X_train)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MlnbWarning)  # the tiny budget's kept vocabulary
        train, test = text_sources(path, reading=TextReading(negative_labels=("ham",)), text_options=options, seed=2)
    assert train.feature_names == columns.feature_names(whole.feature_names) and train.n_features == 150
    assert train.text_features["vocabulary"] == 150 and train.text_features["min_df"] == 3
    assert train.text_features["distinct_terms"] == whole.n_features
    for part, index in ((train, whole.train_index), (test, whole.test_index)):
        streamed = sp.vstack([chunk.X for chunk in part.chunks(64)], format="csr")
        assert same_matrix(streamed, columns.transform(whole.X[index]))


def test_min_df_that_removes_everything_is_one_line(tmp_path):
    path = _write_sms_like(tmp_path / "docs.tsv", n=20)
    with pytest.raises(MlnbError, match=r"features\.min_df = 1000 removes every feature: no words in at least 1000"):
        text_sources(path, reading=TextReading(negative_labels=("ham",)), text_options=TextOptions(min_df=1000))


# -- hashing's collisions -------------------------------------------------------------------------------------
def test_collisions_on_a_hand_example():
    terms = ["grain", "wheat", "oil", "crude", "corn"]
    with DocumentFrequencies(2**20) as counted:
        counted.add([terms[:3], terms[2:], ["grain"]])
        assert counted.collisions(1) == Collisions(distinct_terms=5, buckets=1, buckets_used=1, terms_sharing=5)
        from sklearn.feature_extraction.text import HashingVectorizer

        buckets = [int(HashingVectorizer(n_features=4, alternate_sign=False, norm=None).transform([t]).indices[0])
                   for t in terms]
        per_bucket = np.bincount(buckets, minlength=4)
        expected = Collisions(5, 4, int(np.count_nonzero(per_bucket)), int(per_bucket[per_bucket > 1].sum()))
        assert counted.collisions(4) == expected
    summary = hashing_summary((1, 1), Collisions(distinct_terms=8, buckets=4, buckets_used=3, terms_sharing=6), 0)
    assert summary["share_sharing_a_bucket"] == 0.75
    assert summary["sentence"] == ("Hashing: 8 distinct words of the training texts (counted in memory) into 4 "
                                   "buckets (3 used); 75.0 % of the terms share a bucket with another term.")
    assert "2 spills" in hashing_summary((1, 2), Collisions(3, 4, 3, 0), 2)["sentence"]


def test_collisions_out_of_core_equal_in_memory():
    texts = [" ".join(f"t{(7 * i + j) % 97}" for j in range(i % 9 + 1)) for i in range(300)]
    options = dict(vectorizer="hashing", ngram_range=(1, 2), hash_features=64)
    memory = vectorize_texts(texts, texts[:3], TextOptions(**options)).text_features
    spilled = vectorize_texts(texts, texts[:3], TextOptions(**options, vocabulary_memory=TINY)).text_features
    assert spilled["counted"].startswith("out of core") and memory["counted"] == "in memory"
    numbers = ("distinct_terms", "buckets", "buckets_used", "terms_sharing_a_bucket", "share_sharing_a_bucket")
    assert [memory[k] for k in numbers] == [spilled[k] for k in numbers]
    assert memory["distinct_terms"] == len(CountVectorizer(ngram_range=(1, 2)).fit(texts).vocabulary_)


@pytest.mark.slow
def test_a_streamed_text_study_with_min_df_is_the_in_memory_study(tmp_path):
    from mlnb.config import load_config
    from mlnb.study import run_study

    path = _write_sms_like(tmp_path / "docs.tsv", n=600)
    config = tmp_path / "text.toml"
    config.write_text(f"""
[data]
source = "text"
chunk_size = 100
[data.text]
path = "{path}"
negative_labels = ["ham"]
[features]
min_df = 3
max_features = 200
ngram_range = [1, 2]
[models.nb]
kind = "naive_bayes"
[eval]
bootstrap = 0
[report]
plots = false
""")
    memory = run_study(load_config(config))
    streamed = run_study(load_config(config, ["data.streaming=true"]))
    assert memory.data["n_features_used"] == streamed.data["n_features_used"] == 200
    assert streamed.data["text_features"]["vocabulary"] == 200
    assert memory.data["text_features"]["vocabulary"] == memory.data["text_features"]["distinct_terms"]  # pruned later
    here, there = memory.models[0].evaluation, streamed.models[0].evaluation
    for column in ("auc", "average_precision"):
        np.testing.assert_allclose(there.per_category[column].to_numpy(dtype=float),
                                   here.per_category[column].to_numpy(dtype=float), rtol=1e-9, atol=1e-12)
