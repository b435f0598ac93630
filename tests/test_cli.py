"""The mlnb command end to end: a complete results folder, or a one-line error and exit 2."""

import json

import pandas as pd
import pytest
from typer.testing import CliRunner

from mlnb.cli import app

SMALL = ["--set", "data.synthetic.n_documents=3000", "--set", "data.synthetic.n_features=3000",
         "--set", "models.lr.npasses=2", "--quiet"]


def run(*args):
    return CliRunner().invoke(app, ["run", *map(str, args)])


@pytest.fixture(scope="module")
def quickstart_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("results")
    result = run("configs/quickstart.toml", "--out", out, *SMALL)
    assert result.exit_code == 0, result.output
    folders = list((out / "quickstart").iterdir())
    assert len(folders) == 1
    return result, folders[0]


def test_run_writes_every_file(quickstart_run):
    result, folder = quickstart_run
    for name in ["config.toml", "summary.json", "metrics.csv", "report.md", "curves/roc_grid.csv",
                 "curves/lift_grid.csv", "plots/accuracy_per_category.png", "plots/roc_category_6.png",
                 "plots/lift_category_6.png", "plots/auc_scatter_lr_vs_nb.png",
                 "plots/auc_difference_lr_vs_nb.png", "plots/calibration.png", "plots/auc_by_frequency.png"]:
        assert (folder / name).is_file(), name
    assert f"results: {folder}" in result.output and "macro AUC" in result.output


def test_run_ends_with_the_page_to_open_then_the_folder(quickstart_run):
    result, folder = quickstart_run
    assert result.output.strip().splitlines()[-2:] == [f"report: {folder / 'report.html'}", f"results: {folder}"]


def test_results_content(quickstart_run):
    _, folder = quickstart_run
    metrics = pd.read_csv(folder / "metrics.csv")
    assert set(metrics["model"]) == {"nb", "lr"} and len(metrics) == 2 * 103
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["seed"] == 0 and summary["data"]["n_documents"] == 3000
    assert set(summary["versions"]) >= {"numpy", "scipy", "scikit-learn"}
    for model in ("nb", "lr"):
        assert 0.5 < summary["models"][model]["macro_auc"] <= 1.0
        assert summary["models"][model]["fit_seconds"] > 0
    roc = pd.read_csv(folder / "curves" / "roc_grid.csv")  # the categories with a curve (a positive and a negative)
    with_curve = metrics[(metrics["model"] == "nb") & (metrics["n_pos"] > 0) & (metrics["n_neg"] > 0)]["category"]
    assert len(roc) == 2 * len(with_curve) * 101 and set(roc["category"]) == set(with_curve)
    assert "![roc_category_6](plots/roc_category_6.png)" in (folder / "report.md").read_text()


@pytest.mark.slow
def test_same_config_and_seed_give_the_same_numbers(quickstart_run, tmp_path):
    _, folder = quickstart_run
    again = run(folder / "config.toml", "--out", tmp_path, "--quiet")
    assert again.exit_code == 0, again.output
    (second,) = (tmp_path / "quickstart").iterdir()
    pd.testing.assert_frame_equal(pd.read_csv(folder / "metrics.csv"), pd.read_csv(second / "metrics.csv"))


def test_quick_run_writes_the_tables_of_a_full_run_and_says_what_it_left_out(quickstart_run, tmp_path):
    _, full = quickstart_run
    result = run("configs/quickstart.toml", "--out", tmp_path, *SMALL, "--quick")
    assert result.exit_code == 0, result.output
    (quick,) = (tmp_path / "quickstart").iterdir()
    for table in ("metrics.csv", "comparison.csv", "curves/roc_grid.csv", "curves/lift_grid.csv",
                  "curves/calibration.csv"):  # every number of the full run's tables, the same
        pd.testing.assert_frame_equal(pd.read_csv(quick / table), pd.read_csv(full / table), obj=table)
    assert not list(quick.rglob("*.png")) and not (quick / "plots").exists()
    summary = json.loads((quick / "summary.json").read_text())
    assert all(model["intervals"] == {} for model in summary["models"].values())
    assert not any("macro_auc_difference" in comparison for comparison in summary["comparisons"])
    assert summary["quick"] is True and list(summary["left_out"]) == ["eval.bootstrap = 0", "report.plots = false"]
    assert "bootstrap = 0" in (quick / "config.toml").read_text()  # what reruns the folder as it is
    report = (quick / "report.md").read_text()
    assert ("Left out because this is a quick run (`mlnb run --quick`): eval.bootstrap = 0, so no bootstrap "
            "confidence intervals" in report and "; report.plots = false, so no figures (no plots/ folder)." in report)
    assert "--set eval.bootstrap=200 --set report.plots=true` adds what is missing" in report
    assert "quick run, left out: eval.bootstrap = 0, report.plots = false" in result.output
    full_summary = json.loads((full / "summary.json").read_text())
    assert full_summary["quick"] is False and full_summary["left_out"] == {}
    assert "Left out" not in (full / "report.md").read_text()


