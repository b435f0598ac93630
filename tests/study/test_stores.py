"""The two ScoreStores keep one contract: the same study with its test scores in memory and spilled to disk gives
the same per-category AUCs and their intervals, the same DeLong table and the same rankings at k."""

import numpy as np
import pandas as pd
import pytest

from mlnb.backends import LocalBackend
from mlnb.config import load_config
from mlnb.data.synthetic import make_rcv1_like
from mlnb.decision import fit_decision_rule
from mlnb.models.naive_bayes import NaiveBayes
from mlnb.study import run_study
from mlnb.study.scoring import score_in_memory, score_spilled
from mlnb.study.stores import SPILL_LIMITS, ScoresInMemory, SpilledScores

N_FEATURES, N_CATEGORIES = 300, 10


@pytest.fixture(scope="module")
def studies(tmp_path_factory, svmlight_study):
    """(in memory, streamed with engine.scores = 'disk') results of one study of two count-based models (the same
    fits, bit for bit, read whole or in chunks) with the ranking metrics at 5."""
    config = svmlight_study(tmp_path_factory.mktemp("stores"), make_rcv1_like(
        n_documents=1000, n_features=N_FEATURES, n_categories=N_CATEGORIES, seed=5), 2, """
[models.nb]
kind = "naive_bayes"
[models.cnb]
kind = "naive_bayes"
event_model = "complement"
[eval]
bootstrap = 0
decision = "fixed"
ranking_k = 5
[report]
category = 1
plots = false
""", chunk_size=150)
    memory = run_study(load_config(config, ["data.streaming=false"]))
    spilled = run_study(load_config(config, ["data.streaming=true", 'engine.scores="disk"']))
    return memory, spilled


def test_each_store_says_where_the_scores_were_and_what_that_leaves_out(studies):
    memory, spilled = studies
    assert memory.Y_test is not None and memory.models[0].scores is not None
    assert spilled.data["streaming"]["scores"] == "spilled to disk"
    assert spilled.data["streaming"]["not_computed"] == SPILL_LIMITS
    assert spilled.Y_test is None and all(run.scores is None and run.spill is None for run in spilled.models)


def test_per_category_aucs_and_their_intervals_agree(studies):
    """Exact per category (the spill is read a column at a time); the intervals within the streamed tolerance."""
    memory, spilled = studies
    for name in ("nb", "cnb"):
        here, there = memory.model(name), spilled.model(name)
        np.testing.assert_allclose(there.evaluation.per_category["auc"].to_numpy(dtype=float),
                                   here.evaluation.per_category["auc"].to_numpy(dtype=float), rtol=1e-9, atol=1e-9)
        assert there.auc_intervals.shape == (N_CATEGORIES, 2)
        np.testing.assert_allclose(there.auc_intervals, here.auc_intervals, rtol=1e-9, atol=1e-9)
        # the pooled micro AUC is binned when spilled, within the bound it reports
        error = there.evaluation.summary["micro_auc_max_error"]
        assert abs(there.evaluation.summary["micro_auc"] - here.evaluation.summary["micro_auc"]) <= error + 1e-12


def test_the_delong_tables_agree(studies):
    memory, spilled = studies
    assert len(memory.comparisons) == len(spilled.comparisons) == 1
    here, there = memory.comparisons[0], spilled.comparisons[0]
    assert (there.name_a, there.name_b) == (here.name_a, here.name_b) == ("cnb", "nb")
    assert list(there.table["name"]) == list(here.table["name"]) and len(here.table) == N_CATEGORIES
    for column in ("difference", "z", "p_value", "p_holm"):
        np.testing.assert_allclose(there.table[column].to_numpy(dtype=float),
                                   here.table[column].to_numpy(dtype=float), rtol=1e-9, atol=1e-12,
                                   err_msg=column)
    assert there.counts() == here.counts()


def test_the_rankings_at_k_agree_to_the_bit(studies):
    memory, spilled = studies
    assert memory.ranking_ks == spilled.ranking_ks == (1, 3, 5)
    for name in ("nb", "cnb"):
        here, there = memory.model(name).ranking, spilled.model(name).ranking
        assert there["metrics"] == here["metrics"]
        pd.testing.assert_frame_equal(pd.DataFrame(there["by_band"]), pd.DataFrame(here["by_band"]),
                                      check_exact=True)


def test_both_stores_answer_the_same_questions_of_the_same_scores(documents):
    """At the store level: the same labels and rankings from scores held and spilled; neither says whether it is
    in memory (the study asks it, never where), and closing the spilled one deletes its folder."""
    memory, streamed = documents
    models = {"nb": NaiveBayes().fit(memory.X, memory.Y),
              "bnb": NaiveBayes(event_model="bernoulli").fit(memory.X, memory.Y)}
    held = score_in_memory(models, memory)
    spilled = score_spilled(models, streamed, LocalBackend(), rules={name: fit_decision_rule("fixed") for name in models},
                            calibrations={}, threshold=0.5, top_k=2, exclude=None, prior=None,
                            untrainable=np.zeros(0, dtype=int))
    try:
        assert isinstance(held, ScoresInMemory) and isinstance(spilled, SpilledScores)
        assert not hasattr(held, "in_memory") and not hasattr(spilled, "in_memory")
        assert held.n_documents == spilled.n_documents == memory.n_documents
        assert (held.labels != spilled.labels).nnz == 0 and held.labels_kept is held.Y
        assert spilled.labels_kept is None
        assert held.describe() == {"scores": "in memory", "not_computed": ""}
        assert spilled.describe() == {"scores": "spilled to disk", "not_computed": SPILL_LIMITS}
        runs = [type("Run", (), {"name": name, "scores": held.scores[name]})() for name in models]
        labels_held, top_held = held.top_k(runs, 2)
        labels_spilled, top_spilled = spilled.top_k(runs, 2)
        assert (labels_held != labels_spilled).nnz == 0
        for name in models:
            np.testing.assert_array_equal(top_spilled[name], top_held[name])
    finally:
        spilled.close()
    assert not spilled.folder.exists()
