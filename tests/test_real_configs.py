"""Every shipped config runs end to end on the real corpora in ../shared/data (skipped without them)."""

from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from mlnb.cli import app

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
REAL = {"rcv1subset.toml": "rcv1subset", "rcv1subset2.toml": "rcv1subset", "smsspam.toml": "smsspam",
        "reuters21578.toml": "reuters21578", "mulan_bibtex.toml": "mulan", "mulan_enron.toml": "mulan",
        "mulan_medical.toml": "mulan", "smsspam_multiclass.toml": "smsspam"}


@pytest.mark.slow
@pytest.mark.parametrize("config", sorted(REAL))
def test_config_runs_on_real_data(config, tmp_path):
    if not (SHARED / REAL[config]).is_dir():
        pytest.skip(f"real data not found at {SHARED / REAL[config]}")
    result = CliRunner().invoke(app, ["run", str(ROOT / "configs" / config), "--out", str(tmp_path),
                                      "--quiet", "--set", "models.lr.npasses=2"])
    assert result.exit_code == 0, result.output
    (folder,) = (tmp_path / Path(config).stem).iterdir()
    metrics = pd.read_csv(folder / "metrics.csv")
    assert metrics.groupby("model")["auc"].mean().min() > 0.6  # both learn something real (enron ~0.65)
    drawn = {path.name for path in (folder / "plots").glob("*.png")}
    per_category = {name for name in drawn if name.startswith("auc_scatter_")}  # one category: not drawn
    assert (folder / "report.md").is_file() and (per_category or metrics["category"].nunique() == 1), drawn


# LIBLINEAR one-vs-rest by LibMultiLabel 0.10 on each config's split (experiments/bench_peers.py): the best micro F1,
# macro F1 (its API default, decision value > 0) and macro AUC (with its RCV1 example's bias term) of its two settings
LIBLINEAR = {"rcv1subset.toml": ("rcv1subset1.svm.gz", 0.3942, 0.1923, 0.9146),
             "rcv1subset2.toml": ("rcv1subset2.svm.gz", 0.4128, 0.1755, 0.9257)}


@pytest.mark.slow
@pytest.mark.parametrize("config", sorted(LIBLINEAR))
def test_default_study_decides_as_well_as_liblinear_and_ranks_better(config):
    """Issue 43: at its defaults, a study's LR reaches LIBLINEAR one-vs-rest's micro and macro F1 at its defaults on
    the same split (the default decision rule, PCut, against the probability cut 0.5: 0.17 / 0.05), and keeps the
    lead in macro AUC."""
    if not (SHARED / "rcv1subset").is_dir():
        pytest.skip(f"real data not found at {SHARED / 'rcv1subset'}")
    from mlnb.config import load_config
    from mlnb.study import run_study

    data, micro, macro, auc = LIBLINEAR[config]
    result = run_study(load_config(ROOT / "configs" / config, ["eval.bootstrap=0", "report.paired_tests=false",
                                                               f"data.svmlight.path={SHARED / 'rcv1subset' / data}"]))
    summary = result.model("lr").evaluation.summary
    assert summary["micro_f1"] >= micro and summary["macro_f1"] >= macro and summary["macro_auc"] > auc, summary


def test_full_rcv1_config_explains_a_missing_cache(tmp_path):
    result = CliRunner().invoke(app, ["run", str(ROOT / "configs" / "rcv1.toml"), "--out", str(tmp_path),
                                      "--set", f"data.rcv1.data_home={tmp_path}"])
    assert result.exit_code == 2
    assert "RCV1 is not in scikit-learn's cache" in result.output and "download_if_missing" in result.output


def test_lyrl2004_config_names_the_missing_folder(tmp_path):
    result = CliRunner().invoke(app, ["run", str(ROOT / "configs" / "lyrl2004.toml"), "--out", str(tmp_path),
                                      "--set", f"data.lyrl2004.folder={tmp_path}/none"])
    assert result.exit_code == 2 and "no such folder (data.lyrl2004.folder)" in result.output
