"""The curve tables (curves/roc_grid.csv, curves/lift_grid.csv) hold the categories whose curves are defined
(a positive and a negative test document), with the same rows as before for those; the report says how many
were left out and why; the memory estimate counts the tables by eval.roc_points and the categories that have
curves."""

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from mlnb.budget import CURVE_ROW_BYTES, estimate
from mlnb.config import load_config
from mlnb.data.shape import DataShape
from mlnb.metrics import evaluate
from mlnb.report.markdown import study_markdown
from mlnb.report.results import _write_csv, write_results
from mlnb.report.tables import curve_frames, curves_left_out_sentence
from mlnb.study import run_study


def _result(n_categories: int = 9, roc_points: int = 21):
    """Two models' evaluations of 300 documents × n_categories: category 5 never positive, 6 always."""
    rng = np.random.default_rng(1)
    prevalence = np.resize([0.4, 0.2, 0.1, 0.05, 0.02, 0.0, 1.0, 0.3, 0.01], n_categories)
    Y = rng.random((300, n_categories)) < prevalence
    models = []
    for name, noise in (("nb", 1.0), ("lr", 0.5)):
        scores = np.round(rng.normal(0, noise, Y.shape) + 1.5 * Y, 2).astype(np.float32)
        models.append(SimpleNamespace(name=name, evaluation=evaluate(Y, scores, roc_points=roc_points)))
    return SimpleNamespace(models=models)


def _every_category(result) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The tables as they were made before undefined curves were left out: every category of every model."""
    roc, lift = [], []
    for run in result.models:
        ev = run.evaluation
        K, G = ev.roc_tpr.shape
        category, x = np.repeat(np.arange(K), G), np.tile(ev.grid, K)
        roc_lift = np.hstack([np.full((K, 1), np.nan), ev.roc_lift]).ravel()
        depth_lift = np.hstack([np.full((K, 1), np.nan), ev.depth_lift]).ravel()
        roc.append(pd.DataFrame({"model": run.name, "category": category, "fpr": x, "tpr": ev.roc_tpr.ravel(),
                                 "roc_lift": roc_lift}))
        lift.append(pd.DataFrame({"model": run.name, "category": category, "depth": x, "gains": ev.gains.ravel(),
                                  "lift": depth_lift}))
    return pd.concat(roc, ignore_index=True), pd.concat(lift, ignore_index=True)


def test_undefined_curves_are_left_out_and_the_rest_written_byte_for_byte_as_before(tmp_path):
    result = _result()
    roc, lift = curve_frames(result)
    for new, old in zip((roc, lift), _every_category(result)):
        assert sorted(set(new["category"])) == [0, 1, 2, 3, 4, 7, 8]  # 5: no positive, 6: no negative
        assert len(new) == 2 * 7 * 21 and not new.drop(columns=["model"]).iloc[:, 2:].isna().all(axis=1).any()
        kept = old[old["category"].isin(new["category"])].reset_index(drop=True)
        pd.testing.assert_frame_equal(new, kept, check_exact=True)
        _write_csv(new, tmp_path / "new.csv")
        _write_csv(kept, tmp_path / "old.csv")
        assert (tmp_path / "new.csv").read_bytes() == (tmp_path / "old.csv").read_bytes()
    assert curves_left_out_sentence(result) == (
        "`curves/roc_grid.csv` and `curves/lift_grid.csv` hold the 7 of 9 categories with both a positive and "
        "a negative test document; the other 2 (1 without a positive test document, 1 without a negative one) "
        "are left out: a ROC curve needs both.")


def test_every_category_with_a_curve_keeps_every_row():
    result = _result()
    for run in result.models:  # as if every category had a positive and a negative: nothing left out
        table = run.evaluation.per_category
        table["n_pos"], table["n_neg"] = 1, 299
    roc, lift = curve_frames(result)
    old_roc, old_lift = _every_category(result)
    pd.testing.assert_frame_equal(roc, old_roc, check_exact=True)
    pd.testing.assert_frame_equal(lift, old_lift, check_exact=True)
    assert curves_left_out_sentence(result) == ""


def test_a_study_with_untestable_categories_writes_their_count_and_no_curve(tmp_path):
    config = load_config(None, ["data.synthetic.n_documents=400", "data.synthetic.n_features=800",
                                "data.synthetic.n_categories=60", "models.lr.npasses=1", "eval.bootstrap=0",
                                "eval.roc_points=11", "report.plots=false"])
    result = run_study(config)
    table = result.models[0].evaluation.per_category
    with_curve = (table["n_pos"] > 0) & (table["n_neg"] > 0)
    assert 0 < with_curve.sum() < len(table)  # the corpus has both kinds
    folder = Path(write_results(result, tmp_path))
    for name in ("roc_grid.csv", "lift_grid.csv"):
        written = pd.read_csv(folder / "curves" / name)
        assert len(written) == 2 * 11 * with_curve.sum()
        assert set(written["category"]) == set(table.loc[with_curve, "category"])
    report = (folder / "report.md").read_text(encoding="utf-8")
    left_out = int((~with_curve).sum())
    assert f"hold the {with_curve.sum()} of {len(table)} categories" in report
    assert f"the other {left_out}, without a positive test document, are left out" in report
    assert curves_left_out_sentence(result) in study_markdown(result, [])


@pytest.mark.parametrize("n_categories, n_test", [(100_000, 20_000), (500, 20_000)])
def test_the_estimate_counts_the_curve_tables_by_roc_points_and_categories_with_curves(n_categories, n_test):
    def curve_tables(roc_points: int) -> tuple[float, str]:
        config = load_config(None, [f"eval.roc_points={roc_points}"])  # nb and lr
        shape = DataShape(100_000, n_test, 50_000, n_categories, 10**7)
        (need,) = [need for need in estimate(config, shape) if need.what.startswith("curve tables")]
        return need.bytes, need.key

    with_curves = min(n_categories, n_test)  # the categories with a test positive, estimated
    assert curve_tables(101) == (CURVE_ROW_BYTES * with_curves * 101 * 2, "eval.roc_points = 101")
    assert curve_tables(11)[0] * 101 == curve_tables(101)[0] * 11
    config = load_config(None, [])
    unknown = [need for need in estimate(config, DataShape(None, None, 50_000, n_categories, None))
               if need.what.startswith("curve tables")]
    assert unknown == []  # the test documents unknown: not counted (a lower bound)
