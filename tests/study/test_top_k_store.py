"""engine.scores = "top_k": each test document's k best categories, ranked while scoring, give the rankings,
ranking metrics and RCut decisions of the scores held in memory, in memory, streamed and on Dask."""

import dataclasses
import json

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from mlnb.budget import SCORING_BLOCK_BYTES, estimate
from mlnb.config import load_config
from mlnb.data.shape import DataShape
from mlnb.data.synthetic import make_rcv1_like
from mlnb.errors import MlnbError
from mlnb.metrics.at_k import top_k_of_scores
from mlnb.models._linear import prior_log_odds
from mlnb.models.naive_bayes import NaiveBayes
from mlnb.models.naive_bayes.sparse import SparseNaiveBayes
from mlnb.models.registry import get_kind
from mlnb.report.results import write_results
from mlnb.study import TopKScores, run_study
from mlnb.study import top_k as top_k_module
from mlnb.study.scoring import score_in_memory, score_top_k
from mlnb.study.top_k import evaluate_rankings, rank_rows, ranks_by_itself, rcut_counts

N_DOCUMENTS, N_FEATURES, N_CATEGORIES = 1500, 400, 40
ENGINES = {"memory": ["data.streaming=false"], "streamed": ["data.streaming=true"],
           "dask": ["data.streaming=true", 'engine.kind="dask"', "engine.n_workers=2"]}
TOP_K = ["engine.scores='top_k'"]
#: the in-memory reference decides as the top-k store does: RCut at eval.ranking_k = 5
REFERENCE = ["eval.decision='rcut'", "eval.rcut_k=5"]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, svmlight_study):
    """Three svmlight shards of a synthetic multilabel corpus with untrainable categories, and a study of a dense
    NB, a complement NB and a sparse NB (the kind that ranks itself), by their training prior where untrainable."""
    data = make_rcv1_like(n_documents=N_DOCUMENTS, n_features=N_FEATURES, n_categories=N_CATEGORIES, seed=5)
    return svmlight_study(tmp_path_factory.mktemp("top_k"), data, 3, """
[models.nb]
kind = "naive_bayes"
[models.cnb]
kind = "naive_bayes"
event_model = "complement"
[models.sparse]
kind = "sparse_naive_bayes"
[eval]
bootstrap = 20
untrainable = "prior"
[report]
category = 1
plots = false
""")


@pytest.fixture(scope="module")
def reference(corpus):
    """The scores held in memory, decided by RCut at 5."""
    return run_study(load_config(corpus, ENGINES["memory"] + REFERENCE))


@pytest.fixture(scope="module")
def top_k_in_memory(corpus):
    return run_study(load_config(corpus, ENGINES["memory"] + TOP_K))


def _ranking(result) -> dict:
    return {run.name: run.ranking for run in result.models}


def _assert_same_as_reference(result, reference):
    """The same rankings' metrics, intervals, by-band shares and comparisons, and the same RCut counts, to the bit."""
    assert _ranking(result) == _ranking(reference)
    assert result.ranking_comparisons == reference.ranking_comparisons
    for run, held in zip(result.models, reference.models):
        columns = ["n_pos", "tp", "fp", "fn", "tn", "precision", "recall", "f1", "accuracy", "excluded"]
        pd.testing.assert_frame_equal(run.evaluation.per_category[columns], held.evaluation.per_category[columns])
        for key in ("micro_f1", "macro_f1", "micro_precision", "macro_recall", "precision_at_k", "n_evaluable"):
            assert run.evaluation.summary[key] == held.evaluation.summary[key], (run.name, key)
        for key in ("macro_auc", "micro_auc", "mean_log_loss", "macro_average_precision"):
            assert np.isnan(run.evaluation.summary[key]), key  # not computed: NaN, never a made-up value


