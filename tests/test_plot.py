"""mlnb.plot: public figures of evaluations, each a matplotlib Figure (no pyplot, no files), and the
report's PNGs drawn by the same functions."""

import warnings
from pathlib import Path

import numpy as np
import pytest
from matplotlib.figure import Figure

from mlnb import MlnbError, NaiveBayes, evaluate, make_rcv1_like, plot
from mlnb.config import load_config
from mlnb.report import plots as report_plots
from mlnb.study import run_study

PROJECT = Path(__file__).resolve().parents[1]


def fit(data, model):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # untrainable categories
        return model.fit(data.X_train, data.Y_train).decision_function(data.X_test)


@pytest.fixture(scope="module")
def two():
    """1,500 documents × 20 categories, multinomial and bernoulli NB, evaluated."""
    data = make_rcv1_like(n_documents=1500, n_features=600, n_categories=20, seed=1)
    scores = {"nb": fit(data, NaiveBayes(binarize=True)), "bnb": fit(data, NaiveBayes(event_model="bernoulli"))}
    evaluations = {name: evaluate(data.Y_test, S, data.category_names, Y_train=data.Y_train)
                   for name, S in scores.items()}
    return data, scores, evaluations


def legend(ax) -> list[str]:
    return [text.get_text() for text in ax.get_legend().get_texts()]


def test_roc_draws_each_models_exact_curve_with_its_auc(two):
    data, scores, evaluations = two
    figure = plot.roc(evaluations, category=3)
    assert isinstance(figure, Figure)
    ax = figure.axes[0]
    auc = evaluations["nb"].per_category["auc"][3]
    assert legend(ax) == [f"nb: AUC {auc:.4f}", f"bnb: AUC {evaluations['bnb'].per_category['auc'][3]:.4f}",
                          "chance"]
    curve = evaluations["nb"].curves[3]
    np.testing.assert_array_equal(ax.lines[0].get_xdata(), curve.fpr)
    # the area under the drawn line is the AUC (trapezoids of the exact curve)
    x, y = ax.lines[0].get_xdata(), ax.lines[0].get_ydata()
    assert np.sum(np.diff(x) * (y[1:] + y[:-1]) / 2) == pytest.approx(auc, abs=1e-9)
    assert data.category_names[3] in ax.get_title()
    # by name, and from scores with the labels: the same figure's numbers
    by_name = plot.roc(evaluations, category=data.category_names[3])
    assert legend(by_name.axes[0]) == legend(ax)
    from_scores = plot.roc({"nb": scores["nb"]}, category=3, Y_true=data.Y_test)
    assert legend(from_scores.axes[0])[0] == f"nb: AUC {auc:.4f}"


def test_lift_panels_and_colours(two):
    _, _, evaluations = two
    figure = plot.lift(evaluations, 0, colors={"nb": "black"})
    left, right = figure.axes
    assert left.lines[0].get_color() == "black" and left.lines[1].get_color() == "tab:blue"
    np.testing.assert_allclose(left.lines[0].get_ydata(), evaluations["nb"].roc_lift[0])
    np.testing.assert_allclose(right.lines[1].get_ydata(), evaluations["bnb"].depth_lift[0])
    assert left.get_yscale() == "log"


def test_accuracy_per_category_few_and_many_categories(two):
    _, _, evaluations = two
    figure = plot.accuracy_per_category(evaluations["nb"], note="not shown: x")
    ax = figure.axes[0]
    np.testing.assert_allclose(ax.lines[0].get_ydata(), evaluations["nb"].per_category["expected_accuracy"])
    assert legend(ax)[0] == f"model: mean {evaluations['nb'].summary['mean_expected_accuracy']:.4f}"
    assert any(text.get_text() == "not shown: x" for text in ax.texts)
    # 1,000 categories: points plus a rolling mean, named in the legend
    data = make_rcv1_like(n_documents=1200, n_features=300, n_categories=1000, seed=2)
    many = evaluate(data.Y_test, fit(data, NaiveBayes(binarize=True)), Y_train=data.Y_train)
    labels = legend(plot.accuracy_per_category({"nb": many}).axes[0])
    assert "rolling mean of 20" in labels[0]
    assert len(plot.auc_scatter(many, many).axes[0].collections[0].get_offsets()) == many.summary["n_evaluable"]


def test_auc_scatter_counts_the_winners(two):
    _, _, evaluations = two
    x, y = evaluations["bnb"], evaluations["nb"]
    figure = plot.auc_scatter(x, y, names=("bnb", "nb"), train_positives=np.arange(20) + 1)
    ax = figure.axes[0]
    both = x.per_category["included"] & y.per_category["included"]
    a_x, a_y = x.per_category["auc"][both].to_numpy(), y.per_category["auc"][both].to_numpy()
    np.testing.assert_allclose(ax.collections[0].get_offsets(), np.c_[a_x, a_y])
    assert ax.get_title() == f"Per-category AUC: nb higher in {np.sum(a_y > a_x)}, bnb higher in {np.sum(a_x > a_y)}"
    assert len(figure.axes) == 2  # the colour bar of the training positives
    with pytest.raises(MlnbError, match="x has 20 categories, y 3"):
        plot.auc_scatter(x, [0.5, 0.6, 0.7])


def test_reliability_draws_the_calibration_table(two):
    _, _, evaluations = two
    figure = plot.reliability(evaluations, before={"nb": evaluations["bnb"].calibration}, calibrated={"nb": "platt"})
    top, bottom = figure.axes
    table = evaluations["nb"].calibration
    np.testing.assert_allclose(top.lines[1].get_ydata(), table["observed_rate"])
    assert legend(top)[1].startswith("nb, platt-calibrated: Brier")
    assert "nb before calibration" in legend(top)
    assert bottom.get_yscale() == "log"


def test_inputs_are_checked_in_one_line(two):
    data, scores, evaluations = two
    with pytest.raises(MlnbError, match="pass the labels as Y_true"):
        plot.roc({"nb": scores["nb"]}, category=0)
    with pytest.raises(MlnbError, match="category must be an index 0..19"):
        plot.roc(evaluations, category=20)
    with pytest.raises(MlnbError, match="no category name"):
        plot.lift(evaluations, category="no such")
    with pytest.raises(MlnbError, match="nothing to plot"):
        plot.roc({}, category=0)


@pytest.mark.slow
def test_the_reports_pngs_are_mlnb_plot_figures(tmp_path, monkeypatch):
    config = load_config(PROJECT / "configs" / "quickstart.toml",
                         ["data.synthetic.n_documents=1200", "data.synthetic.n_features=400",
                          "data.synthetic.n_categories=12", "eval.bootstrap=0", "report.category=2"])
    result = run_study(config)
    drawn = []
    for name in ("roc", "lift", "accuracy_per_category", "reliability"):
        original = getattr(plot, name)
        monkeypatch.setattr(plot, name, lambda *a, _f=original, _n=name, **k: drawn.append(_n) or _f(*a, **k))
    report_plots.roc_for_category(result, 2, tmp_path / "roc.png")
    report_plots.lift_for_category(result, 2, tmp_path / "lift.png")
    report_plots.accuracy_per_category(result, tmp_path / "accuracy.png")
    report_plots.calibration(result, tmp_path / "calibration.png")
    assert drawn == ["roc", "lift", "accuracy_per_category", "reliability"]
    assert all((tmp_path / name).stat().st_size > 10_000 for name in ("roc.png", "lift.png", "accuracy.png",
                                                                      "calibration.png"))
