"""report.md: what each model was trained on, decisions under the other rules, verdicts by the test
that can tell, untrainable categories alike for every kind, multiclass NB's probabilities."""

import re
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.metrics import f1_score

from mlnb.config import load_config
from mlnb.decision import fit_decision_rule
from mlnb.metrics.comparison import compare_scores
from mlnb.report.markdown import _verdict, study_markdown
from mlnb.study import run_models, run_study

sys.path.insert(0, str(Path(__file__).parents[1] / "metrics"))
from test_comparison import _multiclass  # noqa: E402  (the clear multiclass difference)

SMALL = ["data.synthetic.n_documents=2000", "data.synthetic.n_features=1500", "data.synthetic.n_categories=12",
         "models.lr.npasses=1", "report.category=0", "eval.bootstrap=0"]


def test_split_validated_report_says_what_each_model_was_trained_on():
    result = run_study(load_config(None, SMALL + ["eval.decision=scut"]))
    n_train = result.data["n_train"]
    report = study_markdown(result, [])
    for run in result.models:
        assert 0 < run.n_validation < n_train and run.n_fit + run.n_validation == n_train
        assert f"fitted on {run.n_fit:,} training documents, its thresholds learned on {run.n_validation:,} " \
               "held-out training documents" in report
    assert f"{result.models[0].n_fit:,} of {n_train:,}" in report and "eval.refit" in report


def test_fixed_rule_run_fits_on_everything_and_gives_the_other_rules():
    result = run_study(load_config(None, SMALL + ["eval.decision=fixed"]))
    report = study_markdown(result, [])
    for run in result.models:
        assert run.n_fit == result.data["n_train"] and run.n_validation == 0
    assert "validation split" not in report
    decisions = next(line for line in report.splitlines() if line.startswith("- Decisions"))
    assert "Not checked: scut, scutfbr" in decisions
    # each model's micro F1 under pcut, recomputed with sklearn over the pooled (trainable) categories
    prevalence = result.train_positives / result.data["n_train"]
    pooled = np.setdiff1d(np.arange(len(result.category_names)), result.untrainable)
    Y = sp.csr_matrix(result.Y_test).toarray()[:, pooled]
    for run in result.models:
        rule = fit_decision_rule("pcut", train_prevalence=prevalence)
        expected = f1_score(Y, rule.decide(run.scores).toarray()[:, pooled], average="micro")
        assert re.search(rf"pcut: [^;]*{run.name} {expected:.4f}", decisions), (run.name, expected, decisions)
    assert ("depends on the decision rule" in decisions) or ("is best under each of them" in decisions)


def test_verdict_names_the_winner_of_a_clear_multiclass_difference():
    Y, a, b = _multiclass(np.random.default_rng(0))
    comparison = compare_scores(Y, a, b, list("vwxyz"), np.full(5, 300), name_a="mnb", name_b="bnb", n_boot=200)
    line = _verdict(comparison)
    assert "**mnb** ranks better than bnb (the paired bootstrap interval of the macro AUC difference excludes 0)" \
        in line
    assert "the sign test cannot reject with 5 categories" in line
    assert "no clear winner" not in line and "no winner" not in line


def test_verdict_of_a_binary_task_without_difference():
    rng = np.random.default_rng(1)
    y = rng.random(600) < 0.3
    a, b = rng.normal(size=600) + y, rng.normal(size=600) + y
    line = _verdict(compare_scores(y, a, b, ["yes"], [180], n_boot=200))  # one category as vectors
    assert "no winner in ranking: the paired bootstrap interval of the macro AUC difference contains 0" in line
    assert "the sign test cannot reject with 1 category" in line


def test_the_significance_line_says_which_test_each_category_got():
    from mlnb.report.markdown import comparison_markdown

    rng = np.random.default_rng(2)
    Y = rng.random((1000, 6)) < np.array([0.004, 0.01, 0.02, 0.1, 0.3, 0.5])  # about 4, 10, 20, 100, … positives
    a, b = rng.normal(size=Y.shape) + Y, rng.normal(size=Y.shape) + Y
    comparison = compare_scores(Y, a, b, list("uvwxyz"), np.full(6, 50))
    line = _verdict(comparison)
    assert ("per category (DeLong's in 3, the exact permutation test in 3: those with at most 30 positives or "
            "negatives), Holm at 0.05: a significantly higher in") in line
    assert "| p\\_value | p\\_holm | test |" in comparison_markdown(comparison)


@pytest.mark.filterwarnings("ignore:.*(prior alone|no training documents)")
def test_keep_scores_untrainable_categories_alike_for_every_kind(small_corpus):
    # category 3 has no training positive: under 'keep' every model scores it by its prior (AUC 0.5),
    # where a minibatch LR used to keep scores learned from negatives only
    Y_train = small_corpus.Y_train.tolil(copy=True)
    Y_train[:, 3] = 0
    config = load_config(None, ["eval.untrainable=keep", "models.lr.npasses=1", "eval.bootstrap=0"])
    runs = run_models(config, small_corpus.X_train, Y_train.tocsr(), small_corpus.X_test, small_corpus.Y_test,
                      small_corpus.category_names)
    assert len(runs) >= 2
    for run in runs:
        assert np.unique(run.scores[:, 3]).size == 1, run.name
        assert run.evaluation.per_category["auc"].iloc[3] == 0.5, run.name


