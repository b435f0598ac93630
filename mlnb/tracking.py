"""An optional MLflow hook: ``[tracking] mlflow_uri = "file:./mlruns"`` logs every run there.

One MLflow run per results folder, in the experiment ``tracking.experiment`` (default: the study's
name), named after the folder:

    params     the resolved config, flattened to dotted keys (``models.lr.lrate``), as config.toml has it
    metrics    every number of summary.json's per-model summary, as ``<model>.<metric>`` (``nb.macro_auc``)
    artifacts  the whole results folder (config.toml re-runs it; report.html opens offline)
    tags       mlnb's version, git commit and dirty flag, the command, the folder's path
    times      the study's: it ends when logging begins (its folder is written) and started the seconds
               that summary.json's ``timings`` total records before, so the run's duration in MLflow is
               the study's, not the second that logging it took

MLflow is an optional extra (``pip install mlnb[tracking]``) and is imported only when a config sets
``tracking.mlflow_uri``: a study without it never imports it. The client talks to the URI given
(``MlflowClient(tracking_uri=...)``), never to MLflow's process-wide current URI, so that a user's
own MLflow set-up is left as it is. A local folder store (``file:...``), which MLflow 3 keeps in
maintenance mode and refuses unless ``MLFLOW_ALLOW_FILE_STORE`` is true, is opted into here (unless
that variable is set already); a database store (``sqlite:///mlflow.db``) needs MLflow's full package.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import time
from pathlib import Path

from mlnb.errors import MlnbError

MAX_PARAM_VALUE = 6000  # MLflow's limit on a parameter's value (characters); longer values are cut
BATCH = 100  # parameters per log_batch call (MLflow's limit)


def check_tracking(config, origin: str = "config") -> None:
    """MlnbError (before any data is read) when tracking is asked for and MLflow is not installed."""
    if config.tracking.mlflow_uri and importlib.util.find_spec("mlflow") is None:
        raise MlnbError(f"{origin}: tracking.mlflow_uri = {config.tracking.mlflow_uri!r} needs MLflow, which is not "
                        "installed: pip install 'mlnb[tracking]' (or mlflow), or leave tracking.mlflow_uri empty")


def flatten(table: dict, prefix: str = "") -> dict:
    """{'a': {'b': 1}} -> {'a.b': 1}: every leaf of a nested table under its dotted key (MLflow's params,
    and the config diff of ``mlnb compare``)."""
    flat = {}
    for key, value in table.items():
        if isinstance(value, dict):
            flat |= flatten(value, f"{prefix}{key}.")
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def summary_metrics(summary: dict) -> dict[str, float]:
    """``<model>.<metric>`` -> value for every finite number of each model's summary (no booleans,
    no lists), and the data's and the load's numbers under ``data.*`` and ``load_seconds``."""
    found = {}
    for name, model in (summary.get("models") or {}).items():
        for key, value in model.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
                found[f"{name}.{key}"] = float(value)
    for key, value in (summary.get("data") or {}).items():
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            found[f"data.{key}"] = float(value)
    if isinstance(summary.get("load_seconds"), (int, float)):
        found["load_seconds"] = float(summary["load_seconds"])
    return found


def study_seconds(summary: dict) -> float:
    """The wall seconds of the study that wrote ``summary``: its timings' ``total`` row (0 when not recorded)."""
    rows = summary.get("timings") if isinstance(summary.get("timings"), list) else []
    total = next((row.get("seconds") for row in rows if isinstance(row, dict) and row.get("stage") == "total"), 0)
    return float(total) if isinstance(total, (int, float)) and math.isfinite(total) and total > 0 else 0.0


def run_address(uri: str, experiment_id: str, run_id: str) -> str:
    """Where to see an MLflow run: its page on a tracking server (``http(s)://``), or for a store of files or a
    database the run's ids in it and the command that shows it."""
    if uri.startswith(("http://", "https://")):
        return f"{uri.rstrip('/')}/#/experiments/{experiment_id}/runs/{run_id}"
    opt_in = "MLFLOW_ALLOW_FILE_STORE=true " if _is_file_store(uri) else ""  # else MLflow 3 refuses a file store
    return (f"run {run_id} of experiment {experiment_id} in {uri} (to see it: {opt_in}mlflow ui "
            f"--backend-store-uri {uri})")


def _is_file_store(uri: str) -> bool:
    return uri.startswith("file:") or "://" not in uri


def log_run(folder: Path, uri: str, experiment: str = "") -> tuple[str, str]:
    """Log the results folder ``folder`` (of ``mlnb run``) to MLflow at ``uri``, timed as its study
    (``study_seconds`` up to now); return the MLflow run's id and its address (``run_address``)."""
    ended = time.time()  # the study's end: its folder is written, logging it is not the study's time
    from mlflow.entities import Metric, Param, RunTag  # the optional extra: only here
    from mlflow.tracking import MlflowClient

    if _is_file_store(uri):  # a local folder store, which the config asked for by name:
        # MLflow 3 refuses it unless opted in (it is in maintenance mode); a user's own setting wins
        os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")
    folder = Path(folder)
    summary = json.loads((folder / "summary.json").read_text(encoding="utf-8"))
    client = MlflowClient(tracking_uri=uri)
    name = experiment or summary.get("name") or "mlnb"
    found = client.get_experiment_by_name(name)
    experiment_id = found.experiment_id if found is not None else client.create_experiment(name)
    tags = {"mlnb.folder": str(folder.resolve()), "mlnb.command": str(summary.get("command", "")),
            "mlnb.git_commit": str(summary.get("git_commit")), "mlnb.git_dirty": str(summary.get("git_dirty")),
            "mlnb.version": str((summary.get("versions") or {}).get("mlnb"))}
    run = client.create_run(experiment_id, start_time=int(1000 * (ended - study_seconds(summary))),
                            run_name=folder.name, tags={key: value[:MAX_PARAM_VALUE] for key, value in tags.items()})
    run_id = run.info.run_id
    try:
        params = [Param(key, json.dumps(value) if isinstance(value, (list, dict)) else str(value))
                  for key, value in flatten(summary.get("config") or {}).items()]
        params = [Param(p.key, p.value[:MAX_PARAM_VALUE]) for p in params]
        stamp = int(time.time() * 1000)
        metrics = [Metric(key, value, stamp, 0) for key, value in summary_metrics(summary).items()]
        for start in range(0, max(len(params), len(metrics)), BATCH):
            client.log_batch(run_id, metrics=metrics[start:start + BATCH], params=params[start:start + BATCH],
                             tags=[RunTag("mlnb.summary", "summary.json")] if start == 0 else [])
        client.log_artifacts(run_id, str(folder))
    except BaseException:
        client.set_terminated(run_id, status="FAILED")
        raise
    client.set_terminated(run_id, end_time=int(1000 * ended))
    return run_id, run_address(uri, experiment_id, run_id)
