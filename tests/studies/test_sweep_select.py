"""Sweeps that select and test: repeated validation splits, a rule that accounts for their spread,
best.toml, and one test of the chosen setting refitted on the whole training part."""

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from mlnb import MlnbError
from mlnb.cli import app
from mlnb.config import load_config
from mlnb.study.documents import Bucket
from mlnb.study import in_memory_documents, run_on
from mlnb.features import FeatureTransform
from mlnb.studies.sweep import choose, run_sweep, validation_split

SMALL = ["data.synthetic.n_documents=2500", "data.synthetic.n_features=1500", "data.synthetic.n_categories=12"]


def _table(means, ses, metric="macro_auc"):
    return pd.DataFrame({metric: means, f"{metric}_se": ses})


def test_choose_best_and_one_standard_error():
    table = _table([0.80, 0.84, 0.86, np.nan], [0.01, 0.01, 0.03, np.nan])
    assert choose(table, "macro_auc", "best") == (2, 2)
    # within one se (0.03) of 0.86: 0.84 is, 0.80 is not; the first such in grid order is chosen
    assert choose(table, "macro_auc", "one_standard_error") == (1, 2)
    losses = _table([0.27, 0.25, 0.30], [0.01, 0.03, 0.01], "log_loss")  # lower is better
    assert choose(losses, "log_loss", "best") == (1, 1)
    assert choose(losses, "log_loss", "one_standard_error") == (0, 1)  # 0.27 ≤ 0.25 + 0.03
    assert choose(_table([0.27, 0.25], [0.01, 0.01], "log_loss"), "log_loss", "one_standard_error") == (1, 1)


@pytest.fixture
def swept(small_corpus):
    config = load_config(None, ["sweep.repeats=3", "sweep.rule=one_standard_error"])
    return config, run_sweep(config, ["models.nb.alpha=0.01,0.1,1"], dataset=small_corpus)


def test_repeats_are_the_seeded_sweep_buckets(small_corpus):
    ids = small_corpus.ids[small_corpus.train_index]
    parts = [validation_split(small_corpus, 0.25, seed=3, repeat=r) for r in range(3)]
    for r, part in enumerate(parts):
        held = Bucket(3 + r, "sweep", 0.0, 0.25).mask(ids)
        np.testing.assert_array_equal(part.test_index, small_corpus.train_index[held])
        np.testing.assert_array_equal(part.train_index, small_corpus.train_index[~held])
    assert len({tuple(p.test_index) for p in parts}) == 3  # different documents each repeat


def test_spread_and_choice_follow_the_repeats(swept):
    config, result = swept
    repeats = result.repeats
    assert len(repeats) == 3 * 3 and set(repeats["repeat"]) == {0, 1, 2}
    for i, row in result.table.iterrows():
        values = repeats.loc[repeats["setting"] == i, "macro_auc"].to_numpy()
        assert row["macro_auc"] == pytest.approx(values.mean())
        assert row["macro_auc_sd"] == pytest.approx(np.std(values, ddof=1))
        assert row["macro_auc_se"] == pytest.approx(np.std(values, ddof=1) / np.sqrt(3))
        assert row["repeats"] == 3
    assert len(set(repeats.groupby("repeat")["macro_auc"].mean().round(10))) == 3  # the splits differ
    chosen, best = choose(result.table, "macro_auc", "one_standard_error")
    assert result.best["models.nb.alpha"] == result.table["models.nb.alpha"][chosen]
    assert result.best_mean["macro_auc"] == result.table["macro_auc"].max()
    assert result.best_config.models["nb"].options.alpha == result.best["models.nb.alpha"]


def test_test_metrics_are_the_refitted_setting_on_the_test_part(swept, small_corpus):
    """Oracle: the study loop run directly on the whole training part and the test part."""
    config, result = swept
    best = result.best_config
    features = FeatureTransform(best.features.transform, best.features.min_df, best.features.max_features)
    features.fit(small_corpus.X_train)
    train, test = in_memory_documents(best, small_corpus, features)
    (run,) = run_on(best, train, test, wanted=["nb"]).runs
    assert result.test["value"] == pytest.approx(run.evaluation.summary["macro_auc"], abs=1e-12)
    assert result.test["n_train"] == small_corpus.train_index.size
    assert result.test["n_test"] == small_corpus.test_index.size


@pytest.mark.slow
def test_sweep_command_writes_best_toml_that_runs_the_tested_setting(tmp_path):
    args = ["sweep", "configs/quickstart.toml", "--out", str(tmp_path / "s"), "--quiet",
            "--param", "models.nb.alpha=0.05,0.5", "--set", "sweep.repeats=2"] + [a for s in SMALL for a in ("--set", s)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    (folder,) = (tmp_path / "s" / "quickstart-sweep").iterdir()
    for name in ("sweep.csv", "repeats.csv", "best.toml", "test.csv", "report.md", "plots/sweep.png"):
        assert (folder / name).is_file(), name
    test = pd.read_csv(folder / "test.csv").iloc[0]
    best = load_config(folder / "best.toml")
    assert best.models["nb"].options.alpha == test["models.nb.alpha"]
    assert {"validation_mean", "validation_sd", "value"} <= set(test.index)
    run = CliRunner().invoke(app, ["run", str(folder / "best.toml"), "--out", str(tmp_path / "r"), "--quiet",
                                   "--set", "eval.bootstrap=0"])
    assert run.exit_code == 0, run.output
    import json

    (saved,) = (tmp_path / "r").rglob("summary.json")
    assert json.loads(saved.read_text())["models"]["nb"]["macro_auc"] == pytest.approx(test["value"], abs=1e-12)
    assert "test: macro_auc" in result.output and "rule best" in result.output


@pytest.mark.parametrize("setting, message", [
    ("sweep.rule=median", "sweep.rule: expected one of 'best', 'one_standard_error'"),
    ("sweep.repeats=0", "sweep.repeats: expected a value >= 1"),
])
def test_sweep_keys_are_validated(setting, message):
    with pytest.raises(MlnbError, match=message):
        load_config(None, [setting])
