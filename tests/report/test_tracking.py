"""The optional MLflow hook: `[tracking] mlflow_uri` logs a run (params = the flattened config, metrics =
the summary, artifacts = the folder); without it MLflow is never imported, and a config that asks for
it where it is not installed is one clear line before any data is read."""

import dataclasses
import importlib.util
import json
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
