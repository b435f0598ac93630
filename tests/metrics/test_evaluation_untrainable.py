"""``evaluate(..., Y_train=...)`` treats untrainable categories as a run does (``eval.untrainable``), so
the Python API and ``mlnb run`` give the same numbers on the same split; ``included`` in the per-category
table (and so in metrics.csv) marks the rows the macro averages are taken over; the short repr."""

import warnings

import numpy as np
import pytest

from mlnb import MlnbError, NaiveBayes, evaluate, make_rcv1_like
from mlnb.config import load_config
from mlnb.metrics.evaluation import UNTRAINABLE_RULES
from mlnb.study import run_models


@pytest.fixture(scope="module")
def small():
    """2,000 documents × 40 categories, 9 of them without a training positive (or negative)."""
    data = make_rcv1_like(n_documents=2000, n_features=1000, n_categories=40, seed=0)
    positives = np.asarray(data.Y_train.sum(axis=0)).ravel()
    assert ((positives == 0) | (positives == data.Y_train.shape[0])).sum() > 0
    return data


def fitted_scores(data):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # untrainable categories
        model = NaiveBayes(alpha=0.5, binarize=True).fit(data.X_train, data.Y_train)
    return model.decision_function(data.X_test)


def run_summary(data, rule: str) -> dict:
    config = load_config("configs/quickstart.toml", [f'eval.untrainable="{rule}"', "eval.bootstrap=0",
                                                     'eval.decision="fixed"'])  # evaluate's threshold rule
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        runs = run_models(config, data.X_train, data.Y_train, data.X_test, data.Y_test, data.category_names,
                          wanted=["nb"])
    return runs[0].evaluation.summary


@pytest.mark.parametrize("rule", UNTRAINABLE_RULES)
def test_evaluate_gives_a_runs_summary_for_each_rule(small, rule):
    ours = evaluate(small.Y_test, fitted_scores(small), small.category_names, Y_train=small.Y_train,
                    untrainable=rule).summary
    run = run_summary(small, rule)
    for key in ("macro_auc", "micro_auc", "macro_f1", "micro_f1", "mean_log_loss", "macro_average_precision",
                "precision_at_k", "n_evaluable", "n_excluded_by_caller"):
        assert ours[key] == run[key], key


def test_the_rules_differ_where_they_should(small):
    scores = fitted_scores(small)
    by_rule = {rule: evaluate(small.Y_test, scores, Y_train=small.Y_train, untrainable=rule) for rule in
               UNTRAINABLE_RULES}
    plain = evaluate(small.Y_test, scores)
    # "keep": every category as scored; only the baseline reads the training prevalence now
    assert {**by_rule["keep"].summary, "baseline_prevalence": "test"} == plain.summary
    assert by_rule["exclude"].summary["n_excluded_by_caller"] > 0
    assert by_rule["exclude"].summary["macro_auc"] != plain.summary["macro_auc"]
    untrainable = by_rule["exclude"].per_category["excluded"] == "untrainable"
    # "prior": a constant score per category, so AUC ½ wherever the category is testable
    testable = untrainable & (by_rule["prior"].per_category["n_pos"] > 0) & (by_rule["prior"].per_category["n_neg"] > 0)
    assert testable.any()
    assert (by_rule["prior"].per_category["auc"][testable] == 0.5).all()


def test_included_rows_average_to_the_macro_metrics(small):
    ev = evaluate(small.Y_test, fitted_scores(small), Y_train=small.Y_train)
    table = ev.per_category
    assert table["included"].dtype == bool
    assert (table["included"] == (table["excluded"] == "")).all()
    assert table[table["included"]]["auc"].mean() == pytest.approx(ev.summary["macro_auc"], abs=1e-15)
    assert table[table["included"]]["f1"].mean() == pytest.approx(ev.summary["macro_f1"], abs=1e-15)
    assert int(table["included"].sum()) == ev.summary["n_evaluable"]


def test_untrainable_errors_name_the_argument(small):
    scores = fitted_scores(small)
    with pytest.raises(MlnbError, match="untrainable must be one of"):
        evaluate(small.Y_test, scores, untrainable="drop")
    with pytest.raises(MlnbError, match="Y_train has 39 categories, but scores have 40"):
        evaluate(small.Y_test, scores, Y_train=small.Y_train[:, :39])


def test_repr_is_one_short_line_and_html_shows_the_headline(small):
    ev = evaluate(small.Y_test, fitted_scores(small), small.category_names, Y_train=small.Y_train)
    text = repr(ev)
    assert "\n" not in text and len(text) < 300
    assert text.startswith(f"<Evaluation of {small.Y_test.shape[0]} documents × 40 categories")
    assert f"macro AUC {ev.summary['macro_auc']:.4f}" in text
    page = ev._repr_html_()
    assert "<table" in page and f"{ev.summary['macro_auc']:.4f}" in page and small.category_names[0] in page


@pytest.mark.slow
def test_quickstart_api_and_run_give_the_same_macro_auc():
    """The README's numbers: the quickstart's NB macro AUC from ``evaluate(..., Y_train=...)`` is the run's
    (0.8227 on the 2-core box), where without Y_train the untrainable categories drag it down (0.8118)."""
    config = load_config("configs/quickstart.toml", ["eval.bootstrap=0"])
    data = make_rcv1_like(n_documents=40000, n_features=10000, n_categories=103, seed=0, test_fraction=0.5)
    scores = fitted_scores(data)
    ours = evaluate(data.Y_test, scores, data.category_names, Y_train=data.Y_train).summary["macro_auc"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run = run_models(config, data.X_train, data.Y_train, data.X_test, data.Y_test, data.category_names,
                         wanted=["nb"])[0].evaluation.summary["macro_auc"]
    assert ours == run
    assert ours == pytest.approx(0.8227, abs=5e-4)
    assert evaluate(data.Y_test, scores, data.category_names).summary["macro_auc"] < ours - 0.005
