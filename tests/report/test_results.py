"""The results folder: strict JSON, readable permissions, reloadable config, unique names."""

import json
import os
import stat

import numpy as np
import pytest

from mlnb.config import load_config
from mlnb.report.results import write_results
from mlnb.study import run_study


@pytest.fixture(scope="module")
def study():
    config = load_config("configs/quickstart.toml", ["data.synthetic.n_documents=1500",
                                                     "data.synthetic.n_features=800", "report.plots=false"])
    return run_study(config)


def test_two_runs_get_two_folders_with_strict_json(study, tmp_path):
    first, second = write_results(study, tmp_path), write_results(study, tmp_path)
    assert first != second and first.parent == second.parent == tmp_path / "quickstart"
    summary = json.loads((first / "summary.json").read_text(), parse_constant=lambda c: pytest.fail(c))
    assert summary["models"]["nb"]["n_excluded"] == len(summary["models"]["nb"]["excluded_categories"])
    assert not list(first.glob("plots/*.png"))  # report.plots = false
    assert [p.name for p in first.parent.iterdir() if p.name.startswith(".")] == []


def test_folder_is_readable_by_others(study, tmp_path):
    folder = write_results(study, tmp_path)
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(folder.stat().st_mode) == 0o777 & ~umask


def test_written_config_reproduces_the_study(study, tmp_path):
    folder = write_results(study, tmp_path)
    again = load_config(folder / "config.toml")
    assert again == study.config
    rerun = run_study(again)
    for a, b in zip(study.models, rerun.models):
        np.testing.assert_array_equal(a.evaluation.per_category["auc"], b.evaluation.per_category["auc"])
