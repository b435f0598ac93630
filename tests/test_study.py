"""The one study loop: every command runs every model through it and honours every eval.* key."""

import dataclasses

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

import mlnb.study
from mlnb.studies import curve as curve_module
from mlnb.studies import sweep as sweep_module
from mlnb.cli import app
from mlnb import MlnbError
from mlnb.config import EvalConfig, load_config
from mlnb.study.documents import validation_buckets
from mlnb.study import run_models, run_study

SMALL = ["data.synthetic.n_documents=2000", "data.synthetic.n_features=1500", "data.synthetic.n_categories=12",
         "models.lr.npasses=1", "report.category=0", "eval.bootstrap=0"]  # intervals only where a key needs them
COMMANDS = {
    "run": [],
    "sweep": ["--param", "models.nb.alpha=0.5,1"],
    "curve": ["--set", "curve.sizes=[300, 900]", "--set", "curve.seeds=1"],
}


# eval key -> (the value set, the function of the loop that must receive it, how to read it from the call:
# (positional arguments, keyword arguments, result) -> the value that function acted on)
def _kw(name):
    return lambda args, kwargs, result: kwargs.get(name)


def _held(result):  # held_out_scores(...) -> {name: HeldOut}: the held-out scores of its first model
    return next(iter(result.values()))


def _fraction(args, kwargs, result):  # held_out_scores(config, names, train, ...): share of documents held out
    return round(_held(result)[0].shape[0] / args[2].n_documents, 1)  # a seeded hash split: the share ± a few %


EVAL_KEYS = {
    "threshold": (0.9, "evaluate", _kw("threshold")),
    "roc_points": (11, "evaluate", _kw("roc_points")),
    "top_k": (3, "evaluate", _kw("top_k")),
    "decision": ("rcut", "fit_decision_rule", lambda a, k, r: a[0]),  # not the default (pcut here)
    "decision_metric": ("accuracy", "fit_decision_rule", _kw("metric")),
    "fbr": (0.3, "fit_decision_rule", _kw("fbr")),
    "fbr_rank": (2, "fit_decision_rule", _kw("fbr_rank")),
    "rcut_k": (2, "fit_decision_rule", _kw("rcut_k")),
    "calibration": ("platt", "fit_calibration", lambda a, k, r: a[0]),
    # k-fold scores every training document and keeps no split model; a split keeps its model
    "validation": ("kfold", "held_out_scores", lambda a, k, r: "kfold" if _held(r)[2] is None and _fraction(a, k, r) == 1
                   else "split"),
    "validation_fraction": (0.5, "held_out_scores", _fraction),
    "folds": (3, "held_out_scores", lambda a, k, r: a[0].eval.folds if _held(r)[2] is None else None),
    # refit: the evaluated model saw every training document (NB counts them)
    "refit": (True, "run_on", lambda a, k, r: r.runs[0].model.n_documents_ == a[1].n_documents),
    "untrainable": ("keep", "evaluate", lambda a, k, r: "keep" if k.get("exclude") is None else None),
    "bootstrap": (7, "bootstrap_intervals", _kw("n_boot")),
    "confidence": (0.9, "bootstrap_intervals", _kw("level")),
    "ranking_k": (3, "ranking_cutoffs", lambda a, k, r: a[0]),
    "propensity_a": (0.6, "propensities_from_counts", lambda a, k, r: a[2]),
    "propensity_b": (2.6, "propensities_from_counts", lambda a, k, r: a[3]),
}
# the module of the study package whose calls of each function the spy sees
STAGES = {"evaluate": mlnb.study.stores, "bootstrap_intervals": mlnb.study.stores,
          "fit_decision_rule": mlnb.study.deciding, "fit_calibration": mlnb.study.deciding,
          "held_out_scores": mlnb.study.loop, "run_on": mlnb.study.loop, "ranking_cutoffs": mlnb.study.loop,
          "propensities_from_counts": mlnb.study.loop}
assert {function for _, function, _ in EVAL_KEYS.values()} == set(STAGES)
# what a key needs switched on to matter at all
NEEDS = {"confidence": ["eval.bootstrap=7"], "decision_metric": ["eval.decision=scut"], "fbr": ["eval.decision=scutfbr"],
         "fbr_rank": ["eval.decision=scutfbr"], "rcut_k": ["eval.decision=rcut"],
         "validation": ["eval.decision=scut"], "validation_fraction": ["eval.decision=scut"],
         "folds": ["eval.decision=scut", "eval.validation=kfold"], "refit": ["eval.decision=scut"]}
