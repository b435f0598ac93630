"""features.ngram_range: word n-grams for every text source, counted and hashed, read whole and streamed."""

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from mlnb import MlnbError
from mlnb.cli import app
from mlnb.data.stream import text_sources
from mlnb.data.text import TextOptions, load_text_dataset, vectorize_texts
from mlnb.report.escape import plain

TEXTS = ["The cat sat", "the cat", "a dog sat on the cat"]  # 'a' is no token (two word characters at least)


def rows(X) -> list:
    return X.toarray().astype(int).tolist()


def test_word_bigrams_on_a_hand_example():
    done = vectorize_texts(TEXTS[:2], TEXTS[2:], TextOptions(ngram_range=(1, 2)))
    assert done.feature_names == ["cat", "cat sat", "sat", "the", "the cat"]
    assert rows(done.X_train) == [[1, 1, 1, 1, 1], [1, 0, 0, 1, 1]]
    assert rows(done.X_test) == [[1, 0, 1, 1, 1]]  # 'dog sat', 'sat on', 'on the' are not in training
    only_pairs = vectorize_texts(TEXTS[:2], TEXTS[2:], TextOptions(ngram_range=(2, 2)))
    assert only_pairs.feature_names == ["cat sat", "the cat"] and rows(only_pairs.X_train) == [[1, 1], [0, 1]]
    assert only_pairs.text_features["sentence"] == ("Vocabulary: 2 distinct word 2-grams of the training texts, "
                                                    "counted in memory.")


def test_single_words_are_the_default_tokenisation():
    default = vectorize_texts(TEXTS[:2], TEXTS[2:])
    explicit = vectorize_texts(TEXTS[:2], TEXTS[2:], TextOptions(ngram_range=(1, 1)))
    assert default.feature_names == explicit.feature_names == ["cat", "sat", "the"]
    assert rows(default.X_train) == rows(explicit.X_train) == [[1, 1, 1], [1, 0, 1]]


def test_hashed_bigrams_land_where_scikit_learn_hashes_them():
    from sklearn.feature_extraction import FeatureHasher

    done = vectorize_texts(TEXTS[:2], TEXTS[2:], TextOptions(vectorizer="hashing", hash_features=2**20,
                                                             ngram_range=(1, 2)))
    hasher = FeatureHasher(n_features=2**20, input_type="string", alternate_sign=False)
    terms = ["the", "cat", "sat", "the cat", "cat sat"]
    columns = hasher.transform([[term] for term in terms]).indices
    assert sorted(done.X_train[0].indices.tolist()) == sorted(columns.tolist())
    assert done.text_features["distinct_terms"] == 5


@pytest.mark.parametrize("bad", [(2, 1), (0, 1), (1, 6), (1,), (1.0, 2), "1,2"])
def test_a_bad_range_is_one_line(bad):
    with pytest.raises(MlnbError, match=r"features\.ngram_range: expected \[min_n, max_n\], two integers with "
                                        r"1 <= min_n <= max_n <= 5"):
        TextOptions(ngram_range=bad)


def _write_corpus(path, n=60):
    words = ["grain", "wheat", "oil", "crude", "corn", "price", "rise", "fall", "export", "ship"]
    rng = np.random.default_rng(3)
    lines = ["text,label"]
    for i in range(n):
        text = " ".join(words[k] for k in rng.integers(0, len(words), rng.integers(2, 9)))
        lines.append(f"{text},{'grain' if i % 3 else 'oil'}")
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("vectorizer", ["count", "hashing"])
def test_streamed_ngrams_are_the_in_memory_ones(tmp_path, vectorizer):
    path = _write_corpus(tmp_path / "docs.csv")
    options = TextOptions(vectorizer=vectorizer, ngram_range=(1, 3), hash_features=2**12)
    whole = load_text_dataset(path, text_options=options, seed=5)
    train, test = text_sources(path, text_options=options, seed=5)
    assert train.feature_names == whole.feature_names and train.n_features == whole.n_features
    assert train.text_features == whole.text_features == whole.describe()["text_features"]
    for part, index in ((train, whole.train_index), (test, whole.test_index)):
        chunks = list(part.chunks(7))
        streamed = np.vstack([chunk.X.toarray() for chunk in chunks])
        ids = np.concatenate([chunk.ids for chunk in chunks])
        np.testing.assert_array_equal(ids, whole.ids[index])
        np.testing.assert_array_equal(streamed, whole.X[index].toarray())


