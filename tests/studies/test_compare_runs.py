"""`mlnb compare` of two runs: run-qualified names ('runA:lr' against 'runB:lr'), the config diff at the
top of the report, and a default pairing that never pairs two identical models."""

import dataclasses
import json
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from mlnb.cli import app
from mlnb.errors import MlnbError
from mlnb.studies.compare import default_pair, load_scores, run_tags

TINY = ["--set", "data.synthetic.n_documents=800", "--set", "data.synthetic.n_features=400", "--set",
        "data.synthetic.n_categories=12", "--set", "report.category=1", "--set", "eval.bootstrap=0", "--set",
        "report.plots=false", "--quiet"]
NB_AGAIN = ["--set", "models.nb2.kind=naive_bayes", "--set", "models.nb2.alpha=0.5", "--set",
            "models.nb2.binarize=true"]  # the quickstart's nb once more


def run(out: Path, *extra) -> Path:
    result = CliRunner().invoke(app, ["run", "configs/quickstart.toml", "--out", str(out), *TINY, *extra])
    assert result.exit_code == 0, result.output
    return Path(result.output.strip().splitlines()[-1].removeprefix("results: "))


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    return run(root / "a"), run(root / "b", "--set", "models.lr.lrate=0.05")


def test_two_runs_pair_the_model_that_differs_with_qualified_names(runs, tmp_path):
    first, second = runs
    result = CliRunner().invoke(app, ["compare", str(first), str(second), "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    tag_a, tag_b = run_tags(first, second)
    name_a, name_b = f"{tag_a}:lr", f"{tag_b}:lr"  # nb is the same model in both runs: never paired
    assert f"({name_a})" in result.output and f"({name_b})" in result.output
    (folder,) = (tmp_path / "compare").iterdir()
    summary = json.loads((folder / "summary.json").read_text())
    assert (summary["a"], summary["b"]) == (name_a, name_b)
    assert summary["config_diff"] == [{"key": "model.lrate", "a": 0.3, "b": 0.05}]
    table = pd.read_csv(folder / "comparison.csv")
    assert set(table["a"]) == {name_a} and set(table["b"]) == {name_b}
    report = (folder / "report.md").read_text()
    assert report.index("## What differs") < report.index("## Paired comparison")
    assert f"| key | {name_a} | {name_b} |" in report and "| model.lrate | 0.3 | 0.05 |" in report
    assert f"## Paired comparison: {name_a} (a) against {name_b} (b)" in report
    assert (folder / "report.html").is_file()


def test_run_tags_are_the_shortest_tails_that_differ(tmp_path):
    assert run_tags(tmp_path / "q" / "20260101-000000", tmp_path / "q" / "20260101-000001") == (
        "20260101-000000", "20260101-000001")
    assert run_tags(tmp_path / "a" / "q" / "t", tmp_path / "b" / "q" / "t") == ("a/q/t", "b/q/t")
    assert run_tags(tmp_path / "t", tmp_path / "t") == ("t-A", "t-B")


def test_identical_runs_pair_different_models(runs, tmp_path):
    first, _ = runs
    copy = run(tmp_path / "copy")  # the same config again: nb = nb and lr = lr
    assert default_pair(load_scores(first), load_scores(copy)) == ("nb", "lr")


def test_within_one_run_identical_models_are_skipped(tmp_path):
    twins = load_scores(run(tmp_path / "twins", "--set", "models.lr.enabled=false", *NB_AGAIN, "--set",
                            "models.nb3.kind=naive_bayes", "--set", "models.nb3.alpha=0.1", "--set",
                            "models.nb3.binarize=true"))
    assert list(twins.scores) == ["nb", "nb2", "nb3"]
    assert default_pair(twins) == ("nb3", "nb")  # not (nb2, nb) nor (nb, nb2): the same model twice
    same = dataclasses.replace(twins, scores={key: twins.scores[key] for key in ("nb", "nb2")})
    with pytest.raises(MlnbError, match="every pair of models is the same model.*--model-a/--model-b"):
        default_pair(same)


def test_comparing_two_runs_gives_the_paired_bootstrap_interval_of_their_first_config(tmp_path):
    """`mlnb compare` resamples as the first run's own comparisons did (its eval.bootstrap, seed and
    eval.confidence): the macro-AUC difference comes with its paired bootstrap interval, which holds it."""
    from mlnb.studies.compare import compare_runs

    boot = [arg if arg != "eval.bootstrap=0" else "eval.bootstrap=50" for arg in TINY]
    first = CliRunner().invoke(app, ["run", "configs/quickstart.toml", "--out", str(tmp_path / "a"), *boot])
    second = CliRunner().invoke(app, ["run", "configs/quickstart.toml", "--out", str(tmp_path / "b"), *boot,
                                      "--set", "models.lr.lrate=0.05"])
    assert first.exit_code == 0 and second.exit_code == 0, first.output + second.output
    folders = [Path(r.output.strip().splitlines()[-1].removeprefix("results: ")) for r in (first, second)]
    comparison = compare_runs(load_scores(folders[0]), "lr", load_scores(folders[1]), "lr")
    low, high = comparison.macro_interval
    assert low <= comparison.macro_difference <= high and comparison.level == 0.95