def test_a_runs_own_set_overrides_quick(tmp_path):
    result = run("configs/quickstart.toml", "--out", tmp_path, *SMALL, "--quick", "--set", "eval.bootstrap=20")
    assert result.exit_code == 0, result.output
    (quick,) = (tmp_path / "quickstart").iterdir()
    summary = json.loads((quick / "summary.json").read_text())
    assert summary["models"]["nb"]["intervals"] and list(summary["left_out"]) == ["report.plots = false"]
    assert not (quick / "plots").exists()


@pytest.fixture
def svm_files(tmp_path):
    (tmp_path / "good.svm").write_text("".join(f"{i % 3} {1 + i % 5}:1 {6 + i % 4}:2\n" for i in range(60)))
    (tmp_path / "bad.svm").write_text("0 1:1\n1 2:1\n0 3:zero\n")
    (tmp_path / "test.svm").write_text("0 1:1\n1 12:1\n")
    return tmp_path


@pytest.mark.parametrize("args, message", [
    (["missing.toml"], "missing.toml: no such config file"),
    (["configs/quickstart.toml", "--set", "models.nb.alhpa=1"], "did you mean 'models.nb.alpha'"),
    (["configs/quickstart.toml", "--set", "models.lr.npasses=two"], "models.lr.npasses: expected an integer"),
    (["configs/quickstart.toml", "--set", "models.nb.alpha=0"], "models.nb.alpha: expected a value > 0"),
    (["configs/quickstart.toml", "--set", "report.category=103", *SMALL],
     "report.category = 103 is out of range: the data has 103 categories"),
    (["configs/quickstart.toml", "--set", "data.source=svmlight", "--set", "data.svmlight.path={d}/none.svm"],
     "none.svm: no such file"),
    (["configs/quickstart.toml", "--set", "data.source=svmlight", "--set", "data.svmlight.path={d}/bad.svm"],
     "bad.svm:3: expected a number after '3:', got 'zero'"),
    (["configs/quickstart.toml", "--set", "data.source=svmlight", "--set", "data.svmlight.path={d}/good.svm",
      "--set", "data.svmlight.test_path={d}/test.svm", "--set", "data.svmlight.n_features=9"],
     "test.svm:2: feature index 12 is beyond n_features = 9"),
])
def test_bad_input_gives_one_line_and_exit_2(svm_files, tmp_path, args, message):
    args = [a.replace("{d}", str(svm_files)) for a in args]
    result = run(*args, "--out", tmp_path / "out")
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], result.output
    assert not (tmp_path / "out" / "quickstart").exists() or not any((tmp_path / "out" / "quickstart").iterdir())


@pytest.mark.slow
def test_failed_run_leaves_no_folder(tmp_path, monkeypatch):
    from mlnb.report import plots

    def broken(*args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(plots, "auc_scatter", broken)  # the last plot but one
    result = CliRunner().invoke(app, ["run", "configs/quickstart.toml", "--out", str(tmp_path), *SMALL],
                                catch_exceptions=False)
    # any exception type is one line and exit code 2 (the top-level handler of mlnb.cli)
    assert result.exit_code == 2 and result.output.strip().splitlines()[-1].startswith("error: RuntimeError: disk full")
    assert list((tmp_path / "quickstart").iterdir()) == []


@pytest.mark.slow
def test_svmlight_study_runs_end_to_end(svm_files, tmp_path):
    result = run("configs/quickstart.toml", "--out", tmp_path, "--quiet", "--set", "data.source=svmlight",
                 "--set", f"data.svmlight.path={svm_files}/good.svm", "--set", "report.category=1")
    assert result.exit_code == 0, result.output
    assert "3 categories" in result.output


def test_help_explains_commands():
    assert "--set" in CliRunner().invoke(app, ["run", "--help"]).output
    shown = CliRunner().invoke(app, ["show-config", "configs/quickstart.toml", "--set", "models.nb.alpha=0.2"])
    assert shown.exit_code == 0 and "alpha = 0.2  # additive pseudo-count per word" in shown.output
    from mlnb.models import KINDS

    for kind in KINDS:  # every kind is listed with its options
        assert f'# kind = "{kind}": ' in shown.output


@pytest.mark.parametrize("extra, message", [
    (["--set", "seed=-1"], "seed: expected a value >= 0"),
    (["--set", "name=../escape"], "name: expected letters, digits"),
    (["--set", "eval.threshold=1.0"], "eval.threshold: expected a value < 1"),
    (["--set", "models.sk.kind=sklearn_sgd", "--set", "models.sk.alpha=0", *SMALL],
     "models.sk: alpha must be > 0 with learning_rate = 'optimal'"),
    (["--set", "models.lr.kind=sklearn_sgd"], "'updater' is an option of kind 'logistic'"),
    (["--set", "models.lr.lrate_per_category=[0.1, 0.2]", *SMALL], "models.lr.lrate_per_category has 2 values"),
    (["--set", "features.transform=log_tfidf", "--set", "data.source=svmlight",
      "--set", "data.svmlight.path={d}/tfidf.svm", "--set", "report.category=0"],
     "'log_tfidf' expects word counts"),
    (["--set", "data.source=svmlight", "--set", "data.svmlight.path={d}/nan.svm"], "NaN or infinite"),
    (["--set", "data.source=svmlight", "--set", "data.svmlight.path={d}/broken.svm.gz"],
     "not a readable svmlight file"),
])
def test_more_bad_input(svm_files, tmp_path, extra, message):
    import gzip

    (svm_files / "tfidf.svm").write_text("0 1:0.5 2:0.25\n1 2:0.75\n" * 10)
    (svm_files / "nan.svm").write_text("0 1:1\n1 2:nan\n" * 5)
    (svm_files / "broken.svm.gz").write_bytes(gzip.compress(b"0 1:1\n1 2:1\n" * 100)[:40])
    args = [a.replace("{d}", str(svm_files)) for a in extra]
    result = run("configs/quickstart.toml", "--out", tmp_path / "out", *args)
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], result.output