def test_multiclass_naive_bayes_probabilities_are_reported_and_plotted():
    # its scores are joint log-likelihoods: softmax(J) is its posterior, so the report says so and the
    # probability plots show it beside LR, as they leave out only scores that merely rank
    from mlnb.report.plots import _probability_models
    from mlnb.report.tables import probabilities_defined

    result = run_study(load_config("configs/iris.toml", ["models.lr.npasses=2", "eval.bootstrap=0"]))
    report = study_markdown(result, [])
    assert "gnb: its scores are joint log-likelihoods" in report and "softmax is its posterior" in report
    assert "not log-odds" not in report and "not joint log-likelihoods" not in report
    assert all(probabilities_defined(run, "multiclass") for run in result.models)
    shown, left_out = _probability_models(result)
    assert [run.name for run in shown] == ["gnb", "lr"] and left_out == []


DASK = {"kind": "dask", "scheduler": "tcp://127.0.0.1:8786", "workers": 2, "local_cluster": True}


@pytest.mark.parametrize("dask_training, said, unsaid", [
    ({"lr": "one_worker"}, "lr trained on one worker", "mixing"),
    ({"lr": "mixing", "nblr": "mixing"}, "lr, nblr trained by iterative parameter mixing", "one worker"),
    ({"lr": "sums"}, "lr trained by full passes whose sums every worker adds to", "mixing"),
    (None, "on a Dask cluster of 2 workers (tcp://127.0.0.1:8786);", "mixing"),  # a summary from before the record
])
def test_a_dask_report_says_how_each_model_trained_as_the_fit_recorded_it(dask_training, said, unsaid):
    """The issue's Dask run said 'logistic regression by parameter mixing' under engine.minibatch =
    'one_worker' (the default), from a template rather than from what ran."""
    from mlnb.report.markdown import _streaming_lines

    streaming = {"chunk_size": 500, "shuffle_buffer": 4, "engine": DASK, "scores": "in memory"}
    if dask_training is not None:
        streaming["dask_training"] = dask_training
    [line, _] = _streaming_lines(streaming)
    assert said in line and unsaid not in line


def _untrainable_run(aucs, untrainable, name="lr", trained=True):
    """A run whose model kept weights for its untrainable categories (trained on one class anyway)."""
    from types import SimpleNamespace

    import pandas as pd

    weights = np.ones((3, len(aucs))) if trained else np.zeros((3, len(aucs)))
    model = SimpleNamespace(untrainable_categories_=np.asarray(untrainable), weights_=weights)
    return SimpleNamespace(name=name, model=model,
                           evaluation=SimpleNamespace(per_category=pd.DataFrame({"auc": aucs})))


def _config(untrainable: str, task: str = "multilabel"):
    from types import SimpleNamespace

    return SimpleNamespace(eval=SimpleNamespace(untrainable=untrainable), task=task)


def test_an_inverted_untrainable_category_is_named_by_its_measured_auc():
    """The report said such categories' scores 'carry no information' where their test AUCs were
    0.04–0.25: information, inverted. The sentence now states the AUCs that were measured."""
    from mlnb.report.markdown import _untrainable_line

    run = _untrainable_run([0.8, 0.04, 0.25, np.nan], [1, 2, 3])
    line = _untrainable_line(run, ["a", "b", "c", "d"], _config("exclude"))
    assert "their test AUCs range 0.04–0.25: below 0.5, inverted; 1 without a test AUC" in line
    assert "carry no information" not in line and "left out of every average" in line
    line = _untrainable_line(_untrainable_run([0.8, 0.9], [1]), ["a", "b"], _config("keep", "multiclass"))
    assert "its test AUC is 0.90: above 0.5" in line and "kept in the averages as the model scored them" in line


def test_keep_says_whether_the_study_replaced_the_scores_by_the_prior():
    """Under 'keep' a one-vs-rest study replaces every model's scores by the prior (``BY_PRIOR``), a
    multiclass one keeps them as scored: the sentence follows the study's rule, not a template."""
    from types import SimpleNamespace

    from mlnb.report.markdown import _untrainable_line, _untrainable_treatment

    runs = [_untrainable_run([0.8, 0.2], [1], "lr"), _untrainable_run([0.8, 0.5], [1], "nb", trained=False)]
    replaced = SimpleNamespace(config=_config("keep"), models=runs, untrainable=np.array([1]))
    said = _untrainable_treatment(replaced)
    assert "scored by their training prior in every model" in said and "as each model scored" not in said
    assert "the study replaced their scores by the training prior (eval.untrainable = 'keep')" in \
        _untrainable_line(runs[0], ["a", "b"], replaced.config)
    kept = SimpleNamespace(config=_config("keep", "multiclass"), models=runs, untrainable=np.array([1]))
    said = _untrainable_treatment(kept)
    assert "kept in every average as each model scored them" in said
    assert "lr: its test AUC is 0.20: below 0.5, inverted" in said and "nb: its test AUC is 0.50: all 0.5" in said


@pytest.mark.filterwarnings("ignore:.*(prior alone|no training documents)")
def test_the_keep_sentence_matches_what_the_study_did(small_corpus):
    """A one-vs-rest study under 'keep': the scores of the untrainable category are the prior's (one
    value), and the report's sentence says so."""
    from types import SimpleNamespace

    from mlnb.report.markdown import _untrainable_treatment

    Y_train = small_corpus.Y_train.tolil(copy=True)
    Y_train[:, 3] = 0
    config = load_config(None, ["eval.untrainable=keep", "models.lr.npasses=1", "eval.bootstrap=0"])
    runs = run_models(config, small_corpus.X_train, Y_train.tocsr(), small_corpus.X_test, small_corpus.Y_test,
                      small_corpus.category_names)
    assert all(np.unique(run.scores[:, 3]).size == 1 for run in runs)
    said = _untrainable_treatment(SimpleNamespace(config=config, models=runs, untrainable=np.array([3])))
    assert "scored by their training prior in every model" in said