def test_top_k_in_memory_gives_the_in_memory_rankings_and_rcut_counts(top_k_in_memory, reference):
    assert len(top_k_in_memory.untrainable) > 0  # the by-prior rule is exercised
    _assert_same_as_reference(top_k_in_memory, reference)
    assert top_k_in_memory.config.eval.decision == "rcut" and top_k_in_memory.config.eval.rcut_k == 5
    assert top_k_in_memory.comparisons == [] and top_k_in_memory.Y_test is None
    assert all(run.intervals == {} and run.auc_intervals is None and run.scores is None
               for run in top_k_in_memory.models)
    described = top_k_in_memory.data["test_scores"]
    assert "eval.ranking_k = 5" in described["not_computed"] and f"{N_CATEGORIES:,} categories" in \
        described["not_computed"] and "AUC" in described["not_computed"]


@pytest.mark.parametrize("engine", ["streamed", pytest.param("dask", marks=pytest.mark.slow)])
def test_top_k_streamed_and_on_dask_gives_the_in_memory_rankings(corpus, reference, engine, request):
    """On Dask: the session's LocalCluster of 2 workers (``dask_address`` in tests/conftest.py)."""
    on_cluster = [f'engine.address="{request.getfixturevalue("dask_address")}"'] if engine == "dask" else []
    result = run_study(load_config(corpus, ENGINES[engine] + on_cluster + TOP_K))
    assert result.data["streaming"]["scores"].startswith("as each document's 5 best")
    assert "engine.scores = 'top_k'" in result.data["streaming"]["not_computed"]
    _assert_same_as_reference(result, reference)


def test_the_store_keeps_the_documents_in_the_order_of_the_other_stores(documents):
    """In memory and streamed (two partitions, chunks of 37): the same ids, labels and rankings, n × k, and the
    rankings of the scores held in memory."""
    memory, streamed = documents
    models = {"nb": NaiveBayes().fit(memory.X, memory.Y)}
    config = load_config(None, ["engine.scores='top_k'", "eval.ranking_k=2"])
    config = dataclasses.replace(config, models={"nb": config.models["nb"]})
    from mlnb.backends import LocalBackend

    none = np.zeros(0, dtype=np.int64)
    here = score_top_k(config, models, memory, LocalBackend(), None, none)
    chunked = score_top_k(config, models, streamed, LocalBackend(), None, none)
    held = score_in_memory(models, streamed)
    assert isinstance(chunked, TopKScores) and chunked.categories["nb"].shape == (memory.n_documents, 2)
    np.testing.assert_array_equal(chunked.ids, held.ids)
    np.testing.assert_array_equal(chunked.ids, memory.ids)
    assert (chunked.Y != held.Y).nnz == 0
    expected, values = top_k_of_scores(held.scores["nb"], 2)
    for store in (here, chunked):
        np.testing.assert_array_equal(store.categories["nb"], expected)
        np.testing.assert_array_equal(store.values["nb"], values)


def _sparse_fit(with_untrainable: bool):
    rng = np.random.default_rng(3)
    X = sp.random(300, 50, density=0.1, format="csr", dtype=np.float32, random_state=2)
    X.data = np.ceil(X.data * 4)
    Y = (rng.random((300, 9)) < 0.25).astype(np.int8)
    if with_untrainable:
        Y[:, 2] = 0  # no positive
        Y[:, 6] = 1  # no negative
    Y = sp.csr_matrix(Y)
    return X, Y


