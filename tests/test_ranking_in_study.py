"""The ranking metrics at k in every multilabel study: eval.ranking_k, summary.json, report.md, on every engine."""

import json
import re
import tempfile

import numpy as np
import pytest
import scipy.sparse as sp

from mlnb.config import load_config
from mlnb.data.synthetic import make_rcv1_like
from mlnb.errors import MlnbError
from mlnb.metrics import at_k_study
from mlnb.metrics.at_k import propensities, ranking_metrics, top_k_of_scores
from mlnb.metrics.at_k_study import (headline_metrics, propensities_from_counts, ranking_cutoffs, spill_labels,
                                     top_k_of_spill)
from mlnb.metrics.streaming import ScoreSpill
from mlnb.report.escape import plain
from mlnb.report.markdown import _ranking_sentence
from mlnb.report.results import write_results
from mlnb.study import run_study

# enough test scores (documents × categories × models × 12 bytes) to pass engine.max_score_memory = 1 MiB
N_DOCUMENTS, N_FEATURES, N_CATEGORIES = 4000, 600, 60
ENGINES = {"memory": ["data.streaming=false"], "streamed": ["data.streaming=true"],
           "dask": ["data.streaming=true", 'engine.kind="dask"', "engine.n_workers=2"]}


def engine_settings(engine: str, request) -> list[str]:
    """``ENGINES[engine]``; on Dask, the session's LocalCluster of 2 workers (``dask_address`` in tests/conftest.py)
    rather than a cluster of the study's own: the same tasks on the same 2 workers."""
    if engine != "dask":
        return ENGINES[engine]
    return ENGINES[engine] + [f'engine.address="{request.getfixturevalue("dask_address")}"']


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, svmlight_shards):
    """Three svmlight shards of a synthetic multilabel corpus, and a config of two count-based models (the same
    fit, bit for bit, in memory, streamed and on Dask)."""
    folder = tmp_path_factory.mktemp("ranking")
    data = make_rcv1_like(n_documents=N_DOCUMENTS, n_features=N_FEATURES, n_categories=N_CATEGORIES, seed=11)
    svmlight_shards(folder, data, 3)
    config = folder / "study.toml"
    config.write_text(f"""
[data]
source = "svmlight"
chunk_size = 400
shuffle_buffer = 2
[data.svmlight]
path = "{folder}/part-*.svm"
n_features = {N_FEATURES}
n_categories = {N_CATEGORIES}
[models.nb]
kind = "naive_bayes"
[models.cnb]
kind = "naive_bayes"
event_model = "complement"
[eval]
bootstrap = 20
decision = "fixed"
[report]
category = 1
plots = false
""")
    return config


@pytest.fixture(scope="module")
def memory_result(corpus):
    return run_study(load_config(corpus, ENGINES["memory"]))


def _ranking_numbers(result) -> dict:
    return {run.name: run.ranking for run in result.models}


def test_a_multilabel_study_measures_every_model_at_k(memory_result):
    """Every model has P@1, P@3, P@5, R@5, nDCG@5, PSP@5, PSnDCG@5 and coverage@5 with intervals around them,
    equal to ranking_metrics of its own scores, and the best by P@1 is compared with the other."""
    result = memory_result
    assert result.ranking_ks == (1, 3, 5) and result.ranking_propensity_scored
    prop = propensities_from_counts(result.train_positives, result.data["n_train"])
    for run in result.models:
        expected = ranking_metrics(result.Y_test, top_k_of_scores(run.scores, 5)[0], ks=(1, 3, 5), propensity=prop)
        assert run.ranking["metrics"] == expected.means
        for metric in headline_metrics(5):
            low, high = run.ranking["intervals"][metric]
            assert low <= run.ranking["metrics"][metric] <= high, (run.name, metric)
    (comparison,) = result.ranking_comparisons
    p_at_1 = {run.name: run.ranking["metrics"]["P@1"] for run in result.models}
    assert comparison["a"] == max(p_at_1, key=p_at_1.get) and comparison["by"] == "P@1"
    difference = comparison["differences"]["P@1"]
    assert difference["difference"] == pytest.approx(p_at_1[comparison["a"]] - p_at_1[comparison["b"]], abs=1e-12)
    assert 0 < difference["p_value"] <= 1 and difference["low"] <= difference["high"]


