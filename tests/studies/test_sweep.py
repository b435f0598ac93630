"""Sweeps score settings on a validation split of the training part and never read the test part."""

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from mlnb import MlnbError
from mlnb.cli import app
from mlnb.config import load_config
from mlnb.data.dataset import Dataset
from mlnb.studies.sweep import parse_params, run_sweep, validation_split

SMALL = ["data.synthetic.n_documents=2500", "data.synthetic.n_features=1500", "data.synthetic.n_categories=12"]


def test_parse_params():
    assert parse_params(["models.lr.lrate=0.1, 0.3", "models.nb.event_model=multinomial,bernoulli"]) == {
        "models.lr.lrate": [0.1, 0.3], "models.nb.event_model": ["multinomial", "bernoulli"]}
    with pytest.raises(MlnbError, match="only models.<name>.\\* keys"):
        parse_params(["data.test_fraction=0.1,0.2"])
    with pytest.raises(MlnbError, match="expected 'key=v1,v2,...'"):
        parse_params(["models.lr.lrate"])


def test_sweep_selects_without_reading_the_test_part(small_corpus):
    """NaN in every test document: any read of the test part would fail loudly; the selection (every
    repeat of every setting) never reads it, only the final test of the chosen setting does."""
    X = small_corpus.X.copy()
    test_rows = np.isin(np.repeat(np.arange(X.shape[0]), np.diff(X.indptr)), small_corpus.test_index)
    X.data[test_rows] = np.nan
    poisoned = Dataset(X=X, Y=small_corpus.Y, category_names=small_corpus.category_names,
                       train_index=small_corpus.train_index, test_index=small_corpus.test_index)
    config = load_config(None, ["sweep.metric=auc", "sweep.category=0", "sweep.test=false"])
    result = run_sweep(config, ["models.nb.alpha=0.1,1.0", "models.nb.event_model=multinomial,bernoulli"], dataset=poisoned)
    assert len(result.table) == 4 and result.model == "nb" and not result.test
    assert result.best["auc"] == result.table["auc"].max()
    assert result.n_fit + result.n_validation == small_corpus.train_index.size
    with pytest.raises(MlnbError, match="feature value nan"):  # the test: read once, after the choice
        run_sweep(load_config(None, ["sweep.metric=auc", "sweep.category=0"]), ["models.nb.alpha=0.1,1.0"],
                  dataset=poisoned)


@pytest.mark.parametrize("decide", [["eval.decision=scutfbr"], ["eval.decision=scut", "eval.validation=kfold",
                                                                 "eval.folds=3"], ["eval.calibration=platt"]])
def test_decision_rules_and_calibration_never_read_the_test_part(small_corpus, decide):
    """Thresholds and calibration learn from held-out training documents: NaN in every test document
    changes nothing, in a sweep (the validation part is its evaluation set) as in a run."""
    X = small_corpus.X.copy()
    test_rows = np.isin(np.repeat(np.arange(X.shape[0]), np.diff(X.indptr)), small_corpus.test_index)
    X.data[test_rows] = np.nan
    poisoned = Dataset(X=X, Y=small_corpus.Y, category_names=small_corpus.category_names,
                       train_index=small_corpus.train_index, test_index=small_corpus.test_index)
    config = load_config(None, decide + ["models.lr.npasses=1", "sweep.test=false", "sweep.repeats=2"])
    clean = run_sweep(config, ["models.nb.alpha=0.1,1.0"], dataset=small_corpus)
    dirty = run_sweep(config, ["models.nb.alpha=0.1,1.0"], dataset=poisoned)
    pd.testing.assert_frame_equal(clean.table.drop(columns="fit_seconds"), dirty.table.drop(columns="fit_seconds"))


def test_validation_split_is_inside_the_training_part(small_corpus):
    split = validation_split(small_corpus, 0.25, seed=3)
    assert set(split.test_index) | set(split.train_index) == set(small_corpus.train_index)
    assert not set(split.test_index) & set(small_corpus.test_index)