@pytest.mark.filterwarnings("ignore:2 categories have no positive")
@pytest.mark.parametrize("k", [1, 4, 12])
def test_the_sparse_kind_ranks_itself_to_the_generic_rankings(k, monkeypatch):
    """SparseNaiveBayes.top_k (the kind's ranks_top_k) gives the categories and values of its scores ranked a
    block at a time, untrainable categories by their prior, padded beyond K; tiny blocks change nothing."""
    X, Y = _sparse_fit(with_untrainable=True)
    model = SparseNaiveBayes().fit(X, Y)
    positives = np.asarray(Y.sum(axis=0)).ravel()
    untrainable = np.flatnonzero((positives == 0) | (positives == Y.shape[0]))
    prior = prior_log_odds(positives, Y.shape[0]).astype(np.float32)
    assert get_kind("sparse_naive_bayes").ranks_top_k and not get_kind("naive_bayes").ranks_top_k
    assert ranks_by_itself(model, True, untrainable, prior)
    assert not ranks_by_itself(model, True, untrainable, prior + 1)  # other scores: formed and replaced
    itself = rank_rows(model, X, k, 9, by_itself=True, prior=prior, untrainable=untrainable)
    monkeypatch.setattr(top_k_module, "SCORING_BLOCK_BYTES", 12 * 9 * 7)  # 7 documents a block
    generic = rank_rows(model, X, k, 9, by_itself=False, prior=prior, untrainable=untrainable)
    scores = model.decision_function(X)
    scores[:, untrainable] = prior[untrainable]
    expected = top_k_of_scores(scores, k)
    for categories, values in (itself, generic):
        np.testing.assert_array_equal(categories, expected[0])
        np.testing.assert_array_equal(values, expected[1])
        assert categories.dtype == np.int32 and values.dtype == np.float32


def test_in_a_study_the_sparse_kind_ranks_itself_to_the_generic_rankings(corpus, top_k_in_memory, monkeypatch):
    """The study asks the sparse kind to rank itself (its untrainable categories score by the study's prior);
    forming its scores a block at a time instead gives the same rankings and metrics."""
    from mlnb.study import scoring

    chosen = []
    monkeypatch.setattr(scoring, "ranks_by_itself", lambda *args: chosen.append(ranks_by_itself(*args)) or False)
    generic = run_study(load_config(corpus, ENGINES["memory"] + TOP_K))
    assert chosen == [False, False, True]  # nb, cnb (dense kinds), sparse
    assert _ranking(generic) == _ranking(top_k_in_memory)


def test_rcut_counts_and_f1_are_a_hand_count_of_the_rankings():
    rng = np.random.default_rng(8)
    n, K, k = 60, 7, 3
    Y = sp.csr_matrix((rng.random((n, K)) < 0.3).astype(np.int8))
    rankings = np.array([rng.permutation(K)[:k] for _ in range(n)])
    rankings[0, 2] = -1  # a padded rank decides nothing
    for r in (1, 3):
        predicted, tp = rcut_counts(Y, rankings, r)
        dense = Y.toarray()
        for category in range(K):
            chosen = [d for d in range(n) if category in rankings[d, :r]]
            assert predicted[category] == len(chosen)
            assert tp[category] == sum(dense[d, category] for d in chosen)
        evaluation = evaluate_rankings(Y, rankings, None, rcut_k=r, top_k=2, exclude=[4])
        table = evaluation.per_category
        n_pos = dense.sum(axis=0)
        for category in range(K):
            hand_tp, hand_fp = tp[category], predicted[category] - tp[category]
            hand_fn = n_pos[category] - hand_tp
            precision = hand_tp / (hand_tp + hand_fp) if hand_tp + hand_fp else 0.0
            recall = hand_tp / (hand_tp + hand_fn) if hand_tp + hand_fn else 0.0
            f1 = 2 * hand_tp / (2 * hand_tp + hand_fp + hand_fn) if hand_tp + hand_fp + hand_fn else 0.0
            assert table["fn"][category] == hand_fn
            assert table["precision"][category] == pytest.approx(precision, abs=1e-15)
            assert table["recall"][category] == pytest.approx(recall, abs=1e-15)
            assert table["f1"][category] == pytest.approx(f1, abs=1e-15)
        pooled = [c for c in range(K) if c != 4]
        tp_all, fp_all = tp[pooled].sum(), (predicted - tp)[pooled].sum()
        fn_all = n_pos[pooled].sum() - tp_all
        assert evaluation.summary["micro_f1"] == pytest.approx(2 * tp_all / (2 * tp_all + fp_all + fn_all))
        assert np.isnan(evaluation.summary["macro_auc"]) and evaluation.roc_tpr.shape == (K, 0)
        assert table["auc"].isna().all() and table["log_loss"].isna().all()


