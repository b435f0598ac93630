"""`mlnb compare` and the in-run comparison: DeLong per category, Holm, sign test."""

import json

import pandas as pd
import pytest
from typer.testing import CliRunner

from mlnb.cli import app

SMALL = ["--set", "data.synthetic.n_documents=3000", "--set", "data.synthetic.n_features=2000", "--quiet"]


def run(tmp_path, *extra):
    result = CliRunner().invoke(app, ["run", "configs/quickstart.toml", "--out", str(tmp_path), *SMALL, *extra])
    assert result.exit_code == 0, result.output
    return sorted((tmp_path / "quickstart").iterdir())[-1]


@pytest.mark.slow
def test_run_includes_a_paired_comparison(tmp_path):
    folder = run(tmp_path)
    table = pd.read_csv(folder / "comparison.csv")
    (summary,) = json.loads((folder / "summary.json").read_text())["comparisons"]
    assert len(table) == 103 and set(table["a"]) == {"lr"} and set(table["b"]) == {"nb"}
    assert (summary["a"], summary["b"]) == ("lr", "nb")
    defined = table["p_value"].notna()
    assert (table.loc[defined, "p_holm"] >= table.loc[defined, "p_value"]).all()
    counts = [summary[k] for k in ("a_significantly_better", "b_significantly_better",
                                   "no_significant_difference", "not_testable")]
    assert sum(counts) == 103
    assert (folder / "plots" / "auc_difference_lr_vs_nb.png").is_file() and (folder / "scores.npz").is_file()


@pytest.mark.slow
def test_explicit_pairs_of_several_models(tmp_path):
    folder = run(tmp_path, "--set", "models.cnb.kind=naive_bayes", "--set", "models.cnb.event_model=bernoulli",
                 "--set", 'report.compare=[["lr", "nb"], ["cnb", "lr"]]')
    table = pd.read_csv(folder / "comparison.csv")
    assert sorted(set(zip(table["a"], table["b"]))) == [("cnb", "lr"), ("lr", "nb")]
    assert {p.name for p in (folder / "plots").glob("auc_*_vs_*.png")} == {
        "auc_difference_lr_vs_nb.png", "auc_scatter_lr_vs_nb.png",
        "auc_difference_cnb_vs_lr.png", "auc_scatter_cnb_vs_lr.png"}
    report = (folder / "report.md").read_text()
    assert "## Paired comparison: cnb (a) against lr (b)" in report


@pytest.mark.slow
def test_no_pairs_when_paired_tests_are_off(tmp_path):
    folder = run(tmp_path, "--set", "report.paired_tests=false")
    assert not (folder / "comparison.csv").exists() and not list((folder / "plots").glob("auc_difference*"))


@pytest.mark.slow
def test_compare_two_runs_and_within_one(tmp_path):
    first = run(tmp_path / "a")
    second = run(tmp_path / "b", "--set", "models.lr.lrate=0.05")
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["compare", str(first), str(second), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "sign test" in result.output
    (folder,) = (out / "compare").iterdir()
    assert (folder / "comparison.csv").is_file() and (folder / "plots" / "auc_difference.png").is_file()
    within = CliRunner().invoke(app, ["compare", str(first), "--out", str(out)])
    assert within.exit_code == 0, within.output
    assert "a = Logistic regression" in within.output and "b = Naive Bayes" in within.output  # lr − nb
    unknown = CliRunner().invoke(app, ["compare", str(first), "--model-a", "svm", "--out", str(out)])
    assert unknown.exit_code == 2 and "no model 'svm'; it has nb, lr" in unknown.output
    itself = CliRunner().invoke(app, ["compare", str(first), "--model-a", "nb", "--out", str(out)])
    assert itself.exit_code == 2 and "model 'nb' against itself" in itself.output


@pytest.mark.slow
def test_compare_refuses_different_test_documents(tmp_path):
    first = run(tmp_path / "a")
    other = run(tmp_path / "b", "--set", "seed=5")
    result = CliRunner().invoke(app, ["compare", str(first), str(other), "--out", str(tmp_path / "out")])
    assert result.exit_code == 2 and "different test documents" in result.output
    missing = CliRunner().invoke(app, ["compare", str(tmp_path / "nowhere")])
    assert missing.exit_code == 2 and "no such results folder" in missing.output


def test_damaged_scores_file_is_a_one_line_error(tmp_path):
    folder = tmp_path / "broken"
    folder.mkdir()
    (folder / "scores.npz").write_bytes(b"PK\x03\x04 not really a zip")
    result = CliRunner().invoke(app, ["compare", str(folder), "--out", str(tmp_path / "out")])
    assert result.exit_code == 2 and "not a readable mlnb scores file" in result.output


@pytest.mark.slow
def test_compare_leaves_out_what_the_run_left_out(tmp_path):
    """Categories without training positives, excluded by the run, stay excluded in `mlnb compare`."""
    folder = run(tmp_path)
    in_run = pd.read_csv(folder / "comparison.csv")
    result = CliRunner().invoke(app, ["compare", str(folder), "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    (again,) = (tmp_path / "out" / "compare").iterdir()
    later = pd.read_csv(again / "comparison.csv")
    pd.testing.assert_series_equal(in_run["p_holm"], later["p_holm"])