def test_summary_json_and_report_carry_the_ranking(memory_result, tmp_path):
    folder = write_results(memory_result, tmp_path)
    summary = json.loads((folder / "summary.json").read_text())
    for run in memory_result.models:
        ranking = summary["models"][run.name]["ranking"]
        assert {"P@1", "P@3", "P@5", "R@5", "nDCG@5", "PSP@5", "PSnDCG@5", "coverage@5"} <= set(ranking)
        assert ranking["P@1"] == run.ranking["metrics"]["P@1"]
        assert len(summary["models"][run.name]["ranking_intervals"]["nDCG@5"]) == 2
    settings = summary["ranking_at_k"]
    assert settings["ks"] == [1, 3, 5] and settings["propensities"] == {"A": 0.55, "B": 1.5}
    assert settings["comparisons"][0]["differences"]["P@1"]["p_value"] is not None
    report = (folder / "report.md").read_text()
    assert "## Ranking at k (k = 5)" in report
    row = next(line for line in report.splitlines() if line.startswith(f"| {plain(memory_result.models[0].label)} |"))
    assert f"{memory_result.models[0].ranking['metrics']['P@1']:.4f}" in row
    comparison = memory_result.ranking_comparisons[0]
    assert f"- {comparison['a']} against {comparison['b']}: " in report
    assert _ranking_sentence(comparison, "P@1") in report
    assert "Ranking at k" in (folder / "report.html").read_text()  # the page renders report.md's sections


ON_DASK = pytest.param("dask", marks=pytest.mark.slow)  # a LocalCluster: seconds to start


@pytest.mark.parametrize("engine", ["streamed", ON_DASK])
def test_the_same_ranking_numbers_streamed_and_on_dask(corpus, memory_result, engine, request):
    """The same documents and the same count-based fits: the same rankings, metrics, intervals and
    comparisons as in memory, to the bit."""
    result = run_study(load_config(corpus, engine_settings(engine, request)))
    assert result.data["streaming"]["scores"] == "in memory"
    assert _ranking_numbers(result) == _ranking_numbers(memory_result)
    assert result.ranking_comparisons == memory_result.ranking_comparisons


@pytest.mark.parametrize("engine", ["streamed", ON_DASK])
def test_spilled_scores_give_the_in_memory_ranking(corpus, engine, monkeypatch, request):
    """engine.max_score_memory = 1 MiB: the test scores go to disk and the rankings are read from the spill,
    a block of categories at a time (7 here, so that the k best are merged across blocks); the numbers equal
    those of the same study with the scores in memory."""
    monkeypatch.setattr(at_k_study, "SPILL_BLOCK_BYTES", 7 * N_DOCUMENTS)  # a few of the 60 categories a block
    settings = engine_settings(engine, request) + ["eval.bootstrap=0"]
    spilled = run_study(load_config(corpus, settings + ["engine.max_score_memory=1"]))
    assert spilled.data["streaming"]["scores"] == "spilled to disk"
    held = run_study(load_config(corpus, ENGINES["memory"] + ["eval.bootstrap=0"]))
    assert _ranking_numbers(spilled) == _ranking_numbers(held)
    assert spilled.models[0].ranking["intervals"] == {} and spilled.ranking_comparisons == []


def test_ranking_k_zero_and_multiclass_measure_nothing(tmp_path):
    off = run_study(load_config(None, ["data.synthetic.n_documents=400", "data.synthetic.n_features=400",
                                       "data.synthetic.n_categories=5", "eval.bootstrap=0", "eval.ranking_k=0",
                                       "report.plots=false", "models.lr.npasses=1"]))
    assert off.ranking_ks == () and all(run.ranking == {} for run in off.models)
    folder = write_results(off, tmp_path)
    summary = json.loads((folder / "summary.json").read_text())
    assert "ranking_at_k" not in summary and all("ranking" not in m for m in summary["models"].values())
    assert "Ranking at k" not in (folder / "report.md").read_text()
    iris = run_study(load_config("configs/iris.toml", ["eval.bootstrap=0", "report.plots=false"]))
    assert iris.ranking_ks == ()


