"""``data.source = "long_tail"``: the seeded long-tailed corpus as a study's data, read whole or generated chunk by
chunk, and the paths of a study at many categories that it exercises: the memory estimate of a streamed study
that spills its scores (and of logistic regression's dense W, refused in one line), the scoring of a chunk in
row blocks, and the ranking metrics' intervals kept when the scores are spilled.

The registered-source contract (the same documents, ids and split whole and streamed at any chunk size) is in
tests/data/test_source_contract.py.
"""

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from mlnb import budget
from mlnb.cli import app
from mlnb.config import DataConfig, load_config
from mlnb.data.long_tail_stream import GENERATOR_BLOCK, LongTailSource, corpus
from mlnb.data.sources import SOURCES, describe_split, load_dataset
from mlnb.data.stream import concatenate
from mlnb.study import tasks
from mlnb.study.fitting import mixing_pieces
from mlnb.errors import MlnbError

CONFIGS = Path(__file__).resolve().parents[2] / "configs"
GIB = 2**30
SMALL = dict(n_documents=900, n_features=400, n_categories=60, words_per_document=15)


def data_config(**keys) -> DataConfig:
    options = {**SMALL, **keys.pop("long_tail", {})}
    return DataConfig(source="long_tail", **keys, long_tail=SOURCES["long_tail"].options(**options))


def test_the_corpus_is_a_function_of_its_seed_and_its_categories_have_a_long_tail():
    first, again = load_dataset(data_config(), seed=1), load_dataset(data_config(), seed=1)
    other = load_dataset(data_config(long_tail=dict(seed=5)), seed=1)
    assert (first.X != again.X).nnz == 0 and (first.Y != again.Y).nnz == 0
    assert (first.X != other.X).nnz > 0
    assert first.category_names[:3] == ["c0", "c1", "c2"] and first.feature_names is None
    positives = np.asarray(first.Y.sum(axis=0)).ravel()
    assert positives[0] > 5 * positives[30:].mean()  # category 0 the commonest, by far (1/(r + 2.7))
    assert first.Y.nnz / first.n_documents == pytest.approx(3, rel=0.15)  # labels_per_document, repeats once


def test_the_study_seed_sets_the_split_and_the_corpus_seed_the_documents():
    config = data_config(test_fraction=0.25)
    a, b = load_dataset(config, seed=1), load_dataset(config, seed=2)
    assert (a.X != b.X).nnz == 0 and not np.array_equal(a.test_index, b.test_index)
    assert describe_split(config, 1) == "a seeded hash of each document's id (seed 1, test_fraction 0.25)"
    assert a.test_index.size == pytest.approx(225, abs=45)


def test_a_partition_read_by_row_ranges_gives_the_same_documents():
    """Generated blocks cut into row ranges (as Dask's parameter mixing cuts them) give the rows read whole."""
    source = LongTailSource(corpus(n_documents=GENERATOR_BLOCK + 700, n_features=300, n_categories=20,
                                   words_per_document=5, labels_per_document=2, word_exponent=1.1,
                                   label_exponent=1.0, topic_share=0.5, topic_size=10, seed=3))
    assert [p.n_documents for p in source.partitions()] == [GENERATOR_BLOCK, 700]
    X, Y, ids = concatenate(source.chunks(4096))
    pieces = mixing_pieces(source.partitions(), 3000, source.reads_row_ranges)
    assert len(pieces) == 5
    X2, Y2, ids2 = concatenate(chunk for piece in pieces for chunk in source.read(piece, 1000))
    assert (X != X2).nnz == 0 and (Y != Y2).nnz == 0
    np.testing.assert_array_equal(ids, np.arange(GENERATOR_BLOCK + 700))
    np.testing.assert_array_equal(ids2, ids)


