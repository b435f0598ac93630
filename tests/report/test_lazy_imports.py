"""Start-up and plotting without global side effects: `mlnb --help` and `import mlnb` import no numeric
library (they are imported by the command or name that needs them), and drawing a study's figures
neither picks pyplot's backend for the user nor leaves figures registered with pyplot."""

import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image

from mlnb.config import load_config
from mlnb.report.results import write_results
from mlnb.study import run_study

PROJECT = Path(__file__).resolve().parents[2]
HEAVY = ("numpy", "scipy", "sklearn", "pandas", "numba", "matplotlib", "dask")


def _imported_after(code: str) -> list[str]:
    """The HEAVY top-level packages loaded by a fresh interpreter after running ``code``."""
    probe = f"{code}\nimport sys\nprint(sorted({{m.split('.')[0] for m in sys.modules}} & {set(HEAVY)!r}))"
    done = subprocess.run([sys.executable, "-c", probe], cwd=PROJECT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return eval(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("code", ["import mlnb.cli", "import mlnb", "import mlnb.data",
                                  "from mlnb.cli import app\nfrom typer.testing import CliRunner\n"
                                  "assert 'show-config' in CliRunner().invoke(app, ['--help']).output"])
def test_start_up_imports_no_numeric_library(code):
    assert _imported_after(code) == []


def test_package_names_still_resolve():
    import mlnb
    import mlnb.data

    from mlnb import Dataset, MlnbError, NaiveBayes, make_rcv1_like  # noqa: F401 (the documented API)
    from mlnb.data.synthetic import make_rcv1_like as defined

    assert mlnb.make_rcv1_like is defined and mlnb.data.make_rcv1_like is defined
    assert set(mlnb.__all__) <= set(dir(mlnb)) and set(mlnb.data.__all__) <= set(dir(mlnb.data))
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        mlnb.nothing  # noqa: B018
    with pytest.raises(ImportError):
        from mlnb.data import nothing  # noqa: F401


@pytest.mark.slow
def test_only_the_rcv1_readers_need_scikit_learns_dataset_loaders():
    assert "sklearn" not in _imported_after("import mlnb.data.synthetic")
    assert "sklearn" not in _imported_after("import mlnb.data.rcv1")  # imported when a file is read


@pytest.mark.slow
def test_importing_the_plots_leaves_the_users_backend_alone():
    code = "import matplotlib\nmatplotlib.use('svg')\nimport mlnb.report.plots\nprint(matplotlib.get_backend())"
    done = subprocess.run([sys.executable, "-c", code], cwd=PROJECT, capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout.strip()) == (0, "svg"), done.stderr


@pytest.mark.slow
def test_study_figures_are_written_without_pyplot(tmp_path):
    config = load_config(PROJECT / "configs" / "quickstart.toml",
                         ["data.synthetic.n_documents=1500", "data.synthetic.n_features=800",
                          "data.synthetic.n_categories=12", "report.category=1"])
    folder = write_results(run_study(config), tmp_path)
    sizes = {path.name: Image.open(path).size for path in (folder / "plots").glob("*.png")}
    # figsize (inches) x 120 dpi: every figure of the study is there, whole
    assert sizes == {"accuracy_per_category.png": (1200, 540), "roc_category_1.png": (660, 660),
                     "lift_category_1.png": (1320, 540), "calibration.png": (720, 840),
                     "auc_by_frequency.png": (840, 540), "auc_scatter_lr_vs_nb.png": (720, 660),
                     "auc_difference_lr_vs_nb.png": (1320, 540)}
    assert "matplotlib.pyplot" not in sys.modules or not __import__("matplotlib.pyplot").pyplot.get_fignums()


@pytest.mark.slow
def test_a_quick_run_imports_no_matplotlib(tmp_path):
    code = ("from typer.testing import CliRunner\nfrom mlnb.cli import app\n"
            f"done = CliRunner().invoke(app, ['run', 'configs/quickstart.toml', '--out', {str(tmp_path)!r}, '--quick', "
            "'--quiet', '--set', 'data.synthetic.n_documents=1500', '--set', 'data.synthetic.n_features=800'])\n"
            "assert done.exit_code == 0, done.output")
    assert "matplotlib" not in _imported_after(code)  # its import is a part of the figures' time
