"""Reports and figures of large label spaces: per-band summaries and the top and bottom categories instead
of one row (or name) per category, binned figures instead of one mark per category, and the P@k-by-band
figure; small label spaces unchanged. Per-category results are made directly (``synthetic_large_result``):
no study of that size is run."""

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure

from mlnb import plot
from mlnb.config import load_config
from mlnb.metrics.bands import BANDS, LARGE_LABEL_SPACE, frequency_bands
from mlnb.metrics.comparison import Comparison
from mlnb.metrics.evaluation import PER_CATEGORY_COLUMNS, Evaluation
from mlnb.metrics.significance import holm, sign_test
from mlnb.report import plots
from mlnb.report.band_tables import NAMES_LISTED, TOP_AND_BOTTOM, bands_markdown, listed_names, top_bottom_markdown
from mlnb.report.results import _study_plots
from mlnb.study import run_study

PROJECT = Path(__file__).resolve().parents[2]


def _evaluation(auc, f1, n_pos, n_neg, names) -> Evaluation:
    K = auc.size
    included = (n_pos > 0) & (n_neg > 0)
    auc = np.where(included, auc, np.nan)
    prevalence = n_pos / (n_pos + n_neg)
    table = pd.DataFrame({"category": np.arange(K), "name": names, "n_pos": n_pos, "n_neg": n_neg,
                          "prevalence": prevalence, "auc": auc, "average_precision": auc * 0.5,
                          "expected_accuracy": 1 - prevalence * (1.2 - auc), "accuracy": 1 - prevalence,
                          "precision": f1, "recall": f1, "f1": f1, "log_loss": 0.1, "brier": 0.01,
                          "tp": 0, "fp": 0, "fn": 0, "tn": 0,
                          "excluded": np.where(included, "", "no test positive or negative"), "included": included})
    summary = {"macro_auc": float(np.nanmean(auc[included])), "macro_f1": float(f1[included].mean()),
               "mean_expected_accuracy": float(table["expected_accuracy"][included].mean())}
    return Evaluation(per_category=table[PER_CATEGORY_COLUMNS], summary=summary, grid=np.linspace(0, 1, 11),
                      roc_tpr=np.zeros((K, 11)), gains=np.zeros((K, 11)), curves={}, excluded=np.flatnonzero(~included),
                      calibration=pd.DataFrame(), baselines={})


def synthetic_large_result(K: int, seed: int = 0, n_test: int = 20_000):
    """A study result of ``K`` long-tailed categories (Zipf training positives, a tenth of them unseen) and
    two models whose AUC and F1 rise with a category's training positives, with one comparison and the
    band contributions to P@5: what the report's tables and figures read, made directly."""
    rng = np.random.default_rng(seed)
    train = np.floor(20_000 / (np.arange(K) + 1) ** 0.8 * rng.uniform(0.5, 1.5, K))
    train[rng.random(K) < 0.1] = 0
    train = rng.permutation(train)
    n_pos = rng.poisson(train / 5 + 0.3)
    n_neg = n_test - n_pos
    names = [f"tag{k:06d}" for k in range(K)]
    strength = np.log1p(train) / np.log1p(train.max())
    models = []
    kinds = [("nb", "multinomial naive Bayes", 0.0), ("lr", "logistic regression", 0.04)]
    for i, (name, label, lift) in enumerate(kinds):
        auc = np.clip(0.6 + 0.35 * strength + lift * (strength - 0.3) + rng.normal(0, 0.08, K), 0, 1)
        f1 = np.clip(0.05 + 0.8 * strength ** 2 + rng.normal(0, 0.05, K), 0, 1)
        by_band = {"head": {"P@1": 0.5 - i * 0.05, "P@3": 0.35, "P@5": 0.3 - i * 0.03},
                   "torso": {"P@1": 0.2, "P@3": 0.1, "P@5": 0.08 + i * 0.01},
                   "tail": {"P@1": 0.05, "P@3": 0.03, "P@5": 0.02 + i * 0.015},
                   "unseen": {"P@1": 0.0, "P@3": 0.0, "P@5": 0.0}}
        models.append(SimpleNamespace(name=name, label=label, evaluation=_evaluation(auc, f1, n_pos, n_neg, names),
                                      ranking={"by_band": by_band}, model=SimpleNamespace(scores_are_log_odds=True),
                                      calibration=None, probability_scores=None, uncalibrated=None))
    a, b = models[1].evaluation.per_category, models[0].evaluation.per_category
    difference = (a["auc"] - b["auc"]).to_numpy()
    p_value = np.where(np.isfinite(difference), np.exp(-np.abs(difference) * 40), np.nan)
    table = pd.DataFrame({"category": np.arange(K), "name": names, "train_pos": train.astype(int),
                          "auc_a": a["auc"], "auc_b": b["auc"], "difference": difference, "z": difference * 10,
                          "p_value": p_value, "p_holm": holm(p_value)})
    comparison = Comparison(label_a="logistic regression", label_b="multinomial naive Bayes", table=table,
                            sign=sign_test(difference), alpha=0.05, name_a="lr", name_b="nb")
    return SimpleNamespace(category_names=names, train_positives=train, models=models, comparisons=[comparison],
                           ranking_ks=(1, 3, 5), config=SimpleNamespace(task="multilabel"))


@pytest.fixture(scope="module")
def large():
    return synthetic_large_result(5_000)


def _pixels(path: Path) -> np.ndarray:
    import matplotlib.image

    return matplotlib.image.imread(path)


