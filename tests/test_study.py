"""The one study loop: every command runs every model through it and honours every eval.* key."""

import dataclasses

import pandas as pd
import pytest
from typer.testing import CliRunner

import mlnb.study
from mlnb.cli import app
from mlnb import MlnbError
from mlnb.config import EvalConfig, load_config
from mlnb.study import run_models

SMALL = ["data.synthetic.n_documents=2000", "data.synthetic.n_features=1500", "data.synthetic.n_categories=12",
         "models.lr.npasses=1", "report.category=0"]
COMMANDS = {
    "run": [],
    "sweep": ["--param", "models.nb.alpha=0.5,1"],
    "curve": ["--set", "curve.sizes=[300, 900]", "--set", "curve.seeds=1"],
}


def _non_default(f: dataclasses.Field):
    """A valid value of an eval.* key that differs from its default."""
    default = f.default
    if isinstance(default, bool):
        return not default
    if isinstance(default, float):
        return 0.9 if default != 0.9 else 0.7
    if isinstance(default, int):
        return default + 6
    raise AssertionError(f"eval.{f.name}: teach this test a non-default value for {type(default).__name__}")


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("key", [f.name for f in dataclasses.fields(EvalConfig)])
def test_every_command_honours_every_eval_key(command, key, tmp_path, monkeypatch):
    """Spy on evaluate inside the loop: each call must get the eval.* value the user set."""
    value = _non_default(next(f for f in dataclasses.fields(EvalConfig) if f.name == key))
    seen = []
    real = mlnb.study.evaluate

    def spy(*args, **kwargs):
        seen.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(mlnb.study, "evaluate", spy)
    args = [command, "configs/quickstart.toml", "--out", str(tmp_path), "--quiet", *COMMANDS[command],
            *[a for s in SMALL + [f"eval.{key}={str(value).lower()}"] for a in ("--set", s)]]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert seen and all(call[key] == value for call in seen)


def test_curve_micro_f1_follows_the_threshold(tmp_path):
    """The bug that motivated one loop: `mlnb curve` used to ignore eval.threshold."""
    f1 = {}
    for threshold in (0.5, 0.9):
        out = tmp_path / str(threshold)
        args = ["curve", "configs/quickstart.toml", "--out", str(out), "--quiet", *COMMANDS["curve"],
                *[a for s in SMALL + [f"eval.threshold={threshold}"] for a in ("--set", s)]]
        assert CliRunner().invoke(app, args).exit_code == 0
        (folder,) = (out / "quickstart-curve").iterdir()
        f1[threshold] = pd.read_csv(folder / "curve.csv").set_index(["model", "size"])["micro_f1"]
    assert (f1[0.5] != f1[0.9]).all()


def test_run_models_fits_what_a_wanted_model_starts_from(small_corpus):
    config = load_config(None, ["models.lr.init_from=nb", "models.lr.npasses=1",
                                "models.cnb.kind=naive_bayes", "models.cnb.event_model=complement"])
    X, Y = small_corpus.X_train, small_corpus.Y_train
    (run,) = run_models(config, X, Y, small_corpus.X_test, small_corpus.Y_test, small_corpus.category_names,
                        wanted=["lr"])
    assert run.name == "lr" and run.scores.shape == small_corpus.Y_test.shape
    with pytest.raises(MlnbError, match="no enabled model 'svm' in the study"):
        run_models(config, X, Y, small_corpus.X_test, small_corpus.Y_test, wanted=["svm"], category_names=None)
    assert run.label == "Logistic regression (adagrad, all categories, from nb)"


def test_equal_labels_get_the_model_name():
    config = load_config(None, ["models.nb2.kind=naive_bayes"])
    assert mlnb.study.model_labels(config) == {"nb": "Naive Bayes (multinomial) [nb]",
                                               "lr": "Logistic regression (adagrad, all categories)",
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