@pytest.mark.slow
def test_sweep_command_end_to_end_with_heatmap(tmp_path):
    args = ["sweep", "configs/quickstart.toml", "--out", str(tmp_path), "--quiet",
            "--param", "models.lr.lrate=0.1,0.3", "--param", "models.lr.batch_size=100,500",
            "--set", "sweep.metric=auc", "--set", "sweep.category=0"] + [a for s in SMALL for a in ("--set", s)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    (folder,) = (tmp_path / "quickstart-sweep").iterdir()
    assert (folder / "sweep.csv").is_file() and (folder / "plots" / "sweep.png").is_file()
    assert "best: models.lr.lrate = " in result.output


@pytest.mark.parametrize("extra, message", [
    (["--set", "sweep.metric=auc"], "needs a category >= 0"),
    (["--param", "models.lr.lrate=0.1", "--param", "models.nb.alpha=1,2"], "sweeps keys of several models \\(lr, nb\\)"),
    (["--param", "models.lr.lrate=0,1"], "models.lr.lrate: expected a value > 0"),
])
def test_sweep_errors(tmp_path, extra, message):
    args = ["sweep", "configs/quickstart.toml", "--out", str(tmp_path), "--quiet"] + \
        (extra if "--param" in extra else ["--param", "models.lr.lrate=0.1,0.3", *extra]) + \
        [a for s in SMALL for a in ("--set", s)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output
    import re
    assert re.search(message, result.output), result.output


@pytest.mark.slow
def test_diverging_setting_is_recorded_not_fatal_and_init_nb_is_used(small_corpus):
    config = load_config(None, ["models.lr.updater=sgd", "models.lr.batch_size=200"])
    result = run_sweep(config, ["models.lr.lrate=0.1,1e38"], dataset=small_corpus)
    bad = result.table[result.table["models.lr.lrate"] == 1e38].iloc[0]
    assert np.isnan(bad["macro_auc"]) and ("overflowed" in bad["error"] or "diverged" in bad["error"])
    assert result.best["models.lr.lrate"] == 0.1
    warm = run_sweep(load_config(None, ["models.lr.batch_size=200"]), ['models.lr.init_from="",nb'],
                     dataset=small_corpus)
    assert warm.table["macro_auc"].nunique() == 2


def test_keys_of_idle_or_missing_models_are_refused(small_corpus):
    with pytest.raises(MlnbError, match="model 'lr' is not an enabled model of the study"):
        run_sweep(load_config(None, ["models.lr.enabled=false"]), ["models.lr.lrate=0.1,0.3"], dataset=small_corpus)
    with pytest.raises(MlnbError, match="does nothing while models.lr.lrate_per_category is set"):
        run_sweep(load_config(None, ["models.lr.lrate_per_category=[0.1, 0.2]"]), ["models.lr.lrate=0.1,0.3"],
                  dataset=small_corpus)
    with pytest.raises(MlnbError, match="sweep.params: models.nb.event_model: expected one of"):
        run_sweep(load_config(None), ["models.nb.event_model=bernoulli,foo"], dataset=small_corpus)
    with pytest.raises(MlnbError, match=r"\[models.cnb\] has no 'kind'"):
        run_sweep(load_config(None), ["models.cnb.alpha=1,2"], dataset=small_corpus)


def test_a_key_the_deciding_model_does_not_use_is_refused(small_corpus):
    config = load_config(None, ["sweep.model=lr"])
    with pytest.raises(MlnbError, match="models.nb.alpha does nothing to the deciding model 'lr'"):
        run_sweep(config, ["models.nb.alpha=0.1,1"], dataset=small_corpus)
    warm = load_config(None, ["sweep.model=lr", "models.lr.init_from=nb", "models.lr.npasses=1"])
    result = run_sweep(warm, ["models.nb.alpha=0.1,1"], dataset=small_corpus)  # lr starts from nb: it counts
    assert result.table["macro_auc"].nunique() == 2


def test_sweep_any_model_of_a_four_model_study(small_corpus, monkeypatch):
    """A key of the third model is swept; only that model is fitted and it decides."""
    config = load_config(None, ["models.cnb.kind=naive_bayes", "models.cnb.event_model=bernoulli",
                                "models.sk.kind=sklearn_sgd"])
    import mlnb.study.fitting

    fitted = []
    real = mlnb.study.fitting.get_kind

    def spy(name):
        fitted.append(name)
        return real(name)

    monkeypatch.setattr(mlnb.study.fitting, "get_kind", spy)
    result = run_sweep(config, ["models.cnb.alpha=0.1,1"], dataset=small_corpus)
    assert result.model == "cnb" and len(result.table) == 2
    # cnb once per setting and repeat, once more for the test of the chosen setting, and nothing else
    assert fitted == ["naive_bayes"] * (2 * config.sweep.repeats + 1)
    assert result.table["macro_auc"].nunique() == 2