def test_ranking_k_is_checked_in_one_line():
    with pytest.raises(MlnbError, match=r"eval\.ranking_k") as error:
        load_config(None, ["eval.ranking_k=-1"])
    assert "\n" not in str(error.value)
    with pytest.raises(MlnbError, match=r"eval\.propensity_b"):
        load_config(None, ["eval.propensity_b=0"])


def test_cutoffs_and_headline_metrics():
    assert ranking_cutoffs(0) == () and ranking_cutoffs(1) == (1,) and ranking_cutoffs(2) == (1, 2)
    assert ranking_cutoffs(3) == (1, 3) and ranking_cutoffs(5) == (1, 3, 5) and ranking_cutoffs(10) == (1, 3, 10)
    assert headline_metrics(5) == ["P@1", "P@3", "P@5", "R@5", "nDCG@5", "PSP@5", "PSnDCG@5", "coverage@5"]
    assert headline_metrics(2, propensity_scored=False) == ["P@1", "P@2", "R@2", "nDCG@2", "coverage@2"]


def test_propensities_from_counts_are_those_of_the_label_matrix():
    rng = np.random.default_rng(4)
    Y = sp.csr_matrix((rng.random((50, 9)) < np.linspace(0, 0.6, 9)).astype(np.int8))
    counts = np.asarray(Y.sum(axis=0)).ravel()
    for A, B in ((0.55, 1.5), (0.6, 2.6)):
        np.testing.assert_allclose(propensities_from_counts(counts, 50, A, B), propensities(Y, A, B), rtol=1e-15)
    assert propensities_from_counts(counts, 2) is None


@pytest.mark.parametrize("K, k, block_bytes", [(7, 3, 8), (7, 10, 160), (20, 5, 480), (50, 5, 1 << 20),
                                               (13, 13, 4)])
def test_top_k_of_a_spill_is_top_k_of_its_scores(K, k, block_bytes):
    """Read a block of categories at a time, the k best of each document equal top_k_of_scores of the whole
    matrix: equal scores lower category first, ±inf scores, padding when k > K, any block size."""
    rng = np.random.default_rng(K * 100 + k)
    S = rng.integers(-3, 3, size=(40, K)).astype(np.float32)  # many ties
    S[0, :] = -np.inf
    S[1, K // 2] = np.inf
    S[2, :] = 1.0
    Y = (rng.random((40, K)) < 0.2).astype(np.int8)
    with tempfile.TemporaryDirectory() as folder:
        spill = ScoreSpill(f"{folder}/s", K)
        spill.append(Y[:15], S[:15])
        spill.append(Y[15:], S[15:])
        spill.close()
        categories, values = top_k_of_spill(spill, k, block_bytes=block_bytes)
        expected_categories, expected_values = top_k_of_scores(S, k)
        np.testing.assert_array_equal(categories, expected_categories)
        np.testing.assert_array_equal(values, expected_values)
        assert (spill_labels(spill) != sp.csr_matrix(Y)).nnz == 0


def _comparison(difference, low, high, p=0.01):
    return {"a": "x", "b": "y", "level": 0.95, "by": "P@1",
            "differences": {"P@1": {"difference": difference, "low": low, "high": high, "p_value": p}}}


def test_each_comparison_sentence_follows_its_numbers():
    higher = _ranking_sentence(_comparison(0.04, 0.02, 0.06, 0.001), "P@1")
    assert higher.startswith("x's P@1 is 0.0400 higher than y's") and "+0.0200 to +0.0600" in higher
    assert "p = 0.001" in higher
    lower = _ranking_sentence(_comparison(-0.03, -0.05, -0.01), "P@1")
    assert lower.startswith("x's P@1 is 0.0300 lower than y's")
    for interval in ((-0.01, 0.02), (0.0, 0.02)):
        same = _ranking_sentence(_comparison(0.005, *interval), "P@1")
        assert same.startswith("x and y are not distinguishable by P@1") and "higher" not in same
    # an interval on one side of 0 with an estimate on the other says nothing either way
    assert "not distinguishable" in _ranking_sentence(_comparison(-0.001, 0.001, 0.01), "P@1")
    assert "cannot be compared" in _ranking_sentence(_comparison(float("nan"), float("nan"), float("nan")), "P@1")
    assert re.search(r"95% paired bootstrap interval", higher)