# intervals and the ranking metrics at k are for the report of a run, not for each sweep or curve point
RUN_ONLY = {"bootstrap", "confidence", "ranking_k", "propensity_a", "propensity_b"}


def test_every_eval_key_is_covered():
    assert set(EVAL_KEYS) == {f.name for f in dataclasses.fields(EvalConfig)}


@pytest.mark.slow
@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("key", sorted(EVAL_KEYS))
def test_every_command_honours_every_eval_key(command, key, tmp_path, monkeypatch):
    """Spy on the stage of the loop each key belongs to: every call must get the value the user set."""
    if command != "run" and key in RUN_ONLY:
        pytest.skip(f"eval.{key} shapes the run's report only")
    value, function, read = EVAL_KEYS[key]
    seen = []
    stage = STAGES[function]
    real = getattr(stage, function)

    def spy(*args, **kwargs):
        result = real(*args, **kwargs)
        seen.append(read(args, kwargs, result))
        return result

    monkeypatch.setattr(stage, function, spy)
    if function == "run_on":  # the commands import it from mlnb.study at import time
        monkeypatch.setattr(sweep_module, "run_on", spy)
        monkeypatch.setattr(curve_module, "run_on", spy)
    # no figures: the spy reads the loop's stages, and drawing them was most of each run's time
    settings = SMALL + NEEDS.get(key, []) + [f"eval.{key}={str(value).lower()}", "report.plots=false"]
    args = [command, "configs/quickstart.toml", "--out", str(tmp_path), "--quiet", *COMMANDS[command],
            *[a for s in settings for a in ("--set", s)]]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert seen and all(v == value for v in seen), (key, seen)


@pytest.mark.slow
def test_curve_micro_f1_follows_the_threshold(tmp_path):
    """The bug that motivated one loop: `mlnb curve` used to ignore eval.threshold (the fixed rule's cut)."""
    f1 = {}
    for threshold in (0.5, 0.9):
        out = tmp_path / str(threshold)
        settings = SMALL + ["eval.decision=fixed", f"eval.threshold={threshold}"]
        args = ["curve", "configs/quickstart.toml", "--out", str(out), "--quiet", *COMMANDS["curve"],
                *[a for s in settings for a in ("--set", s)]]
        assert CliRunner().invoke(app, args).exit_code == 0
        (folder,) = (out / "quickstart-curve").iterdir()
        f1[threshold] = pd.read_csv(folder / "curve.csv").set_index(["model", "size"])["micro_f1"]
    assert (f1[0.5] != f1[0.9]).all()


def test_a_default_study_decides_by_pcut_and_names_it():
    """eval.decision = 'auto' (the default) is PCut for a multilabel study in memory: every model decides by it,
    and the result's config (its report, config.toml) names it rather than 'auto'."""
    result = run_study(load_config(None, SMALL + ["eval.bootstrap=0"]))
    assert result.config.eval.decision == "pcut"
    assert all(run.decision.rule == "pcut" for run in result.models)
    prevalence = result.train_positives / result.data["n_train"]
    decided = np.diff(result.models[0].decisions.tocsc().indptr)  # positive decisions per category
    np.testing.assert_array_equal(decided, np.floor(prevalence * result.data["n_test"] + 0.5))


def test_run_models_fits_what_a_wanted_model_starts_from(small_corpus):
    config = load_config(None, ["models.lr.init_from=nb", "models.lr.npasses=1",
                                "models.cnb.kind=naive_bayes", "models.cnb.event_model=complement"])
    X, Y = small_corpus.X_train, small_corpus.Y_train
    (run,) = run_models(config, X, Y, small_corpus.X_test, small_corpus.Y_test, small_corpus.category_names,
                        wanted=["lr"])
    assert run.name == "lr" and run.scores.shape == small_corpus.Y_test.shape
    with pytest.raises(MlnbError, match="no enabled model 'svm' in the study"):
        run_models(config, X, Y, small_corpus.X_test, small_corpus.Y_test, wanted=["svm"], category_names=None)
    assert run.label == "Logistic regression (rowwise_adagrad, all categories, from nb)"


