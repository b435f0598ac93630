import numpy as np
import pytest
from typer.testing import CliRunner

from mlnb.cli import app
from mlnb.studies.curve import crossings, training_sizes


def test_training_sizes_are_log_spaced_and_bounded():
    sizes = training_sizes([], 10_000)
    assert sizes[0] == 100 and sizes[-1] == 10_000 and len(sizes) == 8
    assert np.allclose(np.diff(np.log(sizes)), np.log(100) / 7, rtol=0.05)


def test_crossing_is_interpolated_in_log_size():
    sizes = np.array([100, 1000, 10000])
    lr, nb = np.array([0.5, 0.7, 0.9]), np.array([0.6, 0.6, 0.6])
    (size,) = crossings(sizes, lr, nb)  # difference −0.1 at 100, +0.1 at 1000: midway in log
    assert size == np.sqrt(100 * 1000)
    assert crossings(sizes, nb + 1, nb) == []


@pytest.mark.slow
def test_curve_command_end_to_end(tmp_path):
    args = ["curve", "configs/quickstart.toml", "--out", str(tmp_path), "--quiet",
            "--set", "data.synthetic.n_documents=3000", "--set", "data.synthetic.n_features=2000",
            "--set", "curve.sizes=[100, 400, 1499]",  # 1499: all of the hash split's training part
            "--set", "curve.seeds=2"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    (folder,) = (tmp_path / "quickstart-curve").iterdir()
    import pandas as pd
    table = pd.read_csv(folder / "curve.csv")
    assert len(table) == 2 * 3 * 2 and set(table["model"]) == {"nb", "lr"}
    assert (folder / "plots" / "curve_macro_auc.png").is_file()
