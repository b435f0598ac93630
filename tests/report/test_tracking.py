"""The optional MLflow hook: `[tracking] mlflow_uri` logs a run (params = the flattened config, metrics =
the summary, artifacts = the folder); without it MLflow is never imported, and a config that asks for
it where it is not installed is one clear line before any data is read."""

import dataclasses
import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import mlnb.tracking
from mlnb.config import load_config
from mlnb.errors import MlnbError, MlnbWarning
from mlnb.report.results import write_results
from mlnb.study import run_study

PROJECT = Path(__file__).resolve().parents[2]
TINY = ["data.synthetic.n_documents=600", "data.synthetic.n_features=300", "data.synthetic.n_categories=10",
        "report.category=1", "eval.bootstrap=0", "report.plots=false"]


@pytest.fixture(scope="module")
def study():
    return run_study(load_config("configs/quickstart.toml", TINY))


def _tracked(study, uri: str):
    tracking = dataclasses.replace(study.config.tracking, mlflow_uri=uri, experiment="mlnb-test")
    return dataclasses.replace(study, config=dataclasses.replace(study.config, tracking=tracking))


@pytest.mark.slow
def test_mlflow_is_never_imported_unless_configured(study, tmp_path, monkeypatch):
    code = "import mlnb.cli, mlnb.config, mlnb.report.results, mlnb.tracking, sys; print('mlflow' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], cwd=PROJECT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "False", done.stderr
    monkeypatch.setattr(mlnb.tracking, "log_run", lambda *a, **k: pytest.fail("logged without [tracking]"))
    write_results(study, tmp_path)


def test_missing_mlflow_is_one_line_naming_the_key(monkeypatch):
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None)
    with pytest.raises(MlnbError, match=r"--set: tracking.mlflow_uri = 'file:mlruns' needs MLflow.*pip install"):
        load_config("configs/quickstart.toml", ["tracking.mlflow_uri=file:mlruns"])


def test_a_tracking_failure_is_a_warning_after_the_folder_is_written(study, tmp_path, monkeypatch):
    def fail(*args, **kwargs):
        raise ConnectionError("no server at http://localhost:1")

    monkeypatch.setattr(mlnb.tracking, "log_run", fail)
    with pytest.warns(MlnbWarning, match="written, but not logged to MLflow.*ConnectionError"):
        folder = write_results(_tracked(study, "http://localhost:1"), tmp_path)
    assert (folder / "report.html").is_file()


@pytest.mark.slow
def test_a_run_is_logged_to_a_local_file_store(study, tmp_path):
    pytest.importorskip("mlflow", reason="MLflow is the optional extra mlnb[tracking]; not installed here")
    from mlflow.tracking import MlflowClient

    uri = (tmp_path / "mlruns").as_uri()
    folder = write_results(_tracked(study, uri), tmp_path / "results")
    client = MlflowClient(tracking_uri=uri)
    (run,) = client.search_runs([client.get_experiment_by_name("mlnb-test").experiment_id])
    summary = json.loads((folder / "summary.json").read_text())
    assert run.info.run_name == folder.name and run.info.status == "FINISHED"
    assert run.data.params["models.lr.lrate"] == "0.3" and run.data.params["data.source"] == "synthetic"
    assert run.data.params["tracking.mlflow_uri"] == uri
    assert run.data.metrics["nb.macro_auc"] == pytest.approx(summary["models"]["nb"]["macro_auc"])
    assert run.data.tags["mlnb.folder"] == str(folder.resolve())
    artifacts = {entry.path for entry in client.list_artifacts(run.info.run_id)}
    assert {"config.toml", "summary.json", "report.html", "metrics.csv"} <= artifacts


def test_the_mlflow_run_lasts_as_long_as_the_study_and_says_where_it_is(study, tmp_path):
    """Logged at the end, the run lasted the second logging took (0.4 s); it lasts as the study did."""
    pytest.importorskip("mlflow", reason="MLflow is the optional extra mlnb[tracking]; not installed here")
    from mlflow.tracking import MlflowClient

    folder = write_results(study, tmp_path / "results")
    summary = json.loads((folder / "summary.json").read_text())
    assert [row["stage"] for row in summary["timings"]][-1] == "total"
    summary["timings"] = [{"stage": "load", "seconds": 3000.0}, {"stage": "total", "seconds": 3600.0}]
    (folder / "summary.json").write_text(json.dumps(summary))
    uri = (tmp_path / "mlruns").as_uri()
    run_id, address = mlnb.tracking.log_run(folder, uri, "mlnb-test")
    run = MlflowClient(tracking_uri=uri).get_run(run_id)
    assert run.info.end_time - run.info.start_time == pytest.approx(3_600_000, abs=2)
    assert address == (f"run {run_id} of experiment {run.info.experiment_id} in {uri} "
                       f"(to see it: MLFLOW_ALLOW_FILE_STORE=true mlflow ui --backend-store-uri {uri})")


def test_a_tracking_server_run_is_addressed_by_its_page():
    assert mlnb.tracking.run_address("http://mlflow.lan:5000/", "7", "ab12") == \
        "http://mlflow.lan:5000/#/experiments/7/runs/ab12"
    assert mlnb.tracking.run_address("sqlite:///m.db", "7", "ab12") == \
        "run ab12 of experiment 7 in sqlite:///m.db (to see it: mlflow ui --backend-store-uri sqlite:///m.db)"


def test_mlnb_run_prints_the_mlflow_run_before_the_results(tmp_path):
    pytest.importorskip("mlflow", reason="MLflow is the optional extra mlnb[tracking]; not installed here")
    from typer.testing import CliRunner

    from mlnb.cli import app

    uri = (tmp_path / "mlruns").as_uri()
    sets = [word for setting in TINY + [f"tracking.mlflow_uri={uri}"] for word in ("--set", setting)]
    result = CliRunner().invoke(app, ["run", "configs/quickstart.toml", "--out", str(tmp_path / "results"), *sets])
    assert result.exit_code == 0, result.output
    (folder,) = (tmp_path / "results" / "quickstart").iterdir()
    lines = result.output.strip().splitlines()
    assert re.fullmatch(rf"mlflow: run \w+ of experiment \d+ in {re.escape(uri)} \(to see it: "
                        rf"MLFLOW_ALLOW_FILE_STORE=true mlflow ui --backend-store-uri {re.escape(uri)}\)",
                        lines[-3]), lines
    assert lines[-1] == f"results: {folder}"