def test_equal_labels_get_the_model_name():
    config = load_config(None, ["models.nb2.kind=naive_bayes"])
    assert mlnb.study.model_labels(config) == {"nb": "Naive Bayes (multinomial) [nb]",
                                               "lr": "Logistic regression (rowwise_adagrad, all categories)",
                                               "nb2": "Naive Bayes (multinomial) [nb2]"}


FOUR = ["data.synthetic.n_documents=3000", "data.synthetic.n_features=2000", "data.synthetic.n_categories=20",
        "models.lr.npasses=1", "models.nblr.npasses=1"]


def four(command, tmp_path, *extra):
    args = [command, "configs/four_models.toml", "--out", str(tmp_path), "--quiet", *extra,
            *[a for s in FOUR for a in ("--set", s)]]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    (folder,) = (tmp_path / ("four_models" + ("" if command == "run" else f"-{command}"))).iterdir()
    return result, folder


@pytest.mark.slow
def test_four_model_study_runs_end_to_end(tmp_path):
    names = {"mnb", "cnb", "lr", "nblr"}
    result, folder = four("run", tmp_path / "run")
    metrics = pd.read_csv(folder / "metrics.csv")
    assert set(metrics["model"]) == names
    pairs = {"lr_vs_mnb", "cnb_vs_mnb", "nblr_vs_lr", "nblr_vs_mnb"}
    assert {p.stem.removeprefix("auc_difference_") for p in (folder / "plots").glob("auc_difference_*")} == pairs
    report = (folder / "report.md").read_text()
    assert all(f"- **{name}** — " in report for name in names)
    assert "cnb: its scores rank documents but are not log-odds" in report
    _, folder = four("sweep", tmp_path / "sweep", "--param", "models.cnb.alpha=0.1,1")
    sweep = pd.read_csv(folder / "sweep.csv")
    assert len(sweep) == 2 and sweep["macro_auc"].notna().all()
    _, folder = four("curve", tmp_path / "curve", "--set", "curve.sizes=[200, 1000]", "--set", "curve.seeds=1")
    curve = pd.read_csv(folder / "curve.csv")
    assert set(curve["model"]) == names and len(curve) == 4 * 2


def test_init_from_a_model_without_one_row_per_feature_is_refused(tmp_path):
    result = CliRunner().invoke(app, ["run", "configs/quickstart.toml", "--out", str(tmp_path), "--quiet",
                                      *[a for s in SMALL + ["models.nb.event_model=gaussian", "models.nb.binarize=false",
                                                            "models.lr.init_from=nb"] for a in ("--set", s)]])
    assert result.exit_code == 2
    assert "models.lr: init_from = 'nb': its weights are not one row per feature" in result.output
    assert not (tmp_path / "quickstart").exists() or not any((tmp_path / "quickstart").iterdir())


def test_results_keep_config_order_when_fit_order_differs(small_corpus):
    """lr is written first but starts from nb: nb is fitted first, yet lr stays first everywhere."""
    config = load_config(None, ["models.lr.init_from=nb", "models.lr.npasses=1"])
    config.models = {"lr": config.models["lr"], "nb": config.models["nb"]}
    runs = run_models(config, small_corpus.X_train, small_corpus.Y_train, small_corpus.X_test,
                      small_corpus.Y_test, small_corpus.category_names)
    assert [run.name for run in runs] == ["lr", "nb"] and config.compared_pairs() == [("nb", "lr")]


def test_decision_stage_and_honest_summaries_in_a_run(tmp_path):
    """SCutFBR thresholds and Platt calibration learnt on held-out training documents, saved; the
    report opens with its conclusion, baselines and intervals; rcut decides k categories a document."""
    result = CliRunner().invoke(app, ["run", "configs/quickstart.toml", "--out", str(tmp_path), "--quiet",
                                      *[a for s in SMALL + ["eval.decision=scutfbr", "eval.calibration=platt",
                                                            "eval.bootstrap=20", "report.plots=false"]
                                        for a in ("--set", s)]])  # no figures: none is read here
    assert result.exit_code == 0, result.output
    (folder,) = (tmp_path / "quickstart").iterdir()
    decisions = pd.read_csv(folder / "decisions.csv")
    assert set(decisions["model"]) == {"nb", "lr"} and (decisions["rule"] == "scutfbr").all()
    assert "calibration_slope" in decisions.columns
    report = (folder / "report.md").read_text()
    assert report.index("## Conclusion") < report.index("## Models") < report.index("## Summary")
    assert "*prevalence random*" in report and "95% bootstrap intervals" in report
    summary = __import__("json").loads((folder / "summary.json").read_text())
    low, high = summary["models"]["lr"]["intervals"]["macro_auc"]
    assert low <= summary["models"]["lr"]["macro_auc"] <= high
    metrics = pd.read_csv(folder / "metrics.csv")
    assert {"auc_low", "auc_high", "average_precision", "excluded"} <= set(metrics.columns)