def test_unwritable_output_is_a_one_line_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    result = run("configs/quickstart.toml", "--out", blocker, *SMALL)
    assert result.exit_code == 2 and "cannot create the results folder" in result.output


@pytest.mark.slow
def test_lr_warm_start_from_nb_and_sklearn_engine(tmp_path):
    result = run("configs/quickstart.toml", "--out", tmp_path, *SMALL, "--set", "models.lr.init_from=nb",
                 "--set", "models.lr.monitor=true")
    assert result.exit_code == 0, result.output
    result = run("configs/quickstart.toml", "--out", tmp_path, *SMALL[:4], "--quiet", "--set", "models.sk.kind=sklearn_sgd")
    assert result.exit_code == 0 and "sklearn SGD" in result.output
    result = run("configs/quickstart.toml", "--out", tmp_path, *SMALL, "--set", "models.lr.init_from=nb",
                 "--set", "models.nb.enabled=false")
    assert result.exit_code == 2 and "models.lr.init_from = 'nb': expected the name of another enabled" in result.output


@pytest.mark.slow
def test_report_category_by_name(tmp_path):
    result = run("configs/quickstart.toml", "--out", tmp_path, *SMALL, "--set", "report.category_name=ECAT")
    assert result.exit_code == 0, result.output
    (folder,) = (tmp_path / "quickstart").iterdir()
    assert (folder / "plots" / "roc_category_1.png").is_file()  # ECAT is category 1
    bad = run("configs/quickstart.toml", "--out", tmp_path, *SMALL, "--set", "report.category_name=ECT")
    assert bad.exit_code == 2 and "did you mean 'ECAT'" in bad.output


@pytest.mark.slow
@pytest.mark.parametrize("lines", ["0 1:1 2:1\n0 2:2 3:1\n0 1:1 3:1\n0 3:1\n",  # one category holds every document
                                   "0 1:1 2:1\n1 2:2 3:1\n"])  # two documents
@pytest.mark.parametrize("command", ["run", "curve"])
def test_nothing_evaluable_still_gives_a_complete_folder(tmp_path, lines, command):
    """No category with both a positive and a negative test document: every plot, table and the
    report cope (no log-scaled empty axes), and the report says that nothing could be evaluated."""
    data = tmp_path / "data.svm"
    data.write_text(lines)
    extra = ["--set", "curve.sizes=[1]", "--set", "curve.seeds=1"] if command == "curve" else []
    result = CliRunner().invoke(app, [command, "configs/quickstart.toml", "--out", str(tmp_path / "out"), "--quiet",
                                      "--set", "data.source=svmlight", "--set", f"data.svmlight.path={data}",
                                      "--set", "report.category=0", *extra])
    assert result.exit_code == 0, result.output
    (folder,) = (tmp_path / "out" / ("quickstart" if command == "run" else "quickstart-curve")).iterdir()
    assert (folder / "report.md").is_file() and list((folder / "plots").glob("*.png"))
    if command == "run":
        assert "Nothing could be evaluated" in (folder / "report.md").read_text()


def test_version_and_help_texts_show_config_sections():
    """`mlnb --version` prints the installed version; help texts are plain text, so "[sweep]" and
    "[curve]" are shown (rich markup read them as tags and dropped them)."""
    from importlib.metadata import version

    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0 and result.output.strip() == f"mlnb {version('mlnb')}"
    assert "[sweep] section" in CliRunner().invoke(app, ["sweep", "--help"]).output
    assert "[curve] sets" in CliRunner().invoke(app, ["curve", "--help"]).output
