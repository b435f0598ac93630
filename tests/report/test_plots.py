"""The study's figures: each laid out once but the one with a colorbar (``tight_layout`` measures every
text of a figure, the largest part of drawing one), the same PNG bytes as a figure laid out twice; a
study of one category without the figures of one point per category."""

from pathlib import Path

import pytest
from matplotlib.figure import Figure

from mlnb.config import load_config
from mlnb.report import plots
from mlnb.report.results import _study_plots
from mlnb.study import run_study

PROJECT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def study():
    config = load_config(PROJECT / "configs" / "quickstart.toml",
                         ["data.synthetic.n_documents=1500", "data.synthetic.n_features=800",
                          "data.synthetic.n_categories=12", "report.category=1", "eval.bootstrap=0"])
    return run_study(config)


@pytest.mark.slow
def test_every_figure_of_a_study_is_laid_out_once(study, tmp_path, monkeypatch):
    laid_out = []
    layout = Figure.tight_layout

    def counted(figure, *args, **kwargs):
        laid_out.append(figure)
        return layout(figure, *args, **kwargs)

    monkeypatch.setattr(Figure, "tight_layout", counted)
    drawn = _study_plots(study, tmp_path)
    scatters = [path for path in drawn if path.name.startswith("auc_scatter_")]  # its colorbar takes two passes
    assert len(drawn) == 7 and len(scatters) == 1
    assert len(laid_out) == len(drawn) + len(scatters) and len(set(map(id, laid_out))) == len(drawn)


@pytest.mark.slow
@pytest.mark.parametrize("name, draw", [("roc", lambda result, path: plots.roc_for_category(result, 1, path)),
                                        ("lift", lambda result, path: plots.lift_for_category(result, 1, path)),
                                        ("calibration", plots.calibration),
                                        ("accuracy", plots.accuracy_per_category)])
def test_a_figure_laid_out_once_is_the_one_laid_out_twice(study, tmp_path, monkeypatch, name, draw):
    once = draw(study, tmp_path / f"{name}_once.png").read_bytes()
    save = plots._save_laid_out

    def laid_out_again(figure, path):
        figure.tight_layout()
        return save(figure, path)

    monkeypatch.setattr(plots, "_save_laid_out", laid_out_again)
    twice = draw(study, tmp_path / f"{name}_twice.png").read_bytes()
    assert once == twice


def test_a_study_of_one_category_gets_no_figure_of_one_point_per_category(tmp_path):
    config = load_config(PROJECT / "configs" / "quickstart.toml",
                         ["data.synthetic.n_documents=1500", "data.synthetic.n_features=800",
                          "data.synthetic.n_categories=1", "report.category=0", "eval.bootstrap=0"])
    drawn = _study_plots(run_study(config), tmp_path)
    assert sorted(path.name for path in drawn) == ["calibration.png", "lift_category_0.png", "roc_category_0.png"]