def test_rcut_decides_k_categories_per_document(small_corpus):
    config = load_config(None, ["eval.decision=rcut", "eval.rcut_k=2", "models.lr.npasses=1",
                                "eval.untrainable=keep"])
    runs = run_models(config, small_corpus.X_train, small_corpus.Y_train, small_corpus.X_test,
                      small_corpus.Y_test, small_corpus.category_names)
    for run in runs:
        assert (np.diff(run.decisions.tocsr().indptr) == 2).all()
        assert run.evaluation.per_category["tp"].sum() + run.evaluation.per_category["fp"].sum() == \
            2 * small_corpus.X_test.shape[0]


def test_thresholds_and_calibration_do_not_depend_on_the_evaluation_documents(small_corpus):
    """Fit the stage twice, the second time with the evaluation labels shuffled and its documents
    reversed: every threshold and calibration parameter must be identical."""
    config = load_config(None, ["eval.decision=scutfbr", "eval.calibration=platt", "models.lr.npasses=1"])
    X_eval, Y_eval = small_corpus.X_test, small_corpus.Y_test
    order = np.arange(X_eval.shape[0])[::-1]
    first = run_models(config, small_corpus.X_train, small_corpus.Y_train, X_eval, Y_eval, small_corpus.category_names)
    second = run_models(config, small_corpus.X_train, small_corpus.Y_train, X_eval[order],
                        Y_eval[np.random.default_rng(1).permutation(X_eval.shape[0])], small_corpus.category_names)
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a.decision.thresholds, b.decision.thresholds)
        np.testing.assert_array_equal(a.calibration.slope, b.calibration.slope)
        np.testing.assert_array_equal(a.calibration.intercept, b.calibration.intercept)


def test_every_model_trains_on_the_same_documents_when_the_split_model_is_kept(small_corpus):
    """lr decides by SCut (split, refit false), nb by a fixed cut: both are the split's models."""
    config = load_config(None, ["eval.decision=fixed", "models.lr.decision=scut", "models.lr.npasses=1"])
    runs = run_models(config, small_corpus.X_train, small_corpus.Y_train, small_corpus.X_test, small_corpus.Y_test,
                      small_corpus.category_names)
    # the training documents outside the held-out bucket of a seeded hash of their ids (row numbers here)
    held = validation_buckets(config.seed, "validation", fraction=0.2)[0].mask(np.arange(small_corpus.X_train.shape[0]))
    assert 0 < held.sum() < held.size
    assert runs[0].model.n_documents_ == (~held).sum()  # nb too, though its own
    #                                                 rule needs no validation


@pytest.mark.parametrize("n", [40, 41])
def test_a_category_in_every_training_document(n):
    """Its training prevalence is exactly 1 (a float mean can exceed 1 by an ulp), for every rule."""
    from mlnb.data.synthetic import make_rcv1_like
    import scipy.sparse as sp

    data = make_rcv1_like(n_documents=2 * n, n_features=300, n_categories=20, seed=1)
    Y_train = data.Y_train.tolil()
    Y_train[:, 0] = 1
    config = load_config(None, ["eval.decision=pcut", "models.lr.npasses=1"])
    runs = run_models(config, data.X_train, sp.csr_matrix(Y_train), data.X_test, data.Y_test, data.category_names)
    assert all(run.evaluation.summary["n_categories"] == 20 for run in runs)


def test_auc_intervals_of_a_run_are_the_score_intervals():
    """metrics.csv's auc_low/auc_high are the score intervals (``metrics.auc_intervals``), not the
    DeLong Wald intervals that covered 48–79 % at 2–5 test positives."""
    from mlnb.metrics.auc_intervals import category_auc_intervals

    result = mlnb.study.run_study(load_config(None, SMALL))
    for run in result.models:
        expected = category_auc_intervals(result.Y_test, run.rank_scores, level=result.config.eval.confidence)
        np.testing.assert_allclose(run.auc_intervals, expected, equal_nan=True)