@pytest.mark.parametrize("path, settings, key", [
    ("configs/iris.toml", [], "task = 'multiclass'"),
    (None, ["eval.ranking_k=0"], "eval.ranking_k = 0"),
    (None, ["eval.decision='scut'"], "eval.decision = 'scut'"),
    (None, ["models.nb.decision='pcut'"], "models.nb.decision = 'pcut'"),
    (None, ["eval.decision='rcut'", "eval.rcut_k=6"], "eval.rcut_k = 6"),
    (None, ["eval.calibration='platt'"], "eval.calibration = 'platt'"),
])
def test_what_top_k_cannot_do_is_refused_in_one_line(path, settings, key):
    with pytest.raises(MlnbError) as error:
        load_config(path, TOP_K + settings)
    message = str(error.value)
    assert key in message and "engine.scores = 'top_k'" in message and "\n" not in message


def test_the_memory_estimate_counts_n_by_k(corpus):
    """engine.scores = 'top_k': n × k per model and one scoring block, no n × K, no ROC grids nor curve tables."""
    shape = DataShape(100_000, 20_000, 500_000, 100_000, 10**7)
    held = estimate(load_config(corpus, ENGINES["memory"]), shape)
    ranked = estimate(load_config(corpus, ENGINES["memory"] + TOP_K), shape)
    assert any("test scores" in need.what and need.bytes == 12.0 * 20_000 * 100_000 * 3 for need in held)
    (scores,) = [need for need in ranked if "best categories" in need.what]
    assert scores.bytes == 12.0 * 20_000 * 5 * 3 + SCORING_BLOCK_BYTES and scores.key == "eval.ranking_k = 5"
    assert not any("test scores" in need.what or "ROC" in need.what or "curve" in need.what for need in ranked)


def test_the_results_folder_says_what_was_not_computed(top_k_in_memory, tmp_path):
    folder = write_results(top_k_in_memory, tmp_path)
    report = (folder / "report.md").read_text()
    sentence = top_k_in_memory.data["test_scores"]["not_computed"]
    assert f"Not computed: {sentence}." in report and report.count(sentence) == 1
    assert "## Ranking at k (k = 5)" in report and "## By frequency band" in report
    assert "macro AUC" not in report and "curves/" not in report
    assert "AUC, ROC and lift are meaningful" not in report  # complement NB's RCut decisions are a rank rule's
    assert "decides by `rcut`" in report and "Ranking: **" in report
    assert not (folder / "curves").exists() and not (folder / "comparison.csv").exists()
    summary = json.loads((folder / "summary.json").read_text())
    for run in top_k_in_memory.models:
        model = summary["models"][run.name]
        assert model["macro_auc"] is None and model["micro_f1"] == run.evaluation.summary["micro_f1"]
        assert model["ranking"]["P@1"] == run.ranking["metrics"]["P@1"] and model["decision"] == "rcut"
    assert summary["data"]["test_scores"]["not_computed"] == sentence and summary["comparisons"] == []
    metrics = pd.read_csv(folder / "metrics.csv")
    assert metrics["auc"].isna().all() and metrics["f1"].notna().all()


def test_a_sweep_over_a_top_k_study_is_decided_by_a_metric_it_measures(corpus):
    """The rankings measure F1, accuracy and precision@k, not AUC: a sweep decided by macro AUC (the default)
    is refused in one line that names the key and the metrics it can use, before any data is read."""
    from mlnb.studies.sweep import run_sweep

    config = load_config(corpus, TOP_K)
    with pytest.raises(MlnbError, match=r"sweep.metric = 'macro_auc': engine.scores = 'top_k' .* use one of "
                                        r"macro_f1, micro_f1, mean_accuracy, precision_at_k"):
        run_sweep(config, ["models.nb.alpha=0.5,1.0"])


def test_a_curve_over_a_top_k_study_records_only_what_the_rankings_measure(corpus):
    from mlnb.studies.curve import CURVE_METRICS, curve_metrics

    assert curve_metrics(load_config(corpus, TOP_K)) == ("micro_f1",)
    assert curve_metrics(load_config(corpus)) == CURVE_METRICS
