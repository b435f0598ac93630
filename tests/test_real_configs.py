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
    assert (folder / "report.md").is_file() and list((folder / "plots").glob("auc_scatter_*_vs_*.png"))


def test_full_rcv1_config_explains_a_missing_cache(tmp_path):
    result = CliRunner().invoke(app, ["run", str(ROOT / "configs" / "rcv1.toml"), "--out", str(tmp_path),
                                      "--set", f"data.rcv1.data_home={tmp_path}"])
    assert result.exit_code == 2
    assert "RCV1 is not in scikit-learn's cache" in result.output and "download_if_missing" in result.output


def test_lyrl2004_config_names_the_missing_folder(tmp_path):
    result = CliRunner().invoke(app, ["run", str(ROOT / "configs" / "lyrl2004.toml"), "--out", str(tmp_path),
                                      "--set", f"data.lyrl2004.folder={tmp_path}/none"])
    assert result.exit_code == 2 and "no such folder (data.lyrl2004.folder)" in result.output
