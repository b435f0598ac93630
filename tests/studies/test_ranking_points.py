"""Sweeps and learning curves record the ranking metrics at k (P@j, nDCG@j, PSP@j) of every point, equal to
those of ``mlnb run`` at the same settings, in their tables, summaries and reports."""

import json

import numpy as np
import pandas as pd
import pytest

from mlnb.config import load_config
from mlnb.metrics.at_k import propensities, ranking_metrics, top_k_of_scores
from mlnb.report.ranking_points import curve_ranking_markdown, curve_ranking_plot, sweep_ranking_plot
from mlnb.report.results import write_curve
from mlnb.report.sweep import sweep_markdown, write_sweep
from mlnb.studies.curve import run_curve
from mlnb.studies.ranking import ranking_columns
from mlnb.studies.sweep import _in_memory_parts, run_sweep
from mlnb.study import prepare_data, run_on, run_study

# a small multilabel corpus: each study below fits in a second or two
SMALL = ["data.synthetic.n_documents=1000", "data.synthetic.n_features=600", "data.synthetic.n_categories=12",
         "eval.bootstrap=0", "report.plots=false"]
RANKED = ["P@1", "P@3", "P@5", "nDCG@1", "nDCG@3", "nDCG@5", "PSP@1", "PSP@3", "PSP@5"]


def test_ranking_columns_follow_eval_ranking_k_and_the_task():
    assert ranking_columns(load_config(None)) == tuple(RANKED)
    assert ranking_columns(load_config(None, ["eval.ranking_k=2"])) == ("P@1", "P@2", "nDCG@1", "nDCG@2",
                                                                          "PSP@1", "PSP@2")
    assert ranking_columns(load_config(None, ["eval.ranking_k=0"])) == ()
    assert ranking_columns(load_config("configs/iris.toml")) == ()  # multiclass: the run measures none


@pytest.fixture(scope="module")
def swept():
    config = load_config(None, SMALL + ["models.lr.enabled=false", "sweep.repeats=2"])
    return config, run_sweep(config, ["models.nb.alpha=0.1,1"])


def test_every_sweep_point_records_the_ranking_metrics_of_its_validation_part(swept):
    """Oracle: the study loop on the same fit and validation documents, then the metrics of ``mlnb.metrics.at_k``
    by another path (the propensities from the fit part's label matrix, not from its counts)."""
    config, result = swept
    assert result.ranking_metrics == tuple(RANKED)
    assert set(RANKED) <= set(result.table.columns) and set(RANKED) <= set(result.repeats.columns)
    dataset = prepare_data(config)[0]
    for r in range(2):
        fit, validation = _in_memory_parts(config, dataset, r)
        for i, alpha in enumerate([0.1, 1]):
            setting = load_config(None, SMALL + ["models.lr.enabled=false", f"models.nb.alpha={alpha}"])
            (run,) = run_on(setting, fit, validation, wanted=["nb"]).runs
            expected = ranking_metrics(validation.Y, top_k_of_scores(run.scores, 5)[0], ks=(1, 3, 5),
                                       propensity=propensities(fit.Y)).means
            row = result.repeats[(result.repeats["setting"] == i) & (result.repeats["repeat"] == r)].iloc[0]
            assert {m: row[m] for m in RANKED} == {m: expected[m] for m in RANKED}, (alpha, r)
    for i in range(2):  # a setting's row: the mean over its repeats, as for every recorded metric
        part = result.repeats[result.repeats["setting"] == i]
        for metric in RANKED:
            assert result.table[metric].iloc[i] == part[metric].mean()
    assert len(set(result.table["PSP@5"])) == 2  # the settings differ


def test_the_tested_setting_equals_mlnb_run_of_best_toml(swept):
    """The chosen setting's test: the numbers of ``mlnb run best.toml`` (``run_study``), to the last digit."""
    _, result = swept
    (run,) = run_study(result.best_config).models
    assert {m: result.test[m] for m in RANKED} == {m: run.ranking["metrics"][m] for m in RANKED}