def test_a_bad_option_is_one_line_naming_its_key(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text('[data]\nsource = "long_tail"\n[data.long_tail]\nn_categories = 0\n')
    with pytest.raises(MlnbError, match="data.long_tail.n_categories") as error:
        load_config(path)
    assert "\n" not in str(error.value)
    path.write_text('task = "multiclass"\n[data]\nsource = "long_tail"\n[models.nb]\nkind = "naive_bayes"\n')
    with pytest.raises(MlnbError, match="'long_tail' is multilabel"):
        load_config(path)


def test_the_100k_study_fits_4_gib_by_its_estimate_and_logistic_regression_is_refused_in_one_line():
    """configs/long_tail_100k.toml: sparse NB, test scores spilled (held: one scoring block or
    engine.max_score_memory), within 4 GiB; with LR, its dense W (~745 GiB) refused naming the key."""
    config = load_config(CONFIGS / "long_tail_100k.toml")
    shape, keys = budget.data_shape(config)
    assert shape.n_categories == 100_000 and shape.n_train + shape.n_test == 120_000
    assert shape.n_test == pytest.approx(20_000, abs=1)
    total = sum(need.bytes for need in budget.estimate(config, shape, keys))
    assert total < 4 * GIB
    budget.check_budget(config, available=4 * GIB)
    in_memory = replace(config, engine=replace(config.engine, scores="memory"))  # 20k × 100k × 2 held: refused
    with pytest.raises(MlnbError, match="test scores"):
        budget.check_budget(in_memory, available=4 * GIB)
    with pytest.raises(MlnbError) as error:
        budget.check_budget(load_config(Path(__file__).parent / "configs" / "long_tail_100k_lr.toml"), available=20 * GIB)
    message = str(error.value)
    assert message.startswith("data.long_tail.n_categories = 100000: the run needs at least 7")
    assert "W (500000 features × 100000 categories × 1 models: lr)" in message and "\n" not in message


def test_a_chunk_is_scored_in_row_blocks_of_at_most_the_scoring_budget(monkeypatch):
    chunk = next(LongTailSource(corpus(n_documents=50, n_features=100, n_categories=10, words_per_document=5,
                                       labels_per_document=2, word_exponent=1.1, label_exponent=1.0,
                                       topic_share=0.5, topic_size=5, seed=0)).chunks(50))
    assert len(list(tasks.scoring_blocks(chunk, 10))) == 1
    monkeypatch.setattr(tasks, "SCORING_BLOCK_BYTES", 12 * 10 * 7)  # 7 documents × 10 categories
    blocks = list(tasks.scoring_blocks(chunk, 10))
    assert [X.shape[0] for X, _ in blocks] == [7] * 7 + [1]
    assert all(X.shape[0] == Y.shape[0] for X, Y in blocks)


STUDY = """seed = 0
[data]
source = "long_tail"
streaming = true
chunk_size = 250
test_fraction = 0.3
[data.long_tail]
n_documents = 1200
n_features = 2000
n_categories = 300
words_per_document = 40
[models.nb_complement]
kind = "sparse_naive_bayes"
event_model = "complement"
[models.nb_multinomial]
kind = "sparse_naive_bayes"
event_model = "multinomial"
[eval]
bootstrap = 30
ranking_k = 3
[report]
plots = false
category = -1
"""


def run(tmp_path, name, *settings) -> dict:
    config = tmp_path / "study.toml"
    config.write_text(STUDY)
    out = tmp_path / name
    arguments = [f"--set={setting}" for setting in settings]
    result = CliRunner().invoke(app, ["run", str(config), "--out", str(out), "--quiet", *arguments])
    assert result.exit_code == 0, result.output
    (summary,) = out.rglob("summary.json")
    return json.loads(summary.read_text()) | {"folder": summary.parent}


@pytest.mark.slow
def test_a_streamed_study_with_spilled_scores_keeps_the_ranking_metrics_and_their_intervals(tmp_path, monkeypatch):
    """Scores spilled to disk and scored in row blocks of 7 documents give the per-category metrics and the
    ranking metrics of scores held in memory, and the ranking metrics keep their bootstrap intervals."""
    held = run(tmp_path, "memory")
    monkeypatch.setattr(tasks, "SCORING_BLOCK_BYTES", 12 * 300 * 7)
    spilled = run(tmp_path, "disk", 'engine.scores="disk"')
    assert held["data"]["streaming"]["scores"] == "in memory"
    assert spilled["data"]["streaming"]["scores"] == "spilled to disk"
    assert "ranking metrics at k are kept" in spilled["data"]["streaming"]["not_computed"]
    for name in ("nb_complement", "nb_multinomial"):
        a, b = held["models"][name], spilled["models"][name]
        assert a["ranking"] == pytest.approx(b["ranking"], abs=1e-12)
        assert set(b["ranking_intervals"]) == set(b["ranking"]) and b["ranking_intervals"]
        low, high = b["ranking_intervals"]["P@1"]
        assert low <= b["ranking"]["P@1"] <= high and low < high
        assert a["macro_auc"] == pytest.approx(b["macro_auc"], abs=1e-9)
    metrics = [pd.read_csv(summary["folder"] / "metrics.csv") for summary in (held, spilled)]
    columns = ["category", "auc", "tp", "fp", "fn", "tn"]
    pd.testing.assert_frame_equal(metrics[0][columns], metrics[1][columns], check_exact=False, atol=1e-9)