# -- the config keys, through the command line -------------------------------------------------------------
def run(*args):
    return CliRunner().invoke(app, ["run", "configs/quickstart.toml", *map(str, args)])


@pytest.mark.parametrize("value, message", [
    ("[2, 1]", "features.ngram_range: expected [min_n, max_n], two integers with 1 <= min_n <= max_n <= 5"),
    ("[1, 2, 3]", "features.ngram_range: expected [min_n, max_n]"),
    ("[0, 1]", "features.ngram_range[0]: expected a value >= 1, got 0"),
    ("[1, 6]", "features.ngram_range[1]: expected a value <= 5, got 6"),
    ("[1, 1.5]", "features.ngram_range[1]: expected an integer"),
    ("2", "features.ngram_range: expected a list of integers"),
])
def test_bad_ngram_range_is_one_line_and_exit_2(tmp_path, value, message):
    result = run("--set", f"features.ngram_range={value}", "--out", tmp_path)
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], result.output


def test_bad_vocabulary_memory_is_one_line_and_exit_2(tmp_path):
    result = run("--set", "features.max_vocabulary_memory=0", "--out", tmp_path)
    assert result.exit_code == 2 and "features.max_vocabulary_memory: expected a value >= 1, got 0" in result.output


def _text_config(path, *sets):
    return ["--set", "data.source=text", "--set", f"data.text.path={path}", "--set", "data.streaming=true",
            "--set", "models.lr.npasses=1", "--set", "report.category=0", "--quiet", *sets]


def test_streamed_min_df_is_refused_only_where_no_vocabulary_pass_applies_it(tmp_path):
    path = _write_corpus(tmp_path / "docs.csv")
    hashed = run(*_text_config(path, "--set", "features.min_df=2", "--set", "features.vectorizer=hashing"),
                 "--out", tmp_path / "out")
    assert hashed.exit_code == 2 and "the sources text, files with vectorizer = 'count' take min_df" in hashed.output
    svmlight = run("--set", "data.streaming=true", "--set", "data.source=svmlight", "--set",
                   f"data.svmlight.path={path}", "--set", "features.max_features=5", "--out", tmp_path / "out")
    assert svmlight.exit_code == 2 and "min_df / max_features need a pass" in svmlight.output
    from mlnb.config import load_config

    config = load_config("configs/quickstart.toml", ["data.source=text", f"data.text.path={path}",
                                                     "data.streaming=true", "features.min_df=2",
                                                     "features.ngram_range=[1, 2]"])
    assert config.features.min_df == 2 and config.features.ngram_range == [1, 2]


@pytest.mark.slow
def test_a_run_states_the_hashing_collisions_in_report_and_summary(tmp_path):
    path = _write_corpus(tmp_path / "docs.csv", n=200)
    result = run(*_text_config(path, "--set", "features.vectorizer=hashing", "--set", "features.hash_features=1",
                               "--set", "features.ngram_range=[1, 2]"), "--out", tmp_path / "out")
    assert result.exit_code == 0, result.output
    (folder,) = (tmp_path / "out" / "quickstart").iterdir()
    features = json.loads((folder / "summary.json").read_text())["data"]["text_features"]
    # the training part's words and pairs of words (at most 10 + 10 · 10), all in the one bucket
    distinct = features["distinct_terms"]
    assert 100 < distinct <= 110
    assert features == {"vectorizer": "hashing", "ngram_range": [1, 2], "distinct_terms": distinct, "buckets": 1,
                        "buckets_used": 1, "terms_sharing_a_bucket": distinct, "share_sharing_a_bucket": 1.0,
                        "counted": "in memory", "sentence": features["sentence"]}
    sentence = (f"Hashing: {distinct} distinct word 1–2-grams of the training texts (counted in memory) into 1 "
                "bucket (1 used); 100.0 % of the terms share a bucket with another term.")
    assert features["sentence"] == sentence and plain(sentence) in (folder / "report.md").read_text()