def test_the_sweep_folder_carries_the_ranking(swept, tmp_path):
    _, result = swept
    folder = write_sweep(result, tmp_path)
    table = pd.read_csv(folder / "sweep.csv")
    np.testing.assert_allclose(table[RANKED].to_numpy(), result.table[RANKED].to_numpy(), rtol=1e-12)
    assert set(RANKED) <= set(pd.read_csv(folder / "repeats.csv").columns)
    assert set(RANKED) <= set(pd.read_csv(folder / "test.csv").columns)
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["ranking_at_k"]["ks"] == [1, 3, 5] and summary["ranking_at_k"]["metrics"] == RANKED
    assert summary["test"]["P@1"] == result.test["P@1"] and summary["best"]["nDCG@5"] == result.best["nDCG@5"]
    report = (folder / "report.md").read_text()
    assert "## Ranking at k (k = 5)" in report and "![ranking at k](plots/sweep_ranking.png)" in report
    main_table, ranking_section = report.split("## Ranking at k")
    assert "P@1" not in main_table  # a table of its own, not columns of the main one
    row = next(line for line in ranking_section.splitlines() if line.startswith("| 0.1 | "))
    assert f"| {result.table['P@1'].iloc[0]:.4f} |" in row and f"| {result.table['PSP@5'].iloc[0]:.4f} |" in row
    assert f"P@1 {result.test['P@1']:.4f}" in ranking_section
    assert (folder / "plots" / "sweep_ranking.png").stat().st_size > 10_000
    assert "Ranking at k" in (folder / "report.html").read_text()


@pytest.fixture(scope="module")
def curved():
    config = load_config(None, SMALL + ["models.lr.npasses=1", "curve.sizes=[100, 498]", "curve.seeds=1"])
    return config, run_curve(config)


def test_every_curve_point_records_the_ranking_metrics_and_the_full_size_equals_the_run(curved):
    """The whole training part with seed 0: the same documents, training seed and schedule as ``mlnb run``,
    so every model's ranking numbers are the run's, to the last digit."""
    config, result = curved
    assert result.ranking_metrics == tuple(RANKED) and set(RANKED) <= set(result.table.columns)
    study = run_study(config)
    assert study.data["n_train"] == 498
    for run in study.models:
        row = result.table[(result.table["model"] == run.name) & (result.table["size"] == 498)].iloc[0]
        assert {m: row[m] for m in RANKED} == {m: run.ranking["metrics"][m] for m in RANKED}, run.name
    small = result.table[result.table["size"] == 100]
    assert np.isfinite(small[RANKED].to_numpy(dtype=float)).all()
    assert (small["P@1"].to_numpy() != result.table.loc[result.table["size"] == 498, "P@1"].to_numpy()).any()
    (crossed,) = result.crossings.values()  # the compared pair's: where the mean curves cross, like the others'
    assert set(crossed) >= set(RANKED)


@pytest.mark.slow
def test_the_curve_folder_carries_the_ranking(curved, tmp_path):
    _, result = curved
    folder = write_curve(result, tmp_path)
    table = pd.read_csv(folder / "curve.csv")
    np.testing.assert_allclose(table[RANKED].to_numpy(), result.table[RANKED].to_numpy(), rtol=1e-12)
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["ranking_at_k"]["propensities"] == {"A": 0.55, "B": 1.5}
    report = (folder / "report.md").read_text()
    assert "## Ranking at k (k = 5)" in report and "![curve_ranking](plots/curve_ranking.png)" in report
    nb = result.table[(result.table["model"] == "nb") & (result.table["size"] == 498)].iloc[0]
    row = next(line for line in report.splitlines() if line.startswith("| nb | 498 | ") and "P@" not in line
               and f"{nb['nDCG@3']:.4f}" in line)
    assert f"| {nb['PSP@5']:.4f} |" in row
    assert (folder / "plots" / "curve_ranking.png").stat().st_size > 10_000
    assert "Ranking at k" in (folder / "report.html").read_text()


def test_multiclass_sweeps_and_curves_measure_no_ranking(tmp_path):
    """As ``mlnb run`` measures none for one class per document, neither does a sweep or a curve."""
    settings = ["eval.bootstrap=0", "report.plots=false", "sweep.repeats=2", "models.lr.npasses=5"]
    config = load_config("configs/iris.toml", settings)
    swept = run_sweep(config, ["models.lr.lrate=0.1,0.3"])
    assert swept.ranking_metrics == () and not set(RANKED) & set(swept.table.columns)
    assert not set(RANKED) & set(swept.test)
    assert "Ranking at k" not in sweep_markdown(swept) and sweep_ranking_plot(swept, tmp_path / "s.png") is None
    curve = run_curve(load_config("configs/iris.toml", settings + ["curve.sizes=[40, 75]", "curve.seeds=1",
                                                                   'curve.schedule="as_config"']))
    assert curve.ranking_metrics == () and not set(RANKED) & set(curve.table.columns)
    assert curve_ranking_markdown(curve) == [] and curve_ranking_plot(curve, tmp_path / "c.png") is None
    assert not list(tmp_path.iterdir())

