"""Single-label studies end to end: task = "multiclass" from config to report, and its bad input."""

import json
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from mlnb import MlnbError
from mlnb.cli import app
from mlnb.config import load_config

ROOT = Path(__file__).resolve().parents[1]
TWEETS = ROOT.parent / "shared" / "data" / "tweets"


def run(*args):
    result = CliRunner().invoke(app, [str(a) for a in args])
    return result


@pytest.mark.slow
def test_iris_gaussian_nb_against_softmax_lr(tmp_path):
    result = run("run", ROOT / "configs" / "iris.toml", "--out", tmp_path, "--quiet")
    assert result.exit_code == 0, result.output
    assert "McNemar, lr against gnb" in result.output
    (folder,) = (tmp_path / "iris").iterdir()
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["task"] == "multiclass"
    for name in ("gnb", "lr"):
        assert summary["models"][name]["accuracy"] > 0.85  # iris is easy for both
    confusion = pd.read_csv(folder / "confusion.csv")
    assert confusion.groupby("model")["count"].sum().tolist() == [75, 75]
    assert (folder / "plots" / "confusion_gnb.png").is_file() and (folder / "plots" / "confusion_lr.png").is_file()
    (comparison,) = summary["comparisons"]
    assert comparison["mcnemar"]["p_value"] <= 1.0
    report = (folder / "report.md").read_text()
    assert "Task: multiclass" in report and "McNemar's test" in report


@pytest.mark.slow
def test_compare_two_saved_multiclass_runs_pairs_their_decisions(tmp_path):
    for seed_out in ("a", "b"):
        assert run("run", ROOT / "configs" / "iris.toml", "--out", tmp_path / seed_out, "--quiet",
                   "--set", f"models.lr.lrate={0.3 if seed_out == 'a' else 0.1}").exit_code == 0
    (a,) = (tmp_path / "a" / "iris").iterdir()
    (b,) = (tmp_path / "b" / "iris").iterdir()
    result = run("compare", a, b, "--model-a", "lr", "--out", tmp_path / "out")
    assert result.exit_code == 0, result.output
    (folder,) = (tmp_path / "out" / "compare").iterdir()
    assert "mcnemar" in json.loads((folder / "summary.json").read_text())


@pytest.mark.slow
def test_multiclass_sweep_and_curve(tmp_path):
    sweep = run("sweep", ROOT / "configs" / "iris.toml", "--out", tmp_path, "--quiet",
                "--param", "models.gnb.var_smoothing=1e-9,1e-3", "--set", "sweep.metric=accuracy")
    assert sweep.exit_code == 0, sweep.output
    curve = run("curve", ROOT / "configs" / "iris.toml", "--out", tmp_path, "--quiet",
                "--set", "curve.sizes=[15, 40, 75]", "--set", "curve.seeds=2")
    assert curve.exit_code == 0, curve.output
    (folder,) = (tmp_path / "iris-curve").iterdir()
    assert {"macro_auc", "accuracy", "log_loss"} <= set(pd.read_csv(folder / "curve.csv").columns)


@pytest.mark.parametrize("overrides, message", [
    (["data.source=synthetic"], "data.source = 'synthetic' is multilabel"),
    (["models.sk.kind=sklearn_sgd"], "models.sk: kind 'sklearn_sgd' does not do task = 'multiclass'"),
    (["models.nblr.kind=nb_logistic"], "kind 'nb_logistic' does not do task = 'multiclass'"),
    (["data.source=text", "data.text.path=x.csv", "data.text.labels=multi"], "data.text.labels = 'multi'"),
    (["data.source=text", "data.text.path=x.csv", "data.text.negative_labels=['ham']"],
     "every label is a class"),
    (["eval.untrainable=prior"], "eval.untrainable = 'prior' replaces one-vs-rest scores"),
    (["eval.decision=scut"], "decides by the most probable class"),
])
def test_what_cannot_be_multiclass_is_refused_at_load(overrides, message):
    with pytest.raises(MlnbError, match=message):
        load_config(ROOT / "configs" / "iris.toml", overrides)


def test_a_multilabel_file_given_to_a_multiclass_task(tmp_path):
    data = tmp_path / "labels.svm"
    data.write_text("0 1:1 2:1\n1 2:2\n0,1 1:1 3:1\n1 3:1\n" * 5)
    result = run("run", ROOT / "configs" / "iris.toml", "--out", tmp_path / "out", "--quiet",
                 "--set", "data.source=svmlight", "--set", f"data.svmlight.path={data}",
                 "--set", "models.gnb.event_model=multinomial", "--set", "report.category=0")
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and f"{data}:3: document has labels '0', '1'; task = 'multiclass'" in lines[0]
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").rglob("*.csv"))
    streamed = run("run", ROOT / "configs" / "iris.toml", "--out", tmp_path / "out", "--quiet",
                   "--set", "data.source=svmlight", "--set", f"data.svmlight.path={data}", "--set", "data.streaming=true",
                   "--set", "models.gnb.event_model=multinomial", "--set", "report.category=0",
                   "--set", "models.lr.enabled=false", "--set", 'report.category_name=""')
    assert streamed.exit_code == 2 and streamed.output.strip() == result.output.strip()  # the same line


@pytest.mark.slow
@pytest.mark.parametrize("config", ["tweets_dtm.toml", "tweets.toml"])
def test_tweets_configs(config, tmp_path):
    if not TWEETS.is_dir():
        pytest.skip(f"real data not found at {TWEETS}")
    result = run("run", ROOT / "configs" / config, "--out", tmp_path, "--quiet", "--set", "models.lr.npasses=2")
    assert result.exit_code == 0, result.output
    (folder,) = (tmp_path / Path(config).stem).iterdir()
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["data"]["n_documents"] == 14640 and summary["data"]["n_categories"] == 3
    for model in summary["models"].values():
        assert model["accuracy"] > 0.70  # the majority class alone is 0.627


def test_a_bundled_split_that_leaves_a_class_out_is_one_line(tmp_path):
    result = run("run", ROOT / "configs" / "iris.toml", "--out", tmp_path, "--quiet", "--set", "data.test_fraction=0.99")
    assert result.exit_code == 2
    assert "data.test_fraction = 0.99: iris has 150 samples in 3 classes" in result.output.strip().splitlines()[0]