def test_a_large_label_space_gets_bands_and_its_top_and_bottom_not_a_row_per_category(large):
    bands = "\n".join(bands_markdown(large))
    rows = [line for line in bands.splitlines() if line.startswith("| ")]
    assert [row.split(" | ")[0].strip("| ") for row in rows[1:]] == list(BANDS)  # header, then a row per band
    assert "macro AUC nb" in rows[0] and "P@5 lr" in rows[0] and "lr higher / lower than nb" in rows[0]
    counts = frequency_bands(large.train_positives)
    assert f"| tail | {np.sum(counts == 2):,} |" in bands
    difference = large.comparisons[0].table["difference"].to_numpy()[counts == 2]
    assert rows[3].endswith(f" {np.sum(difference > 0):,} / {np.sum(difference < 0):,} |")
    lines = "\n".join(top_bottom_markdown(large)).splitlines()
    table_rows = [line for line in lines if line.startswith("| top") or line.startswith("| bottom")]
    assert len(table_rows) == 2 * 2 * TOP_AND_BOTTOM  # two models, ten at each end
    first = large.models[0].evaluation.per_category
    order = np.lexsort((first.index, -large.train_positives, -first["auc"].fillna(-1)))
    best, worst = order[0], first["auc"].idxmin()
    assert table_rows[0].startswith(f"| top 1 | {best} | {first['name'][best]}")
    assert table_rows[TOP_AND_BOTTOM].startswith(f"| bottom 1 | {worst} | {first['name'][worst]}")


def test_top_and_bottom_only_above_the_large_label_space():
    small = synthetic_large_result(LARGE_LABEL_SPACE)
    assert top_bottom_markdown(small) == []
    assert top_bottom_markdown(synthetic_large_result(LARGE_LABEL_SPACE + 1)) != []


def test_names_of_a_large_label_space_are_cut_after_a_few():
    names = [f"c{k}" for k in range(1000)]
    assert listed_names(names, range(30), large=False) == ", ".join(names[:30])
    cut = listed_names(names, range(30), large=True)
    assert cut.startswith(", ".join(names[:NAMES_LISTED])) and "and 10 more" in cut and "c25" not in cut


def test_the_auc_scatter_of_many_categories_is_a_density():
    rng = np.random.default_rng(1)
    few = plot.auc_scatter(rng.uniform(0.5, 1, 50), rng.uniform(0.5, 1, 50), names=("a", "b"))
    many = plot.auc_scatter(rng.uniform(0.5, 1, 5000), rng.uniform(0.5, 1, 5000), names=("a", "b"))
    kinds = lambda figure: [type(c).__name__ for c in figure.axes[0].collections]  # noqa: E731
    assert "PolyCollection" not in kinds(few)
    assert "PolyCollection" in kinds(many) and "5,000 categories" in many.axes[0].get_title()


@pytest.mark.slow
def test_large_figures_draw_bins_and_the_precision_by_band(large, tmp_path):
    comparison = large.comparisons[0]
    paths = [plots.auc_scatter(large, comparison, tmp_path / "scatter.png"),
             plots.accuracy_per_category(large, tmp_path / "accuracy.png"),
             plots.auc_by_frequency(large, tmp_path / "frequency.png"),
             plots.auc_difference(comparison, tmp_path / "difference.png", ("tab:blue", "tab:red")),
             plots.precision_at_k_by_band(large, tmp_path / "by_band.png")]
    for path in paths:
        image = _pixels(path)
        assert image.shape[0] > 300 and image[..., :3].std() > 0.05  # drawn, not blank
    figure = plot.precision_at_k_by_band({m.name: m.ranking["by_band"] for m in large.models}, 5)
    ax = figure.axes[0]
    heights = sorted(round(p.get_height(), 3) for p in ax.patches)
    assert heights == sorted([0.3, 0.08, 0.02, 0.27, 0.09, 0.035])  # unseen (all 0) left out
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["nb: P@5 = 0.400", "lr: P@5 = 0.395"]
    accuracy = plot.accuracy_per_category({m.name: m.evaluation for m in large.models})
    assert all(len(line.get_xdata()) <= plot.CATEGORY_BINS for line in accuracy.axes[0].lines)  # bins, no points


def test_precision_by_band_says_what_is_missing():
    from mlnb.errors import MlnbError

    with pytest.raises(MlnbError, match="P@3"):
        plot.precision_at_k_by_band({"a": {"head": {"P@5": 0.1}}}, 3)


@pytest.fixture(scope="module")
def small_study():
    config = load_config(PROJECT / "configs" / "quickstart.toml",
                         ["data.synthetic.n_documents=1500", "data.synthetic.n_features=800",
                          "data.synthetic.n_categories=12", "eval.bootstrap=0"])
    return run_study(config)


@pytest.mark.slow
def test_a_small_study_gets_one_band_table_and_its_bands_add_up_to_p_at_k(small_study, tmp_path):
    lines = bands_markdown(small_study)
    assert "## By frequency band" in lines and top_bottom_markdown(small_study) == []
    for run in small_study.models:
        for k in small_study.ranking_ks:
            total = sum(run.ranking["by_band"][band][f"P@{k}"] for band in BANDS)
            assert total == pytest.approx(run.ranking["metrics"][f"P@{k}"], abs=1e-12)
    drawn = _study_plots(small_study, tmp_path)
    assert not any(path.name == "precision_at_k_by_band.png" for path in drawn)  # small: the figures as before
    assert isinstance(plot.auc_scatter(np.r_[0.6, 0.7], np.r_[0.8, 0.9]), Figure)
